// Input tensors of the fuzzer's random programs: random values of every dtype from a counter-based
// generator, special values (NaN, infinities, signed zeros, subnormals, extremes) mixed in, and the memory
// layouts (misaligned, column-major, padded, stride 0) that an Input's tensor is bound with.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "fuzz_program_internal.hpp"
#include "loom/ir/elementwise_impl.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

namespace loom::fuzz {

namespace {

/// Host tensor of special values of a dtype (NaN, infinities, signed zeros, subnormals, extremes). `tame`
/// (reduction programs): no float value near the overflow threshold, where an approximate factor of 1
/// could round to infinity on one side only.
Tensor specials(DType d, bool tame) {
    const double inf = std::numeric_limits<double>::infinity(),
                 nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> v;
    if (d == DType::Int64) {
        const std::vector<std::int64_t> raw{
            INT64_MIN, INT64_MAX, -1, 0, 1, INT64_MIN + 1, (std::int64_t{1} << 53) + 1, 64};
        Tensor t = Tensor::host({static_cast<std::int64_t>(raw.size())}, d);
        std::memcpy(t.data(), raw.data(), raw.size() * sizeof(std::int64_t));
        return t;
    }
    if (is_float(d) && tame)
        v = {nan, inf, -inf, -0.0, 0.0, 1.0, -1.0, 0.5, 2.5, 1e-40, 6e-8};
    else if (is_float(d))
        v = {nan, inf, -inf, -0.0, 0.0, 1.0, -1.0, 0.5, 2.5, 65504.0, 1e-40, 6e-8, 3e38, 1e300, -1e10};
    else if (d == DType::Bool)
        v = {0, 1};
    else
        v = {-2147483648.0, 2147483647.0, -128, 127, 255, -1, 0, 1, 8, 31, 33, 64};  // saturate to the dtype
    Tensor f = Tensor::host({static_cast<std::int64_t>(v.size())}, DType::Float64);
    std::memcpy(f.data(), v.data(), v.size() * sizeof(double));
    return reference::cast(f, d);
}

testing::Random distribution(DType d) {
    switch (d) {
        case DType::Bool:
            return testing::Random::normal();
        case DType::Int8:
            return testing::Random::uniform(-128, 127);
        case DType::UInt8:
            return testing::Random::uniform(0, 255);
        case DType::Int32:
            return testing::Random::uniform(-1000, 1000);
        case DType::Int64:
            return testing::Random::uniform(-1e6, 1e6);
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32:
        case DType::Float64:
            return testing::Random::normal(0.0, 2.0);
    }
    return {};
}

std::uint64_t mix64(std::uint64_t x) {  // splitmix64
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// Fills the contiguous host tensor `t` from `seed` as testing::fill_random does (the same distributions, the
/// same conversion to the dtype), from a counter-based generator instead of mt19937_64 streams: a hash of the
/// seed and the element's index, normal values made in pairs by Box-Muller. Three times cheaper, and filling
/// inputs of up to a million elements was a tenth of the fuzzer's time.
void fill_values(Tensor& t, std::uint64_t seed, const testing::Random& dist) {
    namespace ew = ir::ew;
    const std::int64_t n = t.numel();
    const std::uint64_t base = mix64(seed);
    auto unit = [](std::uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; };  // [0, 1)
    ew::visit_dtype(t.dtype(), [&]<DType D>() {
        using S = ew::storage_t<D>;
        auto* p = static_cast<S*>(t.data());
        if constexpr (D == DType::Bool) {
            for (std::int64_t i = 0; i < n; ++i)
                p[i] = static_cast<S>(mix64(base + static_cast<std::uint64_t>(i)) >> 63);
        } else if constexpr (is_float(D)) {
            auto put = [&](std::int64_t i, double v) { p[i] = ew::store<D>(ew::cast<D, DType::Float64>(v)); };
            for (std::int64_t i = 0; i < n; i += 2) {
                const std::uint64_t h = mix64(base + static_cast<std::uint64_t>(i));
                const double u = unit(h), w = unit(mix64(h));
                if (dist.kind == testing::Random::Kind::Uniform) {
                    put(i, dist.a + (dist.b - dist.a) * u);
                    if (i + 1 < n) put(i + 1, dist.a + (dist.b - dist.a) * w);
                } else {
                    const double r = dist.b * std::sqrt(-2.0 * std::log(1.0 - u)), a = 6.283185307179586 * w;
                    put(i, dist.a + r * std::cos(a));
                    if (i + 1 < n) put(i + 1, dist.a + r * std::sin(a));
                }
            }
        } else {
            using C = ew::compute_t<D>;
            const double lo_d =
                std::max(std::ceil(dist.a), static_cast<double>(std::numeric_limits<C>::lowest()));
            const double hi_d =
                std::min(std::floor(dist.b), static_cast<double>(std::numeric_limits<C>::max()));
            const auto lo = ew::float_to_int<std::int64_t>(lo_d);
            const auto hi = std::max(lo, ew::float_to_int<std::int64_t>(hi_d));
            const std::uint64_t range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1u;
            for (std::int64_t i = 0; i < n; ++i)
                p[i] = static_cast<S>(static_cast<std::int64_t>(
                    static_cast<std::uint64_t>(lo) + mix64(base + static_cast<std::uint64_t>(i)) % range));
        }
    });
}

/// A host tensor of `numel` random values of `d` with about one element in eight a special value. `tame`
/// (reduction programs, whose rows would otherwise nearly all hold a NaN): the tame specials, one element
/// in 8, 256 or 8192 or none, by the seed.
Tensor random_storage(std::int64_t numel, DType d, std::uint64_t seed, bool tame) {
    Tensor t = Tensor::host({numel}, d);
    if (numel == 0) return t;
    fill_values(t, seed, distribution(d));
    const Tensor s = specials(d, tame);
    const auto w = static_cast<std::int64_t>(itemsize(d));
    Rng g(seed ^ 0x5eed5eedULL);
    static const std::uint64_t rates[] = {0, 8, 256, 8192};
    const std::uint64_t one_in = tame ? rates[g() % 4] : 8;
    if (one_in == 0) return t;
    auto* dst = static_cast<unsigned char*>(t.data());
    const auto* src = static_cast<const unsigned char*>(s.data());
    // Each element is special with probability 1 / one_in, independently: the gaps between special elements
    // are geometric, so they are drawn instead of a coin per element (the inputs of the largest graphs have a
    // million elements, and the generator was a tenth of the fuzzer's time).
    const double log_keep = std::log1p(-1.0 / static_cast<double>(one_in));
    auto gap = [&] {
        const double u = 1.0 - static_cast<double>(g() >> 11) * 0x1.0p-53;  // (0, 1]
        const double k = std::floor(std::log(u) / log_keep);
        return k < static_cast<double>(numel) ? static_cast<std::int64_t>(k) : numel;
    };
    for (std::int64_t i = gap(); i < numel; i += 1 + gap())
        std::memcpy(dst + i * w,
                    src + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(s.numel())) * w,
                    static_cast<std::size_t>(w));
    return t;
}

}  // namespace

Tensor make_tensor(const Shape& shape, DType d, Layout layout, std::uint64_t key, std::uint64_t seed,
                   bool tame, Device device, Layout* used) {
    const int r = static_cast<int>(shape.size());
    const std::int64_t n = numel(shape);
    Strides strides = contiguous_strides(shape);
    std::int64_t offset = 0, storage = n;
    if (layout == Layout::Offset1) {
        offset = 1;
        storage = n + 1;
    } else if (layout == Layout::ColMajor && r >= 2) {
        std::int64_t s = 1;
        for (int k = 0; k < r; ++k) {
            strides[static_cast<std::size_t>(k)] = s;
            s *= shape[static_cast<std::size_t>(k)];
        }
    } else if (layout == Layout::Padded && r >= 2 && n > 0) {
        strides[static_cast<std::size_t>(r - 1)] = 1;
        strides[static_cast<std::size_t>(r - 2)] = shape[static_cast<std::size_t>(r - 1)] + 3;
        for (int k = r - 3; k >= 0; --k)
            strides[static_cast<std::size_t>(k)] =
                strides[static_cast<std::size_t>(k + 1)] * shape[static_cast<std::size_t>(k + 1)];
        storage = strides[0] * shape[0];
    } else if (layout == Layout::Stride0 && n > 1) {
        std::vector<int> wide;
        for (int k = 0; k < r; ++k)
            if (shape[static_cast<std::size_t>(k)] > 1) wide.push_back(k);
        const int dim = wide[key % wide.size()];
        Shape small = shape;
        small[static_cast<std::size_t>(dim)] = 1;
        strides = contiguous_strides(small);
        strides[static_cast<std::size_t>(dim)] = 0;
        storage = numel(small);
    } else {
        layout = Layout::Contiguous;
    }
    *used = layout;
    Tensor store = random_storage(storage, d, seed, tame);
    if (device.is_cuda()) store = store.to(device);
    return store.as_strided(shape, strides, offset);
}

}  // namespace loom::fuzz
