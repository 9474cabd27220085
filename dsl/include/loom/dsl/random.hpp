// Random arrays inside kernels: random_uniform, random_normal and bernoulli as lazy ops. Element i (its
// row-major index in the op's shape) of the stream `seed` reads slot i mod 4 of Philox4x32-10's block for
// counter i / 4 and key seed (i mod 2 of block i / 2 in float64), mapped to a float (docs/semantics.md,
// "Random numbers"), drawn where the kernel uses it and never materialized:
// `x + 0.1 * random_normal(x.shape(), seed)` reads x and writes the sum, nothing else. The same bits on the
// GPU, the LLVM host back end and the CPU reference, whatever the launch shape, the fusion or the device.
// The Tensor-returning random_normal(shape, dtype, ...) and random_uniform(shape, dtype, lo, hi, ...) of
// <loom/runtime/random.hpp> materialize these (the seedless ones take next_seed()).
#pragma once

#include <cstdint>

#include "loom/dsl/array.hpp"
#include "loom/dsl/factories.hpp"

namespace loom {

/// Uniform values in [0, 1) of `shape` and the float `dtype`: element i is k 2^-p for the top p bits k of
/// word i mod 4 of Philox4x32-10's block for counter i / 4 and key `seed` (p = 24 for float32, 11 for
/// float16, 8 for bfloat16; float64: the top 53 bits of words 0:1 or 2:3, for i mod 2, of block i / 2). Lazy;
/// computed in the kernel that uses it, on `device` when evaluated by itself (next to tensors, on theirs).
/// Throws loom::Error naming random_uniform() for a bad shape or a dtype that is not a float.
Array random_uniform(const Shape& shape, std::uint64_t seed, DType dtype = DType::Float32,
                     Device device = default_factory_device(), Loc loc = Loc::current());
/// Standard normal values (mean 0, variance 1) of `shape` and the float `dtype`: Box-Muller of a pair of
/// uniform values of element i's Philox4x32-10 block (the cosine value to even i, the sine value to odd i),
/// with Loom's own log, cosine and sine (docs/semantics.md, "Random
/// numbers", gives the steps and their error bounds); float16 and bfloat16 get the float32 value rounded
/// once. |value| <= 5.77 (8.57 for float64). Lazy, placed as random_uniform(). Throws loom::Error naming
/// random_normal() for a bad shape or a dtype that is not a float.
Array random_normal(const Shape& shape, std::uint64_t seed, DType dtype = DType::Float32,
                    Device device = default_factory_device(), Loc loc = Loc::current());
/// Bool values of `shape`, true with probability `p`: random_uniform(shape, seed) < p, the uniform values
/// float32 (float64 when `p` is float64), compared after NumPy promotion. `p` broadcasts to `shape` (a
/// value per element, per row, ...). Lazy. Throws loom::Error naming bernoulli() when `p` does not
/// broadcast to `shape`.
Array bernoulli(const Array& p, const Shape& shape, std::uint64_t seed, Loc loc = Loc::current());
/// bernoulli() with one probability for every element (compared in float32), made on `device` when evaluated
/// by itself. Throws loom::Error naming bernoulli() when `p` is not in [0, 1] (NaN included), as NumPy and
/// PyTorch do; an array `p` is compared as it is (values above 1 give true, below 0 or NaN false).
Array bernoulli(double p, const Shape& shape, std::uint64_t seed, Device device = default_factory_device(),
                Loc loc = Loc::current());

}  // namespace loom
