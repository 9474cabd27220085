// Tensors: typed, strided views of memory on the host or on a CUDA device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/ir/dtype.hpp"
#include "loom/ir/shape.hpp"
#include "loom/runtime/cuda_types.hpp"

struct DLManagedTensor;  // <dlpack/dlpack.h>, through <loom/runtime/dlpack.hpp>

namespace loom {

enum class DeviceKind : std::uint8_t { CPU, CUDA };

/// Where a tensor's memory lives.
struct Device {
    DeviceKind kind = DeviceKind::CPU;
    int index = 0;
    static Device cpu() { return {DeviceKind::CPU, 0}; }
    static Device cuda(int index = 0) { return {DeviceKind::CUDA, index}; }
    bool is_cuda() const { return kind == DeviceKind::CUDA; }
    bool operator==(const Device&) const = default;
    std::string to_string() const;  // "cpu", "cuda:0"
};

/// A block of memory and how to give it back. Owning storage frees through `release` when the last
/// tensor that uses it goes away; a non-owning view (Tensor::view) has no `release`.
struct Storage {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    Device device;
    std::function<void(void*)> release;  // empty for views of memory the user owns
    Storage() = default;
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
    ~Storage();
};

/// An n-dimensional array: dtype, shape, strides (in elements; 0 for broadcast dimensions) and an offset
/// (in elements) into shared storage. Copying a Tensor copies the handle, not the data.
///
/// Tensor identity is the handle's, not the address: two Tensors made separately over the same memory are
/// different inputs to a graph.
class Tensor {
  public:
    Tensor() = default;

    /// Uninitialized tensor of `shape` and `dtype` on `device` (contiguous, row-major). On CUDA devices the
    /// memory comes from the stream-ordered pool of the current stream. Throws loom::Error naming the
    /// caller's line for a negative extent, rank above 8 or a byte count beyond int64, loom::NoDeviceError
    /// for a CUDA device without a GPU, loom::CudaError / loom::OutOfMemory from the device.
    static Tensor empty(const Shape& shape, DType dtype, Device device,
                        std::source_location loc = std::source_location::current());
    /// Host tensor (device CPU), 64-byte aligned; from 4 MiB on, its pages are advised to be transparent huge
    /// pages (madvise MADV_HUGEPAGE, as NumPy does for its arrays).
    static Tensor host(const Shape& shape, DType dtype) { return empty(shape, dtype, Device::cpu()); }
    /// Non-owning view of memory the caller owns (from their own CUDA code or another library): no copy,
    /// never freed by Loom. `strides` in elements; empty means contiguous row-major. Without `device`, the
    /// pointer's own: the CUDA device whose memory (device or managed) it points into, else the host (host
    /// memory, pinned or not, and every pointer when no GPU is present). Throws loom::Error, naming the
    /// caller's line, for a bad shape, strides of another rank, or a null pointer to a non-empty tensor.
    static Tensor view(void* ptr, const Shape& shape, DType dtype, Strides strides = {},
                       std::optional<Device> device = std::nullopt,
                       std::source_location loc = std::source_location::current());

    bool defined() const { return impl_ != nullptr; }
    DType dtype() const;
    const Shape& shape() const;
    const Strides& strides() const;
    std::int64_t offset() const;  // elements from storage()->ptr to element 0
    int rank() const { return static_cast<int>(shape().size()); }
    std::int64_t numel() const { return loom::numel(shape()); }
    std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * itemsize(dtype()); }
    Device device() const;
    /// Address of element 0 (storage pointer plus offset).
    void* data() const;
    const std::shared_ptr<Storage>& storage() const;
    /// Row-major contiguous with no gaps (size-1 dimensions may have any stride).
    bool is_contiguous() const;

    /// A view of the same storage with new shape, strides (elements) and offset (elements).
    Tensor as_strided(const Shape& shape, const Strides& strides, std::int64_t offset) const;

    // Views: the same memory, no copy (Array has the same operations lazily). Each throws loom::Error naming
    // the operation, the shape, the arguments and the caller's file:line when they do not fit.
    /// Python-style slicing, one {start, stop, step} per leading axis (SliceSpec::kNone for a default;
    /// negative indices count from the end; a negative step walks backwards). An index outside
    /// [-extent, extent] is an error, as for Array::slice.
    Tensor slice(const std::vector<ir::SliceSpec>& spec,
                 std::source_location loc = std::source_location::current()) const;
    /// Dimension k of the result is dimension perm[k] of this tensor.
    Tensor permute(const std::vector<std::int64_t>& perm,
                   std::source_location loc = std::source_location::current()) const;
    /// Swaps the last two axes.
    Tensor transposed(std::source_location loc = std::source_location::current()) const;
    /// The same elements in row-major order with another shape (one extent may be -1, inferred), when
    /// that needs no copy: the dimensions merged or split must be laid out one after the other in memory.
    Tensor reshape(Shape shape, std::source_location loc = std::source_location::current()) const;
    /// Without the size-1 axes (all of them, or `axis` only).
    Tensor squeeze() const;
    Tensor squeeze(std::int64_t axis, std::source_location loc = std::source_location::current()) const;
    /// With a size-1 axis inserted before `axis` (0 ... rank; negative counts from the end).
    Tensor unsqueeze(std::int64_t axis, std::source_location loc = std::source_location::current()) const;
    /// The same bytes as `dtype`: of the same element size, any layout; of another size, the last axis must
    /// be contiguous and its byte length (and the offset's) must divide by the new size (the last extent is
    /// scaled). Element 0 must be aligned for `dtype`.
    Tensor view(DType dtype, std::source_location loc = std::source_location::current()) const;
    /// True when no two elements share memory (no stride-0 dimension of extent above 1, no overlapping rows):
    /// the condition for writing into this tensor.
    bool is_non_overlapping() const;

    /// The elements in row-major order on the host, converted to T as a cast converts (docs/semantics.md,
    /// section 6). One synchronous copy from a device.
    template <class T>
    std::vector<T> to_vector() const {
        std::vector<T> out(static_cast<std::size_t>(numel()));
        copy_converted(out.data(), dtype_of<T>());
        return out;
    }

    /// This tensor on `device`, contiguous, as PyTorch's Tensor.to: when it is already there and contiguous
    /// (and `copy` is false) the result is this tensor's handle, sharing its memory; otherwise a synchronous
    /// copy into new memory. `copy = true` always copies (clone() on the same device). Throws
    /// loom::NoDeviceError naming Tensor::to() and the caller's line for a CUDA device without a GPU.
    Tensor to(Device device, bool copy = false,
              std::source_location loc = std::source_location::current()) const;
    /// A host tensor with contiguous layout (this tensor's handle when it is one already; see to()).
    Tensor to_host(std::source_location loc = std::source_location::current()) const {
        return to(Device::cpu(), false, loc);
    }
    /// A contiguous copy in new memory on the same device: writes to either leave the other as it was.
    Tensor clone(std::source_location loc = std::source_location::current()) const {
        return to(device(), true, loc);
    }

    /// This tensor as a DLManagedTensor for another library (PyTorch's torch.utils.dlpack.from_dlpack, CuPy's
    /// fromDlpack, JAX's jax.dlpack.from_dlpack), without a copy: the same dtype (bool as kDLBool, code 6,
    /// with any DLPack header; <loom/runtime/dlpack.hpp>), shape and strides (elements; never null), `data`
    /// at element 0 with byte_offset 0, device kDLCPU or kDLCUDA with its index. The memory stays alive until
    /// the consumer calls the result's deleter (exactly once), however long Loom's own handles live. Streams:
    /// for a CUDA tensor, Loom records an event on its current stream and makes `consumer_stream` wait for it
    /// (the consumer's work on that stream sees every write Loom issued before; no host synchronization);
    /// without one, the legacy default stream waits (cudaStreamLegacy, what Python's `__dlpack__()` assumes
    /// without a stream). Host tensors are complete when Loom returns them. Throws loom::Error naming
    /// to_dlpack() and the caller's file:line for an undefined tensor, loom::CudaError when a CUDA call of
    /// the handshake fails.
    DLManagedTensor* to_dlpack(std::optional<cudaStream_t> consumer_stream = std::nullopt,
                               std::source_location loc = std::source_location::current()) const;

    /// The value of a one-element tensor (any rank, e.g. a reduction's result), converted to T as a cast
    /// converts; one synchronous copy from a device. Throws loom::Error, naming the caller's line, when the
    /// tensor has another number of elements.
    template <class T>
    T item(std::source_location loc = std::source_location::current()) const {
        check_one_element("Tensor::item()", loc);
        T value{};
        copy_converted(&value, dtype_of<T>());
        return value;
    }

    /// Elements of a host tensor at a logical (row-major) index, converted to double / int64.
    double get_double(std::int64_t linear_index) const;
    std::int64_t get_int(std::int64_t linear_index) const;

    /// Unique id of this tensor handle's implementation (stable while it lives).
    const void* identity() const { return impl_.get(); }

    struct Impl {
        std::shared_ptr<Storage> storage;
        DType dtype = DType::Float32;
        Shape shape;
        Strides strides;
        std::int64_t offset = 0;
        /// The IR input node that stands for this tensor in graphs (weak: the node holds the Impl).
        mutable std::weak_ptr<const void> input_node;
    };
    explicit Tensor(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
    const std::shared_ptr<Impl>& impl() const { return impl_; }

  private:
    /// The dtype that stores C++ type T (bool, int8_t, uint8_t, int32_t, int64_t, float, double).
    template <class T>
    static constexpr DType dtype_of() {
        if constexpr (std::is_same_v<T, bool>)
            return DType::Bool;
        else if constexpr (std::is_same_v<T, std::int8_t>)
            return DType::Int8;
        else if constexpr (std::is_same_v<T, std::uint8_t>)
            return DType::UInt8;
        else if constexpr (std::is_same_v<T, std::int32_t>)
            return DType::Int32;
        else if constexpr (std::is_same_v<T, std::int64_t>)
            return DType::Int64;
        else if constexpr (std::is_same_v<T, float>)
            return DType::Float32;
        else {
            static_assert(std::is_same_v<T, double>,
                          "to_vector<T>: T is bool, int8_t, uint8_t, int32_t, int64_t, float or double");
            return DType::Float64;
        }
    }
    /// Writes numel() elements converted to `to` (row-major) at `dst`.
    void copy_converted(void* dst, DType to) const;
    void check_one_element(const char* api, const std::source_location& loc) const;
    const Impl& checked() const;  // throws loom::Error for an undefined Tensor
    std::shared_ptr<Impl> impl_;
};

}  // namespace loom
