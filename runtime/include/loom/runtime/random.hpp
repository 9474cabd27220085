// Seeded random tensors: the lazy random ops of <loom/dsl/random.hpp> (Philox4x32-10 keyed by the seed,
// counted by each element's row-major index; docs/semantics.md, "Random numbers") evaluated into a tensor,
// with the same bits on every device. For test inputs and benchmark set-up (never zeros: they hide unwritten
// outputs).
#pragma once

#include <cstdint>
#include <source_location>

#include "loom/runtime/tensor.hpp"

namespace loom {

/// A tensor of `shape` and `dtype` on `device` filled with standard normal values (mean 0, std 1): for a
/// float dtype, exactly the values of the lazy `random_normal(shape, seed, dtype)` (float16 and bfloat16: the
/// float32 values rounded once); integer dtypes get the float32 value rounded half to even and saturated;
/// bool gets `value > 0`. One kernel on the device (the LLVM back end or the CPU reference on the host). The
/// same seed, shape and dtype give the same values on every device. These streams replaced the cuRAND
/// (GPU) and std::mt19937_64 (host) ones of earlier versions of Loom: a seed gives other values than it did.
/// Throws loom::NoDeviceError for a CUDA device without a GPU, loom::Error naming random_normal() for a bad
/// shape, and the errors of an evaluation (loom::OutOfMemory, loom::CompileError, loom::CudaError). `loc`,
/// the caller's line, is named in errors and in the evaluation's profiler range (`LOOM_NVTX=1`).
Tensor random_normal(const Shape& shape, DType dtype, std::uint64_t seed, Device device,
                     std::source_location loc = std::source_location::current());
/// random_normal() on the current CUDA device when a GPU is usable, else on the host (as factories are made:
/// default_factory_device()).
Tensor random_normal(const Shape& shape, DType dtype, std::uint64_t seed,
                     std::source_location loc = std::source_location::current());
/// random_normal() with the next seed of the process (next_seed()), on the current CUDA device when a GPU is
/// usable, else on the host, so that successive calls give different tensors and run without a GPU.
Tensor random_normal(const Shape& shape, DType dtype = DType::Float32,
                     std::source_location loc = std::source_location::current());

/// A tensor filled with values uniform in [lo, hi): lo + (hi - lo) u in float64 with u the lazy
/// `random_uniform(shape, seed, d)` (d = `dtype` for float dtypes, float64 otherwise), rounded once to a
/// float `dtype` (a value that rounds to hi becomes the largest value of `dtype` below hi; with lo = 0, hi =
/// 1 the values are exactly the lazy op's); integer dtypes get the floor of the value, saturated (so [lo, hi)
/// holds for integral bounds); bool gets that integer != 0. Evaluated as random_normal() is. Throws
/// loom::Error naming random_uniform() unless lo < hi (both finite), and as random_normal() does.
Tensor random_uniform(const Shape& shape, DType dtype, double lo, double hi, std::uint64_t seed,
                      Device device, std::source_location loc = std::source_location::current());
/// random_uniform() on the current CUDA device when a GPU is usable, else on the host.
Tensor random_uniform(const Shape& shape, DType dtype, double lo, double hi, std::uint64_t seed,
                      std::source_location loc = std::source_location::current());
/// random_uniform() with the next seed of the process, on the current CUDA device when a GPU is usable, else
/// on the host.
Tensor random_uniform(const Shape& shape, DType dtype = DType::Float32, double lo = 0.0, double hi = 1.0,
                      std::source_location loc = std::source_location::current());

/// The next seed of the process-wide sequence that the seedless overloads use: 1, 2, 3, ... in call order
/// (atomic: threads calling at once get distinct seeds). A seedless lazy op is `random_normal(shape,
/// next_seed())`.
std::uint64_t next_seed();

}  // namespace loom
