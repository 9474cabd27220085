// What the target-neutral planners need to know of a target, as plain data each back end fills.
#pragma once

#include <cstddef>
#include <limits>

namespace loom::codegen {

/// What the target-neutral planners (plan_pointwise, plan_reduce) need to know of the target; each back end
/// fills it (DeviceInfo::plan_target() for a GPU, HostTarget::plan_target() for the host).
struct PlanTarget {
    /// Multiprocessors of a GPU: they size grid-stride loops (PointwisePlan::grid_stride_blocks) and decide
    /// when a reduction shares its rows' chunks among blocks (ReducePlan::split). 0 for a target that
    /// schedules its own parallel work (the host: no grid, no split among blocks).
    int multiprocessors = 0;
    /// Bytes of kernel parameters a launch may pass by value; past it a pointwise kernel takes its
    /// parameters from memory (PointwisePlan::params_in_memory) and a reduction is refused. The host passes a
    /// pointer to the parameters: no limit.
    std::size_t param_limit_bytes = std::numeric_limits<std::size_t>::max();
    bool operator==(const PlanTarget&) const = default;
};

}  // namespace loom::codegen
