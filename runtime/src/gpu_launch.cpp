// run_plan on the GPU: one launch path for every kernel family. Each kernel's family object
// (codegen/cuda/kernel_family.hpp) says what a launch needs (parameters, counters, workspaces) and binds it
// to the call's pointers; this file allocates the scratch before the first launch, encodes the tensor maps,
// uploads parameters that pass the parameter limit, and launches (or records the launch for a CUDA graph).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "gather_errors.hpp"
#include "gpu_internal.hpp"
#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/ir/error.hpp"
#include "loom/runtime/capture.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/stream.hpp"
#include "memory_internal.hpp"
#include "param_buffer.hpp"
#include "run_slots.hpp"
#include "tensor_map.hpp"

namespace loom::gpu {

namespace {

using codegen::FusionPlan;
using detail::SmallArray;

// Split counters that stay zero between launches: the block that completes a counter resets it, so a
// buffer zeroed once serves every later split launch on the same stream (launches on one stream run one
// after another; each stream has its own buffer, so kernels on two streams never share counters). This
// saves a cudaMemsetAsync before every split launch. Returns null inside stream capture (nothing may be
// allocated then; the caller zeroes pool memory instead, which the graph records) and for launches needing
// more counters than the buffer holds (inner splits need rows x (groups of 256 chunks + 1); past 4096, rows
// of tens of millions of elements, a memset is cheap against the reads).
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

// The scratch of one launch, allocated for every kernel of a call before the first is launched, so that an
// allocation (or the upload kernel's build) that fails launches nothing.
struct KernelScratch {
    std::vector<Tensor> blocks;     // stream-ordered pool memory, freed after the call's kernels
    std::vector<void*> workspaces;  // LaunchNeeds::workspaces, in order (pool or RunMemory blocks)
    void* counters = nullptr;
    Tensor params;  // parameters in device memory
};

// `count` counters that are zero at launch, for a kernel that leaves them zero (split reductions, split-K
// products): a graph's run takes the per-stream counters through `mem` (null when it cannot: then
// mem->unsupported is set); else the stream's split counters, or zeroed pool memory kept in `s.blocks`.
void* counters_for(std::int64_t count, Device device, KernelScratch& s, RunMemory* mem) {
    if (mem) {
        void* c = mem->counter(device.index, count);
        if (!c) mem->unsupported = true;
        return c;
    }
    if (unsigned int* c = split_counters(device.index, current_stream(), count)) return c;
    // Zeroed pool memory (the kernel leaves it zero, but its earlier contents are unknown).
    s.blocks.push_back(
        Tensor::empty({static_cast<std::int64_t>(sizeof(unsigned int)) * count}, DType::UInt8, device));
    LOOM_CUDA_CHECK(cudaMemsetAsync(s.blocks.back().data(), 0, s.blocks.back().nbytes(), current_stream()));
    return s.blocks.back().data();
}

// Allocates what `needs` asks for into `s`. Returns false when a graph's run cannot take it
// (mem->unsupported is then set).
bool allocate_scratch(const codegen::LaunchNeeds& needs, Device device, std::string_view where,
                      KernelScratch& s, RunMemory* mem) {
    if (needs.params_in_memory) {
        if (mem) {  // the upload kernel's parameters are per call: not replayed by a graph
            mem->unsupported = true;
            return false;
        }
        s.params = reserve_param_buffer(needs.param_bytes, where);
    }
    if (needs.counters > 0) {
        s.counters = counters_for(needs.counters, device, s, mem);
        if (!s.counters) return false;
    }
    for (const std::size_t bytes : needs.workspaces) {
        if (mem) {  // a graph's run: blocks of its own
            s.workspaces.push_back(mem->block(bytes, device));
            continue;
        }
        s.blocks.push_back(Tensor::empty({static_cast<std::int64_t>(bytes)}, DType::UInt8, device));
        s.workspaces.push_back(s.blocks.back().data());
    }
    return true;
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

// Encodes the launch's tensor maps (Hopper products) into the parameters at their offsets.
void encode_maps(const codegen::BoundLaunch& b, std::span<std::byte> params) {
    for (int m = 0; m < b.map_count; ++m) {
        alignas(64) std::array<std::byte, codegen::kTensorMapBytes>
            map;  // the driver wants 64-byte alignment
        detail::encode_tensor_map(b.maps[static_cast<std::size_t>(m)], map);
        const std::size_t at = b.map_offsets[static_cast<std::size_t>(m)];
        if (at + map.size() > params.size())
            throw InternalError("run_plan(): a tensor map past the parameters");
        std::memcpy(params.data() + at, map.data(), map.size());
    }
}

// Binds kernel `g` to its pointers and scratch and launches it through its family object.
void launch_kernel(const CompiledKernel& kernel, const codegen::GpuKernel& g,
                   const codegen::LaunchNeeds& needs, codegen::KernelPointers p, const KernelScratch* s,
                   std::string_view where, RunMemory* mem) {
    if (needs.needs_scratch() && !s) throw InternalError("run_plan(): a launch without its scratch");
    const codegen::LaunchScratch scratch{
        s ? s->counters : nullptr, s ? std::span<void* const>(s->workspaces) : std::span<void* const>()};
    ParamBytes params(needs.param_bytes);
    const codegen::BoundLaunch b = std::visit(
        [&](const auto& f) {
            return codegen::GpuFamily<std::decay_t<decltype(f)>>::bind(f, p, scratch, params.span());
        },
        g.schedule);
    if (b.config.grid_x == 0) return;  // nothing to do
    encode_maps(b, params.span());
    LaunchConfig cfg;
    cfg.grid = {b.config.grid_x, b.config.grid_y, b.config.grid_z};
    cfg.block = {b.config.block_x, 1, 1};
    cfg.shared_bytes = b.shared_bytes;
    cfg.dependent_launch = true;  // every kernel Loom emits waits for the prior grid first
    const Kernel& entry = b.config.vector ? kernel.vector_kernel : kernel.scalar_kernel;
    if (needs.params_in_memory)
        return launch_with_params_in_memory(entry, cfg, params.span(), s->params, where);
    issue(entry, cfg, params.span(), where, mem);
}

codegen::LaunchNeeds needs_of(const codegen::GpuKernel& g, codegen::KernelPointers p) {
    return std::visit(
        [&](const auto& f) { return codegen::GpuFamily<std::decay_t<decltype(f)>>::needs(f, p); },
        g.schedule);
}

}  // namespace

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
              std::span<const Tensor* const> outs, Device device, std::string_view where) {
    run_plan(plan, kernels, sources, outs, device, where, nullptr);
}

void run_plan(const FusionPlan& plan, const Kernels& kernels, std::span<const Tensor::Impl* const> sources,
              std::span<const Tensor* const> outs, Device device, std::string_view where, RunMemory* mem) {
    if (sources.size() != plan.sources || kernels.size() != plan.kernels.size())
        throw InternalError(fmt::format("run_plan(): {} sources and {} kernels for a plan of {} and {}",
                                        sources.size(), kernels.size(), plan.sources, plan.kernels.size()));
    // Outputs: the user's, through a temporary where a later read of a source would see it overwritten.
    SmallArray<void*, 16> targets(outs.size());
    std::vector<std::pair<Tensor, const Tensor*>>
        copy_back;  // allocates only when an output aliases a source
    const auto in_place = [&](std::size_t k, int s, std::size_t r) {
        return codegen::reads_in_place(plan, k, s, r);
    };
    for (std::size_t i = 0; i < outs.size(); ++i) {
        const Tensor& user = *outs[i];
        if (detail::needs_temporary(plan, sources, user, i, in_place)) {
            if (mem) {  // a graph replays fixed outputs: this call runs without it
                mem->unsupported = true;
                return;
            }
            // The plan writes the output's index map: the temporary keeps its strides.
            Tensor tmp = detail::temporary_like(user, device);
            targets[i] = tmp.data();
            copy_back.emplace_back(std::move(tmp), &user);
        } else {
            targets[i] = user.data();
        }
    }
    // Every temporary in one pool block, each at its planned offset.
    Tensor temps;
    detail::RunSlots slots{sources, targets.span(), nullptr, plan.temps};
    if (plan.temp_bytes > 0) {
        if (mem) {
            slots.temp_base = static_cast<char*>(mem->block(plan.temp_bytes, device));
        } else {
            temps = Tensor::empty({static_cast<std::int64_t>(plan.temp_bytes)}, DType::UInt8, device);
            slots.temp_base = static_cast<char*>(temps.data());
        }
        if (reinterpret_cast<std::uintptr_t>(slots.temp_base) % 16 != 0)
            throw InternalError("run_plan(): pool memory is not 16-byte aligned, as the plans assume");
    }
    // What each launch needs, and its scratch: every allocation of the call happens before its first launch.
    SmallArray<codegen::LaunchNeeds, 8> needs(plan.kernels.size());
    std::vector<KernelScratch> scratch;
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
        SmallArray<const void*, 64> ins(plan.kernels[k].reads.size());
        SmallArray<void*, 16> o(plan.partition.kernels[k].writes.size());
        needs[k] = needs_of(plan.kernels[k], detail::kernel_pointers(plan, k, slots, ins.span(), o.span()));
        if (!needs[k].needs_scratch()) continue;
        if (scratch.empty()) scratch.resize(plan.kernels.size());
        if (!allocate_scratch(needs[k], device, where, scratch[k], mem)) return;  // mem->unsupported
    }
    // Kernels with checked gathers record an out-of-range index in the device's error word, which the next
    // synchronization reads (gather_errors.hpp); it is allocated (once per device) before the first launch.
    void* error_word = nullptr;
    for (std::size_t k = 0; k < plan.kernels.size(); ++k)
        if (needs[k].error_word && !error_word) error_word = detail::gather_error_word();
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
        SmallArray<const void*, 64> ins(plan.kernels[k].reads.size());
        SmallArray<void*, 16> o(plan.partition.kernels[k].writes.size());
        codegen::KernelPointers p = detail::kernel_pointers(plan, k, slots, ins.span(), o.span());
        if (needs[k].error_word) p.error_word = error_word;
        launch_kernel(*kernels[k], plan.kernels[k], needs[k], p, scratch.empty() ? nullptr : &scratch[k],
                      where, mem);
    }
    for (auto& [tmp, user] : copy_back) copy_back_into(*user, tmp, device);
    // `temps`, the copy-back temporaries and the scratch blocks are stream-ordered pool memory: freed after
    // the kernels that use them.
}

}  // namespace loom::gpu
