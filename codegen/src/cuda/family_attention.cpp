// The GPU family object of attention kernels (GpuFamily<PlannedAttention>, kernel_family.hpp): emits the
// kernel, explains it, and binds one call (the parameter struct, the grid).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"

namespace loom::codegen {

#include "attention_params.inc"

static_assert(sizeof(AttentionParams) == 7 * 8 + 6 * 4 * 8 + 15 * 8 + 9 * 8 + 8,
              "attention_params.inc: the host's and the device's layouts must agree");

std::size_t attention_param_bytes() {
    return sizeof(AttentionParams);
}

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

// The pointer of operand `j` of a call (its input's element 0 moved by the view's offset), or null.
const void* operand_pointer(const PlannedAttention& s, const KernelPointers& p, int j) {
    const AttentionOperand& o = s.operands[static_cast<std::size_t>(j)];
    if (o.input < 0) return nullptr;
    const auto* base = static_cast<const char*>(p.inputs[static_cast<std::size_t>(o.input)]);
    return base + o.offset * static_cast<std::int64_t>(itemsize(s.plan.dtype));
}

// The batch strides of `st` (rank r) into `out`, innermost last, absent axes first with stride 0.
void batch_strides(const Strides& st, int r, long long* out) {
    const int nb = r - 3;
    for (int a = 0; a < kAttentionBatchAxes; ++a) {
        const int d = a - (kAttentionBatchAxes - nb);
        out[a] = d >= 0 ? static_cast<long long>(st[static_cast<std::size_t>(d)]) : 0;
    }
}

// Whether every operand's rows load in 16-byte pieces: d stride 1, D and every other stride a whole number
// of pieces, and every pointer aligned.
bool pieces(const PlannedAttention& s, const KernelPointers& p) {
    const std::int64_t w = 16 / static_cast<std::int64_t>(itemsize(s.plan.dtype));
    if (s.plan.head_dim % w != 0) return false;
    for (int j = 0; j < 3; ++j) {
        const Strides& st = s.operands[static_cast<std::size_t>(j)].strides;
        if (st.back() != 1) return false;
        for (std::size_t d = 0; d + 1 < st.size(); ++d)
            if (st[d] % w != 0) return false;
        if (reinterpret_cast<std::uintptr_t>(operand_pointer(s, p, j)) % 16 != 0) return false;
    }
    return true;
}

// The extents of a split attention: the rows (B... x H x T), the chunks and the row blocks of each head.
struct SplitExtents {
    long long rows = 0, chunks = 1, row_blocks = 0;
};
SplitExtents split_extents(const PlannedAttention& s) {
    const ir::Node& a = *s.node;
    const int r = a.rank();
    SplitExtents e;
    const long long T = static_cast<long long>(a.shape()[static_cast<std::size_t>(r - 2)]);
    const long long S = static_cast<long long>(a.operand(1)->shape()[static_cast<std::size_t>(r - 2)]);
    long long batch_heads = 1;
    for (int d = 0; d + 2 < r; ++d)
        batch_heads *= static_cast<long long>(a.shape()[static_cast<std::size_t>(d)]);
    e.rows = batch_heads * T;
    e.chunks = ir::attention_key_chunks(T, S);
    e.row_blocks = batch_heads * ((T + s.plan.block_queries - 1) / s.plan.block_queries);
    return e;
}

}  // namespace

KernelSource GpuFamily<PlannedAttention>::emit(const FusedKernel& k, const PlannedAttention& s) {
    return emit_attention(k.name, s);
}

std::string GpuFamily<PlannedAttention>::plan_text(const PlannedAttention& s) {
    return s.plan.to_string();
}

std::string GpuFamily<PlannedAttention>::explain(const FusionPlan& plan, std::size_t i,
                                                 const PlannedAttention& s) {
    const FusedKernel& k = plan.partition.kernels[i];
    const ir::Node& a = *s.node;
    std::vector<std::string> reads, writes;
    for (std::size_t j = 0; j < s.inputs.size(); ++j)
        reads.push_back(fmt::format("{} {} [{}]",
                                    s.inputs[j]->label().empty() ? "input" : s.inputs[j]->label(),
                                    ir::describe(*s.inputs[j]), to_string(plan.kernels[i].reads[j])));
    for (const Slot& w : k.writes) writes.push_back(to_string(w));
    const char* path = s.plan.path == AttentionPath::Mma
                           ? "tensor cores (mma.sync, float32 accumulators), within the stated bound"
                           : "CUDA cores, float32 in the reference's order";
    return fmt::format(
        "kernel {}  {}   attention q {} x k {} x v {} -> {} ({}): {}\n"
        "          {}; {} queries per block, keys in steps of {}, {} threads, {} bytes of shared memory\n"
        "{}"
        "          reads {}; writes {}; 1 launch\n",
        i, k.name, ir::describe(*a.operand(0)), ir::describe(*a.operand(1)), ir::describe(*a.operand(2)),
        ir::describe(a), ir::attention_attributes(a), where_of(a), path, s.plan.block_queries,
        s.plan.block_keys, s.plan.threads, s.plan.shared_bytes,
        s.plan.split
            ? fmt::format("          decoding: the keys split in {} chunks of {} among blocks, their "
                          "states combined in the pairwise tree by each row block's last block\n",
                          split_extents(s).chunks, ir::kAttentionKeyChunk)
            : std::string(),
        fmt::join(reads, ", "), fmt::join(writes, ", "));
}

LaunchNeeds GpuFamily<PlannedAttention>::needs(const PlannedAttention& s, KernelPointers) {
    LaunchNeeds n;
    n.param_bytes = sizeof(AttentionParams);
    if (s.plan.split) {
        // Each chunk's state per row (m, l, seen, o), written before it is read; a counter per row block.
        const SplitExtents e = split_extents(s);
        n.workspaces.push_back(static_cast<std::size_t>(e.rows * e.chunks * (s.plan.head_dim + 3)) *
                               sizeof(float));
        n.counters = e.row_blocks;
    }
    return n;
}

BoundLaunch GpuFamily<PlannedAttention>::bind(const PlannedAttention& s, KernelPointers p,
                                              const LaunchScratch& scratch, std::span<std::byte> params) {
    const ir::Node& a = *s.node;
    const int r = a.rank();
    const auto ext = [&](const ir::Node& n, int from_end) {
        return static_cast<long long>(n.shape()[static_cast<std::size_t>(r - from_end)]);
    };
    AttentionParams ap{};
    ap.q = operand_pointer(s, p, 0);
    ap.k = operand_pointer(s, p, 1);
    ap.v = operand_pointer(s, p, 2);
    ap.bias = operand_pointer(s, p, 3);
    ap.out = p.outputs[0];
    long long batches = 1;
    for (int j = 0; j < kAttentionBatchAxes; ++j) {
        const int d = j - (kAttentionBatchAxes - (r - 3));
        ap.batch[j] = d >= 0 ? static_cast<long long>(a.shape()[static_cast<std::size_t>(d)]) : 1;
        batches *= ap.batch[j];
    }
    const auto strides = [&](int j) -> const Strides& {
        return s.operands[static_cast<std::size_t>(j)].strides;
    };
    batch_strides(strides(0), r, ap.q_batch);
    batch_strides(strides(1), r, ap.k_batch);
    batch_strides(strides(2), r, ap.v_batch);
    batch_strides(s.out_strides, r, ap.out_batch);
    const auto at = [&](const Strides& st, int from_end) {
        return static_cast<long long>(st[static_cast<std::size_t>(r - from_end)]);
    };
    ap.q_head = at(strides(0), 3), ap.q_row = at(strides(0), 2), ap.q_col = at(strides(0), 1);
    ap.k_head = at(strides(1), 3), ap.k_row = at(strides(1), 2), ap.k_col = at(strides(1), 1);
    ap.v_head = at(strides(2), 3), ap.v_row = at(strides(2), 2), ap.v_col = at(strides(2), 1);
    ap.out_head = at(s.out_strides, 3), ap.out_row = at(s.out_strides, 2), ap.out_col = at(s.out_strides, 1);
    if (s.plan.bias) {
        batch_strides(strides(3), r, ap.bias_batch);
        ap.bias_head = at(strides(3), 3), ap.bias_row = at(strides(3), 2), ap.bias_col = at(strides(3), 1);
    }
    ap.heads = ext(a, 3);
    const long long kv_heads = ext(*a.operand(1), 3);
    ap.group = kv_heads > 0 ? ap.heads / kv_heads : 1;
    ap.queries = ext(a, 2);
    ap.keys = ext(*a.operand(1), 2);
    ap.diagonal = ir::attention_causal(a) == ir::CausalMask::BottomRight ? ap.keys - ap.queries : 0;
    ap.query_blocks = (ap.queries + s.plan.block_queries - 1) / s.plan.block_queries;
    ap.batch_heads = batches * ap.heads;
    ap.scale = ir::attention_scale(a);
    ap.vector_loads = pieces(s, p) ? 1 : 0;
    ap.chunks = ir::attention_key_chunks(ap.queries, ap.keys);
    ap.chunk_keys = ap.chunks > 1 ? ir::kAttentionKeyChunk : ap.keys;
    if (s.plan.split != (ap.chunks > 1))
        throw InternalError(fmt::format("attention kernel: a plan {}split for {} chunks",
                                        s.plan.split ? "" : "not ", ap.chunks));
    if (s.plan.split) {
        if (scratch.workspaces.size() != 1 || !scratch.counters)
            throw InternalError("attention kernel: split keys without their workspace and counters");
        ap.partials = static_cast<float*>(scratch.workspaces[0]);
        ap.counters = static_cast<unsigned int*>(scratch.counters);
    }
    if (params.size() < sizeof ap)
        throw InternalError(
            fmt::format("attention kernel: {} parameter bytes for {}", params.size(), sizeof ap));
    std::memcpy(params.data(), &ap, sizeof ap);
    BoundLaunch b;
    const long long blocks = ap.query_blocks * ap.batch_heads * ap.chunks;
    if (blocks == 0) return b;
    if (blocks > 0x7fffffffll)
        throw Error(fmt::format("attention(): {} blocks of {} queries exceed a launch's {} ({})", blocks,
                                s.plan.block_queries, 0x7fffffff, short_location(a.loc())));
    b.config.grid_x = static_cast<std::uint32_t>(blocks);
    b.config.block_x = static_cast<std::uint32_t>(s.plan.threads);
    b.shared_bytes = s.plan.shared_bytes;
    return b;
}

}  // namespace loom::codegen
