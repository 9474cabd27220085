// The GPU path of graphs with reductions: partition into reduction kernels (prologue, stages, element and
// row outputs fused) and pointwise kernels, materialize what crosses kernels, plan, build, launch.
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

// The graphs of the kernels with materialized values replaced by inputs bound to their temporaries.
struct Bound {
    std::vector<codegen::ReduceGroupSpec> specs;
    std::vector<std::vector<ir::NodePtr>> pw_outputs;
};

Bound bind_temps(const Partition& P, const std::vector<Tensor>& temps) {
    std::vector<ir::NodePtr> temp_inputs;
    for (std::size_t t = 0; t < P.temps.size(); ++t) {
        const Tensor& T = temps[t];
        temp_inputs.push_back(ir::input(T.dtype(), T.shape(), fmt::format("t{} ({})", t, ir::op_name(P.temps[t]->op())),
                                        std::static_pointer_cast<const void>(T.impl()), P.temps[t]->loc()));
    }
    auto subst_except = [&](const std::unordered_set<const ir::Node*>& keep) -> ir::Rewriter {
        return [&, keep](const ir::Node& n, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
            if (keep.count(&n)) return nullptr;
            const auto it = P.temp_of.find(&n);
            return it == P.temp_of.end() ? nullptr : temp_inputs[static_cast<std::size_t>(it->second)];
        };
    };
    Bound B;
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
    std::vector<Tensor> temps;
};

Planned plan_all(const std::vector<ir::NodePtr>& roots, Device device, bool allocate, std::string_view name,
                 const codegen::DeviceInfo& info) {
    auto attempt = [&](bool strict, const std::string& reason) {
        Planned pl;
        pl.P = partition_graph(roots, strict);
        pl.P.strict_reason = reason;
        for (const auto& t : pl.P.temps) {
            pl.temps.push_back(allocate ? Tensor::empty(t->shape(), t->dtype(), device)
                                        : Tensor::empty(t->shape(), t->dtype(), Device::cpu()));
        }
        pl.B = bind_temps(pl.P, pl.temps);
        const std::size_t nk = pl.B.specs.size() + pl.B.pw_outputs.size();
        for (std::size_t g = 0; g < pl.B.specs.size(); ++g) {
            pl.reduce.push_back(codegen::plan_reduce(pl.B.specs[g], layout_of, info));
            pl.reduce_names.push_back(reduce_name(pl.B.specs[g], name, g, nk));
        }
        for (std::size_t s = 0; s < pl.B.pw_outputs.size(); ++s) {
            KernelGroup kg;
            kg.outputs = pl.B.pw_outputs[s];
            for (const Dest& d : pl.P.pw[s].dests) kg.root_index.push_back(static_cast<std::size_t>(d.root));
            std::string base = name.empty() ? std::string("pointwise") : std::string(name);
            kg.name = nk > 1 ? fmt::format("{}_{}", base, pl.B.specs.size() + s) : base;
            pl.pw_plans.push_back(codegen::plan_pointwise(kg.outputs, input_layouts(kg.outputs), info));
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
                            rp.split ? fmt::format(", split over {} blocks per row (the last one finishes it)",
                                                   pl.reduce[g].binding.blocks_per_row)
                                     : "",
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

// Split counters that stay zero between launches: the last block of a row group resets its counter, so a
// buffer zeroed once serves every later split launch on the same stream (launches on one stream run one
// after another; each stream has its own buffer, so kernels on two streams never share counters). This
// saves a cudaMemsetAsync before every split launch (about 1.5% of R3's time on the H200). Returns null
// inside stream capture (nothing may be allocated then; the caller zeroes pool memory instead, which the
// graph records) and for grids with more row groups than the buffer holds.
constexpr std::uint32_t kSplitCounters = 4096;
unsigned int* split_counters(int device, cudaStream_t stream, std::uint32_t needed) {
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

void launch_reduce(const CompiledKernel& k, const codegen::PlannedReduce& pr, std::span<void* const> el_outs,
                   std::span<void* const> row_outs, Device device, std::string_view where) {
    std::vector<const void*> ins;
    for (const ir::Node* in : pr.inputs) ins.push_back(address_of(*in));
    const codegen::ReduceLaunch rl = codegen::reduce_launch(pr, ins, el_outs);
    if (rl.grid_x == 0) return;
    std::vector<Tensor> partials;
    std::vector<void*> part_ptrs;
    if (pr.plan.split) {
        if (unsigned int* c = split_counters(device.index, current_stream(), rl.grid_x)) {
            part_ptrs.push_back(c);
        } else {  // zeroed pool memory (the kernel leaves it zero, but its earlier contents are unknown)
            partials.push_back(Tensor::empty({static_cast<std::int64_t>(sizeof(unsigned int)) * rl.grid_x}, DType::UInt8, device));
            part_ptrs.push_back(partials.back().data());
            LOOM_CUDA_CHECK(cudaMemsetAsync(partials.back().data(), 0, partials.back().nbytes(), current_stream()));
        }
        for (const auto& op : pr.plan.ops) {
            partials.push_back(Tensor::empty({static_cast<std::int64_t>(codegen::accumulator_bytes(op)) * pr.binding.outputs *
                                              pr.binding.blocks_per_row},
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

}  // namespace

bool has_reduction(const std::vector<ir::NodePtr>& roots) {
    for (const ir::Node* n : ir::topo_order(roots))
        if (ir::is_reduction(n->op())) return true;
    return false;
}

std::vector<Tensor> evaluate_reductions(const std::vector<ir::NodePtr>& roots, Device device, std::source_location loc,
                                        const std::vector<Tensor>* outs, std::string_view name) {
    const codegen::DeviceInfo& info = device_info(device.index);
    const std::string where = short_location(loc);
    Planned pl = plan_all(roots, device, true, name, info);
    if (env_list_contains("LOOM_EXPLAIN", "fusion")) std::fputs(explain_text(pl).c_str(), stderr);

    // Outputs: the user's (through a temporary when it shares memory with anything the graph reads).
    std::unordered_set<const void*> read_storages;
    for (const ir::Node* n : ir::topo_order(roots))
        if (n->op() == ir::Op::Input && n->payload()) read_storages.insert(bound_tensor(*n).storage.get());
    std::vector<Tensor> results(roots.size()), targets(roots.size());
    std::vector<std::pair<Tensor, Tensor>> copy_back;
    for (std::size_t i = 0; i < roots.size(); ++i) {
        if (outs) {
            const Tensor& user = (*outs)[i];
            if (!user.is_contiguous())
                throw Error(fmt::format("assign(): output {} {} is not contiguous; Loom writes contiguous outputs ({})",
                                        to_string(user.shape()), loom::name(user.dtype()), where));
            results[i] = user;
            if (read_storages.count(user.storage().get())) {
                targets[i] = Tensor::empty(roots[i]->shape(), roots[i]->dtype(), device);
                copy_back.emplace_back(targets[i], user);
            } else {
                targets[i] = user;
            }
        } else {
            results[i] = targets[i] = Tensor::empty(roots[i]->shape(), roots[i]->dtype(), device);
        }
    }
    auto dest_ptr = [&](const Dest& d) -> void* {
        return d.root >= 0 ? targets[static_cast<std::size_t>(d.root)].data() : pl.temps[static_cast<std::size_t>(d.temp)].data();
    };

    // Build every kernel (in parallel when several are new), then launch in order. Inside stream capture
    // nothing may be built: checked here, on the capturing thread, before any worker starts.
    std::vector<std::uint64_t> keys;  // hashed once per kernel: the capture check and the cache lookup share them
    for (std::size_t g = 0; g < pl.reduce.size(); ++g) {
        keys.push_back(reduce_key(pl.reduce[g]));
        if (!find_cached_kernel(keys.back(), device.index)) detail::require_no_build_in_capture(pl.reduce_names[g], where);
    }
    std::vector<std::future<std::shared_ptr<const CompiledKernel>>> futures;
    const bool parallel = pl.reduce.size() + pl.pw_groups.size() > 1;
    for (std::size_t g = 0; g < pl.reduce.size(); ++g) {
        futures.push_back(std::async(parallel ? std::launch::async : std::launch::deferred, [&, g] {
            DeviceGuard guard(device.index);
            return cached_kernel(keys[g], device.index,
                                 [&] { return build_reduce(pl.reduce_names[g], pl.reduce[g], info); });
        }));
    }
    std::vector<std::shared_ptr<const CompiledKernel>> reduce_kernels;
    std::exception_ptr error;
    for (auto& f : futures) {
        try {
            reduce_kernels.push_back(f.get());
        } catch (...) {
            if (!error) error = std::current_exception();
        }
    }
    if (error) std::rethrow_exception(error);
    const auto pw_kernels = kernels_for(pl.pw_groups, pl.pw_plans, device);

    for (std::size_t g = 0; g < pl.reduce.size(); ++g) {
        std::vector<void*> el, row;
        for (const auto& [n, d] : pl.P.groups[g].el_out) el.push_back(dest_ptr(d));
        for (const auto& [n, d] : pl.P.groups[g].row_out) row.push_back(dest_ptr(d));
        launch_reduce(*reduce_kernels[g], pl.reduce[g], el, row, device, where);
    }
    for (std::size_t s = 0; s < pl.pw_groups.size(); ++s) {
        std::vector<const void*> ins;
        for (const ir::Node* in : codegen::pointwise_inputs(pl.pw_groups[s].outputs)) ins.push_back(address_of(*in));
        std::vector<void*> o;
        for (const Dest& d : pl.P.pw[s].dests) o.push_back(dest_ptr(d));
        launch_group(*pw_kernels[s], pl.pw_plans[s], ins, o, pl.pw_groups[s].outputs[0]->numel(), where);
    }
    for (auto& [tmp, user] : copy_back) copy_async(user, tmp);
    return results;
}

std::string explain_reductions(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    const codegen::DeviceInfo info = cuda_available() ? device_info(current_device()) : codegen::DeviceInfo::h200();
    return explain_text(plan_all(roots, Device::cpu(), false, name, info));
}

std::vector<codegen::KernelSource> generate_reductions(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    const codegen::DeviceInfo info = cuda_available() ? device_info(current_device()) : codegen::DeviceInfo::h200();
    const Planned pl = plan_all(roots, Device::cpu(), false, name, info);
    if (env_list_contains("LOOM_EXPLAIN", "fusion")) std::fputs(explain_text(pl).c_str(), stderr);
    std::vector<codegen::KernelSource> out;
    for (std::size_t g = 0; g < pl.reduce.size(); ++g) {
        out.push_back(codegen::emit_reduce(pl.reduce_names[g], pl.reduce[g]));
        if (env_list_contains("LOOM_DUMP", "plans")) dump::write(out.back().name + ".plan.txt", pl.reduce[g].plan.to_string());
    }
    for (std::size_t s = 0; s < pl.pw_groups.size(); ++s)
        out.push_back(codegen::emit_pointwise(pl.pw_groups[s].name, pl.pw_groups[s].outputs, pl.pw_plans[s].plan));
    return out;
}

}  // namespace loom::gpu
