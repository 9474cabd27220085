// What both back ends' schedules share (cuda/fusion_plan.cpp: plan_fusion; llvm/host_plan.cpp: plan_host),
// written once: the partition (again, strictly, when a group cannot run as one kernel), the roots that are
// strided views routed through temporaries, the slot and layout of every input of the partition, the
// temporaries placed in one block, and the sources the graph reads. A back end adds one function: the
// schedule of one kernel, which dispatches on the kernel's family.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/codegen/options.hpp"
#include "loom/codegen/plan/partition.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen {

/// A temporary's place in the evaluation's one temporary block (contiguous, 256-byte aligned).
struct TempBuffer {
    Shape shape;
    DType dtype = DType::Float32;
    std::size_t offset = 0;  // bytes
    bool operator==(const TempBuffer&) const = default;
};

/// What every back end's plan holds besides its kernels' schedules (FusionPlan, HostPlan).
struct ScheduledPartition {
    Partition partition;
    Options options;
    std::vector<TempBuffer> temps;  // parallel to partition.temps
    std::size_t temp_bytes = 0;     // the temporary block (0: none)
    std::size_t sources = 0;        // the number of sources the plan was made for
    /// The sources the graph reads: an output sharing memory with one of them may have to be written through
    /// a temporary (the runtime's rule for outputs that alias inputs, runtime/src/run_slots.hpp).
    std::vector<int> reads;
    bool operator==(const ScheduledPartition&) const = default;
};

/// What a back end asks of the schedule: the graph, its sources and their layouts, and the target's ways.
struct ScheduleRequest {
    std::string_view api;  // the planner's name, for errors ("plan_fusion")
    const std::vector<ir::NodePtr>* roots = nullptr;
    std::span<const ir::Node* const> sources;  // the graph's Input nodes are among them
    std::span<const InputLayout> layouts;      // one per source
    Options options;
    std::string_view name;                  // kernel names: the user's name, else named after their ops
    const FusionCostModel* cost = nullptr;  // null: fuse everything that can be
    /// The strides of outputs that are views (empty: every root contiguous; an empty entry: that root
    /// contiguous). The caller checks that none overlaps itself.
    std::span<const Strides> root_strides;
    /// Whether plans may assume the 16-byte alignment the layouts state (the GPU chooses its vector variant
    /// from it); false: every layout plans as not aligned (the host reads with unaligned vector loads, so its
    /// kernels do not depend on the pointers).
    bool aligned = true;
    bool half_operands_from_memory = false;  // PartitionOptions::half_operands_from_memory
    bool operands_from_memory = false;       // PartitionOptions::operands_from_memory
    /// The families whose kernels write a root that is a strided view at its own strides (family_bit of
    /// each); a strided root of any other family's kernel goes through a temporary and a pointwise kernel
    /// that stores it (route_strided_roots).
    std::uint32_t view_writers = family_bit(Family::Pointwise);
};

/// One call's pointers of a kernel: element 0 of each input in the kernel's input order (a back end kernel's
/// `reads`; null for an index the kernel computes) and each output in FusedKernel::writes order.
struct KernelPointers {
    std::span<const void* const> inputs;
    std::span<void* const> outputs;
    /// Where checked gathers record an out-of-range index (ir::GatherErrorWord): the runtime's, given to a
    /// kernel whose needs ask for it (LaunchNeeds::error_word on the GPU, HostLaunch::error_word on the
    /// host).
    void* error_word = nullptr;
};

/// The inputs of a partition as a back end's schedule sees them: each source's and temporary's slot and
/// layout (iota leaves are computed: Slot::Kind::Index, a virtual int64 layout), and the strides at which
/// each kernel writes its roots.
class ScheduleInputs {
  public:
    ScheduleInputs(const Partition& P, const ScheduleRequest& request);
    /// The layout of an input of a kernel's graph. InternalError for an Input that is neither a source nor
    /// a temporary of the partition.
    InputLayout layout(const ir::Node& input) const;
    LayoutOf layout_of() const {
        return [this](const ir::Node& n) { return layout(n); };
    }
    Slot slot(const ir::Node* input) const;
    /// The strides of root output `w` of shape `shape` when it is a strided view; null for a contiguous root
    /// or an output that is not a root (a temporary: contiguous).
    const Strides* strided_root(const Slot& w, const Shape& shape) const;
    /// The strides at which a pointwise kernel writes its outputs: each strided root at its own strides,
    /// every other output contiguous; `strided` (optional) is set when any is a strided view.
    std::vector<Strides> output_strides(const FusedKernel& k, bool* strided = nullptr) const;

  private:
    std::unordered_map<const ir::Node*, std::pair<Slot, InputLayout>> inputs_;
    const ScheduleRequest& request_;
};

/// Routes every root that is a strided view and that a kernel of a family outside `view_writers` would write
/// (a reduction writes its outputs contiguous) through a temporary and a pointwise kernel (`<name>_store`, a
/// name no other kernel of the partition has) that stores it at its own index map.
void route_strided_roots(Partition& P, std::span<const Strides> root_strides, std::uint32_t view_writers);

/// Places the partition's temporaries in one block, each at a 256-byte aligned offset (plans assume 16).
void place_temporaries(ScheduledPartition& plan);

/// The indices of `sources` (Input nodes) that the graph of `roots` reads, in order.
std::vector<int> sources_read(const std::vector<ir::NodePtr>& roots,
                              std::span<const ir::Node* const> sources);

namespace detail {
/// partition() of the request's roots under its options (PartitionOptions), or with `strict` the strict
/// partition whose note gives `strict_reason`.
Partition partition_for(const ScheduleRequest& r, bool strict, const std::string& strict_reason);
[[noreturn]] void throw_unfused_not_plannable(std::string_view api, const NotFusable& e);
}  // namespace detail

/// The schedule both back ends run: the partition, its strided roots routed, each kernel scheduled by
/// `schedule_kernel(const FusedKernel&, const ScheduleInputs&)` (the back end's family dispatch, returning a
/// `Plan::Kernel` appended to plan.kernels, parallel to the partition's kernels), the temporaries placed and
/// the sources read recorded. When a kernel throws NotFusable (a group that cannot run as one kernel), the
/// graph is partitioned again strictly and scheduled again, the reason kept; an unfused partition that is not
/// plannable is an InternalError naming the request's api.
template <class Plan, class ScheduleKernel>
Plan schedule_plan(const ScheduleRequest& r, ScheduleKernel&& schedule_kernel) {
    auto attempt = [&](Partition P) {
        Plan plan;
        plan.options = r.options;
        plan.sources = r.sources.size();
        route_strided_roots(P, r.root_strides, r.view_writers);
        const ScheduleInputs inputs(P, r);
        for (const FusedKernel& k : P.kernels) plan.kernels.push_back(schedule_kernel(k, inputs));
        plan.partition = std::move(P);
        place_temporaries(plan);
        plan.reads = sources_read(*r.roots, r.sources);
        return plan;
    };
    try {
        return attempt(detail::partition_for(r, false, {}));
    } catch (const NotFusable& e) {
        if (!r.options.fusion) detail::throw_unfused_not_plannable(r.api, e);
        return attempt(detail::partition_for(r, true, e.what()));
    }
}

}  // namespace loom::codegen
