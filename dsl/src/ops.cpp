// The DSL's free functions and operators: each resolves its operands (weak scalars take the other
// operand's dtype) and calls the IR constructor, which checks, promotes, broadcasts and folds.
#include "loom/dsl/ops.hpp"

#include <fmt/format.h>

#include <cmath>

#include "loom/ir/error.hpp"

namespace loom {

using ir::Op;

namespace {

Array unary_op(Op op, const Operand& x, const Loc& loc) {
    return Array(ir::unary(op, x.resolve_alone(ir::op_name(op)), loc));
}

Array binary_op(Op op, const Operand& a, const Operand& b, const Loc& loc) {
    const auto api = ir::op_name(op);
    return Array(ir::binary(op, a.resolve(b, api), b.resolve(a, api), loc));
}

// For a ternary op, a weak scalar takes the dtype of the first array operand among the others.
ir::NodePtr resolve3(const Operand& x, const Operand& o1, const Operand& o2, std::string_view api) {
    if (x.is_array()) return x.node();
    if (o1.is_array()) return x.resolve(o1, api);
    return x.resolve(o2, api);
}

Array ternary_op(Op op, const Operand& a, const Operand& b, const Operand& c, const Loc& loc) {
    const auto api = ir::op_name(op);
    if (op ==
        Op::Where) {  // the condition does not take part in promotion: branches resolve against each other
        auto branch = [&](const Operand& x, const Operand& other) {
            return other.is_array() ? x.resolve(other, api) : x.resolve_alone(api);
        };
        return Array(ir::ternary(op, a.resolve_alone(api), branch(b, c), branch(c, b), loc));
    }
    return Array(
        ir::ternary(op, resolve3(a, b, c, api), resolve3(b, a, c, api), resolve3(c, a, b, api), loc));
}

Array reduce_op(Op op, const Operand& x, Axes axes, bool keepdims, const Loc& loc) {
    return Array(ir::reduce(op, x.resolve_alone(ir::op_name(op)), std::move(axes), keepdims, loc));
}

}  // namespace

#define LOOM_DSL_UNARY(fn, Id)            \
    Array fn(const Operand& x, Loc loc) { \
        return unary_op(Op::Id, x, loc);  \
    }
LOOM_DSL_UNARY(neg, Neg)
LOOM_DSL_UNARY(abs, Abs)
LOOM_DSL_UNARY(sign, Sign)
LOOM_DSL_UNARY(relu, Relu)
LOOM_DSL_UNARY(exp, Exp)
LOOM_DSL_UNARY(exp2, Exp2)
LOOM_DSL_UNARY(expm1, Expm1)
LOOM_DSL_UNARY(log, Log)
LOOM_DSL_UNARY(log2, Log2)
LOOM_DSL_UNARY(log1p, Log1p)
LOOM_DSL_UNARY(sqrt, Sqrt)
LOOM_DSL_UNARY(rsqrt, Rsqrt)
LOOM_DSL_UNARY(sin, Sin)
LOOM_DSL_UNARY(cos, Cos)
LOOM_DSL_UNARY(tan, Tan)
LOOM_DSL_UNARY(asin, Asin)
LOOM_DSL_UNARY(acos, Acos)
LOOM_DSL_UNARY(atan, Atan)
LOOM_DSL_UNARY(sinh, Sinh)
LOOM_DSL_UNARY(cosh, Cosh)
LOOM_DSL_UNARY(tanh, Tanh)
LOOM_DSL_UNARY(asinh, Asinh)
LOOM_DSL_UNARY(acosh, Acosh)
LOOM_DSL_UNARY(atanh, Atanh)
LOOM_DSL_UNARY(sigmoid, Sigmoid)
LOOM_DSL_UNARY(erf, Erf)
LOOM_DSL_UNARY(gelu, GeluErf)
LOOM_DSL_UNARY(gelu_tanh, GeluTanh)
LOOM_DSL_UNARY(silu, Silu)
LOOM_DSL_UNARY(floor, Floor)
LOOM_DSL_UNARY(ceil, Ceil)
LOOM_DSL_UNARY(round, Round)
LOOM_DSL_UNARY(trunc, Trunc)
LOOM_DSL_UNARY(logical_not, LogicalNot)
LOOM_DSL_UNARY(isnan, IsNan)
LOOM_DSL_UNARY(isinf, IsInf)
LOOM_DSL_UNARY(isfinite, IsFinite)
#undef LOOM_DSL_UNARY

Array astype(const Operand& x, DType dtype, Loc loc) {
    return Array(ir::cast(x.resolve_alone("astype"), dtype, loc));
}

#define LOOM_DSL_BINARY(fn, Id)                             \
    Array fn(const Operand& a, const Operand& b, Loc loc) { \
        return binary_op(Op::Id, a, b, loc);                \
    }
LOOM_DSL_BINARY(add, Add)
LOOM_DSL_BINARY(sub, Sub)
LOOM_DSL_BINARY(mul, Mul)
LOOM_DSL_BINARY(div, Div)
LOOM_DSL_BINARY(floor_div, FloorDiv)
LOOM_DSL_BINARY(mod, Mod)
LOOM_DSL_BINARY(rem, Rem)
LOOM_DSL_BINARY(pow, Pow)
LOOM_DSL_BINARY(atan2, Atan2)
LOOM_DSL_BINARY(minimum, Minimum)
LOOM_DSL_BINARY(maximum, Maximum)
LOOM_DSL_BINARY(eq, Eq)
LOOM_DSL_BINARY(ne, Ne)
LOOM_DSL_BINARY(lt, Lt)
LOOM_DSL_BINARY(le, Le)
LOOM_DSL_BINARY(gt, Gt)
LOOM_DSL_BINARY(ge, Ge)
LOOM_DSL_BINARY(logical_and, LogicalAnd)
LOOM_DSL_BINARY(logical_or, LogicalOr)
LOOM_DSL_BINARY(logical_xor, LogicalXor)
LOOM_DSL_BINARY(bitwise_and, BitAnd)
LOOM_DSL_BINARY(bitwise_or, BitOr)
LOOM_DSL_BINARY(bitwise_xor, BitXor)
LOOM_DSL_BINARY(shift_left, Shl)
LOOM_DSL_BINARY(shift_right, Shr)
#undef LOOM_DSL_BINARY

Array where(const Operand& cond, const Operand& a, const Operand& b, Loc loc) {
    return ternary_op(Op::Where, cond, a, b, loc);
}
Array fma(const Operand& a, const Operand& b, const Operand& c, Loc loc) {
    return ternary_op(Op::Fma, a, b, c, loc);
}
Array clamp(const Operand& x, const Operand& lo, const Operand& hi, Loc loc) {
    return ternary_op(Op::Clamp, x, lo, hi, loc);
}

Array broadcast_to(const Operand& x, const Shape& shape, Loc loc) {
    return Array(ir::broadcast_to(x.resolve_alone("broadcast_to"), shape, loc));
}
Array reshape(const Operand& x, Shape shape, Loc loc) {
    return Array(ir::reshape(x.resolve_alone("reshape"), std::move(shape), loc));
}
Array permute(const Operand& x, std::vector<std::int64_t> perm, Loc loc) {
    return Array(ir::permute(x.resolve_alone("permute"), std::move(perm), loc));
}
Array transpose(const Operand& x, Loc loc) {
    return Array(ir::transpose(x.resolve_alone("transpose"), loc));
}

Array attention(const Operand& q, const Operand& k, const Operand& v, const AttentionOptions& options,
                Loc loc) {
    ir::NodePtr qn = q.resolve_alone("attention"), kn = k.resolve_alone("attention"),
                vn = v.resolve_alone("attention");
    if (options.bias && !options.bias->node())  // an empty Array given as the bias is not "no bias"
        throw Error(
            fmt::format("attention(): the bias is an empty Array; leave AttentionOptions::bias unset "
                        "for none ({})",
                        short_location(loc)));
    const double scale = options.scale ? *options.scale
                         : qn->rank() >= 1 && qn->shape().back() > 0
                             ? 1.0 / std::sqrt(static_cast<double>(qn->shape().back()))
                             : 1.0;
    return Array(ir::attention(std::move(qn), std::move(kn), std::move(vn),
                               options.bias ? options.bias->node() : nullptr, options.causal, scale, loc));
}
#define LOOM_DSL_SCAN(fn, Id)                                                                   \
    Array fn(const Operand& x, std::int64_t axis, ScanOptions options, Loc loc) {               \
        return Array(ir::scan(ir::Op::Id, x.resolve_alone(#fn), axis, options.exclusive, loc)); \
    }
LOOM_DSL_SCAN(cumsum, CumSum)
LOOM_DSL_SCAN(cumprod, CumProd)
LOOM_DSL_SCAN(cummax, CumMax)
LOOM_DSL_SCAN(cummin, CumMin)
LOOM_DSL_SCAN(logcumsumexp, LogCumSumExp)
#undef LOOM_DSL_SCAN

Array take(const Operand& x, const Operand& idx, std::int64_t axis, IndexMode mode, Loc loc) {
    return Array(ir::take(x.resolve_alone("take"), idx.resolve_alone("take"), axis, mode, loc));
}
Array take_along_axis(const Operand& x, const Operand& idx, std::int64_t axis, IndexMode mode, Loc loc) {
    return Array(ir::take_along_axis(x.resolve_alone("take_along_axis"), idx.resolve_alone("take_along_axis"),
                                     axis, mode, loc));
}
Array index_select(const Operand& x, std::int64_t axis, const Operand& idx, IndexMode mode, Loc loc) {
    return Array(ir::index_select(x.resolve_alone("index_select"), axis, idx.resolve_alone("index_select"),
                                  mode, loc));
}
Array one_hot(const Operand& idx, std::int64_t classes, DType dtype, IndexMode mode, Loc loc) {
    return Array(ir::one_hot(idx.resolve_alone("one_hot"), classes, dtype, mode, loc));
}
Array scatter(const Operand& x, const Operand& idx, const Operand& values, std::int64_t axis, IndexMode mode,
              Loc loc) {
    return Array(ir::scatter(x.resolve_alone("scatter"), idx.resolve_alone("scatter"),
                             values.resolve_alone("scatter"), axis, mode, loc));
}
Array scatter_add(const Operand& x, const Operand& idx, const Operand& values, std::int64_t axis,
                  ScatterOptions options, Loc loc) {
    return Array(ir::scatter_add(x.resolve_alone("scatter_add"), idx.resolve_alone("scatter_add"),
                                 values.resolve_alone("scatter_add"), axis, options.mode, options.atomic,
                                 loc));
}
Array index_add(const Operand& x, const Operand& index, const Operand& source, std::int64_t axis,
                ScatterOptions options, Loc loc) {
    return Array(ir::index_add(x.resolve_alone("index_add"), index.resolve_alone("index_add"),
                               source.resolve_alone("index_add"), axis, options.mode, options.atomic, loc));
}

#define LOOM_DSL_REDUCE(fn, Id)                                      \
    Array fn(const Operand& x, Axes axes, bool keepdims, Loc loc) {  \
        return reduce_op(Op::Id, x, std::move(axes), keepdims, loc); \
    }
LOOM_DSL_REDUCE(sum, Sum)
LOOM_DSL_REDUCE(prod, Prod)
LOOM_DSL_REDUCE(min, Min)
LOOM_DSL_REDUCE(max, Max)
LOOM_DSL_REDUCE(mean, Mean)
LOOM_DSL_REDUCE(argmin, ArgMin)
LOOM_DSL_REDUCE(argmax, ArgMax)
LOOM_DSL_REDUCE(any, Any)
LOOM_DSL_REDUCE(all, All)
#undef LOOM_DSL_REDUCE

Array matmul(const Operand& a, const Operand& b, Loc loc) {
    return Array(ir::matmul(a.resolve(b, "matmul"), b.resolve(a, "matmul"), loc));
}

Array matmul(const Operand& a, const Operand& b, const TileHint& hint, Loc loc) {
    return Array(
        ir::matmul(a.resolve(b, "matmul"), b.resolve(a, "matmul"), loc, {hint.rows, hint.cols, hint.depth}));
}

// Operators take the source location of their left operand's conversion (the expression's call site).
Array operator+(const Operand& a, const Operand& b) {
    return binary_op(Op::Add, a, b, a.loc());
}
Array operator-(const Operand& a, const Operand& b) {
    return binary_op(Op::Sub, a, b, a.loc());
}
Array operator*(const Operand& a, const Operand& b) {
    return binary_op(Op::Mul, a, b, a.loc());
}
Array operator/(const Operand& a, const Operand& b) {
    return binary_op(Op::Div, a, b, a.loc());
}
Array operator%(const Operand& a, const Operand& b) {
    return binary_op(Op::Rem, a, b, a.loc());
}
Array operator-(const Operand& a) {
    return unary_op(Op::Neg, a, a.loc());
}
Array operator==(const Operand& a, const Operand& b) {
    return binary_op(Op::Eq, a, b, a.loc());
}
Array operator!=(const Operand& a, const Operand& b) {
    return binary_op(Op::Ne, a, b, a.loc());
}
Array operator<(const Operand& a, const Operand& b) {
    return binary_op(Op::Lt, a, b, a.loc());
}
Array operator<=(const Operand& a, const Operand& b) {
    return binary_op(Op::Le, a, b, a.loc());
}
Array operator>(const Operand& a, const Operand& b) {
    return binary_op(Op::Gt, a, b, a.loc());
}
Array operator>=(const Operand& a, const Operand& b) {
    return binary_op(Op::Ge, a, b, a.loc());
}
Array operator&(const Operand& a, const Operand& b) {
    return binary_op(Op::BitAnd, a, b, a.loc());
}
Array operator|(const Operand& a, const Operand& b) {
    return binary_op(Op::BitOr, a, b, a.loc());
}
Array operator^(const Operand& a, const Operand& b) {
    return binary_op(Op::BitXor, a, b, a.loc());
}
Array operator<<(const Operand& a, const Operand& b) {
    return binary_op(Op::Shl, a, b, a.loc());
}
Array operator>>(const Operand& a, const Operand& b) {
    return binary_op(Op::Shr, a, b, a.loc());
}
Array operator!(const Operand& a) {
    return unary_op(Op::LogicalNot, a, a.loc());
}

}  // namespace loom
