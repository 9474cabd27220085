// Seeded random tensors: normal and uniform values from cuRAND on CUDA devices, from std::mt19937_64 on
// the host. For test inputs and benchmark set-up (never zeros: they hide unwritten outputs).
#pragma once

#include <cstdint>

#include "loom/runtime/tensor.hpp"

namespace loom {

/// A tensor of `shape` and `dtype` on `device` filled with standard normal values (mean 0, std 1).
///
/// CUDA: cuRAND's Philox4x32-10 generator seeded with `seed`, on the current stream. float32 and float64
/// are generated in place (curandGenerateNormal / curandGenerateNormalDouble; an odd count goes through a
/// scratch buffer one element longer, since Box-Muller makes values in pairs). float16 and bfloat16 are
/// generated as float32 on the device, copied to the host, rounded once (round to nearest even,
/// ir/half.hpp) and copied back; integer dtypes get the float32 value rounded half to even and saturated;
/// bool gets `value > 0`. The round trip through the host is set-up cost, not for hot loops.
/// CPU: the same kinds of values from std::mt19937_64 seeded with `seed` (not the same values as cuRAND).
/// The same seed, shape, dtype and device give the same values.
/// Throws loom::NoDeviceError for a CUDA device without a GPU, loom::Error for a bad shape,
/// loom::OutOfMemory, loom::CudaError, loom::Error naming the cuRAND call when cuRAND fails.
Tensor random_normal(const Shape& shape, DType dtype, std::uint64_t seed, Device device);
/// random_normal() on the calling thread's current CUDA device.
Tensor random_normal(const Shape& shape, DType dtype, std::uint64_t seed);
/// random_normal() on the current CUDA device with the next seed of the process (1, 2, 3, ... in call
/// order), so that successive calls give different tensors.
Tensor random_normal(const Shape& shape, DType dtype = DType::Float32);

/// A tensor filled with values uniform in [lo, hi), generated as random_normal() describes (cuRAND's
/// uniform values u in (0, 1], mapped to hi - (hi - lo) * u in double precision and rounded once to
/// `dtype`; a value that rounds to hi becomes the largest value of `dtype` below hi). On CUDA devices
/// the mapping runs on the host (float64 draws for float64, float32 draws otherwise), then the values are
/// copied to the device. Integer dtypes get floor of the value (so [lo, hi)
/// holds for integral bounds); bool gets that integer != 0. Throws loom::Error unless lo < hi (both
/// finite), and as random_normal() does.
Tensor random_uniform(const Shape& shape, DType dtype, double lo, double hi, std::uint64_t seed,
                      Device device);
/// random_uniform() on the calling thread's current CUDA device.
Tensor random_uniform(const Shape& shape, DType dtype, double lo, double hi, std::uint64_t seed);
/// random_uniform() on the current CUDA device with the next seed of the process.
Tensor random_uniform(const Shape& shape, DType dtype = DType::Float32, double lo = 0.0, double hi = 1.0);

/// The next seed of the process-wide sequence used by the seedless overloads (1, 2, 3, ...).
std::uint64_t next_seed();

}  // namespace loom
