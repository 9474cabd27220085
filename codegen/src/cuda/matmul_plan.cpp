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
    FieldCounters
};

/// An operand of the product as a strided view of one input: the input, its element offset and strides.
struct OperandView {
    const ir::Node* input = nullptr;
    std::int64_t offset = 0;
    Strides strides;
};

// Whether the product's operand is broadcasts, permutes and slices of an Input (else a prologue computes it).
bool is_view_of_input(const ir::Node& x) {
    const ir::Node* n = &x;
    while (ir::is_view(n->op()) && n->op() != ir::Op::Reshape) n = n->operand(0);
    return n->op() == ir::Op::Input;
}

// Composes the chain of views from the product's operand down to its Input into one strided view.
OperandView operand_view(const ir::Node& x, const LayoutOf& layout_of) {
    std::vector<const ir::Node*> chain;
    const ir::Node* n = &x;
    while (ir::is_view(n->op())) {
        chain.push_back(n);
        n = n->operand(0);
    }
    if (n->op() != ir::Op::Input)
        throw InternalError(
            fmt::format("plan_matmul(): operand {} is not a view of an input", ir::describe(x)));
    OperandView v;
    v.input = n;
    v.strides = layout_of(*n).strides;
    Shape shape = n->shape();
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        const ir::Node& view = **it;
        const Shape& to = view.shape();
        switch (view.op()) {
            case ir::Op::BroadcastTo: {
                Strides st(to.size(), 0);
                const std::size_t lead = to.size() - shape.size();
                for (std::size_t d = 0; d < shape.size(); ++d)
                    st[lead + d] = shape[d] == to[lead + d] ? v.strides[d] : 0;
                v.strides = std::move(st);
                break;
            }
            case ir::Op::Permute: {
                Strides st(to.size());
                for (std::size_t d = 0; d < to.size(); ++d)
                    st[d] = v.strides[static_cast<std::size_t>(view.ints()[d])];
                v.strides = std::move(st);
                break;
            }
            case ir::Op::Slice:
                for (std::size_t d = 0; d < to.size(); ++d) {
                    v.offset += view.ints()[2 * d] * v.strides[d];
                    v.strides[d] *= view.ints()[2 * d + 1];
                }
                break;
            default:
                throw InternalError(fmt::format(
                    "plan_matmul(): operand view {} is not a broadcast, permute or slice (the partition "
                    "materializes reshaped operands)",
                    ir::describe(view)));
        }
        shape = to;
    }
    return v;
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
    int depth = in == DType::Int8 || in == DType::Float32
                    ? 32
                    : 16;  // float32: half the barriers of 16 (M1 +11% on the H200)
    if (K > depth && K <= 64) depth = static_cast<int>(std::bit_ceil(static_cast<std::uint64_t>(K)));
    return {std::min(fit(M), big), std::min(fit(N), big), depth};
}

/// Whether the product runs on tensor cores: the dtype has an mma.sync path (float16, bfloat16, int8; float32
/// under TF32 or 3xTF32), the device has it (compute capability 8.0), and the options ask for it (int8 by
/// default: exact either way; float32 whenever its precision is TF32 or 3xTF32).
bool use_tensor_cores(DType in, ProductPath path, ProductPrecision precision, const DeviceInfo& device) {
    if (!has_tensor_core_path(in, precision) || device.cc_major < 8) return false;
    if (in == DType::Float32)
        return true;  // TF32 or 3xTF32 asked for (a conflicting CudaCores is refused before)
    switch (path) {
        case ProductPath::Auto:
            return in == DType::Int8;
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
}  // namespace

std::string MatmulPlan::to_string() const {
    std::string path, threads_text, order;
    if (wgmma) {
        const auto major = [](bool mn, const char* axis) {
            return mn ? fmt::format("{}-major", axis) : std::string("K-major");
        };
        return fmt::format(
            "matmul plan: {} x {} -> {}, rank {}, tensor cores (Hopper wgmma.mma_async m64n{}k16 into "
            "float32: within the bound of "
            "docs/semantics.md, section 12{})\n"
            "tile {}x{}x{}{}: {} threads as a producer warpgroup (tensor memory accelerator copies) and {}; "
            "a persistent grid "
            "walking the tiles in groups of {} tile rows\n"
            "shared memory: a ring of {} stages of A {} x {} ({}) and B {} x {} ({}), 128-byte swizzled, "
            "full and empty mbarriers, {} "
            "bytes\n"
            "loads: bulk tensor copies of A (tensor map of rank {}) and B (rank {}), zeros past M, N and K; "
            "K in steps of 16 over all "
            "of K; {}",
            name(in), name(in), name(out), rank, tile_n,
            requested == ProductPath::TensorCores ? "" : "; tensor cores asked for", tile_m, tile_n, tile_k,
            hinted ? " (hinted)" : "", threads(),
            pingpong ? std::string("2 consumer warpgroups taking whole tiles in turn (ping-pong: one's "
                                   "epilogue beside the other's MMAs)")
                     : fmt::format("{} consumer warpgroup{} of 64 rows", consumers, consumers > 1 ? "s" : ""),
            kWgmmaGroupRows, stages, tile_m, tile_k, major(a_mn_major, "M"), tile_k, tile_n,
            major(b_mn_major, "N"),
            staged_epilogue ? fmt::format("{} bytes, then {} bytes of epilogue buffers",
                                          shared_bytes() - wgmma_epilogue_bytes(), wgmma_epilogue_bytes())
                            : std::to_string(shared_bytes()),
            a_map_rank, b_map_rank,
            staged_epilogue ? fmt::format("the epilogue through shared memory, 64 rows of {} at a time per "
                                          "consumer, whole lines per warp",
                                          name(out))
                            : std::string("the epilogue from the accumulators in registers"));
    }
    if (precision() != ProductPrecision::Float32) {
        path = precision() == ProductPrecision::TF32
                   ? std::string(
                         "tensor cores (mma.sync m16n8k8 TF32 into float32, product_precision=tf32: the "
                         "operands rounded to TF32 "
                         "as the fragments are read; within the TF32 bound of docs/semantics.md, section 12)")
                   : std::string(
                         "tensor cores (mma.sync m16n8k8 TF32 into float32, product_precision=3xtf32: each "
                         "operand split into "
                         "big and small TF32 parts, three MMAs per step; within the 3xTF32 bound of "
                         "docs/semantics.md, section 12)");
        threads_text = fmt::format("{} threads as {} x {} warps of {} x {} MMA tiles of 16 x 8", threads(),
                                   warps_m, warps_n, frags_m(), frags_n());
        order = "K in steps of 8 over all of K (zero-filled past K)";
    } else if (tensor_cores) {
        path = fmt::format("tensor cores (mma.sync m16n8k{} into {}{}{})", mma_k(),
                           in == DType::Int8 ? "int32" : "float32",
                           in == DType::Int8 ? ": exact, the reference's bits"
                                             : ": within the bound of docs/semantics.md, section 12",
                           wgmma_note.empty() ? std::string() : "; not wgmma: " + wgmma_note);
        threads_text = fmt::format("{} threads as {} x {} warps of {} x {} MMA tiles of 16 x 8", threads(),
                                   warps_m, warps_n, frags_m(), frags_n());
        order = fmt::format("K in steps of {} over all of K (zero-filled past K){}", mma_k(),
                            requested == ProductPath::Auto ? " (int8 runs on tensor cores by default)" : "");
    } else {
        path = "CUDA cores (one fma per k in the contract's order)" + path_note();
        threads_text =
            fmt::format("{} threads as {} x {} warps of {} x {} lanes, {} x {} accumulators per thread{}",
                        threads(), warps_m, warps_n, lanes_m, lanes_n, thread_m, thread_n,
                        a_read > 1 || b_read > 1
                            ? fmt::format(", fragments read {} elements of A's rows and {} of B's at once",
                                          a_read, b_read)
                            : "");
        if (blocks_per_sm == 2 && !batch_pipelined)
            threads_text += "; 2 blocks per multiprocessor (few K steps: at most 128 registers per thread)";
        order = fmt::format(
            "K in chunks of {}{}", kProductChunk,
            split_k
                ? ", shared among blocks in aligned groups of chunks along the grid's z; each group's "
                  "partial (a subtree of the pairwise tree) through a workspace, the block that completes "
                  "a tile's counter combining them in the tree's order"
            : chunked ? ", partials combined in the pairwise tree through a workspace"
            : batch_pipelined
                ? fmt::format(
                      " (one chunk: no partials); K in one step, each block walking batch entries with "
                      "the next one's tiles copying ({} blocks per multiprocessor)",
                      blocks_per_sm)
                : std::string(" (one chunk: no partials)"));
    }
    return fmt::format(
        "matmul plan: {} x {} -> {}, rank {}, {}\n"
        "tile {}x{}x{}{}: {}\n"
        "shared memory: {} stages of A {} x {} and B {} x {} ({}), {} bytes\n"
        "loads: {}; {}{}",
        name(in), name(in), name(out), rank, path, tile_m, tile_n, tile_k, hinted ? " (hinted)" : "",
        threads_text, stages, tile_m, pitch_a, tile_k, pitch_b,
        pitch_b == tile_n ? std::string("A's rows padded by 16 bytes, B's narrower than a piece")
        : pitch_b - tile_n == pitch_a - tile_k
            ? fmt::format("rows padded by 16 bytes")
            : fmt::format("A's rows padded by 16 bytes, B's by {}", (pitch_b - tile_n) * itemsize(in)),
        shared_bytes(), loads_text(vector_a, vector_b || vector_b_column),
        staged_epilogue
            ? order + "; the epilogue through a shared-memory tile of the outputs, whole lines per warp"
            : order,
        a_prologue || b_prologue ? fmt::format("\nprologue: {} computed element by element as its tiles load",
                                               a_prologue && b_prologue ? "A and B"
                                               : a_prologue             ? "A"
                                                                        : "B")
                                 : std::string());
}

PlannedMatmul plan_matmul(const std::vector<ir::NodePtr>& outputs, const LayoutOf& layout_of,
                          const DeviceInfo& device, std::span<const Strides> output_strides,
                          const Options& options) {
    PlannedMatmul pm;
    pm.product = product_of(outputs);
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
    // Each operand: a strided view of an input, or a prologue over the operand's shape.
    p.a_prologue = !is_view_of_input(*m.operand(0));
    p.b_prologue = !is_view_of_input(*m.operand(1));
    std::vector<const ir::Node*> a_inputs, b_inputs;
    auto operand = [&](int which, bool prologue, PointwisePlan& plan, PointwiseBinding& binding,
                       Strides& strides, std::int64_t& offset, std::vector<const ir::Node*>& inputs) {
        const ir::NodePtr& x = m.operand_ptr(which);
        if (!prologue) {
            const OperandView v = operand_view(*x, layout_of);
            strides = v.strides;
            offset = v.offset;
            inputs = {v.input};
            return;
        }
        strides.assign(r, 0);
        inputs = pointwise_inputs({x});
        std::vector<InputLayout> ls;
        for (const ir::Node* in : inputs) ls.push_back(layout_of(*in));
        PlannedPointwise pp = plan_pointwise({x}, ls, device.plan_target());
        if (pp.plan.params_in_memory)
            throw InternalError(fmt::format(
                "plan_matmul(): the prologue of {} has more parameters than a launch takes", where_of(m)));
        plan = std::move(pp.plan);
        binding = std::move(pp.binding);
    };
    operand(0, p.a_prologue, p.prologue_a, b.prologue_a, b.a_strides, b.a_offset, a_inputs);
    operand(1, p.b_prologue, p.prologue_b, b.prologue_b, b.b_strides, b.b_offset, b_inputs);

    // The tile: the hint, else the default; then threads, shared memory and its limits.
    const ir::ProductTile hint = ir::product_tile(m);
    const TileHint given = hint.empty() ? options.tile
                                        : TileHint{static_cast<int>(hint.rows), static_cast<int>(hint.cols),
                                                   static_cast<int>(hint.depth)};
    const TileHint chosen = default_tile(b.M, b.N, b.K, p.in, p.tensor_cores);
    p.hinted = !given.empty();
    if (detail::plan_wgmma(pm, given, !p.a_prologue && layout_of(*a_inputs[0]).aligned16,
                           !p.b_prologue && layout_of(*b_inputs[0]).aligned16, device))
        return finish_matmul(pm, outputs, a_inputs, b_inputs, layout_of, device, output_strides), pm;
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
    // Rows of the stage buffers: 16-byte aligned and padded by a piece; a B tile narrower than a piece (a
    // matrix-vector product's) is loaded element by element, unpadded.
    const bool b_whole_pieces = p.tile_n % piece == 0;
    if (p.tensor_cores && !b_whole_pieces)
        bad_tile(m, shown,
                 fmt::format("is not divisible as the kernel needs: on tensor cores tile_n must be a "
                             "multiple of {} {} elements "
                             "(16 bytes)",
                             piece, name(p.in)));
    p.pitch_a = p.tile_k + piece;
    // TF32 fragments read B one word per lane, k = tig down column grp: rows 8 words apart mod 32 keep the
    // warp's 32 reads in distinct banks (4 words apart would pair them).
    const bool tf32 = p.precision() != ProductPrecision::Float32;
    p.pitch_b = tf32 ? p.tile_n + 2 * piece : b_whole_pieces ? p.tile_n + piece : p.tile_n;
    // Three stages (two K steps in flight), two when K is one step (no pipeline to fill).
    p.stages = (b.K + p.tile_k - 1) / p.tile_k <= 1 ? 2 : 3;
    const std::size_t limit = device.shared_mem_per_block_optin;
    if (p.shared_bytes() > limit) p.stages = 2;
    if (p.shared_bytes() > limit)
        bad_tile(
            m, shown,
            fmt::format("needs {} bytes of shared memory in 2 stages, more than the {} bytes per block of {}",
                        p.shared_bytes(), limit, device.name));
    if (p.tensor_cores)
        shape_warps_mma(p, m, shown);
    else
        shape_threads(p, m, shown);
    // A batch of products whose K is one step: blocks walk the batch entries, copying the next while
    // multiplying this one, two blocks per multiprocessor where shared memory holds them and the register
    // tile is at most 32 accumulators (two blocks of 256 threads leave 128 registers per thread).
    b.batch_blocks = std::min<std::int64_t>(b.batches, 65535);
    if (!p.tensor_cores && b.K <= p.tile_k && b.batches > 1) {  // one K step: two stages, one per entry
        const bool two = fits_blocks(p, device, 2) && p.thread_m * p.thread_n <= 32;
        p.blocks_per_sm = two ? 2 : 1;
        const std::int64_t resident = static_cast<std::int64_t>(device.sm_count) * p.blocks_per_sm;
        p.batch_pipelined = true;
        b.batch_blocks = std::clamp<std::int64_t>(resident / std::max<std::int64_t>(output_tiles(p, b), 1), 1,
                                                  b.batch_blocks);
    }
    // Split K: a product of chunks whose output tiles leave multiprocessors idle (a matrix times a vector
    // with K past a chunk: M5's 128 tiles of 16384 x 16384 on 132) shares its chunks among blocks, the fewest
    // groups (a power of two, at most 16) that give every multiprocessor a block. 16384 x 16384 x 1 in
    // float32 went from 3391 to 3988 GB/s with two groups (H200).
    if (p.chunked && !p.batch_pipelined && output_tiles(p, b) * b.batches <= kSplitCounterLimit) {
        const std::int64_t blocks = output_tiles(p, b) * b.batch_blocks;
        std::int64_t groups = 1;
        while (groups < 16 && groups < b.chunks && blocks * groups < device.sm_count) groups *= 2;
        // chunks >= 2 and groups >= 2: groups of bit_ceil(ceil(chunks / groups)) chunks make at least two
        // groups.
        if (groups > 1) {
            p.split_k = true;
            b.group_chunks = static_cast<std::int64_t>(
                std::bit_ceil(static_cast<std::uint64_t>((b.chunks + groups - 1) / groups)));
            b.k_groups = (b.chunks + b.group_chunks - 1) / b.group_chunks;
        }
    }
    p.a_m_fastest = !p.a_prologue && b.a_strides[r - 2] == 1 && b.a_strides[r - 1] != 1;
    p.b_k_fastest = !p.b_prologue && b.b_strides[r - 2] == 1 && b.b_strides[r - 1] != 1;
    p.vector_a =
        device.cc_major >= 8 && !p.a_prologue && b.a_strides[r - 1] == 1 && layout_of(*a_inputs[0]).aligned16;
    p.vector_b = device.cc_major >= 8 && !p.b_prologue && b_whole_pieces && b.b_strides[r - 1] == 1 &&
                 layout_of(*b_inputs[0]).aligned16;
    p.vector_b_column = device.cc_major >= 8 && !p.b_prologue && p.tile_n == 1 && b.b_strides[r - 2] == 1 &&
                        layout_of(*b_inputs[0]).aligned16;
    // Fragments in 16-byte shared reads: 4 LDS.128 per k of an 8 x 8 register tile instead of 16 LDS.32.
    p.a_read = !p.tensor_cores && p.in == DType::Float32 ? 4 : 1;
    p.b_read = !p.tensor_cores && p.in == DType::Float32 && p.thread_n % 4 == 0 && p.pitch_b % 4 == 0 ? 4 : 1;
    // The epilogue through shared memory where a lane's columns come in groups of 4 (stored as 16-byte
    // pieces); its tile must fit the shared memory the block may have. Not for batch_pipelined kernels: M6
    // ran at 19.8 TFLOP/s staged and 22.7 storing from the registers (H200), its epilogue a large share.
    p.staged_epilogue = p.b_read == 4 && !p.batch_pipelined && p.epilogue_tile_bytes() <= limit;
    // Two blocks per multiprocessor for a product of few K steps (K at most kTwoBlocksDepth): each tile's
    // fixed costs, the pipeline's fill and the epilogue, are then a large share of its time, and the other
    // block's K loop runs beside them. __launch_bounds__(256, 2) caps the registers at 128 (from 205: a few
    // words spill). On the H200, gelu(A·B + bias) of 4096 x 256 x 4096 float32 ran 24.4 TFLOP/s with one
    // block and 26.9 with two (the bare product 31.1 and 31.6); 4096^3 lost 1% (36.5 and 36.1), so long K
    // stays at one.
    if (p.staged_epilogue && b.K <= kTwoBlocksDepth && fits_blocks(p, device, 2)) p.blocks_per_sm = 2;
    finish_matmul(pm, outputs, a_inputs, b_inputs, layout_of, device, output_strides);
    return pm;
}

namespace {

// The epilogue's plan and the parameters, for every path.
void finish_matmul(PlannedMatmul& pm, const std::vector<ir::NodePtr>& outputs,
                   const std::vector<const ir::Node*>& a_inputs, const std::vector<const ir::Node*>& b_inputs,
                   const LayoutOf& layout_of, const DeviceInfo& device,
                   std::span<const Strides> output_strides) {
    const ir::Node& m = *pm.product;
    MatmulPlan& p = pm.plan;
    MatmulBinding& b = pm.binding;
    // The epilogue: the kernel's outputs over a placeholder for the product.
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
    p.epilogue = std::move(ep.plan);
    b.epilogue = std::move(ep.binding);
    p.acc_site = -1;
    for (std::size_t s = 0; s < p.epilogue.loads.size(); ++s) {
        if (ep_inputs[static_cast<std::size_t>(p.epilogue.loads[s].input)] != pm.accumulators.get()) continue;
        // One read of the product, element by element: a second site (a view of it) would read memory that
        // holds no product (the partition refuses such kernels as epilogues).
        if (p.acc_site >= 0)
            throw InternalError(
                fmt::format("plan_matmul(): the epilogue of {} reads the product at two sites", where_of(m)));
        p.acc_site = static_cast<int>(s);
    }
    // Whatever access the pointwise plan gave the placeholder (an extent of 1 may make it a broadcast),
    // element e of the epilogue's space is element e of the product (the partition fused it so): its value is
    // passed in.
    if (p.acc_site < 0)
        throw InternalError(
            fmt::format("plan_matmul(): the epilogue of {} does not read the product", where_of(m)));

    // Parameters: operands, sizes, batch extents, strides, workspace, then the epilogue's struct.
    ParamLayout& L = p.params;
    auto add = [&](int field, int axis, std::string fname, ParamType type, std::size_t size,
                   std::size_t align) {
        ParamField f;
        f.kind = ParamField::Kind::Product;
        f.a = field;
        f.b = axis;
        f.name = std::move(fname);
        f.type = type;
        f.dtype = p.in;
        f.size = size;
        f.align = align;
        L.add(std::move(f));
    };
    auto add_part = [&](int which, const char* fname, const PointwisePlan& part) {
        ParamField f;
        f.kind = ParamField::Kind::Epilogue;
        f.a = which;
        f.name = fname;
        f.type = ParamType::Struct;
        f.size = part.params.size;
        f.align = std::max<std::size_t>(part.params.align, 1);
        L.add(std::move(f));
    };
    if (p.wgmma) {  // the tensor maps first: 64-byte aligned, passed by value (the kernel's parameter is
                    // __grid_constant__)
        add(FieldMapA, 0, "tmap_a", ParamType::Opaque, kTensorMapBytes, 64);
        add(FieldMapB, 0, "tmap_b", ParamType::Opaque, kTensorMapBytes, 64);
        add(FieldM, 0, "M", ParamType::Int64, 8, 8);
        add(FieldN, 0, "N", ParamType::Int64, 8, 8);
        add(FieldK, 0, "K", ParamType::Int64, 8, 8);
        add(FieldBatches, 0, "batches", ParamType::Int64, 8, 8);
        add_part(2, "ep", p.epilogue);
        L.finish();
        if (L.size > device.param_limit_bytes)
            throw InternalError(
                fmt::format("plan_matmul(): {} bytes of parameters for {}", L.size, where_of(m)));
        return;
    }
    if (!p.a_prologue) add(FieldA, 0, "a", ParamType::ConstPointer, 8, 8);
    if (!p.b_prologue) add(FieldB, 0, "b", ParamType::ConstPointer, 8, 8);
    add(FieldM, 0, "M", ParamType::Int64, 8, 8);
    add(FieldN, 0, "N", ParamType::Int64, 8, 8);
    add(FieldK, 0, "K", ParamType::Int64, 8, 8);
    add(FieldChunks, 0, "chunks", ParamType::Int64, 8, 8);
    add(FieldBatches, 0, "batches", ParamType::Int64, 8, 8);
    for (int d = 0; d + 2 < p.rank; ++d)
        add(FieldBatchExtent, d, fmt::format("batch{}", d), ParamType::Int64, 8, 8);
    for (int d = 0; d < p.rank; ++d) add(FieldAStride, d, fmt::format("a_s{}", d), ParamType::Int64, 8, 8);
    for (int d = 0; d < p.rank; ++d) add(FieldBStride, d, fmt::format("b_s{}", d), ParamType::Int64, 8, 8);
    if (p.chunked) add(FieldWorkspace, 0, "ws", ParamType::RawPointer, 8, 8);
    if (p.split_k) {
        add(FieldGroupChunks, 0, "group_chunks", ParamType::Int64, 8, 8);
        add(FieldCounters, 0, "count", ParamType::RawPointer, 8, 8);
    }
    add(FieldPieces, 0, "pieces", ParamType::Int64, 8, 8);
    if (p.a_prologue) add_part(3, "pa", p.prologue_a);
    if (p.b_prologue) add_part(4, "pb", p.prologue_b);
    add_part(2, "ep", p.epilogue);
    L.finish();
    if (L.size > device.param_limit_bytes)
        throw InternalError(fmt::format("plan_matmul(): {} bytes of parameters for {}", L.size, where_of(m)));
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

MatmulLoads select_matmul_loads(const PlannedMatmul& pm, std::span<const void* const> inputs) {
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
                put(static_cast<std::int64_t>(loads.a_pieces) | static_cast<std::int64_t>(loads.b_pieces)
                                                                    << 1);
                break;
            case FieldGroupChunks:
                put(bd.group_chunks);
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
