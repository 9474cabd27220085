// Internal: the device side of loom::memory (memory_cuda.cpp; in a host-only build gpu_stubs.cpp, whose
// allocation and copies throw loom::NoDeviceError), and device memory outside the stream-ordered pool, for
// buffers the runtime keeps for the process.
#pragma once

#include <cstddef>
#include <string>

#include "loom/runtime/cuda_types.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::detail {

/// memory::allocate() on CUDA device `device`: stream-ordered pool allocation on the current stream.
void* allocate_device(int device, std::size_t bytes);
/// memory::release() of device memory: stream-ordered on the current stream (deferred past a capture that
/// may not free it); nothing after a sticky error or at exit.
void release_device(int device, void* ptr) noexcept;
/// memory::copy() where either side is a CUDA device (`bytes` > 0).
void copy_device(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);
/// memory::pointer_device() (cpu for null, and for every pointer without a GPU).
Device device_of_pointer(const void* ptr);

/// `bytes` for messages: "512 B", "1.5 MiB".
std::string human_bytes(std::size_t bytes);

/// `bytes` of device memory on `device` from cudaMalloc (not the pool; never freed by Loom: the per-stream
/// split counters), zeroed in `stream`'s order (the stream whose kernels use it). Throws loom::OutOfMemory
/// when the device has no room (or a fault is injected at testing::FaultSite::DeviceAllocation),
/// loom::CudaError otherwise.
void* allocate_zeroed_unpooled(int device, std::size_t bytes, cudaStream_t stream);

}  // namespace loom::detail
