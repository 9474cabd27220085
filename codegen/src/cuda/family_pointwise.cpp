// The family objects of pointwise and tiled kernels on the GPU (kernel_family.hpp): both bind the pointwise
// plan's parameters (pack_params); a pointwise kernel runs its vector or scalar entry point over a grid of
// its elements, a tiled kernel one block per tile.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"

namespace loom::codegen {

namespace {

// The explain text of pointwise kernel `i`: its nodes, reads, writes and vector width, or its tile.
std::string pointwise_text(const FusionPlan& plan, std::size_t i, const PointwisePlan& pp,
                           const TilePlan& tile, const std::string& note) {
    const FusedKernel& k = plan.partition.kernels[i];
    std::string nodes;
    for (const ir::Node* n : ir::topo_order(k.outputs))
        if (ir::is_elementwise(n->op()) || ir::is_view(n->op()) || ir::is_gather(n->op()))
            nodes += fmt::format(" {} ({})", ir::op_name(n->op()), short_location(n->loc()));
    std::string reads;
    const auto ins = pointwise_inputs(k.outputs);
    for (std::size_t j = 0; j < ins.size(); ++j)
        reads +=
            fmt::format("{}{} {} [{}]", j ? ", " : "", ins[j]->label().empty() ? "input" : ins[j]->label(),
                        ir::describe(*ins[j]), to_string(plan.kernels[i].reads[j]));
    std::vector<std::string> writes;
    for (const Slot& w : k.writes) writes.push_back(to_string(w));
    std::string tiled;
    const std::string tile_text = tile.to_string(pp);
    for (std::size_t b = 0, e; b < tile_text.size(); b = e + 1) {  // the tile's lines, indented
        e = tile_text.find('\n', b);
        tiled += fmt::format("          {}\n", tile_text.substr(b, e - b));
    }
    if (!note.empty()) tiled += fmt::format("          {}\n", note);
    const std::string registers =
        pp.vector_registers > 0 && !tile.active()
            ? fmt::format(" (register estimate of 16-byte vectors: {} per thread, above {})",
                          pp.vector_registers, kVectorRegisterBudget)
            : std::string();
    const std::string gathers =
        pp.gathers_per_vector()
            ? std::string(" (gathers: positions once per vector, gathered rows read a vector at a time)")
            : std::string();
    return fmt::format("kernel {}  {}   {} {}:{}\n          reads {}; writes {}; {}{}; 1 launch\n{}", i,
                       k.name, tile.active() ? "pointwise, tiled" : "pointwise",
                       loom::to_string(k.outputs[0]->shape()), nodes,
                       reads.empty() ? std::string("nothing") : reads, fmt::join(writes, ", "),
                       tile.active() ? std::string("no vector variant")
                                     : fmt::format("vector width {}{}", pp.vector_width, gathers),
                       registers, tiled);
}

LaunchNeeds pointwise_needs(const PlannedPointwise& planned) {
    LaunchNeeds n;
    n.param_bytes = planned.plan.params.size;
    n.params_in_memory = planned.plan.params_in_memory && planned.binding.numel > 0;
    n.error_word = planned.plan.checks_indices();
    return n;
}

}  // namespace

KernelSource GpuFamily<PointwiseKernel>::emit(const FusedKernel& k, const PointwiseKernel& s) {
    return emit_pointwise(k.name, k.outputs, s.planned.plan);
}

std::string GpuFamily<PointwiseKernel>::plan_text(const PointwiseKernel& s) {
    return s.planned.plan.to_string();
}

std::string GpuFamily<PointwiseKernel>::explain(const FusionPlan& plan, std::size_t i,
                                                const PointwiseKernel& s) {
    return pointwise_text(plan, i, s.planned.plan, TilePlan{}, s.tile_note);
}

LaunchNeeds GpuFamily<PointwiseKernel>::needs(const PointwiseKernel& s, KernelPointers) {
    return pointwise_needs(s.planned);
}

BoundLaunch GpuFamily<PointwiseKernel>::bind(const PointwiseKernel& s, KernelPointers p, const LaunchScratch&,
                                             std::span<std::byte> params) {
    const PlannedPointwise& pw = s.planned;
    const Variant v = select_variant(pw.plan, pw.binding, p.inputs, p.outputs);
    BoundLaunch b;
    b.config = pw.plan.launch(pw.binding.numel, v);
    if (b.config.grid_x > 0) pack_params(pw.plan, pw.binding, p.inputs, p.outputs, params, p.error_word);
    return b;
}

KernelSource GpuFamily<TiledKernel>::emit(const FusedKernel& k, const TiledKernel& s) {
    return emit_tile(k.name, k.outputs, s.planned.plan, s.tile.plan);
}

std::string GpuFamily<TiledKernel>::plan_text(const TiledKernel& s) {
    return s.planned.plan.describe(false) + s.tile.plan.to_string(s.planned.plan);
}

std::string GpuFamily<TiledKernel>::explain(const FusionPlan& plan, std::size_t i, const TiledKernel& s) {
    return pointwise_text(plan, i, s.planned.plan, s.tile.plan, s.tile.note);
}

LaunchNeeds GpuFamily<TiledKernel>::needs(const TiledKernel& s, KernelPointers) {
    return pointwise_needs(s.planned);
}

BoundLaunch GpuFamily<TiledKernel>::bind(const TiledKernel& s, KernelPointers p, const LaunchScratch&,
                                         std::span<std::byte> params) {
    const PlannedPointwise& pw = s.planned;
    BoundLaunch b;
    b.config = s.tile.plan.launch(pw.binding);
    b.config.vector = s.tile.plan.select_variant(pw.plan, pw.binding, p.inputs, p.outputs) == Variant::Vector;
    if (b.config.grid_x > 0) pack_params(pw.plan, pw.binding, p.inputs, p.outputs, params, p.error_word);
    return b;
}

}  // namespace loom::codegen
