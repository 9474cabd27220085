// The host-only build (LOOM_CUDA=OFF; built only there, in place of test_runtime_nogpu.cpp): no device, every
// GPU entry point and NVRTC throw loom::NoDeviceError naming the API and the build, while host tensors, host
// evaluation, traced functions and the generated CUDA as text work.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/module.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

static_assert(LOOM_HAS_CUDA == 0, "test_host_only.cpp is built only with LOOM_CUDA=OFF");

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

/// The message of a GPU entry point of the host-only build: the API, then the build's reason.
void check_no_gpu(const std::string& msg, const std::string& api) {
    CHECK_MESSAGE(contains(msg, "no CUDA device found: " + api), msg);
    CHECK_MESSAGE(contains(msg, "LOOM_CUDA=OFF"), msg);
}

}  // namespace

TEST_CASE("host-only build: no device, and every GPU entry point throws NoDeviceError naming the API") {
    CHECK(device_count() == 0);
    CHECK(!cuda_available());
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { require_cuda("my_api()"); }),
                 "my_api() needs a GPU");
    // Each names the call the user wrote and its line, not a step inside it (an allocation, a copy).
    const int empty_line = __LINE__ + 2;
    check_no_gpu(loom_test::error_message<NoDeviceError>([] {
                     (void)Tensor::empty({4, 4}, float32, Device::cuda());
                 }),
                 fmt::format("Tensor::empty() on cuda:0 (test_host_only.cpp:{}) needs a GPU", empty_line));
    const int to_line = __LINE__ + 2;
    check_no_gpu(
        loom_test::error_message<NoDeviceError>([] { (void)Tensor::host({3}, float32).to(Device::cuda()); }),
        fmt::format("Tensor::to(cuda:0) (test_host_only.cpp:{}) needs a GPU", to_line));
    check_no_gpu(
        loom_test::error_message<NoDeviceError>([] { (void)random_normal({8}, float32, 1, Device::cuda()); }),
        "random_normal()");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { (void)device_info(0); }), "device_info()");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { (void)current_device(); }), "current_device()");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { set_device(0); }), "set_device()");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { (void)pool_stats(0); }), "pool_stats()");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { trim_pool(0); }), "trim_pool()");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { DeviceGuard g(0); }), "DeviceGuard");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { Stream s; }), "Stream");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { Event e; }), "Event");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { synchronize(); }), "synchronize()");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { PinnedBuffer b(64); }), "PinnedBuffer");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { (void)pinned_empty({2}, float32); }),
                 "pinned_empty()");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] {
                     const Tensor h = Tensor::host({2}, float32);
                     copy_async(h, h);
                 }),
                 "copy_async()");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { Pipeline p({}, {}); }),
                 "Stream");  // its streams come first
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { (void)Module::load("not an image", "m"); }),
                 "Module::load() of m");
    check_no_gpu(loom_test::error_message<NoDeviceError>([] { (void)time_calls([] {}, Device::cuda(0)); }),
                 "time_calls()");
    // A view of memory said to be a device's: made without a GPU, its evaluation and export need one.
    std::vector<float> memory(4);
    const Tensor on_gpu = Tensor::view(memory.data(), {4}, float32, {}, Device::cuda(0));
    const int line = __LINE__ + 1;
    const std::string to_host = loom_test::error_message<NoDeviceError>([&] { (void)on_gpu.to_host(); });
    check_no_gpu(to_host, fmt::format("Tensor::to(cpu) (test_host_only.cpp:{})", line));
    const std::string eval =
        loom_test::error_message<NoDeviceError>([&] { (void)Tensor(relu(Array(on_gpu))); });
    check_no_gpu(eval, fmt::format("eval() (test_host_only.cpp:{}) needs a GPU", line + 2));
    const std::string dl = loom_test::error_message<NoDeviceError>([&] { (void)on_gpu.to_dlpack(); });
    check_no_gpu(dl, fmt::format("to_dlpack() of a cuda:0 tensor (test_host_only.cpp:{})", line + 4));
    // NoDeviceError is a loom::Error, so generic handlers catch it.
    CHECK_THROWS_AS((void)Tensor::empty({1}, float32, Device::cuda()), Error);
    CHECK(!runtime_poisoned());
}

TEST_CASE("host-only build: NVRTC's entry points throw NoDeviceError, the generated CUDA is text") {
    const Tensor x = Tensor::host({1000}, float32);
    const Array y = relu(Array(x) * 1.5 + 0.25);
    nvrtc::Options o;
    const std::string msg = loom_test::error_message<NoDeviceError>(
        [&] { (void)nvrtc::compile("k", "__global__ void k() {}", o); });
    CHECK(contains(msg, "nvrtc::compile() of k needs NVRTC"));
    CHECK(contains(msg, "LOOM_CUDA=OFF"));
    CHECK(contains(loom_test::error_message<NoDeviceError>([&] { (void)nvrtc::ptx("k", "", o); }),
                   "nvrtc::ptx() of k"));
    CHECK(contains(loom_test::error_message<NoDeviceError>([&] { (void)compile({y}, "host_only_k"); }),
                   "needs NVRTC"));
    CHECK(contains(loom_test::error_message<NoDeviceError>([&] { (void)ptx({y}, "host_only_k"); }),
                   "needs NVRTC"));
    CHECK(nvrtc::compile_count() == 0);
    // Code generation needs no toolkit: the kernels for an H200, as without a GPU in the CUDA build.
    const std::string cu = cuda_source({y}, "host_only_k");
    CHECK(contains(cu, "__global__"));
    CHECK(contains(cu, "host_only_k"));
    CHECK(contains(explain({y}), "kernel"));
}

TEST_CASE(
    "host-only build: host tensors, evaluation and traced functions work, stream scopes are bookkeeping") {
    Tensor x = Tensor::host({5}, float32);
    for (int i = 0; i < 5; ++i) static_cast<float*>(x.data())[i] = static_cast<float>(i - 2);
    const Tensor y = relu(Array(x) * 1.5 + 0.5);
    for (int i = 0; i < 5; ++i) {
        const double v = (i - 2) * 1.5 + 0.5;
        CHECK(y.get_double(i) == (v > 0 ? v : 0.0));
    }
    auto f = function("host_only_f", [](Array a) { return sum(a * a); });
    CHECK(f(x).item<float>() == 10.0f);
    CHECK(memory::pointer_device(x.data()) == Device::cpu());
    CHECK(current_stream() == nullptr);
    CHECK(!is_capturing());
    int marker = 0;
    const auto stream = reinterpret_cast<cudaStream_t>(&marker);  // a handle the caller owns, never used
    with_stream(stream, [&] { CHECK(current_stream() == stream); });
    CHECK(current_stream() == nullptr);
    CHECK(!is_sticky(cudaSuccess));
}
