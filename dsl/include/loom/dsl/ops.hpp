// Free functions and operators for every op of the op table. Each records IR; nothing runs until evaluation.
//
// Operands are Arrays, Tensors or C++ scalars (weakly typed: they take the other operand's dtype; see
// docs/semantics.md). Errors: loom::Error whose message starts with the API name and gives the operands'
// shapes and dtypes and the call's file:line.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <vector>

#include "loom/codegen/options.hpp"
#include "loom/dsl/array.hpp"

namespace loom {

// ---- unary elementwise (result shape = operand shape) ----
#define LOOM_DSL_UNARY(fn) Array fn(const Operand& x, Loc loc = Loc::current());
LOOM_DSL_UNARY(neg)
LOOM_DSL_UNARY(abs)
LOOM_DSL_UNARY(sign)
LOOM_DSL_UNARY(relu)
LOOM_DSL_UNARY(exp)
LOOM_DSL_UNARY(exp2)
LOOM_DSL_UNARY(expm1)
LOOM_DSL_UNARY(log)
LOOM_DSL_UNARY(log2)
LOOM_DSL_UNARY(log1p)
LOOM_DSL_UNARY(sqrt)
LOOM_DSL_UNARY(rsqrt)
LOOM_DSL_UNARY(sin)
LOOM_DSL_UNARY(cos)
LOOM_DSL_UNARY(tan)
LOOM_DSL_UNARY(asin)
LOOM_DSL_UNARY(acos)
LOOM_DSL_UNARY(atan)
LOOM_DSL_UNARY(sinh)
LOOM_DSL_UNARY(cosh)
LOOM_DSL_UNARY(tanh)
LOOM_DSL_UNARY(asinh)
LOOM_DSL_UNARY(acosh)
LOOM_DSL_UNARY(atanh)
LOOM_DSL_UNARY(sigmoid)
LOOM_DSL_UNARY(erf)
/// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) (Hendrycks & Gimpel 2016, exact form).
LOOM_DSL_UNARY(gelu)
/// gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks & Gimpel 2016, tanh form).
LOOM_DSL_UNARY(gelu_tanh)
/// silu(x) = x sigmoid(x) (Elfwing et al. 2017).
LOOM_DSL_UNARY(silu)
LOOM_DSL_UNARY(floor)
LOOM_DSL_UNARY(ceil)
/// Round half to even.
LOOM_DSL_UNARY(round)
LOOM_DSL_UNARY(trunc)
LOOM_DSL_UNARY(logical_not)
LOOM_DSL_UNARY(isnan)
LOOM_DSL_UNARY(isinf)
LOOM_DSL_UNARY(isfinite)
#undef LOOM_DSL_UNARY

/// Converts to `dtype` (float->int truncates toward zero and saturates, NaN -> 0; see docs/semantics.md).
Array astype(const Operand& x, DType dtype, Loc loc = Loc::current());

// ---- binary elementwise (NumPy broadcasting; promotion per docs/semantics.md) ----
#define LOOM_DSL_BINARY(fn) Array fn(const Operand& a, const Operand& b, Loc loc = Loc::current());
LOOM_DSL_BINARY(add)
LOOM_DSL_BINARY(sub)
LOOM_DSL_BINARY(mul)
/// Floats: IEEE division. Integers: truncates toward zero like C++.
LOOM_DSL_BINARY(div)
/// Floor division (Python's //).
LOOM_DSL_BINARY(floor_div)
/// Floor modulo (Python's %): the result has the divisor's sign.
LOOM_DSL_BINARY(mod)
/// Truncated remainder (C++'s %, fmod for floats): the result has the dividend's sign.
LOOM_DSL_BINARY(rem)
LOOM_DSL_BINARY(pow)
LOOM_DSL_BINARY(atan2)
/// Elementwise minimum / maximum; NaN propagates.
LOOM_DSL_BINARY(minimum)
LOOM_DSL_BINARY(maximum)
LOOM_DSL_BINARY(eq)
LOOM_DSL_BINARY(ne)
LOOM_DSL_BINARY(lt)
LOOM_DSL_BINARY(le)
LOOM_DSL_BINARY(gt)
LOOM_DSL_BINARY(ge)
LOOM_DSL_BINARY(logical_and)
LOOM_DSL_BINARY(logical_or)
LOOM_DSL_BINARY(logical_xor)
LOOM_DSL_BINARY(bitwise_and)
LOOM_DSL_BINARY(bitwise_or)
LOOM_DSL_BINARY(bitwise_xor)
LOOM_DSL_BINARY(shift_left)
LOOM_DSL_BINARY(shift_right)
#undef LOOM_DSL_BINARY

// ---- ternary ----
/// where(cond, a, b): a where cond is true (nonzero), else b. Both branches are computed; neither traps.
Array where(const Operand& cond, const Operand& a, const Operand& b, Loc loc = Loc::current());
/// a * b + c with one rounding.
Array fma(const Operand& a, const Operand& b, const Operand& c, Loc loc = Loc::current());
/// min(max(x, lo), hi); NaN propagates.
Array clamp(const Operand& x, const Operand& lo, const Operand& hi, Loc loc = Loc::current());

// ---- views ----
Array broadcast_to(const Operand& x, const Shape& shape, Loc loc = Loc::current());
Array reshape(const Operand& x, Shape shape, Loc loc = Loc::current());
Array permute(const Operand& x, std::vector<std::int64_t> perm, Loc loc = Loc::current());
Array transpose(const Operand& x, Loc loc = Loc::current());

// ---- gathers (docs/semantics.md, "Gathers") ----
// Indices are int32 or int64 Arrays or Tensors (a C++ integer is one int64 index); an index in [-n, 0) counts
// from the end of an axis of extent n. IndexMode::Checked (the default): an index outside [-n, n) is never
// read and raises loom::Error naming the function, the index, the extent and the call's file:line, at the
// evaluation on the host and at the next synchronization on a GPU. IndexMode::Clamp: such an index reads
// the nearest end (0 or n - 1) and raises nothing. Gathers fuse with their elementwise producers and
// consumers: the load of `x` takes its index from the kernel's value of `idx`.
using IndexMode = ir::IndexMode;
/// NumPy's take: x.shape[:axis] + idx.shape + x.shape[axis+1:], element [a..., j..., b...] =
/// x[a..., idx[j...], b...]. Throws loom::Error naming take for a rank-0 `x`, an axis out of range, an index
/// dtype other than int32 and int64, or a non-empty index into an axis of extent 0.
Array take(const Operand& x, const Operand& idx, std::int64_t axis, IndexMode mode = IndexMode::Checked,
           Loc loc = Loc::current());
/// NumPy's take_along_axis: `idx` has x's rank; off `axis` x and idx broadcast against each other; element i
/// of the result is x[i with i[axis] replaced by idx[i]].
Array take_along_axis(const Operand& x, const Operand& idx, std::int64_t axis,
                      IndexMode mode = IndexMode::Checked, Loc loc = Loc::current());
/// PyTorch's index_select: take along `axis` with an index of rank 0 or 1.
Array index_select(const Operand& x, std::int64_t axis, const Operand& idx,
                   IndexMode mode = IndexMode::Checked, Loc loc = Loc::current());
/// idx.shape + [classes] of `dtype` (int64 by default, as PyTorch's): 1 where the last coordinate is the
/// index (negative indices counted from the end of the classes), else 0; indices checked or clamped as
/// take's.
Array one_hot(const Operand& idx, std::int64_t classes, DType dtype = DType::Int64,
              IndexMode mode = IndexMode::Checked, Loc loc = Loc::current());

// ---- scatters (docs/semantics.md, "Scatters") ----
// Functional: each returns a new array of x's shape and dtype (x is not modified). Indices are checked or
// clamped as the gathers' are (IndexMode above), and an out-of-range index raises loom::Error naming the
// function and the call's file:line. A scatter is a kernel of its own: x, the indices and the values are read
// from memory (or views of them).
/// x with out[i with i[axis] = idx[i]] = values[i] for every position i of `values`: `values` has x's dtype
/// and rank and x's extents off `axis`; `idx` (int32 or int64) broadcasts to the values' shape. Of the values
/// that land on one element, the one at the largest position along the axis wins. Throws loom::Error naming
/// scatter, the operands' shapes and dtypes and the call's file:line for operands that do not fit.
Array scatter(const Operand& x, const Operand& idx, const Operand& values, std::int64_t axis,
              IndexMode mode = IndexMode::Checked, Loc loc = Loc::current());
struct ScatterOptions {
    /// On a GPU, add the values with atomics: faster on heavily duplicated targets, but float results then
    /// depend on timing (not reproducible, not the reference's bits). The host ignores it.
    bool atomic = false;
    IndexMode mode = IndexMode::Checked;
};
/// x plus, at each element t, the sum of the values whose index names t (shapes as scatter's). The values
/// of one target are added in ascending position, in chunks of 256 in sequence whose partials a pairwise
/// tree combines (the reductions' column order), then added to x[t] once; float16 and bfloat16 accumulate in
/// float32 and round once; integers and bool in int64, wrapping, converted back as a cast does. An element
/// no value lands on keeps x's bits. Every back end gives the reference's bits (but options.atomic on a GPU).
Array scatter_add(const Operand& x, const Operand& idx, const Operand& values, std::int64_t axis,
                  ScatterOptions options = {}, Loc loc = Loc::current());
/// PyTorch's index_add: `index` 1-D (int32 or int64) of length source.shape[axis]; source[..., j, ...] is
/// added to x[..., index[j], ...]. scatter_add with the index broadcast along the axis: the same order and
/// bits. Errors name index_add.
Array index_add(const Operand& x, const Operand& index, const Operand& source, std::int64_t axis,
                ScatterOptions options = {}, Loc loc = Loc::current());

// ---- reductions: `axes` empty = all axes; negative axes count from the end ----
// The one-axis form is a template over integer types so that `sum(x, {}, true)` means all axes: an empty
// brace list would otherwise convert to an integer axis 0 in preference to an empty Axes.
using Axes = std::vector<std::int64_t>;
#define LOOM_DSL_REDUCE(fn)                                                                      \
    Array fn(const Operand& x, Axes axes = {}, bool keepdims = false, Loc loc = Loc::current()); \
    template <std::integral I>                                                                   \
    requires(!std::same_as<I, bool>) Array fn(const Operand& x, I axis, bool keepdims = false,   \
                                              Loc loc = Loc::current()) {                        \
        return fn(x, Axes{static_cast<std::int64_t>(axis)}, keepdims, loc);                      \
    }
LOOM_DSL_REDUCE(sum)
LOOM_DSL_REDUCE(prod)
LOOM_DSL_REDUCE(min)
LOOM_DSL_REDUCE(max)
LOOM_DSL_REDUCE(mean)
LOOM_DSL_REDUCE(argmin)
LOOM_DSL_REDUCE(argmax)
LOOM_DSL_REDUCE(any)
LOOM_DSL_REDUCE(all)
#undef LOOM_DSL_REDUCE

// ---- matrix products ----
/// The matrix product with NumPy's matmul rules (docs/semantics.md, section 12): `a` [..., M, K] times `b`
/// [..., K, N] gives [..., M, N], the leading (batch) axes broadcasting; a 1-D `a` [K] is a row [1, K] and a
/// 1-D `b` [K] a column [K, 1], whose axis the result drops ([K] x [K] is rank 0). Transposed, sliced and
/// broadcast operands are read as views, with no copy. dtypes promote as for binary ops (loom::promote);
/// float16, bfloat16, float32 and float64 keep the promoted dtype (halves accumulate in float32 and round
/// once), int8 x int8 gives int32, wrapping and exact. The order of the sums is fixed by the shapes alone
/// (chunks of 8192 along K, kProductChunk; fma in ascending k, the chunk partials in the reductions' pairwise
/// tree). Throws loom::Error naming matmul, both shapes and dtypes and the call's file:line for a scalar
/// operand, contraction extents that differ, batch axes that do not broadcast, or dtypes that promote to
/// anything else.
Array matmul(const Operand& a, const Operand& b, Loc loc = Loc::current());
/// The same product with a tile hint for its GPU kernel: `matmul(a, b, tile(128, 128, 32))` asks for blocks
/// of 128 x 128 outputs stepping 32 along K (0 in a field: Loom chooses). The hint changes the schedule,
/// never the bits (the order is the shapes' alone). A hint the kernel cannot honour raises loom::Error when
/// the product is planned, naming the limit it breaks (shared memory per block, registers per thread, or a
/// divisibility the kernel needs); a negative extent raises it here.
Array matmul(const Operand& a, const Operand& b, const TileHint& hint, Loc loc = Loc::current());

// ---- attention ----
/// Which keys attention's causal mask hides (docs/semantics.md, "Attention"): TopLeft, query t sees keys
/// s <= t (PyTorch's is_causal); BottomRight, query t sees keys s <= t + S - T (FlashAttention's: the last
/// query sees every key, as decoding against a KV cache needs).
using CausalMask = ir::CausalMask;
struct AttentionOptions {
    CausalMask causal = CausalMask::None;
    /// Multiplies the scores q·kᵀ; unset: 1/sqrt(D). Rounded to float32.
    std::optional<double> scale;
    /// Added to the scaled scores; broadcasts to [B..., H, T, S], of q's dtype. A key whose bias is -inf is
    /// masked: absent from the row, so an Inf or NaN in its value never reaches the output. Unset: no bias;
    /// an empty Array is an error.
    std::optional<Array> bias;
};
/// Scaled dot-product attention over heads as one kernel, the scores never stored: for q [B..., H, T, D],
/// k and v [B..., Hkv, S, D] (float32, float16 or bfloat16; H a multiple of Hkv, query head h reading kv
/// head h / (H / Hkv): grouped-query attention), the result [B..., H, T, D] of q's dtype is
/// softmax(q kᵀ · scale + bias, masked) v. Its order is fixed by the shapes alone (docs/semantics.md,
/// "Attention"): float32 gives the reference's bits on every back end; float16 and bfloat16 run on tensor
/// cores within the stated bound. A row whose every key is masked gives 0 (as PyTorch's
/// scaled_dot_product_attention; softmax of such a row gives NaN). Views (heads sliced from a fused qkv
/// projection, permuted heads) are read in place. Throws loom::Error naming attention, the shapes and dtypes
/// and the call's file:line for operands that do not fit, D outside 1 to 256, or a scale that is not finite.
Array attention(const Operand& q, const Operand& k, const Operand& v, const AttentionOptions& options = {},
                Loc loc = Loc::current());

// ---- scans (docs/semantics.md, "Scans"): along one axis, negative counting from the end ----
struct ScanOptions {
    /// Element i combines elements 0 to i - 1, and element 0 is the op's identity (0, 1, the dtype's lowest
    /// or -inf, its highest or +inf, -inf for logcumsumexp), instead of elements 0 to i.
    bool exclusive = false;
};
/// The running sum along `axis`, of x's shape. bool and integers accumulate in int64 (wrapping) and give
/// int64; float16 and bfloat16 accumulate in float32 and round each output once. The order of the additions
/// is fixed by the shape alone (tiles of 2048 elements, a tree over threads, warps and tiles), so every back
/// end gives the reference's bits. Throws loom::Error naming cumsum, x's shape and dtype and the call's
/// file:line for an axis out of range.
Array cumsum(const Operand& x, std::int64_t axis, ScanOptions options = {}, Loc loc = Loc::current());
/// The running product, typed and ordered as cumsum.
Array cumprod(const Operand& x, std::int64_t axis, ScanOptions options = {}, Loc loc = Loc::current());
/// The running maximum, of x's dtype; a NaN makes every later element NaN.
Array cummax(const Operand& x, std::int64_t axis, ScanOptions options = {}, Loc loc = Loc::current());
/// The running minimum, of x's dtype; a NaN makes every later element NaN.
Array cummin(const Operand& x, std::int64_t axis, ScanOptions options = {}, Loc loc = Loc::current());
/// log(sum of exp) of elements 0 to i, floats only (halves in float32), combined pairwise as
/// m + log(1 + exp(n - m)) with m and n the larger and smaller operand, from the exp and log every back end
/// shares. Throws loom::Error for integer and bool operands.
Array logcumsumexp(const Operand& x, std::int64_t axis, ScanOptions options = {}, Loc loc = Loc::current());

// ---- operators ----
Array operator+(const Operand& a, const Operand& b);
Array operator-(const Operand& a, const Operand& b);
Array operator*(const Operand& a, const Operand& b);
Array operator/(const Operand& a, const Operand& b);
/// C++ semantics: truncated remainder (see rem).
Array operator%(const Operand& a, const Operand& b);
Array operator-(const Operand& a);
Array operator==(const Operand& a, const Operand& b);
Array operator!=(const Operand& a, const Operand& b);
Array operator<(const Operand& a, const Operand& b);
Array operator<=(const Operand& a, const Operand& b);
Array operator>(const Operand& a, const Operand& b);
Array operator>=(const Operand& a, const Operand& b);
Array operator&(const Operand& a, const Operand& b);
Array operator|(const Operand& a, const Operand& b);
Array operator^(const Operand& a, const Operand& b);
Array operator<<(const Operand& a, const Operand& b);
Array operator>>(const Operand& a, const Operand& b);
Array operator!(const Operand& a);
Array operator&&(const Operand& a, const Operand& b) = delete;  // use logical_and: both sides are evaluated
Array operator||(const Operand& a, const Operand& b) = delete;  // use logical_or

}  // namespace loom
