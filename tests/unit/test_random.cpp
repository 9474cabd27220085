// The lazy random ops (random_uniform, random_normal, bernoulli; docs/semantics.md, "Random numbers") on host
// tensors: the host back end against the CPU reference bit for bit at sizes 0, 1, 31, 32, 33, 4097 and large,
// in every float dtype, through views and fused into other work; the values are the core's function of the
// row-major index; the materializing Tensor functions give the lazy op's bits; seedless calls run on the
// host; statistics of large draws; errors.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <loom/loom.hpp>
#include <vector>

#include "loom/ir/random_core.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

const Device cpu = Device::cpu();

void check_reference_bits(const Array& y, const char* what) {
    const Tensor got = y;
    const Tensor expected = reference::evaluate(y.node());
    const testing::Comparison c = testing::compare(got, expected, testing::Tolerance::exact(), what);
    CHECK_MESSAGE(c.ok, what << ": " << c.message);
}

template <class T>
std::vector<T> values(const Tensor& t) {
    return t.to_vector<T>();
}

}  // namespace

TEST_CASE("random ops: host back end against the reference, every float dtype and size") {
    for (DType t : {float32, float64, float16, bfloat16}) {
        for (const Shape& s :
             std::vector<Shape>{{0}, {1}, {31}, {32}, {33}, {4097}, {3, 5, 7}, {}, {1 << 18}}) {
            CAPTURE(name(t));
            CAPTURE(to_string(s));
            check_reference_bits(random_uniform(s, 11, t, cpu), "random_uniform");
            check_reference_bits(random_normal(s, 12, t, cpu), "random_normal");
        }
    }
}

TEST_CASE("random ops: element i is the core's value of its row-major index, whatever the shape") {
    const std::uint64_t seed = 0x123456789abcdefull;  // both halves of the key matter
    const Tensor z = random_normal({3, 5, 7}, seed, float32, cpu);
    const Tensor u = random_uniform({105}, seed, float64, cpu);
    const auto zv = values<float>(z);
    const auto uv = values<double>(u);
    for (int i = 0; i < 105;
         ++i) {  // slot i mod 4 of block i / 4 (float32), i mod 2 of block i / 2 (float64)
        const ir::rng::Words w4 = ir::rng::draw(i / 4, static_cast<long long>(seed));
        CHECK(zv[static_cast<std::size_t>(i)] == ir::rng::normal_f32(w4, static_cast<unsigned int>(i % 4)));
        const ir::rng::Words w2 = ir::rng::draw(i / 2, static_cast<long long>(seed));
        CHECK(uv[static_cast<std::size_t>(i)] ==
              (i % 2 ? ir::rng::uniform_f64(w2.w[2], w2.w[3]) : ir::rng::uniform_f64(w2.w[0], w2.w[1])));
    }
    // Another shape of the same count: the same values in row-major order.
    CHECK(testing::same_bits(Tensor(random_normal({105}, seed, float32, cpu)).reshape({3, 5, 7}), z));
    // Seeds that differ only above bit 32 give other streams.
    CHECK(!testing::same_bits(random_normal({64}, 1, float32, cpu),
                              random_normal({64}, 1 + (1ull << 32), float32, cpu)));
}

TEST_CASE("random ops: fused equals materialized then added, bit for bit (reference and host back end)") {
    const Shape s{257, 33};
    const Tensor x = random_normal(s, float32, 5, cpu);  // materialized (Tensor)
    const Tensor noise = random_normal(s, float32, 6, cpu);
    const Tensor fused = x + 0.1 * random_normal(s, 6, float32, cpu);  // one kernel, the normals never stored
    const Tensor unfused = x + 0.1 * noise;
    CHECK(testing::same_bits(fused, unfused));
    check_reference_bits(x + 0.1 * random_normal(s, 6, float32, cpu), "x + 0.1 * random_normal");
    // Two random ops and a reduction in one graph.
    const Array both = sum(random_uniform(s, 7, float32, cpu) * random_normal(s, 8, float32, cpu), 1);
    check_reference_bits(both, "sum(uniform * normal)");
    // With fusion off every op is its own kernel: the same bits.
    auto f = loom::function(
        "noise_unfused",
        [](Array v) {
            return v + 0.1 * random_normal({257, 33}, 6, float32, Device::cpu());
        },
        Options{.fusion = false});
    CHECK(testing::same_bits(f(x), fused));
}

TEST_CASE("random ops: with fusion off each op is a kernel of the op's own dtype, the same bits") {
    // Evaluating unfused rebuilds every node on placeholders; a random op rebuilt as a plain binary op once
    // became float32 and wrote float32 bits into a half or float64 result.
    for (DType t : {float32, float64, float16, bfloat16}) {
        CAPTURE(name(t));
        const Tensor x = testing::random_tensor({33, 7}, t, 4);
        auto noisy = [t](Array v) {
            return v + random_normal({33, 7}, 9, t, Device::cpu()) -
                   random_uniform({33, 7}, 10, t, Device::cpu());
        };
        const Tensor fused = Array(noisy(x));
        auto unfused = loom::function("noisy_unfused", noisy, Options{.fusion = false});
        const Tensor got = unfused(x);
        CHECK(got.dtype() == t);
        CHECK(testing::same_bits(got, fused));
        check_reference_bits(noisy(x), "x + normal - uniform");
    }
}

TEST_CASE("random ops: views of a random array are views of its values") {
    const Tensor full = random_normal({6, 10}, 21, float32, cpu);
    const Array lazy = random_normal({6, 10}, 21, float32, cpu);
    CHECK(testing::same_bits(Tensor(lazy.transposed()), full.transposed().clone()));
    CHECK(testing::same_bits(Tensor(lazy.slice({{1, 5, 2}, {3, ir::SliceSpec::kNone}})),
                             full.slice({{1, 5, 2}, {3, ir::SliceSpec::kNone}}).clone()));
    CHECK(testing::same_bits(Tensor(lazy.reshape({60})), full.reshape({60})));
    check_reference_bits(lazy.transposed() * 2.0 + lazy.slice({{0, 1}}).reshape({10, 1}),
                         "views of a random array");
    // A broadcast random row: every row the same values.
    const Tensor rows = random_uniform({1, 8}, 22, float32, cpu).broadcast_to({4, 8});
    const auto v = values<float>(rows);
    for (int r = 1; r < 4; ++r)
        for (int c = 0; c < 8; ++c)
            CHECK(v[static_cast<std::size_t>(r * 8 + c)] == v[static_cast<std::size_t>(c)]);
}

TEST_CASE("random ops: the Tensor functions materialize the lazy ops") {
    for (DType t : {float32, float64, float16, bfloat16}) {
        CAPTURE(name(t));
        CHECK(testing::same_bits(random_normal({1000}, t, 31, cpu), random_normal({1000}, 31, t, cpu)));
        CHECK(testing::same_bits(random_uniform({1000}, t, 0.0, 1.0, 32, cpu),
                                 random_uniform({1000}, 32, t, cpu)));
    }
    // Integer and bool dtypes: rounded normal values, floors of uniform ones.
    const auto n = values<std::int32_t>(random_normal({4096}, int32, 33, cpu));
    const auto z = values<float>(random_normal({4096}, float32, 33, cpu));
    for (std::size_t i = 0; i < n.size(); ++i) CHECK(n[i] == static_cast<std::int32_t>(std::nearbyint(z[i])));
    const auto k = values<std::int64_t>(random_uniform({4096}, int64, -3.0, 7.0, 34, cpu));
    bool all_values[10] = {};
    for (auto v : k) {
        REQUIRE(v >= -3);
        REQUIRE(v < 7);
        all_values[v + 3] = true;
    }
    for (bool b : all_values) CHECK(b);
    const auto f = values<float>(random_uniform({1 << 16}, float32, 10.0, 110.0, 35, cpu));
    for (float v : f) {
        REQUIRE(v >= 10.0f);
        REQUIRE(v < 110.0f);
    }
    const auto h = values<float>(random_uniform({1 << 12}, float16, -1.0, 1.0, 36, cpu));
    for (float v : h) REQUIRE(v < 1.0f);
}

TEST_CASE("random ops: half uniform values are k 2^-11 (float16) and k 2^-8 (bfloat16)") {
    for (auto [t, p] : {std::pair{float16, 11}, std::pair{bfloat16, 8}}) {
        const auto v = values<float>(Tensor(random_uniform({1 << 14}, 41, t, cpu)));
        for (float x : v) {
            REQUIRE(x >= 0.0f);
            REQUIRE(x < 1.0f);
            const float k = std::ldexp(x, p);
            REQUIRE(k == std::floor(k));
        }
    }
}

TEST_CASE("random ops: seedless calls take next_seed() and run on the host without a GPU") {
    if (cuda_available()) return;  // the seedless form then draws on the GPU (tests/gpu)
    const std::uint64_t before = next_seed();
    const Tensor a = random_normal({4});
    const Tensor b = random_normal({4});
    CHECK(a.device().is_cuda() == false);
    CHECK(!testing::same_bits(a, b));
    CHECK(testing::same_bits(a, random_normal({4}, float32, before + 1, cpu)));
    CHECK(testing::same_bits(b, random_normal({4}, float32, before + 2, cpu)));
    const Tensor u = random_uniform({1 << 10}, float32, 10, 110);
    CHECK(u.device().is_cuda() == false);
}

TEST_CASE("random ops: means and variances of large draws") {
    const std::int64_t n = 1 << 22;
    auto moments = [](const std::vector<double>& v) {
        double m = 0, q = 0;
        for (double x : v) m += x;
        m /= static_cast<double>(v.size());
        for (double x : v) q += (x - m) * (x - m);
        return std::pair{m, q / static_cast<double>(v.size() - 1)};
    };
    for (DType t : {float32, float64}) {
        CAPTURE(name(t));
        const auto [zm, zv] = moments(values<double>(Tensor(random_normal({n}, 51, t, cpu))));
        CHECK(std::fabs(zm) < 5.0 / std::sqrt(static_cast<double>(n)));  // 5 standard errors
        CHECK(std::fabs(zv - 1.0) < 5.0 * std::sqrt(2.0 / static_cast<double>(n)));
        const auto [um, uv] = moments(values<double>(Tensor(random_uniform({n}, 52, t, cpu))));
        CHECK(std::fabs(um - 0.5) < 5.0 * std::sqrt(1.0 / 12.0 / static_cast<double>(n)));
        CHECK(std::fabs(uv - 1.0 / 12.0) < 0.001);
    }
    const auto [bm, bv] = moments(values<double>(Tensor(bernoulli(0.3, {n}, 53, cpu))));
    CHECK(std::fabs(bm - 0.3) < 5.0 * std::sqrt(0.21 / static_cast<double>(n)));
    (void)bv;
    // Normal tails: P(|z| > 3) = 0.0027.
    const auto z = values<float>(random_normal({n}, 54, float32, cpu));
    std::int64_t tail = 0;
    for (float x : z) tail += std::fabs(x) > 3.0f;
    CHECK(std::fabs(static_cast<double>(tail) / static_cast<double>(n) - 0.0026998) < 0.0003);
}

TEST_CASE("random ops: bernoulli compares uniform values with p, per element") {
    const Tensor p = from_host(std::vector<double>{0.0, 1.0, 0.5, 0.25}, {4}, float32, cpu);
    const Tensor b = bernoulli(Array(p).reshape({1, 4}).broadcast_to({1000, 4}), {1000, 4}, 61);
    CHECK(b.dtype() == loom::bool_);
    const auto v = values<std::uint8_t>(b);
    int ones[4] = {};
    for (std::size_t i = 0; i < v.size(); ++i) ones[i % 4] += v[i];
    CHECK(ones[0] == 0);
    CHECK(ones[1] == 1000);
    CHECK(std::abs(ones[2] - 500) < 100);
    CHECK(std::abs(ones[3] - 250) < 80);
    const auto u = values<float>(random_uniform({1000, 4}, 61, float32, cpu));
    for (std::size_t i = 0; i < v.size(); ++i)
        CHECK((v[i] != 0) == (u[i] < std::vector<float>{0, 1, 0.5f, 0.25f}[i % 4]));
    check_reference_bits(bernoulli(0.5, {33}, 62, cpu), "bernoulli");
}

TEST_CASE("random ops: errors name the API") {
    CHECK_THROWS_WITH_AS(random_normal({4}, 1, int32, cpu), doctest::Contains("random_normal"), Error);
    CHECK_THROWS_WITH_AS(random_uniform({-1}, 1, float32, cpu), doctest::Contains("random_uniform"), Error);
    CHECK_THROWS_WITH_AS(bernoulli(Array(random_uniform({3}, 1, float32, cpu)), {4}, 2),
                         doctest::Contains("bernoulli"), Error);
    CHECK_THROWS_WITH_AS(random_uniform({4}, float32, 1.0, 1.0, 3, cpu), doctest::Contains("random_uniform"),
                         Error);
}

TEST_CASE("random ops: the Tensor functions name the caller's line in errors") {
    const std::string where = fmt::format("test_random.cpp:{}", __LINE__ + 1);
    CHECK_THROWS_WITH_AS(random_uniform({4}, float32, 2.0, 1.0, 3, cpu), doctest::Contains(where.c_str()),
                         Error);
    if (!cuda_available()) {  // a GPU tensor without a GPU: the error names the call, not Loom's own line
        const std::string call = fmt::format("random_normal() (test_random.cpp:{})", __LINE__ + 1);
        CHECK_THROWS_WITH_AS(random_normal({4}, float32, 1, Device::cuda(0)), doctest::Contains(call.c_str()),
                             NoDeviceError);
    }
}

TEST_CASE("random ops: the generated CUDA draws the normals in the kernel") {
    const Tensor x = Tensor::host({1 << 10}, float32);
    const std::string src = cuda_source({x + 0.1 * random_normal({1 << 10}, 7, float32, cpu)});
    CHECK(src.find("lm::random_normal<float>(") != std::string::npos);
    CHECK(src.find("namespace rng") != std::string::npos);  // the core, pasted into the prelude
    const std::string ll = llvm_source({x + 0.1 * random_normal({1 << 10}, 7, float32, cpu)});
    CHECK(ll.find("loom_random_normal_f32") != std::string::npos);
}

TEST_CASE("random ops: a new seed or shape of the same rank compiles nothing") {
    const Tensor first = random_normal({1000}, 71, float32, cpu);
    const Stats before = stats();
    const Tensor second = random_normal({3000}, 72, float32, cpu);
    const Stats after = stats();
    CHECK(after.host_kernel_misses == before.host_kernel_misses);
    CHECK(!testing::same_bits(first, second.slice({{0, 1000}})));
}
