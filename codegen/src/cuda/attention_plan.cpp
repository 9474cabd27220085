// plan_attention: the GPU plan of one attention node (attention_plan.hpp).
#include "loom/codegen/cuda/attention_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/hash.hpp"

namespace loom::codegen {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

// The shared memory of the CUDA-core kernel (lm::att::SimtShape) for `queries` per block: queries and keys
// transposed, values with a row pitch of D rounded up to 64, the block's probabilities; float32.
std::size_t simt_shared_bytes(int D, int queries) {
    const std::size_t pitch = static_cast<std::size_t>((D + 63) / 64 * 64);
    const std::size_t d = static_cast<std::size_t>(D), q = static_cast<std::size_t>(queries);
    return (d * q + d * 64 + 64 * pitch + q * 64) * sizeof(float);
}

// The block of the tensor-core kernel (lm::att::MmaShape<D>, attention.cuh; the emitted entry point asserts
// that both agree): 128 queries (8 warps) and key tiles of 64 up to D = 128, then 64 queries (4 warps) and
// tiles of 32 (the output's accumulators take 2 D registers per lane). Shared memory: the queries, and the
// keys and values double buffered, rows padded to D + 8 elements of 2 bytes.
void set_mma_shape(AttentionPlan& p) {
    const int D = p.head_dim;
    p.block_queries = D <= 128 ? 128 : 64;
    p.block_keys = D <= 128 ? 64 : 32;
    p.threads = 32 * (p.block_queries / 16);
    p.shared_bytes =
        static_cast<std::size_t>(p.block_queries + 4 * p.block_keys) * static_cast<std::size_t>(D + 8) * 2;
}

// Whether the tensor-core kernel takes the plan: float16 or bfloat16, D a multiple of 16 up to 256, a device
// with mma.sync (compute capability 8.0 and newer), and products not held to CUDA cores.
bool takes_mma(const AttentionPlan& p, const DeviceInfo& device, const Options& options) {
    return (p.dtype == DType::Float16 || p.dtype == DType::BFloat16) && p.head_dim % 16 == 0 &&
           p.head_dim <= 256 && device.cc_major >= 8 && options.product_path != ProductPath::CudaCores;
}

}  // namespace

const char* attention_path_name(AttentionPath p) {
    switch (p) {
        case AttentionPath::Simt:
            return "simt";
        case AttentionPath::Mma:
            return "mma";
    }
    return "?";
}

std::uint64_t AttentionPlan::hash() const {
    Hasher h;
    h.add(0x617474656e740001ull);
    h.add(static_cast<std::uint64_t>(dtype));
    h.add(static_cast<std::uint64_t>(head_dim));
    h.add(causal ? 1u : 0u);
    h.add(bias ? 1u : 0u);
    h.add(static_cast<std::uint64_t>(path));
    h.add(static_cast<std::uint64_t>(block_queries));
    h.add(static_cast<std::uint64_t>(block_keys));
    h.add(static_cast<std::uint64_t>(threads));
    h.add(shared_bytes);
    h.add(split ? 1u : 0u);
    return h.digest();
}

std::string AttentionPlan::to_string() const {
    if (path == AttentionPath::Mma)
        return fmt::format(
            "attention of {} heads of D = {}{}{}\n"
            "path: tensor cores (mma.sync.m16n8k16, float32 accumulators; FlashAttention-2's schedule), "
            "within "
            "the stated bound, not the reference's bits\n"
            "block: {} queries ({} warps of 16 rows); keys in tiles of {} through shared memory, double "
            "buffered "
            "(cp.async), read with ldmatrix\n"
            "shared memory: {} bytes (queries, keys and values twice; rows padded to D + 8)",
            name(dtype), head_dim, causal ? ", causal" : "", bias ? ", with a bias" : "", block_queries,
            threads / 32, block_keys, shared_bytes);
    return fmt::format(
        "attention of {} heads of D = {}{}{}\n"
        "path: CUDA cores in float32, the reference's order bit for bit (the one float32 exp)\n"
        "block: {} queries; keys in steps of {} (the order's key block) through shared memory; {} threads as "
        "{} row groups of 16 lanes\n"
        "{}"
        "shared memory: {} bytes (queries and keys transposed, values, the step's probabilities)",
        name(dtype), head_dim, causal ? ", causal" : "", bias ? ", with a bias" : "", block_queries,
        block_keys, threads, threads / 16,
        split
            ? fmt::format("decoding: the keys split in chunks of {}, a block per chunk; the last block of a "
                          "row block combines the chunks' states in the pairwise tree\n",
                          ir::kAttentionKeyChunk)
            : std::string(),
        shared_bytes);
}

PlannedAttention plan_attention(const FusedKernel& k, const LayoutOf& layout_of, const DeviceInfo& device,
                                const Strides& out_strides, const Options& options) {
    if (k.outputs.empty() || !ir::is_attention(k.outputs[0]->op()))
        throw InternalError(fmt::format("plan_attention(): kernel {} is not one attention node", k.name));
    PlannedAttention pa;
    pa.node = k.outputs[0];
    const ir::Node& a = *pa.node;
    const int r = a.rank();
    if (r - 3 > kAttentionBatchAxes)
        throw Error(fmt::format("attention(): {} batch axes; an attention kernel takes at most {} ({})",
                                r - 3, kAttentionBatchAxes, short_location(a.loc())));
    for (std::size_t j = 0; j < a.operands().size(); ++j) {
        const ir::Node& x = *a.operand(static_cast<int>(j));
        const std::optional<ir::StridedView> view =
            ir::view_of_input(x, [&](const ir::Node& n) { return layout_of(n).strides; });
        if (!view)  // a reshape without strides for this input's layout: the strict partition computes it
                    // first
            throw NotFusable(fmt::format(
                "operand {} of {} is a reshape that has no strides for its input's layout", j, where_of(a)));
        const auto it = std::find(pa.inputs.begin(), pa.inputs.end(), view->base);
        const int input = static_cast<int>(it - pa.inputs.begin());
        if (it == pa.inputs.end()) pa.inputs.push_back(view->base);
        pa.operands[j] = AttentionOperand{input, view->offset, view->strides};
    }
    pa.out_strides = out_strides.empty() ? contiguous_strides(a.shape()) : out_strides;
    AttentionPlan& p = pa.plan;
    p.dtype = a.dtype();
    p.head_dim = static_cast<int>(a.shape().back());
    p.causal = ir::attention_causal(a) != ir::CausalMask::None;
    p.bias = a.operands().size() == 4;
    const std::int64_t T = a.shape()[static_cast<std::size_t>(r - 2)];
    const std::int64_t S = a.operand(1)->shape()[static_cast<std::size_t>(r - 2)];
    const bool decoding = T <= ir::kAttentionSplitQueries;
    if (!decoding && takes_mma(p, device, options)) {
        p.path = AttentionPath::Mma;
        set_mma_shape(p);
    } else {
        // Decoding takes 8 queries per block (a thread's one query of each row group) rather than 64, and
        // shares long rows' keys among blocks: both whatever the dtype, on CUDA cores.
        p.path = AttentionPath::Simt;
        p.block_queries = decoding ? 8 : 64;
        p.split = ir::attention_key_chunks(T, S) > 1;
        p.shared_bytes = simt_shared_bytes(p.head_dim, p.block_queries);
    }
    if (p.shared_bytes > device.shared_mem_per_block_optin)
        throw Error(fmt::format(
            "attention(): the head dimension D = {} needs {} bytes of shared memory per block, more than the "
            "device's {} ({})",
            p.head_dim, p.shared_bytes, device.shared_mem_per_block_optin, short_location(a.loc())));
    return pa;
}

}  // namespace loom::codegen
