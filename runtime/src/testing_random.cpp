// Random fills and poisoning of tensors for tests: deterministic per seed, independent of thread count.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/error.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/testing.hpp"
#include "parallel.hpp"

namespace loom::testing {
namespace {

namespace ew = ir::ew;

constexpr std::int64_t kRandomBlock = 65536;

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// Uniform double in [0, 1) with 53 random bits.
double unit(std::mt19937_64& g) {
    return static_cast<double>(g() >> 11) * 0x1.0p-53;
}

void require_contiguous(const char* api, const Tensor& t) {
    if (!t.defined() || !t.is_contiguous())
        throw Error(fmt::format("{}: the tensor must be defined and contiguous (shape {})", api,
                                t.defined() ? to_string(t.shape()) : std::string("none")));
}

/// Runs `fill(host)` on t directly when it is on the host, else on a host buffer copied to the device.
template <class F>
void fill_host(Tensor& t, F&& fill) {
    if (!t.device().is_cuda()) {
        fill(t);
        return;
    }
    Tensor h = Tensor::host(t.shape(), t.dtype());
    fill(h);
    memory::copy(t.data(), t.device(), h.data(), Device::cpu(), t.nbytes());
}

}  // namespace

void fill_random(Tensor& t, std::uint64_t seed, const Random& dist) {
    require_contiguous("fill_random()", t);
    fill_host(t, [&](Tensor& h) {
        ew::visit_dtype(h.dtype(), [&]<DType D>() {
            using S = ew::storage_t<D>;
            auto* p = static_cast<S*>(h.data());
            const std::int64_t n = h.numel();
            loom::detail::parallel_for(n, kRandomBlock, [&](std::int64_t b, std::int64_t e) {
                std::mt19937_64 g(splitmix64(seed + static_cast<std::uint64_t>(b / kRandomBlock)));
                for (std::int64_t i = b; i < e; ++i) {
                    if constexpr (D == DType::Bool) {
                        p[i] = static_cast<S>(g() >> 63);
                    } else if constexpr (is_float(D)) {
                        double v;
                        if (dist.kind == Random::Kind::Uniform) {
                            v = dist.a + (dist.b - dist.a) * unit(g);
                        } else {
                            // Box-Muller: one normal draw from two uniforms, u1 in (0, 1].
                            const double u1 = 1.0 - unit(g), u2 = unit(g);
                            v = dist.a +
                                dist.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
                        }
                        p[i] = ew::store<D>(ew::cast<D, DType::Float64>(v));
                    } else {
                        using C = ew::compute_t<D>;
                        const double lo_d = std::max(std::ceil(dist.a),
                                                     static_cast<double>(std::numeric_limits<C>::lowest()));
                        const double hi_d =
                            std::min(std::floor(dist.b), static_cast<double>(std::numeric_limits<C>::max()));
                        const auto lo = ew::float_to_int<std::int64_t>(lo_d);
                        const auto hi = std::max(lo, ew::float_to_int<std::int64_t>(hi_d));
                        const std::uint64_t range =
                            static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1u;
                        const std::uint64_t r = range == 0 ? g() : g() % range;  // range 0: all 2^64 values
                        p[i] = static_cast<S>(static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + r));
                    }
                }
            });
        });
    });
}

Tensor random_tensor(const Shape& shape, DType dtype, std::uint64_t seed, const Random& dist) {
    Tensor t = Tensor::host(shape, dtype);
    fill_random(t, seed, dist);
    return t;
}

void poison(Tensor& t) {
    require_contiguous("poison()", t);
    fill_host(t, [&](Tensor& h) {
        const std::int64_t n = h.numel();
        auto fill = [&](auto value) {
            using V = decltype(value);
            auto* p = static_cast<V*>(h.data());
            std::fill(p, p + n, value);
        };
        switch (h.dtype()) {
            case DType::Bool:
                fill(std::uint8_t{0xa5});
                break;
            case DType::Int8:
                fill(std::int8_t{-101});
                break;
            case DType::UInt8:
                fill(std::uint8_t{165});
                break;
            case DType::Int32:
                fill(static_cast<std::int32_t>(0xdeadbeefu));
                break;
            case DType::Int64:
                fill(static_cast<std::int64_t>(0xdeadbeefdeadbeefull));
                break;
            case DType::Float16:
                fill(std::uint16_t{0x7e5a});
                break;
            case DType::BFloat16:
                fill(std::uint16_t{0x7fda});
                break;
            case DType::Float32:
                fill(std::uint32_t{0x7fc0deadu});
                break;
            case DType::Float64:
                fill(std::uint64_t{0x7ff8deaddeaddeadull});
                break;
        }
    });
}

}  // namespace loom::testing
