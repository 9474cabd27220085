// Pinned host buffers and tensors, and asynchronous copies on streams.
#include "loom/runtime/pinned.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "loom/runtime/capture.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "nvtx.hpp"

namespace loom {

namespace {

void* pin(std::size_t bytes, const char* api) {
    require_cuda(api);
    if (bytes == 0) return nullptr;
    require_not_capturing(api, fmt::format("pinning {} bytes of host memory (cudaHostAlloc)", bytes),
                          "allocate pinned buffers before cudaStreamBeginCapture");
    if (detail::poisoned_flag()) detail::throw_poisoned();
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        throw OutOfMemory(
            bytes, fmt::format("out of memory: {}: pinning {} bytes of host memory failed (cudaHostAlloc)",
                               api, bytes));
    }
    if (e != cudaSuccess)
        detail::throw_cuda_error(e, "cudaHostAlloc(&p, bytes, cudaHostAllocPortable)", __FILE__, __LINE__);
    return p;
}

void unpin(void* p) noexcept {
    if (p && !detail::poisoned_flag() && !detail::exiting_flag())
        (void)cudaFreeHost(p);  // at exit: goes with the process
}

void require_contiguous(const char* api, const Tensor& t) {
    if (!t.defined()) throw Error(fmt::format("{}: undefined tensor", api));
    if (!t.is_contiguous())
        throw Error(fmt::format(
            "{}: tensor of shape {} with strides {} is not contiguous; copy it with Tensor::to() first", api,
            to_string(t.shape()), to_string(Shape(t.strides()))));
}

void enqueue(void* dst, const void* src, std::size_t bytes, const Tensor& t, cudaStream_t stream) {
    if (bytes == 0) return;
    require_cuda("copy_async()");
    const detail::NvtxRange range([&] { return fmt::format("copy_async {} bytes", bytes); });
    if (t.device().is_cuda()) {
        DeviceGuard guard(t.device().index);
        LOOM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    } else {
        LOOM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    }
}

}  // namespace

PinnedBuffer::PinnedBuffer(std::size_t bytes) : ptr_(pin(bytes, "PinnedBuffer")), bytes_(bytes) {}

PinnedBuffer::~PinnedBuffer() {
    unpin(ptr_);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
        unpin(ptr_);
        ptr_ = std::exchange(o.ptr_, nullptr);
        bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
}

Tensor pinned_empty(const Shape& shape, DType dtype) {
    if (shape.size() > static_cast<std::size_t>(kMaxRank))
        throw Error(fmt::format("pinned_empty(): rank {} of shape {} exceeds the maximum rank {}",
                                shape.size(), to_string(shape), kMaxRank));
    for (auto e : shape)
        if (e < 0) throw Error(fmt::format("pinned_empty(): negative extent in shape {}", to_string(shape)));
    auto st = std::make_shared<Storage>();
    st->bytes = static_cast<std::size_t>(loom::numel(shape)) * itemsize(dtype);
    st->device = Device::cpu();
    st->ptr = pin(st->bytes, "pinned_empty()");
    if (st->ptr) st->release = [](void* p) { unpin(p); };
    auto impl = std::make_shared<Tensor::Impl>();
    impl->storage = std::move(st);
    impl->dtype = dtype;
    impl->shape = shape;
    impl->strides = contiguous_strides(shape);
    return Tensor(std::move(impl));
}

void copy_async(PinnedBuffer& dst, const Tensor& src, cudaStream_t stream) {
    require_contiguous("copy_async()", src);
    if (dst.bytes() < src.nbytes())
        throw Error(fmt::format(
            "copy_async(): pinned buffer of {} bytes is too small for a {} tensor of shape {} ({} bytes)",
            dst.bytes(), name(src.dtype()), to_string(src.shape()), src.nbytes()));
    enqueue(dst.data(), src.data(), src.nbytes(), src, stream);
}

void copy_async(void* dst, const Tensor& src, cudaStream_t stream) {
    require_contiguous("copy_async()", src);
    if (!dst && src.nbytes() > 0) throw Error("copy_async(): null destination pointer");
    enqueue(dst, src.data(), src.nbytes(), src, stream);
}

void copy_async(const Tensor& dst, const PinnedBuffer& src, cudaStream_t stream) {
    require_contiguous("copy_async()", dst);
    if (src.bytes() < dst.nbytes())
        throw Error(fmt::format(
            "copy_async(): pinned buffer of {} bytes is too small for a {} tensor of shape {} ({} bytes)",
            src.bytes(), name(dst.dtype()), to_string(dst.shape()), dst.nbytes()));
    enqueue(dst.data(), src.data(), dst.nbytes(), dst, stream);
}

void copy_async(const Tensor& dst, const void* src, cudaStream_t stream) {
    require_contiguous("copy_async()", dst);
    if (!src && dst.nbytes() > 0) throw Error("copy_async(): null source pointer");
    enqueue(dst.data(), src, dst.nbytes(), dst, stream);
}

void copy_async(const Tensor& dst, const Tensor& src, cudaStream_t stream) {
    require_contiguous("copy_async()", dst);
    require_contiguous("copy_async()", src);
    if (dst.dtype() != src.dtype() || dst.shape() != src.shape())
        throw Error(fmt::format("copy_async(): destination {} {} and source {} {} differ", name(dst.dtype()),
                                to_string(dst.shape()), name(src.dtype()), to_string(src.shape())));
    enqueue(dst.data(), src.data(), src.nbytes(), dst.device().is_cuda() ? dst : src, stream);
}

}  // namespace loom
