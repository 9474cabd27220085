// Per-element semantics of the elementwise ops (eval_elementwise and elementwise_impl.hpp) on edge values.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "loom/ir/build.hpp"
#include "loom/ir/elementwise.hpp"
#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/half.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

ScalarValue F(double v) {
    return ScalarValue::of_float(v);
}
ScalarValue I(std::int64_t v) {
    return ScalarValue::of_int(v);
}

std::int64_t ei(Op op, DType dt, std::int64_t a, std::int64_t b = 0) {
    ScalarValue args[3] = {I(a), I(b), {}};
    return eval_elementwise(op, dt, dt, args).i;
}
double ef(Op op, DType dt, double a, double b = 0, double c = 0) {
    ScalarValue args[3] = {F(a), F(b), F(c)};
    return eval_elementwise(op, dt, dt, args).f;
}
bool cmp(Op op, DType dt, double a, double b) {
    ScalarValue args[3] = {F(a), F(b), {}};
    return eval_elementwise(op, DType::Bool, dt, args).i != 0;
}
ScalarValue cast_f(double v, DType from, DType to) {
    ScalarValue a = F(v);
    return eval_elementwise(Op::Cast, to, from, &a);
}
ScalarValue cast_i(std::int64_t v, DType from, DType to) {
    ScalarValue a = I(v);
    return eval_elementwise(Op::Cast, to, from, &a);
}
bool same_bits(double a, double b) {
    return std::signbit(a) == std::signbit(b) && (a == b || (a != a && b != b));
}

}  // namespace

TEST_CASE("integer arithmetic wraps") {
    CHECK(ei(Op::Add, int8, 127, 1) == -128);
    CHECK(ei(Op::Sub, int8, -128, 1) == 127);
    CHECK(ei(Op::Add, uint8, 255, 1) == 0);
    CHECK(ei(Op::Mul, int32, 65536, 65536) == 0);
    CHECK(ei(Op::Mul, int32, 2147483647, 2) == -2);
    CHECK(ei(Op::Add, int64, INT64_MAX, 1) == INT64_MIN);
    CHECK(ei(Op::Neg, int32, INT32_MIN) == INT32_MIN);
    CHECK(ei(Op::Abs, int8, -128) == -128);
    CHECK(ei(Op::Abs, int32, -7) == 7);
    CHECK(ei(Op::Neg, uint8, 1) == 255);
    CHECK(ei(Op::Sign, int32, -9) == -1);
    CHECK(ei(Op::Sign, uint8, 0) == 0);
    CHECK(ei(Op::Relu, int32, -9) == 0);
}

TEST_CASE("integer division, remainder, floor division and modulo") {
    CHECK(ei(Op::Div, int32, 7, -2) == -3);
    CHECK(ei(Op::Rem, int32, 7, -2) == 1);
    CHECK(ei(Op::Rem, int32, -7, 2) == -1);
    CHECK(ei(Op::FloorDiv, int32, 7, -2) == -4);
    CHECK(ei(Op::FloorDiv, int32, -7, 2) == -4);
    CHECK(ei(Op::FloorDiv, int32, 6, -2) == -3);
    CHECK(ei(Op::Mod, int32, 7, -2) == -1);
    CHECK(ei(Op::Mod, int32, -7, 2) == 1);
    CHECK(ei(Op::Mod, int32, -6, 2) == 0);
    // division by zero and INT_MIN / -1 are defined
    CHECK(ei(Op::Div, int32, 5, 0) == 0);
    CHECK(ei(Op::Rem, int32, 5, 0) == 5);
    CHECK(ei(Op::FloorDiv, int64, -5, 0) == 0);
    CHECK(ei(Op::Mod, int64, -5, 0) == -5);
    CHECK(ei(Op::Div, uint8, 200, 0) == 0);
    CHECK(ei(Op::Div, int32, INT32_MIN, -1) == INT32_MIN);
    CHECK(ei(Op::Rem, int32, INT32_MIN, -1) == 0);
    CHECK(ei(Op::FloorDiv, int64, INT64_MIN, -1) == INT64_MIN);
    CHECK(ei(Op::Mod, int64, INT64_MIN, -1) == 0);
    CHECK(ei(Op::Div, int8, -128, -1) == -128);
    CHECK(ei(Op::Div, uint8, 255, 2) == 127);
}

TEST_CASE("shifts of every amount") {
    CHECK(ei(Op::Shl, int32, 1, 31) == INT32_MIN);
    CHECK(ei(Op::Shl, int32, 1, 32) == 0);
    CHECK(ei(Op::Shl, int32, 1, -1) == 0);
    CHECK(ei(Op::Shl, int8, 64, 1) == -128);
    CHECK(ei(Op::Shr, int32, -8, 1) == -4);
    CHECK(ei(Op::Shr, int32, -8, 40) == -1);
    CHECK(ei(Op::Shr, int32, 8, 40) == 0);
    CHECK(ei(Op::Shr, int64, -1, -3) == -1);
    CHECK(ei(Op::Shr, uint8, 200, 3) == 25);
    CHECK(ei(Op::Shr, uint8, 200, 8) == 0);
    CHECK(ei(Op::Shl, int64, 3, 62) == INT64_MIN + (std::int64_t{1} << 62));
    CHECK(ei(Op::BitXor, int32, 0b1100, 0b1010) == 0b0110);
}

TEST_CASE("float min, max, clamp, relu and sign: NaN propagates, -0 < +0") {
    CHECK(std::signbit(ef(Op::Minimum, float32, -0.0, 0.0)));
    CHECK(std::signbit(ef(Op::Minimum, float32, 0.0, -0.0)));
    CHECK(!std::signbit(ef(Op::Maximum, float32, -0.0, 0.0)));
    CHECK(!std::signbit(ef(Op::Maximum, float32, 0.0, -0.0)));
    CHECK(std::isnan(ef(Op::Minimum, float32, kNaN, 1.0)));
    CHECK(std::isnan(ef(Op::Minimum, float32, 1.0, kNaN)));
    CHECK(std::isnan(ef(Op::Maximum, float64, 1.0, kNaN)));
    CHECK(std::isnan(ef(Op::Clamp, float32, kNaN, 0.0, 1.0)));
    CHECK(std::isnan(ef(Op::Clamp, float32, 0.5, kNaN, 1.0)));
    CHECK(ef(Op::Clamp, float32, 5.0, 0.0, 1.0) == 1.0);
    CHECK(ef(Op::Clamp, float32, -5.0, 0.0, 1.0) == 0.0);
    CHECK(ef(Op::Clamp, float32, 0.5, 2.0, 1.0) == 1.0);  // lo > hi gives hi
    CHECK(same_bits(ef(Op::Relu, float32, -0.0), 0.0));
    CHECK(std::isnan(ef(Op::Relu, float32, kNaN)));
    CHECK(ef(Op::Relu, float32, -kInf) == 0.0);
    CHECK(std::isnan(ef(Op::Sign, float32, kNaN)));
    CHECK(same_bits(ef(Op::Sign, float32, -0.0), -0.0));
    CHECK(same_bits(ef(Op::Sign, float32, 0.0), 0.0));
    CHECK(ef(Op::Sign, float32, -3.5) == -1.0);
    CHECK(ef(Op::Sign, float16, kInf) == 1.0);
    CHECK(same_bits(ef(Op::Abs, float32, -0.0), 0.0));
}

TEST_CASE("round is half to even, floor, ceil, trunc keep the sign of zero") {
    CHECK(ef(Op::Round, float32, 0.5) == 0.0);
    CHECK(ef(Op::Round, float32, 1.5) == 2.0);
    CHECK(ef(Op::Round, float32, 2.5) == 2.0);
    CHECK(ef(Op::Round, float32, -2.5) == -2.0);
    CHECK(ef(Op::Round, float32, 2.5000002384185791) == 3.0);
    CHECK(same_bits(ef(Op::Round, float32, -0.5), -0.0));
    CHECK(same_bits(ef(Op::Round, float32, -0.25), -0.0));
    CHECK(ef(Op::Round, float32, 0.49999997019767761) == 0.0);
    CHECK(ef(Op::Round, float32, 8388609.0) == 8388609.0);
    CHECK(ef(Op::Round, float64, 4503599627370497.0) == 4503599627370497.0);
    CHECK(std::isnan(ef(Op::Round, float32, kNaN)));
    CHECK(ef(Op::Round, float32, -kInf) == -kInf);
    CHECK(same_bits(ef(Op::Ceil, float32, -0.5), -0.0));
    CHECK(same_bits(ef(Op::Trunc, float32, -0.5), -0.0));
    CHECK(ef(Op::Floor, float32, -0.5) == -1.0);
}

TEST_CASE("float division, remainder, modulo and floor division") {
    CHECK(ef(Op::Div, float32, 1.0, 0.0) == kInf);
    CHECK(ef(Op::Div, float32, -1.0, 0.0) == -kInf);
    CHECK(ef(Op::Div, float32, 1.0, -0.0) == -kInf);
    CHECK(std::isnan(ef(Op::Div, float32, 0.0, 0.0)));
    CHECK(ef(Op::Div, float32, 1.0, 3.0) == static_cast<double>(1.0f / 3.0f));
    CHECK(ef(Op::Rem, float32, -7.5, 2.0) == -1.5);
    CHECK(ef(Op::Mod, float32, -7.5, 2.0) == 0.5);
    CHECK(ef(Op::Mod, float32, 7.5, -2.0) == -0.5);
    CHECK(same_bits(ef(Op::Mod, float32, -4.0, 2.0), 0.0));
    CHECK(same_bits(ef(Op::Mod, float32, 4.0, -2.0), -0.0));
    CHECK(ef(Op::Mod, float64, -5.0, kInf) == kInf);
    CHECK(std::isnan(ef(Op::Mod, float32, 1.0, 0.0)));
    CHECK(ef(Op::FloorDiv, float32, 7.0, -2.0) == -4.0);
    CHECK(ef(Op::FloorDiv, float32, 1.0, 0.0) == kInf);
}

TEST_CASE("no contraction: fma rounds once, a*b+c twice") {
    const double a = 1.0 + std::ldexp(1.0, -23), c = -(1.0 + std::ldexp(1.0, -22));
    // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46: the product rounds the 2^-46 away, fma keeps it.
    ScalarValue args[3] = {F(a), F(a), {}};
    const double p = eval_elementwise(Op::Mul, float32, float32, args).f;
    ScalarValue add_args[3] = {F(p), F(c), {}};
    CHECK(eval_elementwise(Op::Add, float32, float32, add_args).f == 0.0);
    CHECK(ef(Op::Fma, float32, a, a, c) == std::ldexp(1.0, -46));
}

TEST_CASE("comparisons with NaN and logical ops on truthiness") {
    CHECK(!cmp(Op::Eq, float32, kNaN, kNaN));
    CHECK(cmp(Op::Ne, float32, kNaN, kNaN));
    CHECK(!cmp(Op::Lt, float32, kNaN, 1.0));
    CHECK(!cmp(Op::Ge, float32, kNaN, 1.0));
    CHECK(cmp(Op::Eq, float32, -0.0, 0.0));
    CHECK(cmp(Op::Lt, float64, -kInf, -1e308));
    ScalarValue nan = F(kNaN), zero = F(-0.0);
    CHECK(eval_elementwise(Op::LogicalNot, bool_, float32, &nan).i == 0);  // NaN is true
    CHECK(eval_elementwise(Op::LogicalNot, bool_, float32, &zero).i == 1);
    ScalarValue i5 = I(5);
    CHECK(eval_elementwise(Op::IsNan, bool_, int32, &i5).i == 0);
    CHECK(eval_elementwise(Op::IsFinite, bool_, int32, &i5).i == 1);
    ScalarValue inf = F(-kInf);
    CHECK(eval_elementwise(Op::IsInf, bool_, float16, &inf).i == 1);
    ScalarValue t[3] = {I(1), I(0), {}};
    CHECK(eval_elementwise(Op::LogicalXor, bool_, bool_, t).i == 1);
    ScalarValue w[3] = {I(0), F(1.0), F(kNaN)};
    CHECK(std::isnan(eval_elementwise(Op::Where, float32, float32, w).f));
}

TEST_CASE("float to integer casts truncate, saturate, and map NaN to 0") {
    CHECK(cast_f(kNaN, float32, int32).i == 0);
    CHECK(cast_f(1e10, float32, int32).i == INT32_MAX);
    CHECK(cast_f(-1e10, float32, int32).i == INT32_MIN);
    CHECK(cast_f(-1.9, float32, int32).i == -1);
    CHECK(cast_f(1.9, float64, int8).i == 1);
    CHECK(cast_f(300.7, float32, uint8).i == 255);
    CHECK(cast_f(-5.0, float32, uint8).i == 0);
    CHECK(cast_f(-0.9, float32, uint8).i == 0);
    CHECK(cast_f(-128.9, float32, int8).i == -128);
    CHECK(cast_f(-129.0, float32, int8).i == -128);
    CHECK(cast_f(kInf, float64, int64).i == INT64_MAX);
    CHECK(cast_f(-kInf, float64, int64).i == INT64_MIN);
    CHECK(cast_f(9223372036854775808.0, float64, int64).i == INT64_MAX);
    CHECK(cast_f(-9223372036854775808.0, float64, int64).i == INT64_MIN);
    CHECK(cast_f(2147483520.0, float32, int32).i == 2147483520);
    CHECK(cast_f(kNaN, float32, bool_).i == 1);
    CHECK(cast_f(-0.0, float32, bool_).i == 0);
    CHECK(cast_f(65504.0, float16, int64).i == 65504);
}

TEST_CASE("integer casts wrap, integer to float rounds once to nearest even") {
    CHECK(cast_i(300, int32, uint8).i == 44);
    CHECK(cast_i(-1, int64, uint8).i == 255);
    CHECK(cast_i(200, uint8, int8).i == -56);
    CHECK(cast_i(7, int32, bool_).i == 1);
    CHECK(cast_i(1, bool_, float16).f == 1.0);
    CHECK(cast_i((std::int64_t{1} << 53) + 1, int64, float64).f == 9007199254740992.0);
    CHECK(cast_i((std::int64_t{1} << 24) + 1, int64, float32).f == 16777216.0);
    CHECK(cast_i((std::int64_t{1} << 24) + 3, int32, float32).f == 16777220.0);
    CHECK(cast_i(65520, int32, float16).f == kInf);
    CHECK(cast_i(65519, int32, float16).f == 65504.0);
    // 2^24 + 2^16 + 1 is just above a bfloat16 tie; via float32 it would become the tie and round down.
    CHECK(cast_i((1 << 24) + (1 << 16) + 1, int32, bfloat16).f == 16777216.0 + 131072.0);
    // 2^60 + 2^52 + 1: via a plain double it would become the tie; round-to-odd keeps it above.
    const std::int64_t big = (std::int64_t{1} << 60) + (std::int64_t{1} << 52) + 1;
    CHECK(cast_i(big, int64, bfloat16).f == std::ldexp(1.0, 60) + std::ldexp(1.0, 53));
    CHECK(cast_i(big, int64, float32).f == std::ldexp(1.0, 60) + std::ldexp(1.0, 52));  // representable
    CHECK(cast_i(-big, int64, bfloat16).f == -(std::ldexp(1.0, 60) + std::ldexp(1.0, 53)));
    CHECK(ew::int64_to_double_odd(INT64_MIN) == -9223372036854775808.0);
}

TEST_CASE("float16 and bfloat16: one rounding per op, overflow to Inf, ties to even") {
    CHECK(ef(Op::Add, float16, 65504.0, 16.0) == kInf);  // exactly halfway to 2^16: ties to even is Inf
    CHECK(ef(Op::Add, float16, 65504.0, 15.0) == 65504.0);
    CHECK(ef(Op::Mul, float16, 256.0, 256.0) == kInf);
    CHECK(ef(Op::Add, float16, 1.0, std::ldexp(1.0, -11)) == 1.0);  // tie -> even
    CHECK(ef(Op::Add, float16, 1.0 + std::ldexp(1.0, -10), std::ldexp(1.0, -11)) ==
          1.0 + std::ldexp(1.0, -9));
    CHECK(ef(Op::Add, bfloat16, 1.0, std::ldexp(1.0, -8)) == 1.0);  // tie -> even
    CHECK(ef(Op::Add, bfloat16, 1.0 + std::ldexp(1.0, -7), std::ldexp(1.0, -8)) == 1.0 + std::ldexp(1.0, -6));
    CHECK(cast_f(1.0 + std::ldexp(1.0, -8), float32, bfloat16).f == 1.0);
    CHECK(cast_f(1.0 + 3 * std::ldexp(1.0, -8), float32, bfloat16).f == 1.0 + std::ldexp(1.0, -6));
    // subnormal float16: 2^-24 is the smallest; half of it ties to 0
    CHECK(ef(Op::Mul, float16, std::ldexp(1.0, -24), 0.5) == 0.0);
    CHECK(ef(Op::Mul, float16, std::ldexp(1.0, -24), 1.5) == std::ldexp(1.0, -23));
    // float64 -> float16 rounds once (via float32 it would hit the tie and round down to 1)
    CHECK(cast_f(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), float64, float16).f ==
          1.0 + std::ldexp(1.0, -10));
    CHECK(cast_f(1e6, float32, float16).f == kInf);
    CHECK(std::isnan(cast_f(kNaN, float32, bfloat16).f));
    CHECK(cast_f(3.0e38, float32, bfloat16).f != kInf);  // bfloat16 has float32's range
    // every float16 op's result is a float16 value
    const double s = ef(Op::Sqrt, float16, 2.0);
    CHECK(s == static_cast<double>(round_to_half(static_cast<float>(s))));
    CHECK(s == static_cast<double>(round_to_half(std::sqrt(2.0f))));
}

TEST_CASE("denormals are ordinary values") {
    const double d = std::ldexp(1.0, -149);  // smallest float32 subnormal
    CHECK(ef(Op::Add, float32, d, d) == std::ldexp(1.0, -148));
    CHECK(ef(Op::Mul, float32, std::ldexp(1.0, -126), 0.5) == std::ldexp(1.0, -127));
    CHECK(ef(Op::Mul, float32, d, 0.5) == 0.0);
    CHECK(cmp(Op::Gt, float32, d, 0.0));
}

TEST_CASE("activations follow their documented formulas") {
    CHECK(ef(Op::Sigmoid, float32, 0.0) == 0.5);
    CHECK(ef(Op::Sigmoid, float32, -kInf) == 0.0);
    CHECK(ef(Op::Sigmoid, float32, kInf) == 1.0);
    CHECK(ef(Op::Silu, float32, 0.0) == 0.0);
    CHECK(std::isnan(ef(Op::Silu, float32, -kInf)));  // -Inf / Inf, as documented
    CHECK(ef(Op::GeluErf, float32, 0.0) == 0.0);
    CHECK(ef(Op::GeluTanh, float32, 0.0) == 0.0);
    CHECK(ef(Op::GeluErf, float64, 1.0) == doctest::Approx(0.8413447460685429).epsilon(1e-6));
    CHECK(ef(Op::GeluTanh, float64, 1.0) == doctest::Approx(0.8411919906082768).epsilon(1e-6));
    // the float32 formula, step by step
    const float x = 0.75f;
    const float e = static_cast<float>(std::exp(-static_cast<double>(x)));
    CHECK(ef(Op::Silu, float32, x) == static_cast<double>(x / (1.0f + e)));
    const float u = x * 0.70710678118654752440f;
    const float er = static_cast<float>(std::erf(static_cast<double>(u)));
    CHECK(ef(Op::GeluErf, float32, x) == static_cast<double>((0.5f * x) * (1.0f + er)));
    CHECK(ef(Op::Exp, float32, 1.0) == static_cast<double>(static_cast<float>(std::exp(1.0))));
    CHECK(ef(Op::Pow, float32, 2.0, 10.0) == 1024.0);
    CHECK(ef(Op::Atan2, float64, 0.0, -1.0) == doctest::Approx(3.141592653589793));
    CHECK(std::isnan(ef(Op::Log, float32, -1.0)));
    CHECK(ef(Op::Log, float32, 0.0) == -kInf);
    CHECK(ef(Op::Rsqrt, float32, 4.0) == 0.5);
}

TEST_CASE("constant folding uses the same semantics") {
    auto a = constant(F(65504.0), float16);
    auto b = constant(F(16.0), float16);
    auto s = binary(Op::Add, a, b);
    REQUIRE(s->op() == Op::Constant);
    CHECK(s->value().f == kInf);
    auto q = binary(Op::Div, constant(I(INT32_MIN), int32), constant(I(-1), int32));
    REQUIRE(q->op() == Op::Constant);
    CHECK(q->value().i == INT32_MIN);
    auto c = cast(constant(F(kNaN), float32), int32);
    REQUIRE(c->op() == Op::Constant);
    CHECK(c->value().i == 0);
}
