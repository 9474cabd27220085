// Loom's device prelude: the functions (namespace lm) that generated kernels call for every elementwise op
// of ops.def, plus storage conversions and 16-byte vectors. Self-contained: no includes, so NVRTC compiles it
// without headers. Semantics mirror ir/include/loom/ir/elementwise_impl.hpp (the CPU reference) op by op.
//
// Register types: bool, signed char (int8), unsigned char (uint8), int (int32), long long (int64), float
// (float32, and float16/bfloat16 values, which are rounded after every op with lm::round_f16 /
// lm::round_bf16), double (float64). User arithmetic is spelled with explicitly rounded intrinsics
// (__fadd_rn, __fmul_rn, ...) so that no FMA contraction can change it.
//
// LOOM_PRECISE_MATH (define it to enable): float transcendental functions are evaluated in double and
// rounded once, exactly like the CPU reference; otherwise the CUDA single-precision functions are used
// (within their documented ulp bounds of the reference).
#pragma once

// The integer templates compare unsigned values with zero for every integer type alike; NVRTC's warning 186
// ("pointless comparison of unsigned integer with zero") would open every compile log.
#pragma nv_diag_suppress 186

namespace lm {

// ---------------------------------------------------------------------------------------------------------
// Storage types and conversions between storage and registers.

struct f16 { unsigned short bits; };   // IEEE binary16 storage; computed in float
struct bf16 { unsigned short bits; };  // bfloat16 storage (upper half of a float32); computed in float

template <class T, int N> struct alignas(sizeof(T) * N) vec { T v[N]; };

template <class T, int N> __device__ __forceinline__ vec<T, N> load_vec(const T* p) {
    return *reinterpret_cast<const vec<T, N>*>(p);
}
template <class T, int N> __device__ __forceinline__ void store_vec(T* p, const vec<T, N>& x) {
    *reinterpret_cast<vec<T, N>*>(p) = x;
}

// ---------------------------------------------------------------------------------------------------------
// Programmatic dependent launch (compute capability 9.0 and newer). Loom launches its kernels allowed to
// begin while the previous kernel in their stream finishes (runtime/src/module.cpp), which takes the launch
// gap off the critical path. Both are no-ops for a launch without the attribute, and before sm_90.
//
// Every kernel calls await_prior_grids first, before any access to global memory: it returns once the
// previous kernel has completed and its writes are visible.
__device__ __forceinline__ void await_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Then a kernel whose grid is sized by its data calls launch_dependent_grids: once every block of this grid
// has, the next kernel's blocks may be scheduled into the room this grid's retiring blocks leave (they wait
// in await_prior_grids). A grid sized to the machine (one wave of split blocks) does not: the next kernel's
// blocks would be placed beside its blocks while they run, and a one-wave grid scheduled that way ran a
// quarter slower (docs/performance.md, R3).
__device__ __forceinline__ void launch_dependent_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ float f16_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
/// float -> binary16 bits, round to nearest even (overflow to Inf, NaN stays NaN).
__device__ __forceinline__ unsigned short float_to_f16(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
/// float -> bfloat16 bits, round to nearest even (overflow to Inf, NaN stays NaN; its payload bits may
/// differ from loom::float_to_bf16_bits, the value is NaN either way). One instruction on sm_80 and newer.
__device__ __forceinline__ unsigned short float_to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    unsigned int u = __float_as_uint(f);
    if (f != f) return (unsigned short)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
#endif
}
__device__ __forceinline__ float bf16_to_float(unsigned short b) { return __uint_as_float(((unsigned int)b) << 16); }

/// Rounds a float to the nearest float16 / bfloat16 value (kept in a float register).
__device__ __forceinline__ float round_f16(float x) { return f16_to_float(float_to_f16(x)); }
__device__ __forceinline__ float round_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

template <class T> __device__ __forceinline__ T to_reg(T x) { return x; }
__device__ __forceinline__ float to_reg(f16 x) { return f16_to_float(x.bits); }
__device__ __forceinline__ float to_reg(bf16 x) { return bf16_to_float(x.bits); }
__device__ __forceinline__ f16 to_f16(float x) { f16 r; r.bits = float_to_f16(x); return r; }
/// Storing a bfloat16 register: its value is already a bfloat16 value (rounded after every op), so the
/// upper half of the float is exact.
__device__ __forceinline__ bf16 to_bf16(float x) { bf16 r; r.bits = (unsigned short)(__float_as_uint(x) >> 16); return r; }

// ---------------------------------------------------------------------------------------------------------
// Small traits (no <type_traits> under NVRTC without headers).

template <class T> struct traits;
template <> struct traits<signed char> { typedef unsigned char u; static const bool is_signed = true; static const int bits = 8; static const signed char lo = -128, hi = 127; };
template <> struct traits<unsigned char> { typedef unsigned char u; static const bool is_signed = false; static const int bits = 8; static const unsigned char lo = 0, hi = 255; };
template <> struct traits<int> { typedef unsigned int u; static const bool is_signed = true; static const int bits = 32; static const int lo = (-2147483647 - 1), hi = 2147483647; };
template <> struct traits<long long> { typedef unsigned long long u; static const bool is_signed = true; static const int bits = 64; static const long long lo = (-9223372036854775807ll - 1), hi = 9223372036854775807ll; };

__device__ __forceinline__ bool isnan_f(float x) { return x != x; }
__device__ __forceinline__ bool isnan_f(double x) { return x != x; }
__device__ __forceinline__ bool signbit_f(float x) { return (__float_as_uint(x) >> 31) != 0; }
__device__ __forceinline__ bool signbit_f(double x) { return __double_as_longlong(x) < 0; }

// Integer arithmetic wraps through the unsigned type (two's complement), like ew::wrap_add.
template <class T> __device__ __forceinline__ T wrap_add(T a, T b) { typedef typename traits<T>::u U; return (T)(U)((unsigned long long)(U)a + (U)b); }
template <class T> __device__ __forceinline__ T wrap_sub(T a, T b) { typedef typename traits<T>::u U; return (T)(U)((unsigned long long)(U)a - (U)b); }
template <class T> __device__ __forceinline__ T wrap_mul(T a, T b) { typedef typename traits<T>::u U; return (T)(U)((unsigned long long)(U)a * (U)b); }
template <class T> __device__ __forceinline__ T wrap_neg(T a) { return wrap_sub((T)0, a); }

// ---------------------------------------------------------------------------------------------------------
// Unary Numeric ops: neg, abs_, sign, relu (ints wrap; floats as IEEE).

#define LM_INT_TYPES(X) X(signed char) X(unsigned char) X(int) X(long long)

#define LM_DEF(T) \
    __device__ __forceinline__ T neg(T a) { return wrap_neg(a); } \
    __device__ __forceinline__ T abs_(T a) { return (traits<T>::is_signed && a < (T)0) ? wrap_neg(a) : a; } \
    __device__ __forceinline__ T sign(T a) { return (T)(a > (T)0 ? 1 : (a < (T)0 ? -1 : 0)); }
LM_INT_TYPES(LM_DEF)
#undef LM_DEF
__device__ __forceinline__ float neg(float a) { return -a; }
__device__ __forceinline__ double neg(double a) { return -a; }
__device__ __forceinline__ float abs_(float a) { return fabsf(a); }
__device__ __forceinline__ double abs_(double a) { return fabs(a); }
__device__ __forceinline__ float sign(float a) { return (isnan_f(a) || a == 0.0f) ? a : (a > 0.0f ? 1.0f : -1.0f); }
__device__ __forceinline__ double sign(double a) { return (isnan_f(a) || a == 0.0) ? a : (a > 0.0 ? 1.0 : -1.0); }

// IEEE minimum / maximum with NaN propagation (the first NaN operand) and -0 < +0 (ew::minimum).
template <class T> __device__ __forceinline__ T minimum(T a, T b) { return b < a ? b : a; }
template <class T> __device__ __forceinline__ T maximum(T a, T b) { return a < b ? b : a; }
// Integers: a compare and a select in PTX, never min.s32 / max.s32. On sm_90, ptxas (CUDA 12.8 to 13.x at
// least) fuses two chained integer min/max whose operands are negations (max(max(acc, -x), -y), as a max
// reduction of a negated operand makes) into one three-input VIMNMX3 and drops one negation: the result is
// wrong, silently. A compare and a select is not fused that way: ptxas computes a negation that feeds one
// into a register of its own (IMAD.MOV) first, and only then may turn compares and selects of registers into
// VIMNMX, VIMNMX3 or VIADDMNMX (checked in the SASS of reductions, chains and max(x, -x) of each dtype).
// Loom's integer minimum, maximum, clamp and relu, the reductions' and the scans' integer combines all
// come here.
// select_min / select_max: one setp and one selp (CMP: the comparison's type, SEL: the selection's width,
// C: the register constraint).
#define LM_DEF(T, CMP, SEL, C) \
    __device__ __forceinline__ T select_min(T a, T b) { \
        T r; \
        asm("{ .reg .pred lt; setp.lt." CMP " lt, %2, %1; selp." SEL " %0, %2, %1, lt; }" : "=" C(r) : C(a), C(b)); \
        return r; } \
    __device__ __forceinline__ T select_max(T a, T b) { \
        T r; \
        asm("{ .reg .pred lt; setp.lt." CMP " lt, %1, %2; selp." SEL " %0, %2, %1, lt; }" : "=" C(r) : C(a), C(b)); \
        return r; }
LM_DEF(int, "s32", "b32", "r") LM_DEF(unsigned, "u32", "b32", "r") LM_DEF(long long, "s64", "b64", "l")
#undef LM_DEF
// W: the type T compares in (an 8-bit value widened: the order is the same).
#define LM_DEF(T, W) \
    template <> __device__ __forceinline__ T minimum<T>(T a, T b) { return (T)select_min((W)a, (W)b); } \
    template <> __device__ __forceinline__ T maximum<T>(T a, T b) { return (T)select_max((W)a, (W)b); }
LM_DEF(signed char, int) LM_DEF(unsigned char, unsigned) LM_DEF(int, int) LM_DEF(long long, long long)
#undef LM_DEF
#define LM_DEF(T) \
    template <> __device__ __forceinline__ T minimum<T>(T a, T b) { \
        if (isnan_f(a)) return a; if (isnan_f(b)) return b; \
        if (a == b) return signbit_f(a) ? a : b; return b < a ? b : a; } \
    template <> __device__ __forceinline__ T maximum<T>(T a, T b) { \
        if (isnan_f(a)) return a; if (isnan_f(b)) return b; \
        if (a == b) return signbit_f(a) ? b : a; return a < b ? b : a; }
LM_DEF(float) LM_DEF(double)
#undef LM_DEF
// A reduction's run of N values folded in order, acc = maximum(acc, y[j]) for j ascending, at the cost of one
// FMNMX per value. fmaxf gives the exact fold's bits except where an operand is NaN (fmaxf passes over it;
// maximum returns the first NaN) or where the maximum is a zero (fmaxf may give either sign; maximum has
// -0 < +0): equal nonzero floats have equal bits. A NaN seen, or a zero result, folds the run again exactly.
template <int N> __device__ __forceinline__ float max_run(float acc, const float (&y)[N]) {
    float g = acc;
    bool again = isnan_f(acc);
    #pragma unroll
    for (int j = 0; j < N; ++j) { g = fmaxf(g, y[j]); again |= isnan_f(y[j]); }
    if (!again && g != 0.0f) return g;
    #pragma unroll
    for (int j = 0; j < N; ++j) acc = maximum(acc, y[j]);
    return acc;
}
template <int N> __device__ __forceinline__ float min_run(float acc, const float (&y)[N]) {
    float g = acc;
    bool again = isnan_f(acc);
    #pragma unroll
    for (int j = 0; j < N; ++j) { g = fminf(g, y[j]); again |= isnan_f(y[j]); }
    if (!again && g != 0.0f) return g;
    #pragma unroll
    for (int j = 0; j < N; ++j) acc = minimum(acc, y[j]);
    return acc;
}
template <class T> __device__ __forceinline__ T relu(T a) { return maximum(a, (T)0); }

// ---------------------------------------------------------------------------------------------------------
// Rounding (floats; the IR passes integers through unchanged). round_even: half to even (rint).

__device__ __forceinline__ float floor_(float a) { return floorf(a); }
__device__ __forceinline__ double floor_(double a) { return floor(a); }
__device__ __forceinline__ float ceil_(float a) { return ceilf(a); }
__device__ __forceinline__ double ceil_(double a) { return ceil(a); }
__device__ __forceinline__ float trunc_(float a) { return truncf(a); }
__device__ __forceinline__ double trunc_(double a) { return trunc(a); }
__device__ __forceinline__ float round_even(float a) { return rintf(a); }
__device__ __forceinline__ double round_even(double a) { return rint(a); }
template <class T> __device__ __forceinline__ T floor_(T a) { return a; }
template <class T> __device__ __forceinline__ T ceil_(T a) { return a; }
template <class T> __device__ __forceinline__ T trunc_(T a) { return a; }
template <class T> __device__ __forceinline__ T round_even(T a) { return a; }

// ---------------------------------------------------------------------------------------------------------
// Float math. Double: the CUDA double functions. Float: the CUDA float functions, or with
// LOOM_PRECISE_MATH the double function rounded once (the reference's ew::libm1).
//
// Every argument passes through opaque(), a barrier no compiler sees through, so none evaluates a function at
// compile time. Where a compiler knows the argument (a constant, or a bool cast to float: 0 or 1) it would
// fold the function's steps, and its folding of the approximate hardware instructions inside them
// (ex2.approx, lg2.approx, rcp.approx) differs from the hardware by an ulp: tanhf(1.0f) folded is
// 0.76159412 where the GPU computes 0.76159418. The same value then had other bits in a fused kernel, where
// the compiler sees the cast, than in a kernel that reads it from memory. The barrier is one asm statement,
// a black box to NVVM, whose PTX ORs the argument's bits with a zero ptxas cannot know either: the SM's
// index shifted right by 31 (SM indices are small). An empty asm hid the value from NVVM only: where the
// argument is a constant outright (x <= x of an integer, cast to float), ptxas saw the constant move before
// it and folded tanhf(1.0f) all the same. One S2R per thread and one LOP3 per call.

__device__ __forceinline__ float opaque(float x) {
    asm("{\n\t.reg .u32 sm;\n\tmov.u32 sm, %%smid;\n\tshr.u32 sm, sm, 31;\n\tor.b32 %0, %0, sm;\n\t}" : "+f"(x));
    return x;
}
__device__ __forceinline__ double opaque(double x) {
    asm("{\n\t.reg .u32 sm;\n\t.reg .u64 z;\n\tmov.u32 sm, %%smid;\n\tshr.u32 sm, sm, 31;\n\tcvt.u64.u32 z, sm;\n\t"
        "or.b64 %0, %0, z;\n\t}" : "+d"(x));
    return x;
}

#ifdef LOOM_PRECISE_MATH
#define LM_F1(name, ff, df) \
    __device__ __forceinline__ float name(float x) { return __double2float_rn(df((double)opaque(x))); } \
    __device__ __forceinline__ double name(double x) { return df(opaque(x)); }
#define LM_F2(name, ff, df) \
    __device__ __forceinline__ float name(float x, float y) { \
        return __double2float_rn(df((double)opaque(x), (double)opaque(y))); } \
    __device__ __forceinline__ double name(double x, double y) { return df(opaque(x), opaque(y)); }
#else
#define LM_F1(name, ff, df) \
    __device__ __forceinline__ float name(float x) { return ff(opaque(x)); } \
    __device__ __forceinline__ double name(double x) { return df(opaque(x)); }
#define LM_F2(name, ff, df) \
    __device__ __forceinline__ float name(float x, float y) { return ff(opaque(x), opaque(y)); } \
    __device__ __forceinline__ double name(double x, double y) { return df(opaque(x), opaque(y)); }
#endif
LM_F1(exp_, expf, exp) LM_F1(exp2_, exp2f, exp2) LM_F1(expm1_, expm1f, expm1)
LM_F1(log_, logf, log) LM_F1(log2_, log2f, log2) LM_F1(log1p_, log1pf, log1p)
LM_F1(sin_, sinf, sin) LM_F1(cos_, cosf, cos) LM_F1(tan_, tanf, tan)
LM_F1(asin_, asinf, asin) LM_F1(acos_, acosf, acos) LM_F1(atan_, atanf, atan)
LM_F1(sinh_, sinhf, sinh) LM_F1(cosh_, coshf, cosh) LM_F1(tanh_, tanhf, tanh)
LM_F1(asinh_, asinhf, asinh) LM_F1(acosh_, acoshf, acosh) LM_F1(atanh_, atanhf, atanh)
LM_F1(erf_, erff, erf)
LM_F2(pow_, powf, pow) LM_F2(atan2_, atan2f, atan2)
#undef LM_F1
#undef LM_F2

// Correctly rounded in both: sqrt at the compute type; rsqrt as 1 / sqrt evaluated in double, rounded once.
__device__ __forceinline__ float sqrt_(float x) { return __fsqrt_rn(x); }
__device__ __forceinline__ double sqrt_(double x) { return __dsqrt_rn(x); }
__device__ __forceinline__ float rsqrt_(float x) { return __double2float_rn(__ddiv_rn(1.0, __dsqrt_rn((double)x))); }
__device__ __forceinline__ double rsqrt_(double x) { return __ddiv_rn(1.0, __dsqrt_rn(x)); }

// Rounded arithmetic on floats (never contracted).
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float fma_(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double fma_(double a, double b, double c) { return __fma_rn(a, b, c); }

// Composite activations, each step rounded at the compute type (ew::unary: Sigmoid, Silu, GeluErf, GeluTanh).
#define LM_DEF(T, ONE, HALF, SQRT1_2, SQRT2_PI, CUBIC) \
    __device__ __forceinline__ T sigmoid(T x) { return div(ONE, add(ONE, exp_(-x))); } \
    __device__ __forceinline__ T silu(T x) { return div(x, add(ONE, exp_(-x))); } \
    __device__ __forceinline__ T gelu_erf(T x) { \
        const T e = erf_(mul(x, SQRT1_2)); return mul(mul(HALF, x), add(ONE, e)); } \
    __device__ __forceinline__ T gelu_tanh(T x) { \
        const T x3 = mul(mul(x, x), x); const T inner = add(x, mul(CUBIC, x3)); \
        const T t = tanh_(mul(SQRT2_PI, inner)); return mul(mul(HALF, x), add(ONE, t)); }
LM_DEF(float, 1.0f, 0.5f, (float)0.70710678118654752440084436210484903928,
       (float)0.79788456080286535587989211986876373695, (float)0.044715)
LM_DEF(double, 1.0, 0.5, 0.70710678118654752440084436210484903928, 0.79788456080286535587989211986876373695,
       0.044715)
#undef LM_DEF

// ---------------------------------------------------------------------------------------------------------
// Integer division family (ew::int_div, int_rem, int_floor_div, int_mod): x / 0 = 0, x % 0 = x,
// INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0; floor_div/mod round toward -Inf (Python).

template <class T> __device__ __forceinline__ T int_div(T a, T b) {
    if (b == (T)0) return (T)0;
    if (traits<T>::is_signed && b == (T)-1) return wrap_neg(a);
    return (T)(a / b);
}
template <class T> __device__ __forceinline__ T int_rem(T a, T b) {
    if (b == (T)0) return a;
    if (traits<T>::is_signed && b == (T)-1) return (T)0;
    return (T)(a % b);
}
template <class T> __device__ __forceinline__ T int_floor_div(T a, T b) {
    T q = int_div(a, b);
    if (traits<T>::is_signed && b != (T)0 && b != (T)-1 && int_rem(a, b) != (T)0 && ((a < (T)0) != (b < (T)0)))
        q = (T)(q - 1);
    return q;
}
template <class T> __device__ __forceinline__ T int_mod(T a, T b) {
    T r = int_rem(a, b);
    if (traits<T>::is_signed && b != (T)0 && r != (T)0 && ((r < (T)0) != (b < (T)0))) r = wrap_add(r, b);
    return r;
}
// Shifts: amounts outside [0, bits) give 0 (left) or the sign fill (right).
template <class T> __device__ __forceinline__ bool in_shift_range(T b) {
    return traits<T>::is_signed ? (b >= (T)0 && (long long)b < traits<T>::bits) : ((long long)b < traits<T>::bits);
}
template <class T> __device__ __forceinline__ T shl(T a, T b) {
    typedef typename traits<T>::u U;
    if (!in_shift_range(b)) return (T)0;
    return (T)(U)((unsigned long long)(U)a << (int)b);
}
template <class T> __device__ __forceinline__ T shr(T a, T b) {
    if (!in_shift_range(b)) return (traits<T>::is_signed && a < (T)0) ? (T)-1 : (T)0;
    return (T)(a >> (int)b);
}

#define LM_DEF(T) \
    __device__ __forceinline__ T add(T a, T b) { return wrap_add(a, b); } \
    __device__ __forceinline__ T sub(T a, T b) { return wrap_sub(a, b); } \
    __device__ __forceinline__ T mul(T a, T b) { return wrap_mul(a, b); } \
    __device__ __forceinline__ T div(T a, T b) { return int_div(a, b); } \
    __device__ __forceinline__ T floor_div(T a, T b) { return int_floor_div(a, b); } \
    __device__ __forceinline__ T rem(T a, T b) { return int_rem(a, b); } \
    __device__ __forceinline__ T mod(T a, T b) { return int_mod(a, b); }
LM_INT_TYPES(LM_DEF)
#undef LM_DEF

// Float floor_div, rem (fmod, exact) and mod (Python's: the divisor's sign; a zero result takes b's sign).
__device__ __forceinline__ float floor_div(float a, float b) { return floorf(__fdiv_rn(a, b)); }
__device__ __forceinline__ double floor_div(double a, double b) { return floor(__ddiv_rn(a, b)); }
__device__ __forceinline__ float rem(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double rem(double a, double b) { return fmod(a, b); }
__device__ __forceinline__ float mod(float a, float b) {
    float r = fmodf(a, b);
    if (r != 0.0f) { if ((r < 0.0f) != (b < 0.0f)) r = __fadd_rn(r, b); } else { r = copysignf(0.0f, b); }
    return r;
}
__device__ __forceinline__ double mod(double a, double b) {
    double r = fmod(a, b);
    if (r != 0.0) { if ((r < 0.0) != (b < 0.0)) r = __dadd_rn(r, b); } else { r = copysign(0.0, b); }
    return r;
}

// ---------------------------------------------------------------------------------------------------------
// Comparisons (IEEE: false with NaN except ne), logical ops (truthiness: NaN is true), bitwise ops.

template <class T> __device__ __forceinline__ bool eq(T a, T b) { return a == b; }
template <class T> __device__ __forceinline__ bool ne(T a, T b) { return a != b; }
template <class T> __device__ __forceinline__ bool lt(T a, T b) { return a < b; }
template <class T> __device__ __forceinline__ bool le(T a, T b) { return a <= b; }
template <class T> __device__ __forceinline__ bool gt(T a, T b) { return a > b; }
template <class T> __device__ __forceinline__ bool ge(T a, T b) { return a >= b; }
template <class T> __device__ __forceinline__ bool truthy(T a) { return a != (T)0; }
template <class T> __device__ __forceinline__ bool logical_not(T a) { return !truthy(a); }
template <class T> __device__ __forceinline__ bool logical_and(T a, T b) { return truthy(a) && truthy(b); }
template <class T> __device__ __forceinline__ bool logical_or(T a, T b) { return truthy(a) || truthy(b); }
template <class T> __device__ __forceinline__ bool logical_xor(T a, T b) { return truthy(a) != truthy(b); }
template <class T> __device__ __forceinline__ T bit_and(T a, T b) { return (T)(a & b); }
template <class T> __device__ __forceinline__ T bit_or(T a, T b) { return (T)(a | b); }
template <class T> __device__ __forceinline__ T bit_xor(T a, T b) { return (T)(a ^ b); }
template <class T> __device__ __forceinline__ bool isnan_(T) { return false; }
template <class T> __device__ __forceinline__ bool isinf_(T) { return false; }
template <class T> __device__ __forceinline__ bool isfinite_(T) { return true; }
__device__ __forceinline__ bool isnan_(float a) { return a != a; }
__device__ __forceinline__ bool isnan_(double a) { return a != a; }
__device__ __forceinline__ bool isinf_(float a) { return fabsf(a) == __int_as_float(0x7f800000); }
__device__ __forceinline__ bool isinf_(double a) { return fabs(a) == __longlong_as_double(0x7ff0000000000000ll); }
__device__ __forceinline__ bool isfinite_(float a) { return fabsf(a) < __int_as_float(0x7f800000); }
__device__ __forceinline__ bool isfinite_(double a) { return fabs(a) < __longlong_as_double(0x7ff0000000000000ll); }

// ---------------------------------------------------------------------------------------------------------
// Ternary ops: where (the unselected operand is computed and discarded), fma_ (above), clamp.

template <class T> __device__ __forceinline__ T where(bool c, T a, T b) { return c ? a : b; }
template <class T> __device__ __forceinline__ T clamp(T x, T lo, T hi) { return minimum(maximum(x, lo), hi); }

// ---------------------------------------------------------------------------------------------------------
// Casts (ew::cast): to bool: != 0 (NaN -> true); integer -> integer wraps; float -> integer truncates,
// saturates, NaN -> 0; to a float: round to nearest even once (int64 through a round-to-odd double).

/// 2^k as a double, for k in [-1022, 1023].
__device__ __forceinline__ double pow2(int k) { return __longlong_as_double((long long)(k + 1023) << 52); }

/// Rounds a double once to a format with `mant` explicit mantissa bits, minimum normal exponent `emin` and
/// largest finite value `maxf` (loom::double_to_half_bits / double_to_bf16_bits); the result is exact in float.
__device__ __forceinline__ float round_double_to(double d, int mant, int emin, double maxf) {
    if (d != d) return (float)d;
    const double m = fabs(d);
    if (m == 0.0 || m == __longlong_as_double(0x7ff0000000000000ll)) return (float)d;
    int e = (int)((__double_as_longlong(m) >> 52) & 0x7ff) - 1023;  // binade of m (double subnormals: tiny)
    if (e < emin) e = emin;
    const double r = rint(m * pow2(mant - e)) * pow2(e - mant);  // exact scaling; rint ties to even
    const double q = r > maxf ? __longlong_as_double(0x7ff0000000000000ll) : r;
    return (float)copysign(q, d);
}
__device__ __forceinline__ float double_to_f16r(double d) { return round_double_to(d, 10, -14, 65504.0); }
__device__ __forceinline__ float double_to_bf16r(double d) {
    return round_double_to(d, 7, -126, 3.3895313892515355e38);  // bf16 max finite: (2 - 2^-7) * 2^127
}

/// int64 -> double rounded to odd (ew::int64_to_double_odd): a later rounding to <= 51 bits rounds once.
__device__ __forceinline__ double int64_to_double_odd(long long v) {
    const bool neg = v < 0;
    unsigned long long m = neg ? (~(unsigned long long)v + 1ull) : (unsigned long long)v;
    const int width = 64 - __clzll((long long)m);
    if (width > 53) {
        const int drop = width - 53;
        const unsigned long long mask = (1ull << drop) - 1ull;
        const bool sticky = (m & mask) != 0;
        m &= ~mask;
        if (sticky) m |= (1ull << drop);
    }
    const double d = __ull2double_rn(m);
    return neg ? -d : d;
}

/// Saturating float -> integer (ew::float_to_int): hi = 2^digits is the first value out of range.
template <class I, class F> __device__ __forceinline__ I float_to_int(F x) {
    if (x != x) return (I)0;
    const F hi = (F)(traits<I>::is_signed ? pow2(traits<I>::bits - 1) : pow2(traits<I>::bits));
    if (x >= hi) return traits<I>::hi;
    if (traits<I>::is_signed) { if (x <= -hi) return traits<I>::lo; }
    else { if (x <= (F)0) return (I)0; }
    return (I)x;
}

/// Source value as an exact double (int64: round to odd), for the rounding casts to a float type.
template <class S> __device__ __forceinline__ double exact_double(S x) { return (double)x; }
__device__ __forceinline__ double exact_double(long long x) { return int64_to_double_odd(x); }
// An 8-bit integer widens in a 32-bit register the compiler cannot see into. Without it NVVM (CUDA 13.0)
// converted lane 0 of a 16-byte vector of int8 values after a neg from the 16-bit register that holds lanes
// 0 and 1 without sign-extending the low byte, so a 0 in lane 0 next to a nonzero lane 1 became nonzero
// (int8 -> float16 -> bool; found by the differential fuzzer).
__device__ __forceinline__ double exact_double(signed char x) { int v = x; asm("" : "+r"(v)); return (double)v; }
__device__ __forceinline__ double exact_double(unsigned char x) { unsigned v = x; asm("" : "+r"(v)); return (double)v; }
// A bool widens the same way and converts as an integer. Left to itself the compiler makes (double)b a select
// of two double constants, and ptxas (CUDA 13.0, sm_90) merged those selects of different lanes: in a vector
// of four bool lanes cast to float32, lane 3 took lane 0's value (its FSEL pair's F2F.F32.F64 was dropped for
// lane 0's). Found by the GPU test of known arguments once the math barrier read %smid; reproduced in a kernel
// of its own, 130,937 of 2^20 elements wrong.
__device__ __forceinline__ int widened(bool x) { int v = x; asm("" : "+r"(v)); return v; }
__device__ __forceinline__ double exact_double(bool x) { return (double)widened(x); }

/// cast<To>(x): To is the target's storage tag (bool, signed char, unsigned char, int, long long, f16, bf16,
/// float, double); the result is the target's register value.
template <class To> struct caster;
template <> struct caster<bool> {
    template <class S> __device__ __forceinline__ static bool run(S x) { return x != (S)0; }
};
#define LM_DEF(T) \
    template <> struct caster<T> { \
        template <class S> __device__ __forceinline__ static T run(S x) { return (T)x; } \
        __device__ __forceinline__ static T run(float x) { return float_to_int<T>(x); } \
        __device__ __forceinline__ static T run(double x) { return float_to_int<T>(x); } };
LM_INT_TYPES(LM_DEF)
#undef LM_DEF
template <> struct caster<double> {
    template <class S> __device__ __forceinline__ static double run(S x) { return (double)x; }
    __device__ __forceinline__ static double run(bool x) { return exact_double(x); }
    __device__ __forceinline__ static double run(signed char x) { return exact_double(x); }
    __device__ __forceinline__ static double run(unsigned char x) { return exact_double(x); }
    __device__ __forceinline__ static double run(long long x) { return __ll2double_rn(x); }
};
template <> struct caster<float> {
    template <class S> __device__ __forceinline__ static float run(S x) { return __double2float_rn(exact_double(x)); }
    __device__ __forceinline__ static float run(bool x) { return (float)widened(x); }  // 0 or 1: exact
    __device__ __forceinline__ static float run(float x) { return x; }
};
template <> struct caster<f16> {
    template <class S> __device__ __forceinline__ static float run(S x) { return double_to_f16r(exact_double(x)); }
    __device__ __forceinline__ static float run(float x) { return round_f16(x); }
};
template <> struct caster<bf16> {
    template <class S> __device__ __forceinline__ static float run(S x) { return double_to_bf16r(exact_double(x)); }
    __device__ __forceinline__ static float run(float x) { return round_bf16(x); }
};
template <class To, class S> __device__ __forceinline__ auto cast(S x) -> decltype(caster<To>::run(x)) {
    return caster<To>::run(x);
}


// ---------------------------------------------------------------------------------------------------------
// Reductions (docs/semantics.md, "Reductions" and "Reduction order"): the accumulator of argmin/argmax, the
// combination of two partials for the ops whose combination is not an elementwise op, warp shuffles.

/// argmin/argmax accumulator: a value and its index in the reduced range (-1: no element yet).
template <class T> struct argacc { T v; long long i; };
template <class T> __device__ __forceinline__ argacc<T> arg_of(T v, long long i) { argacc<T> a; a.v = v; a.i = i; return a; }
template <class T> __device__ __forceinline__ argacc<T> arg_none() { argacc<T> a; a.v = (T)0; a.i = -1; return a; }
/// The better of two partials: the first NaN wins, then the smaller (IsMin) or larger value, then the
/// smaller index (ties and -0 == +0). Symmetric, so the order of the operands never matters.
template <bool IsMin, class T> __device__ __forceinline__ argacc<T> arg_combine(argacc<T> a, argacc<T> b) {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    const bool an = a.v != a.v, bn = b.v != b.v;
    if (an || bn) {
        if (an && bn) return a.i <= b.i ? a : b;
        return an ? a : b;
    }
    if (IsMin ? b.v < a.v : a.v < b.v) return b;
    if (IsMin ? a.v < b.v : b.v < a.v) return a;
    return a.i <= b.i ? a : b;
}
__device__ __forceinline__ unsigned char red_or(unsigned char a, unsigned char b) { return (unsigned char)(a | b); }
__device__ __forceinline__ unsigned char red_and(unsigned char a, unsigned char b) { return (unsigned char)(a & b); }

template <class T> __device__ __forceinline__ T shfl_down(T x, int s) { return __shfl_down_sync(0xffffffffu, x, s); }
__device__ __forceinline__ bool shfl_down(bool x, int s) { return __shfl_down_sync(0xffffffffu, (int)x, s) != 0; }
__device__ __forceinline__ signed char shfl_down(signed char x, int s) { return (signed char)__shfl_down_sync(0xffffffffu, (int)x, s); }
__device__ __forceinline__ unsigned char shfl_down(unsigned char x, int s) { return (unsigned char)__shfl_down_sync(0xffffffffu, (int)x, s); }
template <class T> __device__ __forceinline__ argacc<T> shfl_down(argacc<T> x, int s) {
    x.v = shfl_down(x.v, s);
    x.i = __shfl_down_sync(0xffffffffu, x.i, s);
    return x;
}
/// Loads through the read-only data path (ld.global.nc): only for memory that no thread writes while the
/// kernel runs. Reduction kernels read their operands this way: Loom never lets a reduction kernel write
/// what it reads (an output that shares memory with an input is written through a temporary, and
/// temporaries, partials and counters are separate allocations).
template <class T> __device__ __forceinline__ T ldg(const T* p) { return __ldg(p); }
__device__ __forceinline__ bool ldg(const bool* p) { return __ldg(reinterpret_cast<const unsigned char*>(p)) != 0; }
__device__ __forceinline__ f16 ldg(const f16* p) { f16 r; r.bits = __ldg(reinterpret_cast<const unsigned short*>(p)); return r; }
__device__ __forceinline__ bf16 ldg(const bf16* p) { bf16 r; r.bits = __ldg(reinterpret_cast<const unsigned short*>(p)); return r; }
template <class T, int N> __device__ __forceinline__ vec<T, N> load_vec_ro(const T* p) {
    vec<T, N> r;
    if constexpr (sizeof(r) == 16) *reinterpret_cast<uint4*>(&r) = __ldg(reinterpret_cast<const uint4*>(p));
    else if constexpr (sizeof(r) == 8) *reinterpret_cast<uint2*>(&r) = __ldg(reinterpret_cast<const uint2*>(p));
    else if constexpr (sizeof(r) == 4) *reinterpret_cast<unsigned int*>(&r) = __ldg(reinterpret_cast<const unsigned int*>(p));
    else if constexpr (sizeof(r) == 2) *reinterpret_cast<unsigned short*>(&r) = __ldg(reinterpret_cast<const unsigned short*>(p));
    else r = load_vec<T, N>(p);
    return r;
}
/// A split counter: adds `add` to `*counter` and returns whether that completed the count `total`. The
/// completing caller resets the counter, so it is zero again for the next launch. The caller fences its
/// partials (__threadfence) first. Integer atomics only: no floating-point value depends on arrival order.
__device__ __forceinline__ bool arrive(unsigned int* counter, unsigned int add, unsigned int total) {
    const bool last = atomicAdd(counter, add) + add == total;
    if (last) *counter = 0u;
    return last;
}
/// A load through L2 (not L1): values that other blocks wrote during this kernel.
template <class T> __device__ __forceinline__ T ldcg(const T* p) { return __ldcg(p); }
__device__ __forceinline__ bool ldcg(const bool* p) { return __ldcg(reinterpret_cast<const unsigned char*>(p)) != 0; }
template <class T> __device__ __forceinline__ argacc<T> ldcg(const argacc<T>* p) {
    argacc<T> r;
    r.v = ldcg(&p->v);
    r.i = __ldcg(&p->i);
    return r;
}
template <class T> __device__ __forceinline__ T shfl0(T x) { return __shfl_sync(0xffffffffu, x, 0); }
__device__ __forceinline__ bool shfl0(bool x) { return __shfl_sync(0xffffffffu, (int)x, 0) != 0; }
__device__ __forceinline__ signed char shfl0(signed char x) { return (signed char)__shfl_sync(0xffffffffu, (int)x, 0); }
__device__ __forceinline__ unsigned char shfl0(unsigned char x) { return (unsigned char)__shfl_sync(0xffffffffu, (int)x, 0); }
template <class T> __device__ __forceinline__ argacc<T> shfl0(argacc<T> x) {
    x.v = shfl0(x.v);
    x.i = __shfl_sync(0xffffffffu, x.i, 0);
    return x;
}

#undef LM_INT_TYPES

// ---- asynchronous copies into shared memory (matmul kernels; sm_80 and newer) ---------------------------
/// Copies 16 bytes from global `src` to shared `dst`, or writes 16 zero bytes when `bytes` is 0 (then
/// nothing is read). Both addresses 16-byte aligned.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int bytes) {
#if __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(bytes) : "memory");
#endif
}
/// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/// Waits until at most N committed groups of this thread are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// ---- tensor cores: warp-wide matrix multiply-accumulate (matmul kernels; sm_80 and newer) ---------------
// Fragments as the PTX ISA lays them out for mma.sync .row.col: A 16 x k in 4 registers, B k x 8 in 2,
// C 16 x 8 in 4 accumulators per lane.
/// The 32 bits at `p` (2 float16 or bfloat16 values, or 4 int8 values, consecutive along k in shared memory).
__device__ __forceinline__ unsigned load_u32(const void* p) { return *static_cast<const unsigned*>(p); }
/// Consecutive values of k down a column of a shared B tile of row pitch `pitch`, packed low element first.
__device__ __forceinline__ unsigned pack_column(const f16* p, int pitch) { return (unsigned)p[0].bits | (unsigned)p[pitch].bits << 16; }
__device__ __forceinline__ unsigned pack_column(const bf16* p, int pitch) { return (unsigned)p[0].bits | (unsigned)p[pitch].bits << 16; }
__device__ __forceinline__ unsigned pack_column(const signed char* p, int pitch) {
    return (unsigned)(unsigned char)p[0] | (unsigned)(unsigned char)p[pitch] << 8 | (unsigned)(unsigned char)p[2 * pitch] << 16 |
           (unsigned)(unsigned char)p[3 * pitch] << 24;
}
/// c += a b: one m16n8k16 MMA of float16 operands into float32 accumulators.
__device__ __forceinline__ void mma_m16n8k16_f16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}
/// c += a b: one m16n8k16 MMA of bfloat16 operands into float32 accumulators.
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}
/// c += a b: one m16n8k32 MMA of int8 operands into int32 accumulators (exact; without .satfinite the sums
/// wrap modulo 2^32, as the contract's int32 sums do).
__device__ __forceinline__ void mma_m16n8k32_s8(unsigned (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/// x read as TF32 by dropping its low 13 mantissa bits (toward zero), as Hopper's wgmma tensor cores read a
/// float32 operand: single-pass TF32 on mma.sync reads its operands so too, so that a product reads the same
/// TF32 values on either kernel (fusion may move a product from one to the other). |tf32(x) - x| < 2^-10 |x|;
/// finite stays finite.
__device__ __forceinline__ unsigned tf32_truncate(float x) {
    return __float_as_uint(x) & 0xffffe000u;
}
/// x rounded to TF32 (10 explicit mantissa bits, float32's exponent range; to nearest, ties away from zero:
/// cvt.rna), as the 32-bit register an m16n8k8 TF32 MMA takes (the low 13 bits zero). A finite x that would
/// round to Inf (within 2^-11 of float32's largest value) takes TF32's largest finite value of its sign
/// instead, so the relative error stays at most 2^-11 for every finite x.
__device__ __forceinline__ unsigned tf32_round(float x) {
    unsigned r = 0;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
#endif
    if ((r & 0x7fffffffu) == 0x7f800000u && isfinite_(x)) r = (r & 0x80000000u) | 0x7f7fe000u;
    return r;
}
/// 3xTF32: x = big + small + (at most 2^-22 |x|), big = tf32(x), small = tf32(x - big) (the difference is
/// exact in float32: big is within 2^-11 |x| of x), and `cross`, the big part the cross terms a_small b_big and
/// a_big b_small take: big itself, or 0 for Inf and NaN, whose small part is 0 too. So the cross terms stay
/// finite (an Inf times a zero small part would be NaN), and big times big alone carries Inf and NaN, as IEEE
/// says.
__device__ __forceinline__ void tf32_split(float x, unsigned& big, unsigned& cross, unsigned& small) {
    big = tf32_round(x);
    const bool finite = isfinite_(x);
    cross = finite ? big : 0u;
    small = finite ? tf32_round(x - __uint_as_float(big)) : 0u;
}
/// c += a b: one m16n8k8 MMA of TF32 operands into float32 accumulators (A 16 x 8 in 4 registers, B 8 x 8 in
/// 2, one value per register).
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// ---- Hopper (compute capability 9.0): mbarriers, the tensor memory accelerator, warpgroup MMAs ----
// Shared-memory operands are 32-bit shared-window addresses (smem_addr). The copies and barriers are plain
// sm_90; wgmma and setmaxnreg need the arch-specific target sm_90a, which Loom compiles wgmma kernels for.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
/// Initializes the mbarrier at `bar` to expect `count` arrivals per phase.
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
/// Makes the initialized mbarriers visible to the tensor memory accelerator (before the block's barrier).
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
/// One arrival that also announces `bytes` of copies completing on the barrier's current phase.
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
/// One arrival.
__device__ __forceinline__ void mbar_arrive(unsigned bar) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory"); }
/// Waits until the phase of parity `parity` has completed (a fresh barrier counts parity 1 as complete).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    unsigned done = 0;
    do {
        asm volatile(
            "{\n"
            "    .reg .pred p;\n"
            "    mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "    selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}
/// Bulk tensor copies of the box at coordinates (c0, c1[, c2[, c3[, c4]]]) (innermost first, elements) of `map` (an
/// encoded CUtensorMap, 128 bytes, 64-byte aligned, in the kernel's __grid_constant__ parameter) into
/// shared memory at `dst`, completing on the mbarrier `bar`; elements outside the tensor arrive as zeros.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const void* map, unsigned bar, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
                 "l"(map), "r"(bar), "r"(c0), "r"(c1)
                 : "memory");
}
__device__ __forceinline__ void tma_load_3d(unsigned dst, const void* map, unsigned bar, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
                 "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}
__device__ __forceinline__ void tma_load_4d(unsigned dst, const void* map, unsigned bar, int c0, int c1, int c2, int c3) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
                 "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
                 : "memory");
}
__device__ __forceinline__ void tma_load_5d(unsigned dst, const void* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n" ::"r"(dst),
                 "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
                 : "memory");
}
/// Named barrier `id` (1 to 15; 0 is __syncthreads') over `threads` threads: wait for the others, or arrive
/// without waiting.
__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(unsigned id, unsigned threads) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
/// The matrix descriptor of a 128-byte swizzled operand tile at shared address `addr` (its 1024-byte pattern
/// aligned): the leading and stride byte offsets of the PTX ISA's canonical layouts, swizzle mode 1 (128 B).
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr, unsigned leading_bytes, unsigned stride_bytes) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (unsigned long long)((leading_bytes & 0x3FFFF) >> 4) << 16 |
           (unsigned long long)((stride_bytes & 0x3FFFF) >> 4) << 32 | 1ull << 62;
}
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/// Orders this warpgroup's register accesses before the warpgroup MMAs that follow.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
/// Closes the warpgroup MMAs issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
/// Waits until at most N groups of this warpgroup's MMAs are pending.
template <int N> __device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
/// Keeps the compiler from moving accesses of an accumulator across a warpgroup MMA in flight.
__device__ __forceinline__ void wgmma_hold(float& r) { asm volatile("" : "+f"(r)::"memory"); }
/// Gives this warpgroup's registers back (the producer) or takes them (the consumers): setmaxnreg.
template <int R> __device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R)); }
template <int R> __device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R)); }
#endif

}  // namespace lm

// ---------------------------------------------------------------------------------------------------------
// Random numbers (rule Random): Philox4x32-10 and its transforms, the CPU reference's own source
// (ir/include/loom/ir/random_core.hpp, namespace lm::rng here), pasted below by codegen/embed_prelude.cmake.
// LOOM_RANDOM_CORE

// ---------------------------------------------------------------------------------------------------------
// The float32 exp of the CPU reference and the host back end, correctly rounded (lm::expc::exp_f32; the CPU
// reference's own source, ir/include/loom/ir/exp_core.hpp, pasted below by codegen/embed_prelude.cmake), for
// kernels that must give the reference's bits. The elementwise `exp` op keeps CUDA's expf (lm::exp_ above).
// LOOM_EXP_CORE

namespace lm {

// Gathers (docs/semantics.md, "Gathers"): the position an index names along an axis of n > 0 elements, v + n
// for v in [-n, 0) and v for v in [0, n); what lies outside is never read. Checked: position 0 is read instead
// and the first such index is recorded in the runtime's error word (ir::GatherErrorWord: flag, the gather's
// id, the index), which the runtime reads at its next synchronization. Clamped: the nearer end.
struct gather_error_word {
    unsigned int flag;
    unsigned int id;
    long long value;
};
__device__ __forceinline__ long long gather_checked(long long v, long long n, void* err, long long id) {
    const long long k = v < 0 ? v + n : v;
    if (k >= 0 && k < n) return k;
    gather_error_word* e = static_cast<gather_error_word*>(err);
    if (atomicCAS(&e->flag, 0u, 1u) == 0u) {
        e->id = static_cast<unsigned int>(id);
        e->value = v;
    }
    return 0;
}
__device__ __forceinline__ long long gather_clamped(long long v, long long n) {
    const long long k = v < 0 ? v + n : v;
    return k < 0 ? 0 : (k >= n ? n - 1 : k);
}

/// Lane j's index in a vector variant, whose lane 0 has the index `first`, a multiple of W (the runtime runs
/// a vector variant only then: codegen's select_variant): first + j, written as first with its low bits
/// cleared, or j, so that the compiler knows those bits and computes once what W consecutive indices share
/// (first / 4, the block of random words of 4 elements).
template <int W> __device__ __forceinline__ long long vector_lane(long long first, int j) {
    return (first & ~(long long)(W - 1)) | (long long)j;
}

/// Element `index` of the stream `seed` as a value of the storage type T (float, double, f16, bf16; the
/// halves in a float register): docs/semantics.md, "Random numbers". Element `index` reads slot k of block
/// index >> 2 (index >> 1 for double): a thread's 4 (2) consecutive elements from a multiple of 4 (2) share
/// one run of the generator, and a pair of normal values shares its log and polynomials, once the compiler
/// has merged the equal expressions. A float16 or bfloat16 normal value is the float32 one, which the
/// generated code rounds once (lm::round_f16 / lm::round_bf16).
template <class T> struct random_of;
template <> struct random_of<float> {
    static constexpr bool f64 = false;
    static __device__ __forceinline__ float uniform(rng::Words w, unsigned k) {
        return rng::uniform_slot(w, k, 24);
    }
    static __device__ __forceinline__ float normal(rng::Words w, unsigned k) { return rng::normal_f32(w, k); }
};
template <> struct random_of<double> {
    static constexpr bool f64 = true;
    static __device__ __forceinline__ double uniform(rng::Words w, unsigned k) {
        return rng::uniform_f64_slot(w, k);
    }
    static __device__ __forceinline__ double normal(rng::Words w, unsigned k) {
        return rng::normal_f64(w, k);
    }
};
template <> struct random_of<f16> {
    static constexpr bool f64 = false;
    static __device__ __forceinline__ float uniform(rng::Words w, unsigned k) {
        return rng::uniform_slot(w, k, 11);
    }
    static __device__ __forceinline__ float normal(rng::Words w, unsigned k) { return rng::normal_f32(w, k); }
};
template <> struct random_of<bf16> {
    static constexpr bool f64 = false;
    static __device__ __forceinline__ float uniform(rng::Words w, unsigned k) {
        return rng::uniform_slot(w, k, 8);
    }
    static __device__ __forceinline__ float normal(rng::Words w, unsigned k) { return rng::normal_f32(w, k); }
};
template <class T> __device__ __forceinline__ auto random_uniform(long long index, long long seed) {
    constexpr bool f64 = random_of<T>::f64;
    return random_of<T>::uniform(rng::draw(rng::block_of(index, f64), seed), rng::slot_of(index, f64));
}
template <class T> __device__ __forceinline__ auto random_normal(long long index, long long seed) {
    constexpr bool f64 = random_of<T>::f64;
    return random_of<T>::normal(rng::draw(rng::block_of(index, f64), seed), rng::slot_of(index, f64));
}

}  // namespace lm
