// Runtime without a GPU: cuda_available() is false, GPU entry points throw NoDeviceError naming the API,
// host tensors, host random tensors and NVRTC compilation work; CUDA errors name the failing call.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nvrtc.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "error_message.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/module.hpp"
#include "loom/runtime/pinned.hpp"
#include "loom/runtime/random.hpp"
#include "loom/runtime/stream.hpp"
#include "loom/runtime/tensor.hpp"

using namespace loom;

namespace {

bool contains(const std::string& s, const char* part) {
    return s.find(part) != std::string::npos;
}

cudaError_t fake_cuda_call(int) {
    return cudaErrorInvalidValue;
}

}  // namespace

TEST_CASE("without a GPU: cuda_available() is false and the first GPU use throws NoDeviceError") {
    if (cuda_available()) {
        MESSAGE("a CUDA device is present: the no-GPU behaviour is not tested here");
        return;
    }
    CHECK(device_count() == 0);
    CHECK_NOTHROW((void)cuda_available());

    const int empty_line = __LINE__ + 2;
    const std::string empty = loom_test::error_message<NoDeviceError>([] {
        (void)Tensor::empty({4, 4}, float32, Device::cuda());
    });
    CHECK(contains(empty, "no CUDA device found"));
    CHECK(contains(empty,
                   fmt::format("Tensor::empty() on cuda:0 (test_runtime_nogpu.cpp:{})", empty_line).c_str()));
    CHECK(contains(empty, "cudaGetDeviceCount()"));  // CUDA's reason is named
    MESSAGE(empty);

    const int rn_line = __LINE__ + 2;
    const std::string rn =
        loom_test::error_message<NoDeviceError>([] { (void)random_normal({8}, float32, 1, Device::cuda()); });
    const std::string rn_expected =
        fmt::format("no CUDA device found: random_normal() (test_runtime_nogpu.cpp:{}) needs a GPU", rn_line);
    CHECK(contains(rn, rn_expected.c_str()));  // the caller's line
    CHECK(contains(loom_test::error_message<NoDeviceError>(
                       [] { (void)random_uniform({8}, float16, 0, 1, 2, Device::cuda()); }),
                   "random_uniform()"));
    // The seedless forms draw on the host without a GPU (docs/semantics.md, "Random numbers").
    CHECK(!random_normal({8}).device().is_cuda());
    CHECK(!random_uniform({8}, float16, 0, 1).device().is_cuda());
    CHECK(contains(
        loom_test::error_message<NoDeviceError>([] { (void)Tensor::host({3}, float32).to(Device::cuda()); }),
        "no CUDA device found"));
    CHECK(contains(loom_test::error_message<NoDeviceError>([] { PinnedBuffer b(64); }), "PinnedBuffer"));
    CHECK(contains(loom_test::error_message<NoDeviceError>([] { (void)pinned_empty({2}, float32); }),
                   "pinned_empty()"));
    CHECK(contains(loom_test::error_message<NoDeviceError>([] { Stream s; }), "Stream"));
    CHECK(contains(loom_test::error_message<NoDeviceError>([] { Event e; }), "Event"));
    CHECK(contains(loom_test::error_message<NoDeviceError>([] { (void)device_info(0); }), "device_info()"));
    CHECK(contains(loom_test::error_message<NoDeviceError>([] { (void)current_device(); }),
                   "current_device()"));
    CHECK(contains(loom_test::error_message<NoDeviceError>([] { (void)Module::load("not an image", "m"); }),
                   "Module::load() of m"));
    // A CUDA call made anyway reports "no device", naming the call.
    const std::string raw =
        loom_test::error_message<NoDeviceError>([] { LOOM_CUDA_CHECK(cudaSetDevice(0)); });
    CHECK(contains(raw, "cudaSetDevice(0)"));
    // NoDeviceError is a loom::Error, so generic handlers catch it.
    CHECK_THROWS_AS((void)Tensor::empty({1}, float32, Device::cuda()), Error);
    CHECK(!runtime_poisoned());
}

TEST_CASE("host tensors work without a GPU: 64-byte aligned, copies and strided views") {
    for (std::int64_t n : {1, 3, 64, 1000}) {
        Tensor t = Tensor::host({n}, float64);
        CHECK(reinterpret_cast<std::uintptr_t>(t.data()) % 64 == 0);
        for (std::int64_t i = 0; i < n; ++i) static_cast<double*>(t.data())[i] = static_cast<double>(i) * 1.5;
        Tensor rev = t.as_strided({n}, {-1}, n - 1).to_host();
        CHECK(rev.is_contiguous());
        for (std::int64_t i = 0; i < n; ++i)
            REQUIRE(rev.get_double(i) == static_cast<double>(n - 1 - i) * 1.5);
    }
    CHECK(Tensor::host({0}, float32).numel() == 0);
    CHECK(current_stream() == cudaStreamPerThread);
    // Stream scopes are bookkeeping only until work is issued.
    with_stream(cudaStreamLegacy, [] { CHECK(current_stream() == cudaStreamLegacy); });
    CHECK(current_stream() == cudaStreamPerThread);
}

TEST_CASE("random tensors on the host device: moments, ranges, seeds, every dtype") {
    const std::int64_t n = 200001;  // odd on purpose
    Tensor x = random_normal({n}, float32, 7, Device::cpu());
    double s = 0, s2 = 0;
    std::int64_t zeros = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const double v = x.get_double(i);
        s += v;
        s2 += v * v;
        zeros += v == 0.0;
    }
    const double mean = s / static_cast<double>(n);
    CHECK(std::abs(mean) < 0.01);
    CHECK(std::abs(std::sqrt(s2 / static_cast<double>(n) - mean * mean) - 1.0) < 0.01);
    CHECK(zeros == 0);
    Tensor y = random_normal({n}, float32, 7, Device::cpu());
    CHECK(std::memcmp(x.data(), y.data(), x.nbytes()) == 0);
    Tensor z = random_normal({n}, float32, 8, Device::cpu());
    CHECK(std::memcmp(x.data(), z.data(), x.nbytes()) != 0);

    for (DType dt : kAllDTypes) {
        Tensor u =
            random_uniform({5001}, dt, dt == bool_ ? 0.0 : -3.0, dt == bool_ ? 2.0 : 5.0, 3, Device::cpu());
        bool in_range = true, varied = false;
        for (std::int64_t i = 0; i < u.numel(); ++i) {
            const double v = u.get_double(i);
            in_range &= dt == bool_ ? (v == 0.0 || v == 1.0) : (v >= -3.0 && v < 5.0);
            varied |= v != u.get_double(0);
        }
        CHECK(in_range);
        CHECK(varied);
    }
    // A bound that rounds: bfloat16 cannot hold 1 - 2^-20, so values near hi step down below it.
    Tensor b = random_uniform({100000}, bfloat16, 0.999, 1.0, 4, Device::cpu());
    for (std::int64_t i = 0; i < b.numel(); ++i) REQUIRE(b.get_double(i) < 1.0);
    CHECK_THROWS_AS(random_uniform({2}, float32, 2.0, 1.0, 1, Device::cpu()), Error);
    CHECK_THROWS_AS(random_uniform({2}, float32, 0.0, INFINITY, 1, Device::cpu()), Error);
    const auto seed1 = next_seed();
    const auto seed2 = next_seed();
    CHECK(seed2 == seed1 + 1);
}

TEST_CASE("CUDA errors name the call, the error and its code, sticky errors are classified") {
    try {
        LOOM_CUDA_CHECK(fake_cuda_call(3));
        FAIL("no exception");
    } catch (const CudaError& e) {
        const std::string msg = e.what();
        CHECK(e.code() == cudaErrorInvalidValue);
        CHECK(e.call() == "fake_cuda_call(3)");
        CHECK(contains(msg, "fake_cuda_call(3)"));
        CHECK(contains(msg, "cudaErrorInvalidValue (1)"));
        CHECK(contains(msg, "invalid argument"));
        CHECK(contains(msg, "test_runtime_nogpu.cpp:"));
    }
    CHECK(!runtime_poisoned());  // not sticky
    CHECK(is_sticky(cudaErrorIllegalAddress));
    CHECK(is_sticky(cudaErrorLaunchFailure));
    CHECK(is_sticky(cudaErrorMisalignedAddress));
    CHECK(is_sticky(cudaErrorAssert));
    CHECK(!is_sticky(cudaErrorMemoryAllocation));
    CHECK(!is_sticky(cudaErrorInvalidConfiguration));
    CHECK(!is_sticky(cudaErrorNoDevice));
    note_launch("fused_gelu_3", "app.cpp:42");
    CHECK(last_launch() == "fused_gelu_3 (app.cpp:42)");
}

TEST_CASE("NVRTC compiles to a cubin without a GPU, loading it is the first GPU use") {
    const char* src = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }";
    nvrtcProgram prog = nullptr;
    REQUIRE(nvrtcCreateProgram(&prog, src, "k.cu", 0, nullptr, nullptr) == NVRTC_SUCCESS);
    const char* opts[] = {"--gpu-architecture=sm_90"};
    REQUIRE(nvrtcCompileProgram(prog, 1, opts) == NVRTC_SUCCESS);
    std::size_t n = 0;
    REQUIRE(nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS);
    std::string cubin(n, '\0');
    REQUIRE(nvrtcGetCUBIN(prog, cubin.data()) == NVRTC_SUCCESS);
    nvrtcDestroyProgram(&prog);
    CHECK(n > 0);
    CHECK(cubin.compare(0, 4,
                        "\x7f"
                        "ELF") == 0);
    if (!cuda_available()) {
        const std::string msg =
            loom_test::error_message<NoDeviceError>([&] { (void)Module::load(cubin, "k_module"); });
        CHECK(contains(msg, "k_module"));
    }
}
