// Random tensors: cuRAND (Philox4x32-10) on CUDA devices, std::mt19937_64 on the host, with the conversion
// to every dtype done once, on the host, where cuRAND has no direct generator for it.
#include "loom/runtime/random.hpp"

#include <cuda_runtime_api.h>
#include <curand.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "loom/ir/error.hpp"
#include "loom/ir/half.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/stream.hpp"

namespace loom {

namespace {

enum class Dist { Normal, Uniform };

struct Params {
    const char* api;
    Dist dist;
    double lo = 0.0, hi = 1.0;
};

void check_curand(curandStatus_t s, const char* call, const char* api) {
    if (s == CURAND_STATUS_SUCCESS) return;
    // A cuRAND launch failure may hide a sticky CUDA error: let the CUDA state speak first.
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) detail::throw_cuda_error(e, call, __FILE__, __LINE__);
    throw Error(fmt::format("{}: {} failed with cuRAND status {}", api, call, static_cast<int>(s)));
}

/// The largest value of a 2-byte float format below the one with bits `b` (sign-magnitude order).
std::uint16_t step_down(std::uint16_t b) {
    if ((b & 0x7fffu) == 0) return 0x8001u;  // ±0 -> smallest negative subnormal
    return (b & 0x8000u) ? static_cast<std::uint16_t>(b + 1) : static_cast<std::uint16_t>(b - 1);
}

template <class I>
I saturate(double r) {
    const double lo = static_cast<double>(std::numeric_limits<I>::min());
    const double hi = static_cast<double>(std::numeric_limits<I>::max());
    if (r <= lo) return std::numeric_limits<I>::min();
    if (r >= hi) return std::numeric_limits<I>::max();  // int64 max is not a double: >= catches 2^63
    return static_cast<I>(r);
}

/// Converts draws (normal z, or uniform u in (0, 1]) to `dtype` values at `out` (contiguous).
template <class D>
void convert(const D* draws, std::int64_t n, DType dtype, const Params& p, void* out) {
    for (std::int64_t i = 0; i < n; ++i) {
        double v = static_cast<double>(draws[i]);
        if (p.dist == Dist::Uniform) v = std::max(p.lo, p.hi - (p.hi - p.lo) * v);
        const bool uni = p.dist == Dist::Uniform;
        // Integers: nearest (half to even) for normal values, floor for uniform ones, then saturate.
        const double r = uni ? std::floor(v) : std::nearbyint(v);
        switch (dtype) {
            case DType::Bool:
                static_cast<std::uint8_t*>(out)[i] = uni ? (r != 0.0) : (v > 0.0);
                break;
            case DType::Int8:
                static_cast<std::int8_t*>(out)[i] = saturate<std::int8_t>(r);
                break;
            case DType::UInt8:
                static_cast<std::uint8_t*>(out)[i] = saturate<std::uint8_t>(r);
                break;
            case DType::Int32:
                static_cast<std::int32_t*>(out)[i] = saturate<std::int32_t>(r);
                break;
            case DType::Int64:
                static_cast<std::int64_t*>(out)[i] = saturate<std::int64_t>(r);
                break;
            case DType::Float16: {
                std::uint16_t b = double_to_half_bits(v);
                while (uni && half_bits_to_float(b) >= p.hi) b = step_down(b);
                static_cast<std::uint16_t*>(out)[i] = b;
                break;
            }
            case DType::BFloat16: {
                std::uint16_t b = double_to_bf16_bits(v);
                while (uni && bf16_bits_to_float(b) >= p.hi) b = step_down(b);
                static_cast<std::uint16_t*>(out)[i] = b;
                break;
            }
            case DType::Float32: {
                float f = static_cast<float>(v);
                while (uni && f >= p.hi) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
                static_cast<float*>(out)[i] = f;
                break;
            }
            case DType::Float64: {
                double d = v;
                while (uni && d >= p.hi) d = std::nextafter(d, -std::numeric_limits<double>::infinity());
                static_cast<double*>(out)[i] = d;
                break;
            }
        }
    }
}

Tensor fill_host(const Shape& shape, DType dtype, std::uint64_t seed, const Params& p) {
    Tensor out = Tensor::empty(shape, dtype, Device::cpu());
    const std::int64_t n = out.numel();
    std::mt19937_64 gen(seed);
    std::vector<double> draws(static_cast<std::size_t>(n));
    if (p.dist == Dist::Normal) {
        std::normal_distribution<double> normal(0.0, 1.0);
        for (auto& d : draws) d = normal(gen);
    } else {
        for (auto& d : draws) d = 1.0 - std::generate_canonical<double, 53>(gen);  // (0, 1], as cuRAND
    }
    convert(draws.data(), n, dtype, p, out.data());
    return out;
}

/// Device scratch from the pool, released on the current stream (stream order keeps it alive for the
/// work already queued).
struct Scratch {
    Device device;
    void* ptr = nullptr;
    Scratch(Device d, std::size_t bytes) : device(d), ptr(memory::allocate(d, bytes)) {}
    ~Scratch() { memory::release(device, ptr); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
};

struct Generator {
    curandGenerator_t g = nullptr;
    Generator(std::uint64_t seed, const char* api) {
        check_curand(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10),
                     "curandCreateGenerator(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10)", api);
        check_curand(curandSetPseudoRandomGeneratorSeed(g, seed),
                     "curandSetPseudoRandomGeneratorSeed(g, seed)", api);
        check_curand(curandSetStream(g, current_stream()), "curandSetStream(g, stream)", api);
    }
    ~Generator() {
        if (g) (void)curandDestroyGenerator(g);
    }
    Generator(const Generator&) = delete;
    Generator& operator=(const Generator&) = delete;
};

/// Generates `count` (even for normal values) draws into device memory `dst`.
void generate(Generator& gen, bool dbl, const Params& p, void* dst, std::size_t count) {
    if (p.dist == Dist::Normal) {
        if (dbl)
            check_curand(curandGenerateNormalDouble(gen.g, static_cast<double*>(dst), count, 0.0, 1.0),
                         "curandGenerateNormalDouble(g, ptr, n, 0.0, 1.0)", p.api);
        else
            check_curand(curandGenerateNormal(gen.g, static_cast<float*>(dst), count, 0.f, 1.f),
                         "curandGenerateNormal(g, ptr, n, 0.0f, 1.0f)", p.api);
    } else {
        if (dbl)
            check_curand(curandGenerateUniformDouble(gen.g, static_cast<double*>(dst), count),
                         "curandGenerateUniformDouble(g, ptr, n)", p.api);
        else
            check_curand(curandGenerateUniform(gen.g, static_cast<float*>(dst), count),
                         "curandGenerateUniform(g, ptr, n)", p.api);
    }
}

Tensor fill_cuda(const Shape& shape, DType dtype, std::uint64_t seed, Device device, const Params& p) {
    require_cuda(p.api);
    Tensor out = Tensor::empty(shape, dtype, device);
    const std::int64_t n = out.numel();
    if (n == 0) return out;
    DeviceGuard guard(device.index);
    Generator gen(seed, p.api);
    const bool dbl = dtype == DType::Float64;
    const std::size_t esz = dbl ? sizeof(double) : sizeof(float);
    const auto count = static_cast<std::size_t>(n);
    const std::size_t even = count + (count & 1);  // Box-Muller gives pairs: cuRAND needs an even count
    const bool direct = p.dist == Dist::Normal && (dtype == DType::Float32 || dtype == DType::Float64);
    if (direct && even == count) {
        generate(gen, dbl, p, out.data(), count);
        LOOM_CUDA_CHECK(cudaGetLastError());
        return out;
    }
    Scratch scratch(device, even * esz);
    generate(gen, dbl, p, scratch.ptr, even);
    LOOM_CUDA_CHECK(cudaGetLastError());
    if (direct) {
        LOOM_CUDA_CHECK(cudaMemcpyAsync(out.data(), scratch.ptr, count * esz, cudaMemcpyDeviceToDevice,
                                        current_stream()));
        return out;
    }
    // Other dtypes and uniform values: convert on the host (synchronous copies on the current stream).
    Tensor host = Tensor::empty(shape, dtype, Device::cpu());
    if (dbl) {
        std::vector<double> draws(count);
        memory::copy(draws.data(), Device::cpu(), scratch.ptr, device, count * esz);
        convert(draws.data(), n, dtype, p, host.data());
    } else {
        std::vector<float> draws(count);
        memory::copy(draws.data(), Device::cpu(), scratch.ptr, device, count * esz);
        convert(draws.data(), n, dtype, p, host.data());
    }
    memory::copy(out.data(), device, host.data(), Device::cpu(), out.nbytes());
    return out;
}

Tensor fill(const Shape& shape, DType dtype, std::uint64_t seed, Device device, const Params& p) {
    return device.is_cuda() ? fill_cuda(shape, dtype, seed, device, p) : fill_host(shape, dtype, seed, p);
}

Device current_cuda(const char* api) {
    require_cuda(api);
    return Device::cuda(current_device());
}

Params uniform_params(double lo, double hi) {
    if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi))
        throw Error(fmt::format("random_uniform(): needs finite lo < hi, got lo={} hi={}", lo, hi));
    return Params{"random_uniform()", Dist::Uniform, lo, hi};
}

std::atomic<std::uint64_t> g_next_seed{1};

}  // namespace

std::uint64_t next_seed() {
    return g_next_seed.fetch_add(1, std::memory_order_relaxed);
}

Tensor random_normal(const Shape& shape, DType dtype, std::uint64_t seed, Device device) {
    return fill(shape, dtype, seed, device, Params{"random_normal()", Dist::Normal});
}

Tensor random_normal(const Shape& shape, DType dtype, std::uint64_t seed) {
    return random_normal(shape, dtype, seed, current_cuda("random_normal()"));
}

Tensor random_normal(const Shape& shape, DType dtype) {
    const Device d = current_cuda("random_normal()");
    return random_normal(shape, dtype, next_seed(), d);
}

Tensor random_uniform(const Shape& shape, DType dtype, double lo, double hi, std::uint64_t seed,
                      Device device) {
    return fill(shape, dtype, seed, device, uniform_params(lo, hi));
}

Tensor random_uniform(const Shape& shape, DType dtype, double lo, double hi, std::uint64_t seed) {
    return random_uniform(shape, dtype, lo, hi, seed, current_cuda("random_uniform()"));
}

Tensor random_uniform(const Shape& shape, DType dtype, double lo, double hi) {
    const Device d = current_cuda("random_uniform()");
    return random_uniform(shape, dtype, lo, hi, next_seed(), d);
}

}  // namespace loom
