// Running host plans (host_internal.hpp): the kernels of a partition one after another on the thread pool,
// each task a range of elements, rows or (row, chunk) pairs fixed by the plan, the temporaries in host
// memory between them. Everything that can fail (building the kernels, allocating results, temporaries and
// workspaces) happens before the first kernel runs, and generated code cannot fail, so an error leaves every
// output untouched (docs/semantics.md, section 11). Matrix products have no LLVM emitter yet: their kernels
// run on the CPU reference, which allocates as it runs: running out of host memory inside a product is the
// one error that can come after earlier kernels of the plan have written outputs.
#include <fmt/format.h>

#include <cstdio>
#include <cstring>

#include "host_internal.hpp"
#include "host_pool.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/env.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/reference.hpp"

namespace loom::host {

namespace {

using codegen::Family;
using codegen::Slot;

const Tensor::Impl& bound(const ir::Node& input) {
    return *static_cast<const Tensor::Impl*>(input.payload().get());
}

const void* address_of(const Tensor::Impl& t) {
    return static_cast<const char*>(t.storage->ptr) + t.offset * static_cast<std::int64_t>(itemsize(t.dtype));
}

void run_pointwise(const CompiledKernel& k, const codegen::HostKernel& h, const void* p) {
    if (h.numel == 0) return;
    const std::int64_t n = h.numel, task = h.schedule.task;
    run(h.schedule.tasks, [&](std::int64_t t) { k.entry(p, t * task, std::min(n, (t + 1) * task)); });
}

void run_reduction(const CompiledKernel& k, const codegen::HostKernel& h, const void* p) {
    const codegen::PlannedReduce& pr = h.reduce;
    const codegen::HostSchedule& s = h.schedule;
    const std::int64_t O = pr.binding.outputs;
    if (O == 0) return;
    if (!s.split) {
        const std::int64_t task = s.task;
        run(s.tasks, [&](std::int64_t t) { k.entry(p, t * task, std::min(O, (t + 1) * task)); });
        return;
    }
    const bool outer = pr.plan.schedule == codegen::ReduceSchedule::Outer;
    const std::int64_t units = outer ? (O + s.lanes - 1) / s.lanes : O;
    const std::int64_t pairs = units * pr.binding.chunks, task = s.task, ftask = s.finish_task;
    run(s.tasks, [&](std::int64_t t) { k.partials(p, t * task, std::min(pairs, (t + 1) * task)); });
    run(s.finish_tasks, [&](std::int64_t t) { k.finish(p, t * ftask, std::min(O, (t + 1) * ftask)); });
}

// A matmul kernel (the product and its epilogue) on the CPU reference: its inputs bound to the memory of
// their slots as tensors (views, no copy), each output copied into the place the kernel writes it
// (contiguous: a temporary, a result, or the temporary of an output that is a view).
void run_product(const codegen::FusedKernel& fk, const std::vector<Tensor>& ins,
                 const std::vector<void*>& outs) {
    const std::vector<const ir::Node*> inputs = codegen::product_inputs(fk);
    reference::Overrides bind;
    for (std::size_t j = 0; j < inputs.size(); ++j) bind.emplace(inputs[j]->input_id(), ins[j]);
    const std::vector<Tensor> values = reference::evaluate(fk.outputs, bind);
    for (std::size_t j = 0; j < outs.size(); ++j)
        if (values[j].nbytes() > 0) std::memcpy(outs[j], values[j].data(), values[j].nbytes());
}

// A tensor handle over a source's memory (the source's storage stays shared; nothing is copied).
Tensor tensor_of(const Tensor::Impl& t) {
    return Tensor(
        std::make_shared<Tensor::Impl>(Tensor::Impl{t.storage, t.dtype, t.shape, t.strides, t.offset, {}}));
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
    if (dst.is_contiguous()) {
        std::memcpy(dst.data(), src.data(), src.nbytes());
        return;
    }
    const std::size_t w = itemsize(dst.dtype());
    const int r = dst.rank();
    std::vector<std::int64_t> idx(static_cast<std::size_t>(r), 0);
    auto* out = static_cast<char*>(dst.data());
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
    // Outputs that are views are written at their own strides, unless they share memory with a source (then
    // run_plan writes them through a contiguous temporary and copies it in at the end).
    std::vector<Strides> root_strides;
    bool any = false;
    if (outs)
        for (const Tensor& user : *outs) {
            bool shared = false;
            for (const ir::Node* n : srcs) shared = shared || bound(*n).storage == user.storage();
            const bool strided = !shared && !user.is_contiguous();
            root_strides.push_back(strided ? user.strides() : Strides{});
            any = any || strided;
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
    // Outputs sharing memory with a source the plan reads are written through a temporary (a kernel may still
    // read the source after an element of the output was written), copied back after the last kernel; so are
    // outputs that are views the plan writes contiguous.
    std::vector<void*> targets(outs.size());
    std::vector<std::pair<Tensor, const Tensor*>> copy_back;
    std::vector<bool> strided_root(outs.size(), false);
    for (const codegen::FusedKernel& fk : plan.partition.kernels)
        for (std::size_t j = 0; j < fk.writes.size(); ++j)
            if (fk.writes[j].kind == Slot::Kind::Root && fk.family == Family::Pointwise &&
                plan.kernels[static_cast<std::size_t>(&fk - plan.partition.kernels.data())]
                        .pointwise.plan.outputs[j]
                        .access == codegen::Access::Strided)
                strided_root[static_cast<std::size_t>(fk.writes[j].index)] = true;
    for (std::size_t i = 0; i < outs.size(); ++i) {
        const Tensor& user = *outs[i];
        bool shared = false;
        for (int s : plan.reads)
            shared = shared || sources[static_cast<std::size_t>(s)]->storage == user.storage();
        if ((shared || (!user.is_contiguous() && !strided_root[i])) && user.nbytes() > 0) {
            Tensor tmp = Tensor::host(user.shape(), user.dtype());
            targets[i] = tmp.data();
            copy_back.emplace_back(std::move(tmp), &user);
        } else {
            targets[i] = user.data();
        }
    }
    std::vector<Tensor> temps;
    for (const codegen::TempValue& t : plan.partition.temps)
        temps.push_back(Tensor::host(t.value->shape(), t.value->dtype()));
    auto address = [&](const Slot& s) -> void* {
        const std::size_t i = static_cast<std::size_t>(s.index);
        switch (s.kind) {
            case Slot::Kind::Source:
                return const_cast<void*>(address_of(*sources[i]));
            case Slot::Kind::Temp:
                return temps[i].data();
            case Slot::Kind::Root:
                return targets[i];
            case Slot::Kind::Index:
                return nullptr;  // an iota: computed by the kernel
        }
        return nullptr;
    };
    // Every allocation before the first kernel runs: the split reductions' workspaces (16 bytes per (row,
    // chunk) pair and reduction: the value, then argmin/argmax's index) and one block of every kernel's
    // parameters, packed now, 64-byte aligned each.
    std::vector<Tensor> workspaces;
    std::vector<std::vector<void*>> parts(plan.kernels.size());
    std::vector<std::size_t> at(plan.kernels.size() + 1, 0);
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
        const codegen::HostKernel& h = plan.kernels[k];
        std::size_t size = 0;
        if (plan.partition.kernels[k].family == Family::Pointwise) {
            size = h.numel == 0 ? 0 : h.pointwise.plan.params.size;
        } else if (plan.partition.kernels[k].family == Family::Reduction && h.reduce.binding.outputs > 0) {
            size = codegen::reduce_params_size(h.reduce.plan);
            parts[k].push_back(nullptr);  // [0]: the GPU's counters, unused on the host
            if (h.schedule.split)
                for (std::size_t j = 0; j < h.reduce.plan.ops.size(); ++j) {
                    workspaces.push_back(Tensor::host(
                        {h.reduce.binding.outputs * h.reduce.binding.chunks * 16}, DType::UInt8));
                    parts[k].push_back(workspaces.back().data());
                }
        }
        at[k + 1] = at[k] + (size + 63) / 64 * 64;
    }
    Tensor param_block;
    if (at.back() > 0) param_block = Tensor::host({static_cast<std::int64_t>(at.back())}, DType::UInt8);
    auto* params = param_block.defined() ? static_cast<std::byte*>(param_block.data()) : nullptr;
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
        if (at[k + 1] == at[k]) continue;
        const codegen::HostKernel& h = plan.kernels[k];
        const codegen::FusedKernel& fk = plan.partition.kernels[k];
        std::vector<const void*> ins(h.reads.size());
        for (std::size_t j = 0; j < h.reads.size(); ++j) ins[j] = address(h.reads[j]);
        std::vector<void*> o(fk.writes.size());
        for (std::size_t j = 0; j < fk.writes.size(); ++j) o[j] = address(fk.writes[j]);
        const std::span<std::byte> block(params + at[k], at[k + 1] - at[k]);
        switch (fk.family) {
            case Family::Pointwise:
                codegen::pack_params(h.pointwise.plan, h.pointwise.binding, ins, o, block);
                break;
            case Family::Reduction: {
                const std::size_t el = fk.group.element_outputs.size();
                const std::span<void* const> os(o);
                codegen::pack_reduce_params(h.reduce, ins, os.subspan(0, el), os.subspan(el), parts[k],
                                            block);
                break;
            }
            case Family::MatMul:
                break;  // no parameters: run on the reference below
        }
    }
    // Generated code cannot fail: from here on nothing throws but the reference's allocations for products.
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
        const codegen::FusedKernel& fk = plan.partition.kernels[k];
        if (fk.family == Family::MatMul) {
            const codegen::HostKernel& h = plan.kernels[k];
            std::vector<Tensor> ins;
            for (const Slot& s : h.reads)
                ins.push_back(s.kind == Slot::Kind::Source
                                  ? tensor_of(*sources[static_cast<std::size_t>(s.index)])
                                  : temps.at(static_cast<std::size_t>(s.index)));
            std::vector<void*> o;
            for (const Slot& w : fk.writes) o.push_back(address(w));
            run_product(fk, ins, o);
            continue;
        }
        if (at[k + 1] == at[k]) continue;
        switch (fk.family) {
            case Family::Pointwise:
                run_pointwise(*kernels[k], plan.kernels[k], params + at[k]);
                break;
            case Family::Reduction:
                run_reduction(*kernels[k], plan.kernels[k], params + at[k]);
                break;
            case Family::MatMul:
                break;
        }
    }
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
    const std::vector<ir::NodePtr> graph = ir::run_pipeline(roots, ir::standard_passes());
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
        if (plan.partition.kernels[i].family != codegen::Family::MatMul) out += host::emit_kernel(plan, i).ir;
    return out;
}

}  // namespace loom
