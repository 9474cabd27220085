// Internal: device memory outside the stream-ordered pool, for buffers the runtime keeps for the process.
#pragma once

#include <cstddef>

namespace loom::detail {

/// `bytes` of zeroed device memory on `device` from cudaMalloc (not the pool; never freed by Loom: the
/// per-stream split counters). Throws loom::OutOfMemory when the device has no room (or a fault is
/// injected at testing::FaultSite::DeviceAllocation), loom::CudaError otherwise.
void* allocate_zeroed_unpooled(int device, std::size_t bytes);

}  // namespace loom::detail
