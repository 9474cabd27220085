// The CPU reference evaluator: runs any Loom graph on host tensors with exactly the semantics of
// docs/semantics.md, and an f64 oracle mode for measuring error. Every GPU result is checked against it.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "loom/codegen/options.hpp"
#include "loom/ir/node.hpp"
#include "loom/ir/op.hpp"
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

/// The componentwise bound of attention on tensor cores (codegen AttentionPath::Mma: float16 and bfloat16;
/// docs/semantics.md, "Attention in float16 and bfloat16 on tensor cores"), for q [B..., H, T, D], k and v
/// [B..., Hkv, S, D] and an optional bias broadcasting to [B..., H, T, S] (any device, any strides; of
/// attention's dtypes), a causal mask and the float32 scale: `value` the attention computed in float64 from
/// the operands' values (0 for a row with no visible key), and `bound` such that a GPU result g and the
/// reference's result r (reference::evaluate, rounded to q's dtype) satisfy |g - r| <= bound, both float64
/// host tensors of q's shape. Per output (row t, column d), with p_j = exp(s_j - max s) over the row's
/// visible keys and l = sum p_j:
///     bound = c1 (sum_j p_j |v_jd|) / l + c2 (sum_j |v_jd|) / l + ulp_T(|value| + the first two terms),
/// c1 = 4 a / (1 - a) + 2^-23, a = (1 + theta) (1 + gamma(S + 2 n + 16, 2^-22)) - 1 with n = ceil(S / 32)
/// key tiles, theta the largest over the row's visible keys of (1 + u_T) (1 + 2^-22)^(n + 1) exp(delta_j) -
/// 1, u_T = 2^-11 (float16) or 2^-8 (bfloat16), delta_j = scale gamma(D, 2^-22) sum_d |q_d k_jd| + 2^-23
/// (|scale q·k_j| + |s_j|) + (n + 1) 2^-21 (max_j |s_j| + 1); c2 = 2^-23 for float16 (probabilities below
/// float16's normal range) and 2^-125 for bfloat16. The bound is +inf where `value` is not finite (an Inf or
/// NaN operand of a visible key: the results must then agree in kind; see the document). Throws loom::Error
/// naming reference::attention_bound() for operands that do not fit.
struct AttentionBound {
    Tensor value;
    Tensor bound;
};
AttentionBound attention_bound(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* bias,
                               ir::CausalMask causal, float scale);

/// A contiguous host copy of `t` converted element by element to `to` with the semantics of a Cast node
/// (docs/semantics.md, "Casts"). Tensors on a CUDA device are copied to the host first.
Tensor cast(const Tensor& t, DType to);

}  // namespace loom::reference
