// Every elementwise op of ops.def on every dtype its constructor accepts, plus every cast, emitted and
// compiled with NVRTC for sm_90: one multi-output kernel per operand dtype keeps the compile count small.
#include <string>
#include <vector>

#include "golden_util.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/op.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

std::vector<Op> elementwise_ops() {
    std::vector<Op> ops;
    for (int k = 0; k < num_ops(); ++k) {
        const Op op = static_cast<Op>(k);
        if (is_elementwise(op) && op != Op::Cast) ops.push_back(op);
    }
    return ops;
}

}  // namespace

TEST_CASE("every elementwise op x dtype compiles with NVRTC") {
    const auto ops = elementwise_ops();
    REQUIRE(ops.size() > 60);
    int total = 0;
    for (DType t : kAllDTypes) {
        CAPTURE(name(t));
        auto a = input(t, {33}, "a");
        auto b = input(t, {33}, "b");
        auto c = input(t, {33}, "c");
        std::vector<NodePtr> outs;
        for (Op op : ops) {
            try {
                switch (info(op).kind) {
                    case OpKind::Unary:
                        outs.push_back(unary(op, a));
                        break;
                    case OpKind::Binary:
                        outs.push_back(binary(op, a, b));
                        break;
                    case OpKind::Ternary:
                        outs.push_back(ternary(op, a, b, c));
                        break;
                    case OpKind::Leaf:
                    case OpKind::View:
                    case OpKind::Reduce:
                    case OpKind::Product:
                    case OpKind::Gather:
                    case OpKind::Attention:
                    case OpKind::Scan:
                    case OpKind::Scatter:
                        break;
                }
            } catch (const Error&) {
                // the constructor rejects this dtype (e.g. arithmetic on bool): nothing to emit
            }
        }
        for (DType to : kAllDTypes) outs.push_back(cast(a, to));
        // A scalar of the dtype as a run-time parameter, and a baked constant.
        if (t != DType::Bool) {
            outs.push_back(binary(Op::Maximum, a,
                                  scalar(make_scalar_value(std::int64_t{1}, t, "test", Loc::current()), t)));
            outs.push_back(binary(
                Op::Minimum, a, constant(make_scalar_value(std::int64_t{2}, t, "test", Loc::current()), t)));
        }
        total += static_cast<int>(outs.size());
        auto ks = codegen::generate_pointwise(std::string("ops_") + std::string(short_name(t)), outs,
                                              golden::contiguous_layouts(outs), codegen::DeviceInfo::h200());
        CHECK(ks.plan.outputs.size() == outs.size());
        golden::compile_sm90(ks);
    }
    CHECK(total > 300);
}

TEST_CASE("float16 and float64 kernels with 64-bit indexing and a strided row view compile") {
    auto x = input(float64, {3, 1000000000}, "x");  // 3e9 elements: 64-bit indexing
    auto y = input(float16, {1000000000}, "y");
    auto z = binary(Op::Add, unary(Op::Tanh, x), cast(y, float64));
    auto ks = codegen::generate_pointwise("wide", {z, cast(z, float16)}, golden::contiguous_layouts({z}),
                                          codegen::DeviceInfo::h200());
    CHECK(ks.plan.index == codegen::IndexWidth::I64);
    golden::compile_sm90(ks);
}
