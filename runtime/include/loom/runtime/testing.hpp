// Test helpers for Loom and its users: tolerances derived from a graph's ops, element-wise comparison with
// ULP-aware reports, checks against the CPU reference, random fills and poisoning of tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/codegen/options.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::testing {

/// How far a float result may be from the expected value (docs/semantics.md, "Tolerances"). An element
/// passes when |got - expected| <= abs, or when |got - expected| / ulp(expected) <= ulps, where ulp(x) is
/// the spacing of the result dtype at |x| (subnormal spacing below the smallest normal). A tolerance of
/// {0, 0} is exact: the bits must be identical (-0.0 differs from +0.0; any NaN equals any NaN).
/// Integer and bool results are always compared exactly. NaN matches only NaN and ±Inf only the same
/// infinity, whatever the tolerance.
struct Tolerance {
    double ulps = 0.0;
    double abs = 0.0;
    std::string derivation;  // how the bound was obtained, for messages
    bool is_exact() const { return ulps == 0.0 && abs == 0.0; }
    static Tolerance exact() { return {0.0, 0.0, "exact"}; }
};

/// Maximum error in ulps of the GPU's implementation of elementwise op `op` at float dtype `dtype`
/// against the correctly rounded result: the CUDA C++ Programming Guide, "Mathematical Functions"
/// appendix, tables "Single-Precision" and "Double-Precision Floating-Point Functions" (float16 and
/// bfloat16 are computed in float32 and rounded once: 1 ulp of the half dtype). Composite activations
/// (sigmoid, silu, gelu, gelu_tanh) are derived from their parts in docs/semantics.md. 0 for ops that are
/// correctly rounded or exact (+ - * / sqrt fma, rounding, min/max, casts).
double gpu_max_ulp(ir::Op op, DType dtype);
/// Error bound in ulps of the reference's value for `op` against the correctly rounded result (float32,
/// float16, bfloat16: the C library's double function rounded once, at most 1 ulp; float64: glibc's
/// documented maximum, taken as 2 ulps).
double host_max_ulp(ir::Op op, DType dtype);

/// The tolerance for comparing a GPU result of `root` against the reference (docs/semantics.md,
/// "Tolerances"): exact when every op on every path from the inputs is exact; otherwise the ulps
/// accumulated along the graph, with an absolute floor of ulps * eps(dtype) * scale for results near zero
/// after cancellation (`scale` is the largest magnitude among the expected values, at least 1).
///
/// `fast_math`: the kernels were compiled with Options::fast_math (docs/semantics.md, "Fast math"), and the
/// tolerance is widened openly, as its derivation says: each float32 (and float16/bfloat16) function adds
/// kFastMathUlp ulps instead of its CUDA Math API bound, the absolute floor is at least
/// kFastMathAbs * scale, and results below the smallest normal float32 may be flushed to zero.
Tolerance tolerance_for(const ir::NodePtr& root, double scale = 1.0, bool fast_math = false);

/// Fast math's widening (CUDA C++ Programming Guide, "Intrinsic Functions"): __expf's bound 2 + floor(1.173
/// |x|) ulps reaches 105 ulps at the end of the float range, __sinf, __cosf and __logf near 1 are within
/// 2^-21.41 absolute.
inline constexpr double kFastMathUlp = 128.0;
inline constexpr double kFastMathAbs = 0x1p-20;

/// The outcome of a comparison. `worst_*` describe the element with the largest error (the first
/// mismatch of integers, NaN or Inf patterns; -1 and empty when none).
struct Comparison {
    bool ok = true;
    std::int64_t mismatches = 0;
    std::int64_t count = 0;         // elements compared
    std::int64_t worst_index = -1;  // linear (row-major) index
    std::vector<std::int64_t> worst_multi_index;
    double worst_got = 0.0;
    double worst_expected = 0.0;
    double worst_ulps =
        0.0;              // error of the worst element in ulps of got's dtype (Inf for NaN/Inf mismatches)
    std::string message;  // one paragraph: what differs, where, and the tolerance used
    explicit operator bool() const { return ok; }
};

/// Compares `got` with `expected` element by element (any devices, any strides; `expected` may have got's
/// dtype or float64, e.g. an Oracle result). Shapes must be equal (else ok = false with a message).
/// `what` names the result in the message.
Comparison compare(const Tensor& got, const Tensor& expected, const Tolerance& tolerance,
                   const std::string& what = "result");

/// Whether `a` and `b` have the same dtype, shape and element bits (any devices, any strides): the check of
/// results that must equal bit for bit, NaN payloads and the sign of zero included.
bool same_bits(const Tensor& a, const Tensor& b);

/// Compares `got`, a product of `a` and `b` on tensor cores (docs/semantics.md, section 12), with the stated
/// componentwise bound: |got - C| <= gamma(K, 2^-22) (|A||B|) (1 + u) + u |C| + s per element, where C and
/// |A||B| are reference::product_bound()'s, u is the unit roundoff of the product's dtype (the operands'; its
/// one rounding of the float32 accumulator, also when `got` is a wider cast of it) and s its smallest
/// subnormal. Where C is Inf or NaN (an Inf or NaN operand), got must be the same (NaN for NaN); got may be
/// ±Inf of C's sign only where |C| plus the bound reaches the dtype's overflow threshold; any other NaN or
/// Inf fails. int8 products must equal the exact sum modulo 2^32. A K whose gamma is infinite (K >= 2^22)
/// fails with a message saying the bound is vacuous; a wrong shape fails. `what` names the result.
/// `precision` TF32 or TF32x3: a float32 product under Options::product_precision, whose bound's factor is
/// reference::product_bound_factor(K, precision) instead of gamma(K, 2^-22).
Comparison compare_product_bound(const Tensor& got, const Tensor& a, const Tensor& b,
                                 const std::string& what = "product",
                                 ProductPrecision precision = ProductPrecision::Float32);

/// Evaluates `roots` on the CPU reference (inputs from their payloads, or `overrides`) and compares each
/// of `results` (one tensor per root, any device) with the derived tolerance tolerance_for(root, scale),
/// widened for fast math when the current options (loom::current_options()) have it on.
/// The returned Comparison is the first failing root's (or a passing summary); its message names the root.
Comparison check_against_reference(const std::vector<ir::NodePtr>& roots, const std::vector<Tensor>& results,
                                   const reference::Overrides& overrides = {});

/// Like check_against_reference, and throws loom::Error with the comparison's message when it fails.
void require_matches_reference(const std::vector<ir::NodePtr>& roots, const std::vector<Tensor>& results,
                               const reference::Overrides& overrides = {});

/// Distribution of random fills. Floats: Normal(a = mean, b = standard deviation) or Uniform [a, b);
/// integers: uniform in [a, b] (both included, clamped to the dtype's range); bool: true with
/// probability 1/2. Values are rounded to the dtype once.
struct Random {
    enum class Kind : std::uint8_t { Normal, Uniform };
    Kind kind = Kind::Normal;
    double a = 0.0;
    double b = 1.0;
    static Random normal(double mean = 0.0, double stddev = 1.0) { return {Kind::Normal, mean, stddev}; }
    static Random uniform(double lo, double hi) { return {Kind::Uniform, lo, hi}; }
};

/// Fills contiguous tensor `t` (host or CUDA) with random values from std::mt19937_64 streams: block k of
/// 65536 elements uses the generator seeded with splitmix64(seed + k), so the values depend only on
/// `seed`, never on the number of threads or the platform (Box-Muller and 53-bit uniforms are computed
/// here, not by <random>'s distributions). Throws loom::Error for a non-contiguous tensor.
void fill_random(Tensor& t, std::uint64_t seed, const Random& dist = {});
/// A new contiguous host tensor filled by fill_random.
Tensor random_tensor(const Shape& shape, DType dtype, std::uint64_t seed, const Random& dist = {});

/// Fills contiguous tensor `t` (host or CUDA) with values that reveal elements a kernel failed to write:
/// floats a quiet NaN (float32 0x7fc0dead, float64 0x7ff8deaddeaddead, float16 0x7e5a, bfloat16 0x7fda),
/// which compare() rejects against every non-NaN expected value; bool the byte 0xa5 (neither 0 nor 1,
/// always rejected); int8 -101, uint8 165, int32 0xdeadbeef, int64 0xdeadbeefdeadbeef (rejected unless
/// the expected value happens to be the sentinel). Throws loom::Error for a non-contiguous tensor.
void poison(Tensor& t);

/// Builds the host kernels that evaluating graph i under options[i] into contiguous results would build, all
/// that neither cache has compiled by LLVM together (one module, as the kernels of one plan are), so that a
/// compilation's fixed costs (the pass managers, the object file, the link) are paid once for many graphs;
/// evaluating the graphs afterwards finds their kernels in the in-memory cache. For the differential fuzzer,
/// which evaluates thousands of small graphs. Graphs on a GPU, and every graph without the LLVM back end, are
/// left alone. Throws as an evaluation would (loom::CompileError when LLVM rejects a kernel: then none of the
/// kernels is cached, and each graph's evaluation compiles its own).
void build_host_kernels(const std::vector<std::vector<ir::NodePtr>>& graphs,
                        const std::vector<Options>& options);

}  // namespace loom::testing
