// Pointwise plans for given shapes and layouts (vector width, access classes, index width, parameter
// limit, launch), cache keys, kernel-name sanitizing, parameter packing. No GPU needed.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <set>

#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/plan/kernel_key.hpp"
#include "loom/codegen/plan/names.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"

using namespace loom;
using namespace loom::ir;
using namespace loom::codegen;

namespace {

NodePtr sc(double v, DType t = float32) {
    return scalar(make_scalar_value(v, t, "test", Loc::current()), t);
}

std::vector<InputLayout> contiguous(const std::vector<NodePtr>& outs) {
    std::vector<InputLayout> l;
    for (const auto* in : pointwise_inputs(outs))
        l.push_back({in->dtype(), contiguous_strides(in->shape()), true});
    return l;
}

PlannedPointwise plan(const std::vector<NodePtr>& outs, std::vector<InputLayout> layouts = {}) {
    if (layouts.empty()) layouts = contiguous(outs);
    return plan_pointwise(outs, layouts, DeviceInfo::h200().plan_target());
}

}  // namespace

TEST_CASE("contiguous float32: 16-byte vectors, flat, with a tail") {
    auto x = input(float32, {1001}, "x");
    auto p = plan({binary(Op::Mul, x, sc(2.0))});
    CHECK(p.plan.vector_width == 4);
    CHECK(p.plan.vector_flat);
    CHECK(p.plan.rank == 1);
    CHECK(p.plan.loads[0].access == Access::Contiguous);
    CHECK(p.plan.index == IndexWidth::I32);
    CHECK(p.plan.bytes_per_element() == 8);
    CHECK(p.plan.launch(1001, Variant::Vector) == LaunchConfig{.grid_x = 1, .block_x = 256, .vector = true});
    CHECK(p.plan.launch(1001, Variant::Scalar) == LaunchConfig{.grid_x = 4, .block_x = 256});
    CHECK(p.plan.launch(0, Variant::Scalar).grid_x == 0);
}

TEST_CASE("vector width follows the widest streamed dtype") {
    auto a = input(bfloat16, {64}, "a");
    CHECK(plan({unary(Op::Neg, a)}).plan.vector_width == 8);
    auto b = input(int8, {64}, "b");
    CHECK(plan({unary(Op::Neg, b)}).plan.vector_width == 16);
    auto c = input(float64, {64}, "c");
    CHECK(plan({unary(Op::Neg, c)}).plan.vector_width == 2);
    auto d = input(float32, {64}, "d");
    CHECK(plan({cast(d, int8)}).plan.vector_width == 4);  // float32 reads decide
}

TEST_CASE("misaligned pointer or slice offset: no vector variant") {
    auto x = input(float32, {1024}, "x");
    auto y = unary(Op::Abs, x);
    auto l = contiguous({y});
    l[0].aligned16 = false;
    CHECK(plan({y}, l).plan.vector_width == 1);
    auto z = input(float32, {1025}, "z");
    auto zs = slice(z, {SliceSpec{1, SliceSpec::kNone, 1}});  // starts 4 bytes in
    auto pz = plan({unary(Op::Abs, zs)});
    CHECK(pz.plan.vector_width == 1);
    CHECK(pz.binding.sites[0].offset == 1);
    auto w = input(float32, {1028}, "w");
    auto ws = slice(w, {SliceSpec{4, SliceSpec::kNone, 1}});  // 16 bytes in: still aligned
    CHECK(plan({unary(Op::Abs, ws)}).plan.vector_width == 4);
}

TEST_CASE("an index read per lane runs the vector variant only from a multiple of the vector width") {
    // The vector variants write lane j's index as lm::vector_lane (lane 0's low bits cleared, or j), which
    // holds when lane 0's index is a multiple of W: an index that starts elsewhere (a slice of a random
    // array at an odd offset) takes the scalar variant.
    auto x = input(float32, {1000}, "x");
    alignas(16) static float xbuf[1000], obuf[1000];
    const void* ins[] = {xbuf};
    void* outs[] = {obuf};
    for (const std::int64_t start : {0, 1, 3, 4, 6, 8}) {
        const NodePtr index =
            slice(iota({1000 + start}, 0, kHostDeviceCode), {SliceSpec{start, 1000 + start, 1}});
        const NodePtr normal =
            random(Op::RandomNormal, index, scalar(ScalarValue::of_int(7), int64), float32);
        auto pp = plan({binary(Op::Add, x, normal)});
        REQUIRE(pp.plan.has_vector_variant());
        CHECK(select_variant(pp.plan, pp.binding, ins, outs) ==
              (start % pp.plan.vector_width == 0 ? Variant::Vector : Variant::Scalar));
        const auto ks = emit_pointwise("lanes", {binary(Op::Add, x, normal)}, pp.plan);
        CHECK(ks.kernel.find("lm::vector_lane<4>(p.in1_base + (long long)(i), j)") != std::string::npos);
    }
    // An index that is the same in every lane (a row's index, broadcast along the row) may start anywhere.
    auto rows = input(float32, {1000, 8}, "rows");
    const NodePtr row_index =
        slice(iota({1001, 8}, 0, kHostDeviceCode), {SliceSpec{1, 1001, 1}, SliceSpec{}});
    auto pr = plan({binary(Op::Add, rows, cast(row_index, float32))});
    REQUIRE(pr.plan.has_vector_variant());
    alignas(16) static float rbuf[8000], robuf[8000];
    const void* rins[] = {rbuf};
    void* routs[] = {robuf};
    CHECK(select_variant(pr.plan, pr.binding, rins, routs) == Variant::Vector);
}

TEST_CASE("row broadcast: vectorized when the innermost extent divides the vector width") {
    auto x = input(float32, {16384, 16384}, "x");
    auto b = input(float32, {16384}, "b");
    auto p = plan({binary(Op::Add, x, b)});
    CHECK(p.plan.rank == 2);
    CHECK(p.plan.loads[1].access == Access::RowBroadcast);
    CHECK(p.plan.loads[1].bytes_per_element == 0);
    CHECK(p.plan.vector_width == 4);
    CHECK_FALSE(p.plan.vector_flat);

    auto x2 = input(float32, {10, 6}, "x2");
    auto b2 = input(float32, {6}, "b2");
    auto p2 = plan({binary(Op::Add, x2, b2)});
    CHECK(p2.plan.loads[1].access == Access::RowBroadcast);
    CHECK(p2.plan.vector_width == 1);  // 6 % 4 != 0: a vector would straddle rows
    auto p3 = plan({unary(Op::Neg, x2)});
    CHECK(p3.plan.vector_width == 4);  // fully contiguous: the flat size need not divide (tail)
}

TEST_CASE("column broadcast and scalars") {
    auto x = input(float32, {128, 64}, "x");
    auto c = input(float32, {128, 1}, "c");
    auto s = input(float32, {}, "s");
    auto p = plan({binary(Op::Mul, binary(Op::Add, x, c), s)});
    CHECK(p.plan.loads[1].access == Access::Strided);
    CHECK(p.plan.loads[1].dim_mask == 1u);
    CHECK(p.plan.loads[2].access == Access::Scalar);
    CHECK(p.plan.vector_width == 4);  // a column value is the same in every lane of a row vector
}

TEST_CASE("strided operand (transpose): scalar variant only, coefficients in the binding") {
    auto x = input(float32, {64, 128}, "x");
    auto p = plan({unary(Op::Exp, transpose(x))});
    CHECK(p.plan.loads[0].access == Access::Strided);
    CHECK(p.plan.vector_width == 1);
    CHECK(p.binding.extents == Shape{128, 64});
    CHECK(p.binding.sites[0].coefs == std::vector<std::int64_t>{1, 128});
}

TEST_CASE("dimensions coalesce, reshape of a contiguous input is a flat index") {
    auto x = input(float32, {8, 16, 32}, "x");
    auto y = input(float32, {4096}, "y");
    auto p = plan({binary(Op::Add, x, reshape(y, {8, 16, 32}))});
    CHECK(p.plan.rank == 1);
    CHECK(p.binding.extents == Shape{4096});
    CHECK(p.plan.loads[1].access == Access::Contiguous);
    CHECK(p.plan.derived.empty());
    auto z = input(float32, {6, 10}, "z");
    auto pz = plan({unary(Op::Neg, reshape(transpose(z), {60}))});
    CHECK(pz.plan.loads[0].access == Access::Gathered);
    CHECK(pz.plan.derived.size() == 2);
    CHECK(pz.plan.vector_width == 1);
}

TEST_CASE("index width at the 2^31 boundaries, in elements and in bytes") {
    const std::int64_t two31 = std::int64_t{1} << 31;
    auto i8a = input(int8, {two31 - 1}, "a");
    CHECK(plan({unary(Op::Neg, i8a)}).plan.index == IndexWidth::I32);
    auto i8b = input(int8, {two31}, "b");
    CHECK(plan({unary(Op::Neg, i8b)}).plan.index == IndexWidth::I64);
    auto f1 = input(float32, {two31 / 4}, "f1");  // last byte offset 2^31 - 4
    CHECK(plan({unary(Op::Neg, f1)}).plan.index == IndexWidth::I32);
    auto f2 = input(float32, {two31 / 4 + 1}, "f2");  // last byte offset 2^31
    CHECK(plan({unary(Op::Neg, f2)}).plan.index == IndexWidth::I64);
    // a small iteration space over a huge strided tensor: the byte offset decides
    auto big = input(float32, {2, 4}, "big");
    auto l = contiguous({unary(Op::Neg, big)});
    l[0].strides = {two31 / 4, 1};
    CHECK(plan({unary(Op::Neg, big)}, l).plan.index == IndexWidth::I64);
    l[0].strides = {two31 / 4 - 4, 1};  // last byte offset (2^29 - 4 + 3) * 4 = 2^31 - 4
    CHECK(plan({unary(Op::Neg, big)}, l).plan.index == IndexWidth::I32);
    auto e = plan({unary(Op::Neg, f2)});
    CHECK(e.plan.params.fields[2].type == ParamType::Index);  // named for no back end: the emitter spells it
    CHECK(e.plan.params.fields[2].size == 8);
    CHECK(e.plan.params.fields[0].type == ParamType::ConstPointer);
    CHECK(e.plan.params.fields[0].dtype == float32);
}

TEST_CASE("parameters beyond the device's limit travel in device memory") {
    NodePtr sum = input(float32, {16}, "x0");
    for (int k = 1; k < 4100; ++k) sum = binary(Op::Add, sum, input(float32, {16}, "x"));
    const auto big = plan({sum});
    CHECK(big.plan.params.size > 32764);
    CHECK(big.plan.params_in_memory);
    CHECK(big.plan.to_string().find("in device memory") != std::string::npos);
    auto x = input(float32, {16}, "x");
    const auto one = plan({unary(Op::Neg, x)});
    CHECK_FALSE(one.plan.params_in_memory);
    // the device's limit decides: the same graph on a device with a 4,096-byte limit
    NodePtr mid = input(float32, {16}, "y0");
    for (int k = 1; k < 600; ++k) mid = binary(Op::Add, mid, input(float32, {16}, "y"));
    DeviceInfo small = DeviceInfo::h200();
    small.param_limit_bytes = 4096;
    const auto on_h200 = plan({mid});
    const auto on_small = plan_pointwise({mid}, contiguous({mid}), small.plan_target());
    CHECK(on_h200.plan.params.size > 4096);
    CHECK_FALSE(on_h200.plan.params_in_memory);
    CHECK(on_small.plan.params_in_memory);
    CHECK_FALSE(on_h200.plan == on_small.plan);
    CHECK(on_h200.plan.hash() != on_small.plan.hash());
    CHECK_NOTHROW(plan_pointwise({unary(Op::Neg, x)}, contiguous({unary(Op::Neg, x)}), small.plan_target()));
}

TEST_CASE("outputs must share the iteration space, reductions are rejected") {
    auto x = input(float32, {16}, "x");
    auto y = input(float32, {8}, "y");
    CHECK_THROWS_AS(plan({unary(Op::Neg, x), unary(Op::Neg, y)}, contiguous({x, y})), Error);
    auto r = reduce(Op::Sum, input(float32, {4, 4}, "m"), {1}, false);
    CHECK_THROWS_AS(plan({binary(Op::Add, r, sc(1.0))}, {{float32, {4, 1}, true}}), Error);
}

TEST_CASE("kernel keys: structure and specialization, never scalar values") {
    auto a = input(float32, {1024}, "a");
    auto b = input(float32, {1024}, "b");
    auto k = [](const std::vector<NodePtr>& outs) { return kernel_key(outs, plan(outs).plan); };
    CHECK(k({binary(Op::Mul, a, sc(1.5))}) == k({binary(Op::Mul, a, sc(2.5))}));
    // inputs are numbered by first appearance: `a - b` and `b - a` alone are one kernel bound in canonical
    // order, but swapped operands inside a larger graph are a different structure
    CHECK(k({binary(Op::Sub, a, b)}) == k({binary(Op::Sub, b, a)}));
    CHECK(pointwise_inputs({binary(Op::Sub, b, a)})[0] == b.get());
    auto two = sc(2.0);
    CHECK(k({binary(Op::Sub, binary(Op::Mul, a, two), b)}) !=
          k({binary(Op::Sub, b, binary(Op::Mul, a, two))}));
    CHECK(k({binary(Op::Mul, binary(Op::Add, a, b), binary(Op::Sub, a, b))}) !=
          k({binary(Op::Mul, binary(Op::Add, a, b), binary(Op::Sub, b, a))}));
    CHECK(k({binary(Op::Mul, a, a)}) != k({binary(Op::Mul, a, b)}));
    CHECK(k({binary(Op::Add, a, b)}) != k({binary(Op::Mul, a, b)}));
    CHECK(structural_key({binary(Op::Mul, a, sc(1.5))}) !=
          structural_key({binary(Op::Mul, a, sc(1.5, float64))}));
    // the same structure at another size shares the kernel
    auto c = input(float32, {4096}, "c");
    CHECK(k({binary(Op::Mul, a, sc(1.5))}) == k({binary(Op::Mul, c, sc(3.0))}));
    // constants are baked: their value is part of the key
    auto k1 = structural_key({binary(Op::Mul, a, constant(ScalarValue::of_float(1.5), float32))});
    auto k2 = structural_key({binary(Op::Mul, a, constant(ScalarValue::of_float(2.5), float32))});
    CHECK(k1 != k2);
    // alignment class changes the specialization
    auto y = unary(Op::Neg, a);
    auto l = contiguous({y});
    auto p1 = plan({y}, l).plan;
    l[0].aligned16 = false;
    CHECK(kernel_key({y}, p1) != kernel_key({y}, plan({y}, l).plan));
}

TEST_CASE("kernel names are valid, unique C identifiers") {
    CHECK(kernel_name("scale_bias_act") == "scale_bias_act");
    const std::string lam = kernel_name("main::{lambda(float)#1}");
    CHECK(lam.rfind("main_lambda_float_1_", 0) == 0);
    CHECK(kernel_name("f<int>") != kernel_name("f_int"));
    CHECK(kernel_name("f<int>").rfind("f_int_", 0) == 0);
    CHECK(kernel_name("a::b").rfind("a_b_", 0) == 0);
    CHECK(kernel_name("operator()").rfind("k_operator_", 0) == 0);
    CHECK(kernel_name("int") == "k_int");
    CHECK(kernel_name("__global__").rfind("global_", 0) == 0);
    CHECK(kernel_name("3d") == "k_3d");
    CHECK(kernel_name("") == "k_");
    CHECK(kernel_name("lm") == "k_lm");
    const std::string longname(300, 'x');
    const std::string kl = kernel_name(longname);
    CHECK(kl.size() <= kMaxKernelName);
    CHECK(kl != kernel_name(std::string(299, 'x')));
    std::set<std::string> names;
    for (const char* n : {"f<int>", "f<long>", "f(int)", "f[int]", "f int", "f_int"})
        names.insert(kernel_name(n));
    CHECK(names.size() == 6);
    for (const auto& n : names)
        for (char ch : n) CHECK((std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'));
}

TEST_CASE("pack_params writes pointers (offsets folded), sizes and scalars at the layout's offsets") {
    auto x = input(float32, {4, 8}, "x");
    auto b = input(float32, {8}, "b");
    auto xs = slice(x, {SliceSpec{1, SliceSpec::kNone, 1}});  // rows 1..3: offset 8 elements
    auto y = binary(Op::Add, binary(Op::Mul, xs, sc(2.5)), b);
    auto pp = plan({y});
    const auto& L = pp.plan.params;
    alignas(16) static float xbuf[32], bbuf[8], obuf[24];
    const void* ins[] = {xbuf, bbuf};
    void* outs[] = {obuf};
    auto bytes = pack_params(pp.plan, pp.binding, ins, outs);
    REQUIRE(bytes.size() == L.size);
    auto field = [&](std::string_view n) -> const ParamField& {
        for (const auto& f : L.fields)
            if (f.name == n) return f;
        FAIL("no field " << n);
        return L.fields[0];
    };
    const void* p0 = nullptr;
    std::memcpy(&p0, bytes.data() + field("in0").offset, 8);
    CHECK(p0 == static_cast<const void*>(xbuf + 8));
    int n = 0;
    std::memcpy(&n, bytes.data() + field("n").offset, 4);
    CHECK(n == 24);
    int ext1 = 0;
    std::memcpy(&ext1, bytes.data() + field("ext1").offset, 4);
    CHECK(ext1 == 8);
    float s = 0;
    std::memcpy(&s, bytes.data() + field("s0").offset, 4);
    CHECK(s == 2.5f);
    CHECK(select_variant(pp.plan, pp.binding, ins, outs) == Variant::Vector);
    void* bad_outs[] = {obuf + 1};
    CHECK(select_variant(pp.plan, pp.binding, ins, bad_outs) == Variant::Scalar);
    // the emitted struct asserts the same size
    auto ks = emit_pointwise("packed", {y}, pp.plan);
    CHECK(ks.kernel.find(fmt::format("sizeof(packed_params) == {}", L.size)) != std::string::npos);
}

TEST_CASE("plans are plain data: equal, hashed, printed") {
    auto x = input(float32, {256}, "x");
    auto p1 = plan({unary(Op::Neg, x)}).plan;
    auto p2 = plan({unary(Op::Neg, x)}).plan;
    CHECK(p1 == p2);
    CHECK(p1.hash() == p2.hash());
    CHECK(p1.to_string().find("vector width 4") != std::string::npos);
    CHECK(p1.to_string().find("contiguous") != std::string::npos);
}

TEST_CASE(
    "register estimate: a vector variant whose loaded vectors pass 128 registers per thread is not planned") {
    // The vector variant holds vector_width values per streamed input and per output (8-byte values: two
    // registers each) at once. 31 float32 inputs + 1 output: 4 x 32 = 128 registers, at the budget.
    auto sum_of = [](DType t, int inputs) {
        NodePtr acc = input(t, {4096}, "a0");
        for (int k = 1; k < inputs; ++k) acc = binary(Op::Add, acc, input(t, {4096}, fmt::format("a{}", k)));
        return acc;
    };
    const auto at = plan({sum_of(float32, 31)});
    CHECK(at.plan.vector_width == 4);
    CHECK(at.plan.vector_registers == 0);
    const auto over = plan({sum_of(float32, 32)});  // 4 x 33 = 132
    CHECK(over.plan.vector_width == 1);
    CHECK(over.plan.vector_registers == 132);
    CHECK(over.plan.to_string().find("about 132 registers per thread, above 128") != std::string::npos);
    CHECK(over.plan.hash() != plan({sum_of(float32, 32)},
                                   [&] {
                                       auto l = contiguous({sum_of(float32, 32)});
                                       l[0].aligned16 = false;  // no vector variant for alignment instead
                                       return l;
                                   }())
                                  .plan.hash());
    // bfloat16: 8 per vector; float64: 2 per vector, two registers each.
    CHECK(plan({sum_of(bfloat16, 15)}).plan.vector_width == 8);  // 8 x 16 = 128
    CHECK(plan({sum_of(bfloat16, 16)}).plan.vector_width == 1);  // 8 x 17 = 136
    CHECK(plan({sum_of(float64, 31)}).plan.vector_width == 2);   // 2 x 2 x 32 = 128
    CHECK(plan({sum_of(float64, 32)}).plan.vector_width == 1);   // 132
    // Scalar (rank-0) inputs are loaded once and do not count.
    NodePtr with_scalars = sum_of(float32, 31);
    for (int k = 0; k < 40; ++k)
        with_scalars = binary(Op::Mul, with_scalars, input(float32, {}, fmt::format("s{}", k)));
    CHECK(plan({with_scalars}).plan.vector_width == 4);
}
