// The GPU plan of one attention node (Family::Attention; docs/semantics.md, "Attention"): which kernel runs
// it (the path), its blocks and threads, its shared memory, and where each operand lies (its view of an
// input of the kernel, as strides). Plain data: codegen/src/cuda/emit_attention.cpp emits the kernel and
// codegen/src/cuda/family_attention.cpp binds one call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/codegen/cuda/device_info.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/options.hpp"
#include "loom/codegen/plan/partition.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
#include "loom/ir/node.hpp"
#include "loom/ir/view.hpp"

namespace loom::codegen {

/// How an attention kernel computes. Simt: CUDA cores in float32, the reference's order bit for bit (every
/// dtype: halves are read as float32); the only path of decoding (at most ir::kAttentionSplitQueries
/// queries), whatever the dtype. Mma: float16 and bfloat16 on tensor cores (mma.sync.m16n8k16, float32
/// accumulators; FlashAttention-2's schedule), within the bound of docs/semantics.md, "Attention in float16
/// and bfloat16 on tensor cores" (reference::attention_bound); for D a multiple of 16 up to 256 on devices of
/// compute capability 8.0 and newer, unless Options::product_path is CudaCores.
enum class AttentionPath : std::uint8_t { Simt, Mma };
/// "simt", "mma".
const char* attention_path_name(AttentionPath p);

/// The batch axes an attention kernel indexes (more must merge into these).
inline constexpr int kAttentionBatchAxes = 4;

/// What the kernel's code depends on (the cache key): the dtype, the head dimension, the mask and bias, the
/// path and its block.
struct AttentionPlan {
    DType dtype = DType::Float32;
    int head_dim = 0;     // D
    bool causal = false;  // a causal mask (its alignment is the `diagonal` parameter)
    bool bias = false;
    AttentionPath path = AttentionPath::Simt;
    int block_queries = 64;  // queries per block (Simt: 64, or 8 for decoding; Mma: 16 per warp)
    /// Decoding (ir::attention_key_chunks > 1): blocks share a row's keys, chunk by chunk, and the last
    /// block of each row block combines the chunks' states in the pairwise tree (Simt only).
    bool split = false;
    int block_keys = 64;  // keys per step: the order's block (kAttentionKeyBlock); Mma: the key tile
    int threads = 128;
    std::size_t shared_bytes = 0;

    bool operator==(const AttentionPlan&) const = default;
    std::uint64_t hash() const;
    /// The plan's banner lines.
    std::string to_string() const;
};

/// One operand of the attention as the kernel reads it: a strided view of input `input` (an index into
/// PlannedAttention::inputs).
struct AttentionOperand {
    int input = -1;
    std::int64_t offset = 0;  // elements
    Strides strides;          // one per axis of the operand's shape
    bool operator==(const AttentionOperand&) const = default;
};

/// An attention kernel's GPU schedule: the plan, the node, the kernel's inputs (each read once, in order)
/// and the operands q, k, v and the bias (input -1: none) as views of them, and the result's strides.
struct PlannedAttention {
    AttentionPlan plan;
    ir::NodePtr node;
    std::vector<const ir::Node*> inputs;
    std::array<AttentionOperand, 4> operands;
    Strides out_strides;  // the output's layout (contiguous unless the root is a strided view)
    bool operator==(const PlannedAttention& o) const {
        return plan == o.plan && operands == o.operands && out_strides == o.out_strides;
    }
};

/// Plans the attention kernel `k` (Family::Attention: one output, the attention node over views of its
/// inputs), whose inputs have the layouts `layout_of`, for `device`; `out_strides` (empty: contiguous) is
/// the layout of what it writes. Throws loom::Error for what no kernel takes (more than
/// kAttentionBatchAxes batch axes that do not merge, the shared memory of the head dimension beyond the
/// device's), InternalError for a malformed kernel.
PlannedAttention plan_attention(const FusedKernel& k, const LayoutOf& layout_of, const DeviceInfo& device,
                                const Strides& out_strides, const Options& options);

/// The bytes of an attention kernel's one parameter (lm::AttentionParams,
/// codegen/src/cuda/attention_params.inc).
std::size_t attention_param_bytes();

/// The CUDA source of an attention kernel (codegen/src/cuda/emit_attention.cpp): the prelude, the attention
/// device code (codegen/src/cuda/attention.cuh) and the entry point `<name>`, which instantiates the plan's
/// kernel with its constants; one parameter, lm::AttentionParams (attention_params.inc).
KernelSource emit_attention(std::string_view user_name, const PlannedAttention& pa);

}  // namespace loom::codegen
