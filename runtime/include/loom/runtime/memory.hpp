// Device memory primitives used by Tensor: allocation from the current stream's pool, release, and copies.
#pragma once

#include <cstddef>

#include "loom/runtime/tensor.hpp"

namespace loom::memory {

/// Allocates `bytes` on `device` (CUDA: stream-ordered pool allocation on the current stream, 256-byte
/// aligned; CPU: 64-byte aligned host memory). Throws loom::OutOfMemory or loom::CudaError.
void* allocate(Device device, std::size_t bytes);
/// Gives memory from allocate() back (CUDA: stream-ordered on the current stream).
void release(Device device, void* ptr) noexcept;
/// Copies `bytes` between any two devices; returns when the copy is complete (synchronous).
void copy(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);
/// The device whose memory `ptr` points into: the CUDA device of device or managed memory, else the host
/// (host memory, pinned or not, and every pointer when no GPU is present). Throws loom::CudaError when the
/// query itself fails.
Device pointer_device(const void* ptr);

}  // namespace loom::memory
