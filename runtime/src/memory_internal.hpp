// Internal: device memory outside the stream-ordered pool, for buffers the runtime keeps for the process.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace loom::detail {

/// `bytes` of device memory on `device` from cudaMalloc (not the pool; never freed by Loom: the per-stream
/// split counters), zeroed in `stream`'s order (the stream whose kernels use it). Throws loom::OutOfMemory
/// when the device has no room (or a fault is injected at testing::FaultSite::DeviceAllocation),
/// loom::CudaError otherwise.
void* allocate_zeroed_unpooled(int device, std::size_t bytes, cudaStream_t stream);

}  // namespace loom::detail
