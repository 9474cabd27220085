// plan_matmul: the CUDA-core or tensor-core schedule of one matrix product and its epilogue
// (matmul_plan.hpp), the parameter layout and packing, the launch shape and the variant choice.
#include "loom/codegen/cuda/matmul_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

#include "loom/codegen/plan/partition.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/hash.hpp"
#include "loom/ir/reduce_order.hpp"
#include "loom/ir/view.hpp"
#include "matmul_internal.hpp"

namespace loom::codegen {

namespace {

/// Accumulator words (32-bit registers) a thread may hold: 64 keeps a 256-thread block within 128 registers
/// per thread with the operand fragments and addresses beside them.
constexpr int kAccumulatorWords = 64;

/// split_k plans take one counter per output tile and batch entry: at most this many (the runtime's
/// per-stream buffer of split counters).
constexpr std::int64_t kSplitCounterLimit = 4096;

/// The longest K (float32 on CUDA cores, staged epilogues) whose products run two blocks per multiprocessor.
constexpr std::int64_t kTwoBlocksDepth = 1024;

/// The K step of a matrix-vector product's default tile.
constexpr int kMatrixVectorDepth = 128;

/// What field `a` of a Product parameter is.
enum MatmulField : int {
    FieldA,
    FieldB,
    FieldM,
    FieldN,
    FieldK,
    FieldChunks,
    FieldBatches,
    FieldBatchExtent,
    FieldAStride,
    FieldBStride,
    FieldWorkspace,
    FieldPieces,
    FieldMapA,
    FieldMapB,
    FieldGroupChunks,
    FieldCounters,
    FieldMapDivisorA,  // wgmma: a batch dimension's divisor and extent (MatmulBinding::MapBatch), per axis
    FieldMapExtentA,
    FieldMapDivisorB,
    FieldMapExtentB
};

// An operand of the product as a strided view of one input (ir::view_of_input for the inputs' layouts), or
// empty: a prologue computes it.
std::optional<ir::StridedView> operand_view(const ir::Node& x, const LayoutOf& layout_of) {
    return ir::view_of_input(x, [&](const ir::Node& n) { return layout_of(n).strides; });
}

bool pow2(int v) {
    return v > 0 && (v & (v - 1)) == 0;
}

/// Block tiles per batch entry (the grid's x).
std::int64_t output_tiles(const MatmulPlan& p, const MatmulBinding& b) {
    return ((b.M + p.tile_m - 1) / p.tile_m) * ((b.N + p.tile_n - 1) / p.tile_n);
}

/// The default tile for the shapes, dtype and path: 128 x 128 outputs (64 x 64 for float64), smaller along an
/// axis that is short, stepping 32 along K on CUDA cores for float32 and int8 (16 otherwise) and two MMA
/// steps on tensor cores (32; 64 for int8). On CUDA cores a K of at most 64 is one step (no pipeline to fill:
/// a batch of small products), and a matrix-vector product (N = 1, or M = 1, with at least 32 outputs along
/// the other axis) takes a tile one output wide, a thread per output, stepping 128 along K: the product reads
/// the matrix once, and deep steps keep many of its bytes in flight.
TileHint default_tile(std::int64_t M, std::int64_t N, std::int64_t K, DType in, bool tensor_cores) {
    const int big = in == DType::Float64 ? 64 : 128;
    auto fit = [&](std::int64_t extent) {
        return extent <= 16 ? 16 : extent <= 32 ? 32 : extent <= 64 ? 64 : big;
    };
    if (tensor_cores) return {std::min(fit(M), big), std::min(fit(N), big), in == DType::Int8 ? 64 : 32};
    if (N == 1 && M > 16) return {fit(M), 1, kMatrixVectorDepth};
    if (M == 1 && N > 16) return {1, fit(N), kMatrixVectorDepth};
    // float32 stages 32 deep: half the barriers of 16 per product (docs/performance.md, M1).
    int depth = in == DType::Int8 || in == DType::Float32 ? 32 : 16;
    if (K > depth && K <= 64) depth = static_cast<int>(std::bit_ceil(static_cast<std::uint64_t>(K)));
    return {std::min(fit(M), big), std::min(fit(N), big), depth};
}

/// Whether the product runs on tensor cores: the dtype has an mma.sync path (float16, bfloat16, int8; float32
/// under TF32 or 3xTF32), the device has it (compute capability 8.0), and the options do not forbid it
/// (float16, bfloat16 and int8 by default, as every peer runs them; float32 whenever its precision is TF32 or
/// 3xTF32).
bool use_tensor_cores(DType in, ProductPath path, ProductPrecision precision, const DeviceInfo& device) {
    if (!has_tensor_core_path(in, precision) || device.cc_major < 8) return false;
    if (in == DType::Float32)
        return true;  // TF32 or 3xTF32 asked for (a conflicting CudaCores is refused before)
    switch (path) {
        case ProductPath::Auto:
            return true;
        case ProductPath::CudaCores:
            return false;
        case ProductPath::TensorCores:
        case ProductPath::MmaSync:
            return true;
    }
    return false;
}

[[noreturn]] void bad_tile(const ir::Node& m, const TileHint& t, const std::string& why) {
    throw Error(fmt::format("matmul(): operands {} and {}: tile({}, {}, {}) {} ({})",
                            ir::describe(*m.operand(0)), ir::describe(*m.operand(1)), t.rows, t.cols, t.depth,
                            why, short_location(m.loc())));
}

// Threads, warp grid, lane grid and register tile for a block tile: 256 threads (fewer for tiles of fewer
// than 256 outputs... down to one warp), thread tiles as square as the outputs per thread allow (columns
// first), 8 lanes along n where the warp tile allows it.
void shape_threads(MatmulPlan& p, const ir::Node& m, const TileHint& t) {
    const int outputs = p.tile_m * p.tile_n;
    if (outputs < 32)
        bad_tile(m, t, fmt::format("has {} outputs, fewer than the 32 lanes of a warp", outputs));
    const int threads = std::min(256, outputs);
    const int per_thread = outputs / threads;
    const int words = per_thread * register_words(p.out == DType::Int32    ? DType::Int32
                                                  : p.in == DType::Float64 ? DType::Float64
                                                                           : DType::Float32);
    if (words > kAccumulatorWords)
        bad_tile(
            m, t,
            fmt::format(
                "needs {} accumulators per thread ({} registers), more than the {} registers per thread the "
                "kernel allows for accumulators",
                per_thread, words, kAccumulatorWords));
    const int tm = 1 << (std::countr_zero(static_cast<unsigned>(per_thread)) / 2);
    const int tn = per_thread / tm;
    for (int ln : {8, 4, 16, 2, 32, 1}) {
        const int lm = 32 / ln;
        const int wm = lm * tm, wn = ln * tn;
        if (wm > p.tile_m || wn > p.tile_n || p.tile_m % wm || p.tile_n % wn) continue;
        if ((p.tile_m / wm) * (p.tile_n / wn) * 32 != threads) continue;
        p.thread_m = tm;
        p.thread_n = tn;
        p.lanes_m = lm;
        p.lanes_n = ln;
        p.warps_m = p.tile_m / wm;
        p.warps_n = p.tile_n / wn;
        return;
    }
    bad_tile(m, t,
             "has no arrangement of warps and lanes over its outputs (the extents must be powers of two)");
}

// Tensor cores: the warp grid over the block tile in MMA tiles of 16 x 8 outputs: the most warps (up to 8)
// whose warp tiles are whole MMA tiles within the accumulator budget, the warp tile as near twice as tall as
// wide as the grid allows (a warp's A fragments are reused across more B fragments).
void shape_warps_mma(MatmulPlan& p, const ir::Node& m, const TileHint& t) {
    if (p.tile_m % 16 != 0 || p.tile_n % 8 != 0 || p.tile_k % p.mma_k() != 0)
        bad_tile(m, t,
                 fmt::format("is not whole MMA tiles as tensor cores need: tile_m a multiple of 16, tile_n "
                             "of 8 and tile_k of {} "
                             "(the k of one mma.sync for {})",
                             p.mma_k(), name(p.in)));
    for (int warps : {8, 4, 2, 1}) {
        int best = -1, best_cost = 1 << 30;
        for (int wm = 1; wm <= warps; wm *= 2) {
            const int wn = warps / wm;
            if (p.tile_m % (16 * wm) != 0 || p.tile_n % (8 * wn) != 0) continue;
            const int fm = p.tile_m / wm / 16, fn = p.tile_n / wn / 8;
            if (fm * fn * 4 > kAccumulatorWords) continue;
            const int tall = static_cast<int>(std::bit_width(static_cast<unsigned>(p.tile_m / wm))) -
                             static_cast<int>(std::bit_width(static_cast<unsigned>(p.tile_n / wn)));
            const int cost = std::abs(tall - 1);  // warp tiles twice as tall as wide cost 0
            if (cost < best_cost) best = wm, best_cost = cost;
        }
        if (best < 0) continue;
        p.warps_m = best;
        p.warps_n = warps / best;
        p.lanes_m = p.lanes_n = p.thread_m = p.thread_n = 0;
        return;
    }
    bad_tile(m, t,
             fmt::format("needs {} accumulators per thread on tensor cores with 8 warps ({} registers), more "
                         "than the {} registers "
                         "per thread the kernel allows for accumulators",
                         p.tile_m * p.tile_n / 256, p.tile_m * p.tile_n / 256, kAccumulatorWords));
}

// Whether `blocks` blocks of the plan fit one multiprocessor by shared memory (the runtime reserves 1 KiB per
// block) and by threads.
bool fits_blocks(const MatmulPlan& p, const DeviceInfo& device, int blocks) {
    const std::size_t per_block = p.shared_bytes() + 1024;
    return blocks * per_block <= device.shared_mem_per_sm &&
           blocks * p.threads() <= device.max_threads_per_sm;
}

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

void finish_matmul(PlannedMatmul& pm, const std::vector<ir::NodePtr>& outputs,
                   const std::vector<const ir::Node*>& a_inputs, const std::vector<const ir::Node*>& b_inputs,
                   const LayoutOf& layout_of, const DeviceInfo& device,
                   std::span<const Strides> output_strides);

}  // namespace

std::size_t MatmulPlan::shared_bytes() const {
    // wgmma: the ring, 1 KiB of slack to align it to the 128-byte swizzle's 1024-byte pattern, and a full and
    // an empty mbarrier per stage.
    // Then the consumers' epilogue buffers (staged_epilogue).
    if (wgmma)
        return 1024 + static_cast<std::size_t>(stages) * (wgmma_stage_bytes() + 16) + wgmma_epilogue_bytes();
    const std::size_t per_stage =
        static_cast<std::size_t>(tile_m) * pitch_a + static_cast<std::size_t>(tile_k) * pitch_b;
    const std::size_t stage_bytes = per_stage * itemsize(in) * static_cast<std::size_t>(stages);
    return staged_epilogue ? std::max(stage_bytes, epilogue_tile_bytes()) : stage_bytes;
}

bool has_tensor_core_path(DType in, ProductPrecision precision) {
    return in == DType::Float16 || in == DType::BFloat16 || in == DType::Int8 ||
           (in == DType::Float32 && precision != ProductPrecision::Float32);
}

std::string MatmulPlan::path_note() const {
    if (!tensor_cores && in == DType::Float32 && requested_precision != ProductPrecision::Float32)
        return fmt::format(" (product_precision={} asked for; this device has no mma.sync)",
                           product_precision_name(requested_precision));
    if (!tensor_cores && requested == ProductPath::Auto && in != DType::Int8 && has_tensor_core_path(in))
        return fmt::format(" ({} runs on tensor cores by default; this device has no mma.sync)", name(in));
    if (tensor_cores || (requested != ProductPath::TensorCores && requested != ProductPath::MmaSync))
        return {};
    if (has_tensor_core_path(in)) return " (tensor cores asked for; this device has no mma.sync)";
    if (in == DType::Float32)
        return " (tensor cores asked for; float32 takes them only under product_precision tf32 or 3xtf32)";
    return fmt::format(" (tensor cores asked for; {} has no tensor-core path)", name(in));
}

std::uint64_t MatmulPlan::hash() const {
    Hasher h;
    h.add(std::string_view("matmul"));
    for (int v : {static_cast<int>(in),
                  static_cast<int>(out),
                  rank,
                  tile_m,
                  tile_n,
                  tile_k,
                  warps_m,
                  warps_n,
                  lanes_m,
                  lanes_n,
                  thread_m,
                  thread_n,
                  stages,
                  pitch_a,
                  pitch_b,
                  static_cast<int>(hinted),
                  static_cast<int>(vector_a),
                  static_cast<int>(vector_b),
                  static_cast<int>(vector_b_column),
                  a_read,
                  b_read,
                  static_cast<int>(chunked),
                  static_cast<int>(batch_pipelined),
                  blocks_per_sm,
                  static_cast<int>(staged_epilogue),
                  vector_epilogue,
                  static_cast<int>(a_m_fastest),
                  static_cast<int>(b_k_fastest),
                  acc_site,
                  static_cast<int>(tensor_cores),
                  static_cast<int>(requested),
                  static_cast<int>(wgmma),
                  consumers,
                  static_cast<int>(pingpong),
                  static_cast<int>(a_mn_major),
                  static_cast<int>(b_mn_major),
                  a_map_rank,
                  b_map_rank,
                  static_cast<int>(a_map_flat),
                  static_cast<int>(b_map_flat),
                  static_cast<int>(requested_precision),
                  static_cast<int>(split_k)})
        h.add(static_cast<std::uint64_t>(v));
    h.add(std::string_view(wgmma_note));
    h.add(epilogue.hash());
    h.add(static_cast<std::uint64_t>(a_prologue) | static_cast<std::uint64_t>(b_prologue) << 1);
    if (a_prologue) h.add(prologue_a.hash());
    if (b_prologue) h.add(prologue_b.hash());
    return h.digest();
}

namespace {

std::string loads_text(bool a_pieces, bool b_pieces) {
    if (a_pieces && b_pieces)
        return "A and B in 16-byte cp.async pieces where the pointers allow, else element loads";
    if (a_pieces)
        return "A in 16-byte cp.async pieces where the pointers allow, else element loads; B by element "
               "loads";
    if (b_pieces)
        return "A by element loads; B in 16-byte cp.async pieces where the pointers allow, else element "
               "loads";
    return "A and B by element loads through the strides";
}

// A wgmma operand's shared-memory layout: K-major, or M- or N-major (`axis`).
std::string major_text(bool mn, const char* axis) {
    return mn ? fmt::format("{}-major", axis) : std::string("K-major");
}

// A tensor map's batch dimensions in words, where they are not the flat batch entry (rank 3, flat) or none
// (rank 2: one matrix for every entry): coordinates taken from the entry's index.
std::string map_batch_text(int rank, bool flat) {
    if (rank == 2 || flat) return "";
    return fmt::format(", {} batch dimension{} at coordinates taken from the batch entry", rank - 2,
                       rank > 3 ? "s" : "");
}

// The wgmma plan (Hopper): the path and its bound, the warpgroups and the persistent grid, the shared-memory
// ring (and the epilogue buffers after it), the bulk tensor copies and where the epilogue reads from.
std::string wgmma_text(const MatmulPlan& p) {
    const std::string consumers =
        p.pingpong
            ? std::string(
                  "2 consumer warpgroups taking whole tiles in turn (ping-pong: one's epilogue beside "
                  "the other's MMAs)")
            : fmt::format("{} consumer warpgroup{} of 64 rows", p.consumers, p.consumers > 1 ? "s" : "");
    const std::string bytes =
        p.staged_epilogue ? fmt::format("{} bytes, then {} bytes of epilogue buffers",
                                        p.shared_bytes() - p.wgmma_epilogue_bytes(), p.wgmma_epilogue_bytes())
                          : std::to_string(p.shared_bytes());
    const std::string epilogue =
        p.staged_epilogue
            ? fmt::format(
                  "the epilogue through shared memory, 64 rows of {} at a time per consumer, whole "
                  "lines per warp",
                  name(p.out))
            : std::string("the epilogue from the accumulators in registers");
    const bool tf32 = p.in == DType::Float32;
    std::string s = fmt::format(
        "matmul plan: {} x {} -> {}, rank {}, tensor cores (Hopper wgmma.mma_async m64n{}k{} {}into float32: "
        "within the {}bound of docs/semantics.md, section 12{})\n",
        name(p.in), name(p.in), name(p.out), p.rank, p.wgmma_n(), p.wgmma_k(),
        tf32 ? "TF32 (product_precision=tf32: the tensor cores read the float32 operands as TF32) " : "",
        tf32 ? "TF32 " : "",
        tf32                               ? ""
        : p.requested == ProductPath::Auto ? fmt::format("; {} runs on tensor cores by default", name(p.in))
                                           : "");
    if (p.wgmma_a_registers())
        s += fmt::format(
            "operands: {}'s tile is read into registers as the MMAs' A operand (TF32 reads K-major shared "
            "tiles only){}\n",
            p.wgmma_swap() ? "B" : "A",
            p.wgmma_swap() ? "; the MMAs compute the tile of C's transpose, stored transposed back" : "");
    s += fmt::format(
        "tile {}x{}x{}{}: {} threads as a producer warpgroup (tensor memory accelerator copies) and {}; a "
        "persistent grid walking the tiles in groups of {} tile rows\n",
        p.tile_m, p.tile_n, p.tile_k, p.hinted ? " (hinted)" : "", p.threads(), consumers, kWgmmaGroupRows);
    s += fmt::format(
        "shared memory: a ring of {} stages of A {} x {} ({}) and B {} x {} ({}), 128-byte swizzled, full "
        "and empty mbarriers, {} bytes\n",
        p.stages, p.tile_m, p.tile_k, major_text(p.a_mn_major, "M"), p.tile_k, p.tile_n,
        major_text(p.b_mn_major, "N"), bytes);
    s += fmt::format(
        "loads: bulk tensor copies of A (tensor map of rank {}{}) and B (rank {}{}), zeros past M, N and K; "
        "K "
        "in steps of {} over all of K; {}",
        p.a_map_rank, map_batch_text(p.a_map_rank, p.a_map_flat), p.b_map_rank,
        map_batch_text(p.b_map_rank, p.b_map_flat), p.wgmma_k(), epilogue);
    return s;
}

// The path of an mma.sync or CUDA-core plan and what it gives: TF32 or 3xTF32 on tensor cores within their
// bounds, the other tensor-core dtypes (int8 exact), or CUDA cores in the contract's order.
std::string path_text(const MatmulPlan& p) {
    if (p.precision() == ProductPrecision::TF32)
        return "tensor cores (mma.sync m16n8k8 TF32 into float32, product_precision=tf32: the operands "
               "read as TF32 as the fragments are read, their low 13 bits dropped as wgmma drops them; "
               "within the TF32 bound of docs/semantics.md, section 12)";
    if (p.precision() != ProductPrecision::Float32)
        return "tensor cores (mma.sync m16n8k8 TF32 into float32, product_precision=3xtf32: each operand "
               "split into big and small TF32 parts, three MMAs per step; within the 3xTF32 bound of "
               "docs/semantics.md, section 12)";
    if (p.tensor_cores)
        return fmt::format("tensor cores (mma.sync m16n8k{} into {}{}{})", p.mma_k(),
                           p.in == DType::Int8 ? "int32" : "float32",
                           p.in == DType::Int8 ? ": exact, the reference's bits"
                                               : ": within the bound of docs/semantics.md, section 12",
                           p.wgmma_note.empty() ? std::string() : "; not wgmma: " + p.wgmma_note);
    return "CUDA cores (one fma per k in the contract's order)" + p.path_note();
}

// How the block's threads cover the tile: warps of MMA tiles on tensor cores; on CUDA cores warps of lanes,
// each with a register tile of accumulators, the fragments read several elements at once where they can,
// and two blocks per multiprocessor for a product of few K steps.
std::string threads_text(const MatmulPlan& p) {
    if (p.tensor_cores)
        return fmt::format("{} threads as {} x {} warps of {} x {} MMA tiles of 16 x 8", p.threads(),
                           p.warps_m, p.warps_n, p.frags_m(), p.frags_n());
    std::string s =
        fmt::format("{} threads as {} x {} warps of {} x {} lanes, {} x {} accumulators per thread{}",
                    p.threads(), p.warps_m, p.warps_n, p.lanes_m, p.lanes_n, p.thread_m, p.thread_n,
                    p.a_read > 1 || p.b_read > 1
                        ? fmt::format(", fragments read {} elements of A's rows and {} of B's at once",
                                      p.a_read, p.b_read)
                        : "");
    if (p.blocks_per_sm == 2 && !p.batch_pipelined)
        s += "; 2 blocks per multiprocessor (few K steps: at most 128 registers per thread)";
    return s;
}

// How CUDA cores combine K's chunks: shared among blocks (split K), through the pairwise tree's workspace,
// or a single chunk, which a batch_pipelined kernel takes in one step per batch entry.
std::string chunks_text(const MatmulPlan& p) {
    if (p.split_k)
        return ", shared among blocks in aligned groups of chunks along the grid's z; each group's partial "
               "(a subtree of the pairwise tree) through a workspace, the block that completes a tile's "
               "counter combining them in the tree's order";
    if (p.chunked) return ", partials combined in the pairwise tree through a workspace";
    if (p.batch_pipelined)
        return fmt::format(
            " (one chunk: no partials); K in one step, each block walking batch entries with the next one's "
            "tiles copying ({} blocks per multiprocessor)",
            p.blocks_per_sm);
    return " (one chunk: no partials)";
}

// The order over K (steps of the MMA's k on tensor cores, chunks of the contract's order on CUDA cores), and
// the epilogue's path when it goes through shared memory.
std::string order_text(const MatmulPlan& p) {
    std::string s;
    if (p.precision() != ProductPrecision::Float32)
        s = "K in steps of 8 over all of K (zero-filled past K)";
    else if (p.tensor_cores)
        s = fmt::format("K in steps of {} over all of K (zero-filled past K){}", p.mma_k(),
                        p.requested == ProductPath::Auto
                            ? fmt::format(" ({} runs on tensor cores by default)", name(p.in))
                            : "");
    else
        s = fmt::format("K in chunks of {}{}", kProductChunk, chunks_text(p));
    if (p.staged_epilogue)
        s += "; the epilogue through a shared-memory tile of the outputs, whole lines per warp";
    if (p.vector_epilogue > 0)
        s += fmt::format(", {} columns at a time (16-byte vectors) where the pointers allow",
                         p.vector_epilogue);
    return s;
}

// The stage buffers' row padding: 16 bytes (a piece) for A; B's alike, wider under TF32, or none for a B
// narrower than a piece.
std::string padding_text(const MatmulPlan& p) {
    if (p.pitch_b == p.tile_n) return "A's rows padded by 16 bytes, B's narrower than a piece";
    if (p.pitch_b - p.tile_n == p.pitch_a - p.tile_k) return "rows padded by 16 bytes";
    return fmt::format("A's rows padded by 16 bytes, B's by {}", (p.pitch_b - p.tile_n) * itemsize(p.in));
}

// The operands a prologue computes as their tiles load, on a line of its own; empty when there are none.
std::string prologue_text(const MatmulPlan& p) {
    if (!p.a_prologue && !p.b_prologue) return {};
    return fmt::format("\nprologue: {} computed element by element as its tiles load",
                       p.a_prologue && p.b_prologue ? "A and B"
                       : p.a_prologue               ? "A"
                                                    : "B");
}

}  // namespace

std::string MatmulPlan::to_string() const {
    if (wgmma) return wgmma_text(*this);
    return fmt::format(
        "matmul plan: {} x {} -> {}, rank {}, {}\n"
        "tile {}x{}x{}{}: {}\n"
        "shared memory: {} stages of A {} x {} and B {} x {} ({}), {} bytes\n"
        "loads: {}; {}{}",
        name(in), name(in), name(out), rank, path_text(*this), tile_m, tile_n, tile_k,
        hinted ? " (hinted)" : "", threads_text(*this), stages, tile_m, pitch_a, tile_k, pitch_b,
        padding_text(*this), shared_bytes(), loads_text(vector_a, vector_b || vector_b_column),
        order_text(*this), prologue_text(*this));
}

namespace {

// The product's dtypes and sizes: M x K times K x N over the batch axes, and K's chunks of the documented
// order.
void bind_sizes(PlannedMatmul& pm) {
    const ir::Node& m = *pm.product;
    MatmulPlan& p = pm.plan;
    MatmulBinding& b = pm.binding;
    p.in = m.operand(0)->dtype();
    p.out = m.dtype();
    p.rank = m.rank();
    const std::size_t r = static_cast<std::size_t>(p.rank);
    b.M = m.shape()[r - 2];
    b.N = m.shape()[r - 1];
    b.K = m.operand(0)->shape()[r - 1];
    b.batch.assign(m.shape().begin(), m.shape().end() - 2);
    for (std::int64_t e : b.batch) b.batches *= e;
    b.chunks = product_chunks(b.K);
}

// The path: tensor cores where the dtype, the device and the options allow them (use_tensor_cores), else CUDA
// cores, which sum a K of several chunks chunk by chunk through the pairwise tree's workspace. A float32
// product in TF32 or 3xTF32 runs on tensor cores, which product_path=cuda_cores forbids: that is an error.
void choose_path(PlannedMatmul& pm, const DeviceInfo& device, const Options& options) {
    const ir::Node& m = *pm.product;
    MatmulPlan& p = pm.plan;
    MatmulBinding& b = pm.binding;
    p.requested = options.product_path;
    if (p.in == DType::Float32 && options.product_precision != ProductPrecision::Float32 &&
        options.product_path == ProductPath::CudaCores)
        throw Error(fmt::format(
            "matmul(): operands {} and {}: product_precision={} runs float32 products on tensor cores, which "
            "product_path=cuda_cores forbids: set product_path to auto, tensor_cores or mma_sync, or "
            "product_precision to float32 (LOOM_PRODUCT_PATH and LOOM_PRODUCT_PRECISION set the defaults) "
            "({})",
            ir::describe(*m.operand(0)), ir::describe(*m.operand(1)),
            product_precision_name(options.product_precision), short_location(m.loc())));
    p.tensor_cores = use_tensor_cores(p.in, options.product_path, options.product_precision, device);
    if (p.in == DType::Float32) p.requested_precision = options.product_precision;
    p.chunked = b.chunks > 1 && !p.tensor_cores;
    b.levels = p.chunked ? std::bit_width(static_cast<std::uint64_t>(b.chunks)) : 0;
}

// Operand `which` (0: A, 1: B): a strided view of one input, read as it lies, or a prologue, a pointwise plan
// over the operand's shape that the kernel computes as the operand's tiles load. `inputs` receives the
// operand's inputs.
void plan_operand(PlannedMatmul& pm, int which, std::vector<const ir::Node*>& inputs,
                  const LayoutOf& layout_of, const DeviceInfo& device) {
    const ir::Node& m = *pm.product;
    MatmulPlan& p = pm.plan;
    MatmulBinding& b = pm.binding;
    const bool a = which == 0;
    Strides& strides = a ? b.a_strides : b.b_strides;
    const ir::NodePtr& x = m.operand_ptr(which);
    if (!(a ? p.a_prologue : p.b_prologue)) {
        const ir::StridedView v = operand_view(*x, layout_of).value();
        strides = v.strides;
        (a ? b.a_offset : b.b_offset) = v.offset;
        inputs = {v.base};
        return;
    }
    strides.assign(static_cast<std::size_t>(p.rank), 0);
    inputs = pointwise_inputs({x});
    std::vector<InputLayout> ls;
    for (const ir::Node* in : inputs) ls.push_back(layout_of(*in));
    PlannedPointwise pp = plan_pointwise({x}, ls, device.plan_target());
    if (pp.plan.params_in_memory)
        throw InternalError(fmt::format(
            "plan_matmul(): the prologue of {} has more parameters than a launch takes", where_of(m)));
    (a ? p.prologue_a : p.prologue_b) = std::move(pp.plan);
    (a ? b.prologue_a : b.prologue_b) = std::move(pp.binding);
}

// The tile hint: the product's own (matmul(a, b, tile(...))), else the options'; empty for the planner's
// choice.
TileHint tile_hint(const ir::Node& m, const Options& options) {
    const ir::ProductTile hint = ir::product_tile(m);
    return hint.empty() ? options.tile
                        : TileHint{static_cast<int>(hint.rows), static_cast<int>(hint.cols),
                                   static_cast<int>(hint.depth)};
}

// The tile of an mma.sync or CUDA-core plan, each extent the hint's or else the default's (`chosen`), as the
// kernel needs it: powers of two, tile_k within a chunk and in whole 16-byte pieces, and on tensor cores
// tile_n too. Returns the tile as its errors show it.
TileHint choose_tile(MatmulPlan& p, const ir::Node& m, const TileHint& given, const TileHint& chosen) {
    p.tile_m = given.rows ? given.rows : chosen.rows;
    p.tile_n = given.cols ? given.cols : chosen.cols;
    p.tile_k = given.depth ? given.depth : chosen.depth;
    const TileHint shown{p.tile_m, p.tile_n, p.tile_k};
    if (!pow2(p.tile_m) || !pow2(p.tile_n) || !pow2(p.tile_k))
        bad_tile(m, shown, "is not divisible as the kernel needs: every extent must be a power of two");
    if (p.tile_k > kProductChunk)
        bad_tile(m, shown,
                 fmt::format("steps past a chunk: tile_k must divide the chunk of {}", kProductChunk));
    const int piece = p.piece();
    if (p.tile_k % piece != 0)
        bad_tile(m, shown,
                 fmt::format("is not divisible as the kernel needs: tile_k must be a multiple of {} {} "
                             "elements (16 bytes)",
                             piece, name(p.in)));
    if (p.tensor_cores && p.tile_n % piece != 0)
        bad_tile(m, shown,
                 fmt::format("is not divisible as the kernel needs: on tensor cores tile_n must be a "
                             "multiple of {} {} elements (16 bytes)",
                             piece, name(p.in)));
    return shown;
}

// The stage buffers. Rows 16-byte aligned and padded by a piece; a B tile narrower than a piece (a
// matrix-vector product's) is loaded element by element, unpadded. TF32 fragments read B one word per lane,
// k = tig down column grp: rows 8 words apart mod 32 keep the warp's 32 reads in distinct banks (4 words
// apart would pair them). Three stages (two K steps in flight), two when K is one step (no pipeline to fill)
// or when three do not fit the block's shared memory; an error when two do not.
void plan_stages(MatmulPlan& p, const MatmulBinding& b, const ir::Node& m, const TileHint& shown,
                 const DeviceInfo& device) {
    const int piece = p.piece();
    p.pitch_a = p.tile_k + piece;
    const bool tf32 = p.precision() != ProductPrecision::Float32;
    p.pitch_b = tf32 ? p.tile_n + 2 * piece : p.tile_n % piece == 0 ? p.tile_n + piece : p.tile_n;
    p.stages = (b.K + p.tile_k - 1) / p.tile_k <= 1 ? 2 : 3;
    const std::size_t limit = device.shared_mem_per_block_optin;
    if (p.shared_bytes() > limit) p.stages = 2;
    if (p.shared_bytes() > limit)
        bad_tile(
            m, shown,
            fmt::format("needs {} bytes of shared memory in 2 stages, more than the {} bytes per block of {}",
                        p.shared_bytes(), limit, device.name));
}

// A batch of products whose K is one step (CUDA cores): blocks walk the batch entries, copying the next while
// multiplying this one, two blocks per multiprocessor where shared memory holds them and the register tile
// is at most 32 accumulators (two blocks of 256 threads leave 128 registers per thread). Else a block per
// tile and batch entry, the grid's y holding at most 65535 entries.
void plan_batch_pipeline(MatmulPlan& p, MatmulBinding& b, const DeviceInfo& device) {
    b.batch_blocks = std::min<std::int64_t>(b.batches, 65535);
    if (p.tensor_cores || b.K > p.tile_k || b.batches <= 1) return;  // one K step: two stages, one per entry
    const bool two = fits_blocks(p, device, 2) && p.thread_m * p.thread_n <= 32;
    p.blocks_per_sm = two ? 2 : 1;
    const std::int64_t resident = static_cast<std::int64_t>(device.sm_count) * p.blocks_per_sm;
    p.batch_pipelined = true;
    b.batch_blocks =
        std::clamp<std::int64_t>(resident / std::max<std::int64_t>(output_tiles(p, b), 1), 1, b.batch_blocks);
}

// Split K: a product of chunks whose output tiles leave multiprocessors idle (a matrix times a vector with K
// past a chunk) shares its chunks among blocks: the fewest groups (a power of two, at most 16) that give
// every multiprocessor a block, each of a power of two chunks, within the split counters the runtime keeps.
void plan_split_k(MatmulPlan& p, MatmulBinding& b, const DeviceInfo& device) {
    if (!p.chunked || p.batch_pipelined || output_tiles(p, b) * b.batches > kSplitCounterLimit) return;
    const std::int64_t blocks = output_tiles(p, b) * b.batch_blocks;
    std::int64_t groups = 1;
    while (groups < 16 && groups < b.chunks && blocks * groups < device.sm_count) groups *= 2;
    if (groups == 1) return;
    // chunks >= 2 and groups >= 2: groups of bit_ceil(ceil(chunks / groups)) chunks make at least two groups.
    p.split_k = true;
    b.group_chunks = static_cast<std::int64_t>(
        std::bit_ceil(static_cast<std::uint64_t>((b.chunks + groups - 1) / groups)));
    b.k_groups = (b.chunks + b.group_chunks - 1) / b.group_chunks;
}

// The operands' loads: 16-byte cp.async pieces (compute capability 8.0 and newer) of an operand that is an
// input with unit stride along its rows and 16-byte aligned (B in whole pieces, or for a tile one column wide
// along k), and which axis each has fastest. Fragments in 16-byte shared reads on CUDA cores for float32: 4
// LDS.128 per k of an 8 x 8 register tile instead of 16 LDS.32.
void plan_loads(MatmulPlan& p, const MatmulBinding& b, bool a_aligned, bool b_aligned,
                const DeviceInfo& device) {
    const std::size_t r = static_cast<std::size_t>(p.rank);
    p.a_m_fastest = !p.a_prologue && b.a_strides[r - 2] == 1 && b.a_strides[r - 1] != 1;
    p.b_k_fastest = !p.b_prologue && b.b_strides[r - 2] == 1 && b.b_strides[r - 1] != 1;
    p.vector_a = device.cc_major >= 8 && !p.a_prologue && b.a_strides[r - 1] == 1 && a_aligned;
    p.vector_b = device.cc_major >= 8 && !p.b_prologue && p.tile_n % p.piece() == 0 &&
                 b.b_strides[r - 1] == 1 && b_aligned;
    p.vector_b_column =
        device.cc_major >= 8 && !p.b_prologue && p.tile_n == 1 && b.b_strides[r - 2] == 1 && b_aligned;
    p.a_read = !p.tensor_cores && p.in == DType::Float32 ? 4 : 1;
    p.b_read = !p.tensor_cores && p.in == DType::Float32 && p.thread_n % 4 == 0 && p.pitch_b % 4 == 0 ? 4 : 1;
}

// The epilogue through shared memory where a lane's columns come in groups of 4 (stored as 16-byte pieces)
// and its tile fits the shared memory a block may have; not for batch_pipelined kernels, whose epilogue, a
// large share of their time, stores faster from the registers. Two blocks per multiprocessor for a staged
// product of few K steps (K at most kTwoBlocksDepth): each tile's fixed costs, the pipeline's fill and the
// epilogue, are then a large share of its time, and the other block's K loop runs beside them.
// __launch_bounds__(256, 2) caps the registers at 128 (a few words spill); a long K loses a little that way,
// so it stays at one block.
void plan_epilogue_staging(MatmulPlan& p, const MatmulBinding& b, const DeviceInfo& device) {
    p.staged_epilogue =
        p.b_read == 4 && !p.batch_pipelined && p.epilogue_tile_bytes() <= device.shared_mem_per_block_optin;
    if (p.staged_epilogue && b.K <= kTwoBlocksDepth && fits_blocks(p, device, 2)) p.blocks_per_sm = 2;
}

}  // namespace

PlannedMatmul plan_matmul(const std::vector<ir::NodePtr>& outputs, const LayoutOf& layout_of,
                          const DeviceInfo& device, std::span<const Strides> output_strides,
                          const Options& options) {
    PlannedMatmul pm;
    pm.product = product_of(outputs);
    const ir::Node& m = *pm.product;
    MatmulPlan& p = pm.plan;
    MatmulBinding& b = pm.binding;
    bind_sizes(pm);
    choose_path(pm, device, options);
    // Each operand: a strided view of an input, or a prologue over the operand's shape.
    p.a_prologue = !operand_view(*m.operand(0), layout_of);
    p.b_prologue = !operand_view(*m.operand(1), layout_of);
    std::vector<const ir::Node*> a_inputs, b_inputs;
    plan_operand(pm, 0, a_inputs, layout_of, device);
    plan_operand(pm, 1, b_inputs, layout_of, device);

    // Hopper's warpgroup MMAs where they can run the product; else the tile, then its threads.
    const TileHint given = tile_hint(m, options);
    const TileHint chosen = default_tile(b.M, b.N, b.K, p.in, p.tensor_cores);
    p.hinted = !given.empty();
    const bool a_aligned = !p.a_prologue && layout_of(*a_inputs[0]).aligned16;
    const bool b_aligned = !p.b_prologue && layout_of(*b_inputs[0]).aligned16;
    if (detail::plan_wgmma(pm, given, a_aligned, b_aligned, device)) {
        finish_matmul(pm, outputs, a_inputs, b_inputs, layout_of, device, output_strides);
        return pm;
    }
    const TileHint shown = choose_tile(p, m, given, chosen);
    plan_stages(p, b, m, shown, device);
    if (p.tensor_cores)
        shape_warps_mma(p, m, shown);
    else
        shape_threads(p, m, shown);
    plan_batch_pipeline(p, b, device);
    plan_split_k(p, b, device);
    plan_loads(p, b, a_aligned, b_aligned, device);
    plan_epilogue_staging(p, b, device);
    finish_matmul(pm, outputs, a_inputs, b_inputs, layout_of, device, output_strides);
    return pm;
}

namespace {

// The site where the epilogue reads the product: exactly one, element by element. A second site (a view of
// the product) would read memory that holds no product; the partition refuses such kernels as epilogues.
// Whatever access the pointwise plan gave the placeholder (an extent of 1 may make it a broadcast), element e
// of the epilogue's space is element e of the product (the partition fused it so): its value is passed in.
int accumulator_site(const PlannedMatmul& pm, const std::vector<const ir::Node*>& ep_inputs) {
    const PointwisePlan& ep = pm.plan.epilogue;
    int site = -1;
    for (std::size_t s = 0; s < ep.loads.size(); ++s) {
        if (ep_inputs[static_cast<std::size_t>(ep.loads[s].input)] != pm.accumulators.get()) continue;
        if (site >= 0)
            throw InternalError(fmt::format(
                "plan_matmul(): the epilogue of {} reads the product at two sites", where_of(*pm.product)));
        site = static_cast<int>(s);
    }
    if (site < 0)
        throw InternalError(fmt::format("plan_matmul(): the epilogue of {} does not read the product",
                                        where_of(*pm.product)));
    return site;
}

// 4 columns at once where a thread's columns come in groups of 4 (b_read) and the product's float32 values
// are read as they are, contiguously: in the staged walk a warp then covers 512 bytes of a row per step, and
// from registers (batch-pipelined kernels) each lane's 16 bytes instead of 4-byte stores 16 bytes apart.
// 0 (element by element) elsewhere.
int vector_epilogue_width(const MatmulPlan& p) {
    const OperandPlan& acc = p.epilogue.loads[static_cast<std::size_t>(p.acc_site)];
    const bool float32 = p.in == DType::Float32 && p.out == DType::Float32 && acc.dtype == DType::Float32;
    if (!p.tensor_cores && !p.wgmma && float32 && p.b_read == 4 && p.epilogue.vector_width == 4 &&
        acc.access == Access::Contiguous && p.tile_n % 4 == 0 && p.epilogue_pitch() % 4 == 0)
        return 4;
    // wgmma's staged buffer holds 16-bit values in 16-byte pieces: a vector of 4 or 8 lies in one piece.
    const int w = p.epilogue.vector_width;
    if (p.wgmma && p.staged_epilogue && (w == 4 || w == 8) && acc.access == Access::Contiguous &&
        (64 * p.tile_n) % (128 * w) == 0)
        return w;
    return 0;
}

// The epilogue: the kernel's outputs over a placeholder for the product ("accumulators"), a pointwise plan
// over the product's shape, writing each output at its given strides (contiguous otherwise). The kernel's
// inputs are A's, B's, then the epilogue's, the placeholder among them.
void plan_epilogue(PlannedMatmul& pm, const std::vector<ir::NodePtr>& outputs,
                   const std::vector<const ir::Node*>& a_inputs, const std::vector<const ir::Node*>& b_inputs,
                   const LayoutOf& layout_of, const DeviceInfo& device,
                   std::span<const Strides> output_strides) {
    const ir::Node& m = *pm.product;
    pm.accumulators = ir::input(m.dtype(), m.shape(), "accumulators", {}, m.loc());
    pm.epilogue_outputs =
        ir::rewrite(outputs, [&](const ir::Node& n, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
            return &n == &m ? pm.accumulators : nullptr;
        });
    std::vector<InputLayout> layouts;
    pm.inputs = a_inputs;
    pm.inputs.insert(pm.inputs.end(), b_inputs.begin(), b_inputs.end());
    pm.a_inputs = a_inputs.size();
    pm.b_inputs = b_inputs.size();
    const std::vector<const ir::Node*> ep_inputs = pointwise_inputs(pm.epilogue_outputs);
    for (const ir::Node* in : ep_inputs) {
        pm.inputs.push_back(in);
        layouts.push_back(in == pm.accumulators.get()
                              ? InputLayout{m.dtype(), contiguous_strides(m.shape()), true}
                              : layout_of(*in));
    }
    std::vector<Strides> out_strides;
    bool strided = false;
    for (std::size_t j = 0; j < outputs.size(); ++j) {
        const bool given_strides = j < output_strides.size() && !output_strides[j].empty();
        out_strides.push_back(given_strides ? output_strides[j] : contiguous_strides(outputs[j]->shape()));
        strided = strided || given_strides;
    }
    PlannedPointwise ep = strided ? plan_pointwise(pm.epilogue_outputs, layouts, device.plan_target(),
                                                   PointwiseUse::Kernel, out_strides)
                                  : plan_pointwise(pm.epilogue_outputs, layouts, device.plan_target());
    if (ep.plan.params_in_memory)
        throw InternalError(fmt::format(
            "plan_matmul(): the epilogue of {} has more parameters than a launch takes", where_of(m)));
    pm.plan.epilogue = std::move(ep.plan);
    pm.binding.epilogue = std::move(ep.binding);
    pm.plan.acc_site = accumulator_site(pm, ep_inputs);
    pm.plan.vector_epilogue = vector_epilogue_width(pm.plan);
}

// Appends the fields of a product kernel's parameter struct: its own (Product: field `a`, axis `b`) and the
// structs of its epilogue and prologues (Epilogue: 2 the epilogue, 3 A's prologue, 4 B's).
struct ProductParams {
    ParamLayout& layout;
    DType in;

    void add(int field, int axis, std::string fname, ParamType type, std::size_t size, std::size_t align) {
        ParamField f;
        f.kind = ParamField::Kind::Product;
        f.a = field;
        f.b = axis;
        f.name = std::move(fname);
        f.type = type;
        f.dtype = in;
        f.size = size;
        f.align = align;
        layout.add(std::move(f));
    }
    void add_part(int which, const char* fname, const PointwisePlan& part) {
        ParamField f;
        f.kind = ParamField::Kind::Epilogue;
        f.a = which;
        f.name = fname;
        f.type = ParamType::Struct;
        f.size = part.params.size;
        f.align = std::max<std::size_t>(part.params.align, 1);
        layout.add(std::move(f));
    }
};

// wgmma: the tensor maps first, 64-byte aligned and passed by value (the kernel's parameter is
// __grid_constant__), then the sizes and the epilogue's struct.
void layout_wgmma_params(MatmulPlan& p) {
    ProductParams P{p.params, p.in};
    P.add(FieldMapA, 0, "tmap_a", ParamType::Opaque, kTensorMapBytes, 64);
    P.add(FieldMapB, 0, "tmap_b", ParamType::Opaque, kTensorMapBytes, 64);
    P.add(FieldM, 0, "M", ParamType::Int64, 8, 8);
    P.add(FieldN, 0, "N", ParamType::Int64, 8, 8);
    P.add(FieldK, 0, "K", ParamType::Int64, 8, 8);
    P.add(FieldBatches, 0, "batches", ParamType::Int64, 8, 8);
    // The coordinates of batch dimensions that are not the flat batch entry: (batch / divisor) % extent.
    for (int which : {0, 1}) {
        const int rank = which == 0 ? p.a_map_rank : p.b_map_rank;
        if (rank == 2 || (which == 0 ? p.a_map_flat : p.b_map_flat)) continue;
        const char op = which == 0 ? 'a' : 'b';
        for (int d = 0; d + 2 < rank; ++d) {
            P.add(which == 0 ? FieldMapDivisorA : FieldMapDivisorB, d, fmt::format("{}_bdiv{}", op, d),
                  ParamType::Int64, 8, 8);
            P.add(which == 0 ? FieldMapExtentA : FieldMapExtentB, d, fmt::format("{}_bext{}", op, d),
                  ParamType::Int64, 8, 8);
        }
    }
    if (p.vector_epilogue > 0) P.add(FieldPieces, 0, "pieces", ParamType::Int64, 8, 8);  // bit 2 only
    P.add_part(2, "ep", p.epilogue);
    p.params.finish();
}

// mma.sync and CUDA cores: the operands (those no prologue computes), the sizes, the batch extents, both
// operands' strides, the chunk tree's workspace, a split K's group size and counters, the pieces flag, then
// the prologues' and the epilogue's structs.
void layout_product_params(MatmulPlan& p) {
    ProductParams P{p.params, p.in};
    if (!p.a_prologue) P.add(FieldA, 0, "a", ParamType::ConstPointer, 8, 8);
    if (!p.b_prologue) P.add(FieldB, 0, "b", ParamType::ConstPointer, 8, 8);
    P.add(FieldM, 0, "M", ParamType::Int64, 8, 8);
    P.add(FieldN, 0, "N", ParamType::Int64, 8, 8);
    P.add(FieldK, 0, "K", ParamType::Int64, 8, 8);
    P.add(FieldChunks, 0, "chunks", ParamType::Int64, 8, 8);
    P.add(FieldBatches, 0, "batches", ParamType::Int64, 8, 8);
    for (int d = 0; d + 2 < p.rank; ++d)
        P.add(FieldBatchExtent, d, fmt::format("batch{}", d), ParamType::Int64, 8, 8);
    for (int d = 0; d < p.rank; ++d) P.add(FieldAStride, d, fmt::format("a_s{}", d), ParamType::Int64, 8, 8);
    for (int d = 0; d < p.rank; ++d) P.add(FieldBStride, d, fmt::format("b_s{}", d), ParamType::Int64, 8, 8);
    if (p.chunked) P.add(FieldWorkspace, 0, "ws", ParamType::RawPointer, 8, 8);
    if (p.split_k) {
        P.add(FieldGroupChunks, 0, "group_chunks", ParamType::Int64, 8, 8);
        P.add(FieldCounters, 0, "count", ParamType::RawPointer, 8, 8);
    }
    P.add(FieldPieces, 0, "pieces", ParamType::Int64, 8, 8);
    if (p.a_prologue) P.add_part(3, "pa", p.prologue_a);
    if (p.b_prologue) P.add_part(4, "pb", p.prologue_b);
    P.add_part(2, "ep", p.epilogue);
    p.params.finish();
}

// The epilogue's plan and the parameters, for every path; the parameters must fit one launch.
void finish_matmul(PlannedMatmul& pm, const std::vector<ir::NodePtr>& outputs,
                   const std::vector<const ir::Node*>& a_inputs, const std::vector<const ir::Node*>& b_inputs,
                   const LayoutOf& layout_of, const DeviceInfo& device,
                   std::span<const Strides> output_strides) {
    plan_epilogue(pm, outputs, a_inputs, b_inputs, layout_of, device, output_strides);
    MatmulPlan& p = pm.plan;
    if (p.wgmma)
        layout_wgmma_params(p);
    else
        layout_product_params(p);
    if (p.params.size > device.param_limit_bytes)
        throw InternalError(fmt::format("plan_matmul(): {} bytes of parameters for {}", p.params.size,
                                        where_of(*pm.product)));
}

}  // namespace

LaunchConfig matmul_launch(const PlannedMatmul& pm) {
    const MatmulPlan& p = pm.plan;
    const MatmulBinding& b = pm.binding;
    LaunchConfig lc;
    if (b.M == 0 || b.N == 0 || b.batches == 0) return lc;
    if (p.wgmma) {  // the persistent grid: each block walks tiles blockIdx.x, + gridDim.x, ...
        lc.grid_x = static_cast<std::uint32_t>(b.persistent_blocks);
        lc.grid_y = 1;
        lc.block_x = static_cast<std::uint32_t>(p.threads());
        return lc;
    }
    const std::int64_t tiles = output_tiles(p, b);
    if (tiles > 0x7fffffff)
        throw Error(fmt::format("matmul(): {} x {} outputs need {} tiles, more than a launch holds", b.M, b.N,
                                tiles));
    lc.grid_x = static_cast<std::uint32_t>(tiles);
    lc.grid_y = static_cast<std::uint32_t>(b.batch_blocks);
    lc.grid_z = static_cast<std::uint32_t>(b.k_groups);  // 1 unless split_k
    lc.block_x = static_cast<std::uint32_t>(p.threads());
    return lc;
}

MatmulLoads select_matmul_loads(const PlannedMatmul& pm, std::span<const void* const> inputs,
                                std::span<void* const> outputs) {
    const void* a = inputs[0];
    const void* b = inputs[pm.a_inputs];
    const MatmulPlan& p = pm.plan;
    const MatmulBinding& bd = pm.binding;
    const auto piece = static_cast<std::int64_t>(p.piece());
    auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
    auto rows_aligned = [&](const Strides& s) {
        for (std::size_t d = 0; d + 1 < s.size(); ++d)
            if (s[d] % piece != 0) return false;
        return s.back() == 1;
    };
    const std::int64_t isz = static_cast<std::int64_t>(itemsize(p.in));
    a = static_cast<const char*>(a) + bd.a_offset * isz;
    b = static_cast<const char*>(b) + bd.b_offset * isz;
    MatmulLoads loads;
    loads.a_pieces = p.vector_a && aligned(a) && bd.K % piece == 0 && rows_aligned(bd.a_strides);
    loads.b_pieces = p.vector_b && aligned(b) && bd.N % piece == 0 && rows_aligned(bd.b_strides);
    if (p.vector_b_column) {
        // Pieces along k of each column: unit stride along k, every other axis with more than one entry
        // (batch axes, n) in whole pieces, K whole pieces.
        bool ok = aligned(b) && bd.K % piece == 0 && bd.b_strides[bd.b_strides.size() - 2] == 1;
        const std::size_t rank = bd.b_strides.size();
        for (std::size_t d = 0; d + 2 < rank; ++d)
            if (bd.batch[d] > 1 && bd.b_strides[d] % piece != 0) ok = false;
        if (bd.N > 1 && bd.b_strides[rank - 1] % piece != 0) ok = false;
        loads.b_pieces = ok;
    }
    if (p.vector_epilogue > 0 && bd.N % p.vector_epilogue == 0)
        loads.epilogue_vectors =
            select_variant(p.epilogue, bd.epilogue, inputs.subspan(pm.a_inputs + pm.b_inputs), outputs) ==
            Variant::Vector;
    return loads;
}

std::size_t matmul_workspace_bytes(const PlannedMatmul& pm) {
    if (!pm.plan.chunked) return 0;
    const std::size_t acc = pm.plan.in == DType::Float64 ? 8 : 4;
    const auto plane = static_cast<std::size_t>(pm.binding.batches * pm.binding.M * pm.binding.N) * acc;
    if (pm.plan.split_k) {  // per group: its stack of the group's tree (bit_width(group_chunks) slots), then
                            // its partial
        const auto groups = static_cast<std::size_t>(pm.binding.k_groups);
        return groups *
               (static_cast<std::size_t>(
                    std::bit_width(static_cast<std::uint64_t>(pm.binding.group_chunks))) +
                1) *
               plane;
    }
    return static_cast<std::size_t>(pm.binding.levels) * plane;
}

std::int64_t matmul_counter_count(const PlannedMatmul& pm) {
    if (!pm.plan.split_k) return 0;
    return output_tiles(pm.plan, pm.binding) * pm.binding.batches;
}

std::array<std::size_t, 2> matmul_tensor_map_offsets(const PlannedMatmul& pm) {
    if (!pm.plan.wgmma) throw InternalError("matmul_tensor_map_offsets(): not a wgmma plan");
    return {pm.plan.params.field(ParamField::Kind::Product, FieldMapA).offset,
            pm.plan.params.field(ParamField::Kind::Product, FieldMapB).offset};
}

void pack_matmul_params(const PlannedMatmul& pm, std::span<const void* const> inputs,
                        std::span<void* const> outputs, void* workspace, void* counters, MatmulLoads loads,
                        std::span<std::byte> out, std::span<const std::byte> tensor_maps) {
    if (pm.plan.wgmma && !tensor_maps.empty() && tensor_maps.size() != 2 * kTensorMapBytes)
        throw InternalError("pack_matmul_params(): a wgmma plan with tensor maps of the wrong size");
    if (inputs.size() != pm.inputs.size())
        throw InternalError("pack_matmul_params(): input count does not match the plan");
    const void* a = inputs[0];
    const void* b = inputs[pm.a_inputs];
    const std::span<const void*const> a_in = inputs.subspan(0, pm.a_inputs),
                                      b_in = inputs.subspan(pm.a_inputs, pm.b_inputs);
    const std::span<const void* const> epilogue_inputs = inputs.subspan(pm.a_inputs + pm.b_inputs);
    static void* const no_output[1] = {nullptr};
    const MatmulPlan& p = pm.plan;
    const MatmulBinding& bd = pm.binding;
    if (out.size() < p.params.size)
        throw InternalError("pack_matmul_params(): buffer smaller than the parameters");
    std::memset(out.data(), 0, p.params.size);
    const std::size_t isz = itemsize(p.in);
    for (const ParamField& f : p.params.fields) {
        auto put = [&](auto v) { std::memcpy(out.data() + f.offset, &v, sizeof v); };
        if (f.kind == ParamField::Kind::Epilogue) {
            if (f.a == 2)
                pack_params(p.epilogue, bd.epilogue, epilogue_inputs, outputs, out.subspan(f.offset, f.size));
            else if (f.a == 3)
                pack_params(p.prologue_a, bd.prologue_a, a_in, no_output, out.subspan(f.offset, f.size));
            else
                pack_params(p.prologue_b, bd.prologue_b, b_in, no_output, out.subspan(f.offset, f.size));
            continue;
        }
        const auto axis = static_cast<std::size_t>(f.b);
        switch (f.a) {
            case FieldA:
                put(static_cast<const void*>(static_cast<const char*>(a) +
                                             bd.a_offset * static_cast<std::int64_t>(isz)));
                break;
            case FieldB:
                put(static_cast<const void*>(static_cast<const char*>(b) +
                                             bd.b_offset * static_cast<std::int64_t>(isz)));
                break;
            case FieldM:
                put(bd.M);
                break;
            case FieldN:
                put(bd.N);
                break;
            case FieldK:
                put(bd.K);
                break;
            case FieldChunks:
                put(bd.chunks);
                break;
            case FieldBatches:
                put(bd.batches);
                break;
            case FieldBatchExtent:
                put(bd.batch[axis]);
                break;
            case FieldAStride:
                put(bd.a_strides[axis]);
                break;
            case FieldBStride:
                put(bd.b_strides[axis]);
                break;
            case FieldWorkspace:
                put(workspace);
                break;
            case FieldPieces:
                put(static_cast<std::int64_t>(loads.a_pieces) |
                    static_cast<std::int64_t>(loads.b_pieces) << 1 |
                    static_cast<std::int64_t>(loads.epilogue_vectors) << 2);
                break;
            case FieldGroupChunks:
                put(bd.group_chunks);
                break;
            case FieldMapDivisorA:
                put(bd.a_map_batch.at(axis).divisor);
                break;
            case FieldMapExtentA:
                put(bd.a_map_batch.at(axis).extent);
                break;
            case FieldMapDivisorB:
                put(bd.b_map_batch.at(axis).divisor);
                break;
            case FieldMapExtentB:
                put(bd.b_map_batch.at(axis).extent);
                break;
            case FieldCounters:
                if (!counters)
                    throw InternalError("pack_matmul_params(): a split-K plan without its counters");
                put(counters);
                break;
            case FieldMapA:  // left zero without the maps: the caller encodes them in place
                if (!tensor_maps.empty())
                    std::memcpy(out.data() + f.offset, tensor_maps.data(), kTensorMapBytes);
                break;
            case FieldMapB:
                if (!tensor_maps.empty())
                    std::memcpy(out.data() + f.offset, tensor_maps.data() + kTensorMapBytes, kTensorMapBytes);
                break;
            default:
                throw InternalError(fmt::format("pack_matmul_params(): parameter {}", f.name));
        }
    }
}

}  // namespace loom::codegen
