// Traced functions on host tensors (the CPU reference runs them): results, specializations, traces,
// captured scalars, errors, generated code, threads.
#include <doctest/doctest.h>

#include <loom/loom.hpp>

#include <thread>

using namespace loom;

namespace {

Tensor host_random(const Shape& shape, DType dt, std::uint64_t seed) {
    return testing::random_tensor(shape, dt, seed);
}

float at(const Tensor& t, std::int64_t i) { return static_cast<float>(t.get_double(i)); }

}  // namespace

TEST_CASE("a traced function gives the same values as the expression evaluated directly") {
    auto f = loom::function("scale_bias_act", [](Array x, Array scale, Array bias) { return gelu(x * scale + bias); });
    Tensor x = host_random({8, 16}, float32, 1), s = host_random({16}, float32, 2), b = host_random({16}, float32, 3);
    const Tensor got = f(x, s, b);
    const Tensor want = gelu(x * s + b);
    REQUIRE(got.shape() == Shape{8, 16});
    for (std::int64_t i = 0; i < got.numel(); ++i) CHECK(at(got, i) == at(want, i));
    Tensor out = Tensor::host({8, 16}, float32);
    testing::poison(out);
    f(x, s, b, out);  // preallocated output
    for (std::int64_t i = 0; i < out.numel(); ++i) CHECK(at(out, i) == at(want, i));
    CHECK(f.stats().calls == 2);
    CHECK(f.stats().specializations == 1);
    CHECK(f.stats().traces == 1);
}

TEST_CASE("several results come back as a std::array, in the order returned") {
    auto f = loom::function("sum_diff", [](Array a, Array b) { return std::tuple{a + b, a - b}; });
    Tensor a = host_random({5}, float64, 4), b = host_random({5}, float64, 5);
    auto [s, d] = f(a, b);
    for (int i = 0; i < 5; ++i) {
        CHECK(s.get_double(i) == a.get_double(i) + b.get_double(i));
        CHECK(d.get_double(i) == a.get_double(i) - b.get_double(i));
    }
}

TEST_CASE("a new specialization per dtype, shape or layout, the same arguments reuse it") {
    auto f = loom::function("twice", [](Array x) { return x * 2.0; });
    Tensor a = host_random({4, 4}, float32, 6), b = host_random({4, 4}, float32, 7);
    (void)f(a);
    (void)f(b);  // same specialization: new data only
    CHECK(f.stats().specializations == 1);
    (void)f(host_random({4, 5}, float32, 8));  // shape
    CHECK(f.stats().specializations == 2);
    (void)f(host_random({4, 4}, float64, 9));  // dtype
    CHECK(f.stats().specializations == 3);
    (void)f(a.as_strided({4, 4}, {1, 4}, 0));  // strides (a transposed view)
    CHECK(f.stats().specializations == 4);
    CHECK(f.stats().traces == 4);
    CHECK(f.stats().calls == 5);
}

TEST_CASE("scalars captured by the callable keep the value they had when it was traced") {
    double k = 3.0;
    auto f = loom::function("scale_by_k", [&k](Array x) { return x * k; });
    Tensor x = host_random({6}, float32, 10);
    const Tensor first = f(x);
    k = 5.0;  // too late: the specialization was traced with 3.0
    const Tensor second = f(x);
    for (int i = 0; i < 6; ++i) {
        CHECK(at(first, i) == at(x, i) * 3.0f);
        CHECK(at(second, i) == at(x, i) * 3.0f);
    }
}

TEST_CASE("errors name the function and the user's line") {
    auto bad = loom::function("bad_shapes", [](Array a, Array b) { return a + b; });
    Tensor a = host_random({4, 3}, float32, 11), b = host_random({5}, float32, 12);
    CHECK_THROWS_WITH_AS((void)bad(a, b), doctest::Contains("add(): shapes [4, 3] float32 and [5] float32 do not broadcast"),
                         Error);
    Tensor captured = host_random({3}, float32, 13);
    auto reads_capture = loom::function("reads_capture", [&captured](Array x) { return x + captured; });
    try {
        (void)reads_capture(a);
        FAIL("no exception");
    } catch (const Error& e) {
        const std::string msg = e.what();
        CHECK(msg.find("reads_capture(): the function reads a tensor that is not one of its arguments") == 0);
        CHECK(msg.find("test_function.cpp:") != std::string::npos);
    }
    Tensor out_wrong = Tensor::host({2}, float32);
    auto f = loom::function("plus_one", [](Array x) { return x + 1.0; });
    CHECK_THROWS_AS(f(a, out_wrong), Error);
}

TEST_CASE("cuda_source of a traced function shows its kernel, named after it") {
    auto f = loom::function("scale_bias_act", [](Array x, Array s, Array b) { return relu(x * s + b); });
    Tensor x = host_random({64, 32}, float32, 14), s = host_random({32}, float32, 15), b = host_random({32}, float32, 16);
    const std::string src = f.cuda_source(x, s, b);
    CHECK(src.find("scale_bias_act") != std::string::npos);
    CHECK(src.find("relu") != std::string::npos);
    CHECK(src.find("row broadcast") != std::string::npos);
}

TEST_CASE("calls from several threads share one specialization and give right results") {
    auto f = loom::function("cube", [](Array x) { return x * x * x; });
    Tensor x = host_random({32}, float32, 17);
    const Tensor want = Array(x) * x * x;
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 20; ++i) {
                const Tensor got = f(x);
                for (std::int64_t k = 0; k < got.numel(); ++k) wrong += at(got, k) != at(want, k);
            }
        });
    for (auto& th : threads) th.join();
    CHECK(wrong == 0);
    CHECK(f.stats().specializations == 1);
    CHECK(f.stats().calls == 80);
}

TEST_CASE("cuda_source of a traced function with reductions follows the arguments' layout") {
    // The kernels depend on the specialization: a transposed argument is read through its strides.
    auto f = loom::function("row_sums", [](Array x) { return sum(x, 1); });
    Tensor base = Tensor::host({64, 48}, float32);
    const std::string contiguous = f.cuda_source(base);
    const std::string transposed = f.cuda_source(base.as_strided({48, 64}, {1, 48}, 0));
    CHECK(contiguous.find("in0: input 0, float32, contiguous") != std::string::npos);
    CHECK(transposed.find("in0: input 0, float32, strided") != std::string::npos);
    // Negative strides (a reversed view) reach elements before element 0 of the view.
    Tensor rev = base.as_strided({64, 48}, {-48, 1}, 63 * 48);
    CHECK(f.cuda_source(rev).find("row_sums") != std::string::npos);
}
