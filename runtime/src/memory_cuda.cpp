// Device memory (memory.cpp has the host's and the dispatch): stream-ordered pool allocation on CUDA devices
// (trim and retry once before OutOfMemory), stream-ordered release (deferred when a capture may not free),
// synchronous copies to and from devices, and pool statistics.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <utility>
#include <vector>

#include "faults_internal.hpp"
#include "gather_errors.hpp"
#include "loom/runtime/capture.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/stream.hpp"
#include "memory_internal.hpp"
#include "nvtx.hpp"

namespace loom {

namespace {

/// Per-device pool set-up, done once: the device's default pool keeps freed memory cached (release
/// threshold = max), so steady-state allocation never returns memory to the OS or asks the driver again.
struct PoolState {
    std::once_flag once;
    cudaMemPool_t pool = nullptr;  // null when the device has no memory pools (then cudaMalloc is used)
    std::size_t total = 0;         // device memory in bytes
};

PoolState& pool_state(int device) {
    static const int n = device_count();
    static const std::unique_ptr<PoolState[]> states(new PoolState[static_cast<std::size_t>(n > 0 ? n : 1)]);
    if (device < 0 || device >= n)
        throw Error(fmt::format("memory: device cuda:{} does not exist ({} CUDA devices)", device, n));
    PoolState& s = states[static_cast<std::size_t>(device)];
    std::call_once(s.once, [&] {
        int supported = 0;
        LOOM_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
        std::size_t free_b = 0;
        LOOM_CUDA_CHECK(cudaMemGetInfo(&free_b, &s.total));
        if (supported) {
            LOOM_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&s.pool, device));
            std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
            LOOM_CUDA_CHECK(cudaMemPoolSetAttribute(s.pool, cudaMemPoolAttrReleaseThreshold, &threshold));
        }
    });
    return s;
}

[[noreturn]] void throw_oom(int device, std::size_t bytes, const char* why) {
    std::string usage;
    try {
        const PoolStats s = pool_stats(device);
        usage =
            fmt::format("; Loom's pool has {} in use and {} reserved; the device has {} free of {}",
                        detail::human_bytes(s.used_bytes), detail::human_bytes(s.reserved_bytes),
                        detail::human_bytes(s.device_free_bytes), detail::human_bytes(s.device_total_bytes));
    } catch (const Error&) {
        usage = "; memory use could not be queried";
    }
    throw OutOfMemory(bytes, fmt::format("out of memory: allocating {} bytes ({}) on cuda:{} failed{}{}",
                                         bytes, detail::human_bytes(bytes), device, why, usage));
}

// Stream capture (docs/graph-capture.md). A cudaFreeAsync captured into a graph must free
// an allocation made by that graph. So the addresses allocated while the current stream was capturing
// (graph allocations) are remembered, and memory allocated before a capture and released during it is
// freed later, when a release or an allocation runs outside any capture.
struct CaptureFrees {
    std::mutex mutex;
    std::unordered_set<void*> graph_allocations;
    std::vector<std::pair<int, void*>> deferred;  // (device, pointer) to free after the capture
    std::atomic<bool> any{false};                 // either is non-empty: the fast path skips the lock
};
CaptureFrees& capture_frees() {
    static CaptureFrees* c = new CaptureFrees;  // never destroyed: tensors may be released during exit
    return *c;
}

void note_graph_allocation(void* p) {
    CaptureFrees& c = capture_frees();
    std::lock_guard lock(c.mutex);
    c.graph_allocations.insert(p);
    c.any = true;
}

// Removes `p` from the graph allocations; true when it was one.
bool take_graph_allocation(void* p) {
    CaptureFrees& c = capture_frees();
    if (!c.any) return false;
    std::lock_guard lock(c.mutex);
    const bool found = c.graph_allocations.erase(p) > 0;
    c.any = !c.graph_allocations.empty() || !c.deferred.empty();
    return found;
}

void defer_free(int device, void* p) {
    CaptureFrees& c = capture_frees();
    std::lock_guard lock(c.mutex);
    c.deferred.emplace_back(device, p);
    c.any = true;
}

// Gives `ptr` back on `stream` (the pool) or at once (no pool). Throws loom::CudaError (a sticky error is
// recorded first).
void free_now(int device, void* ptr, cudaStream_t stream) {
    if (detail::poisoned_flag()) return;
    DeviceGuard guard(device);
    const cudaError_t e = pool_state(device).pool ? cudaFreeAsync(ptr, stream) : cudaFree(ptr);
    if (e == cudaSuccess || e == cudaErrorCudartUnloading) return;
    detail::throw_cuda_error(e, "cudaFreeAsync(ptr, stream)", __FILE__, __LINE__);
}

// Frees what was released during a capture, stream-ordered on `stream` (not capturing).
void free_deferred(cudaStream_t stream) {
    CaptureFrees& c = capture_frees();
    if (!c.any) return;
    std::vector<std::pair<int, void*>> todo;
    {
        std::lock_guard lock(c.mutex);
        todo.swap(c.deferred);
        c.any = !c.graph_allocations.empty();
    }
    for (auto [device, p] : todo) free_now(device, p, stream);
}

}  // namespace

void* detail::allocate_device(int device, std::size_t bytes) {
    if (!cuda_available()) require_cuda(fmt::format("allocating {} bytes on cuda:{}", bytes, device));
    if (device < 0 || device >= device_count())
        throw Error(fmt::format("allocating {} bytes on cuda:{}: no such device ({} CUDA devices)", bytes,
                                device, device_count()));
    DeviceGuard guard(device);
    PoolState& s = pool_state(device);
    if (bytes > s.total) throw_oom(device, bytes, " (more than the device's memory)");
    void* p = nullptr;
    const cudaStream_t stream = current_stream();
    const bool capturing = is_capturing(stream);
    if (capturing && !s.pool)
        require_not_capturing(fmt::format("allocating {} bytes on cuda:{}", bytes, device),
                              "cudaMalloc (the device has no stream-ordered memory pool)");
    if (!capturing) free_deferred(stream);
    if (detail::should_fail(testing::FaultSite::DeviceAllocation))
        throw_oom(device, bytes, " (a fault injected by loom::testing::inject_fault)");
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (detail::poisoned_flag()) detail::throw_poisoned();
        const cudaError_t e = s.pool ? cudaMallocAsync(&p, bytes, stream) : cudaMalloc(&p, bytes);
        if (e == cudaSuccess) {
            if (capturing) note_graph_allocation(p);  // a graph allocation node: freed inside the graph
            return p;
        }
        if (e != cudaErrorMemoryAllocation)
            detail::throw_cuda_error(e,
                                     s.pool ? "cudaMallocAsync(&p, bytes, stream)" : "cudaMalloc(&p, bytes)",
                                     __FILE__, __LINE__);
        (void)cudaGetLastError();  // out of memory is not sticky: clear it
        if (capturing)
            throw_oom(device, bytes, " while the stream was being captured (the pool is not trimmed then)");
        if (attempt == 0) trim_pool(device);  // give cached blocks back, then retry once
    }
    throw_oom(device, bytes, " after the pool was trimmed and the request retried");
}

void* detail::allocate_zeroed_unpooled(int device, std::size_t bytes, cudaStream_t stream) {
    if (!cuda_available()) require_cuda(fmt::format("allocating {} bytes on cuda:{}", bytes, device));
    DeviceGuard guard(device);
    if (detail::should_fail(testing::FaultSite::DeviceAllocation))
        throw_oom(device, bytes, " (a fault injected by loom::testing::inject_fault)");
    if (detail::poisoned_flag()) detail::throw_poisoned();
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();  // out of memory is not sticky: clear it
        throw_oom(device, bytes, " (cudaMalloc)");
    }
    if (e != cudaSuccess) detail::throw_cuda_error(e, "cudaMalloc(&p, bytes)", __FILE__, __LINE__);
    // Zeroed on the stream that uses the memory, so that its kernels see the zeros: a cudaMemset on the
    // default stream is not ordered before the kernels of a non-blocking stream, and cudaMalloc can return
    // memory a freed allocation left non-zero.
    const cudaError_t z = cudaMemsetAsync(p, 0, bytes, stream);
    if (z != cudaSuccess) {
        (void)cudaFree(p);
        detail::throw_cuda_error(z, "cudaMemsetAsync(p, 0, bytes, stream)", __FILE__, __LINE__);
    }
    return p;
}

PoolStats pool_stats(int index) {
    require_cuda("pool_stats()");
    DeviceGuard guard(index);
    PoolState& s = pool_state(index);
    PoolStats out;
    if (s.pool) {
        std::uint64_t used = 0, reserved = 0;
        LOOM_CUDA_CHECK(cudaMemPoolGetAttribute(s.pool, cudaMemPoolAttrUsedMemCurrent, &used));
        LOOM_CUDA_CHECK(cudaMemPoolGetAttribute(s.pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
        out.used_bytes = used;
        out.reserved_bytes = reserved;
    }
    LOOM_CUDA_CHECK(cudaMemGetInfo(&out.device_free_bytes, &out.device_total_bytes));
    return out;
}

void trim_pool(int index) {
    require_cuda("trim_pool()");
    require_not_capturing("trim_pool()", "synchronizing the device (cudaDeviceSynchronize)");
    DeviceGuard guard(index);
    PoolState& s = pool_state(index);
    LOOM_CUDA_CHECK(cudaDeviceSynchronize());  // pending stream-ordered frees complete first
    if (s.pool) LOOM_CUDA_CHECK(cudaMemPoolTrimTo(s.pool, 0));
}

void detail::release_device(int device, void* ptr) noexcept {
    // After a sticky error the context is gone, and at exit the process is: the memory goes with it.
    if (detail::poisoned_flag() || detail::exiting_flag()) return;
    try {
        DeviceGuard guard(device);
        const cudaStream_t stream = current_stream();
        const bool graph_allocation = take_graph_allocation(ptr);
        if (is_capturing(stream)) {
            // A graph frees only its own allocations (a free node); anything else waits for the capture's
            // end.
            if (graph_allocation && pool_state(device).pool)
                free_now(device, ptr, stream);
            else
                defer_free(device, ptr);
            return;
        }
        free_deferred(stream);
        free_now(device, ptr, stream);
    } catch (...) {
    }
}

void detail::copy_device(void* dst, Device dst_device, const void* src, Device src_device,
                         std::size_t bytes) {
    const Device dev = dst_device.is_cuda() ? dst_device : src_device;
    if (!cuda_available())
        require_cuda(fmt::format("copying {} bytes from {} to {}", bytes, src_device.to_string(),
                                 dst_device.to_string()));
    require_not_capturing(
        fmt::format("copying {} bytes from {} to {}", bytes, src_device.to_string(), dst_device.to_string()),
        "a synchronous copy", "use copy_async() with pinned host memory inside a capture");
    DeviceGuard guard(dev.index);
    const detail::NvtxRange range([&] {
        return fmt::format("copy {} bytes {} -> {}", bytes, src_device.to_string(), dst_device.to_string());
    });
    const cudaStream_t stream = current_stream();
    // cudaMemcpyDefault: the direction follows from the pointers (unified virtual addressing).
    LOOM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    LOOM_CUDA_CHECK(cudaStreamSynchronize(stream));
    detail::check_gather_errors(stream);
}

Device detail::device_of_pointer(const void* ptr) {
    if (!ptr || !cuda_available()) return Device::cpu();
    cudaPointerAttributes attributes{};
    LOOM_CUDA_CHECK(cudaPointerGetAttributes(&attributes, ptr));
    const bool on_device =
        attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
    return on_device ? Device::cuda(attributes.device) : Device::cpu();
}

}  // namespace loom
