// The CPU reference evaluator: runs any Loom graph on host tensors with exactly the semantics of
// docs/semantics.md, and an f64 oracle mode for measuring error. Every GPU result is checked against it.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "loom/codegen/options.hpp"
#include "loom/ir/node.hpp"
#include "loom/ir/reduce_order.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::reference {

/// How float values are computed.
enum class Mode : std::uint8_t {
    /// The numeric contract: every op at its dtype (float16/bfloat16 in float32, rounded once per op),
    /// reductions in the documented order. Bit-identical to constant folding.
    Contract,
    /// Every float dtype is held and computed as float64 (inputs converted exactly, casts between float
    /// dtypes are the identity); integer and bool values are as in Contract. For measuring error: the
    /// results approximate the exact real-number result of the graph. Float results are float64 tensors.
    Oracle,
};

/// Reduction order (docs/semantics.md, "Reduction order"): the constants of loom/ir/reduce_order.hpp.
using loom::kColumnChunk;
using loom::kReduceChunk;
using loom::kReduceLanes;
using loom::kReduceRun;

/// Input tensors by input id (ir::Node::input_id()), replacing the inputs' payloads.
using Overrides = std::unordered_map<std::uint64_t, Tensor>;

/// Evaluates `roots` (any graph built by ir/build.hpp) on the host. An Input node's tensor is
/// `overrides[input_id]` when present, else its payload (a std::shared_ptr<const Tensor::Impl>); tensors
/// on a CUDA device are copied to the host first, host tensors are read in place (their memory at the
/// time of this call). Shared sub-graphs are evaluated once; intermediates are freed after their last
/// use. Whole-array loops run on reference_threads() threads (LOOM_REFERENCE_THREADS, default all cores).
///
/// Returns one contiguous host tensor per root, of the root's dtype (Oracle: float dtypes as float64),
/// never aliasing an input's memory.
///
/// Throws loom::Error naming "reference::evaluate()" when an input has no tensor bound or its tensor's
/// dtype or shape differs from the node's; loom::InternalError when the graph breaks the constructors'
/// invariants.
std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, const Overrides& overrides = {},
                             Mode mode = Mode::Contract);

/// One root.
Tensor evaluate(const ir::NodePtr& root, const Overrides& overrides = {}, Mode mode = Mode::Contract);

/// The unit roundoff taken for the accumulation inside a tensor-core MMA (docs/semantics.md, section 12,
/// "Tensor cores"): 2^-22, four times float32's 2^-24. The hardware's float32 accumulation inside an MMA
/// aligns the addends to the largest and truncates (round toward zero: at most 2^-23 relative per addition),
/// and its order within an MMA is not the fma chain's; twice that covers both.
inline constexpr double kMmaUnit = 0x1p-22;

/// gamma(K, u) = K u / (1 - K u) (infinity once K u >= 1): the componentwise factor of a sum of K products.
double product_gamma(std::int64_t K, double u);

/// The componentwise factor f of a tensor-core product's bound |Ĉ - C| <= f (|A| |B|) (before the result's
/// own rounding; docs/semantics.md, section 12): `Float32` (float16, bfloat16: the operands exact) gamma(K,
/// kMmaUnit); `TF32` 2^-9 + 2^-20 + gamma(K, kMmaUnit) (1 + 2^-9 + 2^-20) (each operand taken as TF32 with
/// a relative error below 2^-10: rounded to nearest on mma.sync, cut toward zero by wgmma); `TF32x3` (3 2^-22
/// + gamma(3K, kMmaUnit)) (1 + 2^-9) (the dropped a_small b_small and the small parts' own rounding, 2^-22
/// each, and 3K products accumulated). Infinite once the gamma's K u reaches 1.
double product_bound_factor(std::int64_t K, ProductPrecision precision = ProductPrecision::Float32);

/// The exact product and the tensor-core bound of docs/semantics.md, section 12, for `a` and `b` with
/// matmul's shapes (1-D operands promoted and squeezed, batch axes broadcast; any dtype, any device, any
/// strides): `value` the product computed in float64 (the operands' values exactly, products of float16,
/// bfloat16 and int8 values exact, sums far closer than the bound), and `bound` = product_bound_factor(K,
/// precision) * (|A| |B|) per output (plus gamma(K + 1, 2^-53) * (|A| |B|), the float64 sums' own error),
/// both contiguous float64 host tensors of the product's shape. Throws loom::Error naming
/// reference::product_bound() when the shapes do not contract.
struct ProductBound {
    Tensor value;
    Tensor bound;
};
ProductBound product_bound(const Tensor& a, const Tensor& b,
                           ProductPrecision precision = ProductPrecision::Float32);

/// A contiguous host copy of `t` converted element by element to `to` with the semantics of a Cast node
/// (docs/semantics.md, "Casts"). Tensors on a CUDA device are copied to the host first.
Tensor cast(const Tensor& t, DType to);

}  // namespace loom::reference
