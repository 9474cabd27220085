// Node constructors: check operands, apply the typing rules and NumPy broadcasting of docs/semantics.md,
// insert explicit Cast and BroadcastTo nodes, fold constants where IEEE-754 allows, and intern.
//
// After construction every elementwise node has operands of exactly its own shape, and operands of the
// dtype its rule computes in (Arith, Compare, Clamp, FloatMath, FloatArith: all the same dtype; Shift: the
// left operand's; Select: a bool condition and two operands of the result dtype). Emitters and the
// reference evaluator rely on this and never broadcast or promote themselves.
//
// Errors: loom::Error whose message starts with the API name (the op's name) and gives the operands'
// shapes and dtypes and the caller's file:line.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "loom/ir/node.hpp"

namespace loom::ir {

using Loc = std::source_location;

/// A tensor argument of the graph. `label` is the name printed in IR and generated code.
/// `payload` is whatever the caller binds it to (see NodeDesc::payload); each call makes a new input.
NodePtr input(DType dtype, const Shape& shape, std::string label, std::shared_ptr<const void> payload = {},
              Loc loc = Loc::current());
/// A rank-0 run-time scalar (a kernel parameter). `v` must already be a value of `dtype` (see
/// make_scalar_value); a new value never causes a recompile.
NodePtr scalar(ScalarValue v, DType dtype, Loc loc = Loc::current());
/// A rank-0 compile-time constant baked into the generated code.
NodePtr constant(ScalarValue v, DType dtype, Loc loc = Loc::current());
/// Throws loom::Error naming `api` and `loc` for a shape of more than kMaxRank axes, a negative extent, or
/// more elements than a signed 64-bit count holds.
void check_shape(std::string_view api, const Shape& shape, Loc loc = Loc::current());
/// check_shape(), and the bytes of `shape` in `dtype` must fit a signed 64-bit count too.
void check_shape(std::string_view api, const Shape& shape, DType dtype, Loc loc = Loc::current());
/// Where a factory leaf (iota, fill) is made when it is evaluated with no input tensor: -1 the host, k >= 0
/// CUDA device k. Combined with tensors, a factory takes their device: it has no memory of its own.
inline constexpr std::int64_t kHostDeviceCode = -1;
/// An int64 array of `shape` whose every element is its coordinate along `axis` (negative counts from
/// the end): the lazy index of arange, linspace and eye, computed in the kernel that uses it. `device`: see
/// kHostDeviceCode. Throws loom::Error naming `api` for a bad shape or axis.
NodePtr iota(const Shape& shape, std::int64_t axis, std::int64_t device, std::string_view api = "iota",
             Loc loc = Loc::current());
/// The int64 array of `shape` whose every element is its row-major index (the sum of its coordinates times
/// the contiguous strides; 0 for shape []): an iota over the element count reshaped to `shape`, computed in
/// the kernel that uses it. `device`:
/// see kHostDeviceCode. Throws loom::Error naming `api` for a bad shape.
NodePtr row_major_index(const Shape& shape, std::int64_t device, std::string_view api,
                        Loc loc = Loc::current());
/// The lazy random array of `shape`: element i (row-major) is the random op `op` (RandomUniform,
/// RandomNormal) of (i, seed) as `dtype`, the seed a run-time scalar (a new seed never recompiles).
/// docs/semantics.md, "Random numbers". Throws loom::Error naming `api` for a bad shape or a dtype that is
/// not a float.
NodePtr random_values(Op op, const Shape& shape, std::uint64_t seed, DType dtype, std::int64_t device,
                      std::string_view api, Loc loc = Loc::current());
/// An array of `shape` holding `v` (a value of `dtype`) in every element: the lazy form of full, zeros and
/// ones. Lowered to a broadcast scalar (a kernel parameter) before planning (lower_factories). `device`:
/// see kHostDeviceCode.
NodePtr fill(ScalarValue v, DType dtype, const Shape& shape, std::int64_t device,
             std::string_view api = "full", Loc loc = Loc::current());
/// The device code of a factory leaf (Iota, Fill).
inline std::int64_t factory_device(const Node& n) {
    return n.ints().back();
}

/// Converts a C++ double to the nearest value of `dtype`, exactly as a cast would (floats round to
/// nearest even; integers: throws loom::Error naming `api` when the value is not an integer in range).
ScalarValue make_scalar_value(double v, DType dtype, std::string_view api, Loc loc);
/// Converts a C++ integer to a value of `dtype`; throws loom::Error naming `api` when out of range for an
/// integer dtype.
ScalarValue make_scalar_value(std::int64_t v, DType dtype, std::string_view api, Loc loc);

NodePtr unary(Op op, NodePtr a, Loc loc = Loc::current());
NodePtr cast(NodePtr a, DType to, Loc loc = Loc::current());
NodePtr binary(Op op, NodePtr a, NodePtr b, Loc loc = Loc::current());
/// A random op (rule Random: RandomUniform, RandomNormal) of element indices `index` and a `seed` (integer
/// dtypes or bool, cast to int64, broadcast per NumPy) giving values of the float `dtype`
/// (docs/semantics.md, "Random numbers"). binary() of a random op is this with float32. Throws loom::Error
/// naming the op for float operands or a dtype that is not a float.
NodePtr random(Op op, NodePtr index, NodePtr seed, DType dtype, Loc loc = Loc::current());
NodePtr ternary(Op op, NodePtr a, NodePtr b, NodePtr c, Loc loc = Loc::current());

/// NumPy broadcast of `a` to `shape` (rank may grow; extents of 1 stretch).
NodePtr broadcast_to(NodePtr a, const Shape& shape, Loc loc = Loc::current());
/// Same elements in row-major order, new shape; one extent may be -1 (inferred).
NodePtr reshape(NodePtr a, Shape shape, Loc loc = Loc::current());
/// Output dimension k is input dimension perm[k]; negative entries count from the end.
NodePtr permute(NodePtr a, std::vector<std::int64_t> perm, Loc loc = Loc::current());
/// Swaps the last two dimensions (rank >= 2).
NodePtr transpose(NodePtr a, Loc loc = Loc::current());
/// One SliceSpec (loom/ir/shape.hpp) per leading dimension. An index outside [-extent, extent] or a step of 0
/// is an error. Missing trailing dimensions are taken whole.
NodePtr slice(NodePtr a, const std::vector<SliceSpec>& spec, Loc loc = Loc::current());
/// Reduction over `axes` (empty = all axes; negative axes count from the end; repeats are an error).
NodePtr reduce(Op op, NodePtr a, std::vector<std::int64_t> axes, bool keepdims, Loc loc = Loc::current());

/// The matrix product of `a` and `b` with NumPy's matmul rules (docs/semantics.md, section 12): operands of
/// rank 2 or more are stacks of [M, K] and [K, N] matrices whose leading (batch) axes broadcast; a 1-D `a`
/// [K] is taken as [1, K] and a 1-D `b` [K] as [K, 1], and that axis is dropped from the result. The dtypes
/// promote as for binary ops (loom::promote); the promoted dtype must be float16, bfloat16, float32,
/// float64 (the result keeps it) or int8 (the result is int32). The node made is an Op::MatMul of operands
/// [B..., M, K] and [B..., K, N] (explicit broadcast_to, permute and cast nodes where the operands differ)
/// giving [B..., M, N], under a reshape when a vector's axis is dropped.
/// Throws loom::Error naming matmul, both operands' shapes and dtypes and `loc` for a rank-0 operand,
/// contraction extents that differ, batch axes that do not broadcast, and a dtype products do not take.
/// `tile`: the user's tile hint for this product (rows, columns and depth of a block's tile; 0: the planner
/// chooses), kept as the node's ints {rows, cols, depth} (none without a hint); a negative extent is an
/// error. Whether a GPU kernel can honour it is decided when planning (codegen/matmul_plan.hpp).
struct ProductTile {
    std::int64_t rows = 0, cols = 0, depth = 0;
    bool empty() const { return rows == 0 && cols == 0 && depth == 0; }
};
NodePtr matmul(NodePtr a, NodePtr b, Loc loc = Loc::current(), ProductTile tile = {});
/// The tile hint of a product node (empty without one).
inline ProductTile product_tile(const Node& n) {
    return n.ints().size() == 3 ? ProductTile{n.ints()[0], n.ints()[1], n.ints()[2]} : ProductTile{};
}

/// Gathers (docs/semantics.md, "Gathers"). The node: out[i] = x[i with i[axis] replaced by idx[i]], `x` and
/// `idx` (int32 or int64) of one rank and equal off `axis` (every broadcast an explicit view), the result of
/// idx's shape and x's dtype; an index in [-n, 0) counts from the end of the axis (extent n); one outside
/// [-n, n) raises loom::Error when evaluated (IndexMode::Checked) or is moved to the nearest end (Clamp).
/// `api` is the function named in errors. Throws loom::Error for a non-empty index into an axis of extent 0;
/// InternalError for operands that do not fit.
NodePtr gather(NodePtr x, NodePtr idx, int axis, IndexMode mode, GatherApi api, Loc loc = Loc::current());
/// The position a gather reads for index `v` into an axis of `extent` (> 0) elements: v + extent for v in
/// [-extent, 0), v for v in [0, extent); outside, 0 or extent - 1 (the nearer end) in Clamp mode and -1 in
/// Checked mode (the caller raises gather_error_message). The one rule of every back end.
inline std::int64_t gather_index(std::int64_t v, std::int64_t extent, IndexMode mode) {
    if (v < 0) v += extent;
    if (v >= 0 && v < extent) return v;
    if (mode == IndexMode::Checked) return -1;
    return v < 0 ? 0 : extent - 1;
}
/// The message of the loom::Error of an out-of-range index `v` of gather node `n`: the DSL function, the
/// index, the extent and the user's file:line ("take(): index 7 is out of range for an axis of extent 5
/// (valid: -5 to 4) (app.cpp:12)").
std::string gather_error_message(const Node& n, std::int64_t v);
std::string gather_error_message(GatherApi api, std::int64_t v, std::int64_t extent, const Loc& loc);
/// Where a kernel records its first out-of-range index of a checked gather (16 bytes that the runtime owns
/// and zeroes): the kernel that sets `flag` from 0 to 1 (an atomic compare-and-swap) writes `id` and `value`.
struct GatherErrorWord {
    std::uint32_t flag = 0;
    std::uint32_t id = 0;    // gather_error_id of the gather
    std::int64_t value = 0;  // the index as the user gave it
};
/// A number for checked gather `n` that kernels record in the error word: the same for every gather of one
/// function, extent and call site (a process-wide table that only grows by distinct call sites).
std::uint32_t gather_error_id(const Node& n);
/// The message of gather_error_id `id` for the index `value` (gather_error_message); InternalError for an
/// unknown id.
std::string gather_error_message(std::uint32_t id, std::int64_t value);
/// NumPy's take: x.shape[:axis] + idx.shape + x.shape[axis+1:], element [a, j, b] = x[a, idx[j], b] (axis
/// negative counts from the end). Throws loom::Error naming take for a rank-0 `x`, an axis out of range, an
/// index dtype other than int32 and int64, or a result of more than kMaxRank axes.
NodePtr take(NodePtr x, NodePtr idx, std::int64_t axis, IndexMode mode = IndexMode::Checked,
             Loc loc = Loc::current());
/// NumPy's take_along_axis: `idx` of x's rank; off `axis` x and idx broadcast against each other; the result
/// has the broadcast shape with idx's extent along `axis`.
NodePtr take_along_axis(NodePtr x, NodePtr idx, std::int64_t axis, IndexMode mode = IndexMode::Checked,
                        Loc loc = Loc::current());
/// PyTorch's index_select: take with an index of rank 0 or 1.
NodePtr index_select(NodePtr x, std::int64_t axis, NodePtr idx, IndexMode mode = IndexMode::Checked,
                     Loc loc = Loc::current());
/// idx.shape + [classes] of `dtype`: 1 where the last coordinate is the (normalized) index, else 0. The
/// indices are checked (or clamped) as take's are.
NodePtr one_hot(NodePtr idx, std::int64_t classes, DType dtype, IndexMode mode = IndexMode::Checked,
                Loc loc = Loc::current());

/// Attention (docs/semantics.md, "Attention"): softmax(q kᵀ · scale + bias, masked) v over heads, one node.
/// q is [B..., H, T, D], k and v [B..., Hkv, S, D] (the batch axes B... equal to q's, H a multiple of Hkv:
/// query head h reads kv head h / (H / Hkv)), all of one float dtype (float16, bfloat16 or float32), and
/// D from 1 to kAttentionMaxHeadDim; `bias` (null: none) is an array of q's dtype that broadcasts to
/// [B..., H, T, S] (a padding mask is a bias of -inf), made an explicit view here. The result is
/// [B..., H, T, D] of q's dtype. `scale` is rounded to float32 (its default, 1/sqrt(D), is the caller's).
/// Throws loom::Error naming attention, the operands' shapes and dtypes and `loc` for ranks below 3, shapes
/// or dtypes that do not fit, a scale that is not finite, or a mask alignment outside CausalMask.
inline constexpr std::int64_t kAttentionMaxHeadDim = 256;
/// The keys of one block of the float32 order: the online softmax's (m, l, o) update takes them together.
inline constexpr std::int64_t kAttentionKeyBlock = 64;
/// The runs of 4 keys whose partial sums the block's row sum combines (the reductions' row order).
inline constexpr int kAttentionKeyRuns = 16;
/// Decoding (few queries, many keys): attention of at most kAttentionSplitQueries queries over more than
/// kAttentionKeyChunk keys cuts the keys into chunks of kAttentionKeyChunk (8 key blocks); each chunk runs
/// the order from the initial state, and the chunks' (m, l, o) states combine in the reductions' pairwise
/// tree (docs/semantics.md, "Attention", "Decoding"). A kernel can then share one row's keys among blocks.
inline constexpr std::int64_t kAttentionKeyChunk = 512;
inline constexpr std::int64_t kAttentionSplitQueries = 16;
/// The key chunks of the order for T queries over S keys: 1 (the keys in one sequence) unless
/// T <= kAttentionSplitQueries and S > kAttentionKeyChunk, then ceil(S / kAttentionKeyChunk).
inline std::int64_t attention_key_chunks(std::int64_t T, std::int64_t S) {
    if (T > kAttentionSplitQueries || S <= kAttentionKeyChunk) return 1;
    return (S + kAttentionKeyChunk - 1) / kAttentionKeyChunk;
}
NodePtr attention(NodePtr q, NodePtr k, NodePtr v, NodePtr bias, CausalMask causal, double scale,
                  Loc loc = Loc::current());
/// The causal mask of an attention node (its ints[0]) and its scale (a float32 value).
inline CausalMask attention_causal(const Node& n) {
    return static_cast<CausalMask>(n.ints().at(0));
}
inline float attention_scale(const Node& n) {
    return static_cast<float>(n.value().f);
}
/// "scale=0.125 causal=top_left bias": an attention node's attributes, as printed and explained.
std::string attention_attributes(const Node& n);
/// Whether key s is visible to query t under mask `m` for T queries and S keys (docs/semantics.md,
/// "Attention"): TopLeft, s <= t; BottomRight, s <= t + S - T.
inline bool attention_visible(CausalMask m, std::int64_t t, std::int64_t s, std::int64_t T, std::int64_t S) {
    if (m == CausalMask::TopLeft) return s <= t;
    if (m == CausalMask::BottomRight) return s <= t + S - T;
    return true;
}

/// A scan along one axis (docs/semantics.md, "Scans"): `op` one of cumsum, cumprod, cummax, cummin and
/// logcumsumexp; `axis` counts from the end when negative; the result has x's shape. Element i along the
/// axis combines elements 0 to i, or, `exclusive`, 0 to i - 1 (the first element then the op's identity).
/// cumsum and cumprod of bool and integers give int64; the others keep x's dtype. Throws loom::Error naming
/// the op, x's shape and dtype and `loc` for an axis out of range (a rank-0 x has none) or, for
/// logcumsumexp, a dtype that is not a float.
NodePtr scan(Op op, NodePtr x, std::int64_t axis, bool exclusive, Loc loc = Loc::current());
/// The elements of one tile of a scan's row: 256 threads of 8 elements (the contract's order).
inline constexpr std::int64_t kScanTile = 2048;
inline constexpr int kScanThreadElements = 8;
inline constexpr int kScanThreads = 256;
/// The axis of a scan node (its ints[0], normalized) and whether it is exclusive (ints[1]).
inline int scan_axis(const Node& n) {
    return static_cast<int>(n.ints().at(0));
}
inline bool scan_exclusive(const Node& n) {
    return n.ints().at(1) != 0;
}
/// The result dtype of scan `op` over `x`: int64 for cumsum and cumprod of bool and integers, else x's.
DType scan_result_dtype(Op op, DType x);
/// The identity that opens an exclusive scan `op` whose result has dtype `out`: 0 for cumsum, 1 for cumprod,
/// -inf for cummax and logcumsumexp and +inf for cummin of floats, out's lowest and highest value for cummax
/// and cummin of bool and integers (ScalarValue::is_float tells which). Shared by the reference and the
/// kernels.
ScalarValue scan_identity(Op op, DType out);
/// "axis=1 exclusive": a scan node's attributes, as printed and explained.
std::string scan_attributes(const Node& n);

/// Scatters (docs/semantics.md, "Scatters"). The node (op Scatter or ScatterAdd): x, idx (int32 or int64) of
/// values' shape and values of x's dtype and rank, equal to x off `axis`; the result has x's shape and dtype.
/// scatter: out is x with out[i with i[axis] = idx[i]] = values[i], the largest position along the axis
/// winning among duplicates; scatter_add: out[t] = x[t] + S(t), S(t) the sum of the values whose index is t
/// in ascending position, chunks of kColumnChunk in sequence combined by pairwise_tree (reduce_order.hpp),
/// accumulated as sum's (float32 for halves, int64 wrapping for integers), and x[t] itself where no value
/// lands. Indices count from the end when negative, and one outside [-n, n) raises loom::Error when
/// evaluated (IndexMode::Checked) or is moved to the nearest end (Clamp), as a gather's (gather_index,
/// gather_error_message). `api` is the function named in errors; `atomic` (scatter_add only) lets a GPU add
/// with atomics (not reproducible). Throws loom::Error for values into an axis of extent 0; InternalError
/// for operands that do not fit.
NodePtr scatter_node(Op op, NodePtr x, NodePtr idx, NodePtr values, int axis, IndexMode mode, GatherApi api,
                     bool atomic, Loc loc = Loc::current());
/// scatter(x, idx, values, axis): `idx` broadcasts to values' shape (NumPy's rules); `axis` counts from the
/// end when negative. Throws loom::Error naming scatter, the operands' shapes and dtypes and `loc` for a
/// rank-0 x, an axis out of range, an index dtype other than int32 and int64, values of another dtype or
/// rank or other extents than x's off the axis, an index that does not broadcast to the values' shape.
NodePtr scatter(NodePtr x, NodePtr idx, NodePtr values, std::int64_t axis,
                IndexMode mode = IndexMode::Checked, Loc loc = Loc::current());
/// scatter_add(x, idx, values, axis): as scatter, the values summed into their targets.
NodePtr scatter_add(NodePtr x, NodePtr idx, NodePtr values, std::int64_t axis,
                    IndexMode mode = IndexMode::Checked, bool atomic = false, Loc loc = Loc::current());
/// PyTorch's index_add(x, axis, index, source): `index` 1-D of length source.shape[axis], source of x's
/// dtype and rank and x's extents off the axis; scatter_add with the index broadcast along the axis (the
/// same node, order and bits). Errors name index_add.
NodePtr index_add(NodePtr x, NodePtr index, NodePtr source, std::int64_t axis,
                  IndexMode mode = IndexMode::Checked, bool atomic = false, Loc loc = Loc::current());
/// A scatter node's attributes: the axis (ints[0]), the index mode, the DSL function, atomic.
inline int scatter_axis(const Node& n) {
    return static_cast<int>(n.ints().at(0));
}
inline IndexMode scatter_mode(const Node& n) {
    return static_cast<IndexMode>(n.ints().at(1));
}
inline GatherApi scatter_api(const Node& n) {
    return static_cast<GatherApi>(n.ints().at(2));
}
inline bool scatter_atomic(const Node& n) {
    return n.ints().at(3) != 0;
}
/// "axis=0 clamp atomic (scatter_add)": a scatter node's attributes, as printed and explained.
std::string scatter_attributes(const Node& n);

/// "add(): " prefix helpers for error messages: "[4096, 512] float32".
std::string describe(const Node& n);

}  // namespace loom::ir
