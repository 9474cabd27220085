// The per-op columns of ops.def (cost class, exactness, GPU ulp bound) and the code that reads them: the
// grid-stride count of the pointwise planner, float16/bfloat16 rounding in codegen, test tolerances.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/op.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

std::vector<Op> all_ops() {
    std::vector<Op> ops;
    for (int k = 0; k < num_ops(); ++k) ops.push_back(static_cast<Op>(k));
    return ops;
}

std::string name_of(Op op) {
    return std::string(op_name(op));
}

/// `op` applied to inputs of dtype t (nullptr when its constructor rejects t).
NodePtr apply(Op op, DType t, const Shape& shape = {33}) {
    const NodePtr a = input(t, shape, "a"), b = input(t, shape, "b"), c = input(t, shape, "c");
    try {
        switch (info(op).kind) {
            case OpKind::Unary:
                return op == Op::Cast ? nullptr : unary(op, a);
            case OpKind::Binary:
                return binary(op, a, b);
            case OpKind::Ternary:
                return ternary(op, a, b, c);
            case OpKind::Leaf:
            case OpKind::View:
            case OpKind::Reduce:
            case OpKind::Product:
            case OpKind::Gather:
            case OpKind::Attention:
            case OpKind::Scan:
            case OpKind::Scatter:
                return nullptr;
        }
    } catch (const Error&) {
    }
    return nullptr;
}

std::vector<codegen::InputLayout> contiguous(const std::vector<NodePtr>& outs) {
    std::vector<codegen::InputLayout> l;
    for (const auto* in : codegen::pointwise_inputs(outs))
        l.push_back({in->dtype(), contiguous_strides(in->shape()), true});
    return l;
}

/// The GPU bounds of gpu_max_ulp before they moved into ops.def, float32 / float64 (CUDA C++ Programming
/// Guide, "Mathematical Functions"; composites: the part's bound + 2).
struct Bound {
    double f32, f64;
};
const std::map<Op, Bound>& functions_before() {
    static const std::map<Op, Bound> m{
        {Op::Exp, {2, 1}},     {Op::Exp2, {2, 1}},     {Op::Expm1, {1, 1}},   {Op::Log, {1, 1}},
        {Op::Log2, {1, 1}},    {Op::Log1p, {1, 1}},    {Op::Rsqrt, {2, 1}},   {Op::Sin, {2, 2}},
        {Op::Cos, {2, 2}},     {Op::Tan, {4, 2}},      {Op::Asin, {2, 2}},    {Op::Acos, {2, 2}},
        {Op::Atan, {2, 2}},    {Op::Sinh, {3, 2}},     {Op::Cosh, {2, 1}},    {Op::Tanh, {2, 1}},
        {Op::Asinh, {3, 3}},   {Op::Acosh, {4, 3}},    {Op::Atanh, {3, 2}},   {Op::Erf, {2, 2}},
        {Op::Pow, {4, 2}},     {Op::Atan2, {3, 2}},    {Op::Sigmoid, {4, 3}}, {Op::Silu, {4, 3}},
        {Op::GeluErf, {4, 4}}, {Op::GeluTanh, {4, 3}}, {Op::Sqrt, {0, 0}},
    };
    return m;
}

/// gpu_max_ulp as it was: 0 for integers and for every op but the FloatMath functions; sqrt 0; halves 1.
double gpu_before(Op op, DType t) {
    if (!is_float(t) || info(op).rule != Rule::FloatMath) return 0.0;
    if (op == Op::Sqrt) return 0.0;
    if (is_half(t)) return 1.0;
    const Bound b = functions_before().at(op);
    return t == DType::Float32 ? b.f32 : b.f64;
}
/// host_max_ulp as it was.
double host_before(Op op, DType t) {
    if (!is_float(t) || info(op).rule != Rule::FloatMath || op == Op::Sqrt || is_half(t)) return 0.0;
    return t == DType::Float32 ? 1.0 : 2.0;
}

}  // namespace

TEST_CASE("every elementwise op states a cost class and an ulp bound, the columns agree with each other") {
    int elementwise = 0;
    for (Op op : all_ops()) {
        CAPTURE(name_of(op));
        const OpInfo& oi = info(op);
        const UlpBound& b = oi.gpu_ulp;
        CHECK(std::isfinite(b.f32));
        CHECK(std::isfinite(b.f64));
        CHECK(b.f32 >= 0.0);
        CHECK(b.f64 >= 0.0);
        if (!is_elementwise(op)) {
            CHECK(oi.cost == Cost::None);
            CHECK(b.f32 == 0.0);
            CHECK(b.f64 == 0.0);
            continue;
        }
        ++elementwise;
        CHECK(oi.cost != Cost::None);
        // Not correctly rounded on the GPU exactly when it is a transcendental function.
        CHECK((oi.cost == Cost::Transcendental) == (b.f32 > 0.0));
        CHECK((oi.cost == Cost::Transcendental) == (b.f64 > 0.0));
        if (is_exact(op)) CHECK(oi.cost != Cost::Transcendental);
        if (b.composite) {
            CHECK(!info(b.part).gpu_ulp.composite);
            CHECK(b.f32 == info(b.part).gpu_ulp.f32 + b.steps);
            CHECK(b.f64 == info(b.part).gpu_ulp.f64 + b.steps);
        }
    }
    CHECK(elementwise > 60);
    // The composites: the part's bound plus one ulp for each of the two rounded steps after it.
    for (auto [op, part] : {std::pair{Op::Sigmoid, Op::Exp}, std::pair{Op::Silu, Op::Exp},
                            std::pair{Op::GeluErf, Op::Erf}, std::pair{Op::GeluTanh, Op::Tanh}}) {
        CAPTURE(name_of(op));
        CHECK(info(op).gpu_ulp.composite);
        CHECK(info(op).gpu_ulp.part == part);
        CHECK(info(op).gpu_ulp.steps == 2);
    }
}

TEST_CASE("the ulp bounds are the values the tolerance code used before the op table held them") {
    for (Op op : all_ops()) {
        CAPTURE(name_of(op));
        for (DType t : kAllDTypes) {
            CAPTURE(name(t));
            CHECK(testing::gpu_max_ulp(op, t) == gpu_before(op, t));
            CHECK(testing::host_max_ulp(op, t) == host_before(op, t));
        }
    }
    // Every function of the old switch, and nothing else, has a nonzero float32 bound.
    std::set<Op> approximate;
    for (Op op : all_ops())
        if (info(op).gpu_ulp.f32 > 0.0) approximate.insert(op);
    std::set<Op> expected;
    for (const auto& [op, b] : functions_before())
        if (b.f32 > 0.0) expected.insert(op);
    CHECK(approximate == expected);
    CHECK(testing::gpu_max_ulp(Op::Sigmoid, float32) == 4);
    CHECK(testing::gpu_max_ulp(Op::GeluErf, float64) == 4);
    CHECK(testing::gpu_max_ulp(Op::Sqrt, float32) == 0);
    CHECK(testing::gpu_max_ulp(Op::Tan, bfloat16) == 1);
    CHECK(testing::gpu_max_ulp(Op::Div, float16) == 0);
}

TEST_CASE("the exact ops with a float16/bfloat16 result are the ones codegen does not round again") {
    // Before the op table: neg abs sign relu floor ceil round trunc minimum maximum where clamp. rem (fmod)
    // is exact too (docs/semantics.md, section 5) and joined them with the Exactness column.
    const std::set<Op> expected{Op::Neg,   Op::Abs,   Op::Sign,  Op::Relu,    Op::Floor,
                                Op::Ceil,  Op::Round, Op::Trunc, Op::Minimum, Op::Maximum,
                                Op::Where, Op::Clamp, Op::Rem};
    for (DType t : {float16, bfloat16}) {
        CAPTURE(name(t));
        std::set<Op> exact;
        std::vector<NodePtr> outs;
        std::vector<Op> ops;
        for (Op op : all_ops()) {
            const NodePtr n = apply(op, t);
            if (!n || n->op() != op || n->dtype() != t) continue;  // rejected, or a bool result
            if (is_exact(op)) exact.insert(op);
            outs.push_back(n);
            ops.push_back(op);
        }
        CHECK(exact == expected);
        const auto ks = codegen::generate_pointwise("op_table_rounding", outs, contiguous(outs),
                                                    codegen::DeviceInfo::h200());
        const std::string round = t == float16 ? "lm::round_f16(" : "lm::round_bf16(";
        for (Op op : ops) {
            CAPTURE(name_of(op));
            const std::string call = std::string(info(op).cuda) + "(";
            CHECK(ks.kernel.find(call) != std::string::npos);
            CHECK((ks.kernel.find(round + call) == std::string::npos) == is_exact(op));
        }
    }
    // Every op with a bool result, and every integer-only op, is exact.
    for (Op op : all_ops()) {
        const Rule r = info(op).rule;
        if (r == Rule::ToBool || r == Rule::Compare || r == Rule::Logical || r == Rule::Bitwise ||
            r == Rule::Shift) {
            CAPTURE(name_of(op));
            CHECK(is_exact(op));
        }
    }
}

TEST_CASE("the grid-stride variant counts the Division and Transcendental ops of float results") {
    // The ops the count named before the op table; divisions counted only with float results.
    const std::set<Op> costly{
        Op::Exp,  Op::Exp2,  Op::Expm1, Op::Log,   Op::Log2,     Op::Log1p, Op::Sqrt,    Op::Rsqrt,
        Op::Sin,  Op::Cos,   Op::Tan,   Op::Asin,  Op::Acos,     Op::Atan,  Op::Sinh,    Op::Cosh,
        Op::Tanh, Op::Asinh, Op::Acosh, Op::Atanh, Op::Sigmoid,  Op::Erf,   Op::GeluErf, Op::GeluTanh,
        Op::Silu, Op::Pow,   Op::Atan2, Op::Div,   Op::FloorDiv, Op::Mod,   Op::Rem,     Op::RandomNormal};
    std::set<Op> classed;
    for (Op op : all_ops())
        if (info(op).cost == Cost::Division || info(op).cost == Cost::Transcendental) classed.insert(op);
    CHECK(classed == costly);

    const Shape shape{1 << 20};
    auto grid_stride = [&](const NodePtr& out) {
        const std::vector<NodePtr> outs{out};
        return codegen::plan_pointwise(outs, contiguous(outs), codegen::DeviceInfo::h200().plan_target())
                   .plan.grid_stride_blocks > 0;
    };
    // n applications of op: op(op(x)), or op(op(x, y), y), op(op(x, y, z), y, z).
    auto chain = [&](Op op, DType t, int n) -> NodePtr {
        NodePtr v = input(t, shape, "x");
        const NodePtr y = input(t, shape, "y"), z = input(t, shape, "z");
        try {
            for (int k = 0; k < n; ++k) {
                switch (info(op).kind) {
                    case OpKind::Unary:
                        v = unary(op, v);
                        break;
                    case OpKind::Binary:
                        v = binary(op, v, y);
                        break;
                    case OpKind::Ternary:
                        v = ternary(op, v, y, z);
                        break;
                    case OpKind::Leaf:
                    case OpKind::View:
                    case OpKind::Reduce:
                    case OpKind::Product:
                    case OpKind::Gather:
                    case OpKind::Attention:
                    case OpKind::Scan:
                    case OpKind::Scatter:
                        return nullptr;
                }
                if (v->op() != op || v->dtype() != t) return nullptr;  // simplified away, or a bool result
            }
        } catch (const Error&) {
            return nullptr;
        }
        return v;
    };
    int checked = 0;
    for (Op op : all_ops()) {
        if (!is_elementwise(op) || op == Op::Cast) continue;
        CAPTURE(name_of(op));
        for (DType t : {float32, float64, int32}) {
            CAPTURE(name(t));
            const NodePtr four = chain(op, t, codegen::kGridStrideCostlyOps);
            if (!four) continue;
            ++checked;
            CHECK(grid_stride(four) == (costly.count(op) > 0 && is_float(t)));
            const NodePtr three = chain(op, t, codegen::kGridStrideCostlyOps - 1);
            REQUIRE(three);
            CHECK(!grid_stride(three));
        }
    }
    CHECK(checked > 60);
}
