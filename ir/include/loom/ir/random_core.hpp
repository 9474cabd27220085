// Counter-based random numbers, written once for every back end: the Philox4x32-10 generator, the maps from
// its 32-bit words to uniform floats, and the normal transform (Box-Muller) with its own log and cosine.
//
// One source: the CPU reference (ir/include/loom/ir/elementwise_impl.hpp) includes this file as C++ in
// namespace loom::ir::rng, and the host back end calls the reference's functions (runtime/src/
// host_scalar_library.cpp); codegen/embed_prelude.cmake pastes it into the CUDA prelude
// (codegen/src/cuda/prelude.cuh), where it compiles as device code in namespace lm::rng. Every float step is
// one correctly rounded IEEE 754 operation named by a function below (add, sub, mul, div, fma, sqrt: the
// `__f*_rn` / `__d*_rn` intrinsics on the GPU, which no compiler option contracts or approximates; C++
// operators compiled with -ffp-contract=off, std::fma and std::sqrt on the host), taken in the order written,
// so every back end computes the same bits. No CUDA Math API function and no C library function is used.
// docs/semantics.md, "Random numbers", states the contract and the error bounds that
// tests/unit/test_random_core.cpp measures.
//
// Written in the subset of C++ that NVRTC compiles without headers: no std types, unsigned int for 32-bit
// words, unsigned long long for 64-bit ones.
#ifndef LOOM_IR_RANDOM_CORE_HPP
#define LOOM_IR_RANDOM_CORE_HPP

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define LOOM_RNG_FN __device__ __forceinline__
namespace lm {
namespace rng {
LOOM_RNG_FN float add(float a, float b) {
    return __fadd_rn(a, b);
}
LOOM_RNG_FN double add(double a, double b) {
    return __dadd_rn(a, b);
}
LOOM_RNG_FN float sub(float a, float b) {
    return __fsub_rn(a, b);
}
LOOM_RNG_FN double sub(double a, double b) {
    return __dsub_rn(a, b);
}
LOOM_RNG_FN float mul(float a, float b) {
    return __fmul_rn(a, b);
}
LOOM_RNG_FN double mul(double a, double b) {
    return __dmul_rn(a, b);
}
LOOM_RNG_FN float div(float a, float b) {
    return __fdiv_rn(a, b);
}
LOOM_RNG_FN double div(double a, double b) {
    return __ddiv_rn(a, b);
}
LOOM_RNG_FN float fma(float a, float b, float c) {
    return __fmaf_rn(a, b, c);
}
LOOM_RNG_FN double fma(double a, double b, double c) {
    return __fma_rn(a, b, c);
}
LOOM_RNG_FN float sqrt(float a) {
    return __fsqrt_rn(a);
}
LOOM_RNG_FN double sqrt(double a) {
    return __dsqrt_rn(a);
}
LOOM_RNG_FN unsigned int bits_of(float x) {
    return __float_as_uint(x);
}
LOOM_RNG_FN float float_of(unsigned int b) {
    return __uint_as_float(b);
}
LOOM_RNG_FN unsigned long long bits_of(double x) {
    return (unsigned long long)__double_as_longlong(x);
}
LOOM_RNG_FN double double_of(unsigned long long b) {
    return __longlong_as_double((long long)b);
}
LOOM_RNG_FN unsigned int mulhi(unsigned int a, unsigned int b) {
    return __umulhi(a, b);
}
#else
#include <bit>
#include <cmath>
#define LOOM_RNG_FN inline
namespace loom::ir {
namespace rng {
// Loom compiles with -ffp-contract=off (CMakeLists.txt, loom_fp_contract): an operator is one rounding.
LOOM_RNG_FN float add(float a, float b) {
    return a + b;
}
LOOM_RNG_FN double add(double a, double b) {
    return a + b;
}
LOOM_RNG_FN float sub(float a, float b) {
    return a - b;
}
LOOM_RNG_FN double sub(double a, double b) {
    return a - b;
}
LOOM_RNG_FN float mul(float a, float b) {
    return a * b;
}
LOOM_RNG_FN double mul(double a, double b) {
    return a * b;
}
LOOM_RNG_FN float div(float a, float b) {
    return a / b;
}
LOOM_RNG_FN double div(double a, double b) {
    return a / b;
}
LOOM_RNG_FN float fma(float a, float b, float c) {
    return std::fma(a, b, c);
}
LOOM_RNG_FN double fma(double a, double b, double c) {
    return std::fma(a, b, c);
}
LOOM_RNG_FN float sqrt(float a) {
    return std::sqrt(a);
}
LOOM_RNG_FN double sqrt(double a) {
    return std::sqrt(a);
}
LOOM_RNG_FN unsigned int bits_of(float x) {
    return std::bit_cast<unsigned int>(x);
}
LOOM_RNG_FN float float_of(unsigned int b) {
    return std::bit_cast<float>(b);
}
LOOM_RNG_FN unsigned long long bits_of(double x) {
    return std::bit_cast<unsigned long long>(x);
}
LOOM_RNG_FN double double_of(unsigned long long b) {
    return std::bit_cast<double>(b);
}
LOOM_RNG_FN unsigned int mulhi(unsigned int a, unsigned int b) {
    return static_cast<unsigned int>((static_cast<unsigned long long>(a) * b) >> 32);
}
#endif

// ---------------------------------------------------------------------------------------------------------
// Philox4x32-10: J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel random numbers: as easy as
// 1, 2, 3", SC11 (2011), and Random123's philox.h: the multipliers 0xD2511F53 and 0xCD9E8D57, the key
// increments 0x9E3779B9 (the golden ratio) and 0xBB67AE85 (sqrt(3) - 1), ten rounds, the key bumped before
// every round but the first. Random123's kat_vectors give three known answers
// (tests/unit/test_random_core.cpp).

struct Words {
    unsigned int w[4];
};

LOOM_RNG_FN Words philox4x32_10(unsigned int c0, unsigned int c1, unsigned int c2, unsigned int c3,
                                unsigned int k0, unsigned int k1) {
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const unsigned int hi0 = mulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        const unsigned int hi1 = mulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    Words r = {{c0, c1, c2, c3}};
    return r;
}

/// The four words of block `block` of the stream `seed`: the counter is (block mod 2^32, block / 2^32, 0, 0),
/// the key (seed mod 2^32, seed / 2^32), both read as unsigned 64-bit integers.
LOOM_RNG_FN Words draw(long long block, long long seed) {
    const unsigned long long i = (unsigned long long)block, s = (unsigned long long)seed;
    return philox4x32_10((unsigned int)i, (unsigned int)(i >> 32), 0u, 0u, (unsigned int)s,
                         (unsigned int)(s >> 32));
}

/// A block's four words serve several consecutive elements: 4 of a 32-bit or half dtype (one word each, or
/// one Box-Muller pair per two elements), 2 of float64 (two words each, or one pair per two elements).
/// Element `index` (>= 0) reads block index >> block_shift, at slot index mod 2^block_shift; so a kernel
/// whose thread computes 4 consecutive elements from a multiple of 4 runs the generator once for them.
LOOM_RNG_FN int block_shift(bool f64) {
    return f64 ? 1 : 2;
}
LOOM_RNG_FN long long block_of(long long index, bool f64) {
    return (long long)((unsigned long long)index >> block_shift(f64));
}
LOOM_RNG_FN unsigned int slot_of(long long index, bool f64) {
    return (unsigned int)index & ((1u << block_shift(f64)) - 1u);
}
/// Word k (0 .. 3) of a block, by masks rather than branches (a host loop over lanes of varying k vectorizes;
/// a constant k folds to the word).
LOOM_RNG_FN unsigned int word(Words r, unsigned int k) {
    const unsigned int odd = 0u - (k & 1u), high = 0u - ((k >> 1) & 1u);
    const unsigned int low_pair = (r.w[1] & odd) | (r.w[0] & ~odd);
    const unsigned int high_pair = (r.w[3] & odd) | (r.w[2] & ~odd);
    return (high_pair & high) | (low_pair & ~high);
}

// ---------------------------------------------------------------------------------------------------------
// Uniform values in [0, 1): the top p bits of a word (two words for float64, w[1] above w[0]) times 2^-p, p
// the significand's bits (24 float32, 53 float64, 11 float16, 8 bfloat16): every value k 2^-p, k < 2^p,
// exactly, each with probability 2^-p.

LOOM_RNG_FN float uniform_bits(unsigned int w, int p) {
    return mul((float)(w >> (32 - p)), float_of((unsigned int)(127 - p) << 23));  // exact
}
LOOM_RNG_FN unsigned long long word64(unsigned int lo, unsigned int hi) {
    return ((unsigned long long)hi << 32) | lo;
}
LOOM_RNG_FN double uniform_f64(unsigned int lo, unsigned int hi) {
    return mul((double)(word64(lo, hi) >> 11), 0x1p-53);  // exact
}
/// The uniform value of slot k of a block: word k (32-bit and half dtypes); words 2k and 2k + 1 (float64).
LOOM_RNG_FN float uniform_slot(Words r, unsigned int k, int p) {
    return uniform_bits(word(r, k), p);
}
LOOM_RNG_FN double uniform_f64_slot(Words r, unsigned int k) {
    return k == 0u ? uniform_f64(r.w[0], r.w[1]) : uniform_f64(r.w[2], r.w[3]);
}

// ---------------------------------------------------------------------------------------------------------
// The natural logarithm of a positive normal float: x = 2^k m with m in [sqrt(2)/2, sqrt(2)), f = m - 1,
// s = f / (2 + f), log(m) = f - f^2/2 + s (f^2/2 + R(s^2)); the polynomials R and ln 2 in two parts are
// fdlibm's (e_logf.c, e_log.c; Sun Microsystems, 1993), the reduction musl's. Measured bounds:
// docs/semantics.md, "Random numbers".

LOOM_RNG_FN float log_f32(float x) {
    unsigned int ix = bits_of(x) + (0x3f800000u - 0x3f3504f3u);
    const int k = (int)(ix >> 23) - 0x7f;
    ix = (ix & 0x007fffffu) + 0x3f3504f3u;
    const float f = sub(float_of(ix), 1.0f);
    const float s = div(f, add(2.0f, f));
    const float z = mul(s, s), w = mul(z, z);
    const float t1 = mul(w, fma(w, 0x1.f13c4cp-3f, 0x1.999c26p-2f));  // w (Lg2 + w Lg4)
    const float t2 = mul(z, fma(w, 0x1.23d3dcp-2f, 0x1.555554p-1f));  // z (Lg1 + w Lg3)
    const float hfsq = mul(mul(0.5f, f), f);
    const float dk = (float)k;
    float r = mul(s, add(hfsq, add(t2, t1)));
    r = add(r, mul(dk, 0x1.2fefa2p-17f));  // k ln2_lo
    r = sub(r, hfsq);
    r = add(r, f);
    return add(r, mul(dk, 0x1.62e3p-1f));  // k ln2_hi (exact)
}

LOOM_RNG_FN double log_f64(double x) {
    const unsigned long long bx = bits_of(x);
    unsigned int hx = (unsigned int)(bx >> 32) + (0x3ff00000u - 0x3fe6a09eu);
    const int k = (int)(hx >> 20) - 0x3ff;
    hx = (hx & 0x000fffffu) + 0x3fe6a09eu;
    const double f = sub(double_of(((unsigned long long)hx << 32) | (bx & 0xffffffffull)), 1.0);
    const double hfsq = mul(mul(0.5, f), f);
    const double s = div(f, add(2.0, f));
    const double z = mul(s, s), w = mul(z, z);
    // w (Lg2 + w (Lg4 + w Lg6)) and z (Lg1 + w (Lg3 + w (Lg5 + w Lg7)))
    const double t1 =
        mul(w, fma(w, fma(w, 0x1.39a09d078c69fp-3, 0x1.c71c51d8e78afp-3), 0x1.999999997fa04p-2));
    const double t2 =
        mul(z, fma(w, fma(w, fma(w, 0x1.2f112df3e5244p-3, 0x1.7466496cb03dep-3), 0x1.2492494229359p-2),
                   0x1.5555555555593p-1));
    const double dk = (double)k;
    double r = mul(s, add(hfsq, add(t2, t1)));
    r = add(r, mul(dk, 0x1.a39ef35793c76p-33));  // k ln2_lo
    r = sub(r, hfsq);
    r = add(r, f);
    return add(r, mul(dk, 0x1.62e42feep-1));  // k ln2_hi (exact)
}

// ---------------------------------------------------------------------------------------------------------
// cos(2 pi j 2^-b) and sin(2 pi j 2^-b) for an integer j in [0, 2^b): the nearest quarter turn q is taken
// from j exactly, the rest t = j 2^-b - q/4 (exact, |t| <= 1/8) goes into the Taylor polynomials of sin(2 pi
// t) and cos(2 pi t) (the coefficients (2 pi)^n / n!, rounded to the format; the first of sine in two parts),
// truncated where the next term is below 2^-30 (float32) or 2^-60 (float64) of the result, evaluated by fma
// in Horner's order. The quarter turn picks one of the two polynomials and its sign: cosine's table is
// (cos, -sin, -cos, sin) for q mod 4 = 0 .. 3, and since sin(x) = cos(x - pi/2) exactly, sine's is the same
// table at q + 3: the sine and the cosine of one j share every step but that choice.

LOOM_RNG_FN float turns_f32(unsigned int j, unsigned int quarter) {  // j < 2^24; quarter 0 cos, 3 sin
    const unsigned int n = (j + (1u << 21)) >> 22;                   // nearest quarter turn, 0 .. 4
    const float t = mul((float)((int)j - (int)(n << 22)), 0x1p-24f);
    const float t2 = mul(t, t);
    float p = fma(t2, 0x1.507834p+5f, -0x1.32d2ccp+6f);
    p = fma(t2, p, 0x1.466bc6p+6f);
    p = fma(t2, p, -0x1.4abbcep+5f);
    const float sine = fma(t, 0x1.921fb6p+2f, mul(t, fma(t2, p, -0x1.777a5cp-23f)));
    float c = fma(t2, -0x1.a6d1f2p+4f, 0x1.e1f506p+5f);
    c = fma(t2, c, -0x1.55d3c8p+6f);
    c = fma(t2, c, 0x1.03c1f0p+6f);
    c = fma(t2, c, -0x1.3bd3ccp+4f);
    const float cosine = fma(t2, c, 1.0f);
    // Quarter turn m = n + quarter: cos, -sin, -cos, sin, chosen on the bits (no branch, so that a host loop
    // over lanes vectorizes): odd m takes the sine, m of 1 and 2 (mod 4) flip the sign bit.
    const unsigned int m = n + quarter;
    const unsigned int odd = 0u - (m & 1u);
    const unsigned int r = (bits_of(sine) & odd) | (bits_of(cosine) & ~odd);
    return float_of(r ^ (((m + 1u) & 2u) << 30));
}
LOOM_RNG_FN float cos_turns_f32(unsigned int j) {
    return turns_f32(j, 0u);
}
LOOM_RNG_FN float sin_turns_f32(unsigned int j) {
    return turns_f32(j, 3u);
}

LOOM_RNG_FN double turns_f64(unsigned long long j, unsigned long long quarter) {  // j < 2^53; as turns_f32
    const unsigned long long n = (j + (1ull << 50)) >> 51;
    const double t = mul((double)((long long)j - (long long)(n << 51)), 0x1p-53);
    const double t2 = mul(t, t);
    double p = fma(t2, 0x1.aaec32af93359p-4, -0x1.6fadb9f155744p-1);
    p = fma(t2, p, 0x1.e8f434d018d63p+1);
    p = fma(t2, p, -0x1.e3074fde8871fp+3);
    p = fma(t2, p, 0x1.50783487ee782p+5);
    p = fma(t2, p, -0x1.32d2cce62bd86p+6);
    p = fma(t2, p, 0x1.466bc6775aae2p+6);
    p = fma(t2, p, -0x1.4abbce625be53p+5);
    const double sine = fma(t, 0x1.921fb54442d18p+2, mul(t, fma(t2, p, 0x1.1a62633145c07p-52)));
    double c = fma(t2, -0x1.2a0c591af8314p-5, 0x1.20c62c2f2d7f5p-2);
    c = fma(t2, c, -0x1.b6e24f44b128fp+0);
    c = fma(t2, c, 0x1.f9d38a3763cc3p+2);
    c = fma(t2, c, -0x1.a6d1f2a204a8cp+4);
    c = fma(t2, c, 0x1.e1f506891babbp+5);
    c = fma(t2, c, -0x1.55d3c7e3cbffap+6);
    c = fma(t2, c, 0x1.03c1f081b5ac4p+6);
    c = fma(t2, c, -0x1.3bd3cc9be45dep+4);
    const double cosine = fma(t2, c, 1.0);
    const unsigned long long m = n + quarter;  // as turns_f32
    const unsigned long long odd = 0ull - (m & 1ull);
    const unsigned long long r = (bits_of(sine) & odd) | (bits_of(cosine) & ~odd);
    return double_of(r ^ (((m + 1ull) & 2ull) << 62));
}
LOOM_RNG_FN double cos_turns_f64(unsigned long long j) {
    return turns_f64(j, 0ull);
}
LOOM_RNG_FN double sin_turns_f64(unsigned long long j) {
    return turns_f64(j, 3ull);
}

// ---------------------------------------------------------------------------------------------------------
// Standard normal values, Box-Muller (G. E. P. Box, M. E. Muller, Ann. Math. Statist. 29 (1958) 610): a pair
// (u, v), u in (0, 1] from the pair's first word(s), v in [0, 1) from the next, gives the two independent
// values sqrt(-2 log u) cos(2 pi v) (the pair's even element) and sqrt(-2 log u) sin(2 pi v) (its odd one). A
// float32 block holds two pairs (words 0, 1 and 2, 3: slots 0, 1 and 2, 3), a float64 block one (words 0:1
// and 2:3: slots 0 and 1). |z| <= sqrt(48 ln 2) (5.77) for float32 and sqrt(106 ln 2) (8.57) for float64.

LOOM_RNG_FN float normal_f32(Words r, unsigned int k) {  // slot k, 0 .. 3
    const unsigned int pair = k & 2u;
    const float u = mul((float)((word(r, pair) >> 8) + 1u), 0x1p-24f);  // (0, 1], exact
    return mul(sqrt(mul(-2.0f, log_f32(u))), turns_f32(word(r, pair + 1u) >> 8, (k & 1u) * 3u));
}

LOOM_RNG_FN double normal_f64(Words r, unsigned int k) {                             // slot k, 0 .. 1
    const double u = mul((double)((word64(r.w[0], r.w[1]) >> 11) + 1ull), 0x1p-53);  // (0, 1], exact
    return mul(sqrt(mul(-2.0, log_f64(u))), turns_f64(word64(r.w[2], r.w[3]) >> 11, (k & 1u) * 3ull));
}

}  // namespace rng
}  // namespace lm (CUDA) or loom::ir (host)
#undef LOOM_RNG_FN

#endif  // LOOM_IR_RANDOM_CORE_HPP
