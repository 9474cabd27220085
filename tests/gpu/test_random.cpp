// GPU tests of random numbers drawn in kernels (docs/semantics.md, "Random numbers"): the GPU's bits equal
// the CPU reference's for every float dtype, at sizes 0, 1, 31, 32, 33, 4097 and large, under every launch
// shape (the vector and scalar variants, the grid-stride loop, reductions, 64-bit indexing), fused and
// unfused, through views, in traced functions and for the materializing Tensor functions; the host's bits
// equal the GPU's; moments, ranges and seeds of the Tensor functions in every dtype.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <loom/loom.hpp>
#include <set>

#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

const Device cuda0 = Device::cuda(0);
const Device cpu = Device::cpu();

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
    return ha.dtype() == hb.dtype() && ha.shape() == hb.shape() && ha.nbytes() == hb.nbytes() &&
           std::memcmp(ha.data(), hb.data(), ha.nbytes()) == 0;
}

// Evaluates `build(device)` on the GPU and the same graph on the CPU reference (host inputs), bit for bit.
void gpu_equals_reference(const std::function<Array(Device)>& build, const char* what) {
    const Tensor got = build(cuda0);
    const Tensor expected = reference::evaluate(build(cpu).node());
    const testing::Comparison c =
        testing::compare(got.to_host(), expected, testing::Tolerance::exact(), what);
    CHECK_MESSAGE(c.ok, what << ": " << c.message);
}

}  // namespace

TEST_CASE("random ops on the GPU equal the reference bit for bit: every float dtype and size") {
    for (DType t : {float32, float64, float16, bfloat16}) {
        for (const Shape& s :
             std::vector<Shape>{{0}, {1}, {31}, {32}, {33}, {4097}, {3, 5, 7}, {}, {1 << 22}}) {
            CAPTURE(name(t));
            CAPTURE(to_string(s));
            gpu_equals_reference([&](Device d) { return random_uniform(s, 11, t, d); }, "random_uniform");
            gpu_equals_reference([&](Device d) { return random_normal(s, 0xfedcba9876543210ull, t, d); },
                                 "random_normal");
        }
    }
}

TEST_CASE("random ops on the GPU: every launch shape gives the reference's bits") {
    const Tensor xh = testing::random_tensor({4097, 33}, float32, 3);
    const Tensor xg = xh.to(cuda0);
    auto x = [&](Device d) { return Array(d.is_cuda() ? xg : xh); };
    const Shape s{4097, 33};
    // Vector variant (contiguous, aligned), and the scalar variant (an input at an odd offset).
    gpu_equals_reference([&](Device d) { return x(d) + 0.1 * random_normal(s, 5, float32, d); }, "N1");
    gpu_equals_reference(
        [&](Device d) {
            const Tensor in = d.is_cuda() ? xg : xh;
            return Array(in.reshape({4097 * 33}).slice({{1, ir::SliceSpec::kNone}})) +
                   random_uniform({4097 * 33 - 1}, 6, float32, d);
        },
        "scalar variant");
    // A random array read from an offset: the vector variants compute a lane's index from lane 0's low bits
    // cleared (lm::vector_lane), so an index that starts off a multiple of 4 takes the scalar variant, and
    // one that starts on it the vector variant; both give the reference's bits.
    const Tensor flat = xg.reshape({4097 * 33});
    const Tensor flat_h = xh.reshape({4097 * 33});
    for (const std::int64_t start : {1, 3, 4, 6}) {
        gpu_equals_reference(
            [&](Device d) {
                const std::int64_t n = 4096 * 32;
                return Array((d.is_cuda() ? flat : flat_h).slice({{0, n}})) +
                       random_normal({n + start}, 15, float32, d).slice({{start, ir::SliceSpec::kNone}});
            },
            fmt::format("normals from offset {}", start).c_str());
        gpu_equals_reference(
            [&](Device d) {
                const Tensor rows = (d.is_cuda() ? flat : flat_h).slice({{0, 4096 * 32}}).reshape({4096, 32});
                return Array(rows) *
                       random_uniform({32 + start}, 16, float32, d).slice({{start, ir::SliceSpec::kNone}});
            },
            fmt::format("uniform row from offset {}", start).c_str());
    }
    // Four normal draws: the grid-stride loop of arithmetic-heavy kernels.
    gpu_equals_reference(
        [&](Device d) {
            return random_normal(s, 1, float32, d) + random_normal(s, 2, float32, d) +
                   random_normal(s, 3, float32, d) * random_normal(s, 4, float32, d);
        },
        "grid-stride");
    // In reductions (row and column order) and a normalization.
    gpu_equals_reference([&](Device d) { return sum(x(d) * random_normal(s, 7, float32, d), 1); }, "row sum");
    gpu_equals_reference([&](Device d) { return sum(random_uniform(s, 8, float64, d), 0); }, "column sum");
    // A normalization: its exp lies within an ulp bound of the reference's, not on its bits
    // (docs/semantics.md, section 9), so the normals drawn inside it must give the bits of the same softmax
    // over the materialized normals.
    {
        const Tensor noise = random_normal(s, 9, float32, cuda0);
        const Tensor drawn = softmax(x(cuda0) + random_normal(s, 9, float32, cuda0), -1);
        const Tensor materialized = softmax(x(cuda0) + noise, -1);
        CHECK_MESSAGE(same_bytes(drawn, materialized), "softmax over normals drawn in the kernel");
    }
    // Views of random arrays: transposed (a tiled kernel beside a tensor), sliced, broadcast.
    gpu_equals_reference(
        [&](Device d) {
            return x(d) * random_uniform({33, 4097}, 10, float32, d).transposed();
        },
        "transposed");
    gpu_equals_reference(
        [&](Device d) {
            return random_normal({8200, 40}, 11, bfloat16, d).slice({{1, ir::SliceSpec::kNone, 2}, {3, 36}});
        },
        "sliced");
    gpu_equals_reference([&](Device d) { return x(d) - random_normal({33}, 12, float32, d); },
                         "broadcast row");
    gpu_equals_reference([&](Device d) { return bernoulli(x(d) * 0.1 + 0.5, s, 13); }, "bernoulli");
    // 64-bit indexing: more than 2^31 elements of a broadcast (no memory) reduced.
    gpu_equals_reference(
        [&](Device d) {
            return sum(random_uniform({1 << 12, 1}, 14, float32, d).broadcast_to({1 << 12, 1 << 20}), 1);
        },
        "64-bit index");
}

TEST_CASE("random ops on the GPU: fused equals unfused and materialized, traced functions too") {
    const Shape s{1 << 20};
    const Tensor x = random_normal(s, float32, 21, cuda0);
    const Tensor fused = Array(x) + 0.1 * random_normal(s, 22, float32, cuda0);
    const Tensor materialized = Array(x) + 0.1 * Array(random_normal(s, float32, 22, cuda0));
    CHECK(same_bytes(fused, materialized));
    auto unfused = loom::function(
        "noise_unfused",
        [](Array v) { return v + 0.1 * random_normal({1 << 20}, 22, float32, Device::cuda(0)); },
        Options{.fusion = false});
    CHECK(same_bytes(unfused(x), fused));
}

TEST_CASE("random tensors: the host's bits are the GPU's, every dtype") {
    for (DType t : {float32, float64, float16, bfloat16, int32, int64, int8, uint8, bool_}) {
        CAPTURE(name(t));
        CHECK(same_bytes(random_normal({4097}, t, 42, cuda0), random_normal({4097}, t, 42, cpu)));
        CHECK(same_bytes(random_uniform({4097}, t, -3.0, 110.0, 43, cuda0),
                         random_uniform({4097}, t, -3.0, 110.0, 43, cpu)));
    }
    CHECK(
        same_bytes(random_normal({1 << 24}, float32, 44, cuda0), random_normal({1 << 24}, 44, float32, cpu)));
}

TEST_CASE("random_normal float32 on the device: standard moments, seeded") {
    Tensor x = random_normal({1 << 22}, float32, 42, Device::cuda());
    CHECK(x.device() == Device::cuda(0));
    const Moments m = moments(x);
    CHECK(std::abs(m.mean) < 0.005);
    CHECK(std::abs(m.std - 1.0) < 0.005);
    CHECK(m.zeros <= 2);  // a zero needs u = 1 or a quarter turn exactly: about 3 in 2^24
    CHECK(m.lo < -4.0);
    CHECK(m.hi > 4.0);
    CHECK(same_bytes(x, random_normal({1 << 22}, float32, 42, Device::cuda())));
    CHECK(!same_bytes(x, random_normal({1 << 22}, float32, 43, Device::cuda())));
    // The seedless overload draws a new seed every call, on the current device.
    const Tensor a = random_normal({1000}), b = random_normal({1000});
    CHECK(a.device().is_cuda());
    CHECK(!same_bytes(a, b));
}

TEST_CASE("random_normal: every dtype") {
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

TEST_CASE("random tensors of size 0") {
    CHECK(random_normal({0}, float32, 1, Device::cuda()).numel() == 0);
    CHECK(random_uniform({0, 5}, float16, 0.0, 1.0, 1, Device::cuda()).numel() == 0);
}
