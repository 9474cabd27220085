// The fusion plan: what an evaluation runs, as plain data. Two parts:
//   * the partition (target-neutral): which nodes form which kernel, the values materialized between
//     kernels (temporaries) and where each kernel reads and writes (a source of the graph, a temporary or a
//     root), each boundary with its reason tied to the user's source lines; made by partition()
//     (codegen/src/partition.cpp), a pure function of the roots and the options;
//   * per target, a schedule: for the GPU, each kernel's family plan (pointwise_plan.hpp, reduce_plan.hpp)
//     with its grid, block, vector width, splits and workspaces, the temporaries' offsets in one block and
//     the kernel cache keys; made by plan_fusion() (codegen/src/fusion_plan.cpp) for the layouts of the
//     graph's inputs and the target's facts.
// It also holds what is not a kernel: the temporary block, the split workspaces (in each reduction's
// binding) and the rule for outputs that alias inputs (written through a temporary, copied back after the
// last kernel). Nothing in it names a back end's types: the CUDA emitters (cuda/emit.hpp) spell
// them. The runtime builds and launches what the plan says and decides nothing (runtime/src/gpu_run.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/device_info.hpp"
#include "loom/codegen/matmul_plan.hpp"
#include "loom/codegen/options.hpp"
#include "loom/codegen/pointwise_plan.hpp"
#include "loom/codegen/reduce_plan.hpp"
#include "loom/codegen/tile_plan.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen {

/// Where a kernel reads or writes: a source of the plan (an Input node of the graph; index into the plan's
/// sources), a temporary (index into Partition::temps), a root of the evaluation (index into the roots), or
/// an index the kernel computes (an iota leaf: it reads no memory).
struct Slot {
    /// Index: an iota leaf, whose values the kernel computes (no memory; its address is null).
    enum class Kind : std::uint8_t { Source, Temp, Root, Index };
    Kind kind = Kind::Source;
    int index = 0;
    bool operator==(const Slot&) const = default;
};
std::string to_string(const Slot& s);  // "in2", "t0", "out1"

/// The kernel families. Each is one plan type, one case of partition(), one emitter per back end and one
/// launch arm of the runtime (docs/internals.md). MatMul: one matrix product (ir::Op::MatMul) reading its
/// operands from memory, with the elementwise work over its shape after it (its epilogue) in the same
/// kernel: a CUDA-core kernel on the GPU (matmul_plan.hpp); the host runs the kernel's graph on the CPU
/// reference.
enum class Family : std::uint8_t { Pointwise, Reduction, MatMul };
std::string_view family_name(Family f);

/// One kernel of a partition. Its graph has the values of other kernels replaced by placeholder inputs
/// (Partition::temps[t].placeholder), so it reads only sources and temporaries.
struct FusedKernel {
    Family family = Family::Pointwise;
    std::string name;
    /// Pointwise: the outputs, sharing one iteration space. Reduction: empty (see `group`). MatMul: the
    /// outputs of the epilogue over the product's shape (the product itself where it is written as it is),
    /// with one product in their graph (product_of) whose operands are sources, temporaries or views of them.
    std::vector<ir::NodePtr> outputs;
    /// Reduction: the reductions (stage order), element outputs and row outputs.
    ReduceGroupSpec group;
    /// Where each output goes: pointwise, per output; reduction, the element outputs then the row outputs.
    std::vector<Slot> writes;
    /// Reduction: the reductions as the user wrote them (before substitution), for the explain log.
    std::vector<ir::NodePtr> members;
    /// Why this kernel starts here: the boundary to what came before, with the user's source lines.
    std::string why;

    /// The graph's outputs in emission order (pointwise and matmul: outputs; reduction: reductions, element
    /// outputs, row outputs).
    std::vector<ir::NodePtr> graph() const;
    bool operator==(const FusedKernel& o) const;
};

/// A value materialized between kernels: written by one kernel, read by later ones (contiguous).
struct TempValue {
    ir::NodePtr value;        // the node as the user wrote it
    ir::NodePtr placeholder;  // the Input that stands for it in the kernels that read it (no tensor bound)
    std::string why;
    /// Same value, same reason; placeholders compare by dtype and shape (each partition makes its own).
    bool operator==(const TempValue& o) const;
};

/// The target-neutral partition of a graph into kernels.
struct Partition {
    std::vector<FusedKernel> kernels;  // launch order (operands before users)
    std::vector<TempValue> temps;
    /// A remark on the whole partition: why reductions run one per kernel, or that fusion is off.
    std::string note;

    /// Structural: kernels compare by family, name, graph structure (codegen::structural_key), slots and
    /// reasons, so two partitions of one graph are equal although each has its own placeholders.
    bool operator==(const Partition&) const = default;
    std::uint64_t hash() const;
    /// One line per kernel, temporary and boundary (stable: tests compare it).
    std::string to_string() const;
};

/// The hook for a cost model that decides fusion boundaries. partition() asks it before it fuses; the
/// default model fuses whatever the families can run as one kernel (every answer yes).
class FusionCostModel {
  public:
    virtual ~FusionCostModel() = default;
    /// Whether reduction `r` joins the kernel of the reductions `group` (same operand shape and axes).
    virtual bool join_reduction(const std::vector<ir::NodePtr>& group, const ir::Node& r) const;
    /// Whether the reduction kernel of `group` also writes root `root` (an element or row output).
    virtual bool fuse_output(const std::vector<ir::NodePtr>& group, const ir::Node& root) const;
};

struct PartitionOptions {
    /// false: no fusion at all (Options::fusion): every elementwise op and reduction is a kernel of its own
    /// and every value between them a temporary, in its dtype.
    bool fusion = true;
    /// Every reduction a kernel of its own, everything else pointwise (plan_fusion's fallback when a group
    /// cannot run as one kernel); `strict_reason` says why.
    bool strict = false;
    std::string strict_reason;
    /// Kernel names: the user's name, else named after their ops.
    std::string name;
    const FusionCostModel* cost = nullptr;  // null: fuse everything that can be
    /// float16 and bfloat16 products read their operands from memory (Hopper's wgmma path, whose operands the
    /// tensor memory accelerator copies): an operand that would be a prologue is computed first, as a stage
    /// of its own, and the explain log says so.
    bool half_operands_from_memory = false;
};

/// Partitions the graph of `roots` (after the standard passes) into kernels. Pure: prints nothing, needs no
/// device, and serves graphs with and without reductions alike. Throws InternalError for a malformed graph.
Partition partition(const std::vector<ir::NodePtr>& roots, const PartitionOptions& options = {});

/// A back end's plan of `roots`: `schedule(partition)` of the partition under `options` (fusion, `name`,
/// `cost`); when the schedule throws NotFusable (a group that cannot run as one kernel), once more with the
/// strict partition, the reason kept. An unfused partition that is not plannable is an InternalError naming
/// `api`. Every back end's planner (plan_fusion, plan_host) goes through here.
template <class Schedule>
auto schedule_partition(const std::vector<ir::NodePtr>& roots, const Options& options, std::string_view name,
                        const FusionCostModel* cost, std::string_view api, Schedule&& schedule,
                        bool half_operands_from_memory = false) {
    PartitionOptions po;
    po.fusion = options.fusion;
    po.half_operands_from_memory = half_operands_from_memory;
    po.name = std::string(name);
    po.cost = cost;
    try {
        return schedule(partition(roots, po));
    } catch (const NotFusable& e) {
        if (!options.fusion)
            throw InternalError(std::string(api) + "(): an unfused kernel is not plannable: " + e.what());
        po.strict = true;
        po.strict_reason = e.what();
        return schedule(partition(roots, po));
    }
}

/// The indices of `sources` (Input nodes) that the graph of `roots` reads, in order.
std::vector<int> sources_read(const std::vector<ir::NodePtr>& roots,
                              std::span<const ir::Node* const> sources);

/// The GPU schedule of one kernel of the partition.
struct GpuKernel {
    PlannedPointwise pointwise;  // Family::Pointwise
    /// Family::Pointwise: the tiled schedule (tile_plan.hpp) when the layouts show a transposed load or the
    /// graph a stencil, else none (`tile.note` then says why a near-pattern was not taken). Whether a load is
    /// transposed depends on the bound layouts (a transpose of a transposed view reads contiguously), which
    /// the partition does not know, so the GPU schedule decides.
    PlannedTile tile;
    PlannedReduce reduce;  // Family::Reduction
    PlannedMatmul matmul;  // Family::MatMul
    /// Where each kernel input is read from, in the plan's input order (pointwise_inputs of the outputs, or
    /// PlannedReduce::inputs).
    std::vector<Slot> reads;
    std::int64_t numel = 0;  // pointwise: elements of the iteration space
    /// Pointwise: the graph has a view (an output aliasing an input is then never written in place).
    bool has_views = false;
    /// The in-memory kernel cache key: graph structure, plan and options.
    std::uint64_t key = 0;
    bool operator==(const GpuKernel& o) const;
};

/// A temporary's place in the evaluation's one temporary block (contiguous, 256-byte aligned).
struct TempBuffer {
    Shape shape;
    DType dtype = DType::Float32;
    std::size_t offset = 0;  // bytes
    bool operator==(const TempBuffer&) const = default;
};

struct FusionPlan {
    Partition partition;
    Options options;
    std::vector<GpuKernel> gpu;  // parallel to partition.kernels
    std::vector<TempBuffer> temps;
    std::size_t temp_bytes = 0;  // the temporary block (0: none)
    std::size_t sources = 0;     // the number of sources the plan was made for
    /// The sources the graph reads. An output sharing memory with one of them is written through a temporary
    /// and copied back after the last kernel, unless the only kernel reading it is the one writing the
    /// output, a pointwise kernel without views, and the source has the output's exact layout (each element
    /// is read before it is written, in one thread).
    std::vector<int> reads;

    bool operator==(const FusionPlan&) const = default;
    std::uint64_t hash() const;
    /// What LOOM_EXPLAIN=fusion prints: every kernel with its nodes, schedule, reads and writes, every
    /// temporary and every boundary with its reason.
    std::string to_string() const;
};

/// Plans the evaluation of `roots` (after the standard passes), whose Input nodes are among `sources` (a
/// source the graph does not read is allowed) with layouts `layouts`, for the GPU `device`, under
/// `options`. Pure. When a reduction group cannot run as one kernel (plan_reduce throws NotFusable) the
/// graph is partitioned again strictly. `root_strides` (empty: every root contiguous; an empty entry: that
/// root contiguous) gives the strides of outputs that are views (assign() into a column or a strided slice;
/// the caller checks that none overlaps itself): pointwise kernels write them at their own index maps, and a
/// reduction kernel's strided root goes through a temporary and a pointwise kernel that stores it. Throws
/// loom::Error for limits, InternalError for an Input that is not a source.
FusionPlan plan_fusion(const std::vector<ir::NodePtr>& roots, std::span<const ir::Node* const> sources,
                       std::span<const InputLayout> layouts, const DeviceInfo& device, const Options& options,
                       std::string_view name = {}, const FusionCostModel* cost = nullptr,
                       std::span<const Strides> root_strides = {});

}  // namespace loom::codegen
