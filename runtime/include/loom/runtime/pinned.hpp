// Page-locked (pinned) host memory and asynchronous copies between it and device tensors on a stream,
// so that copies overlap kernels and other copies.
#pragma once

#include <cstddef>
#include <utility>

#include "loom/runtime/cuda_types.hpp"
#include "loom/runtime/stream.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom {

/// An owned block of pinned host memory (cudaHostAlloc, portable across devices), freed with cudaFreeHost.
/// Copies between pinned memory and a device run asynchronously at full bus speed; pageable memory makes
/// cudaMemcpyAsync stage through a driver buffer and return only when the copy is done.
class PinnedBuffer {
  public:
    PinnedBuffer() = default;
    /// Allocates `bytes` of pinned host memory. Throws loom::NoDeviceError without a GPU,
    /// loom::OutOfMemory when the host cannot pin that much, loom::CudaError.
    explicit PinnedBuffer(std::size_t bytes);
    ~PinnedBuffer();
    PinnedBuffer(PinnedBuffer&& o) noexcept
        : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
    PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;

    void* data() { return ptr_; }
    const void* data() const { return ptr_; }
    /// Size in bytes.
    std::size_t bytes() const { return bytes_; }
    template <class T>
    T* as() {
        return static_cast<T*>(ptr_);
    }
    template <class T>
    const T* as() const {
        return static_cast<const T*>(ptr_);
    }

  private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

/// A contiguous host tensor (Device::cpu()) over pinned memory; its storage is freed with cudaFreeHost.
/// Usable wherever a host tensor is, and as either side of copy_async(). Throws as PinnedBuffer does.
Tensor pinned_empty(const Shape& shape, DType dtype);

/// Enqueues a copy of contiguous tensor `src` (any device) into `dst` (at least src.nbytes() bytes) on
/// `stream` and returns at once; the bytes are in `dst` once the stream reaches that point (synchronize
/// the stream or an Event). Throws loom::Error for a non-contiguous tensor or a buffer too small,
/// loom::CudaError.
void copy_async(PinnedBuffer& dst, const Tensor& src, cudaStream_t stream = current_stream());
/// As above into host memory the caller owns (`dst` must hold src.nbytes() bytes; asynchronous only when
/// it is pinned).
void copy_async(void* dst, const Tensor& src, cudaStream_t stream = current_stream());
/// Enqueues a copy of `src` (at least dst.nbytes() bytes) into contiguous tensor `dst` on `stream`. `src`
/// must stay alive and unchanged until the stream has done the copy.
void copy_async(const Tensor& dst, const PinnedBuffer& src, cudaStream_t stream = current_stream());
/// As above from host memory the caller owns.
void copy_async(const Tensor& dst, const void* src, cudaStream_t stream = current_stream());
/// Enqueues a copy between two contiguous tensors of the same dtype and shape, on any devices (for
/// example a pinned_empty() tensor and a device tensor). Throws loom::Error on a mismatch.
void copy_async(const Tensor& dst, const Tensor& src, cudaStream_t stream = current_stream());

}  // namespace loom
