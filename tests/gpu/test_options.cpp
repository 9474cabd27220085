// The options value on the GPU: fusion off gives the fused bits with one kernel per op, fast math is opt-in
// and compiles kernels of its own checked with openly widened tolerances, line info; and in-place updates
// through the one launch path.
#include <doctest/doctest.h>

#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;

namespace {

Options with_fusion(bool on) {
    Options o = current_options();
    o.fusion = on;
    return o;
}

/// Poisoned outputs for `arrays`, one per array, on the test device.
std::vector<Tensor> poisoned_outputs(const std::vector<Array>& arrays) {
    std::vector<Tensor> out;
    for (const Array& a : arrays) {
        out.push_back(Tensor::empty(a.shape(), a.dtype(), dev()));
        testing::poison(out.back());
    }
    return out;
}

}  // namespace

TEST_CASE("options on the GPU: fusion off runs one kernel per op and gives the fused bits, every dtype") {
    for (DType d : {float32, float16, bfloat16, float64, int32, int8}) {
        CAPTURE(name(d));
        Tensor x = rand({37, 1000}, d, 11), w = rand({1000}, d, 12);
        const Array X(x), W(w);
        const bool fl = is_float(d);
        const Array e = fl ? exp(X - max(X, -1, true)) : X - max(X, -1, true);
        const std::vector<Array> arrays{fl ? e / sum(e, -1, true) : e, sum(X == max(X, -1, true), -1),
                                        X * W + 1, X, mean(X, {0})};
        std::vector<Tensor> fused = poisoned_outputs(arrays), unfused = poisoned_outputs(arrays);
        assign(fused, arrays);
        {
            const OptionsScope off(with_fusion(false));
            assign(unfused, arrays);
            std::vector<ir::NodePtr> roots;
            for (const Array& a : arrays) roots.push_back(a.node());
            const codegen::FusionPlan plan = gpu::plan_bound(ir::run_pipeline(roots, ir::standard_passes()),
                                                             device_info(), current_options(), "", nullptr);
            CHECK(plan.partition.note.rfind("fusion off", 0) == 0);
            CHECK(plan.partition.kernels.size() >= 8);
        }
        wait_device();
        for (std::size_t k = 0; k < arrays.size(); ++k)
            require_same_bits(unfused[k], fused[k], "unfused against fused");
        require_reference(arrays, fused, "fused");
    }
}

TEST_CASE(
    "options on the GPU: math functions of values the compiler can know give the bits of the unfused "
    "kernels") {
    // A bool cast to a float is 0 or 1 and a where of constants is one of two: in a fused kernel the compiler
    // sees that, and would evaluate the function at compile time with other bits than the GPU computes at
    // run time (tanh(1.0f): one ulp). Some values are constants outright in the fused kernel: x <= x and
    // x == x of an integer are true, x - x is 0, so NVVM and then ptxas see the function's argument as a
    // literal (the fuzzer's tanh(cast(le(x, x))) over uint8). Every float function of ops.def, every float
    // dtype, against the unfused kernels that read the same values from memory.
    std::vector<ir::Op> unary_ops, binary_ops;
#define LOOM_UNARY(Id, nm, R, cu) \
    if (ir::Rule::R == ir::Rule::FloatMath) unary_ops.push_back(ir::Op::Id);
#define LOOM_BINARY(Id, nm, R, cu) \
    if (ir::Rule::R == ir::Rule::FloatMath) binary_ops.push_back(ir::Op::Id);
#include "loom/ir/ops.def"
#undef LOOM_UNARY
#undef LOOM_BINARY
    REQUIRE(unary_ops.size() >= 20);
    REQUIRE(!binary_ops.empty());
    Tensor x = rand({4, 257}, int8, 31);
    for (DType d : {float32, float64, float16, bfloat16}) {
        CAPTURE(name(d));
        const Array b = Array(x) > 0;
        const std::vector<Array> known{
            b.astype(d),
            where(b, Array(full({4, 257}, 0.75, d, dev())), Array(full({4, 257}, -2.5, d, dev()))),
            logical_not(b).astype(d) * 3.0,
            (Array(x) <= Array(x)).astype(d),
            (Array(x) - Array(x)).astype(d) + 0.75,
            (Array(x) == Array(x)).astype(d) * -2.5,
            (Array(x) - Array(x)).astype(d) + 10.0};
        std::vector<Array> arrays;
        for (const Array& v : known) {
            for (ir::Op op : unary_ops) arrays.emplace_back(ir::unary(op, v.node()));
            for (ir::Op op : binary_ops) arrays.emplace_back(ir::binary(op, v.node(), known[0].node()));
        }
        std::vector<Tensor> fused = poisoned_outputs(arrays), unfused = poisoned_outputs(arrays);
        for (std::size_t k = 0; k < arrays.size(); ++k)
            assign(fused[k], arrays[k]);  // each fused with its casts
        {
            const OptionsScope off(with_fusion(false));
            for (std::size_t k = 0; k < arrays.size(); ++k) assign(unfused[k], arrays[k]);
        }
        wait_device();
        for (std::size_t k = 0; k < arrays.size(); ++k)
            require_same_bits(unfused[k], fused[k], fmt::format("output {}: unfused against fused", k));
        require_reference(arrays, fused, "fused");
    }
}

TEST_CASE(
    "options on the GPU: fast math is opt-in, has kernels of its own and passes the widened tolerances") {
    Tensor x = rand({1 << 16}, float32, 21, testing::Random::uniform(-3, 3));
    const Array y = exp(x) * sin(x) + log(abs(x) + 1.0f);
    Tensor precise = y;
    wait_device();
    const auto before = kernel_cache_stats().misses;
    Tensor fast;
    {
        Options o = current_options();
        o.fast_math = true;
        const OptionsScope scope(o);
        fast = y;
        wait_device();
        CHECK(kernel_cache_stats().misses == before + 1);  // a kernel of its own, not the precise one
        const testing::Comparison c = testing::check_against_reference({y.node()}, {fast});
        CHECK_MESSAGE(c.ok, c.message);
        CHECK(c.message.find("widened for fast math") != std::string::npos);
    }
    require_reference({y}, {precise}, "precise");
    // A traced function made with fast math keeps it, whatever the scope of its calls.
    auto f = loom::function(
        "fast_fn", [](Array a) { return exp(a) * sin(a); }, Options{.fast_math = true});
    Tensor out = Tensor::empty(x.shape(), float32, dev());
    f(x, out);
    wait_device();
    {
        Options o = current_options();
        o.fast_math = true;
        const OptionsScope scope(o);
        const testing::Comparison c = testing::check_against_reference({(exp(x) * sin(x)).node()}, {out});
        CHECK_MESSAGE(c.ok, c.message);
    }
    // Line info compiles too, and gives the same bits.
    Options li = current_options();
    li.line_info = true;
    const OptionsScope scope(li);
    Tensor with_lines = y;
    wait_device();
    require_same_bits(with_lines, precise, "line info vs none");
}

TEST_CASE(
    "one launch path on the GPU: an in-place update is right, a transposed one goes through a temporary") {
    Tensor x = rand({512, 512}, float32, 31);
    const Tensor x0 = x.to_host();
    assign(x, Array(x) * 2.0f + 1.0f);  // each element read before it is written, in one thread: in place
    wait_device();
    const Tensor after = x.to_host();
    for (std::int64_t i = 0; i < after.numel(); ++i)
        REQUIRE(after.get_double(i) ==
                static_cast<double>(static_cast<float>(x0.get_double(i)) * 2.0f + 1.0f));
    // The transpose of x into x: a later element's read would see an earlier write, so a temporary is used.
    const Tensor expected = reference::evaluate((Array(x).transposed() + 0.0f).node());
    assign(x, Array(x).transposed() + 0.0f);
    wait_device();
    require_same_bits(x, expected, "transpose into itself");
}
