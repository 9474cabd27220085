// loom::testing: tolerances derived from graphs, compare() on NaN/-0/poison, reference checks, random fills.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();

Tensor f32(const std::vector<float>& v) {
    Tensor t = Tensor::host({static_cast<std::int64_t>(v.size())}, float32);
    std::memcpy(t.data(), v.data(), v.size() * sizeof(float));
    return t;
}

NodePtr in(const Tensor& t, const char* label = "x") {
    return input(t.dtype(), t.shape(), label, t.impl());
}

}  // namespace

TEST_CASE("compare: exact results, NaN never passes by accident, sign of zero") {
    const auto tol = testing::Tolerance::exact();
    CHECK(testing::compare(f32({1, 2, kNaNf}), f32({1, 2, kNaNf}), tol).ok);
    auto c1 = testing::compare(f32({1, kNaNf, 3}), f32({1, 2, 3}), tol);
    CHECK(!c1.ok);
    CHECK(c1.mismatches == 1);
    CHECK(c1.worst_index == 1);
    CHECK(c1.message.find("[1]") != std::string::npos);
    CHECK(!testing::compare(f32({1, 2, 3}), f32({1, kNaNf, 3}), tol).ok);
    CHECK(!testing::compare(f32({1, 2, 3}), f32({1, kNaNf, 3}), {1e9, 1e9, "loose"}).ok);
    CHECK(!testing::compare(f32({-0.0f}), f32({0.0f}), tol).ok);
    CHECK(!testing::compare(f32({INFINITY}), f32({-INFINITY}), {1e9, 1e9, "loose"}).ok);
    CHECK(!testing::compare(f32({INFINITY}), f32({3e38f}), {4, 0, "4 ulp"}).ok);
    CHECK(!testing::compare(f32({1, 2}), f32({1, 2, 3}), tol).ok);
}

TEST_CASE("compare: ulps and the absolute floor") {
    const float one_up = std::nextafter(1.0f, 2.0f);
    const float two_up = std::nextafter(one_up, 2.0f);
    CHECK(!testing::compare(f32({one_up}), f32({1.0f}), testing::Tolerance::exact()).ok);
    CHECK(testing::compare(f32({one_up}), f32({1.0f}), {1, 0, "1 ulp"}).ok);
    auto c = testing::compare(f32({two_up, 1.0f}), f32({1.0f, 1.0f}), {1, 0, "1 ulp"});
    CHECK(!c.ok);
    CHECK(c.worst_ulps == 2.0);
    CHECK(c.worst_multi_index == std::vector<std::int64_t>{0});
    CHECK(testing::compare(f32({1e-9f}), f32({0.0f}), {1, 1e-8, "floor"}).ok);
    // a float32 result against a float64 oracle
    Tensor o = Tensor::host({1}, float64);
    *static_cast<double*>(o.data()) = 1.0 + 1e-9;
    CHECK(testing::compare(f32({1.0f}), o, {1, 0, "1 ulp"}).ok);
}

TEST_CASE("poison: unwritten elements are caught") {
    for (DType dt : {float32, float16, bfloat16, float64, bool_, int32, int8}) {
        Tensor expected = testing::random_tensor({64}, dt, 5, testing::Random::uniform(-3, 3));
        Tensor got = Tensor::host({64}, dt);
        std::memcpy(got.data(), expected.data(), got.nbytes());
        CHECK(testing::compare(got, expected, testing::Tolerance::exact()).ok);
        Tensor p = Tensor::host({64}, dt);
        testing::poison(p);
        std::memcpy(p.data(), expected.data(), 32 * itemsize(dt));  // the kernel "wrote" only half
        auto c = testing::compare(p, expected, testing::Tolerance{2, 1e-3, "loose"});
        CHECK_MESSAGE(!c.ok, name(dt));
        CHECK(c.mismatches == 32);
    }
}

TEST_CASE("random fills are deterministic per seed and respect ranges") {
    auto a = testing::random_tensor({200000}, float32, 42);
    auto b = testing::random_tensor({200000}, float32, 42);
    auto c = testing::random_tensor({200000}, float32, 43);
    CHECK(std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
    CHECK(std::memcmp(a.data(), c.data(), a.nbytes()) != 0);
    double sum = 0, sq = 0;
    for (std::int64_t i = 0; i < a.numel(); ++i) {
        sum += a.get_double(i);
        sq += a.get_double(i) * a.get_double(i);
    }
    CHECK(std::fabs(sum / 200000) < 0.01);
    CHECK(std::fabs(sq / 200000 - 1.0) < 0.02);
    auto i = testing::random_tensor({10000}, int8, 1, testing::Random::uniform(-3, 5));
    std::int64_t lo = 100, hi = -100;
    for (std::int64_t k = 0; k < i.numel(); ++k) {
        lo = std::min(lo, i.get_int(k));
        hi = std::max(hi, i.get_int(k));
    }
    CHECK(lo == -3);
    CHECK(hi == 5);
    auto u = testing::random_tensor({1000}, float16, 2, testing::Random::uniform(2, 4));
    for (std::int64_t k = 0; k < u.numel(); ++k) CHECK((u.get_double(k) >= 2 && u.get_double(k) <= 4));
    Tensor strided = Tensor::host({4, 4}, float32).as_strided({4}, {4}, 0);
    CHECK_THROWS_AS(testing::fill_random(strided, 1), loom::Error);
}

TEST_CASE("tolerances derived from the ops of a graph") {
    auto x = input(float32, {4}, "x");
    auto y = input(float32, {4}, "y");
    auto exact = binary(Op::Add, binary(Op::Mul, x, y), unary(Op::Sqrt, y));
    CHECK(testing::tolerance_for(exact).is_exact());
    CHECK(testing::tolerance_for(reduce(Op::Sum, cast(exact, float16), {}, false)).is_exact());
    auto e = unary(Op::Exp, x);
    const auto te = testing::tolerance_for(e);
    CHECK(te.ulps == testing::gpu_max_ulp(Op::Exp, float32) + testing::host_max_ulp(Op::Exp, float32));
    CHECK(te.ulps == 3);
    auto chain = binary(Op::Add, e, y);
    CHECK(testing::tolerance_for(chain).ulps == 7);  // 2 * 3 + 1 (docs/semantics.md)
    CHECK(testing::tolerance_for(chain).abs == doctest::Approx(7 * std::ldexp(1.0, -23)));
    CHECK(testing::tolerance_for(unary(Op::Tan, cast(x, float16))).ulps == 1);
    CHECK(testing::tolerance_for(cast(unary(Op::Exp, x), int32)).is_exact());
    CHECK(testing::gpu_max_ulp(Op::Pow, float32) == 4);
    CHECK(testing::gpu_max_ulp(Op::Add, float32) == 0);
}

TEST_CASE("check_against_reference passes on reference results and names the worst element otherwise") {
    Tensor a = testing::random_tensor({3, 100}, float32, 3);
    auto x = in(a);
    auto y = unary(Op::Tanh, binary(Op::Mul, x, x));
    auto s = reduce(Op::Sum, y, {1}, false);
    auto results = reference::evaluate({y, s});
    CHECK(testing::check_against_reference({y, s}, results).ok);
    testing::require_matches_reference({y, s}, results);
    // perturb one element by far more than the tolerance
    auto* p = static_cast<float*>(results[0].data());
    p[157] += 0.5f;
    auto c = testing::check_against_reference({y, s}, results);
    CHECK(!c.ok);
    CHECK(c.worst_index == 157);
    CHECK(c.worst_multi_index == std::vector<std::int64_t>{1, 57});
    CHECK(c.message.find("[1, 57]") != std::string::npos);
    CHECK_THROWS_AS(testing::require_matches_reference({y, s}, results), loom::Error);
    // a result within tolerance (one ulp off after tanh) passes
    auto fresh = reference::evaluate({y, s});
    auto* q = static_cast<float*>(fresh[0].data());
    q[3] = std::nextafter(q[3], 2.0f);
    CHECK(testing::check_against_reference({y, s}, fresh).ok);
}

TEST_CASE(
    "fast math widens the tolerances openly, float64 and exact graphs but for flushed subnormals keep "
    "theirs") {
    Tensor a = testing::random_tensor({64}, float32, 5), d = testing::random_tensor({64}, float64, 6);
    auto x = in(a);
    const testing::Tolerance normal = testing::tolerance_for(unary(Op::Exp, x));
    const testing::Tolerance fast = testing::tolerance_for(unary(Op::Exp, x), 1.0, true);
    CHECK(normal.ulps == 3);  // exp: 2 ulps on the GPU, 1 in the reference
    CHECK(fast.ulps == testing::kFastMathUlp + 1);
    CHECK(fast.abs >= testing::kFastMathAbs);
    CHECK(fast.derivation.find("widened for fast math") != std::string::npos);
    // float64 is not compiled differently under fast math.
    CHECK(testing::tolerance_for(unary(Op::Exp, in(d)), 1.0, true).ulps ==
          testing::tolerance_for(unary(Op::Exp, in(d))).ulps);
    // An exact graph passes with an absolute error of the smallest normal float32: subnormals may flush.
    const testing::Tolerance exact = testing::tolerance_for(binary(Op::Mul, x, x), 1.0, true);
    CHECK(exact.ulps == 0);
    CHECK(exact.abs == std::ldexp(1.0, -126));
    CHECK(exact.derivation.find("flushes to zero") != std::string::npos);
    CHECK(testing::tolerance_for(binary(Op::Mul, x, x)).is_exact());
}

TEST_CASE("same_bits: dtype, shape and every bit, strides aside") {
    Tensor a = Tensor::host({2, 3}, DType::Float32);
    auto* p = static_cast<float*>(a.data());
    for (int i = 0; i < 6; ++i) p[i] = 0.5f * static_cast<float>(i) - 1.0f;
    CHECK(testing::same_bits(a, a.clone()));
    CHECK(testing::same_bits(a.transposed(), a.transposed().clone()));  // a strided view and its copy
    CHECK_FALSE(testing::same_bits(a, a.reshape({3, 2}).clone()));      // the shape
    Tensor b = a.clone();
    static_cast<float*>(b.data())[2] = -0.0f;  // p[2] is +0: equal as values, not as bits
    CHECK(p[2] == 0.0f);
    CHECK_FALSE(testing::same_bits(a, b));
    const std::uint32_t nan1 = 0x7fc00001u, nan2 = 0x7fc00002u;
    Tensor c = a.clone(), d = a.clone();
    std::memcpy(static_cast<float*>(c.data()) + 4, &nan1, 4);
    std::memcpy(static_cast<float*>(d.data()) + 4, &nan2, 4);
    CHECK(testing::same_bits(c, c.clone()));
    CHECK_FALSE(testing::same_bits(c, d));  // NaN payloads
    CHECK_FALSE(testing::same_bits(Tensor::host({2}, DType::Int32), Tensor::host({2}, DType::Float32)));
}
