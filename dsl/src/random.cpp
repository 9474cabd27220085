// Random arrays as lazy IR: the row-major index of the shape (iotas) and the seed (a run-time scalar) under a
// random op of the op table (ir::random_values), and bernoulli as a comparison with its uniform values.
#include "loom/dsl/random.hpp"

#include <fmt/format.h>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"

namespace loom {

namespace {

std::int64_t device_code(Device d) {
    return d.is_cuda() ? d.index : ir::kHostDeviceCode;
}

Array bernoulli_of(const ir::NodePtr& p, const Shape& shape, std::uint64_t seed, std::int64_t device,
                   Loc loc) {
    ir::NodePtr pb;
    try {
        pb = ir::broadcast_to(p, shape, loc);
    } catch (const Error&) {
        throw Error(fmt::format("bernoulli(): p {} does not broadcast to shape {} ({})", ir::describe(*p),
                                to_string(shape), short_location(loc)));
    }
    const DType u_dtype = p->dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
    const ir::NodePtr u =
        ir::random_values(ir::Op::RandomUniform, shape, seed, u_dtype, device, "bernoulli", loc);
    return Array(ir::binary(ir::Op::Lt, u, pb, loc));
}

}  // namespace

Array random_uniform(const Shape& shape, std::uint64_t seed, DType dtype, Device device, Loc loc) {
    return Array(ir::random_values(ir::Op::RandomUniform, shape, seed, dtype, device_code(device),
                                   "random_uniform", loc));
}

Array random_normal(const Shape& shape, std::uint64_t seed, DType dtype, Device device, Loc loc) {
    return Array(ir::random_values(ir::Op::RandomNormal, shape, seed, dtype, device_code(device),
                                   "random_normal", loc));
}

Array bernoulli(const Array& p, const Shape& shape, std::uint64_t seed, Loc loc) {
    if (!p.node()) throw Error(fmt::format("bernoulli(): p is an empty Array ({})", short_location(loc)));
    return bernoulli_of(p.node(), shape, seed, device_code(default_factory_device()), loc);
}

Array bernoulli(double p, const Shape& shape, std::uint64_t seed, Device device, Loc loc) {
    if (!(p >= 0.0 && p <= 1.0))  // NaN fails both
        throw Error(fmt::format("bernoulli(): probability {} is not in [0, 1] ({})", p, short_location(loc)));
    const ir::NodePtr pn =
        ir::scalar(ir::make_scalar_value(p, DType::Float32, "bernoulli", loc), DType::Float32, loc);
    return bernoulli_of(pn, shape, seed, device_code(device), loc);
}

}  // namespace loom
