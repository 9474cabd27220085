// The partition: what an evaluation runs, as plain data shared by every back end. Which nodes form which
// kernel (each kernel made by one case of partition(): pointwise, reduction, matrix product), the values
// materialized between kernels (temporaries) and where each kernel reads and writes (a source of the graph,
// a temporary or a root), each boundary with its reason tied to the user's source lines; made by partition()
// (codegen/src/plan/partition.cpp), a pure function of the roots and the options. Each back end schedules
// it for its target (cuda/fusion_plan.hpp: plan_fusion; llvm/host_plan.hpp: plan_host) through
// schedule_plan() (plan/schedule.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/options.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
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

/// The kernel families (docs/internals.md, "Adding a kernel family"). A family is one plan type (an
/// alternative of each back end's schedule variant: cuda/fusion_plan.hpp's GpuSchedule, llvm/host_plan.hpp's
/// HostSchedule), one case of partition(), one emitter per back end and one object per back end that emits,
/// explains, prepares and launches its kernels (cuda/kernel_family.hpp, llvm/host_family.hpp). The partition
/// makes Pointwise, Reduction and MatMul kernels. Tiled is the GPU schedule's choice for a pointwise kernel
/// whose bound layouts show a transposed load or whose graph is a stencil (cuda/tile_plan.hpp): whether a
/// load is transposed depends on the layouts, which the partition does not know. MatMul: one matrix product
/// (ir::Op::MatMul) reading its operands from memory, with the elementwise work over its shape after it (its
/// epilogue) in the same kernel. Attention: one attention node (ir::Op::Attention) reading q, k, v and its
/// bias from memory (or views of them) and writing its result. Scan: one scan (cumsum, cumprod, cummax,
/// cummin, logcumsumexp) reading its operand from memory (or a view of it) and writing its result. Scatter:
/// one scatter (scatter, scatter_add) reading x, its indices and its values from memory (or views of them)
/// and writing its result.
enum class Family : std::uint8_t { Pointwise, Tiled, Reduction, MatMul, Attention, Scan, Scatter };
std::string_view family_name(Family f);
/// One bit per family, for sets of families.
constexpr std::uint32_t family_bit(Family f) {
    return std::uint32_t{1} << static_cast<unsigned>(f);
}

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

    /// The values the kernel writes, in `writes` order (reduction: the element outputs, then the row
    /// outputs).
    std::vector<ir::NodePtr> written() const;
    /// The graph's outputs in emission order (pointwise and matmul: outputs; reduction: reductions, element
    /// outputs, row outputs).
    std::vector<ir::NodePtr> graph() const;
    bool operator==(const FusedKernel& o) const;
};

/// The product node of a matmul kernel's graph `outputs` (InternalError unless there is exactly one).
const ir::NodePtr& product_of(const std::vector<ir::NodePtr>& outputs);

/// The Input nodes (sources and temporaries' placeholders) of a pointwise or matmul kernel's graph (its
/// outputs), in topological order: how a kernel that runs on the CPU reference reads.
std::vector<const ir::Node*> graph_inputs(const FusedKernel& k);

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
    /// Every product reads its operands from memory (the host's product kernels pack their operands from
    /// strided views): an operand that would be a prologue is computed first, as a stage of its own. A scan
    /// then takes no prologue and no epilogue either (the host runs scans on the CPU reference).
    bool operands_from_memory = false;
};

/// Partitions the graph of `roots` (after the standard passes) into kernels. Pure: prints nothing, needs no
/// device, and serves graphs with and without reductions alike. Throws InternalError for a malformed graph.
Partition partition(const std::vector<ir::NodePtr>& roots, const PartitionOptions& options = {});

}  // namespace loom::codegen
