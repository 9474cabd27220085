// The GPU path of graphs with reductions: partition into reduction kernels (prologue, stages, element and
// row outputs fused) and pointwise kernels, materialize what crosses kernels, plan, build, launch.
//
// Three phases, each a function of gpu_internal.hpp: plan_reductions() partitions and plans for the layouts
// of the graph's inputs (the "sources") and returns plain data, the kernels in launch order with the slot
// (source, temporary or root) of each input and output; build_reduction_kernels() fetches or builds the
// kernels; launch_reductions() binds the addresses of one call and launches. An evaluation runs all three
// per call; a traced function (program.cpp) plans and builds once and only launches per call.
//
// Partition (fused): reductions in topological order join the group of the reductions their operand reads
// when those share the operand shape and the axes (a later stage: layernorm's variance after its mean), or
// the last group of the same shape and axes when the operand reads no reduction (`sum` and `max` of one
// input); otherwise they start a group and what they read is materialized. A root whose reduced values all
// come from one group is written by that group: as a row output when it has one element per row, as an
// element output when it has the operand's shape. Anything else is a pointwise kernel over materialized
// reduced values. When the planner cannot make a group one kernel (a reduced value read at another row, a
// multi-stage group with too few rows to fill the device) the whole graph is partitioned again "strictly":
// every reduction its own kernel, everything else pointwise. Both give the same bits: every kernel follows
// the one reduction order, and an elementwise op computes the same value wherever it runs.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "gpu_internal.hpp"
#include "loom/codegen/kernel_key.hpp"
#include "loom/codegen/reduce_plan.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/env.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/hash.hpp"
#include "loom/runtime/capture.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/dump.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/pinned.hpp"
#include "loom/runtime/stream.hpp"

namespace loom::gpu {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Where a computed value goes: a root of the evaluation or a materialized temporary.
struct Dest {
    int root = -1;
    int temp = -1;
};

struct RGroup {
    std::vector<ir::NodePtr> members;
    std::vector<std::pair<ir::NodePtr, Dest>> el_out, row_out;
    std::string why;  // why this group starts a new kernel (explain)
};

struct PwStep {
    std::vector<ir::NodePtr> outputs;
    std::vector<Dest> dests;
};

struct Partition {
    bool strict = false;
    std::string strict_reason;
    std::vector<RGroup> groups;
    std::vector<PwStep> pw;
    std::vector<ir::NodePtr> temps;  // materialized nodes
    std::vector<std::string> temp_reason;
    std::unordered_map<const ir::Node*, int> temp_of;
};

bool same_key(const ir::Node& a, const ir::Node& b) {
    return a.operand(0)->shape() == b.operand(0)->shape() && a.ints() == b.ints();
}

// Reductions reachable from `from` without passing through another reduction (`from` itself when it is one).
std::vector<ir::NodePtr> frontier(const ir::NodePtr& from) {
    std::vector<ir::NodePtr> out;
    std::unordered_set<const ir::Node*> seen;
    std::vector<ir::NodePtr> stack{from};
    while (!stack.empty()) {
        ir::NodePtr n = std::move(stack.back());
        stack.pop_back();
        if (!seen.insert(n.get()).second) continue;
        if (ir::is_reduction(n->op())) {
            out.push_back(n);
            continue;
        }
        for (const auto& op : n->operands()) stack.push_back(op);
    }
    return out;
}

std::string where_of(const ir::Node& n) { return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc())); }

Partition partition_graph(const std::vector<ir::NodePtr>& roots, bool strict) {
    Partition P;
    P.strict = strict;
    std::unordered_map<const ir::Node*, int> group_of;
    auto materialize = [&](const ir::NodePtr& r, const std::string& why) {
        if (P.temp_of.count(r.get())) return;
        P.temp_of.emplace(r.get(), static_cast<int>(P.temps.size()));
        P.temps.push_back(r);
        P.temp_reason.push_back(why);
        P.groups[static_cast<std::size_t>(group_of.at(r.get()))].row_out.push_back({r, Dest{-1, P.temp_of.at(r.get())}});
    };
    // Reductions, operands first (topological order; the owning pointers come from the users' operand lists).
    std::vector<ir::NodePtr> reductions;
    {
        const std::vector<const ir::Node*> order = ir::topo_order(roots);
        std::unordered_map<const ir::Node*, ir::NodePtr> owner;
        for (const auto& r : roots) owner.emplace(r.get(), r);
        for (const ir::Node* n : order)
            for (const auto& o : n->operands()) owner.emplace(o.get(), o);
        for (const ir::Node* n : order)
            if (ir::is_reduction(n->op())) reductions.push_back(owner.at(n));
    }
    for (const auto& r : reductions) {
        const auto deps = frontier(r->operands()[0]);
        int g = -1;
        std::string why;
        if (!strict) {
            if (!deps.empty()) {
                const int cand = group_of.at(deps[0].get());
                bool ok = same_key(*P.groups[static_cast<std::size_t>(cand)].members[0], *r);
                for (const auto& d : deps) ok = ok && group_of.at(d.get()) == cand;
                if (ok) g = cand;
                else why = fmt::format("its operand reads reduced values of another kernel");
            } else {
                for (std::size_t k = P.groups.size(); k-- > 0;)
                    if (same_key(*P.groups[k].members[0], *r)) {
                        g = static_cast<int>(k);
                        break;
                    }
                if (g < 0) why = "first reduction of its operand shape and axes";
            }
        } else {
            why = "one kernel per reduction (" + P.strict_reason + ")";
        }
        if (g < 0) {
            g = static_cast<int>(P.groups.size());
            P.groups.emplace_back();
            P.groups.back().why = why;
        }
        P.groups[static_cast<std::size_t>(g)].members.push_back(r);
        group_of.emplace(r.get(), g);
        for (const auto& d : deps)
            if (group_of.at(d.get()) != g)
                materialize(d, fmt::format("read by {} in another kernel", where_of(*r)));
    }
    if (strict)
        for (const auto& r : reductions) materialize(r, "its own kernel");
    // Roots.
    std::vector<std::pair<ir::NodePtr, int>> pointwise_roots;
    for (std::size_t i = 0; i < roots.size(); ++i) {
        const ir::NodePtr& root = roots[i];
        const auto deps = frontier(root);
        if (deps.empty()) {
            pointwise_roots.push_back({root, static_cast<int>(i)});
            continue;
        }
        const int g = group_of.at(deps[0].get());
        bool one = true;
        for (const auto& d : deps) one = one && group_of.at(d.get()) == g;
        RGroup& G = P.groups[static_cast<std::size_t>(g)];
        const ir::Node& m0 = *G.members[0];
        const std::int64_t O = m0.numel();
        const bool root_is_member = ir::is_reduction(root->op());
        if (one && (root_is_member || !strict) && root->numel() == O) {
            G.row_out.push_back({root, Dest{static_cast<int>(i), -1}});
        } else if (one && !strict && root->shape() == m0.operand(0)->shape()) {
            G.el_out.push_back({root, Dest{static_cast<int>(i), -1}});
        } else {
            for (const auto& d : deps)
                materialize(d, fmt::format("read by the result {} ({}) of another iteration space",
                                           to_string(root->shape()), short_location(root->loc())));
            pointwise_roots.push_back({root, static_cast<int>(i)});
        }
    }
    for (const auto& [root, i] : pointwise_roots) {
        PwStep* step = nullptr;
        for (auto& s : P.pw)
            if (s.outputs[0]->shape() == root->shape()) step = &s;
        if (!step) {
            P.pw.emplace_back();
            step = &P.pw.back();
        }
        step->outputs.push_back(root);
        step->dests.push_back(Dest{i, -1});
    }
    return P;
}

// The graphs of the kernels with materialized values replaced by inputs standing for their temporaries
// (no tensor bound: a plan holds layouts, never memory).
struct Bound {
    std::vector<codegen::ReduceGroupSpec> specs;
    std::vector<std::vector<ir::NodePtr>> pw_outputs;
    std::vector<ir::NodePtr> temp_inputs;  // per temporary
};

Bound bind_temps(const Partition& P) {
    Bound B;
    for (std::size_t t = 0; t < P.temps.size(); ++t) {
        const ir::NodePtr& n = P.temps[t];
        B.temp_inputs.push_back(ir::input(n->dtype(), n->shape(), fmt::format("t{} ({})", t, ir::op_name(n->op())), {}, n->loc()));
    }
    auto subst_except = [&](const std::unordered_set<const ir::Node*>& keep) -> ir::Rewriter {
        return [&, keep](const ir::Node& n, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
            if (keep.count(&n)) return nullptr;
            const auto it = P.temp_of.find(&n);
            return it == P.temp_of.end() ? nullptr : B.temp_inputs[static_cast<std::size_t>(it->second)];
        };
    };
    for (const RGroup& G : P.groups) {
        std::unordered_set<const ir::Node*> keep;
        for (const auto& m : G.members) keep.insert(m.get());
        std::vector<ir::NodePtr> all = G.members;
        for (const auto& [n, d] : G.el_out) all.push_back(n);
        for (const auto& [n, d] : G.row_out) all.push_back(n);
        const auto sub = ir::rewrite(all, subst_except(keep));
        codegen::ReduceGroupSpec spec;
        std::size_t k = 0;
        for (; k < G.members.size(); ++k) spec.reductions.push_back(sub[k]);
        for (std::size_t e = 0; e < G.el_out.size(); ++e) spec.element_outputs.push_back(sub[k++]);
        for (std::size_t e = 0; e < G.row_out.size(); ++e) spec.row_outputs.push_back(sub[k++]);
        B.specs.push_back(std::move(spec));
    }
    for (const PwStep& s : P.pw) B.pw_outputs.push_back(ir::rewrite(s.outputs, subst_except({})));
    return B;
}

std::string reduce_name(const codegen::ReduceGroupSpec& spec, std::string_view user, std::size_t index, std::size_t count) {
    std::string base;
    if (!user.empty()) {
        base = std::string(user);
    } else {
        std::vector<std::string> names;
        for (const auto& r : spec.reductions) {
            std::string nm(ir::op_name(r->op()));
            if (std::find(names.begin(), names.end(), nm) == names.end()) names.push_back(nm);
        }
        for (const auto& nm : names) base += (base.empty() ? "" : "_") + nm;
        if (!spec.element_outputs.empty()) base += "_norm";
    }
    return count > 1 ? fmt::format("{}_{}", base, index) : base;
}

std::uint64_t reduce_key(const codegen::PlannedReduce& pr) {
    Hasher h;
    h.add(0x7265647563650001ull);
    h.add(pr.plan.hash());
    h.add(codegen::structural_key(pr.element_roots));
    if (!pr.row_roots.empty()) h.add(codegen::structural_key(pr.row_roots));
    return h.digest();
}

CompiledKernel build_reduce(const std::string& name, const codegen::PlannedReduce& pr, const codegen::DeviceInfo& info) {
    const auto t0 = Clock::now();
    codegen::KernelSource source = codegen::emit_reduce(name, pr);
    const double codegen_ms = ms_since(t0);
    if (env_list_contains("LOOM_DUMP", "plans")) dump::write(source.name + ".plan.txt", pr.plan.to_string());
    return load_kernel(std::move(source), codegen_ms, info);
}

// Every kernel of a partition, planned.
struct Planned {
    Partition P;
    Bound B;
    std::vector<codegen::PlannedReduce> reduce;
    std::vector<std::string> reduce_names;
    std::vector<KernelGroup> pw_groups;
    std::vector<codegen::PlannedPointwise> pw_plans;
};

// `source_layout` gives the layout of each Input of the graph; temporaries are contiguous and 16-byte aligned.
Planned plan_all(const std::vector<ir::NodePtr>& roots, const codegen::LayoutOf& source_layout, std::string_view name,
                 const codegen::DeviceInfo& info) {
    auto attempt = [&](bool strict, const std::string& reason) {
        Planned pl;
        pl.P = partition_graph(roots, strict);
        pl.P.strict_reason = reason;
        pl.B = bind_temps(pl.P);
        std::unordered_map<const ir::Node*, codegen::InputLayout> temp_layout;
        for (const auto& t : pl.B.temp_inputs) temp_layout.emplace(t.get(), codegen::InputLayout{t->dtype(), contiguous_strides(t->shape()), true});
        const codegen::LayoutOf layout = [&](const ir::Node& n) {
            const auto it = temp_layout.find(&n);
            return it != temp_layout.end() ? it->second : source_layout(n);
        };
        const std::size_t nk = pl.B.specs.size() + pl.B.pw_outputs.size();
        for (std::size_t g = 0; g < pl.B.specs.size(); ++g) {
            pl.reduce.push_back(codegen::plan_reduce(pl.B.specs[g], layout, info));
            pl.reduce_names.push_back(reduce_name(pl.B.specs[g], name, g, nk));
        }
        for (std::size_t s = 0; s < pl.B.pw_outputs.size(); ++s) {
            KernelGroup kg;
            kg.outputs = pl.B.pw_outputs[s];
            for (const Dest& d : pl.P.pw[s].dests) kg.root_index.push_back(static_cast<std::size_t>(d.root));
            std::string base = name.empty() ? std::string("pointwise") : std::string(name);
            kg.name = nk > 1 ? fmt::format("{}_{}", base, pl.B.specs.size() + s) : base;
            std::vector<codegen::InputLayout> layouts;
            for (const ir::Node* in : codegen::pointwise_inputs(kg.outputs)) layouts.push_back(layout(*in));
            pl.pw_plans.push_back(codegen::plan_pointwise(kg.outputs, layouts, info));
            pl.pw_groups.push_back(std::move(kg));
        }
        return pl;
    };
    try {
        return attempt(false, {});
    } catch (const codegen::NotFusable& e) {
        return attempt(true, e.what());
    }
}

// The layout of each source, looked up by node.
codegen::LayoutOf source_layouts(std::span<const ir::Node* const> sources, std::span<const codegen::InputLayout> layouts) {
    auto index = std::make_shared<std::unordered_map<const ir::Node*, std::size_t>>();
    for (std::size_t k = 0; k < sources.size(); ++k) index->emplace(sources[k], k);
    return [index, layouts](const ir::Node& n) {
        const auto it = index->find(&n);
        if (it == index->end())
            throw InternalError(fmt::format("plan_reductions(): input {} ({}) is not among the sources", ir::describe(n),
                                            short_location(n.loc())));
        return layouts[it->second];
    };
}

std::string explain_text(const Planned& pl) {
    std::string text;
    if (pl.P.strict) text += fmt::format("plan     one kernel per reduction: {}\n", pl.P.strict_reason);
    for (std::size_t g = 0; g < pl.reduce.size(); ++g) {
        const codegen::ReducePlan& rp = pl.reduce[g].plan;
        const codegen::ReduceGroupSpec& spec = pl.B.specs[g];
        std::string red;
        for (std::size_t k = 0; k < spec.reductions.size(); ++k)
            red += fmt::format(" {} stage {}", where_of(*pl.P.groups[g].members[k]), rp.ops[k].stage);
        text += fmt::format("kernel {}  {}   reduction of {} over axes [{}]:{}\n", g, pl.reduce_names[g],
                            to_string(spec.reductions[0]->operand(0)->shape()),
                            fmt::format("{}", fmt::join(spec.reductions[0]->ints(), ", ")), red);
        text += fmt::format("          schedule {}, {} threads per block, {}{}{}; {} element output(s), {} row output(s); "
                            "one launch\n",
                            codegen::schedule_name(rp.schedule), rp.block,
                            rp.schedule == codegen::ReduceSchedule::Inner ? fmt::format("{} threads per row", rp.group)
                                                                          : std::string("a thread per 1 or 4 outputs"),
                            rp.cached_blocks > 0 ? ", rows held in registers" : "",
                            !rp.split ? std::string()
                            : rp.schedule == codegen::ReduceSchedule::Inner
                                ? fmt::format(", split over {} blocks per row (balanced chunk ranges in full waves; groups of {} "
                                              "chunk partials finished by the block that completes them, then the row)",
                                              pl.reduce[g].binding.blocks_per_row, codegen::kSplitGroup)
                                : fmt::format(", split over {} blocks per row (the last one finishes it)",
                                              pl.reduce[g].binding.blocks_per_row),
                            rp.element_outputs, spec.row_outputs.size());
        text += fmt::format("boundary  kernel {}: {}\n", g, pl.P.groups[g].why);
    }
    for (std::size_t t = 0; t < pl.P.temps.size(); ++t)
        text += fmt::format("materialize t{} = {} {}: {}\n", t, where_of(*pl.P.temps[t]), to_string(pl.P.temps[t]->shape()),
                            pl.P.temp_reason[t]);
    for (std::size_t s = 0; s < pl.pw_groups.size(); ++s) {
        const KernelGroup& kg = pl.pw_groups[s];
        std::string nodes;
        for (const ir::Node* n : ir::topo_order(kg.outputs))
            if (ir::is_elementwise(n->op())) nodes += fmt::format(" {} ({})", ir::op_name(n->op()), short_location(n->loc()));
        text += fmt::format("kernel {}  {}   pointwise {}:{}; vector width {}\n", pl.reduce.size() + s, kg.name,
                            to_string(kg.outputs[0]->shape()), nodes, pl.pw_plans[s].plan.vector_width);
        text += fmt::format("boundary  kernel {}: results of shape {} read reduced values of other kernels or have their own "
                            "iteration space\n",
                            pl.reduce.size() + s, to_string(kg.outputs[0]->shape()));
    }
    return text;
}

// Split counters that stay zero between launches: the block that completes a counter resets it, so a
// buffer zeroed once serves every later split launch on the same stream (launches on one stream run one
// after another; each stream has its own buffer, so kernels on two streams never share counters). This
// saves a cudaMemsetAsync before every split launch (about 1.5% of R3's time on the H200). Returns null
// inside stream capture (nothing may be allocated then; the caller zeroes pool memory instead, which the
// graph records) and for launches needing more counters than the buffer holds (inner splits need
// rows x (groups of 256 chunks + 1); past 4096, rows of tens of millions of elements, a memset is cheap
// against the reads).
constexpr std::uint32_t kSplitCounters = 4096;
unsigned int* split_counters(int device, cudaStream_t stream, std::int64_t needed) {
    if (needed > kSplitCounters || is_capturing(stream)) return nullptr;
    // Keyed by the stream's unique id, not its handle (a destroyed stream's handle may name a new stream
    // while the old one's kernels still run); cudaStreamPerThread names a different stream in every thread,
    // so those buffers are per thread as well.
    unsigned long long id = 0;
    LOOM_CUDA_CHECK(cudaStreamGetId(stream, &id));
    const std::thread::id owner = stream == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id();
    static std::mutex mu;
    static std::map<std::tuple<int, unsigned long long, std::thread::id>, unsigned int*> buffers;  // 16 KiB each, kept
    std::lock_guard lock(mu);
    unsigned int*& b = buffers[{device, id, owner}];
    if (!b) {
        DeviceGuard guard(device);
        void* p = nullptr;
        LOOM_CUDA_CHECK(cudaMalloc(&p, kSplitCounters * sizeof(unsigned int)));
        LOOM_CUDA_CHECK(cudaMemset(p, 0, kSplitCounters * sizeof(unsigned int)));
        b = static_cast<unsigned int*>(p);
    }
    return b;
}

// `ins` in PlannedReduce::inputs order.
void launch_reduce(const CompiledKernel& k, const codegen::PlannedReduce& pr, std::span<const void* const> ins,
                   std::span<void* const> el_outs, std::span<void* const> row_outs, Device device, std::string_view where) {
    const codegen::ReduceLaunch rl = codegen::reduce_launch(pr, ins, el_outs);
    if (rl.grid_x == 0) return;
    std::vector<Tensor> partials;
    std::vector<void*> part_ptrs;
    if (pr.plan.split) {
        const std::int64_t counters = codegen::split_counter_count(pr, rl);
        if (unsigned int* c = split_counters(device.index, current_stream(), counters)) {
            part_ptrs.push_back(c);
        } else {  // zeroed pool memory (the kernel leaves it zero, but its earlier contents are unknown)
            partials.push_back(Tensor::empty({static_cast<std::int64_t>(sizeof(unsigned int)) * counters}, DType::UInt8, device));
            part_ptrs.push_back(partials.back().data());
            LOOM_CUDA_CHECK(cudaMemsetAsync(partials.back().data(), 0, partials.back().nbytes(), current_stream()));
        }
        for (const auto& op : pr.plan.ops) {
            partials.push_back(Tensor::empty({static_cast<std::int64_t>(codegen::accumulator_bytes(op)) * codegen::split_partial_count(pr)},
                                             DType::UInt8, device));
            part_ptrs.push_back(partials.back().data());
        }
    }
    const std::size_t size = codegen::reduce_params_size(pr.plan);
    constexpr std::size_t kStack = 4096;
    alignas(16) std::byte stack[kStack];
    std::vector<std::byte> heap;
    std::span<std::byte> params(stack, size);
    if (size > kStack) {
        heap.resize(size);
        params = heap;
    }
    codegen::pack_reduce_params(pr, ins, el_outs, row_outs, part_ptrs, params);
    LaunchConfig cfg;
    cfg.grid = {rl.grid_x, rl.grid_y, 1};
    cfg.block = {rl.block, 1, 1};
    (rl.vector ? k.vector_kernel : k.scalar_kernel).launch(cfg, params.data(), params.size(), where);
    // `partials` are stream-ordered pool memory: freed after the kernels that use them, on this stream.
}

Slot slot_of(const Dest& d) {
    return d.root >= 0 ? Slot{Slot::Kind::Root, d.root} : Slot{Slot::Kind::Temp, d.temp};
}

}  // namespace

ReductionPlan plan_reductions(const std::vector<ir::NodePtr>& roots, std::span<const ir::Node* const> sources,
                              std::span<const codegen::InputLayout> layouts, std::string_view name,
                              const codegen::DeviceInfo& info) {
    if (sources.size() != layouts.size())
        throw InternalError(fmt::format("plan_reductions(): {} sources with {} layouts", sources.size(), layouts.size()));
    Planned pl = plan_all(roots, source_layouts(sources, layouts), name, info);
    if (env_list_contains("LOOM_EXPLAIN", "fusion")) std::fputs(explain_text(pl).c_str(), stderr);

    ReductionPlan plan;
    plan.sources = sources.size();
    std::unordered_map<const ir::Node*, Slot> slot;
    for (std::size_t k = 0; k < sources.size(); ++k) slot.emplace(sources[k], Slot{Slot::Kind::Source, static_cast<int>(k)});
    for (std::size_t t = 0; t < pl.B.temp_inputs.size(); ++t)
        slot.emplace(pl.B.temp_inputs[t].get(), Slot{Slot::Kind::Temp, static_cast<int>(t)});
    auto input_slot = [&](const ir::Node* in) {
        const auto it = slot.find(in);
        if (it == slot.end())
            throw InternalError(fmt::format("plan_reductions(): kernel input {} ({}) is neither a source nor a temporary",
                                            ir::describe(*in), short_location(in->loc())));
        return it->second;
    };
    {
        std::unordered_set<const ir::Node*> in_graph;
        for (const ir::Node* n : ir::topo_order(roots))
            if (n->op() == ir::Op::Input) in_graph.insert(n);
        for (std::size_t k = 0; k < sources.size(); ++k)
            if (in_graph.count(sources[k])) plan.reads.push_back(static_cast<int>(k));
    }
    for (const ir::NodePtr& t : pl.P.temps) {
        plan.temps.push_back({t->shape(), t->dtype(), plan.temp_bytes});
        const std::size_t bytes = static_cast<std::size_t>(t->numel()) * itemsize(t->dtype());
        plan.temp_bytes += (bytes + 255) / 256 * 256;  // every temporary 256-byte aligned, as planned (16 bytes)
    }
    for (std::size_t g = 0; g < pl.reduce.size(); ++g) {
        PlannedKernel k;
        k.is_reduce = true;
        k.name = pl.reduce_names[g];
        k.reduce = std::move(pl.reduce[g]);
        for (const ir::Node* in : k.reduce.inputs) k.inputs.push_back(input_slot(in));
        for (const auto& [n, d] : pl.P.groups[g].el_out) k.outputs.push_back(slot_of(d));
        k.element_outputs = k.outputs.size();
        for (const auto& [n, d] : pl.P.groups[g].row_out) k.outputs.push_back(slot_of(d));
        plan.kernels.push_back(std::move(k));
    }
    for (std::size_t s = 0; s < pl.pw_groups.size(); ++s) {
        PlannedKernel k;
        k.name = pl.pw_groups[s].name;
        k.group = std::move(pl.pw_groups[s]);
        k.pointwise = std::move(pl.pw_plans[s]);
        k.numel = k.group.outputs[0]->numel();
        for (const ir::Node* in : codegen::pointwise_inputs(k.group.outputs)) k.inputs.push_back(input_slot(in));
        for (const Dest& d : pl.P.pw[s].dests) k.outputs.push_back(slot_of(d));
        plan.kernels.push_back(std::move(k));
    }
    return plan;
}

void bound_sources(const std::vector<ir::NodePtr>& roots, std::vector<const ir::Node*>& sources,
                   std::vector<codegen::InputLayout>& layouts) {
    for (const ir::Node* n : ir::topo_order(roots)) {
        if (n->op() != ir::Op::Input) continue;
        sources.push_back(n);
        layouts.push_back(layout_of(*n));
    }
}

void build_reduction_kernels(ReductionPlan& plan, Device device, std::string_view where) {
    const codegen::DeviceInfo& info = device_info(device.index);
    // Inside stream capture nothing may be built: checked here, on the capturing thread, before any worker
    // starts. Each key is hashed once: the capture check and the cache lookup share it.
    std::vector<std::size_t> reduce, pointwise;  // kernel indices
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) (plan.kernels[k].is_reduce ? reduce : pointwise).push_back(k);
    std::vector<std::uint64_t> keys;
    for (std::size_t k : reduce) {
        keys.push_back(reduce_key(plan.kernels[k].reduce));
        if (!find_cached_kernel(keys.back(), device.index)) detail::require_no_build_in_capture(plan.kernels[k].name, where);
    }
    std::vector<std::future<std::shared_ptr<const CompiledKernel>>> futures;
    const bool parallel = plan.kernels.size() > 1;
    for (std::size_t j = 0; j < reduce.size(); ++j) {
        futures.push_back(std::async(parallel ? std::launch::async : std::launch::deferred, [&, j] {
            DeviceGuard guard(device.index);
            const PlannedKernel& k = plan.kernels[reduce[j]];
            return cached_kernel(keys[j], device.index, [&] { return build_reduce(k.name, k.reduce, info); });
        }));
    }
    std::exception_ptr error;
    for (std::size_t j = 0; j < reduce.size(); ++j) {
        try {
            plan.kernels[reduce[j]].kernel = futures[j].get();
        } catch (...) {
            if (!error) error = std::current_exception();
        }
    }
    if (error) std::rethrow_exception(error);
    std::vector<KernelGroup> groups;
    std::vector<codegen::PlannedPointwise> plans;
    for (std::size_t k : pointwise) {
        groups.push_back(plan.kernels[k].group);
        plans.push_back(plan.kernels[k].pointwise);
    }
    const auto built = kernels_for(groups, plans, device);
    for (std::size_t j = 0; j < pointwise.size(); ++j) plan.kernels[pointwise[j]].kernel = built[j];
}

void launch_reductions(const ReductionPlan& plan, std::span<const Tensor::Impl* const> sources,
                       std::span<const Tensor* const> outs, Device device, std::string_view where) {
    if (sources.size() != plan.sources)
        throw InternalError(fmt::format("launch_reductions(): {} sources for a plan of {}", sources.size(), plan.sources));
    // Outputs: the user's, through a temporary when it shares memory with anything the graph reads (copied
    // back after the last launch: a later kernel may read an input that an earlier kernel's output aliases).
    SmallArray<void*, 16> targets(outs.size());
    std::vector<std::pair<Tensor, const Tensor*>> copy_back;  // allocates only when an output aliases an input
    for (std::size_t i = 0; i < outs.size(); ++i) {
        const Tensor& user = *outs[i];
        bool shared = false;
        for (int s : plan.reads) shared = shared || sources[static_cast<std::size_t>(s)]->storage == user.storage();
        if (shared) {
            Tensor tmp = Tensor::empty(user.shape(), user.dtype(), device);
            targets[i] = tmp.data();
            copy_back.emplace_back(std::move(tmp), &user);
        } else {
            targets[i] = user.data();
        }
    }
    // Every temporary in one pool block, each at its planned offset.
    Tensor temps;
    char* temp_base = nullptr;
    if (plan.temp_bytes > 0) {
        temps = Tensor::empty({static_cast<std::int64_t>(plan.temp_bytes)}, DType::UInt8, device);
        temp_base = static_cast<char*>(temps.data());
        if (reinterpret_cast<std::uintptr_t>(temp_base) % 16 != 0)
            throw InternalError("launch_reductions(): pool memory is not 16-byte aligned, as the plans assume");
    }
    auto address = [&](const Slot& s) -> void* {
        const std::size_t i = static_cast<std::size_t>(s.index);
        switch (s.kind) {
            case Slot::Kind::Source: return const_cast<void*>(address_of(*sources[i]));
            case Slot::Kind::Temp: return temp_base + plan.temps[i].offset;
            case Slot::Kind::Root: return targets[i];
        }
        return nullptr;
    };
    for (const PlannedKernel& k : plan.kernels) {
        SmallArray<const void*, 64> ins(k.inputs.size());
        for (std::size_t j = 0; j < k.inputs.size(); ++j) ins[j] = address(k.inputs[j]);
        SmallArray<void*, 16> o(k.outputs.size());
        for (std::size_t j = 0; j < k.outputs.size(); ++j) o[j] = address(k.outputs[j]);
        if (k.is_reduce)
            launch_reduce(*k.kernel, k.reduce, ins.span(), o.span(0, k.element_outputs),
                          o.span(k.element_outputs, k.outputs.size() - k.element_outputs), device, where);
        else
            launch_group(*k.kernel, k.pointwise, ins.span(), o.span(), k.numel, where);
    }
    for (auto& [tmp, user] : copy_back) copy_async(*user, tmp);
    // `temps` and the copy-back temporaries are stream-ordered pool memory: freed after the kernels that use them.
}

std::vector<codegen::KernelSource> emit_reductions(const ReductionPlan& plan) {
    std::vector<codegen::KernelSource> out;
    for (const PlannedKernel& k : plan.kernels) {
        if (k.is_reduce) {
            out.push_back(codegen::emit_reduce(k.name, k.reduce));
            if (env_list_contains("LOOM_DUMP", "plans")) dump::write(out.back().name + ".plan.txt", k.reduce.plan.to_string());
        } else {
            out.push_back(codegen::emit_pointwise(k.group.name, k.group.outputs, k.pointwise.plan));
        }
    }
    return out;
}

bool has_reduction(const std::vector<ir::NodePtr>& roots) {
    for (const ir::Node* n : ir::topo_order(roots))
        if (ir::is_reduction(n->op())) return true;
    return false;
}

std::vector<Tensor> evaluate_reductions(const std::vector<ir::NodePtr>& roots, Device device, std::source_location loc,
                                        const std::vector<Tensor>* outs, std::string_view name) {
    const std::string where = short_location(loc);
    std::vector<const ir::Node*> sources;
    std::vector<codegen::InputLayout> layouts;
    bound_sources(roots, sources, layouts);
    ReductionPlan plan = plan_reductions(roots, sources, layouts, name, device_info(device.index));
    std::vector<Tensor> results(roots.size());
    for (std::size_t i = 0; i < roots.size(); ++i) {
        if (outs) {
            const Tensor& user = (*outs)[i];
            if (!user.is_contiguous())
                throw Error(fmt::format("assign(): output {} {} is not contiguous; Loom writes contiguous outputs ({})",
                                        to_string(user.shape()), loom::name(user.dtype()), where));
            results[i] = user;
        } else {
            results[i] = Tensor::empty(roots[i]->shape(), roots[i]->dtype(), device);
        }
    }
    build_reduction_kernels(plan, device, where);
    std::vector<const Tensor::Impl*> bound;
    for (const ir::Node* s : sources) bound.push_back(&bound_tensor(*s));
    std::vector<const Tensor*> targets;
    for (const Tensor& t : results) targets.push_back(&t);
    launch_reductions(plan, bound, targets, device, where);
    return results;
}

std::string explain_reductions(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    const codegen::DeviceInfo info = cuda_available() ? device_info(current_device()) : codegen::DeviceInfo::h200();
    std::vector<const ir::Node*> sources;
    std::vector<codegen::InputLayout> layouts;
    bound_sources(roots, sources, layouts);
    return explain_text(plan_all(roots, source_layouts(sources, layouts), name, info));
}

std::vector<codegen::KernelSource> generate_reductions(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    const codegen::DeviceInfo info = cuda_available() ? device_info(current_device()) : codegen::DeviceInfo::h200();
    std::vector<const ir::Node*> sources;
    std::vector<codegen::InputLayout> layouts;
    bound_sources(roots, sources, layouts);
    return emit_reductions(plan_reductions(roots, sources, layouts, name, info));
}

}  // namespace loom::gpu
