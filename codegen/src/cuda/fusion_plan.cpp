// plan_fusion: the partition of a graph and its GPU schedule, as one FusionPlan (fusion_plan.hpp); the
// explain text of a plan (LOOM_EXPLAIN=fusion, loom::explain()).
#include "loom/codegen/cuda/fusion_plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unordered_map>
#include <unordered_set>

#include "loom/codegen/plan/kernel_key.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/hash.hpp"

namespace loom::codegen {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

std::uint64_t reduce_key(const PlannedReduce& pr) {
    Hasher h;
    h.add(0x7265647563650001ull);
    h.add(pr.plan.hash());
    h.add(structural_key(pr.element_roots));
    if (!pr.row_roots.empty()) h.add(structural_key(pr.row_roots));
    return h.digest();
}

std::uint64_t with_options(std::uint64_t key, const Options& o) {
    Hasher h;
    h.add(key);
    h.add(o.hash());
    return h.digest();
}

std::uint64_t with_tile(std::uint64_t key, const TilePlan& t) {
    Hasher h;
    h.add(key);
    h.add(t.hash());
    return h.digest();
}

bool has_view(const std::vector<ir::NodePtr>& outputs) {
    for (const ir::Node* n : ir::topo_order(outputs))
        if (ir::is_view(n->op())) return true;
    return false;
}

// A root that is a strided view (an output of assign() into a column, a strided slice, a transposed view)
// is written element by element at its own index map by a pointwise kernel; a reduction kernel writes its
// outputs contiguous, so such a root goes through a temporary and a pointwise kernel that stores it.
void route_strided_roots(Partition& P, std::span<const Strides> root_strides) {
    if (root_strides.empty()) return;
    const std::size_t nk = P.kernels.size();
    for (std::size_t k = 0; k < nk; ++k) {
        if (P.kernels[k].family != Family::Reduction) continue;
        const std::vector<ir::NodePtr> outs = [&] {
            std::vector<ir::NodePtr> o = P.kernels[k].group.element_outputs;
            o.insert(o.end(), P.kernels[k].group.row_outputs.begin(), P.kernels[k].group.row_outputs.end());
            return o;
        }();
        for (std::size_t j = 0; j < P.kernels[k].writes.size(); ++j) {
            Slot& w = P.kernels[k].writes[j];
            if (w.kind != Slot::Kind::Root) continue;
            const ir::Node& v = *outs[j];
            const Strides& st = root_strides[static_cast<std::size_t>(w.index)];
            if (st.empty() || is_contiguous(v.shape(), st)) continue;
            const int t = static_cast<int>(P.temps.size());
            const std::string why =
                fmt::format("out{} is a strided view, which a reduction kernel does not write", w.index);
            P.temps.push_back(
                {outs[j],
                 ir::input(v.dtype(), v.shape(), fmt::format("t{} (out{})", t, w.index), {}, v.loc()), why});
            FusedKernel store;
            store.family = Family::Pointwise;
            store.name = P.kernels[k].name + "_store";
            store.outputs = {P.temps.back().placeholder};
            store.writes = {w};
            store.why = fmt::format("{}: written through t{}", why, t);
            w = Slot{Slot::Kind::Temp, t};  // before the push_back below, which may move the kernels
            P.kernels.push_back(std::move(store));
        }
    }
}

// Schedules every kernel of `P` for the GPU. Throws NotFusable from plan_reduce.
FusionPlan schedule(Partition P, std::span<const ir::Node* const> sources,
                    std::span<const InputLayout> layouts, const DeviceInfo& device, const Options& options,
                    std::span<const Strides> root_strides) {
    route_strided_roots(P, root_strides);
    FusionPlan plan;
    plan.options = options;
    plan.sources = sources.size();
    std::unordered_map<const ir::Node*, Slot> slot;
    for (std::size_t k = 0; k < sources.size(); ++k)
        slot.emplace(sources[k], Slot{Slot::Kind::Source, static_cast<int>(k)});
    std::unordered_map<const ir::Node*, InputLayout> temp_layout;
    for (std::size_t t = 0; t < P.temps.size(); ++t) {
        const ir::Node* ph = P.temps[t].placeholder.get();
        slot.emplace(ph, Slot{Slot::Kind::Temp, static_cast<int>(t)});
        temp_layout.emplace(ph, InputLayout{ph->dtype(), contiguous_strides(ph->shape()), true});
    }
    const LayoutOf layout_of = [&](const ir::Node& n) -> InputLayout {
        if (n.op() == ir::Op::Iota) {  // a virtual int64 tensor: stride 1 along its axis, 0 elsewhere
            Strides st(n.shape().size(), 0);
            st[static_cast<std::size_t>(n.ints().at(0))] = 1;
            return InputLayout{DType::Int64, st, true};
        }
        const auto it = slot.find(&n);
        if (it == slot.end())
            throw InternalError(
                fmt::format("plan_fusion(): input {} ({}) is neither a source nor a temporary",
                            ir::describe(n), short_location(n.loc())));
        if (it->second.kind == Slot::Kind::Temp) return temp_layout.at(&n);
        return layouts[static_cast<std::size_t>(it->second.index)];
    };
    auto slot_of = [&](const ir::Node* in) {
        if (in->op() == ir::Op::Iota) return Slot{Slot::Kind::Index, 0};
        (void)layout_of(*in);  // throws for an input that is neither
        return slot.at(in);
    };
    for (const FusedKernel& k : P.kernels) {
        GpuKernel g;
        if (k.family == Family::Pointwise) {
            std::vector<InputLayout> ls;
            for (const ir::Node* in : pointwise_inputs(k.outputs)) {
                ls.push_back(layout_of(*in));
                g.reads.push_back(slot_of(in));
            }
            std::vector<Strides> out_strides;
            bool strided = false;
            for (std::size_t j = 0; j < k.outputs.size(); ++j) {
                const Slot& w = k.writes[j];
                const bool given = w.kind == Slot::Kind::Root && !root_strides.empty() &&
                                   !root_strides[static_cast<std::size_t>(w.index)].empty();
                out_strides.push_back(given ? root_strides[static_cast<std::size_t>(w.index)]
                                            : contiguous_strides(k.outputs[j]->shape()));
                strided = strided || (given && !is_contiguous(k.outputs[j]->shape(), out_strides.back()));
            }
            g.pointwise = strided ? plan_pointwise(k.outputs, ls, device.plan_target(), PointwiseUse::Kernel,
                                                   out_strides)
                                  : plan_pointwise(k.outputs, ls, device.plan_target());
            g.numel = k.outputs[0]->numel();
            g.has_views = has_view(k.outputs);
            g.tile = plan_tile(k.outputs, g.pointwise, device, options.tile, options.stencil_reuse);
            g.key = with_options(kernel_key(k.outputs, g.pointwise.plan), options);
            if (g.tile.plan.active()) g.key = with_tile(g.key, g.tile.plan);
        } else if (k.family == Family::MatMul) {
            std::vector<Strides> out_strides;
            for (const Slot& w : k.writes) {
                const bool given = w.kind == Slot::Kind::Root && !root_strides.empty() &&
                                   !root_strides[static_cast<std::size_t>(w.index)].empty();
                out_strides.push_back(given ? root_strides[static_cast<std::size_t>(w.index)] : Strides{});
            }
            g.matmul = plan_matmul(k.outputs, layout_of, device, out_strides, options);
            for (const ir::Node* in : g.matmul.inputs)
                g.reads.push_back(in == g.matmul.accumulators.get() ? Slot{Slot::Kind::Index, 0}
                                                                    : slot_of(in));
            g.numel = g.matmul.product->numel();
            Hasher h;
            h.add(0x6d61746d756c0001ull);
            h.add(g.matmul.plan.hash());
            h.add(structural_key(k.outputs));
            g.key = with_options(h.digest(), options);
        } else {
            g.reduce = plan_reduce(k.group, layout_of, device.plan_target());
            for (const ir::Node* in : g.reduce.inputs) g.reads.push_back(slot_of(in));
            g.key = with_options(reduce_key(g.reduce), options);
        }
        plan.gpu.push_back(std::move(g));
    }
    for (const TempValue& t : P.temps) {
        plan.temps.push_back({t.value->shape(), t.value->dtype(), plan.temp_bytes});
        const std::size_t bytes = static_cast<std::size_t>(t.value->numel()) * itemsize(t.value->dtype());
        plan.temp_bytes +=
            (bytes + 255) / 256 * 256;  // every temporary 256-byte aligned (plans assume 16 bytes)
    }
    plan.partition = std::move(P);
    return plan;
}

std::string reduction_text(const FusionPlan& plan, std::size_t i) {
    const FusedKernel& k = plan.partition.kernels[i];
    const PlannedReduce& pr = plan.gpu[i].reduce;
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

std::string pointwise_text(const FusionPlan& plan, std::size_t i) {
    const FusedKernel& k = plan.partition.kernels[i];
    const PointwisePlan& pp = plan.gpu[i].pointwise.plan;
    std::string nodes;
    for (const ir::Node* n : ir::topo_order(k.outputs))
        if (ir::is_elementwise(n->op()) || ir::is_view(n->op()))
            nodes += fmt::format(" {} ({})", ir::op_name(n->op()), short_location(n->loc()));
    std::string reads;
    const auto ins = pointwise_inputs(k.outputs);
    for (std::size_t j = 0; j < ins.size(); ++j)
        reads +=
            fmt::format("{}{} {} [{}]", j ? ", " : "", ins[j]->label().empty() ? "input" : ins[j]->label(),
                        ir::describe(*ins[j]), to_string(plan.gpu[i].reads[j]));
    std::vector<std::string> writes;
    for (const Slot& w : k.writes) writes.push_back(to_string(w));
    const PlannedTile& tile = plan.gpu[i].tile;
    std::string tiled;
    const std::string tile_text = tile.plan.to_string(pp);
    for (std::size_t b = 0, e; b < tile_text.size(); b = e + 1) {  // the tile's lines, indented
        e = tile_text.find('\n', b);
        tiled += fmt::format("          {}\n", tile_text.substr(b, e - b));
    }
    if (!tile.note.empty()) tiled += fmt::format("          {}\n", tile.note);
    return fmt::format("kernel {}  {}   {} {}:{}\n          reads {}; writes {}; {}{}; 1 launch\n{}", i,
                       k.name, tile.plan.active() ? "pointwise, tiled" : "pointwise",
                       loom::to_string(k.outputs[0]->shape()), nodes,
                       reads.empty() ? std::string("nothing") : reads, fmt::join(writes, ", "),
                       tile.plan.active() ? std::string("no vector variant")
                                          : fmt::format("vector width {}", pp.vector_width),
                       pp.vector_registers > 0 && !tile.plan.active()
                           ? fmt::format(" (register estimate of 16-byte vectors: {} per thread, above {})",
                                         pp.vector_registers, kVectorRegisterBudget)
                           : std::string(),
                       tiled);
}

std::string matmul_text(const FusionPlan& plan, std::size_t i) {
    const FusedKernel& k = plan.partition.kernels[i];
    const PlannedMatmul& pm = plan.gpu[i].matmul;
    const MatmulPlan& p = pm.plan;
    const ir::Node& m = *pm.product;
    std::string epilogue;
    for (const ir::Node* n : ir::topo_order(k.outputs))
        if (ir::is_elementwise(n->op())) epilogue += fmt::format(" {}", where_of(*n));
    std::string reads;
    for (std::size_t j = 0; j < pm.inputs.size(); ++j) {
        if (pm.inputs[j] == pm.accumulators.get()) continue;
        reads += fmt::format("{}{} {} [{}]", reads.empty() ? "" : ", ",
                             pm.inputs[j]->label().empty() ? "input" : pm.inputs[j]->label(),
                             ir::describe(*pm.inputs[j]), to_string(plan.gpu[i].reads[j]));
    }
    std::vector<std::string> writes;
    for (const Slot& w : k.writes) writes.push_back(to_string(w));
    const bool vector_b = p.vector_b || p.vector_b_column;
    std::string path;
    if (p.wgmma)
        path = fmt::format(
            "{} and a producer warpgroup), {} bytes of shared memory, tensor cores (Hopper wgmma.mma_async "
            "m64n{}k16, "
            "within the bound of semantics.md section 12; a persistent grid of {} blocks)",
            p.pingpong
                ? std::string("2 consumer warpgroups taking whole tiles in turn")
                : fmt::format("{} consumer warpgroup{} of 64 rows", p.consumers, p.consumers > 1 ? "s" : ""),
            p.shared_bytes(), p.tile_n, pm.binding.persistent_blocks);
    else if (p.tensor_cores)
        path = fmt::format(
            "{}x{} MMA tiles of 16x8 per warp), {} bytes of shared memory, tensor cores (mma.sync "
            "m16n8k{}{}{})",
            p.frags_m(), p.frags_n(), p.shared_bytes(), p.mma_k(),
            p.in == DType::Int8                       ? ", exact"
            : p.precision() == ProductPrecision::TF32 ? " TF32 into float32, product_precision=tf32: within "
                                                        "the TF32 bound of semantics.md section 12"
            : p.precision() == ProductPrecision::TF32x3 ? " TF32 into float32, product_precision=3xtf32: "
                                                          "within the 3xTF32 bound of semantics.md section 12"
                                                        : ", within the bound of semantics.md section 12",
            p.wgmma_note.empty() ? std::string() : "; not wgmma: " + p.wgmma_note);
    else
        path = fmt::format("{}x{} accumulators per thread), {} bytes of shared memory, CUDA cores{}",
                           p.thread_m, p.thread_n, p.shared_bytes(), p.path_note());
    return fmt::format(
        "kernel {}  {}   matmul {} x {} -> {}: {}\n"
        "          tile {}x{}x{}{}, {} stages, {} threads (warps {}x{}, {}; {}; K {} in {}{}\n"
        "          epilogue:{}\n"
        "          reads {}; writes {}; 1 launch\n",
        i, k.name, ir::describe(*m.operand(0)), ir::describe(*m.operand(1)), ir::describe(m), where_of(m),
        p.tile_m, p.tile_n, p.tile_k, p.hinted ? " (hinted)" : "", p.stages, p.threads(), p.warps_m,
        p.warps_n, path,
        p.wgmma ? fmt::format("bulk tensor copies of A ({}) and B ({}) into a ring, 128-byte swizzled",
                              p.a_mn_major ? "M-major" : "K-major", p.b_mn_major ? "N-major" : "K-major")
        : p.vector_a && vector_b ? "cp.async 16-byte pieces where the pointers allow, element loads else"
        : p.vector_a             ? "A in cp.async 16-byte pieces where the pointers allow, B by element loads"
        : vector_b               ? "A by element loads, B in cp.async 16-byte pieces where the pointers allow"
                                 : "element loads",
        pm.binding.K,
        p.tensor_cores ? std::string("one pass") : fmt::format("{} chunk(s)", pm.binding.chunks),
        p.split_k
            ? fmt::format(" (shared among {} blocks per tile along the grid's z, {} chunk(s) each: split K; "
                          "the pairwise tree through a workspace)",
                          pm.binding.k_groups, pm.binding.group_chunks)
        : p.chunked ? std::string(" (pairwise tree through a workspace)")
        : p.batch_pipelined
            ? fmt::format(", one step; each block walking batch entries, the next one's tiles copying, "
                          "{} blocks per multiprocessor",
                          p.blocks_per_sm)
            : std::string(),
        epilogue.empty() ? std::string(" none (the product stored as it is)") : epilogue, reads,
        fmt::join(writes, ", "));
}

}  // namespace

bool GpuKernel::operator==(const GpuKernel& o) const {
    return pointwise.plan == o.pointwise.plan && tile.plan == o.tile.plan && reduce.plan == o.reduce.plan &&
           matmul.plan == o.matmul.plan && reads == o.reads && numel == o.numel && has_views == o.has_views &&
           key == o.key;
}

std::uint64_t FusionPlan::hash() const {
    Hasher h;
    h.add(partition.hash());
    h.add(options.hash());
    for (const GpuKernel& g : gpu) h.add(g.key);
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
        text += k.family == Family::Reduction ? reduction_text(*this, i)
                : k.family == Family::MatMul  ? matmul_text(*this, i)
                                              : pointwise_text(*this, i);
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
    // On Hopper, tensor cores asked for: half-precision products take wgmma, whose operands come from memory.
    const bool from_memory = device.cc_major == 9 && options.product_path == ProductPath::TensorCores;
    FusionPlan plan = schedule_partition(
        roots, options, name, cost, "plan_fusion",
        [&](Partition p) { return schedule(std::move(p), sources, layouts, device, options, root_strides); },
        from_memory);
    plan.reads = sources_read(roots, sources);
    return plan;
}

}  // namespace loom::codegen
