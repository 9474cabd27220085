// The family objects of the host (host_family.hpp): each family's LLVM emitter, explain text, parameters,
// workspaces and passes of tasks; products run on the CPU reference until the LLVM back end has them.
#include "loom/codegen/llvm/host_family.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"

namespace loom::codegen {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

}  // namespace

std::optional<LlvmKernelSource> HostFamily<HostPointwise>::emit(const FusedKernel& k, const HostPointwise& s,
                                                                const HostTarget& t) {
    return emit_pointwise_llvm(k.name, k.outputs, s.planned.plan, s.schedule, t);
}

HostLaunch HostFamily<HostPointwise>::launch(const HostPointwise& s) {
    HostLaunch l;
    const std::int64_t n = s.planned.binding.numel;
    if (n == 0) return l;
    l.param_bytes = s.planned.plan.params.size;
    l.error_word = s.planned.plan.checks_indices();
    l.passes[0] = {HostPass::Entry::Main, s.schedule.tasks, s.schedule.task, n};
    l.pass_count = 1;
    return l;
}

void HostFamily<HostPointwise>::pack(const HostPointwise& s, KernelPointers p, std::span<void* const>,
                                     std::span<std::byte> params) {
    pack_params(s.planned.plan, s.planned.binding, p.inputs, p.outputs, params, p.error_word);
}

std::optional<LlvmKernelSource> HostFamily<HostReduction>::emit(const FusedKernel& k, const HostReduction& s,
                                                                const HostTarget& t) {
    return emit_reduce_llvm(k.name, s.planned, s.schedule, t);
}

HostLaunch HostFamily<HostReduction>::launch(const HostReduction& s) {
    HostLaunch l;
    const PlannedReduce& pr = s.planned;
    const HostSchedule& hs = s.schedule;
    const std::int64_t O = pr.binding.outputs;
    if (O == 0) return l;
    l.param_bytes = reduce_params_size(pr.plan);
    l.error_word = checks_indices(pr.plan);
    if (!hs.split) {
        l.passes[0] = {HostPass::Entry::Main, hs.tasks, hs.task, O};
        l.pass_count = 1;
        return l;
    }
    for (std::size_t j = 0; j < pr.plan.ops.size(); ++j)
        l.workspaces.push_back(static_cast<std::size_t>(O * pr.binding.chunks * 16));
    const bool outer = pr.plan.schedule == ReduceSchedule::Outer;
    const std::int64_t units = outer ? (O + hs.lanes - 1) / hs.lanes : O;  // rows, or vectors of columns
    l.passes[0] = {HostPass::Entry::Partials, hs.tasks, hs.task, units * pr.binding.chunks};
    l.passes[1] = {HostPass::Entry::Finish, hs.finish_tasks, hs.finish_task, O};
    l.pass_count = 2;
    return l;
}

void HostFamily<HostReduction>::pack(const HostReduction& s, KernelPointers p,
                                     std::span<void* const> workspaces, std::span<std::byte> params) {
    const std::size_t el = static_cast<std::size_t>(s.planned.plan.element_outputs);
    // The partials: [0] the GPU's counters (unused on the host), then one workspace per reduction.
    std::vector<void*> partials{nullptr};
    partials.insert(partials.end(), workspaces.begin(), workspaces.end());
    pack_reduce_params(s.planned, p.inputs, p.outputs.subspan(0, el), p.outputs.subspan(el), partials, params,
                       p.error_word);
}

std::optional<LlvmKernelSource> HostFamily<HostReference>::emit(const FusedKernel&, const HostReference&,
                                                                const HostTarget&) {
    return std::nullopt;  // no LLVM emitter yet: the kernel runs on the reference
}

HostLaunch HostFamily<HostReference>::launch(const HostReference& s) {
    HostLaunch l;
    l.on_reference = true;
    l.error_word = s.checks_indices;
    return l;
}

void HostFamily<HostReference>::pack(const HostReference&, KernelPointers, std::span<void* const>,
                                     std::span<std::byte>) {}

bool has_code(const HostKernel& k) {
    return std::visit([](const auto& s) { return HostFamily<std::decay_t<decltype(s)>>::has_code; },
                      k.schedule);
}

std::optional<LlvmKernelSource> emit_host_kernel(const HostPlan& plan, std::size_t i) {
    const FusedKernel& k = plan.partition.kernels.at(i);
    return std::visit(
        [&](const auto& s) { return HostFamily<std::decay_t<decltype(s)>>::emit(k, s, plan.target); },
        plan.kernels.at(i).schedule);
}

std::string HostFamily<HostReduction>::explain(const HostPlan& plan, std::size_t i, const HostReduction& s) {
    const FusedKernel& k = plan.partition.kernels[i];
    const ReducePlan& rp = s.planned.plan;
    std::string red;
    for (std::size_t j = 0; j < k.members.size(); ++j)
        red += fmt::format(" {} stage {}", where_of(*k.members[j]), rp.ops[j].stage);
    return fmt::format(
        "kernel {}  {}   reduction of {} over axes [{}]:{}\n          {} order, {} element output(s), {} row "
        "output(s); {}\n",
        i, k.name, loom::to_string(k.group.reductions[0]->operand(0)->shape()),
        fmt::join(k.group.reductions[0]->ints(), ", "), red,
        rp.schedule == ReduceSchedule::Inner ? "row (256 lanes of runs of 4 per chunk of 8192)"
                                             : "column (chunks of 256 in sequence)",
        rp.element_outputs, k.group.row_outputs.size(), s.schedule.to_string());
}

std::string HostFamily<HostReference>::explain(const HostPlan& plan, std::size_t i, const HostReference& s) {
    const FusedKernel& k = plan.partition.kernels[i];
    const HostKernel& h = plan.kernels[i];
    std::string what;
    if (s.family == Family::MatMul) {
        const ir::Node& m = *product_of(k.outputs);
        what = fmt::format("matmul {} x {} -> {}: {}", ir::describe(*m.operand(0)),
                           ir::describe(*m.operand(1)), ir::describe(m), where_of(m));
    } else if (s.family == Family::Attention) {
        const ir::Node& a = *k.outputs.at(0);
        what = fmt::format("attention q {}, k {}, v {} -> {} ({}): {}", ir::describe(*a.operand(0)),
                           ir::describe(*a.operand(1)), ir::describe(*a.operand(2)), ir::describe(a),
                           ir::attention_attributes(a), where_of(a));
    } else if (s.family == Family::Scan) {
        const ir::Node& n = *k.outputs.at(0);
        what = fmt::format("{} {} -> {} ({}): {}", ir::op_name(n.op()), ir::describe(*n.operand(0)),
                           ir::describe(n), ir::scan_attributes(n), where_of(n));
    } else if (s.family == Family::Scatter) {
        const ir::Node& n = *k.outputs.at(0);
        what =
            fmt::format("{} x {}, index {}, values {} -> {} ({}): {}", ir::op_name(n.op()),
                        ir::describe(*n.operand(0)), ir::describe(*n.operand(1)), ir::describe(*n.operand(2)),
                        ir::describe(n), ir::scatter_attributes(n), where_of(n));
    } else {
        what = fmt::format("{} {}", family_name(s.family), loom::to_string(k.outputs.at(0)->shape()));
    }
    std::string reads;
    const auto ins = graph_inputs(k);
    for (std::size_t j = 0; j < ins.size(); ++j)
        reads +=
            fmt::format("{}{} {} [{}]", j ? ", " : "", ins[j]->label().empty() ? "input" : ins[j]->label(),
                        ir::describe(*ins[j]), to_string(h.reads[j]));
    std::vector<std::string> writes;
    for (const Slot& w : k.writes) writes.push_back(to_string(w));
    return fmt::format(
        "kernel {}  {}   {}\n          runs on the CPU reference (the {} family has no LLVM "
        "emitter); reads {}; writes {}\n",
        i, k.name, what, family_name(s.family), reads, fmt::join(writes, ", "));
}

std::string HostFamily<HostPointwise>::explain(const HostPlan& plan, std::size_t i, const HostPointwise& s) {
    const FusedKernel& k = plan.partition.kernels[i];
    const HostKernel& h = plan.kernels[i];
    std::string nodes;
    for (const ir::Node* n : ir::topo_order(k.outputs))
        if (ir::is_elementwise(n->op()) || ir::is_view(n->op()) || ir::is_gather(n->op()))
            nodes += fmt::format(" {}", where_of(*n));
    std::string reads;
    const auto ins = pointwise_inputs(k.outputs);
    for (std::size_t j = 0; j < ins.size(); ++j)
        reads +=
            fmt::format("{}{} {} [{}]", j ? ", " : "", ins[j]->label().empty() ? "input" : ins[j]->label(),
                        ir::describe(*ins[j]), to_string(h.reads[j]));
    std::vector<std::string> writes;
    for (const Slot& w : k.writes) writes.push_back(to_string(w));
    return fmt::format("kernel {}  {}   pointwise {}:{}\n          reads {}; writes {}; {} elements\n", i,
                       k.name, loom::to_string(k.outputs[0]->shape()), nodes,
                       reads.empty() ? std::string("nothing") : reads, fmt::join(writes, ", "),
                       s.schedule.to_string());
}

}  // namespace loom::codegen
