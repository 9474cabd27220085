// Evaluation of IR graphs: placement (host reference or GPU), then the GPU pipeline of gpu_executor.cpp.
#include "loom/runtime/executor.hpp"

#include <fmt/format.h>

#include <chrono>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/nvrtc.hpp"
#include "loom/runtime/reference.hpp"

namespace loom {

namespace {

// The device every input lives on (`fallback` when the graph reads no tensor); inputs on two devices are
// an error naming both.
Device placement(const std::vector<const ir::Node*>& order, const std::source_location& loc,
                 Device fallback = Device::cpu()) {
    const ir::Node* first = nullptr;
    Device dev = fallback;
    for (const ir::Node* n : order) {
        if (n->op() != ir::Op::Input) continue;
        if (!n->payload())
            throw Error(fmt::format("eval(): input {} ({}) is a placeholder with no tensor bound ({})",
                                    n->label().empty() ? "<unnamed>" : n->label(), ir::describe(*n),
                                    short_location(loc)));
        const auto* impl = static_cast<const Tensor::Impl*>(n->payload().get());
        const Device d = impl->storage->device;
        if (!first) {
            first = n;
            dev = d;
        } else if (!(d == dev)) {
            throw Error(fmt::format("eval(): inputs on different devices: {} on {} ({}) and {} on {} ({}) ({})",
                                    ir::describe(*first), dev.to_string(), short_location(first->loc()),
                                    ir::describe(*n), d.to_string(), short_location(n->loc()), short_location(loc)));
        }
    }
    return dev;
}

std::vector<ir::NodePtr> lower(const std::vector<ir::NodePtr>& roots) {
    return ir::run_pipeline(roots, ir::standard_passes());
}

}  // namespace

std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, std::source_location loc, std::string_view name) {
    if (roots.empty()) return {};
    const std::vector<ir::NodePtr> graph = lower(roots);
    const Device dev = placement(ir::topo_order(graph), loc);
    if (!dev.is_cuda()) return reference::evaluate(graph);
    return gpu::evaluate(graph, dev, loc, nullptr, name);
}

void evaluate_into(const std::vector<ir::NodePtr>& roots, const std::vector<Tensor>& outs, std::source_location loc,
                   std::string_view name) {
    if (roots.size() != outs.size())
        throw Error(fmt::format("assign(): {} outputs for {} arrays ({})", outs.size(), roots.size(), short_location(loc)));
    const std::vector<ir::NodePtr> graph = lower(roots);
    // A graph that reads no tensor (all constants) runs where its outputs live.
    const Device dev = placement(ir::topo_order(graph), loc, outs.empty() || !outs[0].defined() ? Device::cpu() : outs[0].device());
    for (std::size_t k = 0; k < roots.size(); ++k) {
        const Tensor& o = outs[k];
        if (!o.defined() || o.shape() != roots[k]->shape() || o.dtype() != roots[k]->dtype())
            throw Error(fmt::format("assign(): output {} does not match the array {} ({})",
                                    o.defined() ? fmt::format("{} {}", to_string(o.shape()), loom::name(o.dtype())) : "<undefined>",
                                    ir::describe(*roots[k]), short_location(loc)));
        if (!(o.device() == dev))
            throw Error(fmt::format("assign(): output on {} but the inputs are on {} ({})", o.device().to_string(),
                                    dev.to_string(), short_location(loc)));
        for (std::size_t q = 0; q < k; ++q)
            if (outs[q].storage() == o.storage() && o.nbytes() > 0 && outs[q].nbytes() > 0)
                throw Error(fmt::format("assign(): outputs {} and {} share memory; each result needs its own ({})", q,
                                        k, short_location(loc)));
        if (!o.is_contiguous())  // every output is checked before the first is written
            throw Error(fmt::format("assign(): output {} {} is not contiguous ({})", to_string(o.shape()),
                                    loom::name(o.dtype()), short_location(loc)));
    }
    if (dev.is_cuda()) {
        gpu::evaluate(graph, dev, loc, &outs, name);
        return;
    }
    const std::vector<Tensor> res = reference::evaluate(graph);
    for (std::size_t k = 0; k < res.size(); ++k)
        memory::copy(outs[k].data(), Device::cpu(), res[k].data(), Device::cpu(), res[k].nbytes());
}

std::string cuda_source(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    std::string out;
    for (const auto& k : gpu::generate(lower(roots), name)) out += k.source;
    return out;
}

std::string explain(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    return gpu::explain(lower(roots), name);
}

CompileReport compile(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const codegen::DeviceInfo info = gpu::planning_device();
    const codegen::FusionPlan plan = gpu::plan_bound(lower(roots), info, current_options(), name, nullptr);
    CompileReport rep;
    rep.codegen_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::vector<codegen::KernelSource> kernels;
    const std::vector<CachedCompile> results = gpu::compile_kernels(plan, info, &kernels);  // through the disk cache
    for (std::size_t i = 0; i < kernels.size(); ++i) {
        const nvrtc::Result& r = results[i].result;
        if (rep.kernels++ == 0) {
            rep.kernel = kernels[i].name;
            rep.arch = r.arch;
            rep.image_kind = r.is_ptx ? "PTX" : "cubin";
        }
        rep.image_bytes += r.binary.size();
        rep.compile_ms += r.compile_ms;
        rep.lookup_ms += results[i].lookup_ms;
        if (results[i].from_disk) ++rep.disk_hits;
    }
    return rep;
}

}  // namespace loom
