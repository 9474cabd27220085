// The partition: what an evaluation runs, as plain data shared by every back end. Which nodes form which
// kernel (each kernel made by one case of partition(): pointwise, reduction, matrix product), the values
// materialized between kernels (temporaries) and where each kernel reads and writes (a source of the graph,
// a temporary or a root), each boundary with its reason tied to the user's source lines; made by partition()
// (codegen/src/plan/partition.cpp), a pure function of the roots and the options. Each back end schedules
// it for its target (cuda/fusion_plan.hpp: plan_fusion; llvm/host_plan.hpp: plan_host) through
// schedule_partition().
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

/// The product node of a matmul kernel's graph `outputs` (InternalError unless there is exactly one).
const ir::NodePtr& product_of(const std::vector<ir::NodePtr>& outputs);

/// The Input nodes (sources and temporaries' placeholders) of a matmul kernel's graph, in topological order.
std::vector<const ir::Node*> product_inputs(const FusedKernel& k);

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

/// A temporary's place in the evaluation's one temporary block (contiguous, 256-byte aligned).
struct TempBuffer {
    Shape shape;
    DType dtype = DType::Float32;
    std::size_t offset = 0;  // bytes
    bool operator==(const TempBuffer&) const = default;
};

}  // namespace loom::codegen
