// Traced functions on the GPU: results against the reference and against the lazy path, preallocated and
// allocated outputs, specializations, kernel sharing, aliasing outputs, many calls without re-tracing.
#include <doctest/doctest.h>

#include "../unit/error_message.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;

TEST_CASE("traced function on the GPU: matches the reference and the lazy expression bit for bit") {
    auto f = loom::function("scale_bias_act", [](Array x, Array s, Array b) { return gelu_tanh(x * s + b); });
    Tensor x = rand({513, 1031}, float32, 1), s = rand({1031}, float32, 2), b = rand({1031}, float32, 3);
    Tensor out = Tensor::empty({513, 1031}, float32, dev());
    testing::poison(out);
    f(x, s, b, out);
    wait_device();
    require_reference({gelu_tanh(x * s + b)}, {out}, "traced scale_bias_act");
    Tensor lazy = gelu_tanh(x * s + b);
    require_same_bits(out, lazy, "traced vs lazy");
    const Tensor allocated = f(x, s, b);
    wait_device();
    require_same_bits(allocated, lazy, "allocating call vs lazy");
    CHECK(f.stats().specializations == 1);
}

TEST_CASE("traced function on the GPU: two results from one kernel, new data compiles nothing") {
    auto bs = loom::function("call_put", [](Array S, Array K, Array T) {
        Array sq = sqrt(T);
        Array d1 = (log(S / K) + 0.065 * T) / (0.3 * sq);
        Array d2 = d1 - 0.3 * sq;
        Array c1 = 0.5 * (1.0 + erf(d1 * 0.7071067811865476));
        Array c2 = 0.5 * (1.0 + erf(d2 * 0.7071067811865476));
        Array disc = K * exp(-0.02 * T);
        return std::tuple{S * c1 - disc * c2, disc * (1.0 - c2) - S * (1.0 - c1)};
    });
    const std::int64_t n = 100003;
    Tensor S = rand({n}, float32, 4, testing::Random::uniform(10, 110));
    Tensor K = rand({n}, float32, 5, testing::Random::uniform(10, 110));
    Tensor T = rand({n}, float32, 6, testing::Random::uniform(0.1, 2.1));
    auto [call, put] = bs(S, K, T);
    wait_device();
    CHECK(call.shape() == Shape{n});
    const auto compiles = kernel_cache_stats().compiles;
    Tensor S2 = rand({n}, float32, 7, testing::Random::uniform(10, 110));
    auto [call2, put2] = bs(S2, K, T);  // same specialization, new data: no compile
    wait_device();
    CHECK(kernel_cache_stats().compiles == compiles);
    Array sq = sqrt(T);
    Array d1 = (log(Array(S2) / K) + 0.065 * Array(T)) / (0.3 * sq);
    Array d2 = d1 - 0.3 * sq;
    Array c1 = 0.5 * (1.0 + erf(d1 * 0.7071067811865476));
    Array c2 = 0.5 * (1.0 + erf(d2 * 0.7071067811865476));
    Array disc = K * exp(-0.02 * Array(T));
    require_reference({S2 * c1 - disc * c2, disc * (1.0 - c2) - S2 * (1.0 - c1)}, {call2, put2},
                      "traced call/put");
}

TEST_CASE("traced function on the GPU: 10,000 calls without re-tracing, outputs aliasing inputs stay right") {
    auto step = loom::function("axpy", [](Array a, Array x, Array y) { return a * x + y; });
    Tensor a = rand({1}, float32, 8), x = rand({4096}, float32, 9), y = rand({4096}, float32, 10);
    Tensor out = Tensor::empty({4096}, float32, dev());
    for (int i = 0; i < 10000; ++i) step(a, x, y, out);
    wait_device();
    CHECK(step.stats().traces == 1);
    CHECK(step.stats().calls == 10000);
    require_reference({Array(a) * x + y}, {out}, "axpy");
    // y = a * x + y in place: the output is an argument.
    Tensor y_before = y.to_host();
    step(a, x, y, y);
    wait_device();
    const Tensor y_after = y.to_host();
    const Tensor x_host = x.to_host(), a_host = a.to_host();
    for (std::int64_t i = 0; i < 4096; i += 97) {
        const float want =
            static_cast<float>(a_host.get_double(0)) * static_cast<float>(x_host.get_double(i));
        CHECK(static_cast<float>(y_after.get_double(i)) == want + static_cast<float>(y_before.get_double(i)));
    }
}

TEST_CASE("traced function on the GPU: misaligned views and new shapes get their own specialization") {
    auto f = loom::function("negate", [](Array x) { return -x; });
    Tensor base = rand({1025}, float32, 11);
    Tensor aligned = base.as_strided({1024}, {1}, 0), shifted = base.as_strided({1024}, {1}, 1);
    const Tensor r1 = f(aligned), r2 = f(shifted), r3 = f(rand({7}, float32, 12));
    wait_device();
    CHECK(f.stats().specializations == 3);
    require_reference({-Array(shifted)}, {r2}, "negate misaligned");
    require_reference({-Array(aligned)}, {r1}, "negate aligned");
}

TEST_CASE("traced function on the GPU: arguments on two devices name the call and the definition") {
    auto f = loom::function("add_two", [](Array a, Array b) { return a + b; });
    const int def_line = __LINE__ - 1;
    const Tensor d = rand({16}, float32, 91), h = Tensor::host({16}, float32);
    const int line = __LINE__ + 1;
    const std::string msg = loom_test::error_message([&] { (void)f(d, h); });
    CHECK(msg.find("add_two(): argument 1 is on cpu but argument 0 is on cuda:0") == 0);
    CHECK(msg.find(fmt::format("test_function.cpp:{}; the function is defined at test_function.cpp:{})", line,
                               def_line)) != std::string::npos);
    CHECK(f.stats().specializations == 0);  // nothing was built
}

TEST_CASE("traced function on the GPU: cuda_source, ptx and llvm_source of device arguments run nothing") {
    auto f = loom::function("column_shares", [](Array x) { return sum(x / sum(x), 0); });
    Tensor x = rand({96, 64}, float32, 7);
    const std::string cuda = f.cuda_source(x);  // the kernels built for the device, in launch order
    std::size_t units = 0;
    for (std::size_t at = cuda.find("// ---- Loom "); at != std::string::npos;
         at = cuda.find("// ---- Loom ", at + 1))
        ++units;
    CHECK(units == 2);
    const codegen::DeviceInfo& info = device_info();
    const std::string ptx = f.ptx(x);
    CHECK(ptx.find(fmt::format(".target sm_{}{}", info.cc_major, info.cc_minor)) != std::string::npos);
    CHECK(f.llvm_source(x).find("define void @column_shares") != std::string::npos);
    CHECK(f.stats().calls == 0);
    CHECK(f.stats().specializations == 1);
    const Tensor y = f(x);  // the same specialization runs
    wait_device();
    CHECK(f.stats().specializations == 1);
    require_reference({sum(Array(x) / sum(Array(x)), 0)}, {y}, "column_shares");
}
