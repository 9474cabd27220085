// Programs: specialize once (lower, partition, plan, compile), then launch with new tensors cheaply.
#include "loom/runtime/program.hpp"

#include <fmt/format.h>

#include "gpu_internal.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/pinned.hpp"
#include "loom/runtime/reference.hpp"

namespace loom {

namespace {

bool is_aligned16(const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.data()) % 16 == 0; }

}  // namespace

bool ArgSpec::matches(const Tensor& t) const {
    return t.defined() && t.dtype() == dtype && t.shape() == shape && t.strides() == strides &&
           is_aligned16(t) == aligned16 && t.device() == device;
}

ArgSpec ArgSpec::of(const Tensor& t) { return {t.dtype(), t.shape(), t.strides(), is_aligned16(t), t.device()}; }

Program::Program(std::vector<ir::NodePtr> roots, std::vector<ir::NodePtr> params, std::span<const Tensor* const> args,
                 std::string name, std::source_location loc)
    : where_(short_location(loc)), loc_(loc) {
    if (params.size() != args.size())
        throw InternalError(fmt::format("Program: {} placeholders for {} arguments", params.size(), args.size()));
    if (args.empty()) throw Error(fmt::format("{}(): a traced function needs at least one tensor argument ({})", name, where_));
    device_ = args[0]->device();
    for (std::size_t k = 0; k < args.size(); ++k) {
        const Tensor& t = *args[k];
        if (!(t.device() == device_))
            throw Error(fmt::format("{}(): argument {} is on {} but argument 0 is on {} ({})", name, k,
                                    t.device().to_string(), device_.to_string(), where_));
        specs_.push_back(ArgSpec::of(t));
    }
    roots_ = ir::run_pipeline(roots, ir::standard_passes());
    params_ = std::move(params);
    name_ = std::move(name);
    for (const ir::Node* n : ir::topo_order(roots_)) {
        if (n->op() != ir::Op::Input) continue;
        bool is_param = false;
        for (const auto& p : params_) is_param = is_param || p.get() == n;
        if (!is_param)
            throw Error(fmt::format("{}(): the function reads a tensor that is not one of its arguments ({} made at "
                                    "{}); pass it as an argument ({})",
                                    name_, ir::describe(*n), short_location(n->loc()), where_));
    }
    // Host tensors: run() evaluates the graph on the CPU reference; nothing is planned or compiled.
    for (const ir::Node* n : ir::topo_order(roots_)) reductions_ = reductions_ || ir::is_reduction(n->op());
    if (device_.is_cuda() && !reductions_) groups_ = plan_groups(true);
    if (device_.is_cuda() && reductions_) {  // partition, plan and build once: run() only binds and launches
        DeviceGuard guard(device_.index);
        auto plan = std::make_shared<gpu::ReductionPlan>(plan_reductions(device_info(device_.index)));
        gpu::build_reduction_kernels(*plan, device_, where_);
        reduce_plan_ = std::move(plan);
    }
}

std::size_t Program::kernels() const { return reduce_plan_ ? reduce_plan_->kernels.size() : groups_.size(); }

gpu::ReductionPlan Program::plan_reductions(const codegen::DeviceInfo& info) const {
    // The placeholders are the sources, with the layouts of the specialization: the kernels depend on the
    // layouts only, so no tensor is bound and the plan holds no memory.
    std::vector<const ir::Node*> sources;
    std::vector<codegen::InputLayout> layouts;
    for (std::size_t k = 0; k < params_.size(); ++k) {
        sources.push_back(params_[k].get());
        layouts.push_back({specs_[k].dtype, specs_[k].strides, specs_[k].aligned16});
    }
    return gpu::plan_reductions(roots_, sources, layouts, name_, info);
}

std::vector<Program::Group> Program::plan_groups(bool compile) const {
    const codegen::DeviceInfo info = device_.is_cuda() ? device_info(device_.index) : codegen::DeviceInfo::h200();
    std::vector<Group> groups;
    for (const gpu::KernelGroup& kg : gpu::partition(roots_, name_)) {
        Group g;
        g.group = kg;
        std::vector<codegen::InputLayout> layouts;
        for (const ir::Node* in : codegen::pointwise_inputs(kg.outputs)) {
            int arg = -1;
            for (std::size_t k = 0; k < params_.size(); ++k)
                if (params_[k].get() == in) arg = static_cast<int>(k);
            if (arg < 0)
                throw Error(fmt::format("{}(): the function reads a tensor that is not one of its arguments ({} {}); "
                                        "pass it as an argument ({})",
                                        name_, ir::describe(*in), short_location(in->loc()), where_));
            const ArgSpec& s = specs_[static_cast<std::size_t>(arg)];
            layouts.push_back({s.dtype, s.strides, s.aligned16});
            g.arg_of_input.push_back(arg);
        }
        g.planned = codegen::plan_pointwise(kg.outputs, layouts, info);
        g.numel = kg.outputs[0]->numel();
        groups.push_back(std::move(g));
    }
    if (compile) {  // kernels not yet in memory are built in parallel
        std::vector<gpu::KernelGroup> kgs;
        std::vector<codegen::PlannedPointwise> plans;
        for (const Group& g : groups) {
            kgs.push_back(g.group);
            plans.push_back(g.planned);
        }
        const auto kernels = gpu::kernels_for(kgs, plans, device_);
        for (std::size_t k = 0; k < groups.size(); ++k) groups[k].kernel = kernels[k];
    }
    return groups;
}

void Program::launch(const Group& g, std::span<const Tensor* const> args, std::span<void* const> outs) const {
    constexpr std::size_t kMaxFast = 64;
    const void* in_stack[kMaxFast];
    std::vector<const void*> in_heap;
    std::span<const void*> ins(in_stack, g.arg_of_input.size());
    if (g.arg_of_input.size() > kMaxFast) {
        in_heap.resize(g.arg_of_input.size());
        ins = in_heap;
    }
    for (std::size_t k = 0; k < g.arg_of_input.size(); ++k) ins[k] = args[static_cast<std::size_t>(g.arg_of_input[k])]->data();
    gpu::launch_group(*g.kernel, g.planned, ins, outs, g.numel, where_);
}

void Program::run(std::span<const Tensor* const> args, std::span<const Tensor* const> outs,
                  std::source_location call) const {
    if (outs.size() != roots_.size())
        throw Error(fmt::format("{}(): {} outputs for {} results ({}; the function is defined at {})", name_, outs.size(),
                                roots_.size(), short_location(call), where_));
    bool alias = false;
    for (std::size_t r = 0; r < outs.size(); ++r) {
        const Tensor& o = *outs[r];
        if (!o.defined() || o.shape() != roots_[r]->shape() || o.dtype() != roots_[r]->dtype() || !o.is_contiguous() ||
            !(o.device() == device_))
            throw Error(fmt::format("{}(): output {} is {} but the result is {} on {}, contiguous ({}; the function is "
                                    "defined at {})",
                                    name_, r,
                                    o.defined() ? fmt::format("{} {} on {}", to_string(o.shape()), name(o.dtype()),
                                                              o.device().to_string())
                                                : std::string("undefined"),
                                    ir::describe(*roots_[r]), device_.to_string(), short_location(call), where_));
        for (const Tensor* a : args) alias = alias || a->storage() == o.storage();
        for (std::size_t q = 0; q < r; ++q) alias = alias || outs[q]->storage() == o.storage();
    }
    if (!device_.is_cuda()) {
        reference::Overrides bind;
        for (std::size_t k = 0; k < args.size(); ++k) bind.emplace(params_[k]->input_id(), *args[k]);
        const std::vector<Tensor> res = reference::evaluate(roots_, bind);
        for (std::size_t r = 0; r < res.size(); ++r)
            memory::copy(outs[r]->data(), Device::cpu(), res[r].data(), Device::cpu(), res[r].nbytes());
        return;
    }
    // Copies back from temporaries happen after the last launch: a later kernel may read an argument
    // that an earlier kernel's output aliases.
    if (reduce_plan_) {  // the planned kernels, in order (gpu_reduce.cpp: the same launches as an evaluation)
        DeviceGuard guard(device_.index);
        gpu::SmallArray<const Tensor::Impl*, 64> sources(args.size());
        for (std::size_t k = 0; k < args.size(); ++k) sources[k] = args[k]->impl().get();
        gpu::launch_reductions(*reduce_plan_, sources.span(), outs, device_, where_);
        return;
    }
    std::vector<std::pair<Tensor, const Tensor*>> copy_back;  // used only when outputs alias arguments
    for (const Group& g : groups_) {
        gpu::SmallArray<void*, 16> ptrs(g.group.outputs.size());
        for (std::size_t k = 0; k < g.group.outputs.size(); ++k) {
            const Tensor& o = *outs[g.group.root_index[k]];
            if (alias) {
                Tensor tmp = Tensor::empty(o.shape(), o.dtype(), device_);
                ptrs[k] = tmp.data();
                copy_back.emplace_back(std::move(tmp), &o);
            } else {
                ptrs[k] = o.data();
            }
        }
        launch(g, args, ptrs.span());
    }
    for (auto& [tmp, o] : copy_back) copy_async(*o, tmp);
}

std::string Program::cuda_source() const {
    std::string s;
    if (reductions_) {
        // On a device, the sources of the kernels built at construction; on the host, planned now for the
        // current device (the H200 without a GPU), from the specialization's layouts alone.
        if (reduce_plan_) {
            for (const auto& k : reduce_plan_->kernels) s += k.kernel->source.source;
            return s;
        }
        const codegen::DeviceInfo info = cuda_available() ? device_info(current_device()) : codegen::DeviceInfo::h200();
        for (const auto& k : gpu::emit_reductions(plan_reductions(info))) s += k.source;
        return s;
    }
    if (!device_.is_cuda()) {
        for (const Group& g : plan_groups(false)) s += codegen::emit_pointwise(g.group.name, g.group.outputs, g.planned.plan).source;
        return s;
    }
    for (const Group& g : groups_) s += g.kernel->source.source;
    return s;
}

}  // namespace loom
