// The GPU path: plan the evaluation (codegen::plan_fusion), build the kernels it names, run it. One build
// function and one launch path serve every kernel family; each family is one arm of run_plan().
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "gpu_internal.hpp"
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
#include "memory_internal.hpp"
#include "parallel.hpp"
#include "param_buffer.hpp"
#include "tensor_map.hpp"

namespace loom::gpu {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

using codegen::Family;
using codegen::FusionPlan;
using codegen::Slot;

// The kernel source of kernel `i` of `plan` (and its plan with LOOM_DUMP=plans).
codegen::KernelSource emit_kernel(const FusionPlan& plan, std::size_t i) {
    const codegen::FusedKernel& k = plan.partition.kernels[i];
    const codegen::GpuKernel& g = plan.gpu[i];
    codegen::KernelSource src;
    std::string plan_text;
    switch (k.family) {
        case Family::Pointwise:
            if (g.tile.plan.active()) {
                src = codegen::emit_tile(k.name, k.outputs, g.pointwise.plan, g.tile.plan);
                plan_text = g.pointwise.plan.describe(false) + g.tile.plan.to_string(g.pointwise.plan);
            } else {
                src = codegen::emit_pointwise(k.name, k.outputs, g.pointwise.plan);
                plan_text = g.pointwise.plan.to_string();
            }
            break;
        case Family::Reduction:
            src = codegen::emit_reduce(k.name, g.reduce);
            plan_text = g.reduce.plan.to_string();
            break;
        case Family::MatMul:
            src = codegen::emit_matmul(k.name, g.matmul);
            plan_text = g.matmul.plan.to_string() + "\nepilogue: " + g.matmul.plan.epilogue.describe(false);
            break;
    }
    if (env_list_contains("LOOM_DUMP", "plans")) dump::write(src.name + ".plan.txt", plan_text);
    return src;
}

CompiledKernel build_kernel(const FusionPlan& plan, std::size_t i, const codegen::DeviceInfo& info) {
    const auto t0 = Clock::now();
    codegen::KernelSource source = emit_kernel(plan, i);
    const double codegen_ms = ms_since(t0);
    const std::size_t bytes = source.param_bytes;
    return load_kernel(std::move(source), codegen_ms, info, plan.options, bytes);
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
    const std::thread::id owner =
        stream == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id();
    static std::mutex mu;
    static std::map<std::tuple<int, unsigned long long, std::thread::id>, unsigned int*>
        buffers;  // 16 KiB each, kept
    std::lock_guard lock(mu);
    unsigned int*& b = buffers[{device, id, owner}];
    if (!b)
        b = static_cast<unsigned int*>(
            detail::allocate_zeroed_unpooled(device, kSplitCounters * sizeof(unsigned int), stream));
    return b;
}

// What a launch needs besides its pointers, made for every kernel of a call before the first is launched,
// so that an allocation (or the upload kernel's build) that fails launches nothing: a split reduction's
// launch shape and workspaces, or the device buffer of parameters beyond the parameter limit.
struct LaunchPrep {
    codegen::LaunchConfig reduce;
    std::vector<Tensor> partials;   // stream-ordered pool memory, freed after the call's kernels
    std::vector<void*> part_ptrs;   // the counters, then one workspace per reduction
    Tensor params;                  // parameters in device memory
    Tensor workspace;               // a matmul's chunk tree (K longer than one chunk), from the pool
    void* workspace_ptr = nullptr;  // its address (or a RunMemory block's)
    void* counters = nullptr;       // a split-K matmul's counters (split_counters_for)
};

bool needs_prep(const FusionPlan& plan, std::size_t k) {
    const codegen::GpuKernel& g = plan.gpu[k];
    switch (plan.partition.kernels[k].family) {
        case Family::Pointwise:
            return g.pointwise.plan.params_in_memory && g.numel > 0;
        case Family::Reduction:
            return g.reduce.plan.split;
        case Family::MatMul:
            return g.matmul.plan.chunked && g.numel > 0;
    }
    return false;
}

// `count` counters that are zero at launch, for a kernel that leaves them zero (split reductions, split-K
// products): a graph's run takes the per-stream counters through `mem` (null when it cannot: then
// mem->unsupported is set); else the stream's split counters, or zeroed pool memory kept in prep.partials.
void* split_counters_for(std::int64_t count, Device device, LaunchPrep& prep, RunMemory* mem) {
    if (mem) {
        void* c = mem->counter(device.index, count);
        if (!c) mem->unsupported = true;
        return c;
    }
    if (unsigned int* c = split_counters(device.index, current_stream(), count)) return c;
    // Zeroed pool memory (the kernel leaves it zero, but its earlier contents are unknown).
    prep.partials.push_back(
        Tensor::empty({static_cast<std::int64_t>(sizeof(unsigned int)) * count}, DType::UInt8, device));
    LOOM_CUDA_CHECK(
        cudaMemsetAsync(prep.partials.back().data(), 0, prep.partials.back().nbytes(), current_stream()));
    return prep.partials.back().data();
}

// The split workspaces of a reduction launch: `ins` in PlannedReduce::inputs order, the element outputs.
void prepare_split(const codegen::PlannedReduce& pr, std::span<const void* const> ins,
                   std::span<void* const> el_outs, Device device, LaunchPrep& prep, RunMemory* mem) {
    prep.reduce = codegen::reduce_launch(pr, ins, el_outs);
    if (prep.reduce.grid_x == 0) return;
    void* c = split_counters_for(codegen::split_counter_count(pr, prep.reduce), device, prep, mem);
    if (!c) return;
    prep.part_ptrs.push_back(c);
    if (mem) {  // a graph's run: blocks of its own
        for (const auto& op : pr.plan.ops)
            prep.part_ptrs.push_back(mem->block(
                codegen::accumulator_bytes(op) * static_cast<std::size_t>(codegen::split_partial_count(pr)),
                device));
        return;
    }
    for (const auto& op : pr.plan.ops) {
        prep.partials.push_back(Tensor::empty(
            {static_cast<std::int64_t>(codegen::accumulator_bytes(op)) * codegen::split_partial_count(pr)},
            DType::UInt8, device));
        prep.part_ptrs.push_back(prep.partials.back().data());
    }
}

// The parameter bytes of one launch: on the stack up to 4 KiB (every plan short of hundreds of inputs).
class ParamBytes {
  public:
    explicit ParamBytes(std::size_t n) : size_(n) {
        if (n > kStack) heap_.resize(n);
    }
    std::span<std::byte> span() { return {size_ > kStack ? heap_.data() : stack_, size_}; }

  private:
    static constexpr std::size_t kStack = 4096;
    alignas(16) std::byte stack_[kStack];
    std::vector<std::byte> heap_;
    std::size_t size_;
};

// Launches `k`, or records the launch in `mem` (and launches it unless mem->launch is false).
void issue(const Kernel& k, const LaunchConfig& cfg, std::span<const std::byte> params,
           std::string_view where, RunMemory* mem) {
    if (mem) {
        mem->record(k, cfg, params);
        if (!mem->launch) {
            // What the launch would set first, set now: a graph's capture then only records the launch.
            if (cfg.shared_bytes > kDefaultDynamicSharedBytes)
                k.set_max_dynamic_shared(cfg.shared_bytes, current_device());
            return;
        }
    }
    k.launch(cfg, params.data(), params.size(), where);
}

// The pointwise arm (tiled or not): `ins` in pointwise_inputs order; `prep` made by run_plan when
// needs_prep().
void launch_pointwise(const CompiledKernel& kernel, const codegen::GpuKernel& g,
                      std::span<const void* const> ins, std::span<void* const> outs, const LaunchPrep* prep,
                      std::string_view where, RunMemory* mem) {
    const codegen::PlannedPointwise& planned = g.pointwise;
    const bool tiled = g.tile.plan.active();  // the tiled kernel: its one entry point, one block per tile
    const codegen::Variant v = tiled ? g.tile.plan.select_variant(planned.plan, planned.binding, ins, outs)
                                     : codegen::select_variant(planned.plan, planned.binding, ins, outs);
    const codegen::LaunchConfig lc =
        tiled ? g.tile.plan.launch(planned.binding) : planned.plan.launch(g.numel, v);
    if (lc.grid_x == 0) return;
    ParamBytes params(planned.plan.params.size);
    codegen::pack_params(planned.plan, planned.binding, ins, outs, params.span());
    LaunchConfig cfg;
    cfg.grid = {lc.grid_x, lc.grid_y, 1};
    cfg.block = {lc.block_x, 1, 1};
    cfg.dependent_launch = true;  // every kernel Loom emits waits for the prior grid first
    const Kernel& k = v == codegen::Variant::Vector ? kernel.vector_kernel : kernel.scalar_kernel;
    if (planned.plan.params_in_memory) {
        if (!prep) throw InternalError("launch_pointwise(): parameters in memory without a reserved buffer");
        return launch_with_params_in_memory(k, cfg, params.span(), prep->params, where);
    }
    issue(k, cfg, params.span(), where, mem);
}

// The reduction arm: `ins` in PlannedReduce::inputs order; the element outputs, then the row outputs; `prep`
// (split plans: the launch shape and workspaces) made by run_plan.
void launch_reduction(const CompiledKernel& kernel, const codegen::PlannedReduce& pr,
                      std::span<const void* const> ins, std::span<void* const> el_outs,
                      std::span<void* const> row_outs, const LaunchPrep* prep, std::string_view where,
                      RunMemory* mem) {
    if (pr.plan.split && !prep)
        throw InternalError("launch_reduction(): a split plan without its workspaces");
    const codegen::LaunchConfig rl = prep ? prep->reduce : codegen::reduce_launch(pr, ins, el_outs);
    if (rl.grid_x == 0) return;
    static const std::vector<void*> no_partials;
    ParamBytes params(codegen::reduce_params_size(pr.plan));
    codegen::pack_reduce_params(pr, ins, el_outs, row_outs, prep ? prep->part_ptrs : no_partials,
                                params.span());
    LaunchConfig cfg;
    cfg.grid = {rl.grid_x, rl.grid_y, 1};
    cfg.block = {rl.block_x, 1, 1};
    cfg.dependent_launch = true;
    issue(rl.vector ? kernel.vector_kernel : kernel.scalar_kernel, cfg, params.span(), where, mem);
}

// The matmul arm: `ins` in PlannedMatmul::inputs order (A's, B's, then the epilogue's; the accumulators'
// entry is null); `prep` holds the chunk tree's workspace when K is longer than a chunk.
void launch_matmul(const CompiledKernel& kernel, const codegen::PlannedMatmul& pm,
                   std::span<const void* const> ins, std::span<void* const> outs, const LaunchPrep* prep,
                   std::string_view where, RunMemory* mem) {
    const codegen::LaunchConfig lc = codegen::matmul_launch(pm);
    if (lc.grid_x == 0) return;
    if (pm.plan.chunked && !prep)
        throw InternalError("launch_matmul(): a chunked product without its workspace");
    const codegen::MatmulLoads loads = codegen::select_matmul_loads(pm, ins);
    ParamBytes params(pm.plan.params.size);
    alignas(64) std::array<std::byte, 2 * codegen::kTensorMapBytes> maps;  // written only for wgmma plans
    if (pm.plan.wgmma) {  // Hopper: the operands' tensor maps (cached by buffer and shape)
        const std::array<codegen::TensorMapSpec, 2> specs = codegen::matmul_tensor_maps(pm, ins);
        detail::encode_tensor_map(
            specs[0], std::span<std::byte, codegen::kTensorMapBytes>(maps.data(), codegen::kTensorMapBytes));
        detail::encode_tensor_map(
            specs[1], std::span<std::byte, codegen::kTensorMapBytes>(maps.data() + codegen::kTensorMapBytes,
                                                                     codegen::kTensorMapBytes));
    }
    codegen::pack_matmul_params(
        pm, ins, outs, pm.plan.chunked ? prep->workspace_ptr : nullptr,
        pm.plan.split_k ? prep->counters : nullptr, loads, params.span(),
        pm.plan.wgmma ? std::span<const std::byte>(maps) : std::span<const std::byte>());
    LaunchConfig cfg;
    cfg.grid = {lc.grid_x, lc.grid_y, lc.grid_z};
    cfg.block = {lc.block_x, 1, 1};
    cfg.shared_bytes = pm.plan.shared_bytes();
    cfg.dependent_launch = true;
    issue(kernel.scalar_kernel, cfg, params.span(), where, mem);  // one entry: the loads are a parameter
}

// Whether pointwise kernel `k` reads source `s` only at the element it writes root `r` to: a graph without
// views, or (a graph with views elsewhere, such as a rank-0 step counter broadcast to every element) a flat
// kernel whose every read of `s` and whose write of `r` is contiguous (element index = flat index).
bool reads_in_place(const FusionPlan& plan, std::size_t k, int s, std::size_t r) {
    const codegen::GpuKernel& g = plan.gpu[k];
    if (!g.has_views) return true;
    if (g.tile.plan.active()) return false;
    const codegen::PointwisePlan& pp = g.pointwise.plan;
    for (const codegen::OperandPlan& o : pp.loads) {
        if (o.input < 0 || static_cast<std::size_t>(o.input) >= g.reads.size()) return false;
        const Slot& in = g.reads[static_cast<std::size_t>(o.input)];
        if (in.kind == Slot::Kind::Source && in.index == s && o.access != codegen::Access::Contiguous)
            return false;
    }
    const auto& writes = plan.partition.kernels[k].writes;
    for (std::size_t o = 0; o < writes.size() && o < pp.outputs.size(); ++o)
        if (writes[o].kind == Slot::Kind::Root && static_cast<std::size_t>(writes[o].index) == r &&
            pp.outputs[o].access != codegen::Access::Contiguous)
            return false;
    return true;
}

// Whether root `r`, written into `out`, must go through a temporary: a source the plan reads shares its
// memory, and a kernel from its writer on reads that source, other than the writer itself reading it in
// place (a pointwise kernel without views, the source with the output's exact layout: each element is
// read before it is written, in one thread).
bool needs_temporary(const FusionPlan& plan, std::span<const Tensor::Impl* const> sources, const Tensor& out,
                     std::size_t r) {
    for (int s : plan.reads) {
        const Tensor::Impl& src = *sources[static_cast<std::size_t>(s)];
        if (src.storage != out.storage()) continue;
        std::size_t writer = plan.gpu.size();
        for (std::size_t k = 0; k < plan.gpu.size() && writer == plan.gpu.size(); ++k)
            for (const Slot& w : plan.partition.kernels[k].writes)
                if (w.kind == Slot::Kind::Root && static_cast<std::size_t>(w.index) == r) writer = k;
        for (std::size_t k = writer; k < plan.gpu.size(); ++k) {
            bool reads = false;
            for (const Slot& in : plan.gpu[k].reads)
                reads = reads || (in.kind == Slot::Kind::Source && in.index == s);
            if (!reads) continue;
            const bool in_place = k == writer && plan.partition.kernels[k].family == Family::Pointwise &&
                                  reads_in_place(plan, k, s, r) && src.offset == out.offset() &&
                                  src.strides == out.strides() && src.shape == out.shape();
            if (!in_place) return true;
        }
    }
    return false;
}

// A temporary with the layout of `user`: contiguous, or the same strides over a storage of the view's span.
Tensor temporary_like(const Tensor& user, Device device) {
    if (user.is_contiguous() || user.numel() == 0) return Tensor::empty(user.shape(), user.dtype(), device);
    std::int64_t lo = 0, hi = 0;
    for (std::size_t k = 0; k < user.shape().size(); ++k)
        (user.strides()[k] < 0 ? lo : hi) += user.strides()[k] * (user.shape()[k] - 1);
    const Tensor block = Tensor::empty({hi - lo + 1}, user.dtype(), device);
    return block.as_strided(user.shape(), user.strides(), -lo);
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

const void* address_of(const Tensor::Impl& t) {
    return static_cast<const char*>(t.storage->ptr) + t.offset * static_cast<std::int64_t>(itemsize(t.dtype));
}

const void* address_of(const ir::Node& input) {
    return address_of(bound_tensor(input));
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
    Kernels out(plan.gpu.size());
    std::vector<std::size_t> missing;
    for (std::size_t k = 0; k < plan.gpu.size(); ++k) {
        out[k] = find_cached_kernel(plan.gpu[k].key, device.index);
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
        out[k] = cached_kernel(plan.gpu[k].key, device.index, [&] { return build_kernel(plan, k, info); });
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

void run_plan(const FusionPlan& plan, const Kernels& kernels, std::span<const Tensor::Impl* const> sources,
              std::span<const Tensor* const> outs, Device device, std::string_view where) {
    run_plan(plan, kernels, sources, outs, device, where, nullptr);
}

void RunMemory::record(const Kernel& k, const LaunchConfig& cfg, std::span<const std::byte> params) {
    if (!records) return;
    if (next_record == records->size()) records->emplace_back();
    LaunchRecord& r = (*records)[next_record++];
    r.kernel = k.handle();
    r.grid = cfg.grid;
    r.block = cfg.block;
    r.shared_bytes = cfg.shared_bytes;
    r.params.assign(params.begin(), params.end());
}

void* RunMemory::block(std::size_t bytes, Device device) {
    if (next_block == blocks.size()) {
        if (is_capturing(current_stream()))
            throw InternalError(
                "RunMemory::block(): a graph's run allocates a block that its first run did not");
        blocks.push_back(Tensor::empty({static_cast<std::int64_t>(std::max<std::size_t>(bytes, 16))},
                                       DType::UInt8, device));
    }
    Tensor& b = blocks[next_block++];
    if (b.nbytes() < bytes)
        throw InternalError("RunMemory::block(): a graph's run asks for a larger block than its first run");
    return b.data();
}

void* RunMemory::counter(int device, std::int64_t needed) {
    if (next_counter == counters.size()) {
        if (is_capturing(current_stream()))
            throw InternalError(
                "RunMemory::counter(): a graph's run takes counters that its first run did not");
        counters.push_back(split_counters(device, current_stream(), needed));
    }
    return counters[next_counter++];
}

void run_plan(const FusionPlan& plan, const Kernels& kernels, std::span<const Tensor::Impl* const> sources,
              std::span<const Tensor* const> outs, Device device, std::string_view where, RunMemory* mem) {
    if (sources.size() != plan.sources || kernels.size() != plan.gpu.size())
        throw InternalError(fmt::format("run_plan(): {} sources and {} kernels for a plan of {} and {}",
                                        sources.size(), kernels.size(), plan.sources, plan.gpu.size()));
    // Outputs: the user's, through a temporary where a later read of a source would see it overwritten.
    SmallArray<void*, 16> targets(outs.size());
    std::vector<std::pair<Tensor, const Tensor*>>
        copy_back;  // allocates only when an output aliases a source
    for (std::size_t i = 0; i < outs.size(); ++i) {
        const Tensor& user = *outs[i];
        if (needs_temporary(plan, sources, user, i)) {
            if (mem) {  // a graph replays fixed outputs: this call runs without it
                mem->unsupported = true;
                return;
            }
            Tensor tmp =
                temporary_like(user, device);  // the plan writes the output's index map: keep its strides
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
        if (mem) {
            temp_base = static_cast<char*>(mem->block(plan.temp_bytes, device));
        } else {
            temps = Tensor::empty({static_cast<std::int64_t>(plan.temp_bytes)}, DType::UInt8, device);
            temp_base = static_cast<char*>(temps.data());
        }
        if (reinterpret_cast<std::uintptr_t>(temp_base) % 16 != 0)
            throw InternalError("run_plan(): pool memory is not 16-byte aligned, as the plans assume");
    }
    auto address = [&](const Slot& s) -> void* {
        const std::size_t i = static_cast<std::size_t>(s.index);
        switch (s.kind) {
            case Slot::Kind::Source:
                return const_cast<void*>(address_of(*sources[i]));
            case Slot::Kind::Temp:
                return temp_base + plan.temps[i].offset;
            case Slot::Kind::Root:
                return targets[i];
            case Slot::Kind::Index:
                return nullptr;  // an iota: computed in the kernel
        }
        return nullptr;
    };
    // Split workspaces and parameter buffers: every allocation of the call happens before its first launch.
    std::vector<LaunchPrep> preps;
    for (std::size_t k = 0; k < plan.gpu.size(); ++k) {
        if (!needs_prep(plan, k)) continue;
        if (preps.empty()) preps.resize(plan.gpu.size());
        const codegen::GpuKernel& g = plan.gpu[k];
        const codegen::FusedKernel& fk = plan.partition.kernels[k];
        if (fk.family == Family::Pointwise) {
            if (mem) {  // the upload kernel's parameters are per call: not replayed by a graph
                mem->unsupported = true;
                return;
            }
            preps[k].params = reserve_param_buffer(g.pointwise.plan.params.size, where);
            continue;
        }
        if (fk.family == Family::MatMul) {  // written before it is read: no zeroing
            const std::size_t bytes = codegen::matmul_workspace_bytes(g.matmul);
            if (mem) {
                preps[k].workspace_ptr = mem->block(bytes, device);
            } else {
                preps[k].workspace = Tensor::empty({static_cast<std::int64_t>(bytes)}, DType::UInt8, device);
                preps[k].workspace_ptr = preps[k].workspace.data();
            }
            if (const std::int64_t counters = codegen::matmul_counter_count(g.matmul);
                counters > 0) {  // split K
                preps[k].counters = split_counters_for(counters, device, preps[k], mem);
                if (!preps[k].counters) return;  // a graph cannot take them: mem->unsupported
            }
            continue;
        }
        SmallArray<const void*, 64> ins(g.reads.size());
        for (std::size_t j = 0; j < g.reads.size(); ++j) ins[j] = address(g.reads[j]);
        SmallArray<void*, 16> o(fk.writes.size());
        for (std::size_t j = 0; j < fk.writes.size(); ++j) o[j] = address(fk.writes[j]);
        prepare_split(g.reduce, ins.span(), o.span(0, fk.group.element_outputs.size()), device, preps[k],
                      mem);
        if (mem && mem->unsupported) return;
    }
    for (std::size_t k = 0; k < plan.gpu.size(); ++k) {
        const codegen::GpuKernel& g = plan.gpu[k];
        const codegen::FusedKernel& fk = plan.partition.kernels[k];
        SmallArray<const void*, 64> ins(g.reads.size());
        for (std::size_t j = 0; j < g.reads.size(); ++j) ins[j] = address(g.reads[j]);
        SmallArray<void*, 16> o(fk.writes.size());
        for (std::size_t j = 0; j < fk.writes.size(); ++j) o[j] = address(fk.writes[j]);
        const LaunchPrep* prep = preps.empty() || !needs_prep(plan, k) ? nullptr : &preps[k];
        switch (fk.family) {
            case Family::Pointwise:
                launch_pointwise(*kernels[k], g, ins.span(), o.span(), prep, where, mem);
                break;
            case Family::Reduction: {
                const std::size_t el = fk.group.element_outputs.size();
                launch_reduction(*kernels[k], g.reduce, ins.span(), o.span(0, el),
                                 o.span(el, fk.writes.size() - el), prep, where, mem);
                break;
            }
            case Family::MatMul:
                launch_matmul(*kernels[k], g.matmul, ins.span(), o.span(), prep, where, mem);
                break;
        }
    }
    for (auto& [tmp, user] : copy_back) copy_back_into(*user, tmp, device);
    // `temps`, the copy-back temporaries and the workspaces in `preps` are stream-ordered pool memory: freed
    // after the kernels that use them.
}

std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, Device device, std::source_location loc,
                             const std::vector<Tensor>* outs, std::string_view name) {
    require_cuda("eval()");
    DeviceGuard guard(device.index);
    const std::string where = short_location(loc);
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
    SmallArray<const Tensor::Impl*, 64> bound(sources.size());
    for (std::size_t k = 0; k < sources.size(); ++k) bound[k] = &bound_tensor(*sources[k]);
    SmallArray<const Tensor*, 16> targets(results.size());
    for (std::size_t i = 0; i < results.size(); ++i) targets[i] = &results[i];
    run_plan(plan, kernels, bound.span(), targets.span(), device, where);
    return results;
}

std::vector<codegen::KernelSource> emit_kernels(const FusionPlan& plan) {
    std::vector<codegen::KernelSource> out;
    for (std::size_t i = 0; i < plan.gpu.size(); ++i) out.push_back(emit_kernel(plan, i));
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
