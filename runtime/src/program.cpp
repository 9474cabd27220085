// Programs: specialize once (lower, partition, plan, compile), then launch with new tensors cheaply.
#include "loom/runtime/program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <typeinfo>

#include "gpu_internal.hpp"
#include "host_internal.hpp"
#include "loom/codegen/llvm/host_family.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/env.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/pinned.hpp"
#include "loom/runtime/reference.hpp"
#include "lowering.hpp"
#include "nvtx.hpp"
#include "program_graph.hpp"
#include "run_slots.hpp"

namespace loom {

namespace {

bool is_aligned16(const Tensor& t) {
    return reinterpret_cast<std::uintptr_t>(t.data()) % 16 == 0;
}

}  // namespace

bool ArgSpec::matches(const Tensor& t) const {
    return t.defined() && t.dtype() == dtype && t.shape() == shape && t.strides() == strides &&
           is_aligned16(t) == aligned16 && t.device() == device;
}

const ir::Node* Program::foreign_input(const std::vector<ir::NodePtr>& roots,
                                       const std::vector<ir::NodePtr>& params) {
    for (const ir::Node* n : ir::topo_order(roots)) {
        if (n->op() != ir::Op::Input) continue;
        bool is_param = false;
        for (const auto& p : params) is_param = is_param || p.get() == n;
        if (!is_param) return n;
    }
    return nullptr;
}

ArgSpec ArgSpec::of(const Tensor& t) {
    return {t.dtype(), t.shape(), t.strides(), is_aligned16(t), t.device()};
}

Program::Program(std::vector<ir::NodePtr> roots, std::vector<ir::NodePtr> params,
                 std::span<const Tensor* const> args, std::string name, std::source_location loc,
                 const Options& options, std::vector<Strides> out_strides)
    : out_strides_(std::move(out_strides)), options_(options), where_(short_location(loc)), loc_(loc) {
    if (params.size() != args.size())
        throw InternalError(
            fmt::format("Program: {} placeholders for {} arguments", params.size(), args.size()));
    if (args.empty())
        throw Error(
            fmt::format("{}(): a traced function needs at least one tensor argument ({})", name, where_));
    device_ = args[0]->device();
    for (std::size_t k = 0; k < args.size(); ++k) {
        const Tensor& t = *args[k];
        if (!(t.device() == device_))
            throw Error(fmt::format("{}(): argument {} is on {} but argument 0 is on {} ({})", name, k,
                                    t.device().to_string(), device_.to_string(), where_));
        specs_.push_back(ArgSpec::of(t));
    }
    roots_ = lower_graph(roots, options_);
    if (!out_strides_.empty() && out_strides_.size() != roots_.size())
        throw InternalError(
            fmt::format("Program: {} output layouts for {} results", out_strides_.size(), roots_.size()));
    for (std::size_t r = 0; r < out_strides_.size(); ++r)
        if (!out_strides_[r].empty() && is_contiguous(roots_[r]->shape(), out_strides_[r]))
            out_strides_[r].clear();
    for (std::size_t r = 0; r < out_strides_.size(); ++r)
        if (!out_strides_[r].empty() && !is_non_overlapping(roots_[r]->shape(), out_strides_[r]))
            overlapping_.push_back(r);
    params_ = std::move(params);
    name_ = std::move(name);
    for (const ir::Node* n : ir::topo_order(roots_)) reductions_ = reductions_ || ir::is_reduction(n->op());
    if (const ir::Node* n = foreign_input(roots_, params_))
        throw Error(
            fmt::format("{}(): the function reads a tensor that is not one of its arguments ({} made at "
                        "{}); pass it as an argument ({})",
                        name_, ir::describe(*n), short_location(n->loc()), where_));
    // An output view that overlaps itself: run() refuses every call of this specialization, so nothing is
    // planned for it (a plan writing lanes into one element is no plan).
    if (!overlapping_.empty()) return;
    // Host tensors: planned and built once for the LLVM back end, or evaluated by run() on the CPU reference.
    if (!device_.is_cuda()) {
        if (!host::use_llvm()) {
            if (env_list_contains("LOOM_EXPLAIN", "fusion"))
                std::fputs(host::explain(nullptr).c_str(), stderr);
            return;
        }
        std::vector<codegen::InputLayout> layouts;
        std::vector<const ir::Node*> sources;
        for (std::size_t k = 0; k < params_.size(); ++k) {
            sources.push_back(params_[k].get());
            layouts.push_back({specs_[k].dtype, specs_[k].strides, false});
        }
        auto compiled = std::make_shared<host::Compiled>();
        bool strided = false;
        for (const Strides& st : out_strides_) strided = strided || !st.empty();
        // Outputs that are views are written at their own strides (run() checks that calls pass those).
        compiled->plan =
            codegen::plan_host(roots_, sources, layouts, host::planning_target(), options_, name_, nullptr,
                               strided ? std::span<const Strides>(out_strides_) : std::span<const Strides>());
        if (env_list_contains("LOOM_EXPLAIN", "fusion"))
            std::fputs(host::explain(&compiled->plan).c_str(), stderr);
        compiled->kernels = host::build_kernels(compiled->plan);
        host_ = std::move(compiled);
        return;
    }
    DeviceGuard guard(device_.index);
    // Partition, plan and build once: run() only binds and launches.
    auto compiled = std::make_shared<gpu::Compiled>();
    compiled->plan = plan_for(device_info(device_.index));
    if (env_list_contains("LOOM_EXPLAIN", "fusion")) std::fputs(compiled->plan.to_string().c_str(), stderr);
    compiled->kernels = gpu::build_kernels(compiled->plan, device_, where_);
    if (options_.capture == CapturePolicy::Auto && gpu::ProgramGraphs::wanted(compiled->plan))
        graphs_ = std::make_shared<gpu::ProgramGraphs>();
    gpu_ = std::move(compiled);
}

GraphStats Program::graph_stats() const {
    return graphs_ ? graphs_->stats() : GraphStats{};
}

std::size_t Program::kernels() const {
    return gpu_ ? gpu_->plan.kernels.size() : 0;
}

codegen::FusionPlan Program::plan_for(const codegen::DeviceInfo& info) const {
    // The placeholders are the sources, with the layouts of the specialization: the kernels depend on the
    // layouts only, so no tensor is bound and the plan holds no memory.
    std::vector<const ir::Node*> sources;
    std::vector<codegen::InputLayout> layouts;
    for (std::size_t k = 0; k < params_.size(); ++k) {
        sources.push_back(params_[k].get());
        layouts.push_back({specs_[k].dtype, specs_[k].strides, specs_[k].aligned16});
    }
    return codegen::plan_fusion(roots_, sources, layouts, info, options_, name_, nullptr, out_strides_);
}

bool Program::outputs_match(std::span<const Tensor* const> outs) const noexcept {
    if (outs.empty()) {  // new, contiguous results
        for (const Strides& st : out_strides_)
            if (!st.empty()) return false;
        return true;
    }
    for (std::size_t r = 0; r < outs.size(); ++r) {
        const Tensor& o = *outs[r];
        if (!o.defined()) return false;
        const bool want_view = r < out_strides_.size() && !out_strides_[r].empty();
        if (want_view ? o.strides() != out_strides_[r] : !o.is_contiguous()) return false;
    }
    return true;
}

void Program::run_on_host(std::span<const Tensor* const> args, std::span<const Tensor* const> outs) const {
    if (host_) {  // the planned host kernels, in order
        std::vector<const Tensor::Impl*> sources(args.size());
        for (std::size_t k = 0; k < args.size(); ++k) sources[k] = args[k]->impl().get();
        host::run_plan(host_->plan, host_->kernels, sources, outs);
        return;
    }
    reference::Overrides bind;
    for (std::size_t k = 0; k < args.size(); ++k) bind.emplace(params_[k]->input_id(), *args[k]);
    const std::vector<Tensor> res = reference::evaluate(roots_, bind);
    for (std::size_t r = 0; r < res.size(); ++r) host::copy_into(*outs[r], res[r]);
}

void Program::run(std::span<const Tensor* const> args, std::span<const Tensor* const> outs,
                  std::source_location call) const {
    const detail::NvtxRange range([&] { return fmt::format("{} ({})", name_, short_location(call)); });
    if (outs.size() != roots_.size())
        throw Error(fmt::format("{}(): {} outputs for {} results ({}; the function is defined at {})", name_,
                                outs.size(), roots_.size(), short_location(call), where_));
    for (std::size_t r = 0; r < outs.size(); ++r) {
        const Tensor& o = *outs[r];
        const bool view = r < out_strides_.size() && !out_strides_[r].empty();
        if (!o.defined() || o.shape() != roots_[r]->shape() || o.dtype() != roots_[r]->dtype() ||
            (view ? o.strides() != out_strides_[r] : !o.is_contiguous()) || !(o.device() == device_))
            throw Error(fmt::format(
                "{}(): output {} is {} but the result is {} on {}, {} ({}; the function is "
                "defined at {})",
                name_, r,
                o.defined()
                    ? fmt::format("{} {} on {}{}", to_string(o.shape()), name(o.dtype()),
                                  o.device().to_string(),
                                  o.is_contiguous() ? std::string()
                                                    : fmt::format(" with strides {}", to_string(o.strides())))
                    : std::string("undefined"),
                ir::describe(*roots_[r]), device_.to_string(),
                view ? fmt::format("strides {}", to_string(out_strides_[r])) : std::string("contiguous"),
                short_location(call), where_));
        if (view && std::find(overlapping_.begin(), overlapping_.end(), r) != overlapping_.end())
            throw Error(fmt::format(
                "{}(): output {} with strides {} overlaps itself (a broadcast view); each element needs "
                "memory of its own ({}; the function is defined at {})",
                name_, r, to_string(o.strides()), short_location(call), where_));
        for (std::size_t q = 0; q < r; ++q)
            if (detail::may_share_memory(*outs[q]->impl(), *o.impl()))
                throw Error(fmt::format(
                    "{}(): outputs {} and {} share memory; each result needs its own ({}; the function "
                    "is defined at {})",
                    name_, q, r, short_location(call), where_));
    }
    if (!device_.is_cuda()) {
        // The host runs the call before it returns: an error of its values (a checked gather's index out of
        // range, which names the body's line) names the call and the function too. On a GPU such an error
        // is raised at the next synchronization, which knows no call (docs/semantics.md, "Gathers").
        try {
            run_on_host(args, outs);
        } catch (const Error& e) {
            if (typeid(e) != typeid(Error)) throw;
            throw Error(fmt::format("{} (in the call of {}() at {}; the function is defined at {})", e.what(),
                                    name_, short_location(call), where_));
        }
        return;
    }
    // The planned kernels, in order: the same launch path as an evaluation (gpu_run.cpp).
    detail::SmallArray<const Tensor::Impl*, 64> sources(args.size());
    for (std::size_t k = 0; k < args.size(); ++k) sources[k] = args[k]->impl().get();
    if (graphs_ && graphs_->run(gpu_->plan, gpu_->kernels, sources.span(), outs, device_, name_, where_))
        return;
    gpu::run_plan(gpu_->plan, gpu_->kernels, sources.span(), outs, device_, where_);
}

std::string Program::cuda_source() const {
    // On a device, the sources of the kernels built at construction; on the host, planned now for the
    // current device (the H200 without a GPU), from the specialization's layouts alone.
    std::string s;
    if (device_.is_cuda()) {
        for (const auto& k : gpu_->kernels) s += k->source.source;
        return s;
    }
    for (const auto& k : gpu::emit_kernels(plan_for(gpu::planning_device()))) s += k.source;
    return s;
}

std::string Program::ptx() const {
    const codegen::DeviceInfo info = device_.is_cuda() ? device_info(device_.index) : gpu::planning_device();
    std::vector<codegen::KernelSource> sources;
    if (gpu_) {
        for (const auto& k : gpu_->kernels) sources.push_back(k->source);
    } else {
        sources = gpu::emit_kernels(plan_for(info));
    }
    return gpu::ptx(sources, info, options_);
}

std::string Program::llvm_source() const {
    // On the host with the LLVM back end, the plan built at construction; else planned now for the host from
    // the specialization's layouts (the placeholders are the sources, as in plan_for).
    const auto text = [](const codegen::HostPlan& plan) {
        std::string s;
        for (std::size_t i = 0; i < plan.kernels.size(); ++i)
            if (codegen::has_code(plan.kernels[i])) s += host::emit_kernel(plan, i).ir;
        return s;
    };
    if (host_) return text(host_->plan);
    std::vector<const ir::Node*> sources;
    std::vector<codegen::InputLayout> layouts;
    for (std::size_t k = 0; k < params_.size(); ++k) {
        sources.push_back(params_[k].get());
        layouts.push_back({specs_[k].dtype, specs_[k].strides, false});
    }
    bool strided = false;
    for (const Strides& st : out_strides_) strided = strided || !st.empty();
    return text(
        codegen::plan_host(roots_, sources, layouts, host::planning_target(), options_, name_, nullptr,
                           strided ? std::span<const Strides>(out_strides_) : std::span<const Strides>()));
}

}  // namespace loom
