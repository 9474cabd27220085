// The family object of reduction kernels on the GPU (kernel_family.hpp): a split reduction's counters and
// partial workspaces, its launch shape (row blocks, blocks per row) and its vector or scalar entry point,
// chosen from the pointers.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"

namespace loom::codegen {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

// The element outputs and the row outputs of a reduction kernel's outputs (FusedKernel::writes order).
std::pair<std::span<void* const>, std::span<void* const>> split_outputs(const PlannedReduce& s,
                                                                        std::span<void* const> outputs) {
    const std::size_t el = static_cast<std::size_t>(s.plan.element_outputs);
    if (el > outputs.size()) throw InternalError("reduction kernel: fewer outputs than element outputs");
    return {outputs.subspan(0, el), outputs.subspan(el)};
}

}  // namespace

KernelSource GpuFamily<PlannedReduce>::emit(const FusedKernel& k, const PlannedReduce& s) {
    return emit_reduce(k.name, s);
}

std::string GpuFamily<PlannedReduce>::plan_text(const PlannedReduce& s) {
    return s.plan.to_string();
}

std::string GpuFamily<PlannedReduce>::explain(const FusionPlan& plan, std::size_t i,
                                              const PlannedReduce& pr) {
    const FusedKernel& k = plan.partition.kernels[i];
    const ReducePlan& rp = pr.plan;
    std::string red;
    for (std::size_t j = 0; j < k.members.size(); ++j)
        red += fmt::format(" {} stage {}", where_of(*k.members[j]), rp.ops[j].stage);
    std::string text = fmt::format("kernel {}  {}   reduction of {} over axes [{}]:{}\n", i, k.name,
                                   loom::to_string(k.group.reductions[0]->operand(0)->shape()),
                                   fmt::join(k.group.reductions[0]->ints(), ", "), red);
    const std::string split = !rp.split ? std::string()
                              : rp.schedule == ReduceSchedule::Inner
                                  ? fmt::format(
                                        ", split over {} blocks per row (balanced chunk ranges in full "
                                        "waves; groups of {} chunk partials "
                                        "finished by the block that completes them, then the row)",
                                        pr.binding.blocks_per_row, kSplitGroup)
                                  : fmt::format(", split over {} blocks per row (the last one finishes it)",
                                                pr.binding.blocks_per_row);
    text += fmt::format(
        "          schedule {}, {} threads per block, {}{}{}; {} element output(s), {} row output(s); "
        "one launch\n",
        schedule_name(rp.schedule), rp.block,
        rp.schedule == ReduceSchedule::Inner ? fmt::format("{} threads per row", rp.group)
                                             : std::string("a thread per 1 or 4 outputs"),
        rp.cached_blocks > 0 ? ", rows held in registers" : "", split, rp.element_outputs,
        k.group.row_outputs.size());
    return text;
}

LaunchNeeds GpuFamily<PlannedReduce>::needs(const PlannedReduce& s, KernelPointers p) {
    LaunchNeeds n;
    n.param_bytes = reduce_params_size(s.plan);
    n.error_word = checks_indices(s.plan);
    if (!s.plan.split) return n;
    const LaunchConfig l = reduce_launch(s, p.inputs, split_outputs(s, p.outputs).first);
    if (l.grid_x == 0) return n;
    n.counters = split_counter_count(s, l);
    for (const ReduceOpPlan& op : s.plan.ops)
        n.workspaces.push_back(accumulator_bytes(op) * static_cast<std::size_t>(split_partial_count(s)));
    return n;
}

BoundLaunch GpuFamily<PlannedReduce>::bind(const PlannedReduce& s, KernelPointers p,
                                           const LaunchScratch& scratch, std::span<std::byte> params) {
    const auto [element_outputs, row_outputs] = split_outputs(s, p.outputs);
    BoundLaunch b;
    b.config = reduce_launch(s, p.inputs, element_outputs);
    if (b.config.grid_x == 0) return b;
    // Split plans: the counters, then one partials workspace per reduction (pack_reduce_params's order).
    std::vector<void*> partials;
    if (s.plan.split) {
        if (!scratch.counters || scratch.workspaces.size() != s.plan.ops.size())
            throw InternalError("reduction kernel: a split plan without its counters and workspaces");
        partials.push_back(scratch.counters);
        partials.insert(partials.end(), scratch.workspaces.begin(), scratch.workspaces.end());
    }
    pack_reduce_params(s, p.inputs, element_outputs, row_outputs, partials, params, p.error_word);
    return b;
}

}  // namespace loom::codegen
