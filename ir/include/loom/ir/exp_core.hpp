// The float32 exponential, written once for every back end: exp_f32(x) is the correctly rounded float32 of
// e^x for every float32 x, subnormal results included.
//
// One source: the CPU reference (ir/include/loom/ir/elementwise_impl.hpp) includes this file as C++ in
// namespace loom::ir::expc and computes `exp` at a float32 compute type with it; the host back end's inline
// exp (codegen/src/llvm/llvm_ops.cpp, exp_float) takes its constants from here and calls the reference for
// the arguments it leaves; codegen/embed_prelude.cmake pastes this file into the CUDA prelude
// (codegen/src/cuda/prelude.cuh), where it compiles as device code in namespace lm::expc for kernels that
// must give the reference's bits (the ordinary GPU `exp` op uses CUDA's expf instead). Every float step is
// one correctly rounded IEEE 754 double operation named by a function below (add, sub, mul, fma: the
// `__d*_rn` and `__fma_rn` intrinsics on the GPU, which no compiler option contracts; C++ operators compiled
// with -ffp-contract=off and std::fma on the host), taken in the order written; the rest is integer
// arithmetic on the bits. No float32 arithmetic is used, so flush-to-zero options (-ftz, fast math) change
// nothing, and no CUDA Math API or C library function is called. docs/semantics.md, "Functions", states the
// contract that tests/unit/test_exp_core.cpp and tests/gpu/test_exp_core.cpp check.
//
// The method: K = the nearest integer to 16 x / ln 2, r = x - K ln 2 / 16 (|r| <= ln 2 / 32), e^x = 2^(K /
// 16) e^r with 2^(K / 16) = 2^(j / 16) 2^floor(K / 16), j = K mod 16. The fast path evaluates e^r by its
// Taylor polynomial of degree 5 in double (within 2^-42.5 of e^x, relative) and rounds the result to float32
// where no float32 rounding boundary lies within `kWindow` units in the last place of the double (about 3
// times the error bound; all but about one argument in 2^18). The other arguments take the slow path: r and
// e^r (Taylor degree 11) and 2^(j / 16) in double-double arithmetic, within 2^-94 of e^x, far closer than any
// float32 argument's e^x comes to a rounding boundary (every argument was checked, docs/semantics.md).
//
// Written in the subset of C++ that NVRTC compiles without headers: no std types, unsigned int for 32-bit
// words, unsigned long long for 64-bit ones.
#ifndef LOOM_IR_EXP_CORE_HPP
#define LOOM_IR_EXP_CORE_HPP

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define LOOM_EXPC_FN __device__ __forceinline__
// The tables: device memory, one 128-byte line each, so that a warp's reads at any indices are one request.
#define LOOM_EXPC_TABLE static __device__ const
namespace lm {
namespace expc {
LOOM_EXPC_FN double add(double a, double b) {
    return __dadd_rn(a, b);
}
LOOM_EXPC_FN double sub(double a, double b) {
    return __dsub_rn(a, b);
}
LOOM_EXPC_FN double mul(double a, double b) {
    return __dmul_rn(a, b);
}
LOOM_EXPC_FN double fma(double a, double b, double c) {
    return __fma_rn(a, b, c);
}
LOOM_EXPC_FN unsigned int bits_of(float x) {
    return __float_as_uint(x);
}
LOOM_EXPC_FN float float_of(unsigned int b) {
    return __uint_as_float(b);
}
LOOM_EXPC_FN unsigned long long bits_of(double x) {
    return (unsigned long long)__double_as_longlong(x);
}
LOOM_EXPC_FN double double_of(unsigned long long b) {
    return __longlong_as_double((long long)b);
}
#else
#include <bit>
#include <cmath>
#define LOOM_EXPC_FN inline
#define LOOM_EXPC_TABLE inline constexpr
namespace loom::ir {
namespace expc {
// Loom compiles with -ffp-contract=off (CMakeLists.txt, loom_fp_contract): an operator is one rounding.
LOOM_EXPC_FN double add(double a, double b) {
    return a + b;
}
LOOM_EXPC_FN double sub(double a, double b) {
    return a - b;
}
LOOM_EXPC_FN double mul(double a, double b) {
    return a * b;
}
LOOM_EXPC_FN double fma(double a, double b, double c) {
    return std::fma(a, b, c);
}
LOOM_EXPC_FN unsigned int bits_of(float x) {
    return std::bit_cast<unsigned int>(x);
}
LOOM_EXPC_FN float float_of(unsigned int b) {
    return std::bit_cast<float>(b);
}
LOOM_EXPC_FN unsigned long long bits_of(double x) {
    return std::bit_cast<unsigned long long>(x);
}
LOOM_EXPC_FN double double_of(unsigned long long b) {
    return std::bit_cast<double>(b);
}
#endif

// ---------------------------------------------------------------------------------------------------------
// Constants. Each is the nearest double to the value named (computed with exact rational arithmetic), unless
// said otherwise.

/// 16 / ln 2.
constexpr double kSixteenOverLn2 = 0x1.71547652b82fep+4;
/// 1.5 * 2^52: fma(x, 16 / ln 2, kShifter) leaves the nearest integer K to 16 x / ln 2 in the low bits of the
/// double (K = the double minus kShifter, exactly; its bits minus kShifter's are K as a 64-bit integer).
constexpr double kShifter = 0x1.8p+52;
/// ln 2 / 16 in two parts for the fast path: the nearest double, and the nearest double to the rest.
constexpr double kLn2Over16Hi = 0x1.62e42fefa39efp-5;
constexpr double kLn2Over16Lo = 0x1.abc9e3b39803fp-60;
/// ln 2 / 16 in three parts for the slow path: the first rounded to 40 significant bits, the second (the
/// rest) to 40 bits, the third the nearest double to what remains; K L1 and K L2 are exact for |K| < 2^12.
constexpr double kLn2Over16L1 = 0x1.62e42fefa4p-5;
constexpr double kLn2Over16L2 = -0x1.8432a1b0e2p-47;
constexpr double kLn2Over16L3 = -0x1.8cff81a12a17ep-89;
/// 1 / n! for the fast path's Taylor polynomial (n = 2 .. 5; 1 / 0! and 1 / 1! are 1).
constexpr double kInvFact2 = 0x1p-1;
constexpr double kInvFact3 = 0x1.5555555555555p-3;
constexpr double kInvFact4 = 0x1.5555555555555p-5;
constexpr double kInvFact5 = 0x1.1111111111111p-7;
/// The fast path's rounding is certain where the double lies more than kWindow units in its last place from
/// every float32 rounding boundary (the fast path's error is at most 1450 such units).
constexpr unsigned long long kWindow = 4096;

/// 2^(j / 16), j = 0 .. 15: the nearest double (hi), and the nearest double to the rest (lo).
LOOM_EXPC_TABLE double kExp2Hi[16] = {
    0x1p+0,
    0x1.0b5586cf9890fp+0,
    0x1.172b83c7d517bp+0,
    0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0,
    0x1.3dea64c123422p+0,
    0x1.4bfdad5362a27p+0,
    0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0,
    0x1.7a11473eb0187p+0,
    0x1.8ace5422aa0dbp+0,
    0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0,
    0x1.c199bdd85529cp+0,
    0x1.d5818dcfba487p+0,
    0x1.ea4afa2a490dap+0,
};
LOOM_EXPC_TABLE double kExp2Lo[16] = {
    0x0p+0,
    0x1.8a62e4adc610bp-54,
    -0x1.19041b9d78a76p-55,
    0x1.9b07eb6c70573p-54,
    0x1.6f46ad23182e4p-55,
    0x1.ada0911f09ebcp-55,
    0x1.d4397afec42e2p-56,
    0x1.6324c054647adp-54,
    -0x1.bdd3413b26456p-54,
    -0x1.41577ee04992fp-55,
    0x1.6e9f156864b27p-54,
    0x1.c7c46b071f2bep-56,
    0x1.7a1cd345dcc81p-54,
    0x1.11065895048ddp-55,
    0x1.2ed02d75b3707p-55,
    -0x1.e9c23179c2893p-54,
};

// ---------------------------------------------------------------------------------------------------------
// Double-double arithmetic: a value hi + lo with |lo| <= half a unit in the last place of hi (T. J. Dekker,
// "A floating-point technique for extending the available precision", Numer. Math. 18 (1971) 224).

struct DD {
    double hi, lo;
};
/// a + b exactly, for |a| >= |b| (or a = 0).
LOOM_EXPC_FN DD fast_two_sum(double a, double b) {
    const double s = add(a, b);
    DD r = {s, sub(b, sub(s, a))};
    return r;
}
/// a + b exactly (Knuth's TwoSum).
LOOM_EXPC_FN DD two_sum(double a, double b) {
    const double s = add(a, b);
    const double bb = sub(s, a);
    DD r = {s, add(sub(a, sub(s, bb)), sub(b, bb))};
    return r;
}
LOOM_EXPC_FN DD dd_mul(DD a, DD b) {
    const double p = mul(a.hi, b.hi);
    double e = fma(a.hi, b.hi, -p);  // the product's rounding error, exactly
    e = fma(a.hi, b.lo, e);
    e = fma(a.lo, b.hi, e);
    return fast_two_sum(p, e);
}
/// a + b where the sum does not cancel (|a + b| >= |a|, |b| / 2 or so): the uses below add a small term to a
/// coefficient of the same magnitude or larger.
LOOM_EXPC_FN DD dd_add(DD a, DD b) {
    const DD s = two_sum(a.hi, b.hi);
    return fast_two_sum(s.hi, add(s.lo, add(a.lo, b.lo)));
}
/// One Horner step of the slow path's polynomial: p r + c.
LOOM_EXPC_FN DD horner(DD p, DD r, double c_hi, double c_lo) {
    DD c = {c_hi, c_lo};
    return dd_add(c, dd_mul(p, r));
}

// ---------------------------------------------------------------------------------------------------------
// Rounding to float32 with the bits alone (no conversion instruction, which flush-to-zero would flush).

struct Rounded {
    unsigned int bits;  // the float32 nearest to hi + lo, ties to even (overflow: +inf)
    bool near;          // hi lies within `window` units in its last place of a rounding boundary
};

/// hi + lo positive, hi a normal double at least 2^-1000, |lo| <= half a unit in the last place of hi.
LOOM_EXPC_FN Rounded round_to_f32(double hi, double lo, unsigned long long window) {
    const unsigned long long b = bits_of(hi);
    const int e = (int)(b >> 52) - 1023;
    const unsigned long long m = (b & 0x000fffffffffffffull) | 0x0010000000000000ull;  // hi = m 2^(e - 52)
    // The bits of m below the float32's last place: 29 for normal results, more for subnormal ones (whose
    // last place is 2^-149); at most 60, which leaves m (53 bits) wholly below it: the result 0.
    int shift = e >= -126 ? 29 : -97 - e;
    if (shift > 60) shift = 60;
    const unsigned long long q = m >> shift;
    const unsigned long long rest = m & ((1ull << shift) - 1ull);
    const unsigned long long half = 1ull << (shift - 1);
    // Where hi is exactly halfway, lo decides (a tie of hi + lo goes to even); elsewhere lo, smaller than a
    // unit of hi, cannot move hi + lo across the boundary.
    const bool up = rest > half || (rest == half && (lo > 0.0 || (lo == 0.0 && (q & 1ull) != 0ull)));
    unsigned int bits;
    if (e >= -126) {
        // q in [2^23, 2^24): the exponent field plus the fraction; a carry moves into the exponent.
        bits = ((unsigned int)(e + 127) << 23) + (unsigned int)(q - 0x800000ull) + (up ? 1u : 0u);
        if (bits >= 0x7f800000u) bits = 0x7f800000u;  // beyond the largest float: +inf
    } else {
        // A subnormal (or zero) result: the fraction alone; 2^23 after a carry is the smallest normal.
        bits = (unsigned int)q + (up ? 1u : 0u);
    }
    Rounded r = {bits, rest - (half - window) < 2ull * window};
    return r;
}

// ---------------------------------------------------------------------------------------------------------
// exp_f32

/// The slow path's e^x / 2^floor(K / 16) in double-double: x - K ln 2 / 16, e^r and 2^(j / 16) in
/// double-double, within 2^-94 of the exact value, relative.
LOOM_EXPC_FN DD exp_dd(double xd, double k, unsigned int j) {
    // r = x - K L1 is exact (x and K L1 are multiples of 2^-44 when K != 0, |r| < 2^-5); then the two smaller
    // parts, K L2 exactly, K L3 rounded (below 2^-120).
    const double r0 = sub(xd, mul(k, kLn2Over16L1));
    const DD r1 = two_sum(r0, -mul(k, kLn2Over16L2));
    const DD r = fast_two_sum(r1.hi, sub(r1.lo, mul(k, kLn2Over16L3)));
    // e^r: the Taylor polynomial of degree 11 (the next term is below 2^-95), its terms from r^7 on (below
    // 2^-51) in double, the rest in double-double with 1 / n! in two parts.
    double t = fma(r.hi, 0x1.ae64567f544e4p-26, 0x1.27e4fb7789f5cp-22);  // 1/11!, 1/10!
    t = fma(t, r.hi, 0x1.71de3a556c734p-19);                             // 1/9!
    t = fma(t, r.hi, 0x1.a01a01a01a01ap-16);                             // 1/8!
    t = fma(t, r.hi, 0x1.a01a01a01a01ap-13);                             // 1/7!
    DD p = {t, 0.0};
    p = horner(p, r, 0x1.6c16c16c16c17p-10, -0x1.f49f49f49f49fp-65);  // 1/6!
    p = horner(p, r, 0x1.1111111111111p-7, 0x1.1111111111111p-63);    // 1/5!
    p = horner(p, r, 0x1.5555555555555p-5, 0x1.5555555555555p-59);    // 1/4!
    p = horner(p, r, 0x1.5555555555555p-3, 0x1.5555555555555p-57);    // 1/3!
    p = horner(p, r, 0x1p-1, 0.0);                                    // 1/2!
    p = horner(p, r, 1.0, 0.0);                                       // 1/1!
    p = horner(p, r, 1.0, 0.0);                                       // 1/0!
    DD t2 = {kExp2Hi[j], kExp2Lo[j]};
    return dd_mul(p, t2);
}

/// The fast path for x in [-104, 89], |x| > 2^-25: K, j = K mod 16, s = 2^floor(K / 16), and y = e^x in
/// double (within 2^-42.5, relative).
struct Fast {
    double xd, k, s, y;
    unsigned int j;
};
LOOM_EXPC_FN Fast exp_fast(float x) {
    // x widened to double from its bits (x is normal here): float32 operations, a conversion included, are
    // what flush-to-zero options change, so none is used.
    const unsigned int bx = bits_of(x);
    Fast f;
    f.xd = double_of(((unsigned long long)(bx >> 31) << 63) |
                     ((unsigned long long)(((bx >> 23) & 0xffu) + 896u) << 52) |
                     ((unsigned long long)(bx & 0x007fffffu) << 29));
    const double kd = fma(f.xd, kSixteenOverLn2, kShifter);
    f.k = sub(kd, kShifter);  // K, exactly
    double r = fma(f.k, -kLn2Over16Hi, f.xd);
    r = fma(f.k, -kLn2Over16Lo, r);  // x - K ln 2 / 16
    double p = fma(kInvFact5, r, kInvFact4);
    p = fma(p, r, kInvFact3);
    p = fma(p, r, kInvFact2);
    p = fma(p, r, 1.0);
    p = fma(p, r, 1.0);  // e^r
    // K from kd's bits: j = K mod 16, and 2^floor(K / 16) built as a double's exponent field (the shift by 52
    // drops kShifter's bits; floor(K / 16) + 1023 lies in [872, 1151]).
    const unsigned long long kb = bits_of(kd);
    f.j = (unsigned int)(kb & 15ull);
    f.s = double_of(((kb >> 4) + 1023ull) << 52);
    f.y = mul(p, mul(kExp2Hi[f.j], f.s));  // 2^(j / 16) s is exact
    return f;
}

/// The correctly rounded float32 of e^x (ties cannot occur: e^x is irrational for x != 0). NaN gives NaN (the
/// argument's sign and payload, quieted, as a float-double-float round trip gives), +inf gives +inf, -inf
/// gives +0; results beyond the largest float are +inf, below half the smallest subnormal +0, and subnormal
/// results are exact roundings (never flushed).
LOOM_EXPC_FN float exp_f32(float x) {
    // The special cases by the bits alone (no float32 comparison, which flush-to-zero options change).
    const unsigned int bx = bits_of(x);
    const unsigned int ax = bx & 0x7fffffffu;
    if (ax > 0x7f800000u) return float_of(bx | 0x00400000u);                 // NaN
    if (ax <= 0x33000000u) return float_of(0x3f800000u);                     // |x| <= 2^-25: e^x rounds to 1
    if (bx > 0x42b20000u && bx < 0x80000000u) return float_of(0x7f800000u);  // x > 89: e^x > 2^128, +inf
    if (bx > 0xc2d00000u) return float_of(0u);  // x < -104: e^x < 2^-150, +0 (x = -inf too)
    const Fast f = exp_fast(x);
    const Rounded g = round_to_f32(f.y, 0.0, kWindow);
    if (!g.near) return float_of(g.bits);
    const DD z = exp_dd(f.xd, f.k, f.j);
    return float_of(round_to_f32(mul(z.hi, f.s), mul(z.lo, f.s), 0ull).bits);  // the scaling is exact
}

}  // namespace expc
}  // namespace lm (CUDA) or loom::ir (host)
#undef LOOM_EXPC_FN
#undef LOOM_EXPC_TABLE

#endif  // LOOM_IR_EXP_CORE_HPP
