// Statistics and normalizations composed of the DSL's ops: var, std, softmax, logsumexp, layernorm,
// rmsnorm. Each records ordinary IR nodes (mean, sum, max, exp, log, rsqrt, + - * /), so it fuses, evaluates
// on the CPU reference for host tensors and on the GPU wherever its reductions do. The algorithms, their
// dtypes and every rounding step are those of docs/semantics.md, section 7 ("Variance and standard
// deviation", "Softmax and normalizations"); the results are exactly those of the written-out formulas.
//
// Errors: loom::Error whose message starts with the function's name and gives the operand's shape and
// dtype and the call's file:line (an axis out of range or repeated, a zero-length normalized axis, a
// weight or bias that does not broadcast against x).
#pragma once

#include <concepts>
#include <cstdint>

#include "loom/dsl/ops.hpp"

namespace loom {

/// Variance over `axes` (empty = all axes; negative axes count from the end), two-pass:
///     m = mean(x, axes, keepdims = true)
///     var = sum((x - m) * (x - m), axes, keepdims) / max(N - correction, 0)
/// N is the number of reduced elements; `correction` is NumPy's ddof (1: the unbiased sample variance).
/// dtype: mean's (float dtypes are kept; integers and bool give float32). float16 and bfloat16 are
/// widened to float32 first and every step runs in float32, rounded once to the half dtype at the end.
/// N - correction <= 0 gives +Inf, or NaN when every deviation is 0 (IEEE division by 0, as NumPy).
/// Never E[x^2] - E[x]^2, which cancels catastrophically for data far from zero.
Array var(const Operand& x, Axes axes = {}, double correction = 0, bool keepdims = false,
          Loc loc = Loc::current());
/// Standard deviation: sqrt of the variance above (the same dtype; for halves the square root is taken in
/// float32 and rounded once). With `using namespace loom;` a call spelled `std(x)` is ambiguous with
/// namespace std: write `loom::std(x)` or `stddev(x)`.
Array std(const Operand& x, Axes axes = {}, double correction = 0, bool keepdims = false,
          Loc loc = Loc::current());
/// The same function as loom::std, under a name that never collides with namespace std.
Array stddev(const Operand& x, Axes axes = {}, double correction = 0, bool keepdims = false,
             Loc loc = Loc::current());

/// var / std / stddev over one axis. A template over integer types so that `var(x, {}, 1)` means all
/// axes (an empty brace list is an empty Axes here, not axis 0).
template <std::integral I>
requires(!std::same_as<I, bool>) Array
    var(const Operand& x, I axis, double correction = 0, bool keepdims = false, Loc loc = Loc::current()) {
    return var(x, Axes{static_cast<std::int64_t>(axis)}, correction, keepdims, loc);
}
template <std::integral I>
requires(!std::same_as<I, bool>) Array
    std(const Operand& x, I axis, double correction = 0, bool keepdims = false, Loc loc = Loc::current()) {
    return std(x, Axes{static_cast<std::int64_t>(axis)}, correction, keepdims, loc);
}
template <std::integral I>
requires(!std::same_as<I, bool>) Array
    stddev(const Operand& x, I axis, double correction = 0, bool keepdims = false, Loc loc = Loc::current()) {
    return stddev(x, Axes{static_cast<std::int64_t>(axis)}, correction, keepdims, loc);
}

/// Deleted: a bool in the correction's place. `var(x, {1}, true)` reads like sum's keepdims but would
/// silently mean correction = 1; the correction is a number (NumPy's ddof), keepdims comes after it:
/// `var(x, {1}, 0, true)`.
template <class B>
requires std::same_as<B, bool> Array var(const Operand& x, Axes axes, B correction, bool keepdims = false,
                                         Loc loc = Loc::current())
= delete;
template <class B>
requires std::same_as<B, bool> Array std(const Operand& x, Axes axes, B correction, bool keepdims = false,
                                         Loc loc = Loc::current())
= delete;
template <class B>
requires std::same_as<B, bool> Array stddev(const Operand& x, Axes axes, B correction, bool keepdims = false,
                                            Loc loc = Loc::current())
= delete;
template <std::integral I, class B>
requires(!std::same_as<I, bool> && std::same_as<B, bool>) Array
    var(const Operand& x, I axis, B correction, bool keepdims = false, Loc loc = Loc::current())
= delete;
template <std::integral I, class B>
requires(!std::same_as<I, bool> && std::same_as<B, bool>) Array
    std(const Operand& x, I axis, B correction, bool keepdims = false, Loc loc = Loc::current())
= delete;
template <std::integral I, class B>
requires(!std::same_as<I, bool> && std::same_as<B, bool>) Array
    stddev(const Operand& x, I axis, B correction, bool keepdims = false, Loc loc = Loc::current())
= delete;

/// Softmax along `axis` (default the last), with the maximum subtracted for range:
///     m = max(x, axis, keepdims = true);  e = exp(x - m);  y = e / sum(e, axis, keepdims = true)
/// Integer and bool x are converted to float32 first; float dtypes are kept, float16 and bfloat16 computed
/// in float32 and rounded once at the end. -Inf entries give 0; a row of only -Inf, or one holding +Inf
/// or NaN, gives NaN for the whole row.
Array softmax(const Operand& x, std::int64_t axis = -1, Loc loc = Loc::current());

/// Log of the sum of exponentials along `axis` (default the last), with the maximum shifted out for range:
///     m = max(x, axis, keepdims = true);  c = where(isfinite(m), m, 0)
///     y = log(sum(exp(x - c), axis, keepdims)) + c
/// The result has x's shape without `axis` (keepdims: with it, of extent 1). Integer and bool x are
/// converted to float32 first; float dtypes are kept, float16 and bfloat16 computed in float32 and rounded
/// once at the end. A row of only -Inf gives -Inf, a row holding +Inf (and no NaN) +Inf, a row holding NaN
/// NaN. Errors: an axis out of range, or a zero-length axis (as softmax).
Array logsumexp(const Operand& x, std::int64_t axis = -1, bool keepdims = false, Loc loc = Loc::current());

/// Layer normalization along `axis` (default the last):
///     m = mean(x, axis, keepdims = true);  v = var(x, axis, 0, keepdims = true)
///     y = (((x - m) * rsqrt(v + eps)) * weight) + bias
/// weight and bias broadcast against x by NumPy rules (for the last axis: shape [n], or scalars; pass 1.0
/// and 0.0 for no affine transform). eps is a weak scalar (it takes v's dtype). float16 and bfloat16 x
/// are computed in float32 (m, v, the products and the bias) and rounded once; the result dtype is x's
/// float dtype promoted with weight's and bias's. Errors: weight or bias not broadcasting against x.
Array layernorm(const Operand& x, const Operand& weight, const Operand& bias, double eps,
                std::int64_t axis = -1, Loc loc = Loc::current());

/// RMS normalization along `axis` (default the last):
///     y = (x * rsqrt(mean(x * x, axis, keepdims = true) + eps)) * weight
/// Integer and bool x are converted to float32 first; float16 and bfloat16 x are computed in float32 and
/// rounded once (to x's dtype promoted with weight's). weight broadcasts by NumPy rules; eps is weak.
Array rmsnorm(const Operand& x, const Operand& weight, double eps, std::int64_t axis = -1,
              Loc loc = Loc::current());

/// How a loss combines its per-row values: their mean over the rows that count, their sum, or none (the
/// per-row values, in the labels' shape).
enum class LossReduction : std::uint8_t { Mean, Sum, None };

struct CrossEntropyOptions {
    LossReduction reduction = LossReduction::Mean;
    /// Rows whose label equals it add 0 and are not counted by the mean (PyTorch's default, -100).
    std::int64_t ignore_index = -100;
};

/// Cross-entropy of `logits` [..., C] (classes along the last axis; float16, bfloat16, float32, float64)
/// against integer class labels of shape [...] (int32 or int64), PyTorch's cross_entropy with class indices:
///     loss[i] = logsumexp(x[i, :]) - x[i, label[i]]        (0 where label[i] == ignore_index)
/// reduced by `options.reduction`: Mean divides the sum of the losses by the number of rows not ignored
/// (NaN when every row is ignored, as PyTorch), Sum adds them, None returns them. logsumexp is the DSL's
/// (the maximum shifted out); float16 and bfloat16 logits are computed in float32 and the result rounded
/// once to their dtype. A label outside [0, C) other than ignore_index is never read: it raises a
/// loom::Error naming cross_entropy, the label and the caller's line (at the evaluation on the host, at the
/// next synchronization on a GPU; docs/semantics.md, "Gathers"). Errors when built: logits not of a float
/// dtype or of rank 0, C = 0, labels not int32 or int64, or labels not of the logits' shape without the
/// class axis.
Array cross_entropy(const Operand& logits, const Operand& labels, CrossEntropyOptions options = {},
                    Loc loc = Loc::current());

}  // namespace loom
