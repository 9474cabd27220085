// The combines of the scans, written once for every back end: cumsum's addition, cumprod's multiplication,
// cummax's and cummin's NaN-propagating selections and logcumsumexp's log-add-exp, for the accumulator types
// float (float32, and float16 and bfloat16 widened), double and long long (bool and integers; wrapping).
//
// One source: the CPU reference (runtime/src/reference_scan.cpp) includes this file as C++ in namespace
// loom::ir::scanc; codegen/embed_scan.cmake pastes it into the scan kernels' device code
// (codegen/src/cuda/scan.cuh), after the prelude, where it compiles in namespace lm::scanc. Every float step
// is one correctly rounded IEEE 754 operation of random_core.hpp (rng::add, sub, mul: the `__f*_rn` and
// `__d*_rn` intrinsics on the GPU, C++ operators compiled with -ffp-contract=off on the host), and the
// functions are exp_core.hpp's float32 exp (expc::exp_f32), random_core.hpp's fdlibm logs (rng::log_f32,
// rng::log_f64) and the float64 exp of small negative arguments below, so the reference, the host back end
// (which runs scans on the reference) and the GPU compute the same bits. docs/semantics.md, "Scans".
//
// Written in the subset of C++ that NVRTC compiles without headers, after random_core.hpp and exp_core.hpp.
#ifndef LOOM_IR_SCAN_CORE_HPP
#define LOOM_IR_SCAN_CORE_HPP

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define LOOM_SCAN_FN __device__ __forceinline__
namespace lm {
namespace scanc {
#else
#include "loom/ir/exp_core.hpp"
#include "loom/ir/random_core.hpp"
#define LOOM_SCAN_FN inline
namespace loom::ir {
namespace scanc {
#endif

LOOM_SCAN_FN bool is_nan(float x) {
    return (rng::bits_of(x) & 0x7fffffffu) > 0x7f800000u;
}
LOOM_SCAN_FN bool is_nan(double x) {
    return (rng::bits_of(x) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}
LOOM_SCAN_FN bool sign_bit(float x) {
    return (rng::bits_of(x) >> 31) != 0u;
}
LOOM_SCAN_FN bool sign_bit(double x) {
    return (rng::bits_of(x) >> 63) != 0ull;
}

// cumsum and cumprod: one rounding each; integers wrap modulo 2^64 (unsigned arithmetic, no overflow).
LOOM_SCAN_FN float add(float a, float b) {
    return rng::add(a, b);
}
LOOM_SCAN_FN double add(double a, double b) {
    return rng::add(a, b);
}
LOOM_SCAN_FN long long add(long long a, long long b) {
    return (long long)((unsigned long long)a + (unsigned long long)b);
}
// A mean's one division (a scan kernel's row reduction: the reductions' finish).
LOOM_SCAN_FN float div(float a, float b) {
    return rng::div(a, b);
}
LOOM_SCAN_FN double div(double a, double b) {
    return rng::div(a, b);
}
LOOM_SCAN_FN float mul(float a, float b) {
    return rng::mul(a, b);
}
LOOM_SCAN_FN double mul(double a, double b) {
    return rng::mul(a, b);
}
LOOM_SCAN_FN long long mul(long long a, long long b) {
    return (long long)((unsigned long long)a * (unsigned long long)b);
}

// cummax and cummin: the elementwise maximum and minimum (the first NaN operand wins; -0 < +0).
template <class T>
LOOM_SCAN_FN T max_of(T a, T b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    if (a == b) return sign_bit(a) ? b : a;
    return a < b ? b : a;
}
template <class T>
LOOM_SCAN_FN T min_of(T a, T b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    if (a == b) return sign_bit(a) ? a : b;
    return b < a ? b : a;
}
template <>
LOOM_SCAN_FN long long max_of<long long>(long long a, long long b) {
    return a < b ? b : a;
}
template <>
LOOM_SCAN_FN long long min_of<long long>(long long a, long long b) {
    return b < a ? b : a;
}

// e^d for d <= 0 in float64, for log-add-exp only: 0 where 1 + e^d rounds to 1 (d < -40), else K = the
// nearest integer to d / ln 2 (|K| <= 58), r = d - K ln 2 (ln 2 in fdlibm's two parts, the first with 21
// trailing zero bits so that K ln2_hi is exact), e^r by its Taylor polynomial of degree 13 (|r| <= ln 2 / 2:
// the truncation is below 2^-57 relative) in Horner's order by fma, times 2^K (exact). Within a few units in
// the last place of e^d; not correctly rounded, but the same steps on every back end.
LOOM_SCAN_FN double exp_nonpositive_f64(double d) {
    if (d < -40.0) return 0.0;
    const double k = rng::sub(rng::fma(d, 0x1.71547652b82fep+0, 0x1.8p+52), 0x1.8p+52);  // round(d / ln 2)
    const double r = rng::fma(-k, 0x1.a39ef35793c76p-33, rng::fma(-k, 0x1.62e42feep-1, d));  // fdlibm's ln2
    double p = 0x1.6124613a86d09p-33;                                                        // 1/13!
    p = rng::fma(p, r, 0x1.1eed8eff8d898p-29);                                               // 1/12!
    p = rng::fma(p, r, 0x1.ae64567f544e4p-26);                                               // 1/11!
    p = rng::fma(p, r, 0x1.27e4fb7789f5cp-22);                                               // 1/10!
    p = rng::fma(p, r, 0x1.71de3a556c734p-19);                                               // 1/9!
    p = rng::fma(p, r, 0x1.a01a01a01a01ap-16);                                               // 1/8!
    p = rng::fma(p, r, 0x1.a01a01a01a01ap-13);                                               // 1/7!
    p = rng::fma(p, r, 0x1.6c16c16c16c17p-10);                                               // 1/6!
    p = rng::fma(p, r, 0x1.1111111111111p-7);                                                // 1/5!
    p = rng::fma(p, r, 0x1.5555555555555p-5);                                                // 1/4!
    p = rng::fma(p, r, 0x1.5555555555555p-3);                                                // 1/3!
    p = rng::fma(p, r, 0.5);
    p = rng::fma(p, r, 1.0);
    p = rng::fma(p, r, 1.0);
    const long long ki = (long long)k;
    return rng::mul(p, rng::double_of((unsigned long long)(1023 + ki) << 52));
}

// logcumsumexp: log(e^a + e^b) = m + log(1 + e^(n - m)), m = max(a, b), n = min(a, b). A NaN operand is
// the result (the first one); n = -inf gives m (so -inf with -inf gives -inf), m = +inf gives +inf; the
// rest rounds each step: n - m, the exp, 1 + it, the log, m + it. float32 takes exp_core's correctly
// rounded exp_f32 and fdlibm's log_f32; float64 the exp above and fdlibm's log_f64.
LOOM_SCAN_FN float log_add_exp(float a, float b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    const float m = a < b ? b : a, n = a < b ? a : b;
    if (rng::bits_of(n) == 0xff800000u || rng::bits_of(m) == 0x7f800000u) return m;
    return rng::add(m, rng::log_f32(rng::add(1.0f, expc::exp_f32(rng::sub(n, m)))));
}
LOOM_SCAN_FN double log_add_exp(double a, double b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    const double m = a < b ? b : a, n = a < b ? a : b;
    if (rng::bits_of(n) == 0xfff0000000000000ull || rng::bits_of(m) == 0x7ff0000000000000ull) return m;
    return rng::add(m, rng::log_f64(rng::add(1.0, exp_nonpositive_f64(rng::sub(n, m)))));
}

// The layout of the GPU's tree path (codegen/src/cuda/scan.cuh), here so that the host sizes the counters and
// nodes it allocates from the same functions the kernel indexes them with. A row of `tiles` tiles has
// row_nodes(tiles) tree nodes (tiles >> k complete ones at each level k), and row_chunks(tiles, chunk_shift)
// chunks of 2^chunk_shift tiles (the last may be partial). The chunks form a hierarchy, 32 to a unit: a unit
// of level 0 is a chunk, one of level h + 1 the 32 units of level h it holds; chunk_levels levels reach the
// row. row_words counts the row's counter words: a flag per unit of each level below chunk_levels, then an
// arrival count per unit of each level from 1.
constexpr int kChunkRadixBits = 5;
LOOM_SCAN_FN long long row_nodes(long long tiles) {
    long long n = 0;
    for (long long t = tiles; t > 0; t >>= 1) n += t;
    return n;
}
LOOM_SCAN_FN long long row_chunks(long long tiles, int chunk_shift) {
    return (tiles + (1ll << chunk_shift) - 1) >> chunk_shift;
}
LOOM_SCAN_FN int chunk_levels(long long chunks) {
    int levels = 0;
    while ((1ll << (kChunkRadixBits * levels)) < chunks) ++levels;
    return levels;
}
LOOM_SCAN_FN long long level_units(long long chunks, int h) {
    return (chunks + (1ll << (kChunkRadixBits * h)) - 1) >> (kChunkRadixBits * h);
}
LOOM_SCAN_FN long long row_words(long long chunks) {
    long long n = 0;
    const int levels = chunk_levels(chunks);
    for (int h = 0; h < levels; ++h) n += level_units(chunks, h) * (h > 0 ? 2 : 1);
    return n;
}

}  // namespace scanc
}  // namespace lm (CUDA) or loom::ir (host)

#undef LOOM_SCAN_FN
#endif  // LOOM_IR_SCAN_CORE_HPP
