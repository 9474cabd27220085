// Tensor: handles, views, host element access and copies between devices.
#include "loom/runtime/tensor.hpp"

#include <fmt/format.h>

#include <cstring>

#include "loom/ir/error.hpp"
#include "loom/ir/half.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/memory.hpp"

namespace loom {

std::string Device::to_string() const {
    return kind == DeviceKind::CPU ? std::string("cpu") : fmt::format("cuda:{}", index);
}

Storage::~Storage() {
    if (release && ptr) release(ptr);
}

namespace {

// " (file:line)" of the caller, or nothing for an API without a call site; built only for a message.
std::string at(const std::source_location* loc) {
    return loc ? fmt::format(" ({})", short_location(*loc)) : std::string();
}

void check_shape(const char* api, const Shape& shape, DType dtype,
                 const std::source_location* loc = nullptr) {
    if (shape.size() > static_cast<std::size_t>(kMaxRank))
        throw Error(fmt::format("{}: rank {} of shape {} exceeds the maximum rank {}{}", api, shape.size(),
                                to_string(shape), kMaxRank, at(loc)));
    std::int64_t n = 1;
    bool overflow = false;
    for (auto e : shape) {
        if (e < 0)
            throw Error(fmt::format("{}: negative extent in shape {}{}", api, to_string(shape), at(loc)));
        overflow = overflow || __builtin_mul_overflow(n, e, &n);
    }
    std::int64_t bytes = 0;
    if (overflow || __builtin_mul_overflow(n, static_cast<std::int64_t>(itemsize(dtype)), &bytes))
        throw Error(fmt::format("{}: shape {} {} has more elements or bytes than a 64-bit count can hold{}",
                                api, to_string(shape), name(dtype), at(loc)));
}

std::int64_t storage_offset_of(const Tensor& t, std::int64_t linear) {
    std::int64_t off = 0;
    for (int k = t.rank() - 1; k >= 0; --k) {
        const auto e = t.shape()[static_cast<std::size_t>(k)];
        off += (linear % e) * t.strides()[static_cast<std::size_t>(k)];
        linear /= e;
    }
    return off;
}

}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, std::source_location loc) {
    check_shape("Tensor::empty()", shape, dtype, &loc);
    if (device.is_cuda() && !cuda_available())
        require_cuda(fmt::format("Tensor::empty() on {} ({})", device.to_string(), short_location(loc)));
    auto st = std::make_shared<Storage>();
    st->bytes = static_cast<std::size_t>(loom::numel(shape)) * itemsize(dtype);
    st->device = device;
    if (st->bytes > 0) {
        st->ptr = memory::allocate(device, st->bytes);
        st->release = [device](void* p) { memory::release(device, p); };
    }
    auto impl = std::make_shared<Impl>();
    impl->storage = std::move(st);
    impl->dtype = dtype;
    impl->shape = shape;
    impl->strides = contiguous_strides(shape);
    return Tensor(std::move(impl));
}

Tensor Tensor::view(void* ptr, const Shape& shape, DType dtype, Strides strides, std::optional<Device> device,
                    std::source_location loc) {
    check_shape("Tensor::view()", shape, dtype, &loc);
    if (strides.empty()) strides = contiguous_strides(shape);
    if (strides.size() != shape.size())
        throw Error(fmt::format("Tensor::view(): {} strides for shape {}{}", strides.size(), to_string(shape),
                                at(&loc)));
    if (!ptr && loom::numel(shape) > 0)
        throw Error(fmt::format("Tensor::view(): a null pointer for the non-empty shape {}{}",
                                to_string(shape), at(&loc)));
    auto st = std::make_shared<Storage>();
    st->ptr = ptr;
    st->device = device ? *device : memory::pointer_device(ptr);
    auto impl = std::make_shared<Impl>();
    impl->storage = std::move(st);
    impl->dtype = dtype;
    impl->shape = shape;
    impl->strides = std::move(strides);
    return Tensor(std::move(impl));
}

const Tensor::Impl& Tensor::checked() const {
    if (!impl_) throw Error("Tensor: use of an undefined (default-constructed) Tensor");
    return *impl_;
}

DType Tensor::dtype() const {
    return checked().dtype;
}
const Shape& Tensor::shape() const {
    return checked().shape;
}
const Strides& Tensor::strides() const {
    return checked().strides;
}
std::int64_t Tensor::offset() const {
    return checked().offset;
}
Device Tensor::device() const {
    return checked().storage->device;
}
const std::shared_ptr<Storage>& Tensor::storage() const {
    return checked().storage;
}

void* Tensor::data() const {
    return static_cast<char*>(checked().storage->ptr) +
           impl_->offset * static_cast<std::int64_t>(itemsize(dtype()));
}

bool Tensor::is_contiguous() const {
    return loom::is_contiguous(shape(), strides());
}

Tensor Tensor::as_strided(const Shape& shape, const Strides& strides, std::int64_t offset) const {
    check_shape("Tensor::as_strided()", shape, dtype());
    if (strides.size() != shape.size())
        throw Error(
            fmt::format("Tensor::as_strided(): {} strides for shape {}", strides.size(), to_string(shape)));
    // Owned storage knows its size: every element the view reaches must lie inside it.
    const Storage& st = *impl_->storage;
    if (st.release && loom::numel(shape) > 0) {
        std::int64_t lo = offset, hi = offset;
        for (std::size_t k = 0; k < shape.size(); ++k)
            (strides[k] < 0 ? lo : hi) += strides[k] * (shape[k] - 1);
        const auto capacity = static_cast<std::int64_t>(st.bytes / itemsize(dtype()));
        if (lo < 0 || hi >= capacity)
            throw Error(fmt::format(
                "Tensor::as_strided(): shape {}, strides {} and offset {} reach elements {} to {} "
                "of a storage of {} {} elements",
                to_string(shape), to_string(strides), offset, lo, hi, capacity, name(dtype())));
    }
    auto impl = std::make_shared<Impl>();
    impl->storage = impl_->storage;
    impl->dtype = impl_->dtype;
    impl->shape = shape;
    impl->strides = strides;
    impl->offset = offset;
    return Tensor(std::move(impl));
}

void Tensor::check_one_element(const char* api, const std::source_location& loc) const {
    if (!defined())  // before numel(), whose own message has no call site
        throw Error(fmt::format("{}: use of an undefined (default-constructed) Tensor ({})", api,
                                short_location(loc)));
    if (numel() != 1)
        throw Error(fmt::format("{}: the tensor {} {} has {} elements, not one ({})", api, to_string(shape()),
                                name(dtype()), numel(), short_location(loc)));
}

Tensor Tensor::to(Device device, bool copy, std::source_location loc) const {
    if (!copy && device == this->device() && is_contiguous()) return *this;
    if ((device.is_cuda() || this->device().is_cuda()) && !cuda_available())
        require_cuda(fmt::format("Tensor::to({}) ({})", device.to_string(), short_location(loc)));
    Tensor out = empty(shape(), dtype(), device, loc);
    const std::size_t esz = itemsize(dtype());
    if (is_contiguous()) {
        memory::copy(out.data(), device, data(), this->device(), nbytes());
        return out;
    }
    // Strided source: gather on the host (copying the source's storage span first when it is on a device).
    Tensor src = *this;
    if (this->device().is_cuda()) {
        std::int64_t lo = 0, hi = 0;
        for (int k = 0; k < rank(); ++k) {
            const auto e = shape()[static_cast<std::size_t>(k)];
            const auto s = strides()[static_cast<std::size_t>(k)];
            if (e == 0) return out;
            (s < 0 ? lo : hi) += s * (e - 1);
        }
        const std::size_t span = static_cast<std::size_t>(hi - lo + 1) * esz;
        Tensor flat = empty({hi - lo + 1}, dtype(), Device::cpu());
        memory::copy(flat.data(), Device::cpu(),
                     static_cast<const char*>(data()) + lo * static_cast<std::int64_t>(esz), this->device(),
                     span);
        src = flat.as_strided(shape(), strides(), -lo);
    }
    Tensor host = device.is_cuda() ? empty(shape(), dtype(), Device::cpu()) : out;
    const auto* base = static_cast<const char*>(src.data());
    auto* dst = static_cast<char*>(host.data());
    const std::int64_t n = numel();
    for (std::int64_t i = 0; i < n; ++i)
        std::memcpy(dst + i * static_cast<std::int64_t>(esz),
                    base + storage_offset_of(src, i) * static_cast<std::int64_t>(esz), esz);
    if (device.is_cuda()) memory::copy(out.data(), device, host.data(), Device::cpu(), nbytes());
    return out;
}

double Tensor::get_double(std::int64_t linear) const {
    if (device().is_cuda())
        throw Error("Tensor::get_double(): tensor is on " + device().to_string() +
                    "; copy it to the host first");
    if (linear < 0 || linear >= numel())
        throw Error(fmt::format("Tensor::get_double(): index {} out of range for shape {}", linear,
                                to_string(shape())));
    const char* p = static_cast<const char*>(data()) +
                    storage_offset_of(*this, linear) * static_cast<std::int64_t>(itemsize(dtype()));
    switch (dtype()) {
        case DType::Bool:
            return *reinterpret_cast<const std::uint8_t*>(p) ? 1.0 : 0.0;
        case DType::Int8:
            return *reinterpret_cast<const std::int8_t*>(p);
        case DType::UInt8:
            return *reinterpret_cast<const std::uint8_t*>(p);
        case DType::Int32:
            return *reinterpret_cast<const std::int32_t*>(p);
        case DType::Int64:
            return static_cast<double>(*reinterpret_cast<const std::int64_t*>(p));
        case DType::Float16:
            return half_bits_to_float(*reinterpret_cast<const std::uint16_t*>(p));
        case DType::BFloat16:
            return bf16_bits_to_float(*reinterpret_cast<const std::uint16_t*>(p));
        case DType::Float32:
            return *reinterpret_cast<const float*>(p);
        case DType::Float64:
            return *reinterpret_cast<const double*>(p);
    }
    throw InternalError("get_double: bad dtype");
}

std::int64_t Tensor::get_int(std::int64_t linear) const {
    if (device().is_cuda())
        throw Error("Tensor::get_int(): tensor is on " + device().to_string() +
                    "; copy it to the host first");
    if (linear < 0 || linear >= numel())
        throw Error(
            fmt::format("Tensor::get_int(): index {} out of range for shape {}", linear, to_string(shape())));
    if (is_float(dtype())) return static_cast<std::int64_t>(get_double(linear));
    const char* p = static_cast<const char*>(data()) +
                    storage_offset_of(*this, linear) * static_cast<std::int64_t>(itemsize(dtype()));
    switch (dtype()) {
        case DType::Bool:
            return *reinterpret_cast<const std::uint8_t*>(p) ? 1 : 0;
        case DType::Int8:
            return *reinterpret_cast<const std::int8_t*>(p);
        case DType::UInt8:
            return *reinterpret_cast<const std::uint8_t*>(p);
        case DType::Int32:
            return *reinterpret_cast<const std::int32_t*>(p);
        case DType::Int64:
            return *reinterpret_cast<const std::int64_t*>(p);
        default:
            break;
    }
    throw InternalError("get_int: bad dtype");
}

}  // namespace loom
