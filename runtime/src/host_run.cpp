// Running host plans (host_internal.hpp): the kernels of a partition one after another on the thread pool,
// each task a range of elements, rows or (row, chunk) pairs fixed by the plan, the temporaries in host
// memory between them. Everything that can fail (building the kernels, allocating results, temporaries and
// workspaces) happens before the first kernel runs, and generated code cannot fail, so an error leaves every
// output untouched (docs/semantics.md, section 11). Matrix products have no LLVM emitter yet: their kernels
// run on the CPU reference, which allocates as it runs: running out of host memory inside a product is the
// one error that can come after earlier kernels of the plan have written outputs.
#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "host_internal.hpp"
#include "host_pool.hpp"
#include "loom/codegen/llvm/host_family.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/env.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/reference.hpp"
#include "lowering.hpp"
#include "run_slots.hpp"
#include "stats_internal.hpp"

namespace loom::host {

namespace {

using codegen::Slot;
using detail::SmallArray;

const Tensor::Impl& bound(const ir::Node& input) {
    return *static_cast<const Tensor::Impl*>(input.payload().get());
}

// A tensor handle over a source's memory (the source's storage stays shared; nothing is copied).
Tensor tensor_of(const Tensor::Impl& t) {
    return Tensor(
        std::make_shared<Tensor::Impl>(Tensor::Impl{t.storage, t.dtype, t.shape, t.strides, t.offset, {}}));
}

// A tensor over `bytes` at `ptr` of `shape` and `dtype`, contiguous, not owned: a temporary in the block.
Tensor tensor_at(void* ptr, const Shape& shape, DType dtype) {
    return Tensor::view(ptr, shape, dtype, {}, Device::cpu());
}

// A kernel that runs on the CPU reference (HostLaunch::on_reference): its graph evaluated with its inputs
// (the Input nodes of its graph, in `reads` order) bound to the memory of their slots as tensors (views, no
// copy), each output copied into the place the kernel writes it (contiguous: a temporary, a result, or the
// temporary of an output that is a view).
void run_on_reference(const codegen::HostPlan& plan, std::size_t k, const detail::RunSlots& slots,
                      codegen::KernelPointers p) {
    const codegen::FusedKernel& fk = plan.partition.kernels[k];
    const std::vector<const ir::Node*> inputs = codegen::graph_inputs(fk);
    reference::Overrides bind;
    for (std::size_t j = 0; j < inputs.size(); ++j) {
        const Slot& s = plan.kernels[k].reads[j];
        const Tensor t =
            s.kind == Slot::Kind::Source
                ? tensor_of(*slots.sources[static_cast<std::size_t>(s.index)])
                : tensor_at(const_cast<void*>(p.inputs[j]), inputs[j]->shape(), inputs[j]->dtype());
        bind.emplace(inputs[j]->input_id(), t);
    }
    const std::vector<Tensor> values = reference::evaluate(fk.outputs, bind);
    for (std::size_t j = 0; j < p.outputs.size(); ++j)
        if (values[j].nbytes() > 0) std::memcpy(p.outputs[j], values[j].data(), values[j].nbytes());
}

// The passes of one kernel on the thread pool.
void run_passes(const CompiledKernel& kernel, const codegen::HostLaunch& l, const void* params) {
    detail::count_host_kernel_run();
    for (int i = 0; i < l.pass_count; ++i) {
        const codegen::HostPass& pass = l.passes[static_cast<std::size_t>(i)];
        const CompiledKernel::Entry entry = pass.entry == codegen::HostPass::Entry::Main ? kernel.entry
                                            : pass.entry == codegen::HostPass::Entry::Partials
                                                ? kernel.partials
                                                : kernel.finish;
        const std::int64_t task = pass.task, total = pass.total;
        run(pass.tasks, [&](std::int64_t t) { entry(params, t * task, std::min(total, (t + 1) * task)); });
    }
}

codegen::HostLaunch launch_of(const codegen::HostKernel& h) {
    return std::visit([](const auto& s) { return codegen::HostFamily<std::decay_t<decltype(s)>>::launch(s); },
                      h.schedule);
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
    if (dst.nbytes() == 0) return;
    if (dst.is_contiguous() && src.is_contiguous()) {
        std::memcpy(dst.data(), src.data(), src.nbytes());
        return;
    }
    if (use_llvm()) {  // a pointwise kernel storing into the view
        const ir::NodePtr in = ir::input(src.dtype(), src.shape(), "copy back",
                                         std::static_pointer_cast<const void>(src.impl()));
        const std::vector<Tensor> outs{dst};
        evaluate({in}, &outs, "copy_back");
        return;
    }
    const std::size_t w = itemsize(dst.dtype());
    const int r = dst.rank();
    std::vector<std::int64_t> idx(static_cast<std::size_t>(r), 0);
    auto* out = static_cast<char*>(dst.data());
    if (!src.is_contiguous()) throw InternalError("host copy_into(): a source that is not contiguous");
    const auto* in = static_cast<const char*>(src.data());
    for (std::int64_t e = 0; e < dst.numel(); ++e) {
        std::int64_t off = 0;
        for (int d = 0; d < r; ++d)
            off += idx[static_cast<std::size_t>(d)] * dst.strides()[static_cast<std::size_t>(d)];
        std::memcpy(out + off * static_cast<std::int64_t>(w), in + e * static_cast<std::int64_t>(w), w);
        for (int d = r - 1; d >= 0; --d) {  // the next row-major index
            if (++idx[static_cast<std::size_t>(d)] < dst.shape()[static_cast<std::size_t>(d)]) break;
            idx[static_cast<std::size_t>(d)] = 0;
        }
    }
}

codegen::HostPlan plan_bound(const std::vector<ir::NodePtr>& roots, const Options& options,
                             std::string_view name, std::vector<const ir::Node*>* sources,
                             const std::vector<Tensor>* outs) {
    std::vector<const ir::Node*> srcs;
    std::vector<codegen::InputLayout> layouts;
    for (const ir::Node* n : ir::topo_order(roots)) {
        if (n->op() != ir::Op::Input) continue;
        if (!n->payload())
            throw Error(fmt::format("eval(): input {} is a placeholder with no tensor bound ({})",
                                    ir::describe(*n), short_location(n->loc())));
        srcs.push_back(n);
        const Tensor::Impl& t = bound(*n);
        layouts.push_back({t.dtype, t.strides, false});
    }
    // Outputs that are views are written at their own strides (through a temporary of the same strides when
    // a source the plan reads shares their memory: run_plan).
    std::vector<Strides> root_strides;
    bool any = false;
    if (outs)
        for (const Tensor& user : *outs) {
            root_strides.push_back(user.is_contiguous() ? Strides{} : user.strides());
            any = any || !user.is_contiguous();
        }
    codegen::HostPlan plan =
        codegen::plan_host(roots, srcs, layouts, planning_target(), options, name, nullptr,
                           any ? std::span<const Strides>(root_strides) : std::span<const Strides>{});
    if (sources) *sources = std::move(srcs);
    return plan;
}

void run_plan(const codegen::HostPlan& plan, const Kernels& kernels,
              std::span<const Tensor::Impl* const> sources, std::span<const Tensor* const> outs) {
    if (sources.size() != plan.sources || kernels.size() != plan.kernels.size())
        throw InternalError(fmt::format("host run_plan(): {} sources and {} kernels for a plan of {} and {}",
                                        sources.size(), kernels.size(), plan.sources, plan.kernels.size()));
    // Outputs sharing memory with a source that a kernel from their writer on reads are written through a
    // temporary of their layout (a kernel may still read the source after an element of the output was
    // written), copied in after the last kernel.
    // A plan with checked gathers writes every output through a temporary too, copied in only once no index
    // was out of range: an out-of-range index raises and leaves the outputs as they were.
    const std::size_t n = plan.kernels.size();
    std::vector<codegen::HostLaunch> launches(n);
    bool checks = false;
    for (std::size_t k = 0; k < n; ++k) {
        launches[k] = launch_of(plan.kernels[k]);
        checks = checks || launches[k].error_word;
    }
    SmallArray<void*, 16> targets(outs.size());
    std::vector<std::pair<Tensor, const Tensor*>> copy_back;
    const auto never_in_place = [](std::size_t, int, std::size_t) { return false; };
    for (std::size_t i = 0; i < outs.size(); ++i) {
        const Tensor& user = *outs[i];
        if (user.nbytes() > 0 &&
            (checks || detail::needs_temporary(plan, sources, user, i, never_in_place))) {
            Tensor tmp = detail::temporary_like(user, Device::cpu());
            targets[i] = tmp.data();
            copy_back.emplace_back(std::move(tmp), &user);
        } else {
            targets[i] = user.data();
        }
    }
    // Every allocation before the first kernel runs: the temporaries' block, the workspaces and one block of
    // every kernel's parameters, packed now, 64-byte aligned each.
    Tensor temps;
    if (plan.temp_bytes > 0) temps = Tensor::host({static_cast<std::int64_t>(plan.temp_bytes)}, DType::UInt8);
    const detail::RunSlots slots{sources, targets.span(),
                                 temps.defined() ? static_cast<char*>(temps.data()) : nullptr, plan.temps};
    std::vector<Tensor> workspaces;
    std::vector<std::vector<void*>> workspace_ptrs(n);
    std::vector<std::size_t> at(n + 1, 0);
    for (std::size_t k = 0; k < n; ++k) {
        for (const std::size_t bytes : launches[k].workspaces) {
            workspaces.push_back(Tensor::host({static_cast<std::int64_t>(bytes)}, DType::UInt8));
            workspace_ptrs[k].push_back(workspaces.back().data());
        }
        at[k + 1] = at[k] + (launches[k].param_bytes + 63) / 64 * 64;
    }
    Tensor param_block;
    if (at.back() > 0) param_block = Tensor::host({static_cast<std::int64_t>(at.back())}, DType::UInt8);
    auto* params = param_block.defined() ? static_cast<std::byte*>(param_block.data()) : nullptr;
    ir::GatherErrorWord error_word;
    for (std::size_t k = 0; k < n; ++k) {
        if (at[k + 1] == at[k]) continue;
        SmallArray<const void*, 64> ins(plan.kernels[k].reads.size());
        SmallArray<void*, 16> o(plan.partition.kernels[k].writes.size());
        codegen::KernelPointers p = detail::kernel_pointers(plan, k, slots, ins.span(), o.span());
        if (launches[k].error_word) p.error_word = &error_word;
        const std::span<std::byte> block(params + at[k], at[k + 1] - at[k]);
        std::visit(
            [&](const auto& s) {
                codegen::HostFamily<std::decay_t<decltype(s)>>::pack(s, p, workspace_ptrs[k], block);
            },
            plan.kernels[k].schedule);
    }
    // From here on nothing throws but the reference (its allocations, a checked gather's index) and, after
    // the last kernel, an out-of-range index that a kernel recorded.
    for (std::size_t k = 0; k < n; ++k) {
        if (launches[k].on_reference) {
            SmallArray<const void*, 64> ins(plan.kernels[k].reads.size());
            SmallArray<void*, 16> o(plan.partition.kernels[k].writes.size());
            run_on_reference(plan, k, slots, detail::kernel_pointers(plan, k, slots, ins.span(), o.span()));
            continue;
        }
        if (at[k + 1] > at[k]) run_passes(*kernels[k], launches[k], params + at[k]);
    }
    if (std::atomic_ref<std::uint32_t>(error_word.flag).load() != 0)
        throw Error(ir::gather_error_message(error_word.id, error_word.value));
    for (auto& [tmp, user] : copy_back) copy_into(*user, tmp);
}

std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, const std::vector<Tensor>* outs,
                             std::string_view name) {
    std::vector<const ir::Node*> sources;
    const codegen::HostPlan plan = plan_bound(roots, current_options(), name, &sources, outs);
    if (env_list_contains("LOOM_EXPLAIN", "fusion")) std::fputs(explain(&plan).c_str(), stderr);
    const Kernels kernels = build_kernels(plan);
    std::vector<Tensor> results(roots.size());
    for (std::size_t i = 0; i < roots.size(); ++i)
        results[i] = outs ? (*outs)[i] : Tensor::host(roots[i]->shape(), roots[i]->dtype());
    std::vector<const Tensor::Impl*> bound_sources(sources.size());
    for (std::size_t k = 0; k < sources.size(); ++k) bound_sources[k] = &bound(*sources[k]);
    std::vector<const Tensor*> targets(results.size());
    for (std::size_t i = 0; i < results.size(); ++i) targets[i] = &results[i];
    run_plan(plan, kernels, bound_sources, targets);
    return results;
}

std::string explain(const codegen::HostPlan* plan) {
    const Backend& be = backend();
    if (!be.table)
        return fmt::format("host     every kernel runs on the CPU reference: {}\n", be.info.reason);
    return plan ? plan->to_string() : std::string();
}

}  // namespace loom::host

namespace loom {

std::string llvm_source(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    const std::vector<ir::NodePtr> graph = lower_graph(roots, current_options(), false);
    std::vector<const ir::Node*> sources;
    std::vector<codegen::InputLayout> layouts;
    for (const ir::Node* n : ir::topo_order(graph)) {
        if (n->op() != ir::Op::Input) continue;
        sources.push_back(n);
        if (n->payload()) {
            const auto& t = *static_cast<const Tensor::Impl*>(n->payload().get());
            layouts.push_back({t.dtype, t.strides, false});
        } else {
            layouts.push_back({n->dtype(), contiguous_strides(n->shape()), false});
        }
    }
    const codegen::HostPlan plan =
        codegen::plan_host(graph, sources, layouts, host::planning_target(), current_options(), name);
    std::string out;
    for (std::size_t i = 0; i < plan.kernels.size(); ++i)
        if (codegen::has_code(plan.kernels[i])) out += host::emit_kernel(plan, i).ir;
    return out;
}

}  // namespace loom
