// Factories: arange, linspace, full, zeros, ones, eye as lazy IR (iota and fill leaves with elementwise
// ops over them), and from_host.
#include "loom/dsl/factories.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "loom/dsl/ops.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/reference.hpp"

namespace loom {

namespace {

std::int64_t device_code(Device d) {
    return d.is_cuda() ? d.index : ir::kHostDeviceCode;
}

[[noreturn]] void fail(std::string_view api, const std::string& what, Loc loc) {
    throw Error(fmt::format("{}(): {} ({})", api, what, short_location(loc)));
}

ir::NodePtr f64_scalar(double v, Loc loc) {
    return ir::scalar(ir::ScalarValue::of_float(v), DType::Float64, loc);
}

// start + i * step over the iota of `n` elements, in float64 (or exactly in int64), then cast to `dtype`.
Array affine_index(std::string_view api, double start, double step, std::int64_t n, DType dtype,
                   Device device, const ir::NodePtr& last, Loc loc) {
    const ir::NodePtr i = ir::iota({n}, 0, device_code(device), api, loc);
    const bool integral = !is_float(dtype) && start == std::trunc(start) && step == std::trunc(step);
    ir::NodePtr v;
    if (integral) {  // exactly, in int64
        const auto s0 =
            ir::scalar(ir::ScalarValue::of_int(static_cast<std::int64_t>(start)), DType::Int64, loc);
        const auto st =
            ir::scalar(ir::ScalarValue::of_int(static_cast<std::int64_t>(step)), DType::Int64, loc);
        v = ir::binary(ir::Op::Add, s0, ir::binary(ir::Op::Mul, i, st, loc), loc);
    } else {
        v = ir::binary(ir::Op::Add, f64_scalar(start, loc),
                       ir::binary(ir::Op::Mul, ir::cast(i, DType::Float64, loc), f64_scalar(step, loc), loc),
                       loc);
    }
    if (last) {  // linspace's endpoint: the last element is stop itself
        const auto is_last =
            ir::binary(ir::Op::Eq, i, ir::scalar(ir::ScalarValue::of_int(n - 1), DType::Int64, loc), loc);
        v = ir::ternary(ir::Op::Where, is_last, last, v, loc);
    }
    return Array(ir::cast(v, dtype, loc));
}

}  // namespace

Device default_factory_device() {
    return cuda_available() ? Device::cuda(current_device()) : Device::cpu();
}

Array arange(double start, double stop, double step, DType dtype, Device device, Loc loc) {
    if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
        fail("arange", fmt::format("start {}, stop {} and step {} must be finite", start, stop, step), loc);
    if (step == 0.0) fail("arange", "step is 0", loc);
    if (dtype == DType::Bool) fail("arange", "bool is not a dtype of a range of numbers", loc);
    if (!is_float(dtype) && (start != std::trunc(start) || step != std::trunc(step)))
        fail("arange", fmt::format("start {} and step {} must be integers for {}", start, step, name(dtype)),
             loc);
    const double count = std::ceil((stop - start) / step);
    if (count >= 9.0e15) fail("arange", fmt::format("{} elements are too many", count), loc);
    const auto n = count > 0.0 ? static_cast<std::int64_t>(count) : 0;
    if (!is_float(dtype)) {  // computed exactly in int64: start, step and the last value must be int64s
        constexpr double two63 = 9223372036854775808.0;
        std::int64_t last = 0;
        const bool fits =
            start >= -two63 && start < two63 && step >= -two63 && step < two63 &&
            (n == 0 || (!__builtin_mul_overflow(n - 1, static_cast<std::int64_t>(step), &last) &&
                        !__builtin_add_overflow(last, static_cast<std::int64_t>(start), &last)));
        if (!fits)
            fail(
                "arange",
                fmt::format("start {} and step {} give values beyond int64 for {}", start, step, name(dtype)),
                loc);
    }
    return affine_index("arange", start, step, n, dtype, device, nullptr, loc);
}

Array arange(std::int64_t stop, DType dtype, Device device, Loc loc) {
    return arange(0.0, static_cast<double>(stop), 1.0, dtype, device, loc);
}

Array linspace(double start, double stop, std::int64_t num, DType dtype, bool endpoint, Device device,
               Loc loc) {
    if (num < 0) fail("linspace", fmt::format("num {} is negative", num), loc);
    if (!std::isfinite(start) || !std::isfinite(stop))
        fail("linspace", fmt::format("start {} and stop {} must be finite", start, stop), loc);
    if (!is_float(dtype)) fail("linspace", fmt::format("{} is not a float dtype", name(dtype)), loc);
    const double div = static_cast<double>(endpoint ? num - 1 : num);
    const double step = div > 0.0 ? (stop - start) / div : 0.0;
    return affine_index("linspace", start, step, num, dtype, device,
                        endpoint && num > 1 ? f64_scalar(stop, loc) : nullptr, loc);
}

namespace {

// full(), zeros() and ones(): one fill leaf, its errors under the name the user called.
Array filled(std::string_view api, const Shape& shape, double value, DType dtype, Device device, Loc loc) {
    const ir::ScalarValue v = ir::make_scalar_value(value, dtype, api, loc);
    return Array(ir::fill(v, dtype, shape, device_code(device), api, loc));
}

}  // namespace

Array full(const Shape& shape, double value, DType dtype, Device device, Loc loc) {
    return filled("full", shape, value, dtype, device, loc);
}

Array zeros(const Shape& shape, DType dtype, Device device, Loc loc) {
    return filled("zeros", shape, 0.0, dtype, device, loc);
}

Array ones(const Shape& shape, DType dtype, Device device, Loc loc) {
    return filled("ones", shape, 1.0, dtype, device, loc);
}

Array eye(std::int64_t n, std::int64_t m, std::int64_t k, DType dtype, Device device, Loc loc) {
    if (n < 0) fail("eye", fmt::format("n {} is negative", n), loc);
    if (m < -1) fail("eye", fmt::format("m {} is negative (-1, the default, means m = n)", m), loc);
    if (m == -1) m = n;
    const std::int64_t dev = device_code(device);
    const auto rows = ir::iota({n, m}, 0, dev, "eye", loc), cols = ir::iota({n, m}, 1, dev, "eye", loc);
    const auto shifted =
        ir::binary(ir::Op::Add, rows, ir::scalar(ir::ScalarValue::of_int(k), DType::Int64, loc), loc);
    return Array(ir::cast(ir::binary(ir::Op::Eq, shifted, cols, loc), dtype, loc));
}

namespace {

template <class T>
Tensor from_host_impl(std::span<const T> data, const Shape& shape, DType dtype, Device device, Loc loc) {
    ir::check_shape("from_host", shape, dtype, loc);
    if (static_cast<std::int64_t>(data.size()) != numel(shape))
        fail("from_host",
             fmt::format("{} values for shape {} ({} elements)", data.size(), to_string(shape), numel(shape)),
             loc);
    constexpr DType from = std::is_same_v<T, double>         ? DType::Float64
                           : std::is_same_v<T, float>        ? DType::Float32
                           : std::is_same_v<T, std::int64_t> ? DType::Int64
                                                             : DType::Int32;
    Tensor raw = Tensor::host(shape, from);
    if (!data.empty()) std::memcpy(raw.data(), data.data(), data.size_bytes());
    Tensor host = from == dtype ? raw : reference::cast(raw, dtype);
    return device.is_cuda() ? host.to(device, false, loc) : host;
}

}  // namespace

Tensor from_host(std::span<const double> data, const Shape& shape, DType dtype, Device device, Loc loc) {
    return from_host_impl(data, shape, dtype, device, loc);
}
Tensor from_host(std::span<const float> data, const Shape& shape, DType dtype, Device device, Loc loc) {
    return from_host_impl(data, shape, dtype, device, loc);
}
Tensor from_host(std::span<const std::int64_t> data, const Shape& shape, DType dtype, Device device,
                 Loc loc) {
    return from_host_impl(data, shape, dtype, device, loc);
}
Tensor from_host(std::span<const std::int32_t> data, const Shape& shape, DType dtype, Device device,
                 Loc loc) {
    return from_host_impl(data, shape, dtype, device, loc);
}

}  // namespace loom
