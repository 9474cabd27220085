// The Hopper schedule of a matrix product (matmul_plan.hpp, "Hopper"): whether the operands' layouts allow
// the tensor memory accelerator's copies, the tile and the ring of stages, and the tensor maps of one call.
#include <fmt/format.h>

#include <algorithm>

#include "loom/ir/error.hpp"
#include "matmul_internal.hpp"

namespace loom::codegen {

namespace {

/// How one operand's tiles are copied: which matrix axis is its unit-stride (inner) one, the stride of the
/// other (outer) one, and its batch axis.
struct MapLayout {
    bool ok = false;
    bool mn_major = false;          // the inner axis is m (A) or n (B); else k
    std::int64_t outer_stride = 0;  // elements
    int rank = 2;                   // 2 + the batch dimensions
    bool flat = false;              // one batch dimension: the product's flat batch index
    std::array<MatmulBinding::MapBatch, 3> batch{};
    std::string why;  // when not ok
};

std::int64_t round_up(std::int64_t v, std::int64_t to) {
    return (v + to - 1) / to * to;
}

// The layout of operand `which` (0: A, M x K; 1: B, K x N) with `strides` over [batch..., rows, cols]:
// `piece` elements make 16 bytes.
MapLayout map_layout(int which, const Strides& strides, const Shape& batch, std::int64_t rows,
                     std::int64_t cols, std::int64_t offset, bool aligned, std::int64_t piece) {
    const char* op = which == 0 ? "A" : "B";
    MapLayout l;
    const std::size_t r = strides.size();
    const std::int64_t s_rows = strides[r - 2], s_cols = strides[r - 1];
    // A: k is its columns, m its rows; B: k is its rows, n its columns.
    const std::int64_t mn = which == 0 ? rows : cols, k = which == 0 ? cols : rows;
    const std::int64_t s_mn = which == 0 ? s_rows : s_cols, s_k = which == 0 ? s_cols : s_rows;
    std::int64_t inner = 0, outer = 0, outer_stride = 0;
    // A prefers K-major tiles (its rows along k), B N-major (its rows along n): the row-major layouts.
    const bool k_inner = s_k == 1 || k == 1, mn_inner = s_mn == 1 || mn == 1;
    if (which == 0 ? k_inner : !mn_inner && k_inner) {
        l.mn_major = false;
        inner = k, outer = mn, outer_stride = s_mn;
    } else if (mn_inner) {
        l.mn_major = true;
        inner = mn, outer = k, outer_stride = s_k;
    } else {
        l.why =
            fmt::format("{} has no unit stride along its matrix axes (strides {}, {})", op, s_rows, s_cols);
        return l;
    }
    if (outer == 1) outer_stride = round_up(inner, piece);  // one row: its stride is never used
    if (outer_stride <= 0 || outer_stride % piece != 0 || outer_stride < inner) {
        l.why = fmt::format("{}'s rows are {} elements apart, not whole 16-byte pieces at least a row long",
                            op, outer_stride);
        return l;
    }
    if (!aligned || offset % piece != 0) {
        l.why = fmt::format("{} does not start 16-byte aligned", op);
        return l;
    }
    l.outer_stride = outer_stride;
    // Batch axes: those of more than one entry along which the operand moves (a broadcast one, stride 0,
    // adds no dimension), innermost first, each merged into the one inside it where the strides chain (the
    // heads and batches of a contiguous tensor form one dimension).
    int dims = 0;
    std::int64_t divisor = 1;
    bool chains = false;  // the axis just inside is this operand's innermost batch dimension so far
    for (std::size_t d = batch.size(); d-- > 0;) {
        if (batch[d] == 1) continue;
        if (strides[d] == 0) {
            chains = false;
        } else if (chains && strides[d] == l.batch[static_cast<std::size_t>(dims - 1)].stride *
                                               l.batch[static_cast<std::size_t>(dims - 1)].extent) {
            l.batch[static_cast<std::size_t>(dims - 1)].extent *= batch[d];
        } else if (dims == 3) {
            l.why =
                fmt::format("{}'s batch axes form more than the tensor map's 3 batch dimensions (strides {})",
                            op, fmt::join(strides, ", "));
            return l;
        } else if (strides[d] < 0 || strides[d] % piece != 0) {
            l.why = fmt::format("{}'s batch entries are {} elements apart, not whole 16-byte pieces", op,
                                strides[d]);
            return l;
        } else {
            l.batch[static_cast<std::size_t>(dims++)] = {batch[d], strides[d], divisor};
            chains = true;
        }
        divisor *= batch[d];
    }
    l.rank = 2 + dims;
    l.flat = dims == 1 && l.batch[0].divisor == 1 && l.batch[0].extent == divisor;
    l.ok = true;
    return l;
}

/// The K from which the default tile is 128 x 256 (the consumers side by side) rather than ping-pong 128 x
/// 128.
constexpr std::int64_t kWgmmaLongK = 4096;

bool wgmma_tile(const TileHint& t, int depth, bool tf32) {
    return (t.rows == 0 || t.rows == 64 || t.rows == 128) &&
           (t.cols == 0 || t.cols == 64 || t.cols == 128 || (t.cols == 256 && !tf32)) &&
           (t.depth == 0 || t.depth == depth);
}

}  // namespace

std::string TensorMapSpec::to_string() const {
    std::vector<std::uint64_t> d(dims, dims + rank), st(strides, strides + rank - 1), bx(box, box + rank);
    return fmt::format("{} [{}] strides [{}] bytes, box [{}], at {}", name(dtype), fmt::join(d, ", "),
                       fmt::join(st, ", "), fmt::join(bx, ", "), address);
}

namespace detail {

bool plan_wgmma(PlannedMatmul& pm, const TileHint& given, bool a_aligned, bool b_aligned,
                const DeviceInfo& device) {
    MatmulPlan& p = pm.plan;
    MatmulBinding& b = pm.binding;
    p.wgmma = false;
    p.wgmma_note.clear();
    const bool tf32 = p.in == DType::Float32 && p.precision() == ProductPrecision::TF32;
    if (!p.tensor_cores || device.cc_major != 9 ||
        (p.in != DType::Float16 && p.in != DType::BFloat16 && p.in != DType::Float32))
        return false;
    auto no = [&](std::string why) {
        p.wgmma_note = std::move(why);
        return false;
    };
    if (p.requested == ProductPath::MmaSync) return no("mma_sync asked for");
    if (p.in == DType::Float32 && !tf32)
        return no("3xTF32 takes each operand's big and small parts, which only the mma.sync kernel splits");
    if (p.a_prologue || p.b_prologue)
        return no("an operand is computed by a prologue, which the tensor memory accelerator cannot copy");
    if (b.K == 0) return no("K is 0");
    if (!wgmma_tile(given, p.wgmma_depth(), tf32))
        return no(fmt::format(
            "the tile {}x{}x{} is not a wgmma tile (tile_m 64 or 128, tile_n 64, 128{}, tile_k {})",
            given.rows, given.cols, given.depth, tf32 ? "" : " or 256", p.wgmma_depth()));
    const std::int64_t piece = p.piece();
    const MapLayout la = map_layout(0, b.a_strides, b.batch, b.M, b.K, b.a_offset, a_aligned, piece);
    if (!la.ok) return no(la.why);
    const MapLayout lb = map_layout(1, b.b_strides, b.batch, b.K, b.N, b.b_offset, b_aligned, piece);
    if (!lb.ok) return no(lb.why);
    p.a_mn_major = la.mn_major;
    p.b_mn_major = lb.mn_major;
    // TF32's MMAs read K-major shared tiles only: an MN-major tile goes through registers as the MMAs' A
    // operand (MatmulPlan::wgmma_a_registers(); B's with the operands swapped, wgmma_swap()), which only one
    // operand can.
    if (tf32 && p.a_mn_major && p.b_mn_major)
        return no(
            "in TF32 the tensor cores read K-major tiles only, and A (M-major) and B (N-major) are both "
            "transposed");
    p.wgmma = true;
    p.a_map_rank = la.rank;
    p.b_map_rank = lb.rank;
    p.a_map_flat = la.flat;
    p.b_map_flat = lb.flat;
    b.a_map_batch = la.batch;
    b.b_map_batch = lb.batch;
    // The tile: 128 x 256 for a long K (two consumers of m64n256k16 side by side: M2's best, in
    // docs/performance.md), else 128 x 128, narrower for short M or N. Tiles at most 128 wide run ping-pong:
    // each consumer owns whole tiles (tile_m / 64 MMAs per 16 k), the two taking the block's tiles in turn,
    // so one's epilogue runs on the CUDA cores while the other's MMAs keep the tensor cores busy (the ring
    // hands them its stages in tile order). Side by side, both consumers' epilogues leave the tensor cores
    // idle: with a K of 1024 (M4) that was half of each tile's time.
    p.tile_m = given.rows ? given.rows : b.M > 64 ? 128 : 64;
    p.tile_n = given.cols ? given.cols : b.N > 128 && b.K >= kWgmmaLongK && !tf32 ? 256 : b.N > 64 ? 128 : 64;
    p.tile_k = p.wgmma_depth();
    p.pingpong = p.tile_n <= 128;
    p.consumers = p.pingpong ? 2 : p.tile_m / 64;
    // Ping-pong: the epilogue through shared memory, 64 rows at a time per consumer, so that its stores are
    // whole lines per warp (from the registers each warp's store touches 8 rows: 8 partial sectors per
    // instruction). Side by side (a long K) it stays in registers: its buffers would cost the ring a stage,
    // and the epilogue is a small part of a long K's tile. TF32's float32 products stay in registers too
    // (the buffer holds 16-bit values).
    p.staged_epilogue = p.pingpong && itemsize(p.out) == 2;
    p.warps_m = p.consumers;
    p.warps_n = 1;
    p.lanes_m = p.lanes_n = p.thread_m = p.thread_n = 0;
    // As many stages as shared memory holds, up to 6 (1 KiB for the 128-byte swizzle's alignment and the
    // barriers).
    const std::size_t room = device.shared_mem_per_block_optin - 2048 - p.wgmma_epilogue_bytes();
    p.stages = static_cast<int>(std::min<std::size_t>(6, room / p.wgmma_stage_bytes()));
    if (p.stages < 2) return no("two stages of the tile do not fit in shared memory");
    const std::int64_t tiles =
        ((b.M + p.tile_m - 1) / p.tile_m) * ((b.N + p.tile_n - 1) / p.tile_n) * b.batches;
    b.persistent_blocks = std::min<std::int64_t>(tiles, device.sm_count);
    b.batch_blocks = 1;
    return true;
}

}  // namespace detail

std::array<TensorMapSpec, 2> matmul_tensor_maps(const PlannedMatmul& pm,
                                                std::span<const void* const> inputs) {
    const MatmulPlan& p = pm.plan;
    const MatmulBinding& bd = pm.binding;
    if (!p.wgmma) throw InternalError("matmul_tensor_maps(): not a wgmma plan");
    const std::size_t r = static_cast<std::size_t>(p.rank);
    const std::int64_t isz = static_cast<std::int64_t>(itemsize(p.in));
    std::array<TensorMapSpec, 2> maps;
    for (int which : {0, 1}) {
        TensorMapSpec& t = maps[static_cast<std::size_t>(which)];
        const Strides& s = which == 0 ? bd.a_strides : bd.b_strides;
        const bool mn_major = which == 0 ? p.a_mn_major : p.b_mn_major;
        const std::int64_t mn = which == 0 ? bd.M : bd.N;
        const std::int64_t s_mn = which == 0 ? s[r - 2] : s[r - 1], s_k = which == 0 ? s[r - 1] : s[r - 2];
        const std::int64_t inner = mn_major ? mn : bd.K, outer = mn_major ? bd.K : mn;
        std::int64_t outer_stride = mn_major ? s_k : s_mn;
        if (outer == 1) outer_stride = round_up(inner, p.piece());
        const void* base = inputs[which == 0 ? 0 : pm.a_inputs];
        t.dtype = p.in;
        t.address = static_cast<const char*>(base) + (which == 0 ? bd.a_offset : bd.b_offset) * isz;
        if (reinterpret_cast<std::uintptr_t>(t.address) % 16 != 0)
            throw InternalError(
                fmt::format("matmul_tensor_maps(): {} at {} is not 16-byte aligned as planned",
                            which == 0 ? "A" : "B", t.address));
        t.rank = which == 0 ? p.a_map_rank : p.b_map_rank;
        t.dims[0] = static_cast<std::uint64_t>(inner);
        t.dims[1] = static_cast<std::uint64_t>(outer);
        t.strides[0] = static_cast<std::uint64_t>(outer_stride * isz);
        // The box: 128 bytes of inner elements (the swizzle's span: 64 16-bit elements or 32 float32 ones)
        // by the tile's extent along a K-major operand's rows, or by a stage's k of an MN-major one (one copy
        // per 128 bytes of m or n).
        t.box[0] = static_cast<std::uint32_t>(p.wgmma_depth());
        t.box[1] = static_cast<std::uint32_t>(mn_major ? p.wgmma_depth() : which == 0 ? p.tile_m : p.tile_n);
        const auto& batch = which == 0 ? bd.a_map_batch : bd.b_map_batch;
        for (int d = 2; d < t.rank; ++d) {
            const auto& m = batch[static_cast<std::size_t>(d - 2)];
            t.dims[d] = static_cast<std::uint64_t>(m.extent);
            t.strides[d - 1] = static_cast<std::uint64_t>(m.stride * isz);
            t.box[d] = 1;
        }
    }
    return maps;
}

}  // namespace loom::codegen
