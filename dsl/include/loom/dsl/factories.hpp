// Factories: arrays made from nothing (arange, linspace, full, zeros, ones, eye) and tensors made from
// host data (from_host). The factories are lazy: an index (an iota node) or a fill, computed inside the
// kernel that uses it, never materialized on its own: `x * arange(0, n)` reads x and nothing else. A
// factory names the device it is made on when it is evaluated by itself (`Tensor t = zeros({4, 4});`);
// next to tensors it takes their device, since it has no memory. docs/semantics.md, "Factories", gives
// their exact values (the float steps of arange and linspace) and errors.
#pragma once

#include <cstdint>
#include <span>

#include "loom/dsl/array.hpp"

namespace loom {

/// The device a factory is made on unless told: the current CUDA device when a GPU is usable, else the host.
Device default_factory_device();

/// The values start, start + step, ... up to but not including stop (above it for a negative step), as
/// `dtype`. Element i is (start + i * step) computed in float64 and rounded once to `dtype` (exact in int64
/// when `dtype` is an integer type and start and step are integers); there are max(0, ceil((stop - start) /
/// step)) elements. Throws loom::Error naming arange() for step 0, a non-finite argument, bool, or an
/// integer dtype with a fractional start or step, or with a start, step or last value beyond int64.
Array arange(double start, double stop, double step = 1.0, DType dtype = DType::Float32,
             Device device = default_factory_device(), Loc loc = Loc::current());
/// arange(0, stop, 1) of an integer dtype: 0, 1, ..., stop - 1 (int64 unless told).
Array arange(std::int64_t stop, DType dtype = DType::Int64, Device device = default_factory_device(),
             Loc loc = Loc::current());
/// `num` values from start to stop: element i is start + i * step with step = (stop - start) / (num - 1)
/// (num with `endpoint = false`), in float64, rounded once to `dtype`; with `endpoint`, the last is stop
/// itself. Throws loom::Error naming linspace() for a negative num, a non-finite argument, or a non-float
/// dtype.
Array linspace(double start, double stop, std::int64_t num, DType dtype = DType::Float32,
               bool endpoint = true, Device device = default_factory_device(), Loc loc = Loc::current());
/// `value` (converted to `dtype` as a weak scalar is: rounded once; an integer dtype needs an integer in
/// range) in every element of `shape`. Throws loom::Error naming full() for a bad shape or value.
Array full(const Shape& shape, double value, DType dtype = DType::Float32,
           Device device = default_factory_device(), Loc loc = Loc::current());
Array zeros(const Shape& shape, DType dtype = DType::Float32, Device device = default_factory_device(),
            Loc loc = Loc::current());
Array ones(const Shape& shape, DType dtype = DType::Float32, Device device = default_factory_device(),
           Loc loc = Loc::current());
/// The n x m matrix (m = n when -1, the default) with ones on diagonal k (0: the main one, k > 0 above it)
/// and zeros elsewhere, as `dtype`. Throws loom::Error naming eye() for a negative n, or m below -1.
Array eye(std::int64_t n, std::int64_t m = -1, std::int64_t k = 0, DType dtype = DType::Float32,
          Device device = default_factory_device(), Loc loc = Loc::current());

/// A tensor of `shape` on `device` holding `data` (row-major, numel(shape) values) converted to `dtype` as
/// a cast converts (docs/semantics.md section 6). One synchronous copy to a device. Throws loom::Error
/// naming from_host() when the element count differs from the shape's.
Tensor from_host(std::span<const double> data, const Shape& shape, DType dtype,
                 Device device = default_factory_device(), Loc loc = Loc::current());
Tensor from_host(std::span<const float> data, const Shape& shape, DType dtype,
                 Device device = default_factory_device(), Loc loc = Loc::current());
Tensor from_host(std::span<const std::int64_t> data, const Shape& shape, DType dtype,
                 Device device = default_factory_device(), Loc loc = Loc::current());
Tensor from_host(std::span<const std::int32_t> data, const Shape& shape, DType dtype,
                 Device device = default_factory_device(), Loc loc = Loc::current());

}  // namespace loom
