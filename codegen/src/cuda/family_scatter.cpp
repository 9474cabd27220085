// The GPU family object of scatter kernels (GpuFamily<PlannedScatter>, kernel_family.hpp): emits the kernel,
// explains it, says what a launch needs (the per-block workspace, the error word of checked indices) and
// binds one call (the parameter struct, the grid).
#include <fmt/format.h>

#include <cstring>

#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"

namespace loom::codegen {

#include "scatter_params.inc"

static_assert(sizeof(ScatterParams) == 9 * 8 + 6 * 8 + 4 * 6 * 8 + 4 * 8 + 5 * 8 + 2 * 4,
              "scatter_params.inc: the host's and the device's layouts must agree");

std::size_t scatter_param_bytes() {
    return sizeof(ScatterParams);
}

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::gather_api_name(ir::scatter_api(n)), short_location(n.loc()));
}

}  // namespace

KernelSource GpuFamily<PlannedScatter>::emit(const FusedKernel& k, const PlannedScatter& s) {
    return emit_scatter(k.name, s);
}

std::string GpuFamily<PlannedScatter>::plan_text(const PlannedScatter& s) {
    return s.plan.to_string();
}

std::string GpuFamily<PlannedScatter>::explain(const FusionPlan& plan, std::size_t i,
                                               const PlannedScatter& s) {
    const FusedKernel& k = plan.partition.kernels[i];
    const ir::Node& n = *s.node;
    std::string reads, writes;
    for (std::size_t j = 0; j < s.inputs.size(); ++j)
        reads += fmt::format("{}{} {} [{}]", j == 0 ? "" : ", ",
                             s.inputs[j]->label().empty() ? "input" : s.inputs[j]->label(),
                             ir::describe(*s.inputs[j]), to_string(plan.kernels[i].reads.at(j)));
    for (const Slot& w : k.writes) writes += (writes.empty() ? "" : ", ") + to_string(w);
    return fmt::format(
        "kernel {}  {}   {} x {}, index {}, values {} -> {} ({}): {}\n"
        "          {} path: {} columns of {} targets and {} values, a block of 256 threads per column ({} "
        "blocks); elementwise producers and consumers are separate kernels\n"
        "          reads {}; writes {}; 1 launch\n",
        i, k.name, ir::op_name(n.op()), ir::describe(*n.operand(0)), ir::describe(*n.operand(1)),
        ir::describe(*n.operand(2)), ir::describe(n), ir::scatter_attributes(n), where_of(n),
        scatter_path_name(s.plan.path), s.columns(), s.extent, s.length, s.blocks(), reads, writes);
}

LaunchNeeds GpuFamily<PlannedScatter>::needs(const PlannedScatter& s, KernelPointers) {
    LaunchNeeds n;
    n.param_bytes = sizeof(ScatterParams);
    const std::int64_t blocks = s.blocks(), words = s.work_words();
    if (blocks > 0 && words > 0) n.workspaces.push_back(static_cast<std::size_t>(blocks * words) * 8);
    n.error_word = s.plan.mode == ir::IndexMode::Checked;
    return n;
}

BoundLaunch GpuFamily<PlannedScatter>::bind(const PlannedScatter& s, KernelPointers p,
                                            const LaunchScratch& scratch, std::span<std::byte> params) {
    const ScatterPlan& plan = s.plan;
    const ir::Node& n = *s.node;
    ScatterParams sp{};
    const std::size_t esz = itemsize(plan.dtype);
    const auto at = [&](int j, std::size_t size) {
        const ScatterOperand& o = s.operands[static_cast<std::size_t>(j)];
        return static_cast<const char*>(p.inputs[static_cast<std::size_t>(o.input)]) +
               o.offset * static_cast<std::int64_t>(size);
    };
    sp.x = at(0, esz);
    sp.idx = at(1, itemsize(plan.index));
    sp.values = at(2, esz);
    if (p.outputs.size() > 4)
        throw Error(fmt::format("{}(): a scatter kernel writes at most 4 outputs, not {} ({})",
                                ir::gather_api_name(ir::scatter_api(n)), p.outputs.size(),
                                short_location(n.loc())));
    sp.outputs = static_cast<int>(p.outputs.size());
    for (std::size_t o = 0; o < p.outputs.size(); ++o) sp.out[o] = p.outputs[o];
    sp.error_word = p.error_word;
    const std::size_t axes = s.col_extents.size(), pad = 6 - axes;
    for (std::size_t a = 0; a < 6; ++a) {
        sp.col_extent[a] = a < pad ? 1 : s.col_extents[a - pad];
        for (std::size_t o = 0; o < 4; ++o) sp.col_stride[o][a] = a < pad ? 0 : s.col_strides[o][a - pad];
    }
    for (std::size_t o = 0; o < 4; ++o) sp.step[o] = s.step[o];
    sp.columns = s.columns();
    sp.extent = s.extent;
    sp.length = s.length;
    sp.work_words = s.work_words();
    sp.work = scratch.workspaces.empty() ? nullptr : static_cast<long long*>(scratch.workspaces[0]);
    sp.error_id = plan.mode == ir::IndexMode::Checked ? ir::gather_error_id(n) : 0;
    if (params.size() < sizeof sp)
        throw InternalError(
            fmt::format("scatter kernel: {} parameter bytes for {}", params.size(), sizeof sp));
    std::memcpy(params.data(), &sp, sizeof sp);
    BoundLaunch b;
    const std::int64_t blocks = s.blocks();
    if (blocks == 0) return b;
    b.config.grid_x = static_cast<std::uint32_t>(blocks);
    b.config.block_x = static_cast<std::uint32_t>(plan.threads);
    return b;
}

}  // namespace loom::codegen
