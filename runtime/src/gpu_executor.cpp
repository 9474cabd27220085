// The GPU path of evaluation: partition, specialize, fetch or build kernels (kernel_cache), launch.
#include "loom/runtime/gpu_executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <unordered_set>

#include "gpu_internal.hpp"
#include "loom/codegen/kernel_key.hpp"
#include "loom/codegen/pointwise_plan.hpp"
#include "loom/ir/env.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/runtime/capture.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/dump.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/nvrtc.hpp"
#include "loom/runtime/pinned.hpp"
#include "param_buffer.hpp"

namespace loom::gpu {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A readable default kernel name from the ops of a group: "relu_add_mul" (last ops first, at most 3).
std::string default_name(const std::vector<ir::NodePtr>& outputs) {
    std::vector<std::string> names;
    const auto order = ir::topo_order(outputs);
    for (auto it = order.rbegin(); it != order.rend() && names.size() < 3; ++it) {
        const ir::Node* n = *it;
        if (!ir::is_elementwise(n->op())) continue;
        std::string nm(ir::op_name(n->op()));
        if (std::find(names.begin(), names.end(), nm) == names.end()) names.push_back(nm);
    }
    if (names.empty()) return "copy";
    std::string s;
    for (const auto& nm : names) s += (s.empty() ? "" : "_") + nm;
    return s;
}

// The explain text of kernel `index` of `groups` (LOOM_EXPLAIN=fusion, loom::explain()): its nodes with
// the user's lines, what it reads and writes, its vector width, and the boundary to the kernel before it.
std::string explain_group(const std::vector<KernelGroup>& groups, const codegen::PointwisePlan& plan,
                          std::size_t index) {
    const KernelGroup& g = groups[index];
    std::string nodes;
    for (const ir::Node* n : ir::topo_order(g.outputs)) {
        if (!ir::is_elementwise(n->op()) && !ir::is_view(n->op())) continue;
        nodes += fmt::format(" {} ({})", ir::op_name(n->op()), short_location(n->loc()));
    }
    std::string reads;
    for (const ir::Node* in : codegen::pointwise_inputs(g.outputs))
        reads += fmt::format("{}{} {}", reads.empty() ? "" : ", ", in->label().empty() ? "input" : in->label(),
                             ir::describe(*in));
    std::string text = fmt::format(
        "kernel {}  {}   nodes:{}\n          reads {}; writes {} output(s) {}; vector width {}{}; 1 launch\n", index,
        g.name, nodes, reads, g.outputs.size(), to_string(g.outputs[0]->shape()), plan.vector_width,
        plan.vector_registers > 0 ? fmt::format(" (register estimate of 16-byte vectors: {} per thread, above {})",
                                                plan.vector_registers, codegen::kVectorRegisterBudget)
                                  : std::string());
    if (index > 0)
        text += fmt::format("boundary  kernel {} -> kernel {}: outputs of shapes {} and {} have different iteration "
                            "spaces\n",
                            index - 1, index, to_string(groups[index - 1].outputs[0]->shape()),
                            to_string(g.outputs[0]->shape()));
    return text;
}

CompiledKernel build_kernel(const KernelGroup& g, const codegen::PointwisePlan& plan, const codegen::DeviceInfo& info) {
    const auto t0 = Clock::now();
    codegen::KernelSource source = codegen::emit_pointwise(g.name, g.outputs, plan);
    const double codegen_ms = ms_since(t0);
    if (env_list_contains("LOOM_DUMP", "plans")) dump::write(source.name + ".plan.txt", plan.to_string());
    return load_kernel(std::move(source), codegen_ms, info);
}

// True when `out` shares memory with an input of the group that is read through another index map.
bool aliases_input(const Tensor& out, const std::vector<ir::NodePtr>& outputs) {
    for (const ir::Node* in : codegen::pointwise_inputs(outputs)) {
        const Tensor::Impl& t = bound_tensor(*in);
        if (t.storage != out.storage()) continue;
        if (t.offset != out.offset() || t.strides != out.strides() || t.shape != out.shape()) return true;
        // Same index map: an elementwise kernel reads each element before it writes it, in one thread.
        // A view between the input and the output remaps indices, so any view on the path is unsafe.
        for (const ir::Node* n : ir::topo_order(outputs))
            if (ir::is_view(n->op())) return true;
    }
    return false;
}

// True when a kernel launched after group `gi` reads `out`'s memory: it must still see the old values, so
// group `gi` writes through a temporary that is copied back after the last kernel.
bool read_by_later_group(const Tensor& out, const std::vector<KernelGroup>& groups, std::size_t gi) {
    for (std::size_t gj = gi + 1; gj < groups.size(); ++gj)
        for (const ir::Node* in : codegen::pointwise_inputs(groups[gj].outputs))
            if (bound_tensor(*in).storage == out.storage()) return true;
    return false;
}

}  // namespace

const Tensor::Impl& bound_tensor(const ir::Node& input) {
    return *static_cast<const Tensor::Impl*>(input.payload().get());
}

codegen::InputLayout layout_of(const ir::Node& input) {
    if (!input.payload())
        throw Error(fmt::format("eval(): input {} is a placeholder with no tensor bound ({})", ir::describe(input),
                                short_location(input.loc())));
    const Tensor::Impl& t = bound_tensor(input);
    return {t.dtype, t.strides, reinterpret_cast<std::uintptr_t>(address_of(input)) % 16 == 0};
}

const void* address_of(const Tensor::Impl& t) {
    return static_cast<const char*>(t.storage->ptr) + t.offset * static_cast<std::int64_t>(itemsize(t.dtype));
}

const void* address_of(const ir::Node& input) { return address_of(bound_tensor(input)); }

CompiledKernel load_kernel(codegen::KernelSource source, double codegen_ms, const codegen::DeviceInfo& info) {
    CompiledKernel ck;
    ck.source = std::move(source);
    ck.codegen_ms = codegen_ms;
    nvrtc::Options opt;
    opt.cc_major = info.cc_major;
    opt.cc_minor = info.cc_minor;
    opt.line_info = env_list_contains("LOOM_LINEINFO", "1");
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
    ck.scalar_kernel = ck.module.kernel(ck.source.scalar_entry);
    if (!ck.source.vector_entry.empty()) ck.vector_kernel = ck.module.kernel(ck.source.vector_entry);
    ck.load_ms = ms_since(t0);
    return ck;
}

std::vector<KernelGroup> partition(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    for (const ir::Node* n : ir::topo_order(roots)) {
        if (ir::is_reduction(n->op()))
            throw InternalError(fmt::format("partition(): {} ({}) is a reduction; graphs with reductions are "
                                            "partitioned by the reduction path (gpu::evaluate, explain, generate)",
                                            ir::op_name(n->op()), short_location(n->loc())));
    }
    std::vector<KernelGroup> groups;
    for (std::size_t k = 0; k < roots.size(); ++k) {
        KernelGroup* g = nullptr;
        for (auto& existing : groups)
            if (existing.outputs[0]->shape() == roots[k]->shape()) g = &existing;
        if (!g) {
            groups.emplace_back();
            g = &groups.back();
        }
        g->outputs.push_back(roots[k]);
        g->root_index.push_back(k);
    }
    for (std::size_t k = 0; k < groups.size(); ++k) {
        std::string base = name.empty() ? default_name(groups[k].outputs) : std::string(name);
        groups[k].name = groups.size() > 1 ? fmt::format("{}_{}", base, k) : base;
    }
    return groups;
}

std::vector<codegen::InputLayout> input_layouts(const std::vector<ir::NodePtr>& outputs) {
    std::vector<codegen::InputLayout> layouts;
    for (const ir::Node* in : codegen::pointwise_inputs(outputs)) layouts.push_back(layout_of(*in));
    return layouts;
}

std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, Device device, std::source_location loc,
                             const std::vector<Tensor>* outs, std::string_view name) {
    require_cuda("eval()");
    DeviceGuard guard(device.index);
    if (has_reduction(roots)) return evaluate_reductions(roots, device, loc, outs, name);
    const codegen::DeviceInfo& info = device_info(device.index);
    const bool explain = env_list_contains("LOOM_EXPLAIN", "fusion");
    std::vector<Tensor> results(roots.size());
    const auto groups = partition(roots, name);
    const std::string where = short_location(loc);
    std::vector<std::pair<Tensor, Tensor>> copy_back;  // (temporary, user's output), copied after every launch
    // Plan every group first, so that the kernels not yet in memory are built in parallel.
    std::vector<codegen::PlannedPointwise> plans;
    plans.reserve(groups.size());
    for (const KernelGroup& g : groups) plans.push_back(codegen::plan_pointwise(g.outputs, input_layouts(g.outputs), info));
    const auto kernels = kernels_for(groups, plans, device);
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
        const KernelGroup& g = groups[gi];
        const codegen::PlannedPointwise& planned = plans[gi];
        const auto& kernel = kernels[gi];
        if (explain) std::fputs(explain_group(groups, planned.plan, gi).c_str(), stderr);

        std::vector<const void*> in_ptrs;
        for (const ir::Node* in : codegen::pointwise_inputs(g.outputs)) in_ptrs.push_back(address_of(*in));
        std::vector<void*> out_ptrs;
        for (std::size_t k = 0; k < g.outputs.size(); ++k) {
            const ir::Node& root = *g.outputs[k];
            Tensor out;
            if (outs) {
                const Tensor& user = (*outs)[g.root_index[k]];
                if (!user.is_contiguous())
                    throw Error(fmt::format("assign(): output {} {} is not contiguous; Loom writes contiguous "
                                            "outputs ({})", to_string(user.shape()), loom::name(user.dtype()), where));
                if (aliases_input(user, g.outputs) || read_by_later_group(user, groups, gi)) {
                    out = Tensor::empty(root.shape(), root.dtype(), device);
                    copy_back.emplace_back(out, user);
                } else {
                    out = user;
                }
            } else {
                out = Tensor::empty(root.shape(), root.dtype(), device);
            }
            out_ptrs.push_back(out.data());
            results[g.root_index[k]] = outs ? (*outs)[g.root_index[k]] : out;
        }
        launch_group(*kernel, planned, in_ptrs, out_ptrs, g.outputs[0]->numel(), where);
    }
    for (auto& [tmp, user] : copy_back) copy_async(user, tmp);
    return results;
}

std::shared_ptr<const CompiledKernel> kernel_for(const KernelGroup& g, const codegen::PointwisePlan& plan,
                                                 Device device) {
    const codegen::DeviceInfo& info = device_info(device.index);
    const std::uint64_t key = codegen::kernel_key(g.outputs, plan);
    return cached_kernel(key, device.index, [&] {
        detail::require_no_build_in_capture(g.name, short_location(g.outputs[0]->loc()));
        return build_kernel(g, plan, info);
    });
}

std::vector<std::shared_ptr<const CompiledKernel>> kernels_for(std::span<const KernelGroup> groups,
                                                               std::span<const codegen::PlannedPointwise> plans,
                                                               Device device) {
    std::vector<std::shared_ptr<const CompiledKernel>> out(groups.size());
    std::vector<std::size_t> missing;
    for (std::size_t k = 0; k < groups.size(); ++k) {
        out[k] = find_cached_kernel(codegen::kernel_key(groups[k].outputs, plans[k].plan), device.index);
        if (!out[k]) missing.push_back(k);
    }
    if (missing.size() == 1) out[missing[0]] = kernel_for(groups[missing[0]], plans[missing[0]].plan, device);
    if (missing.size() <= 1) return out;
    detail::require_no_build_in_capture(groups[missing[0]].name, short_location(groups[missing[0]].outputs[0]->loc()));
    // Code generation, the disk lookup and NVRTC of independent kernels run concurrently (NVRTC is thread-safe
    // for distinct programs); the in-memory cache still builds each key once.
    std::vector<std::future<std::shared_ptr<const CompiledKernel>>> futures;
    for (std::size_t k : missing)
        futures.push_back(std::async(std::launch::async, [&groups, &plans, device, k] {
            DeviceGuard guard(device.index);
            return kernel_for(groups[k], plans[k].plan, device);
        }));
    std::exception_ptr error;
    for (std::size_t j = 0; j < missing.size(); ++j) {
        try {
            out[missing[j]] = futures[j].get();
        } catch (...) {
            if (!error) error = std::current_exception();  // every build finishes before the first error is thrown
        }
    }
    if (error) std::rethrow_exception(error);
    return out;
}

void launch_group(const CompiledKernel& kernel, const codegen::PlannedPointwise& planned,
                  std::span<const void* const> inputs, std::span<void* const> outputs, std::int64_t numel,
                  std::string_view where) {
    const codegen::Variant v = codegen::select_variant(planned.plan, planned.binding, inputs, outputs);
    const codegen::LaunchConfig lc = planned.plan.launch(numel, v);
    if (lc.grid_x == 0) return;
    // The parameter struct goes on the stack when it is small (every plan short of hundreds of inputs).
    constexpr std::size_t kStackBytes = 4096;
    alignas(16) std::byte stack[kStackBytes];
    std::vector<std::byte> heap;
    std::span<std::byte> params(stack, planned.plan.params.size);
    if (planned.plan.params.size > kStackBytes) {
        heap.resize(planned.plan.params.size);
        params = heap;
    }
    codegen::pack_params(planned.plan, planned.binding, inputs, outputs, params);
    LaunchConfig cfg;
    cfg.grid = {lc.grid_x, 1, 1};
    cfg.block = {lc.block_x, 1, 1};
    const Kernel& k = v == codegen::Variant::Vector ? kernel.vector_kernel : kernel.scalar_kernel;
    if (planned.plan.params_in_memory) return launch_with_params_in_memory(k, cfg, params, where);
    k.launch(cfg, params.data(), params.size(), where);
}

std::string explain(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    if (has_reduction(roots)) return explain_reductions(roots, name);
    const codegen::DeviceInfo info = cuda_available() ? device_info(current_device()) : codegen::DeviceInfo::h200();
    const auto groups = partition(roots, name);
    std::string text;
    for (std::size_t gi = 0; gi < groups.size(); ++gi)
        text += explain_group(groups, codegen::plan_pointwise(groups[gi].outputs, input_layouts(groups[gi].outputs), info).plan, gi);
    return text;
}

std::vector<codegen::KernelSource> generate(const std::vector<ir::NodePtr>& roots, std::string_view name) {
    if (has_reduction(roots)) return generate_reductions(roots, name);
    const codegen::DeviceInfo info = cuda_available() ? device_info(current_device()) : codegen::DeviceInfo::h200();
    std::vector<codegen::KernelSource> out;
    const auto groups = partition(roots, name);
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
        const KernelGroup& g = groups[gi];
        out.push_back(codegen::generate_pointwise(g.name, g.outputs, input_layouts(g.outputs), info));
        if (env_list_contains("LOOM_EXPLAIN", "fusion")) std::fputs(explain_group(groups, out.back().plan, gi).c_str(), stderr);
        if (env_list_contains("LOOM_DUMP", "plans")) dump::write(out.back().name + ".plan.txt", out.back().plan.to_string());
    }
    return out;
}

}  // namespace loom::gpu
