// The GPU path: plan the evaluation (codegen::plan_fusion), build the kernels it names, run it. One build
// function and one launch path serve every kernel family; each family is one arm of run_plan().
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "gpu_internal.hpp"
#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/codegen/plan/kernel_key.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/env.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/runtime/capture.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/dump.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/nvrtc.hpp"
#include "loom/runtime/pinned.hpp"
#include "loom/runtime/stream.hpp"
#include "parallel.hpp"
#include "run_slots.hpp"

namespace loom::gpu {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

using codegen::FusionPlan;

// The kernel source of kernel `i` of `plan` (and its plan with LOOM_DUMP=plans), from its family object.
codegen::KernelSource emit_kernel(const FusionPlan& plan, std::size_t i) {
    const codegen::FusedKernel& k = plan.partition.kernels[i];
    return std::visit(
        [&](const auto& s) {
            using Object = codegen::GpuFamily<std::decay_t<decltype(s)>>;
            codegen::KernelSource src = Object::emit(k, s);
            if (env_list_contains("LOOM_DUMP", "plans"))
                dump::write(src.name + ".plan.txt", Object::plan_text(s));
            return src;
        },
        plan.kernels[i].schedule);
}

CompiledKernel build_kernel(const FusionPlan& plan, std::size_t i, const codegen::DeviceInfo& info) {
    const auto t0 = Clock::now();
    codegen::KernelSource source = emit_kernel(plan, i);
    const double codegen_ms = ms_since(t0);
    const std::size_t bytes = source.param_bytes;
    return load_kernel(std::move(source), codegen_ms, info, plan.options, bytes);
}

}  // namespace

// Copies an output written through a temporary into the user's tensor, after the last kernel: one copy for
// a contiguous output, else a pointwise kernel that stores into the view (an evaluation of the temporary).
void copy_back_into(const Tensor& user, const Tensor& tmp, Device device) {
    if (user.is_contiguous() && tmp.is_contiguous()) return copy_async(user, tmp);
    const ir::NodePtr in =
        ir::input(tmp.dtype(), tmp.shape(), "copy back", std::static_pointer_cast<const void>(tmp.impl()));
    const std::vector<Tensor> outs{user};
    evaluate({in}, device, std::source_location::current(), &outs, "copy_back");
}

const Tensor::Impl& bound_tensor(const ir::Node& input) {
    return *static_cast<const Tensor::Impl*>(input.payload().get());
}

codegen::InputLayout layout_of(const ir::Node& input) {
    if (!input.payload())
        throw Error(fmt::format("eval(): input {} is a placeholder with no tensor bound ({})",
                                ir::describe(input), short_location(input.loc())));
    const Tensor::Impl& t = bound_tensor(input);
    return {t.dtype, t.strides, reinterpret_cast<std::uintptr_t>(address_of(input)) % 16 == 0};
}

const void* address_of(const ir::Node& input) {
    return detail::address_of(bound_tensor(input));
}

codegen::DeviceInfo planning_device() {
    return cuda_available() ? device_info(current_device()) : codegen::DeviceInfo::h200();
}

namespace {
// What NVRTC compiles `source` with for the device `info` under `options`.
nvrtc::Options compile_options(const codegen::KernelSource& source, const codegen::DeviceInfo& info,
                               const Options& options) {
    nvrtc::Options opt;
    opt.cc_major = info.cc_major;
    opt.cc_minor = info.cc_minor;
    opt.arch_specific = source.arch_specific;
    opt.line_info = options.line_info;
    opt.fast_math = options.fast_math;
    return opt;
}
}  // namespace

CompiledKernel load_kernel(codegen::KernelSource source, double codegen_ms, const codegen::DeviceInfo& info,
                           const Options& options, std::size_t param_bytes) {
    CompiledKernel ck;
    ck.source = std::move(source);
    ck.codegen_ms = codegen_ms;
    const nvrtc::Options opt = compile_options(ck.source, info, options);
    // Disk cache first (the same source, options, arch and versions compiled by any earlier process), NVRTC
    // on a miss.
    const CachedCompile cc = compile_cached(ck.source.name, ck.source.source, opt);
    const nvrtc::Result& r = cc.result;
    ck.compile_ms = r.compile_ms;
    ck.lookup_ms = cc.lookup_ms;
    ck.from_disk = cc.from_disk;
    ck.arch = r.arch;
    const auto t0 = Clock::now();
    ck.module = Module::load(std::string_view(r.binary.data(), r.binary.size()), ck.source.name);
    const long bytes = static_cast<long>(param_bytes);
    ck.scalar_kernel = ck.module.kernel(ck.source.scalar_entry, bytes);
    if (!ck.source.vector_entry.empty()) ck.vector_kernel = ck.module.kernel(ck.source.vector_entry, bytes);
    ck.load_ms = ms_since(t0);
    return ck;
}

void bound_sources(const std::vector<ir::NodePtr>& roots, std::vector<const ir::Node*>& sources,
                   std::vector<codegen::InputLayout>& layouts) {
    for (const ir::Node* n : ir::topo_order(roots)) {
        if (n->op() != ir::Op::Input) continue;
        sources.push_back(n);
        layouts.push_back(layout_of(*n));
    }
}

FusionPlan plan_bound(const std::vector<ir::NodePtr>& roots, const codegen::DeviceInfo& info,
                      const Options& options, std::string_view name, std::vector<const ir::Node*>* sources,
                      std::span<const Strides> root_strides) {
    std::vector<const ir::Node*> srcs;
    std::vector<codegen::InputLayout> layouts;
    bound_sources(roots, srcs, layouts);
    bool any = false;
    for (const Strides& s : root_strides) any = any || !s.empty();
    FusionPlan plan = codegen::plan_fusion(roots, srcs, layouts, info, options, name, nullptr,
                                           any ? root_strides : std::span<const Strides>{});
    if (env_list_contains("LOOM_EXPLAIN", "fusion")) std::fputs(plan.to_string().c_str(), stderr);
    if (sources) *sources = std::move(srcs);
    return plan;
}

Kernels build_kernels(const FusionPlan& plan, Device device, std::string_view where) {
    const codegen::DeviceInfo& info = device_info(device.index);
    Kernels out(plan.kernels.size());
    std::vector<std::size_t> missing;
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
        out[k] = find_cached_kernel(plan.kernels[k].key, device.index);
        if (!out[k]) missing.push_back(k);
    }
    if (missing.empty()) return out;
    // Inside stream capture nothing may be built: checked here, on the capturing thread, before any worker.
    detail::require_no_build_in_capture(plan.partition.kernels[missing[0]].name, where);
    // Code generation, the disk lookup and NVRTC of independent kernels run concurrently; the in-memory cache
    // still builds each key once.
    detail::run_concurrently(missing.size(), [&](std::size_t j) {
        const std::size_t k = missing[j];
        DeviceGuard guard(device.index);
        out[k] =
            cached_kernel(plan.kernels[k].key, device.index, [&] { return build_kernel(plan, k, info); });
    });
    return out;
}

std::vector<CachedCompile> compile_kernels(const FusionPlan& plan, const codegen::DeviceInfo& info,
                                           std::vector<codegen::KernelSource>* sources) {
    std::vector<codegen::KernelSource> srcs = emit_kernels(plan);
    std::vector<CachedCompile> out(srcs.size());
    detail::run_concurrently(srcs.size(), [&](std::size_t k) {
        out[k] = compile_cached(srcs[k].name, srcs[k].source, compile_options(srcs[k], info, plan.options));
    });
    if (sources) *sources = std::move(srcs);
    return out;
}

std::string ptx(const std::vector<codegen::KernelSource>& kernels, const codegen::DeviceInfo& info,
                const Options& options) {
    std::vector<std::string> texts(kernels.size());
    detail::run_concurrently(kernels.size(), [&](std::size_t k) {
        texts[k] = nvrtc::ptx(kernels[k].name, kernels[k].source, compile_options(kernels[k], info, options));
    });
    std::string out;
    for (const std::string& t : texts) out += t;
    return out;
}

std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, Device device, std::source_location loc,
                             const std::vector<Tensor>* outs, std::string_view name) {
    const std::string where = short_location(loc);
    require_cuda(fmt::format("eval() ({})", where));
    DeviceGuard guard(device.index);
    std::vector<const ir::Node*> sources;
    std::vector<Strides> root_strides;  // the strides of outputs that are views (empty: contiguous)
    if (outs)  // checked by the caller (executor.cpp): defined, matching, distinct, each non-overlapping
        for (const Tensor& user : *outs)
            root_strides.push_back(user.is_contiguous() ? Strides{} : user.strides());
    const FusionPlan plan =
        plan_bound(roots, device_info(device.index), current_options(), name, &sources, root_strides);
    std::vector<Tensor> results(roots.size());
    for (std::size_t i = 0; i < roots.size(); ++i) {
        if (outs) {
            results[i] = (*outs)[i];
        } else {
            results[i] = Tensor::empty(roots[i]->shape(), roots[i]->dtype(), device);
        }
    }
    const Kernels kernels = build_kernels(plan, device, where);
    detail::SmallArray<const Tensor::Impl*, 64> bound(sources.size());
    for (std::size_t k = 0; k < sources.size(); ++k) bound[k] = &bound_tensor(*sources[k]);
    detail::SmallArray<const Tensor*, 16> targets(results.size());
    for (std::size_t i = 0; i < results.size(); ++i) targets[i] = &results[i];
    run_plan(plan, kernels, bound.span(), targets.span(), device, where);
    return results;
}

std::vector<codegen::KernelSource> emit_kernels(const FusionPlan& plan) {
    std::vector<codegen::KernelSource> out;
    for (std::size_t i = 0; i < plan.kernels.size(); ++i) out.push_back(emit_kernel(plan, i));
    return out;
}

std::string explain(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    std::vector<const ir::Node*> sources;
    std::vector<codegen::InputLayout> layouts;
    bound_sources(roots, sources, layouts);
    return codegen::plan_fusion(roots, sources, layouts, planning_device(), current_options(), name)
        .to_string();
}

std::vector<codegen::KernelSource> generate(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    return emit_kernels(plan_bound(roots, planning_device(), current_options(), name, nullptr));
}

}  // namespace loom::gpu
