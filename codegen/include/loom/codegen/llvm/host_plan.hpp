// The host plan: a graph's target-neutral partition (plan/partition.hpp) with, per kernel, its host schedule:
// how the LLVM back end runs the kernel on the CPU (vector width, tasks for the thread pool, whether a
// reduction shares each row's chunks among tasks). Plain data with ==, hash and to_string, made by
// plan_host() from the layouts of the graph's inputs and the host's facts (HostTarget) through the schedule
// both back ends share (plan/schedule.hpp), with no LLVM and no
// device: the runtime builds (codegen/llvm/emit.hpp, the loom_llvm module) and runs what it says
// (runtime/src/host_run.cpp).
//
// Results never depend on the schedule: a pointwise element is computed by the same instructions in a
// vector step as in a scalar tail, and reductions follow the one order of docs/semantics.md ("Reduction
// order") with its 256 lanes written out, whatever the vector width or the number of threads. Task
// boundaries are fixed by the shape alone (kHostPointwiseTask elements, whole rows or whole 8192-element
// chunks), never by the number of threads.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "loom/codegen/options.hpp"
#include "loom/codegen/plan/partition.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
#include "loom/codegen/plan/schedule.hpp"

namespace loom::codegen {

/// Facts about the host CPU that planning and emission need, as plain data: the runtime fills it from the
/// loom_llvm module (the JIT's target), tests by hand (avx512()).
struct HostTarget {
    std::string triple = "x86_64-pc-linux-gnu";
    std::string cpu = "x86-64-v4";
    /// The feature string the JIT compiles for: the host's, with the bfloat16 conversion features removed
    /// (avx512bf16, avxneconvert: LLVM lowers fptrunc to bfloat with vcvtneps2bf16, which flushes
    /// subnormals; docs/llvm-backend.md).
    std::string features;
    int vector_bits = 512;  // the widest vector registers the JIT uses (512 AVX-512, 256 AVX2, 128 SSE)
    bool f16c = true;       // hardware float16 <-> float32 conversions (vcvtph2ps / vcvtps2ph)
    /// Bytes of the last-level cache (the runtime reads the host's; avx512(): 32 MiB). A pointwise kernel
    /// that moves more than this streams its outputs past the caches (HostSchedule::stream).
    std::int64_t cache_bytes = std::int64_t{32} << 20;
    /// A fixed AVX-512 target (the golden tests' and an H200 host's class of machine).
    static HostTarget avx512();
    /// What the neutral planners take of it: no multiprocessors (the host shares long rows among tasks
    /// itself, HostSchedule::split) and no parameter limit (a kernel takes a pointer to its parameters).
    PlanTarget plan_target() const { return {}; }
    bool operator==(const HostTarget&) const = default;
    std::uint64_t hash() const;
};

/// Elements per task of a pointwise kernel: a fixed grain, so that task boundaries depend on the shape alone.
/// 32768 float32 elements are 128 KiB read and written per task, a few microseconds: enough to amortize a
/// task's dispatch, small enough to balance two to dozens of cores on 2^20 elements and more.
inline constexpr std::int64_t kHostPointwiseTask = 32768;
/// Reduced elements per task of a reduction (whole rows, or whole chunks of a long row).
inline constexpr std::int64_t kHostReduceTask = 65536;
/// Rows below which a reduction whose rows span several chunks shares each row's chunks among tasks
/// (HostSchedule::split): with fewer rows than this, rows alone would leave cores idle.
inline constexpr std::int64_t kHostSplitRows = 64;
/// Innermost extent below which a pointwise kernel never streams its stores: each row of the iteration space
/// starts with scalar steps up to the first vector-aligned output address, which short rows cannot repay.
inline constexpr std::int64_t kHostStreamRow = 4096;

/// How the LLVM back end runs one kernel on the host.
struct HostSchedule {
    /// Pointwise: elements per vector step (a vector of `lanes` compute values per operand). Reductions:
    /// accumulator lanes per vector (the 256 lanes of the row order are kept in groups of this many; in the
    /// column order, outputs per vector).
    int lanes = 16;
    /// Reductions: the chunk partials are computed by tasks over (row, chunk) pairs and combined by a second
    /// pass over rows (few long rows), instead of tasks over whole rows.
    bool split = false;
    /// Work per task: pointwise, elements; reductions, rows (inner schedule) or output columns (outer), or
    /// (row, chunk) pairs when split. `tasks` of them cover the kernel (0: nothing to run).
    std::int64_t task = 1;
    std::int64_t tasks = 0;
    /// Split reductions: rows per task of the second pass, and its tasks.
    std::int64_t finish_task = 1;
    std::int64_t finish_tasks = 0;
    /// Pointwise: the contiguous outputs are written with non-temporal stores (the kernel moves more bytes
    /// than the last-level cache holds, so its output would leave the cache before anything reads it; a
    /// non-temporal store also saves reading each output line before writing it). Each row's vector steps
    /// then start at the first address where every such output is aligned to its vector; the steps before it
    /// run at width 1 (the same instructions, so the same bits).
    bool stream = false;
    /// Reductions with element outputs (the inner schedule): per element output, the reduction whose operand
    /// the output holds between that reduction's pass over the row and the output pass, or -1. The operand
    /// (softmax's exp(x - max)) is then computed once per element: stored into the output (of its dtype,
    /// exactly) as the reduction's pass computes it, and read back by the output pass instead of computed
    /// again.
    std::vector<int> keep;

    bool operator==(const HostSchedule&) const = default;
    std::uint64_t hash() const;
    /// What enters the generated code (lanes, split); the task counts are numbers of the call.
    std::uint64_t code_hash() const;
    std::string to_string() const;
};

/// Family::Pointwise on the host: the pointwise plan (its GPU fields ignored) and its tasks.
struct HostPointwise {
    PlannedPointwise planned;
    HostSchedule schedule;
};

/// Family::Reduction on the host: the reduction plan, whose element and row spaces are pointwise plans (their
/// GPU fields ignored), and its tasks.
struct HostReduction {
    PlannedReduce planned;
    HostSchedule schedule;
};

/// Family::MatMul on the host (codegen/src/llvm/host_product.cpp, emit_product.cpp): one matrix product
/// whose operands are strided views of inputs (the host partition computes any other operand first), and
/// its epilogue, the kernel's outputs over a placeholder for the product, applied to each output's final
/// accumulators before the store. The order is docs/semantics.md's, section 12, whatever the tiles.
///
/// Two passes. The first packs the operands into workspaces, converted to the accumulation type: A in
/// panels of kHostProductRows rows (k-major, `mr` values per k), B in panels of `nr` columns (`nr` values
/// per k), the rows and columns past M and N zero (their outputs are never stored), once per batch entry an
/// operand varies over; K step by K step (every panel's values of one step of kHostProductDepth together,
/// so that the panels a block walks in one step lie one after the other, a stream the prefetchers follow).
/// The second takes blocks of block_rows x block_cols outputs of one batch entry: per chunk of kProductChunk,
/// per K step of kHostProductDepth, it runs a micro tile of mr x nr accumulators
/// (`nr` / lanes vectors per row, each lane its own output column) over each panel pair, one fma per k in
/// ascending k, the accumulators starting from +0 at the chunk's start and reloaded from the block's scratch
/// tile (where the previous K step stored them) after it, so each output accumulates its chunk as one fma
/// chain. A K of several chunks keeps each chunk's partials in a workspace and combines them by the pairwise
/// tree; then the epilogue runs on the block's final values and stores the outputs.
struct HostProduct {
    DType in = DType::Float32;  // the operands' dtype
    DType acc =
        DType::Float32;   // the accumulation type: float32 (float16, bfloat16, float32), float64, int32
    int rank = 2;         // the product's rank (batch axes + 2)
    int lanes = 8;        // accumulator lanes per vector
    int mr = 6, nr = 16;  // the micro tile: rows, columns (2 vectors)
    // The call: sizes, the operands' strides (elements, per axis of [B..., M, K] and [B..., K, N]) and
    // offsets of their element 0 in their inputs.
    std::int64_t M = 0, N = 0, K = 0, batches = 1, chunks = 0;
    Shape batch;
    Strides a_strides, b_strides;
    std::int64_t a_offset = 0, b_offset = 0;
    bool a_batched = false,
         b_batched = false;  // the operand varies over the batch entries (packed per entry)
    /// A matrix times a vector (N = 1 < M): the kernel computes the transposed product B^T A^T (its outputs
    /// in the same order), so M, N, the strides and offsets above are the transposed product's, its A the
    /// product's B (inputs[1]) and its B the product's A (inputs[0]).
    bool swapped = false;
    /// The kernel's inputs: A's, B's, then the epilogue's in pointwise_inputs order (the placeholder among
    /// them; it reads no memory).
    std::vector<const ir::Node*> inputs;
    ir::NodePtr product, accumulators;          // the product node; its placeholder in the epilogue
    std::vector<ir::NodePtr> epilogue_outputs;  // the kernel's outputs over the placeholder
    PlannedPointwise epilogue;                  // over the product's shape (rank of its coalesced space)
    // Tasks: packing (panels per task), then blocks of outputs (one per task).
    std::int64_t pack_task = 1, pack_units = 0, pack_tasks = 0;
    std::int64_t row_blocks = 0, col_blocks = 0, tasks = 0;

    std::int64_t row_panels() const { return (M + mr - 1) / mr; }
    std::int64_t col_panels() const { return (N + nr - 1) / nr; }
    int block_rows() const;  // outputs per block
    int block_cols() const;
    /// What enters the generated code (dtypes, rank, tiles, the epilogue's plan and structure).
    std::uint64_t code_hash() const;
    std::uint64_t hash() const;
    std::string to_string() const;
    bool operator==(const HostProduct& o) const;
};

/// The parameters of a product kernel: 16 eight-byte fields (A and B at their views' element 0, the
/// workspaces of packed A, packed B and the chunk partials; M, N, K; A's row and k strides, B's k and column
/// strides; row blocks, column blocks, row panels, column panels), then per batch axis its extent and A's and
/// B's strides, then, 64-byte aligned, the epilogue's pack_params struct.
inline constexpr std::size_t kProductHeaderFields = 16;
std::size_t host_product_header_bytes(const HostProduct& p);
std::size_t host_product_epilogue_offset(const HostProduct& p);
/// Bytes of the workspaces: packed A, packed B, the chunk partials (64 at least each).
std::array<std::size_t, 3> host_product_workspaces(const HostProduct& p);
/// The host plan of product kernel `k` (a graph with one product and elementwise work after it), or none
/// when the kernel is not one the host's product family runs: an operand that is not a strided view of an
/// input, or an epilogue that reads the product other than at each output's own element.
std::optional<HostProduct> plan_host_product(const FusedKernel& k, const LayoutOf& layout_of,
                                             const HostTarget& target);

/// The micro tile's rows, and the values of k per K step of a host product (a micro tile's A and B panels,
/// kHostProductDepth x (mr + nr) values, stay in the first-level cache; the block's A panels and scratch
/// tile in the second).
inline constexpr int kHostProductRows = 6;
inline constexpr std::int64_t kHostProductDepth = 256;
/// Micro tiles per block, down and across (a block of 96 x 256 float32 outputs on AVX2).
inline constexpr int kHostProductBlockPanels = 16;

/// A family the host has no LLVM emitter for: no plan and no code. The runtime evaluates the kernel's
/// graph on the CPU reference, reading its inputs (graph_inputs order) in place. Every family has an emitter
/// now; a product whose epilogue reads the product other than element by element runs here.
struct HostReference {
    Family family = Family::MatMul;
    /// The kernel holds a checked scatter: the run writes every output through a temporary, copied in only
    /// when no index was out of range (docs/semantics.md, "Scatters").
    bool checks_indices = false;
};

/// The host schedule of one kernel: one alternative per family the host compiles, and one for every family it
/// runs on the reference (host_family.hpp holds each one's object). The GPU's tiled family has none: the host
/// reads transposed and shifted operands through its caches.
using HostKernelSchedule = std::variant<HostPointwise, HostReduction, HostProduct, HostReference>;

/// One kernel of a host plan: its schedule, where it reads, its cache key.
struct HostKernel {
    HostKernelSchedule schedule;
    /// Where each kernel input is read from, in the plan's input order (pointwise_inputs of the outputs,
    /// PlannedReduce::inputs, or graph_inputs).
    std::vector<Slot> reads;
    /// The in-memory cache key: graph structure, plan, schedule (code part), options and target (0: no code).
    std::uint64_t key = 0;

    Family family() const;
    /// The schedule of family `S`; InternalError when the kernel is of another family.
    template <class S>
    const S& as() const {
        if (const S* s = std::get_if<S>(&schedule)) return *s;
        throw_wrong_family(family());
    }
    bool operator==(const HostKernel& o) const;

  private:
    [[noreturn]] static void throw_wrong_family(Family f);
};

/// The host's plan of an evaluation: the scheduled partition (plan/schedule.hpp) and each kernel's host
/// schedule, for `target`.
struct HostPlan : ScheduledPartition {
    using Kernel = HostKernel;
    HostTarget target;
    std::vector<HostKernel> kernels;  // parallel to partition.kernels

    bool operator==(const HostPlan&) const = default;
    std::uint64_t hash() const;
    /// What LOOM_EXPLAIN=fusion prints for host tensors: every kernel with its nodes, schedule, reads and
    /// writes, every temporary and every boundary with its reason.
    std::string to_string() const;
};

/// Plans the evaluation of `roots` (after the standard passes) on the host, as plan_fusion does for the
/// GPU: the partition, then each kernel's plan and host schedule for `layouts` and `target`. A reduction
/// group that cannot run as one kernel (plan_reduce's NotFusable, or a multi-stage group of few rows
/// spanning several chunks, which one task per row would run on one core) is partitioned again strictly.
/// `root_strides` (empty: every root contiguous; an empty entry: that root contiguous) gives the strides of
/// outputs that are views, as for plan_fusion: pointwise kernels write them at their own index maps, and a
/// reduction kernel's strided root goes through a temporary and a pointwise kernel that stores it.
/// Pure. Throws loom::Error for limits, InternalError for an Input that is not a source.
HostPlan plan_host(const std::vector<ir::NodePtr>& roots, std::span<const ir::Node* const> sources,
                   std::span<const InputLayout> layouts, const HostTarget& target, const Options& options,
                   std::string_view name = {}, const FusionCostModel* cost = nullptr,
                   std::span<const Strides> root_strides = {});

/// The host schedule of a pointwise kernel of plan `plan` over `numel` elements whose widest compute type is
/// `widest` bytes and whose innermost (coalesced) extent is `inner`.
HostSchedule host_pointwise_schedule(const PointwisePlan& plan, std::int64_t numel, std::int64_t inner,
                                     int widest_bytes, const HostTarget& target);
/// Whether a pointwise kernel whose schedule streams (HostSchedule::stream) writes output `out` with
/// non-temporal stores: a contiguous output whose vector of `lanes` elements is at least 16 bytes.
bool host_streamed_output(const OperandPlan& out, int lanes);
/// The host schedule of a reduction kernel.
HostSchedule host_reduce_schedule(const PlannedReduce& pr, const HostTarget& target);

}  // namespace loom::codegen
