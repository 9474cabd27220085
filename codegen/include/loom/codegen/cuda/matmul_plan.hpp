// The matmul plan: one matrix product (ir::Op::MatMul) on CUDA cores or tensor cores, with the elementwise
// work after it (its epilogue) applied to the accumulators before the store.
//
// A block computes a tile of tile_m x tile_n outputs of one batch entry, stepping tile_k along K. Its warps
// form a warps_m x warps_n grid, each owning a warp tile. The operands' tiles pass through shared memory in
// `stages` buffers: A as tile_m rows of tile_k (k fastest), B as tile_k rows of tile_n (n fastest), each row
// padded by 16 bytes, which keeps every row 16-byte aligned for cp.async and puts the rows a warp reads at
// once into distinct banks.
//
// CUDA cores: a warp's lanes form a lanes_m x lanes_n grid and each lane holds a thread_m x thread_n
// register tile of accumulators, at rows lane_m + lanes_m * i of its warp tile and columns lane_n + lanes_n *
// j (b_read = 1) or, for float32 (b_read = 4), in groups of 4 consecutive columns lanes_n * 4 apart, so that
// the lanes of a warp read consecutive words or 16-byte pieces of a shared row. The order is the contract's
// (docs/semantics.md, section 12) whatever the tile: each output accumulates each chunk of kProductChunk
// values of k with one fma per k in ascending k from +0 (a tile's last, partial K step runs only over the k
// that exist, so no padding term enters a sum), and the chunk partials of a K longer than a chunk combine in
// the pairwise tree, kept per output in a workspace (one slot per level of the tree). So the bits are the
// CPU reference's for every tile, variant and epilogue.
//
// Tensor cores (float16, bfloat16, int8; ProductPath): each warp owns frags_m() x frags_n() MMA tiles of 16 x
// 8 outputs and issues one mma.sync per tile and step of mma_k() (m16n8k16 for float16 and bfloat16 into
// float32, m16n8k32 for int8 into int32) over all of K, the steps past K zero-filled. int8 sums are exact
// (wrapping), so their bits are the reference's; half-precision results lie within the componentwise bound
// of section 12 (the hardware's accumulation inside an MMA is not the contract's fma chain), and for a given
// plan and device their bits are fixed. float32 operands take the same kernel under
// Options::product_precision (TF32: m16n8k8 on the operands truncated to TF32 as the fragments are read;
// 3xTF32: three such MMAs per step on each operand's big and small TF32 parts), each within its bound of
// section 12, "TF32".
//
// Prologues: an operand that is cheap elementwise work over views of inputs (a cast, a scale, a sum of two
// matrices) is computed element by element as its tiles load (prologue_a / prologue_b, pointwise plans over
// the operand's shape whose element function returns the value), rounded to the operand's dtype as a
// materialized operand would be, so the bits do not change. The partition materializes operands with
// transcendentals or divisions instead: a block column would recompute them.
//
// Loads, per operand: 16-byte pieces copied with cp.async (the operand's fastest axis has unit stride, its
// rows and batch entries start 16-byte aligned and its row length, K for A and N for B, divides into pieces),
// or element loads through any strides (transposed, sliced, reversed and broadcast views). One entry point
// takes the choice as a parameter (`pieces`: bit 0 for A, bit 1 for B), which the runtime makes from the
// pointers (select_matmul_loads), so a matrix-vector product copies its matrix in pieces and loads its vector
// element by element.
//
// Hopper (wgmma: float16 and bfloat16 on compute capability 9.0, ProductPath::TensorCores): a persistent grid
// of one block per multiprocessor walks the output tiles (batch entries, then groups of kWgmmaGroupRows tile
// rows, down a group's rows before across its columns, so the tiles in flight share their operands' rows and
// columns in L2). A producer warpgroup issues the tensor memory accelerator's bulk tensor copies of each K
// step of 64 into a ring of `stages` shared-memory buffers, 128-byte swizzled, each completing on its stage's
// full mbarrier; `consumers` warpgroups (64 rows of the tile each) wait on it, issue one wgmma.mma_async
// m64nNk16 per 16 k (N = tile_n, float32 accumulators in registers), and release the stage on its empty
// mbarrier once their MMAs have read it. The epilogue runs on the accumulators, from the registers or
// (ping-pong plans: staged_epilogue) through a shared-memory buffer per consumer. Both operands come from
// shared memory, K-major or MN-major as their unit strides run (the MMAs' transpose bits), so row-major and
// transposed views alike take the copies; the copies zero-fill past M, N and K. The accumulation inside the
// tensor cores is the hardware's: the results lie within the componentwise bound of section 12, and for a
// given plan and device their bits are fixed (one pass over K, no split, no atomics).
//
// Matrix-vector products (N = 1, or M = 1) run the same kernel with a block tile one output wide: a thread
// per row (column) of outputs, each walking its row of the A tile (column of the B tile) in ascending k; the
// contract's order is the same, only the tile differs.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "loom/codegen/cuda/device_info.hpp"
#include "loom/codegen/options.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen {

/// Whether products of operands of dtype `in` have a tensor-core path (float16, bfloat16, int8; float32 too
/// under a `precision` of TF32 or 3xTF32).
bool has_tensor_core_path(DType in, ProductPrecision precision = ProductPrecision::Float32);

/// Hopper: the K step of a wgmma plan of 16-bit operands (64 elements: one 128-byte swizzled row; float32
/// operands in TF32 step 32, MatmulPlan::wgmma_depth()), and the tile rows of one group of the persistent
/// grid's order.
inline constexpr int kWgmmaDepth = 64;
inline constexpr int kWgmmaGroupRows = 8;

/// What the runtime encodes into a tensor map (cuTensorMapEncodeTiled) for one operand of a wgmma plan: a
/// tiled map of 16-bit or float32 elements, the box copied 128-byte swizzled, zeros outside the tensor.
/// Dimensions go innermost first; dimension 0 has unit stride.
struct TensorMapSpec {
    DType dtype = DType::BFloat16;
    int rank = 2;                   // 2, or 3 to 5 with one to three batch dimensions
    std::uint64_t dims[5] = {};     // elements
    std::uint64_t strides[4] = {};  // bytes between consecutive entries of dimensions 1 to rank - 1
    std::uint32_t box[5] = {};      // elements per copy
    const void* address = nullptr;  // element 0 (16-byte aligned)
    bool operator==(const TensorMapSpec&) const = default;
    /// "bfloat16 [8192, 8192] strides [16384] bytes, box [64, 128], at 0x..."
    std::string to_string() const;
};
/// Bytes of one encoded tensor map (CUtensorMap), and its alignment in the parameters.
inline constexpr std::size_t kTensorMapBytes = 128;

/// The layout of an input of a kernel's graph (the same alias as reduce_plan.hpp's).
using LayoutOf = std::function<InputLayout(const ir::Node&)>;

struct MatmulPlan {
    DType in = DType::Float32;   // the operands' dtype
    DType out = DType::Float32;  // the product's dtype (int32 for int8 operands)
    int rank = 2;                // the product's rank (batch axes + 2)
    int tile_m = 128, tile_n = 128, tile_k = 16;
    int warps_m = 4, warps_n = 2;
    int lanes_m = 4, lanes_n = 8;    // CUDA cores: the lanes of a warp over its tile
    int thread_m = 8, thread_n = 8;  // CUDA cores: a lane's register tile
    /// Tensor cores (mma.sync): the plan's path; each warp then owns frags_m() x frags_n() MMA tiles.
    bool tensor_cores = false;
    /// The path the options asked for (Options::product_path): with `tensor_cores`, it says why the path is
    /// what it is in the explain log.
    ProductPath requested = ProductPath::Auto;
    /// The precision the options asked for (Options::product_precision), for float32 operands (Float32 for
    /// other dtypes): with precision() it says in the explain log why a float32 product asked to run in TF32
    /// runs on CUDA cores.
    ProductPrecision requested_precision = ProductPrecision::Float32;
    /// float32 operands on tensor cores (Options::product_precision): TF32 or 3xTF32 mma.sync m16n8k8;
    /// Float32 for every other plan.
    ProductPrecision precision() const {
        return tensor_cores ? requested_precision : ProductPrecision::Float32;
    }
    int stages = 3;
    int pitch_a = 0, pitch_b = 0;  // elements per shared row of A (tile_k + pad) and of B (tile_n + pad)
    bool hinted = false;           // the tile came from the product's hint (matmul(a, b, tile(...)))
    /// The layouts allow 16-byte cp.async pieces of A (of B): the operand's fastest axis has unit stride, its
    /// input is 16-byte aligned, the device has cp.async, and (for B) tile_n is whole pieces; the runtime
    /// still checks alignment and divisibility per call (select_matmul_loads).
    bool vector_a = false, vector_b = false;
    /// A one-column B tile (tile_n = 1: a matrix times a vector) whose stride along k is 1: 16-byte cp.async
    /// pieces along k (the runtime checks K, the pointer and the other strides per call).
    bool vector_b_column = false;
    /// CUDA cores, float32: elements of a shared row of A that a thread reads at once, 4 (one 16-byte read:
    /// k to k + 3 of one of its rows), else 1. A warp's rows are tile_k + 4 words apart, so its 16-byte reads
    /// meet in no bank.
    int a_read = 1;
    /// CUDA cores, float32: elements of a shared row of B that a thread reads at once, 4 when its register
    /// tile is whole groups of 4 columns (then a lane's columns are groups of 4 consecutive ones, lanes_n * 4
    /// apart, and a quarter warp's 16-byte reads cover 128 consecutive bytes), else 1 (columns lanes_n
    /// apart).
    int b_read = 1;
    /// The distance between a lane's groups of b_read columns.
    int col_step() const { return lanes_n * b_read; }
    /// A tile one column wide (a matrix times a vector) with A read 4 k at once: the vector's stage buffer is
    /// read 4 k at once too (one broadcast 16-byte read instead of four).
    bool b_column_read() const { return tile_n == 1 && a_read > 1; }
    /// The scalar variant's loads walk A along m (A's unit stride runs along m: a transposed view) and B
    /// along k (likewise), so that a warp's loads stay coalesced; else along k and n.
    bool a_m_fastest = false, b_k_fastest = false;
    /// The operand is computed by a prologue (then only the Scalar variant reads it).
    bool a_prologue = false, b_prologue = false;
    PointwisePlan prologue_a, prologue_b;
    /// CUDA cores, K in one step (at most tile_k) and several batch entries: each block walks batch entries
    /// blockIdx.y, + gridDim.y, ..., copying the next entry's tiles into the other stage while it multiplies
    /// this one's (a batch of small products is as much copying as arithmetic). The grid holds
    /// blocks_per_sm blocks per multiprocessor, which __launch_bounds__ asks of the compiler.
    bool batch_pipelined = false;
    /// Blocks per multiprocessor named in __launch_bounds__ when above 1: a batch_pipelined grid's, and 2
    /// for a staged-epilogue product of K at most 1024 (its fill and epilogue beside the other block's K
    /// loop).
    int blocks_per_sm = 0;
    /// The epilogue goes through shared memory: the accumulators are stored as a tile, then read back with
    /// consecutive threads on consecutive columns, so that the epilogue's loads and stores are whole lines
    /// per warp, from one call site (so the element function is inlined).
    /// - CUDA cores, float32 with 16-byte B reads: a tile of tile_m rows of epilogue_pitch() words in the
    /// stage
    ///   buffers, which shared_bytes() makes large enough.
    /// - wgmma ping-pong plans: each consumer stages 64 rows of its tile at a time, the product rounded to
    /// its
    ///   dtype (2 bytes), in a buffer of its own after the ring (wgmma_epilogue_bytes()), rows of tile_n
    ///   values whose 16-byte pieces are swizzled by the row (piece ^ row % 8), so that neither the
    ///   accumulators' stores nor the row-wise reads meet in a bank.
    bool staged_epilogue = false;
    /// CUDA cores, float32 (B read 4 columns at a time, a 4-wide vector variant of the epilogue's pointwise
    /// plan, the product read contiguously): the epilogue takes a thread's 4 consecutive columns at once, one
    /// index computation and 16-byte loads and stores per 4 outputs, where the call's pointers and N allow
    /// (MatmulLoads::epilogue_vectors); else element by element. The same body per element: the same bits.
    /// 4, or 0 for none. wgmma's staged epilogue likewise, in vectors of the epilogue plan's width (8
    /// 16-bit values: one swizzled 16-byte piece of the buffer per thread), so that each thread's loads come
    /// before its vector's arithmetic and the vector's elements compute side by side.
    int vector_epilogue = 0;
    /// Hopper: warpgroup MMAs on tiles the tensor memory accelerator copies (see above). tile_k is
    /// kWgmmaDepth; threads() is 128 x (1 + consumers).
    bool wgmma = false;
    int consumers = 0;  // consumer warpgroups: 64 tile rows each (tile_m = 64 x consumers), or 2 ping-pong
    /// wgmma, tiles at most 128 wide: each consumer owns whole tiles (tile_m / 64 MMAs per 16 k), the two
    /// taking the block's tiles in turn, so that one's epilogue overlaps the other's MMAs.
    bool pingpong = false;
    /// wgmma: the tile rows one consumer computes, and its MMAs per k step of an MMA (one per 64 rows of the
    /// MMAs' M: the tile's rows, or its columns when swapped).
    int consumer_rows() const { return pingpong ? tile_m : 64; }
    int consumer_mmas() const { return (wgmma_swap() ? tile_n : consumer_rows()) / 64; }
    bool a_mn_major = false;  // A's unit stride runs along m (a transposed view): M-major tiles
    bool b_mn_major = false;  // B's unit stride runs along n (a row-major B): N-major tiles
    /// wgmma in TF32 (float32 operands under product_precision TF32): the tensor cores read K-major shared
    /// tiles only. An MN-major operand's tile is read into registers instead (`wgmma_a_registers()`), as the
    /// MMAs' A operand, which is B's tile when `wgmma_swap()` (the MMAs then compute the tile of C's
    /// transpose, B^T A^T, and the epilogue stores it transposed back).
    bool wgmma_a_registers() const { return wgmma && in == DType::Float32 && (a_mn_major || b_mn_major); }
    bool wgmma_swap() const { return wgmma && in == DType::Float32 && b_mn_major; }
    /// wgmma: elements of k per stage of the ring, one 128-byte swizzled row (64 for 16-bit operands, 32 for
    /// float32), and of k per MMA (16, or 8 in TF32).
    int wgmma_depth() const { return 128 / static_cast<int>(itemsize(in)); }
    int wgmma_k() const { return in == DType::Float32 ? 8 : 16; }
    /// wgmma: the extent of the MMAs' N (the tile's columns, or its rows when swapped).
    int wgmma_n() const { return wgmma_swap() ? tile_m : tile_n; }
    /// wgmma: the rank of the operand's tensor map: 2 (one matrix for every batch entry: no batch axis, or
    /// all broadcast), or 2 + its batch dimensions (up to 3): the product's batch axes along which the
    /// operand moves, those whose strides chain merged into one (MatmulBinding::a_map_batch). So a head
    /// sliced from a fused projection, [B, H, T, D] with strides [T * 3C, D, 3C, 1], is a rank-4 map of [D,
    /// T, H, B].
    int a_map_rank = 2, b_map_rank = 2;
    /// wgmma, a rank-3 map whose batch dimension is the product's flat batch index (every batch axis of more
    /// than one entry moves the operand, and they merge into one): its coordinate is the batch entry itself,
    /// with no division.
    bool a_map_flat = false, b_map_flat = false;
    /// Why a product that tensor cores were asked for runs on mma.sync on a device with wgmma (empty when it
    /// runs on wgmma or the device has none).
    std::string wgmma_note;
    /// K is longer than one chunk: the chunk partials go through the workspace tree.
    bool chunked = false;
    /// CUDA cores, chunked, fewer output tiles than multiprocessors (a matrix times a vector with K past a
    /// chunk): K's chunks are shared among blocks along the grid's z in aligned groups of a power of two
    /// (MatmulBinding::group_chunks), each group a subtree of the pairwise tree. Each block pushes its
    /// group's partial to the workspace and counts it on the tile's counter; the block that completes the
    /// count combines the group partials in the tree's order above them and runs the epilogue, and sets the
    /// counter back to zero. The order is the contract's: the same bits as one block walking every chunk.
    bool split_k = false;
    /// The epilogue: a pointwise plan over the product's shape whose load site `acc_site` is the product
    /// itself (its value comes from the accumulators, not memory).
    PointwisePlan epilogue;
    int acc_site = 0;
    ParamLayout params;

    int threads() const { return wgmma ? 128 * (1 + consumers) : warps_m * warps_n * 32; }
    /// wgmma: bytes of one stage of the ring (A's tile_m rows and B's tile_n columns, 128 bytes of k
    /// each).
    std::size_t wgmma_stage_bytes() const { return static_cast<std::size_t>(tile_m + tile_n) * 128; }
    /// wgmma with staged_epilogue: bytes of the consumers' epilogue buffers (64 rows of tile_n product values
    /// each).
    std::size_t wgmma_epilogue_bytes() const {
        return staged_epilogue ? static_cast<std::size_t>(consumers) * 64 * static_cast<std::size_t>(tile_n) *
                                     itemsize(out)
                               : 0;
    }
    /// Tensor cores: each warp's MMA tiles of 16 x 8 outputs along m and n.
    int frags_m() const { return tile_m / warps_m / 16; }
    int frags_n() const { return tile_n / warps_n / 8; }
    /// The k extent of one mma.sync (16 for float16 and bfloat16, 32 for int8, 8 for TF32).
    int mma_k() const { return in == DType::Int8 ? 32 : in == DType::Float32 ? 8 : 16; }
    /// Elements per 16-byte piece of an operand.
    int piece() const { return 16 / static_cast<int>(itemsize(in)); }
    std::size_t shared_bytes() const;
    /// The staged epilogue's tile of accumulators (float32): tile_m rows of epilogue_pitch() words, 16-byte
    /// aligned.
    int epilogue_pitch() const { return tile_n + 4; }
    std::size_t epilogue_tile_bytes() const {
        return static_cast<std::size_t>(tile_m) * static_cast<std::size_t>(epilogue_pitch()) * 4;
    }
    bool operator==(const MatmulPlan&) const = default;
    std::uint64_t hash() const;
    /// Why a product that tensor cores (or, for float32, TF32) were asked for runs on CUDA cores (" (tensor
    /// cores asked for; float64 has no tensor-core path)"), or empty.
    std::string path_note() const;
    /// The schedule in words, for the kernel banner and LOOM_EXPLAIN=fusion.
    std::string to_string() const;
};

/// The run-time numbers of one call.
struct MatmulBinding {
    std::int64_t M = 0, N = 0, K = 0;
    std::int64_t batches = 1;
    Shape batch;                              // the batch extents (rank - 2)
    Strides a_strides, b_strides;             // per axis of [B..., M, K] and [B..., K, N], elements
    std::int64_t a_offset = 0, b_offset = 0;  // element offsets of the views' element 0 in their inputs
    std::int64_t chunks = 0;                  // product_chunks(K)
    std::int64_t batch_blocks =
        0;  // blocks along the grid's y (batch entries; batch_pipelined: resident ones)
    std::int64_t persistent_blocks = 0;  // wgmma: the persistent grid (at most one block per multiprocessor)
    /// wgmma: the batch dimensions of each operand's tensor map, innermost first: `extent` entries `stride`
    /// elements apart, at coordinate (batch / divisor) % extent of the product's flat batch index.
    struct MapBatch {
        std::int64_t extent = 1, stride = 0, divisor = 1;
        bool operator==(const MapBatch&) const = default;
    };
    std::array<MapBatch, 3> a_map_batch{}, b_map_batch{};
    int levels = 0;             // workspace slots of the chunk tree (0: one chunk)
    std::int64_t k_groups = 1;  // split_k: blocks along the grid's z, one per group of chunks
    std::int64_t group_chunks =
        0;  // split_k: chunks per group (a power of two; the last group may be shorter)
    PointwiseBinding epilogue;
    PointwiseBinding prologue_a, prologue_b;
};

struct PlannedMatmul {
    MatmulPlan plan;
    MatmulBinding binding;
    /// The kernel's inputs: A's (the Input under its views, or its prologue's pointwise_inputs), B's, then
    /// the epilogue's inputs in pointwise_inputs order with the accumulator placeholder among them (it reads
    /// no memory).
    std::vector<const ir::Node*> inputs;
    std::size_t a_inputs = 1, b_inputs = 1;     // how many of `inputs` are A's and B's
    ir::NodePtr product;                        // the product node of the kernel's graph
    ir::NodePtr accumulators;                   // the placeholder that stands for it in the epilogue
    std::vector<ir::NodePtr> epilogue_outputs;  // the kernel's outputs over the placeholder
};

/// Plans the matmul kernel of `outputs` (a graph with one product whose operands are views of inputs, and
/// elementwise work over the product's shape after it). `layout_of` gives each input's layout;
/// `output_strides` (empty: contiguous) the outputs' strides. The tile is the product's hint
/// (ir::product_tile) when it has one, else `options.tile` (Options::tile) when it is not empty, else the
/// planner's choice for the shapes, dtypes and device (never the epilogue); a 0 in a hint's field takes the
/// planner's choice for that field. `options.product_path` picks CUDA cores or tensor cores (ProductPath;
/// tensor cores for float16, bfloat16 and int8 on devices of compute capability 8.0 and newer). Throws
/// loom::Error naming matmul, the tile and the limit a hint breaks: a power-of-two extent the kernel needs, a
/// tile_k whose rows are not whole 16-byte pieces, extents that are not whole MMA tiles (tensor cores: tile_m
/// a multiple of 16, tile_n of 8, tile_k of mma_k()), too few outputs for a warp, registers (more than 64
/// accumulator words per thread) or shared memory per block.
PlannedMatmul plan_matmul(const std::vector<ir::NodePtr>& outputs, const LayoutOf& layout_of,
                          const DeviceInfo& device, std::span<const Strides> output_strides = {},
                          const Options& options = {});

/// Grid (x: tiles of one batch entry, y: batch entries, at most 65,535; the kernel loops over the rest)
/// and block. grid_x == 0: nothing to do.
LaunchConfig matmul_launch(const PlannedMatmul& pm);
/// How one call's operands reach shared memory: 16-byte cp.async pieces or element loads, per operand.
struct MatmulLoads {
    bool a_pieces = false, b_pieces = false;
    /// The epilogue in vectors of MatmulPlan::vector_epilogue columns (the parameter `pieces`, bit 2).
    bool epilogue_vectors = false;
    bool operator==(const MatmulLoads&) const = default;
};
/// Pieces for each operand whose plan allows them (vector_a, vector_b) and whose pointer (`inputs`: element 0
/// of each of PlannedMatmul::inputs; the views' offsets are added here), strides and row length (K for A, N
/// for B) allow 16-byte pieces; else element loads. Epilogue vectors where the plan has them, N is whole
/// vectors and every pointer the epilogue streams, `outputs` among them, is 16-byte aligned.
MatmulLoads select_matmul_loads(const PlannedMatmul& pm, std::span<const void* const> inputs,
                                std::span<void* const> outputs);
/// wgmma plans: the tensor maps of A and B for one call (`inputs` as for select_matmul_loads). Throws
/// InternalError when a pointer breaks the 16-byte alignment that planning assumed.
std::array<TensorMapSpec, 2> matmul_tensor_maps(const PlannedMatmul& pm, std::span<const void* const> inputs);
/// wgmma plans: the byte offsets of A's and B's tensor maps in the parameters (64-byte aligned fields).
std::array<std::size_t, 2> matmul_tensor_map_offsets(const PlannedMatmul& pm);
/// Bytes of the chunk tree's workspace (0 for one chunk): the tree's slots, and for split_k plans each
/// group's slots and its partial.
std::size_t matmul_workspace_bytes(const PlannedMatmul& pm);
/// split_k plans: the counters one call takes (one per output tile and batch entry), zero before the launch
/// and left zero by it; 0 for other plans.
std::int64_t matmul_counter_count(const PlannedMatmul& pm);
/// Packs the parameters: `inputs` element 0 of each of PlannedMatmul::inputs (the views' offsets are added
/// here; the accumulator's entry is ignored), `outputs`, `workspace` (null for one chunk), `counters`
/// (split_k plans: matmul_counter_count() zeroed counters; else null), the loads the kernel runs
/// (select_matmul_loads), and for wgmma plans the two encoded tensor maps (A's, then B's: 2 x
/// kTensorMapBytes, from matmul_tensor_maps), or none: their fields are left zero for the caller to encode
/// the maps in place (matmul_tensor_map_offsets).
void pack_matmul_params(const PlannedMatmul& pm, std::span<const void* const> inputs,
                        std::span<void* const> outputs, void* workspace, void* counters, MatmulLoads loads,
                        std::span<std::byte> out, std::span<const std::byte> tensor_maps = {});

}  // namespace loom::codegen
