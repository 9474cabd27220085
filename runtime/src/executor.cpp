// Evaluation of IR graphs: placement (host tensors on the LLVM back end or the CPU reference, device tensors
// on the GPU), then the pipeline of the place: host_run.cpp or gpu_run.cpp.
#include "loom/runtime/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "host_internal.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/env.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/nvrtc.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"
#include "lowering.hpp"
#include "nvtx.hpp"
#include "run_slots.hpp"

namespace loom {

namespace {

Device device_of_code(std::int64_t code) {
    return code == ir::kHostDeviceCode ? Device::cpu() : Device::cuda(static_cast<int>(code));
}

// The device every input lives on; inputs on two devices are an error naming both. A graph that reads no
// tensor runs where its factories (arange, full, ...) say, else at `fallback`: factories have no memory, so
// next to tensors they take the tensors' device. `api` begins the error messages.
Device placement(const std::vector<const ir::Node*>& order, const std::source_location& loc,
                 Device fallback = Device::cpu(), bool fallback_over_factories = false,
                 std::string_view api = "eval") {
    const ir::Node* first = nullptr;
    Device dev = fallback;
    const ir::Node* factory = nullptr;
    for (const ir::Node* n : order) {
        if (n->op() == ir::Op::Iota || n->op() == ir::Op::Fill) {
            if (!factory) {
                factory = n;
            } else if (ir::factory_device(*n) != ir::factory_device(*factory)) {
                if (std::none_of(order.begin(), order.end(),
                                 [](const ir::Node* m) { return m->op() == ir::Op::Input; }))
                    throw Error(fmt::format(
                        "{}(): factories on different devices: {} on {} ({}) and {} on {} ({}) ({})", api,
                        ir::describe(*factory), device_of_code(ir::factory_device(*factory)).to_string(),
                        short_location(factory->loc()), ir::describe(*n),
                        device_of_code(ir::factory_device(*n)).to_string(), short_location(n->loc()),
                        short_location(loc)));
            }
        }
    }
    if (factory && !fallback_over_factories) dev = device_of_code(ir::factory_device(*factory));
    for (const ir::Node* n : order) {
        if (n->op() != ir::Op::Input) continue;
        if (!n->payload())
            throw Error(fmt::format("{}(): input {} ({}) is a placeholder with no tensor bound ({})", api,
                                    n->label().empty() ? "<unnamed>" : n->label(), ir::describe(*n),
                                    short_location(loc)));
        const auto* impl = static_cast<const Tensor::Impl*>(n->payload().get());
        const Device d = impl->storage->device;
        if (!first) {
            first = n;
            dev = d;
        } else if (!(d == dev)) {
            throw Error(fmt::format("{}(): inputs on different devices: {} on {} ({}) and {} on {} ({}) ({})",
                                    api, ir::describe(*first), dev.to_string(), short_location(first->loc()),
                                    ir::describe(*n), d.to_string(), short_location(n->loc()),
                                    short_location(loc)));
        }
    }
    return dev;
}

// Where evaluate() runs `roots` (a GPU, else the host), decided before lowering, which turns fills into
// scalars. explain() asks the same, so that it describes the plan an evaluation would run.
Device evaluation_device(const std::vector<ir::NodePtr>& roots, const std::source_location& loc,
                         std::string_view api) {
    return placement(ir::topo_order(roots), loc, Device::cpu(), false, api);
}

std::vector<ir::NodePtr> lower(const std::vector<ir::NodePtr>& roots) {
    return lower_graph(roots, current_options());
}

}  // namespace

std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, std::source_location loc,
                             std::string_view name) {
    if (roots.empty()) return {};
    const detail::NvtxRange range(
        [&] { return fmt::format("eval{}{} ({})", name.empty() ? "" : " ", name, short_location(loc)); });
    const Device dev = evaluation_device(roots, loc, "eval");
    const std::vector<ir::NodePtr> graph = lower(roots);
    if (!dev.is_cuda()) {
        // Host tensors: the LLVM back end unless LOOM_CPU_BACKEND=reference or its module is not there.
        if (host::use_llvm()) return host::evaluate(graph, nullptr, name);
        if (env_list_contains("LOOM_EXPLAIN", "fusion")) std::fputs(host::explain(nullptr).c_str(), stderr);
        return reference::evaluate(graph);
    }
    return gpu::evaluate(graph, dev, loc, nullptr, name);
}

void evaluate_into(const std::vector<ir::NodePtr>& roots, const std::vector<Tensor>& outs,
                   std::source_location loc, std::string_view name) {
    if (roots.size() != outs.size())
        throw Error(fmt::format("assign(): {} outputs for {} arrays ({})", outs.size(), roots.size(),
                                short_location(loc)));
    const detail::NvtxRange range(
        [&] { return fmt::format("assign{}{} ({})", name.empty() ? "" : " ", name, short_location(loc)); });
    const std::vector<ir::NodePtr> graph = lower(roots);
    // A graph that reads no tensor runs where its outputs live (factories included: they take that device).
    const Device dev = placement(ir::topo_order(graph), loc,
                                 outs.empty() || !outs[0].defined() ? Device::cpu() : outs[0].device(),
                                 !outs.empty() && outs[0].defined(), "assign");
    for (std::size_t k = 0; k < roots.size(); ++k) {
        const Tensor& o = outs[k];
        if (!o.defined() || o.shape() != roots[k]->shape() || o.dtype() != roots[k]->dtype())
            throw Error(fmt::format("assign(): output {} does not match the array {} ({})",
                                    o.defined()
                                        ? fmt::format("{} {}", to_string(o.shape()), loom::name(o.dtype()))
                                        : "<undefined>",
                                    ir::describe(*roots[k]), short_location(loc)));
        if (!(o.device() == dev))
            throw Error(fmt::format("assign(): output on {} but the inputs are on {} ({})",
                                    o.device().to_string(), dev.to_string(), short_location(loc)));
        for (std::size_t q = 0; q < k; ++q)
            if (detail::may_share_memory(*outs[q].impl(), *o.impl()))
                throw Error(
                    fmt::format("assign(): outputs {} and {} share memory; each result needs its own ({})", q,
                                k, short_location(loc)));
        if (!o.is_non_overlapping())  // every output is checked before the first is written
            throw Error(fmt::format(
                "assign(): output {} {} with strides {} overlaps itself (a broadcast view); each "
                "element needs memory of its own ({})",
                to_string(o.shape()), loom::name(o.dtype()), to_string(o.strides()), short_location(loc)));
    }
    if (dev.is_cuda()) {
        gpu::evaluate(graph, dev, loc, &outs, name);
        return;
    }
    if (host::use_llvm()) {  // builds every kernel and allocates every buffer before writing an output
        host::evaluate(graph, &outs, name);
        return;
    }
    if (env_list_contains("LOOM_EXPLAIN", "fusion")) std::fputs(host::explain(nullptr).c_str(), stderr);
    const std::vector<Tensor> res = reference::evaluate(graph);
    for (std::size_t k = 0; k < res.size(); ++k) host::copy_into(outs[k], res[k]);
}

std::string cuda_source(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    std::string out;
    for (const auto& k : gpu::generate(lower(roots), name)) out += k.source;
    return out;
}

std::string ptx(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    const codegen::DeviceInfo info = gpu::planning_device();
    const codegen::FusionPlan plan = gpu::plan_bound(lower(roots), info, current_options(), name, nullptr);
    return gpu::ptx(gpu::emit_kernels(plan), info, plan.options);
}

std::string explain(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    // explain() takes no call site: errors name the first root's line, where the user wrote the expression.
    const std::source_location loc = roots.empty() ? std::source_location::current() : roots.front()->loc();
    const Device dev = evaluation_device(roots, loc, "explain");
    const std::vector<ir::NodePtr> graph = lower_graph(roots, current_options(), false);
    const std::string written = explain_written_attention(roots, current_options());
    if (dev.is_cuda()) return written + gpu::explain(graph, name);
    if (!host::use_llvm())
        return written + host::explain(nullptr);  // why every host kernel runs on the reference
    const codegen::HostPlan plan = host::plan_bound(graph, current_options(), name, nullptr);
    return written + host::explain(&plan);
}

CompileReport compile(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const codegen::DeviceInfo info = gpu::planning_device();
    const codegen::FusionPlan plan = gpu::plan_bound(lower(roots), info, current_options(), name, nullptr);
    CompileReport rep;
    rep.codegen_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::vector<codegen::KernelSource> kernels;
    const std::vector<CachedCompile> results =
        gpu::compile_kernels(plan, info, &kernels);  // through the disk cache
    for (std::size_t i = 0; i < kernels.size(); ++i) {
        const nvrtc::Result& r = results[i].result;
        const KernelCompile k{kernels[i].name,     r.arch,       r.is_ptx ? "PTX" : "cubin",
                              r.binary.size(),     r.compile_ms, results[i].lookup_ms,
                              results[i].from_disk};
        if (rep.kernels++ == 0) {
            rep.kernel = k.name;
            rep.arch = k.arch;
            rep.image_kind = k.image_kind;
        }
        rep.image_bytes += k.image_bytes;
        rep.compile_ms += k.compile_ms;
        rep.lookup_ms += k.lookup_ms;
        if (k.from_disk) ++rep.disk_hits;
        rep.per_kernel.push_back(k);
    }
    return rep;
}

std::string CompileReport::to_string() const {
    std::string s;
    for (const KernelCompile& k : per_kernel)
        s += fmt::format(
            "kernel {}: {} {} bytes, {}, {}\n", k.name, k.image_kind, k.image_bytes, k.arch,
            k.from_disk ? std::string("disk cache") : fmt::format("NVRTC {:.1f} ms", k.compile_ms));
    s += fmt::format("{} kernel(s), {} bytes; codegen {:.1f} ms, NVRTC {:.1f} ms, {} from the disk cache\n",
                     kernels, image_bytes, codegen_ms, compile_ms, disk_hits);
    return s;
}

void testing::build_host_kernels(const std::vector<std::vector<ir::NodePtr>>& graphs,
                                 const std::vector<Options>& options) {
    if (graphs.size() != options.size())
        throw Error(fmt::format("testing::build_host_kernels(): {} graphs and {} options", graphs.size(),
                                options.size()));
    if (!host::use_llvm()) return;
    std::vector<codegen::HostPlan> plans;
    plans.reserve(graphs.size());
    for (std::size_t i = 0; i < graphs.size(); ++i) {
        if (graphs[i].empty() ||
            placement(ir::topo_order(graphs[i]), std::source_location::current()).is_cuda())
            continue;
        // A name per graph, so that the kernels of different graphs have functions of different names and
        // make one module; the in-memory cache's keys do not hold names.
        plans.push_back(host::plan_bound(lower(graphs[i]), options[i], fmt::format("g{}", i), nullptr));
    }
    std::vector<const codegen::HostPlan*> ptrs;
    for (const auto& p : plans) ptrs.push_back(&p);
    (void)host::build_kernels(ptrs);
}

}  // namespace loom
