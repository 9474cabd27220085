// DLPack interop (dlpack.hpp): from_dlpack() wraps a producer's DLManagedTensor in a Tensor that owns its
// deleter; Tensor::to_dlpack() hands a Tensor out in a DLManagedTensor that keeps Loom's memory alive. Both
// check what they are given and order the two sides' streams by an event.
#include "loom/runtime/dlpack.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cuda_internal.hpp"
#include "loom/ir/error.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/stream.hpp"

namespace loom {

namespace dlpack {

DLDataType dtype_to_dlpack(DType dtype) {
    const auto dl = [](std::uint8_t code, int bits) {
        return DLDataType{code, static_cast<std::uint8_t>(bits), 1};
    };
    switch (dtype) {
        case DType::Bool:
            return dl(kBoolCode, 8);  // kDLBool, which DLPack 0.6's header does not name
        case DType::Int8:
            return dl(kDLInt, 8);
        case DType::UInt8:
            return dl(kDLUInt, 8);
        case DType::Int32:
            return dl(kDLInt, 32);
        case DType::Int64:
            return dl(kDLInt, 64);
        case DType::Float16:
            return dl(kDLFloat, 16);
        case DType::BFloat16:
            return dl(kDLBfloat, 16);
        case DType::Float32:
            return dl(kDLFloat, 32);
        case DType::Float64:
            return dl(kDLFloat, 64);
    }
    throw InternalError(fmt::format("dlpack: dtype {} has no DLPack code", static_cast<int>(dtype)));
}

std::optional<DType> dtype_from_dlpack(DLDataType t) {
    if (t.lanes != 1) return std::nullopt;
    const int bits = t.bits;
    switch (t.code) {
        case kDLInt:
            if (bits == 8) return DType::Int8;
            if (bits == 32) return DType::Int32;
            if (bits == 64) return DType::Int64;
            return std::nullopt;
        case kDLUInt:
            if (bits == 8) return DType::UInt8;
            return std::nullopt;
        case kDLFloat:
            if (bits == 16) return DType::Float16;
            if (bits == 32) return DType::Float32;
            if (bits == 64) return DType::Float64;
            return std::nullopt;
        case kDLBfloat:
            if (bits == 16) return DType::BFloat16;
            return std::nullopt;
        case kBoolCode:
            if (bits == 8) return DType::Bool;
            return std::nullopt;
        default:
            return std::nullopt;
    }
}

}  // namespace dlpack

namespace {

std::string code_name(std::uint8_t code) {
    switch (code) {
        case kDLInt:
            return "kDLInt";
        case kDLUInt:
            return "kDLUInt";
        case kDLFloat:
            return "kDLFloat";
        case kDLOpaqueHandle:
            return "kDLOpaqueHandle";
        case kDLBfloat:
            return "kDLBfloat";
        case kDLComplex:
            return "kDLComplex";
        case dlpack::kBoolCode:
            return "kDLBool";
        default:
            return fmt::format("code {}", code);
    }
}

std::string device_name(DLDeviceType type) {
    switch (static_cast<int>(type)) {
        case kDLCPU:
            return "kDLCPU";
        case kDLCUDA:
            return "kDLCUDA";
        case kDLCUDAHost:
            return "kDLCUDAHost";
        case kDLOpenCL:
            return "kDLOpenCL";
        case kDLVulkan:
            return "kDLVulkan";
        case kDLMetal:
            return "kDLMetal";
        case kDLROCM:
            return "kDLROCM";
        case kDLROCMHost:
            return "kDLROCMHost";
        case kDLCUDAManaged:
            return "kDLCUDAManaged";
        default:
            return fmt::format("device type {}", static_cast<int>(type));
    }
}

[[noreturn]] void fail(const std::source_location& loc, const std::string& message) {
    throw Error(fmt::format("from_dlpack(): {} ({})", message, short_location(loc)));
}

DType checked_dtype(DLDataType t, const std::source_location& loc) {
    if (const auto d = dlpack::dtype_from_dlpack(t)) return *d;
    const std::string what =
        fmt::format("DLPack dtype {} of {} bits and {} lanes", code_name(t.code), t.bits, t.lanes);
    if (t.lanes != 1)
        fail(loc, fmt::format("{}: vector dtypes are not supported; Loom takes one lane", what));
    fail(loc, fmt::format("{} has no Loom dtype (Loom takes kDLInt 8/32/64, kDLUInt 8, kDLFloat 16/32/64, "
                          "kDLBfloat 16, kDLBool 8)",
                          what));
}

Device checked_device(const DLTensor& t, void* element0, const std::source_location& loc) {
    switch (static_cast<int>(t.device.device_type)) {
        case kDLCPU:
        case kDLCUDAHost:  // pinned host memory: a host tensor
            return Device::cpu();
        case kDLCUDA:
            if (t.device.device_id < 0)
                fail(loc, fmt::format("kDLCUDA device id {} is negative", t.device.device_id));
            // A GPU tensor without a usable GPU is refused here, naming the import, not at its first use.
            require_cuda(fmt::format("from_dlpack() of a kDLCUDA tensor ({})", short_location(loc)));
            return Device::cuda(t.device.device_id);
        case kDLCUDAManaged:  // DLPack gives id 0: the device is the pointer's own
            return memory::pointer_device(element0);
        default:
            fail(loc,
                 fmt::format("DLPack device {} (id {}) is not supported; Loom takes kDLCPU, kDLCUDAHost, "
                             "kDLCUDA and kDLCUDAManaged",
                             device_name(t.device.device_type), t.device.device_id));
    }
}

// The shape and strides of `t`, and the lowest and highest element offsets from element 0 they reach.
struct Extent {
    Shape shape;
    Strides strides;
    std::int64_t lo = 0, hi = 0;
};

Extent checked_extent(const DLTensor& t, std::size_t item, const std::source_location& loc) {
    if (t.ndim < 0 || t.ndim > kMaxRank)
        fail(loc, fmt::format("rank {} is outside 0 to {}", t.ndim, kMaxRank));
    if (t.ndim > 0 && !t.shape) fail(loc, fmt::format("a null shape for rank {}", t.ndim));
    Extent e;
    e.shape.assign(t.shape, t.shape + t.ndim);
    for (const std::int64_t n : e.shape)
        if (n < 0) fail(loc, fmt::format("negative extent in shape {}", to_string(e.shape)));
    e.strides = t.strides ? Strides(t.strides, t.strides + t.ndim) : contiguous_strides(e.shape);
    if (loom::numel(e.shape) == 0) return e;
    bool overflow = false;
    for (std::size_t k = 0; k < e.shape.size(); ++k) {
        std::int64_t reach = 0;
        overflow = overflow || __builtin_mul_overflow(e.strides[k], e.shape[k] - 1, &reach);
        overflow =
            overflow || __builtin_add_overflow(reach < 0 ? e.lo : e.hi, reach, reach < 0 ? &e.lo : &e.hi);
    }
    std::int64_t span = 0, bytes = 0;
    overflow = overflow || __builtin_sub_overflow(e.hi, e.lo, &span) ||
               __builtin_add_overflow(span, 1, &span) ||
               __builtin_mul_overflow(span, static_cast<std::int64_t>(item), &bytes);
    if (overflow)
        fail(loc, fmt::format("shape {} with strides {} reaches elements beyond a 64-bit byte count",
                              to_string(e.shape), to_string(e.strides)));
    return e;
}

// The producer's tensor, handed back through its deleter when the last Loom handle goes (armed once nothing
// can throw any more, so that a failed from_dlpack() leaves it to the caller).
struct ProducerTensor {
    std::function<void()> release;
    ProducerTensor() = default;
    ProducerTensor(const ProducerTensor&) = delete;
    ProducerTensor& operator=(const ProducerTensor&) = delete;
    ~ProducerTensor() {
        if (release) release();
    }
};

// A Tensor over the memory `t` describes, which calls `release` when its last handle goes.
Tensor wrap(const DLTensor& t, std::optional<cudaStream_t> producer_stream, std::function<void()> release,
            const std::source_location& loc) {
    const DType dtype = checked_dtype(t.dtype, loc);
    const std::size_t item = itemsize(dtype);
    const Extent e = checked_extent(t, item, loc);
    if (t.byte_offset % item != 0)
        fail(loc, fmt::format("byte_offset {} is not a multiple of the {} bytes of a {} element",
                              t.byte_offset, item, name(dtype)));
    auto* element0 = static_cast<std::byte*>(t.data) + t.byte_offset;
    if (loom::numel(e.shape) > 0 && !t.data)
        fail(loc, fmt::format("a null data pointer for the non-empty shape {}", to_string(e.shape)));
    if (reinterpret_cast<std::uintptr_t>(element0) % item != 0)
        fail(loc,
             fmt::format("element 0 at {} (data {} + byte_offset {}) is not aligned to the {} bytes of a {} "
                         "element",
                         static_cast<const void*>(element0), t.data, t.byte_offset, item, name(dtype)));
    const Device device = checked_device(t, element0, loc);

    if (producer_stream && device.is_cuda()) {  // Loom's current stream waits for the producer's
        DeviceGuard guard(device.index);
        Event ready(false);
        ready.record(*producer_stream);
        ready.wait(current_stream());
    } else if (producer_stream && t.device.device_type == kDLCUDAHost) {  // pinned memory a stream may
        synchronize(*producer_stream);  // write: host kernels read it at once, so the host waits
    }

    // The storage begins at the lowest element the view reaches, so that views of it are checked against it.
    auto st = std::make_shared<Storage>();
    st->ptr = element0 + e.lo * static_cast<std::int64_t>(item);
    st->bytes = loom::numel(e.shape) == 0 ? 0 : static_cast<std::size_t>(e.hi - e.lo + 1) * item;
    st->device = device;
    auto owner = std::make_shared<ProducerTensor>();
    st->release = [owner](void*) {};  // the deleter runs in ~ProducerTensor, when the storage goes
    auto impl = std::make_shared<Tensor::Impl>();
    impl->dtype = dtype;
    impl->shape = e.shape;
    impl->strides = e.strides;
    impl->offset = -e.lo;
    impl->storage = std::move(st);
    owner->release = std::move(release);
    return Tensor(std::move(impl));
}

}  // namespace

Tensor from_dlpack(DLManagedTensor* managed, std::optional<cudaStream_t> producer_stream,
                   std::source_location loc) {
    if (!managed) fail(loc, "a null DLManagedTensor");
    return wrap(
        managed->dl_tensor, producer_stream,
        [managed] {
            if (managed->deleter) managed->deleter(managed);
        },
        loc);
}

Tensor from_dlpack(dlpack::ManagedTensorVersioned* managed, std::optional<cudaStream_t> producer_stream,
                   std::source_location loc) {
    if (!managed) fail(loc, "a null DLManagedTensorVersioned");
    if (managed->version.major != dlpack::kMajorVersion)
        fail(loc, fmt::format("DLPack version {}.{} is not supported; Loom takes versioned tensors of major "
                              "version {}",
                              managed->version.major, managed->version.minor, dlpack::kMajorVersion));
    return wrap(
        managed->dl_tensor, producer_stream,
        [managed] {
            if (managed->deleter) managed->deleter(managed);
        },
        loc);
}

namespace {

// What a managed tensor from Loom holds: the tensor (its memory stays alive), the shape and strides DLPack
// points into.
template <class Managed>
struct Exported {
    Managed managed{};
    Tensor tensor;
    std::vector<std::int64_t> shape, strides;
};

template <class Managed>
void delete_exported(Managed* self) {
    delete static_cast<Exported<Managed>*>(self->manager_ctx);
}

// `t` in a new managed tensor of type `Managed`, after the consumer's stream waits for Loom's work on it.
template <class Managed>
Exported<Managed>* exported(const Tensor& tensor, std::optional<cudaStream_t> consumer_stream,
                            std::string_view api, const std::source_location& loc) {
    if (!tensor.defined())
        throw Error(fmt::format("{}(): an undefined Tensor ({})", api, short_location(loc)));
    const Device dev = tensor.device();
    if (dev.is_cuda()) {  // the consumer's stream waits for what Loom issued on its current stream
        require_cuda(fmt::format("{}() of a {} tensor ({})", api, dev.to_string(), short_location(loc)));
        DeviceGuard guard(dev.index);
        Event ready(false);
        ready.record(current_stream());
        ready.wait(consumer_stream ? *consumer_stream : detail::legacy_stream());
    }
    auto out = std::make_unique<Exported<Managed>>();
    out->tensor = tensor;
    out->shape.assign(tensor.shape().begin(), tensor.shape().end());
    out->strides.assign(tensor.strides().begin(), tensor.strides().end());
    DLTensor& t = out->managed.dl_tensor;
    t.data = tensor.data();
    t.device = dev.is_cuda() ? DLDevice{kDLCUDA, dev.index} : DLDevice{kDLCPU, 0};
    t.ndim = tensor.rank();
    t.dtype = dlpack::dtype_to_dlpack(tensor.dtype());
    t.shape = out->shape.data();
    t.strides = out->strides.data();
    t.byte_offset = 0;
    out->managed.manager_ctx = out.get();
    out->managed.deleter = &delete_exported<Managed>;
    return out.release();
}

}  // namespace

DLManagedTensor* Tensor::to_dlpack(std::optional<cudaStream_t> consumer_stream,
                                   std::source_location loc) const {
    return &exported<DLManagedTensor>(*this, consumer_stream, "to_dlpack", loc)->managed;
}

dlpack::ManagedTensorVersioned* to_dlpack_versioned(const Tensor& t,
                                                    std::optional<cudaStream_t> consumer_stream,
                                                    std::source_location loc) {
    auto* out = exported<dlpack::ManagedTensorVersioned>(t, consumer_stream, "to_dlpack_versioned", loc);
    out->managed.version = {dlpack::kMajorVersion, 0};
    out->managed.flags = 0;
    return &out->managed;
}

}  // namespace loom
