// plan_fusion: the partition of a graph and its GPU schedule, as one FusionPlan (fusion_plan.hpp), through
// the schedule both back ends share (plan/schedule.hpp); the explain text of a plan, each kernel's from its
// family object (kernel_family.hpp).
#include "loom/codegen/cuda/fusion_plan.hpp"

#include <fmt/format.h>

#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/codegen/plan/kernel_key.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/hash.hpp"

namespace loom::codegen {

namespace {

std::uint64_t with(std::uint64_t key, std::uint64_t more) {
    Hasher h;
    h.add(key);
    h.add(more);
    return h.digest();
}

bool has_view(const std::vector<ir::NodePtr>& outputs) {
    for (const ir::Node* n : ir::topo_order(outputs))
        if (ir::is_view(n->op())) return true;
    return false;
}

// What one kernel of a plan_fusion call is scheduled for.
struct GpuTarget {
    const DeviceInfo& device;
    const Options& options;
};

// A pointwise kernel of the partition: tiled when plan_tile finds a transpose or a stencil in the layouts.
GpuKernel schedule_pointwise(const FusedKernel& k, const ScheduleInputs& in, const GpuTarget& t) {
    GpuKernel g;
    std::vector<InputLayout> ls;
    for (const ir::Node* input : pointwise_inputs(k.outputs)) {
        ls.push_back(in.layout(*input));
        g.reads.push_back(in.slot(input));
    }
    bool strided = false;
    const std::vector<Strides> out_strides = in.output_strides(k, &strided);
    const PlanTarget target = t.device.plan_target();
    PlannedPointwise planned = strided
                                   ? plan_pointwise(k.outputs, ls, target, PointwiseUse::Kernel, out_strides)
                                   : plan_pointwise(k.outputs, ls, target);
    PlannedTile tile = plan_tile(k.outputs, planned, t.device, t.options.tile, t.options.stencil_reuse);
    g.key = with(kernel_key(k.outputs, planned.plan), t.options.hash());
    if (tile.plan.active()) {
        g.key = with(g.key, tile.plan.hash());
        g.schedule = TiledKernel{std::move(planned), std::move(tile), has_view(k.outputs)};
    } else {
        g.schedule = PointwiseKernel{std::move(planned), has_view(k.outputs), std::move(tile.note)};
    }
    return g;
}

GpuKernel schedule_reduction(const FusedKernel& k, const ScheduleInputs& in, const GpuTarget& t) {
    GpuKernel g;
    PlannedReduce pr = plan_reduce(k.group, in.layout_of(), t.device.plan_target());
    for (const ir::Node* input : pr.inputs) g.reads.push_back(in.slot(input));
    Hasher h;
    h.add(0x7265647563650001ull);
    h.add(pr.plan.hash());
    h.add(structural_key(pr.element_roots));
    if (!pr.row_roots.empty()) h.add(structural_key(pr.row_roots));
    g.key = with(h.digest(), t.options.hash());
    g.schedule = std::move(pr);
    return g;
}

GpuKernel schedule_matmul(const FusedKernel& k, const ScheduleInputs& in, const GpuTarget& t) {
    GpuKernel g;
    std::vector<Strides> out_strides;
    for (std::size_t j = 0; j < k.writes.size(); ++j) {
        const Strides* st = in.strided_root(k.writes[j], k.outputs[j]->shape());
        out_strides.push_back(st ? *st : Strides{});
    }
    PlannedMatmul pm = plan_matmul(k.outputs, in.layout_of(), t.device, out_strides, t.options);
    for (const ir::Node* input : pm.inputs)
        g.reads.push_back(input == pm.accumulators.get() ? Slot{Slot::Kind::Index, 0} : in.slot(input));
    Hasher h;
    h.add(0x6d61746d756c0001ull);
    h.add(pm.plan.hash());
    h.add(structural_key(k.outputs));
    g.key = with(h.digest(), t.options.hash());
    g.schedule = std::move(pm);
    return g;
}

GpuKernel schedule_attention(const FusedKernel& k, const ScheduleInputs& in, const GpuTarget& t) {
    GpuKernel g;
    const Strides* st = k.writes.size() == 1 ? in.strided_root(k.writes[0], k.outputs[0]->shape()) : nullptr;
    PlannedAttention pa = plan_attention(k, in.layout_of(), t.device, st ? *st : Strides{}, t.options);
    for (const ir::Node* input : pa.inputs) g.reads.push_back(in.slot(input));
    Hasher h;
    h.add(0x617474656e740002ull);
    h.add(pa.plan.hash());
    g.key = with(h.digest(), t.options.hash());
    g.schedule = std::move(pa);
    return g;
}

GpuKernel schedule_scan(const FusedKernel& k, const ScheduleInputs& in, const GpuTarget& t) {
    GpuKernel g;
    PlannedScan ps = plan_scan(k, in.layout_of(), t.device);
    for (const ir::Node* input : ps.inputs)
        g.reads.push_back(input == ps.accumulators.get() || input == ps.reduced.get()
                              ? Slot{Slot::Kind::Index, 0}
                              : in.slot(input));
    Hasher h;
    h.add(0x7363616e00000002ull);
    h.add(ps.plan.hash());
    if (ps.plan.prologue || ps.plan.epilogue || ps.plan.row_reduction) h.add(structural_key(k.outputs));
    g.key = with(h.digest(), t.options.hash());
    g.schedule = std::move(ps);
    return g;
}

GpuKernel schedule_scatter(const FusedKernel& k, const ScheduleInputs& in, const GpuTarget& t) {
    GpuKernel g;
    PlannedScatter ps = plan_scatter(k, in.layout_of());
    for (const ir::Node* input : ps.inputs) g.reads.push_back(in.slot(input));
    Hasher h;
    h.add(0x7363617474657202ull);
    h.add(ps.plan.hash());
    g.key = with(h.digest(), t.options.hash());
    g.schedule = std::move(ps);
    return g;
}

// One kernel of the partition for the GPU. Throws NotFusable from plan_reduce.
GpuKernel schedule_kernel(const FusedKernel& k, const ScheduleInputs& in, const GpuTarget& t) {
    switch (k.family) {
        case Family::Pointwise:
            return schedule_pointwise(k, in, t);
        case Family::Tiled:
            break;
        case Family::Reduction:
            return schedule_reduction(k, in, t);
        case Family::MatMul:
            return schedule_matmul(k, in, t);
        case Family::Attention:
            return schedule_attention(k, in, t);
        case Family::Scan:
            return schedule_scan(k, in, t);
        case Family::Scatter:
            return schedule_scatter(k, in, t);
    }
    throw InternalError(
        fmt::format("plan_fusion(): kernel {} of the partition is of family {}, which only "
                    "the GPU schedule chooses",
                    k.name, family_name(k.family)));
}

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

}  // namespace

bool GpuKernel::operator==(const GpuKernel& o) const {
    if (schedule.index() != o.schedule.index() || reads != o.reads || key != o.key) return false;
    return std::visit(
        [&](const auto& s) {
            const auto& other = std::get<std::decay_t<decltype(s)>>(o.schedule);
            using S = std::decay_t<decltype(s)>;
            if constexpr (std::is_same_v<S, PointwiseKernel>) {
                return s.planned.plan == other.planned.plan && s.has_views == other.has_views;
            } else if constexpr (std::is_same_v<S, TiledKernel>) {
                return s.planned.plan == other.planned.plan && s.tile.plan == other.tile.plan &&
                       s.has_views == other.has_views;
            } else {
                return s.plan == other.plan;
            }
        },
        schedule);
}

void GpuKernel::throw_wrong_family(Family f) {
    throw InternalError(fmt::format("GpuKernel::as(): the kernel is of family {}", family_name(f)));
}

bool GpuKernel::params_in_memory() const {
    if (const auto* p = std::get_if<PointwiseKernel>(&schedule)) return p->planned.plan.params_in_memory;
    if (const auto* t = std::get_if<TiledKernel>(&schedule)) return t->planned.plan.params_in_memory;
    return false;
}

bool reads_in_place(const FusionPlan& plan, std::size_t k, int s, std::size_t r) {
    const GpuKernel& g = plan.kernels[k];
    const auto* pw = std::get_if<PointwiseKernel>(&g.schedule);
    if (!pw) return false;
    if (!pw->has_views) return true;
    const PointwisePlan& pp = pw->planned.plan;
    for (const OperandPlan& o : pp.loads) {
        if (o.input < 0 || static_cast<std::size_t>(o.input) >= g.reads.size()) return false;
        const Slot& in = g.reads[static_cast<std::size_t>(o.input)];
        if (in.kind == Slot::Kind::Source && in.index == s && o.access != Access::Contiguous) return false;
    }
    const auto& writes = plan.partition.kernels[k].writes;
    for (std::size_t o = 0; o < writes.size() && o < pp.outputs.size(); ++o)
        if (writes[o].kind == Slot::Kind::Root && static_cast<std::size_t>(writes[o].index) == r &&
            pp.outputs[o].access != Access::Contiguous)
            return false;
    return true;
}

std::uint64_t FusionPlan::hash() const {
    Hasher h;
    h.add(partition.hash());
    h.add(options.hash());
    for (const GpuKernel& g : kernels) h.add(g.key);
    h.add(temp_bytes);
    h.add(sources);
    for (int r : reads) h.add(static_cast<std::uint64_t>(r));
    return h.digest();
}

std::string FusionPlan::to_string() const {
    std::string text;
    if (!partition.note.empty()) text += fmt::format("plan     {}\n", partition.note);
    // Reduction kernels, the temporaries, then pointwise kernels (the launch order).
    bool temps_printed = false;
    auto print_temps = [&] {
        if (temps_printed) return;
        temps_printed = true;
        for (std::size_t t = 0; t < partition.temps.size(); ++t)
            text += fmt::format("materialize t{} = {} {}: {}\n", t, where_of(*partition.temps[t].value),
                                loom::to_string(partition.temps[t].value->shape()), partition.temps[t].why);
    };
    for (std::size_t i = 0; i < partition.kernels.size(); ++i) {
        const FusedKernel& k = partition.kernels[i];
        if (k.family == Family::Pointwise && partition.note.rfind("fusion off", 0) != 0) print_temps();
        text += std::visit(
            [&](const auto& s) { return GpuFamily<std::decay_t<decltype(s)>>::explain(*this, i, s); },
            kernels[i].schedule);
        if (!k.why.empty()) text += fmt::format("boundary  kernel {}: {}\n", i, k.why);
    }
    print_temps();
    return text;
}

FusionPlan plan_fusion(const std::vector<ir::NodePtr>& roots, std::span<const ir::Node* const> sources,
                       std::span<const InputLayout> layouts, const DeviceInfo& device, const Options& options,
                       std::string_view name, const FusionCostModel* cost,
                       std::span<const Strides> root_strides) {
    if (!root_strides.empty() && root_strides.size() != roots.size())
        throw InternalError(
            fmt::format("plan_fusion(): {} root layouts for {} roots", root_strides.size(), roots.size()));
    if (sources.size() != layouts.size())
        throw InternalError(
            fmt::format("plan_fusion(): {} sources with {} layouts", sources.size(), layouts.size()));
    ScheduleRequest r;
    r.api = "plan_fusion";
    r.roots = &roots;
    r.sources = sources;
    r.layouts = layouts;
    r.options = options;
    r.name = name;
    r.cost = cost;
    r.root_strides = root_strides;
    r.view_writers = family_bit(Family::Pointwise) | family_bit(Family::Tiled) | family_bit(Family::MatMul) |
                     family_bit(Family::Attention);
    // On Hopper, tensor cores asked for: half-precision products take wgmma, whose operands come from memory.
    r.half_operands_from_memory = device.cc_major == 9 && options.product_path == ProductPath::TensorCores;
    const GpuTarget target{device, options};
    return schedule_plan<FusionPlan>(
        r, [&](const FusedKernel& k, const ScheduleInputs& in) { return schedule_kernel(k, in, target); });
}

}  // namespace loom::codegen
