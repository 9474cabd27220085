// Internals of the CPU reference evaluator shared by its source files: strided gathers, per-node kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/ir/node.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::reference::detail {

/// Elements per block of the whole-array loops (each thread gathers non-contiguous operands one block
/// at a time into its scratch buffers).
inline constexpr std::int64_t kBlock = 16384;

/// A host tensor's elements as a coalesced strided walk: dimensions of extent 1 dropped, adjacent
/// dimensions merged where the strides allow. Rank 0 means a single element.
struct Layout {
    const char* base = nullptr;  // address of logical element 0
    std::size_t esz = 1;         // bytes per element
    int rank = 0;
    std::int64_t shape[kMaxRank] = {};
    std::int64_t strides[kMaxRank] = {};  // elements
    bool contiguous = false;              // row-major with no gaps: element i at base + i * esz

    static Layout of(const Tensor& t);
};

/// Copies logical elements [begin, begin + n) (row-major order) of `l` to `dst`, contiguously.
void gather(const Layout& l, std::int64_t begin, std::int64_t n, void* dst);

/// A contiguous host copy of `t` (always a new buffer).
Tensor materialize(const Tensor& t);

/// The dtype in which a node's values are held in `mode`: Oracle holds every float dtype as float64.
inline DType effective(DType d, Mode mode) {
    return mode == Mode::Oracle && is_float(d) ? DType::Float64 : d;
}

/// Evaluates an elementwise node whose operands' values are `args` (host tensors of the operands'
/// effective dtypes, any strides); the result is a new contiguous tensor of dtype `out`.
Tensor eval_elementwise_node(const ir::Node& n, const std::vector<Tensor>& args, DType out);

/// Converts every element of `t` to `to` with the Cast semantics; a new contiguous tensor.
Tensor cast_tensor(const Tensor& t, DType to);

/// Evaluates a reduction node on the value `x` of its operand (effective dtype, any strides) in the
/// reduction order of docs/semantics.md; the result is a new contiguous tensor of dtype `out`.
Tensor eval_reduction_node(const ir::Node& n, const Tensor& x, DType out);

/// Evaluates a matrix product node on the values `a` [B..., M, K] and `b` [B..., K, N] of its operands (one
/// effective dtype, any strides: transposed, sliced and broadcast views are read in place) in the order of
/// docs/semantics.md, section 12; the result is a new contiguous tensor of dtype `out`.
Tensor eval_product_node(const ir::Node& n, const Tensor& a, const Tensor& b, DType out);

/// Evaluates a gather node (ir::Op::Gather) on the values `x` and `idx` of its operands (any strides); the
/// result is a new contiguous tensor of dtype `out` (x's). Throws loom::Error (ir::gather_error_message) at
/// the first index, in row-major order, outside [-n, n) in checked mode.
Tensor eval_gather_node(const ir::Node& n, const Tensor& x, const Tensor& idx, DType out);

/// Evaluates an attention node (ir::Op::Attention) on the values of its operands q, k, v and the optional
/// bias (any strides) in the order of docs/semantics.md, "Attention"; the result is a new contiguous tensor
/// of dtype `out` (q's).
Tensor eval_attention_node(const ir::Node& n, const std::vector<Tensor>& args, DType out);

/// Evaluates a scan node (cumsum, cumprod, cummax, cummin, logcumsumexp) on the value `x` of its operand (its
/// effective dtype, any strides) in the order of docs/semantics.md, "Scans"; the result is a new contiguous
/// tensor of dtype `out`.
Tensor eval_scan_node(const ir::Node& n, const Tensor& x, DType out);

/// Evaluates a scatter node (scatter, scatter_add) on the values of its operands x, idx and values (their
/// effective dtypes, any strides) in the order of docs/semantics.md, "Scatters"; the result is a new
/// contiguous tensor of dtype `out` (x's). Throws loom::Error naming the DSL function for the first
/// out-of-range index in row-major order of the values (Checked mode).
Tensor eval_scatter_node(const ir::Node& n, const Tensor& x, const Tensor& idx, const Tensor& values,
                         DType out);

}  // namespace loom::reference::detail
