// GPU tests: seeded random tensors from cuRAND: moments, ranges, determinism, odd counts, every dtype.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>

#include "loom/runtime/device.hpp"
#include "loom/runtime/random.hpp"
#include "loom/runtime/tensor.hpp"

using namespace loom;

namespace {

struct Moments {
    double mean = 0, std = 0, lo = 1e300, hi = -1e300;
    std::int64_t zeros = 0;
};

Moments moments(const Tensor& t) {
    Tensor h = t.to_host();
    Moments m;
    const auto n = h.numel();
    double s = 0, s2 = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const double v = h.get_double(i);
        s += v;
        s2 += v * v;
        m.lo = std::min(m.lo, v);
        m.hi = std::max(m.hi, v);
        m.zeros += v == 0.0;
    }
    m.mean = s / static_cast<double>(n);
    m.std = std::sqrt(s2 / static_cast<double>(n) - m.mean * m.mean);
    return m;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
    Tensor ha = a.to_host(), hb = b.to_host();
    return ha.nbytes() == hb.nbytes() && std::memcmp(ha.data(), hb.data(), ha.nbytes()) == 0;
}

}  // namespace

TEST_CASE("random_normal float32 on the device: standard moments, no zeros, seeded") {
    Tensor x = random_normal({1 << 22}, float32, 42, Device::cuda());
    CHECK(x.device() == Device::cuda(0));
    const Moments m = moments(x);
    CHECK(std::abs(m.mean) < 0.005);
    CHECK(std::abs(m.std - 1.0) < 0.005);
    CHECK(m.zeros == 0);
    CHECK(m.lo < -4.0);
    CHECK(m.hi > 4.0);
    CHECK(same_bytes(x, random_normal({1 << 22}, float32, 42, Device::cuda())));
    CHECK(!same_bytes(x, random_normal({1 << 22}, float32, 43, Device::cuda())));
    // The seedless overload draws a new seed every call.
    CHECK(!same_bytes(random_normal({1000}), random_normal({1000})));
}

TEST_CASE("random_normal: odd counts and every dtype") {
    for (std::int64_t n : {1, 31, 33, 4097}) {
        CAPTURE(n);
        for (DType dt : {float32, float64}) {
            Tensor x = random_normal({n}, dt, 7, Device::cuda());
            const Moments m = moments(x);
            CHECK(m.zeros == 0);
            if (n > 1) CHECK(m.lo < m.hi);
        }
    }
    const std::int64_t n = 1 << 20;
    for (DType dt : {float64, float16, bfloat16}) {
        CAPTURE(dt);
        const Moments m = moments(random_normal({n + 1}, dt, 3, Device::cuda()));
        CHECK(std::abs(m.mean) < 0.01);
        CHECK(std::abs(m.std - 1.0) < 0.01);
        CHECK(m.zeros < n / 1000);  // f16/bf16 round tiny values to zero rarely
    }
    // Integers: rounded normal values; bool: value > 0.
    const Moments mi = moments(random_normal({n}, int32, 5, Device::cuda()));
    CHECK(std::abs(mi.mean) < 0.01);
    CHECK(mi.hi >= 3);
    CHECK(mi.lo <= -3);
    const Moments mb = moments(random_normal({n}, bool_, 5, Device::cuda()));
    CHECK(std::abs(mb.mean - 0.5) < 0.01);
}

TEST_CASE("random_uniform: values from lo up to but excluding hi for every dtype, sensible moments") {
    const std::int64_t n = 1 << 20;
    {
        const Moments m = moments(random_uniform({n}, float32, 10.0, 110.0, 11, Device::cuda()));
        CHECK(m.lo >= 10.0);
        CHECK(m.hi < 110.0);
        CHECK(m.lo < 10.1);
        CHECK(m.hi > 109.9);
        CHECK(std::abs(m.mean - 60.0) < 0.2);
        CHECK(std::abs(m.std - 100.0 / std::sqrt(12.0)) < 0.2);
    }
    for (DType dt : {float64, float16, bfloat16, float32}) {
        CAPTURE(dt);
        const Moments m = moments(random_uniform({n + 1}, dt, -1.0, 1.0, 12, Device::cuda()));
        CHECK(m.lo >= -1.0);
        CHECK(m.hi < 1.0);
        CHECK(std::abs(m.mean) < 0.01);
    }
    Tensor ints = random_uniform({n}, int32, 0.0, 10.0, 13, Device::cuda()).to_host();
    std::set<std::int64_t> seen;
    for (std::int64_t i = 0; i < n; ++i) seen.insert(ints.get_int(i));
    CHECK(seen.size() == 10);
    CHECK(*seen.begin() == 0);
    CHECK(*seen.rbegin() == 9);
    CHECK_THROWS_AS(random_uniform({4}, float32, 1.0, 1.0, 1, Device::cuda()), Error);
    CHECK(same_bytes(random_uniform({999}, float16, 0.5, 2.0, 9, Device::cuda()),
                     random_uniform({999}, float16, 0.5, 2.0, 9, Device::cuda())));
}

TEST_CASE("random tensors on the host device: same kinds of values from std::mt19937_64") {
    Tensor x = random_normal({1 << 20}, float32, 1, Device::cpu());
    CHECK(x.device() == Device::cpu());
    const Moments m = moments(x);
    CHECK(std::abs(m.mean) < 0.005);
    CHECK(std::abs(m.std - 1.0) < 0.005);
    const Moments u = moments(random_uniform({1 << 20}, bfloat16, 10.0, 110.0, 2, Device::cpu()));
    CHECK(u.lo >= 10.0);
    CHECK(u.hi < 110.0);
}

TEST_CASE("random tensors of size 0") {
    CHECK(random_normal({0}, float32, 1, Device::cuda()).numel() == 0);
    CHECK(random_uniform({0, 5}, float16, 0.0, 1.0, 1, Device::cuda()).numel() == 0);
}
