// Random tensors: the materialization of the lazy random ops (ir::random_values; docs/semantics.md, "Random
// numbers"), evaluated on the tensor's device like any graph, so a tensor has the bits of the lazy op on
// every device; integer and bool dtypes get a conversion of those values inside the same kernel.
#include "loom/runtime/random.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <limits>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/half.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/executor.hpp"

namespace loom {

namespace {

using ir::NodePtr;
using ir::Op;

std::int64_t device_code(Device d) {
    return d.is_cuda() ? d.index : ir::kHostDeviceCode;
}

Device default_device() {
    return cuda_available() ? Device::cuda(current_device()) : Device::cpu();
}

NodePtr f64(double v) {
    return ir::scalar(ir::ScalarValue::of_float(v), DType::Float64);
}

/// The largest value of the float `dtype` below `hi` (a finite double).
double below(double hi, DType dtype) {
    switch (dtype) {
        case DType::Float64:
            return std::nextafter(hi, -std::numeric_limits<double>::infinity());
        case DType::Float32: {
            float f = static_cast<float>(hi);
            while (static_cast<double>(f) >= hi)
                f = std::nextafter(f, -std::numeric_limits<float>::infinity());
            return f;
        }
        default: {  // float16, bfloat16: step the bits down (sign-magnitude order)
            const bool h = dtype == DType::Float16;
            std::uint16_t b = h ? double_to_half_bits(hi) : double_to_bf16_bits(hi);
            auto value = [&] {
                return static_cast<double>(h ? half_bits_to_float(b) : bf16_bits_to_float(b));
            };
            while (value() >= hi) {
                if ((b & 0x7fffu) == 0)
                    b = 0x8001u;  // +-0 -> the smallest negative subnormal
                else
                    b = static_cast<std::uint16_t>((b & 0x8000u) ? b + 1 : b - 1);
            }
            return value();
        }
    }
}

Tensor materialize(const NodePtr& root, const std::source_location& loc) {
    return evaluate({root}, loc).front();
}

}  // namespace

std::uint64_t next_seed() {
    static std::atomic<std::uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
}

Tensor random_normal(const Shape& shape, DType dtype, std::uint64_t seed, Device device,
                     std::source_location loc) {
    if (device.is_cuda()) require_cuda(fmt::format("random_normal() ({})", short_location(loc)));
    const DType f = is_float(dtype) ? dtype : DType::Float32;
    NodePtr z =
        ir::random_values(Op::RandomNormal, shape, seed, f, device_code(device), "random_normal", loc);
    if (dtype == DType::Bool)
        z = ir::binary(Op::Gt, z, ir::constant(ir::ScalarValue::of_float(0.0), f));
    else if (!is_float(dtype))
        z = ir::cast(ir::unary(Op::Round, z), dtype);  // half to even, then saturated
    return materialize(z, loc);
}

Tensor random_normal(const Shape& shape, DType dtype, std::uint64_t seed, std::source_location loc) {
    return random_normal(shape, dtype, seed, default_device(), loc);
}

Tensor random_normal(const Shape& shape, DType dtype, std::source_location loc) {
    return random_normal(shape, dtype, next_seed(), default_device(), loc);
}

Tensor random_uniform(const Shape& shape, DType dtype, double lo, double hi, std::uint64_t seed,
                      Device device, std::source_location loc) {
    if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi))
        throw Error(fmt::format("random_uniform(): needs finite lo < hi, got lo={} hi={} ({})", lo, hi,
                                short_location(loc)));
    if (device.is_cuda()) require_cuda(fmt::format("random_uniform() ({})", short_location(loc)));
    // Float dtypes draw their own uniform values (so [0, 1) gives the lazy op's bits), others float64 ones.
    const DType u_dtype = is_float(dtype) ? dtype : DType::Float64;
    NodePtr u = ir::random_values(Op::RandomUniform, shape, seed, u_dtype, device_code(device),
                                  "random_uniform", loc);
    const NodePtr v = ir::binary(
        Op::Add, f64(lo), ir::binary(Op::Mul, f64(hi - lo), ir::cast(u, DType::Float64)));  // in [lo, hi]
    if (is_float(dtype)) {  // rounded once; a value that rounds up to hi is the dtype's largest below hi
        const NodePtr r = ir::cast(v, dtype);
        const NodePtr at_hi = ir::binary(Op::Ge, ir::cast(r, DType::Float64), f64(hi));
        const NodePtr last = ir::cast(f64(below(hi, dtype)), dtype);
        return materialize(ir::ternary(Op::Where, at_hi, last, r), loc);
    }
    const NodePtr whole = ir::unary(Op::Floor, v);
    if (dtype == DType::Bool) return materialize(ir::binary(Op::Ne, whole, f64(0.0)), loc);
    return materialize(ir::cast(whole, dtype), loc);  // saturated
}

Tensor random_uniform(const Shape& shape, DType dtype, double lo, double hi, std::uint64_t seed,
                      std::source_location loc) {
    return random_uniform(shape, dtype, lo, hi, seed, default_device(), loc);
}

Tensor random_uniform(const Shape& shape, DType dtype, double lo, double hi, std::source_location loc) {
    return random_uniform(shape, dtype, lo, hi, next_seed(), default_device(), loc);
}

}  // namespace loom
