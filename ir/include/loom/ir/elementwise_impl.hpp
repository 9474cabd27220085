// Per-element semantics of every elementwise op of ops.def, as templates over the C++ compute type.
//
// This header is the single definition of what an elementwise op computes (docs/semantics.md,
// "Elementwise ops"). Constant folding (eval_elementwise on ScalarValue) and the CPU reference
// evaluator's whole-array loops (runtime/src/reference_*.cpp) both instantiate these templates, so they
// can never disagree. The GPU prelude (codegen/src/prelude.cu) evaluates the same formulas.
//
// Compute types: bool -> std::uint8_t holding 0 or 1; int8/uint8/int32/int64 -> themselves;
// float16/bfloat16 -> float (the result is rounded to the dtype once per op, see round_result);
// float32 -> float; float64 -> double. Nothing here has undefined behaviour for any input value:
// integer arithmetic wraps through the unsigned type, division and shifts have defined results for every
// divisor and shift amount, and float->integer conversions saturate.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "loom/ir/dtype.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/exp_core.hpp"
#include "loom/ir/half.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/random_core.hpp"

namespace loom::ir::ew {

// ---------------------------------------------------------------------------------------------------
// DType traits: host storage type, compute type, rounding of a compute value to the dtype.

template <DType D>
struct Traits;
template <>
struct Traits<DType::Bool> {
    using storage = std::uint8_t;
    using compute = std::uint8_t;
};
template <>
struct Traits<DType::Int8> {
    using storage = std::int8_t;
    using compute = std::int8_t;
};
template <>
struct Traits<DType::UInt8> {
    using storage = std::uint8_t;
    using compute = std::uint8_t;
};
template <>
struct Traits<DType::Int32> {
    using storage = std::int32_t;
    using compute = std::int32_t;
};
template <>
struct Traits<DType::Int64> {
    using storage = std::int64_t;
    using compute = std::int64_t;
};
template <>
struct Traits<DType::Float16> {
    using storage = loom::half;
    using compute = float;
};
template <>
struct Traits<DType::BFloat16> {
    using storage = loom::bfloat16_t;
    using compute = float;
};
template <>
struct Traits<DType::Float32> {
    using storage = float;
    using compute = float;
};
template <>
struct Traits<DType::Float64> {
    using storage = double;
    using compute = double;
};

template <DType D>
using storage_t = typename Traits<D>::storage;
template <DType D>
using compute_t = typename Traits<D>::compute;

/// Rounds a compute value to a value of dtype D (float16/bfloat16: round to nearest even, once; others:
/// unchanged; bool: already 0/1).
template <DType D>
inline compute_t<D> round_result(compute_t<D> x) {
    if constexpr (D == DType::Float16)
        return round_to_half(x);
    else if constexpr (D == DType::BFloat16)
        return round_to_bf16(x);
    else
        return x;
}

/// Storage element -> compute value (exact).
template <DType D>
inline compute_t<D> load(storage_t<D> s) {
    if constexpr (D == DType::Float16)
        return half_bits_to_float(s.bits);
    else if constexpr (D == DType::BFloat16)
        return bf16_bits_to_float(s.bits);
    else if constexpr (D == DType::Bool)
        return s != 0 ? 1 : 0;
    else
        return s;
}

/// Compute value -> storage element (float16/bfloat16 round to nearest even once).
template <DType D>
inline storage_t<D> store(compute_t<D> c) {
    if constexpr (D == DType::Float16)
        return loom::half::from_bits(float_to_half_bits(c));
    else if constexpr (D == DType::BFloat16)
        return loom::bfloat16_t::from_bits(float_to_bf16_bits(c));
    else
        return c;
}

/// The typing rule of an op at compile time (the same table as info(op).rule, from ops.def).
constexpr Rule rule_of(Op op) {
    switch (op) {
#define LOOM_LEAF(Id, name) \
    case Op::Id:            \
        return Rule::None;
#define LOOM_UNARY(Id, name, R, cuda) \
    case Op::Id:                      \
        return Rule::R;
#define LOOM_BINARY(Id, name, R, cuda) \
    case Op::Id:                       \
        return Rule::R;
#define LOOM_TERNARY(Id, name, R, cuda) \
    case Op::Id:                        \
        return Rule::R;
#define LOOM_VIEW(Id, name) \
    case Op::Id:            \
        return Rule::None;
#define LOOM_REDUCE(Id, name, R) \
    case Op::Id:                 \
        return Rule::R;
#define LOOM_PRODUCT(Id, name, R) \
    case Op::Id:                  \
        return Rule::R;
#define LOOM_GATHER(Id, name) \
    case Op::Id:              \
        return Rule::None;
#define LOOM_ATTENTION(Id, name) \
    case Op::Id:                 \
        return Rule::None;
#define LOOM_SCAN(Id, name) \
    case Op::Id:            \
        return Rule::None;
#define LOOM_SCATTER(Id, name) \
    case Op::Id:               \
        return Rule::None;
#include "loom/ir/ops.def"
    }
    return Rule::None;
}

/// The kind of an op at compile time (the same table as info(op).kind).
constexpr OpKind kind_of(Op op) {
    switch (op) {
#define LOOM_LEAF(Id, name) \
    case Op::Id:            \
        return OpKind::Leaf;
#define LOOM_UNARY(Id, name, R, cuda) \
    case Op::Id:                      \
        return OpKind::Unary;
#define LOOM_BINARY(Id, name, R, cuda) \
    case Op::Id:                       \
        return OpKind::Binary;
#define LOOM_TERNARY(Id, name, R, cuda) \
    case Op::Id:                        \
        return OpKind::Ternary;
#define LOOM_VIEW(Id, name) \
    case Op::Id:            \
        return OpKind::View;
#define LOOM_REDUCE(Id, name, R) \
    case Op::Id:                 \
        return OpKind::Reduce;
#define LOOM_PRODUCT(Id, name, R) \
    case Op::Id:                  \
        return OpKind::Product;
#define LOOM_GATHER(Id, name) \
    case Op::Id:              \
        return OpKind::Gather;
#define LOOM_ATTENTION(Id, name) \
    case Op::Id:                 \
        return OpKind::Attention;
#define LOOM_SCAN(Id, name) \
    case Op::Id:            \
        return OpKind::Scan;
#define LOOM_SCATTER(Id, name) \
    case Op::Id:               \
        return OpKind::Scatter;
#include "loom/ir/ops.def"
    }
    return OpKind::Leaf;
}

/// Calls `f.template operator()<D>()` with D the compile-time value of `d` (a C++20 templated lambda:
/// `[&]<DType D>() { ... }`).
template <class F>
inline decltype(auto) visit_dtype(DType d, F&& f) {
    switch (d) {
        case DType::Bool:
            return f.template operator()<DType::Bool>();
        case DType::Int8:
            return f.template operator()<DType::Int8>();
        case DType::UInt8:
            return f.template operator()<DType::UInt8>();
        case DType::Int32:
            return f.template operator()<DType::Int32>();
        case DType::Int64:
            return f.template operator()<DType::Int64>();
        case DType::Float16:
            return f.template operator()<DType::Float16>();
        case DType::BFloat16:
            return f.template operator()<DType::BFloat16>();
        case DType::Float32:
            return f.template operator()<DType::Float32>();
        case DType::Float64:
            return f.template operator()<DType::Float64>();
    }
    throw InternalError("visit_dtype: bad dtype");
}

template <class C>
inline constexpr bool is_float_v = std::is_floating_point_v<C>;

[[noreturn]] inline void unsupported(Op op, const char* what) {
    throw InternalError(fmt::format("elementwise: op {} is not defined on {}", op_name(op), what));
}

// ---------------------------------------------------------------------------------------------------
// Building blocks.

/// Truthiness: nonzero is true; NaN is nonzero, so true.
template <class C>
inline bool truthy(C x) {
    return x != C(0);
}

/// Two's-complement wrapping arithmetic, computed in the unsigned type (no undefined behaviour).
template <class C>
inline C wrap_add(C a, C b) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<std::uint64_t>(static_cast<U>(a)) + static_cast<U>(b)));
}
template <class C>
inline C wrap_sub(C a, C b) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<std::uint64_t>(static_cast<U>(a)) - static_cast<U>(b)));
}
template <class C>
inline C wrap_mul(C a, C b) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<std::uint64_t>(static_cast<U>(a)) * static_cast<U>(b)));
}
template <class C>
inline C wrap_neg(C a) {
    return wrap_sub(C(0), a);
}

/// Integer division truncating toward zero. x / 0 = 0; INT_MIN / -1 = INT_MIN (wraps).
template <class C>
inline C int_div(C a, C b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>) {
        if (b == -1) return wrap_neg(a);
    }
    return static_cast<C>(a / b);
}
/// Integer remainder with the sign of the dividend (C++ %). x % 0 = x; INT_MIN % -1 = 0.
template <class C>
inline C int_rem(C a, C b) {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<C>) {
        if (b == -1) return 0;
    }
    return static_cast<C>(a % b);
}
/// Integer division rounding toward -Inf (Python //). x // 0 = 0; INT_MIN // -1 = INT_MIN.
template <class C>
inline C int_floor_div(C a, C b) {
    C q = int_div(a, b);
    if constexpr (std::is_signed_v<C>) {
        if (b != 0 && b != -1 && int_rem(a, b) != 0 && ((a < 0) != (b < 0))) q = static_cast<C>(q - 1);
    }
    return q;
}
/// Integer modulo with the sign of the divisor (Python %). x mod 0 = x; INT_MIN mod -1 = 0.
template <class C>
inline C int_mod(C a, C b) {
    C r = int_rem(a, b);
    if constexpr (std::is_signed_v<C>) {
        if (b != 0 && r != 0 && ((r < 0) != (b < 0))) r = wrap_add(r, b);
    }
    return r;
}

/// Shifts by amount b. Amounts outside [0, bit width) are defined: shift_left gives 0; shift_right gives
/// the sign fill (-1 for negative signed values, else 0). In-range shift_right is arithmetic for signed
/// types, logical for unsigned; shift_left wraps (bits shifted out are lost).
template <class C>
inline bool in_shift_range(C b) {
    constexpr std::int64_t bits = static_cast<std::int64_t>(sizeof(C) * 8);
    if constexpr (std::is_signed_v<C>)
        return b >= 0 && static_cast<std::int64_t>(b) < bits;
    else
        return static_cast<std::int64_t>(b) < bits;
}
template <class C>
inline C int_shl(C a, C b) {
    using U = std::make_unsigned_t<C>;
    if (!in_shift_range<C>(b)) return 0;
    return static_cast<C>(
        static_cast<U>(static_cast<std::uint64_t>(static_cast<U>(a)) << static_cast<int>(b)));
}
template <class C>
inline C int_shr(C a, C b) {
    if (!in_shift_range<C>(b)) {
        if constexpr (std::is_signed_v<C>)
            return a < 0 ? C(-1) : C(0);
        else
            return 0;
    }
    return static_cast<C>(a >> static_cast<int>(b));  // arithmetic for signed (defined since C++20)
}

/// IEEE minimum with NaN propagation and -0 < +0.
template <class C>
inline C minimum(C a, C b) {
    if constexpr (is_float_v<C>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
        if (a == b) return std::signbit(a) ? a : b;
    }
    return b < a ? b : a;
}
/// IEEE maximum with NaN propagation and +0 > -0.
template <class C>
inline C maximum(C a, C b) {
    if constexpr (is_float_v<C>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
        if (a == b) return std::signbit(a) ? b : a;
    }
    return a < b ? b : a;
}

/// Round half to even, exact for every float (no dependence on the floating-point environment).
template <class C>
inline C round_even(C x) {
    if (!std::isfinite(x)) return x;
    const C t = std::trunc(x);
    const C d = std::fabs(x - t);  // exact: the fractional part of x
    C r = t;
    const C one = std::signbit(x) ? C(-1) : C(1);
    if (d > C(0.5) || (d == C(0.5) && std::fmod(t, C(2)) != C(0))) r = t + one;
    return std::copysign(r, x);
}

/// A C library function of one argument at the compute type: float arguments are evaluated in double
/// and rounded once to float; double arguments directly.
template <class C, class F>
inline C libm1(F f, C x) {
    return static_cast<C>(f(static_cast<double>(x)));
}
template <class C, class F>
inline C libm2(F f, C x, C y) {
    return static_cast<C>(f(static_cast<double>(x), static_cast<double>(y)));
}

/// Constants of the composite activations, rounded to the compute type.
template <class C>
inline constexpr C kHalf = C(0.5);
template <class C>
inline constexpr C kSqrt1_2 = C(0.70710678118654752440084436210484903928);  // 1/sqrt(2)
template <class C>
inline constexpr C kSqrt2OverPi = C(0.79788456080286535587989211986876373695);  // sqrt(2/pi)
template <class C>
inline constexpr C kGeluCubic = C(0.044715);

// ---------------------------------------------------------------------------------------------------
// Unary ops whose result has the operand's dtype (rules Numeric, FloatMath, Rounding).

template <Op op, class C>
inline C unary(C x) {
    if constexpr (op == Op::Neg) {
        if constexpr (is_float_v<C>)
            return -x;
        else
            return wrap_neg(x);
    } else if constexpr (op == Op::Abs) {
        if constexpr (is_float_v<C>)
            return std::fabs(x);
        else if constexpr (std::is_signed_v<C>)
            return x < 0 ? wrap_neg(x) : x;
        else
            return x;
    } else if constexpr (op == Op::Sign) {
        if constexpr (is_float_v<C>) {
            if (std::isnan(x) || x == C(0)) return x;
            return x > C(0) ? C(1) : C(-1);
        } else if constexpr (std::is_signed_v<C>) {
            return static_cast<C>(x > C(0) ? 1 : (x < C(0) ? -1 : 0));
        } else {
            return static_cast<C>(x > C(0) ? 1 : 0);
        }
    } else if constexpr (op == Op::Relu) {
        return maximum(x, C(0));
    } else if constexpr (op == Op::Floor || op == Op::Ceil || op == Op::Round || op == Op::Trunc) {
        if constexpr (!is_float_v<C>)
            return x;  // integers are whole
        else if constexpr (op == Op::Floor)
            return std::floor(x);
        else if constexpr (op == Op::Ceil)
            return std::ceil(x);
        else if constexpr (op == Op::Trunc)
            return std::trunc(x);
        else
            return round_even(x);
    } else if constexpr (!is_float_v<C>) {
        unsupported(op, "integer or bool operands");
    } else if constexpr (op == Op::Exp) {
        // float32 compute (float32, float16, bfloat16): Loom's own correctly rounded exp, which the host back
        // end and GPU kernels compile too (exp_core.hpp); float64: the C library's.
        if constexpr (std::is_same_v<C, float>)
            return expc::exp_f32(x);
        else
            return std::exp(x);
    } else if constexpr (op == Op::Exp2) {
        return libm1<C>([](double v) { return std::exp2(v); }, x);
    } else if constexpr (op == Op::Expm1) {
        return libm1<C>([](double v) { return std::expm1(v); }, x);
    } else if constexpr (op == Op::Log) {
        return libm1<C>([](double v) { return std::log(v); }, x);
    } else if constexpr (op == Op::Log2) {
        return libm1<C>([](double v) { return std::log2(v); }, x);
    } else if constexpr (op == Op::Log1p) {
        return libm1<C>([](double v) { return std::log1p(v); }, x);
    } else if constexpr (op == Op::Sqrt) {
        return std::sqrt(x);  // correctly rounded at C
    } else if constexpr (op == Op::Rsqrt) {
        return libm1<C>([](double v) { return 1.0 / std::sqrt(v); }, x);
    } else if constexpr (op == Op::Sin) {
        return libm1<C>([](double v) { return std::sin(v); }, x);
    } else if constexpr (op == Op::Cos) {
        return libm1<C>([](double v) { return std::cos(v); }, x);
    } else if constexpr (op == Op::Tan) {
        return libm1<C>([](double v) { return std::tan(v); }, x);
    } else if constexpr (op == Op::Asin) {
        return libm1<C>([](double v) { return std::asin(v); }, x);
    } else if constexpr (op == Op::Acos) {
        return libm1<C>([](double v) { return std::acos(v); }, x);
    } else if constexpr (op == Op::Atan) {
        return libm1<C>([](double v) { return std::atan(v); }, x);
    } else if constexpr (op == Op::Sinh) {
        return libm1<C>([](double v) { return std::sinh(v); }, x);
    } else if constexpr (op == Op::Cosh) {
        return libm1<C>([](double v) { return std::cosh(v); }, x);
    } else if constexpr (op == Op::Tanh) {
        return libm1<C>([](double v) { return std::tanh(v); }, x);
    } else if constexpr (op == Op::Asinh) {
        return libm1<C>([](double v) { return std::asinh(v); }, x);
    } else if constexpr (op == Op::Acosh) {
        return libm1<C>([](double v) { return std::acosh(v); }, x);
    } else if constexpr (op == Op::Atanh) {
        return libm1<C>([](double v) { return std::atanh(v); }, x);
    } else if constexpr (op == Op::Erf) {
        return libm1<C>([](double v) { return std::erf(v); }, x);
    } else if constexpr (op == Op::Sigmoid) {
        // sigmoid(x) = 1 / (1 + exp(-x)); each step rounded at C.
        const C e = unary<Op::Exp>(static_cast<C>(-x));
        return C(1) / (C(1) + e);
    } else if constexpr (op == Op::Silu) {
        // silu(x) = x / (1 + exp(-x)); each step rounded at C.
        const C e = unary<Op::Exp>(static_cast<C>(-x));
        return x / (C(1) + e);
    } else if constexpr (op == Op::GeluErf) {
        // gelu(x) = (0.5 * x) * (1 + erf(x * (1/sqrt 2))); each step rounded at C.
        const C u = x * kSqrt1_2<C>;
        const C e = unary<Op::Erf>(u);
        return (kHalf<C> * x) * (C(1) + e);
    } else if constexpr (op == Op::GeluTanh) {
        // gelu_tanh(x) = (0.5 * x) * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * ((x * x) * x)))).
        const C x3 = (x * x) * x;
        const C inner = x + kGeluCubic<C> * x3;
        const C t = unary<Op::Tanh>(static_cast<C>(kSqrt2OverPi<C> * inner));
        return (kHalf<C> * x) * (C(1) + t);
    } else {
        unsupported(op, "one operand of the same dtype");
    }
}

/// Unary ops with a bool result (rule ToBool).
template <Op op, class C>
inline bool unary_to_bool(C x) {
    if constexpr (op == Op::LogicalNot)
        return !truthy(x);
    else if constexpr (op == Op::IsNan) {
        if constexpr (is_float_v<C>)
            return std::isnan(x);
        else
            return false;
    } else if constexpr (op == Op::IsInf) {
        if constexpr (is_float_v<C>)
            return std::isinf(x);
        else
            return false;
    } else if constexpr (op == Op::IsFinite) {
        if constexpr (is_float_v<C>)
            return std::isfinite(x);
        else
            return true;
    } else
        unsupported(op, "a bool result");
}

// ---------------------------------------------------------------------------------------------------
// Binary ops whose result has the operands' dtype (rules Arith, FloatMath, Bitwise, Shift, Logical).

template <Op op, class C>
inline C binary(C a, C b) {
    if constexpr (op == Op::Add) {
        if constexpr (is_float_v<C>)
            return a + b;
        else
            return wrap_add(a, b);
    } else if constexpr (op == Op::Sub) {
        if constexpr (is_float_v<C>)
            return a - b;
        else
            return wrap_sub(a, b);
    } else if constexpr (op == Op::Mul) {
        if constexpr (is_float_v<C>)
            return a * b;
        else
            return wrap_mul(a, b);
    } else if constexpr (op == Op::Div) {
        if constexpr (is_float_v<C>)
            return a / b;
        else
            return int_div(a, b);
    } else if constexpr (op == Op::FloorDiv) {
        if constexpr (is_float_v<C>)
            return std::floor(a / b);
        else
            return int_floor_div(a, b);
    } else if constexpr (op == Op::Rem) {
        if constexpr (is_float_v<C>)
            return std::fmod(a, b);
        else
            return int_rem(a, b);
    } else if constexpr (op == Op::Mod) {
        if constexpr (is_float_v<C>) {
            // Python's float %: fmod, moved into the divisor's sign; a zero result takes b's sign.
            C r = std::fmod(a, b);
            if (r != C(0)) {
                if ((r < C(0)) != (b < C(0))) r = r + b;
            } else {
                r = std::copysign(C(0), b);
            }
            return r;
        } else {
            return int_mod(a, b);
        }
    } else if constexpr (op == Op::Minimum) {
        return minimum(a, b);
    } else if constexpr (op == Op::Maximum) {
        return maximum(a, b);
    } else if constexpr (op == Op::LogicalAnd) {
        return static_cast<C>(truthy(a) && truthy(b) ? 1 : 0);
    } else if constexpr (op == Op::LogicalOr) {
        return static_cast<C>(truthy(a) || truthy(b) ? 1 : 0);
    } else if constexpr (op == Op::LogicalXor) {
        return static_cast<C>(truthy(a) != truthy(b) ? 1 : 0);
    } else if constexpr (is_float_v<C>) {
        if constexpr (op == Op::Pow)
            return libm2<C>([](double x, double y) { return std::pow(x, y); }, a, b);
        else if constexpr (op == Op::Atan2)
            return libm2<C>([](double x, double y) { return std::atan2(x, y); }, a, b);
        else
            unsupported(op, "float operands");
    } else {
        if constexpr (op == Op::BitAnd)
            return static_cast<C>(a & b);
        else if constexpr (op == Op::BitOr)
            return static_cast<C>(a | b);
        else if constexpr (op == Op::BitXor)
            return static_cast<C>(a ^ b);
        else if constexpr (op == Op::Shl)
            return int_shl(a, b);
        else if constexpr (op == Op::Shr)
            return int_shr(a, b);
        else
            unsupported(op, "integer or bool operands");
    }
}

/// Comparisons (rule Compare): IEEE-754, so every comparison with NaN is false except ne.
template <Op op, class C>
inline bool compare(C a, C b) {
    if constexpr (op == Op::Eq)
        return a == b;
    else if constexpr (op == Op::Ne)
        return a != b;
    else if constexpr (op == Op::Lt)
        return a < b;
    else if constexpr (op == Op::Le)
        return a <= b;
    else if constexpr (op == Op::Gt)
        return a > b;
    else if constexpr (op == Op::Ge)
        return a >= b;
    else
        unsupported(op, "a comparison");
}

/// where(cond, a, b): the condition is bool (0/1); the unselected operand is computed but discarded.
template <class C>
inline C where(std::uint8_t cond, C a, C b) {
    return cond ? a : b;
}

/// Ternary arithmetic (fma, clamp).
template <Op op, class C>
inline C ternary(C a, C b, C c) {
    if constexpr (op == Op::Fma) {
        if constexpr (is_float_v<C>)
            return std::fma(a, b, c);  // one rounding at C
        else
            unsupported(op, "integer operands");
    } else if constexpr (op == Op::Clamp) {
        return minimum(maximum(a, b), c);  // clamp(x, lo, hi); lo > hi gives hi
    } else {
        unsupported(op, "three operands");
    }
}

// ---------------------------------------------------------------------------------------------------
// Random numbers (rule Random): element `index` of the stream `seed`, as a value of the float dtype D
// (docs/semantics.md, "Random numbers"; the generator and the transforms are loom/ir/random_core.hpp, which
// the GPU prelude compiles too). float16 and bfloat16: uniform values of 11 and 8 bits (values of the dtype),
// normal values the float32 ones rounded once.

template <Op op, DType D>
inline compute_t<D> random(std::int64_t index, std::int64_t seed) {
    constexpr bool f64 = D == DType::Float64;
    const rng::Words w = rng::draw(rng::block_of(index, f64), seed);
    const unsigned int k = rng::slot_of(index, f64);
    if constexpr (!is_float(D)) {
        unsupported(op, "a result that is not a float");
    } else if constexpr (op == Op::RandomUniform) {
        if constexpr (f64)
            return rng::uniform_f64_slot(w, k);
        else
            return rng::uniform_slot(w, k, D == DType::Float32 ? 24 : D == DType::Float16 ? 11 : 8);
    } else if constexpr (op == Op::RandomNormal) {
        if constexpr (f64)
            return rng::normal_f64(w, k);
        else
            return round_result<D>(rng::normal_f32(w, k));
    } else {
        unsupported(op, "an index and a seed");
    }
}

// ---------------------------------------------------------------------------------------------------
// Casts.

/// int64 -> double rounded to odd: exact below 2^53; otherwise the discarded bits are folded into the
/// last kept bit, so that a later round-to-nearest to any format of at most 51 bits of precision
/// (float32, float16, bfloat16) rounds exactly once.
inline double int64_to_double_odd(std::int64_t v) {
    const bool neg = v < 0;
    std::uint64_t m = neg ? (~static_cast<std::uint64_t>(v) + 1u) : static_cast<std::uint64_t>(v);
    const int width = 64 - std::countl_zero(m);
    if (width > 53) {
        const int drop = width - 53;
        const std::uint64_t mask = (std::uint64_t{1} << drop) - 1u;
        const bool sticky = (m & mask) != 0;
        m &= ~mask;
        if (sticky) m |= (std::uint64_t{1} << drop);
    }
    const double d = static_cast<double>(m);  // exact: at most 53 significant bits
    return neg ? -d : d;
}

/// Saturating float -> integer conversion: truncate toward zero, clamp to I's range, NaN -> 0. Never
/// converts an out-of-range value with a C++ cast (which would be undefined behaviour).
template <class I, class F>
inline I float_to_int(F x) {
    if (std::isnan(x)) return 0;
    constexpr int digits = std::numeric_limits<I>::digits;  // 63, 31, 8, 7
    const F hi = std::ldexp(F(1), digits);                  // exact power of two; first value out of range
    if (x >= hi) return std::numeric_limits<I>::max();
    if constexpr (std::is_signed_v<I>) {
        if (x <= -hi) return std::numeric_limits<I>::min();
    } else {
        if (x <= F(0)) return 0;
    }
    return static_cast<I>(x);  // |trunc(x)| is in range here
}

/// Converts a compute value of dtype From to a compute value of dtype To (docs/semantics.md, "Casts"):
/// to bool: != 0 (NaN -> true); integer -> integer: wraps modulo 2^n; float -> integer: float_to_int;
/// integer -> float and float -> float: round to nearest even, once.
template <DType To, DType From>
inline compute_t<To> cast(compute_t<From> x) {
    using T = compute_t<To>;
    using S = compute_t<From>;
    if constexpr (To == DType::Bool) {
        return truthy(x) ? 1 : 0;
    } else if constexpr (!is_float(To)) {
        if constexpr (is_float_v<S>)
            return float_to_int<T>(x);
        else
            return static_cast<T>(x);  // modular since C++20
    } else if constexpr (To == DType::Float64) {
        return static_cast<double>(x);  // exact from every source but int64, which rounds once
    } else {
        // Float32, Float16, BFloat16: go through an exact (or round-to-odd) double, then round once.
        double d;
        if constexpr (std::is_same_v<S, std::int64_t>)
            d = int64_to_double_odd(x);
        else
            d = static_cast<double>(x);
        if constexpr (To == DType::Float32)
            return static_cast<float>(d);
        else if constexpr (To == DType::Float16)
            return half_bits_to_float(double_to_half_bits(d));
        else
            return bf16_bits_to_float(double_to_bf16_bits(d));
    }
}

}  // namespace loom::ir::ew
