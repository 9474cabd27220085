// GPU tests: NVRTC-compiled images loaded as Modules (cubin and PTX), kernels by name, one-struct
// launches with large dynamic shared memory and on user streams, and launch errors that are not sticky.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "../unit/error_message.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/module.hpp"
#include "loom/runtime/random.hpp"
#include "loom/runtime/stream.hpp"
#include "loom/runtime/tensor.hpp"
#include "nvrtc_util.hpp"

using namespace loom;

namespace {

// The kernels take one struct by value, as Loom's generated kernels do.
const char* kSource = R"(
struct ScaleArgs { float* out; const float* in; float scale; unsigned n; };
extern "C" __global__ void scale_kernel(ScaleArgs a) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < a.n) a.out[i] = a.in[i] * a.scale;
}
// Stages each block's values through the far end of a large dynamic shared-memory buffer.
struct SmemArgs { float* out; const float* in; unsigned n; unsigned smem_floats; };
extern "C" __global__ void smem_kernel(SmemArgs a) {
    extern __shared__ float buf[];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float* slot = buf + (a.smem_floats - blockDim.x) + threadIdx.x;
    *slot = i < a.n ? a.in[i] : 0.0f;
    __syncthreads();
    if (i < a.n) a.out[i] = *slot + 1.0f;
}
extern "C" __global__ void empty_kernel() {}
)";

struct ScaleArgs {
    float* out;
    const float* in;
    float scale;
    unsigned n;
};
struct SmemArgs {
    float* out;
    const float* in;
    unsigned n;
    unsigned smem_floats;
};

Module load_test_module(bool ptx = false) {
    const auto& info = device_info();
    const std::string arch =
        ptx ? "compute_" + std::to_string(info.cc_major) + std::to_string(info.cc_minor) : info.arch();
    return Module::load(loom_test::nvrtc_compile(kSource, arch, ptx),
                        ptx ? "test_module_ptx" : "test_module");
}

unsigned blocks(std::int64_t n, unsigned block) {
    return static_cast<unsigned>((n + block - 1) / block);
}

}  // namespace

TEST_CASE("module: cubin from NVRTC, kernel by name, one-struct launch, results checked") {
    Module m = load_test_module();
    CHECK(m.loaded());
    CHECK(m.device() == 0);
    Kernel k =
        m.kernel("scale_kernel", sizeof(ScaleArgs));  // the caller declares the parameter; nothing is probed
    CHECK(k.name() == "scale_kernel");
    CHECK(k.param_bytes() == static_cast<long>(sizeof(ScaleArgs)));
    CHECK(m.kernel("scale_kernel").handle() == k.handle());  // cached
    CHECK(m.kernel("empty_kernel", 0).param_bytes() == 0);
    CHECK(m.kernel("empty_kernel").param_bytes() == 0);  // as declared first
    for (std::int64_t n : {1, 31, 32, 33, 4097, 1 << 20}) {
        CAPTURE(n);
        Tensor in = random_normal({n}, float32, static_cast<std::uint64_t>(n), Device::cuda());
        Tensor out = Tensor::empty({n}, float32, Device::cuda());
        ScaleArgs a{static_cast<float*>(out.data()), static_cast<const float*>(in.data()), -2.5f,
                    static_cast<unsigned>(n)};
        LaunchConfig cfg;
        cfg.grid.x = blocks(n, 256);
        cfg.block.x = 256;
        k.launch(cfg, &a, sizeof a, "test_module.cpp:scale");
        Tensor hi = in.to_host(), ho = out.to_host();
        for (std::int64_t i = 0; i < n; ++i)
            if (ho.get_double(i) != static_cast<double>(static_cast<float>(hi.get_double(i)) * -2.5f))
                FAIL("element ", i);
    }
    CHECK(last_launch() == "scale_kernel (test_module.cpp:scale)");
    m.kernel("empty_kernel").launch(LaunchConfig{}, nullptr, 0);
    synchronize();
}

TEST_CASE("module: PTX image, JIT-compiled by the driver, launched on a user stream") {
    Module m = load_test_module(/*ptx=*/true);
    Kernel k = m.kernel("scale_kernel");
    Stream s;
    const std::int64_t n = 10000;
    with_stream(s, [&] {
        Tensor in = random_normal({n}, float32, 5, Device::cuda());
        Tensor out = Tensor::empty({n}, float32, Device::cuda());
        ScaleArgs a{static_cast<float*>(out.data()), static_cast<const float*>(in.data()), 4.0f,
                    static_cast<unsigned>(n)};
        LaunchConfig cfg;  // made inside the scope: its stream is s
        CHECK(cfg.stream == s.get());
        cfg.grid.x = blocks(n, 128);
        cfg.block.x = 128;
        k.launch(cfg, &a, sizeof a);
        Tensor hi = in.to_host(), ho = out.to_host();
        for (std::int64_t i = 0; i < n; ++i) REQUIRE(ho.get_double(i) == hi.get_double(i) * 4.0);
    });
}

TEST_CASE("module: dynamic shared memory beyond 48 KiB sets the kernel attribute per device") {
    Module m = load_test_module();
    Kernel k = m.kernel("smem_kernel");
    const std::size_t smem = 100 * 1024;
    REQUIRE(device_info().shared_mem_per_block_optin >= smem);
    const std::int64_t n = 5000;
    Tensor in = random_normal({n}, float32, 8, Device::cuda());
    Tensor out = Tensor::empty({n}, float32, Device::cuda());
    SmemArgs a{static_cast<float*>(out.data()), static_cast<const float*>(in.data()),
               static_cast<unsigned>(n), static_cast<unsigned>(smem / sizeof(float))};
    LaunchConfig cfg;
    cfg.grid.x = blocks(n, 256);
    cfg.block.x = 256;
    cfg.shared_bytes = smem;
    k.launch(cfg, &a, sizeof a);
    k.launch(cfg, &a, sizeof a);  // attribute already set: no second call
    Tensor hi = in.to_host(), ho = out.to_host();
    for (std::int64_t i = 0; i < n; ++i)
        REQUIRE(ho.get_double(i) == static_cast<double>(static_cast<float>(hi.get_double(i)) + 1.0f));
    cfg.shared_bytes =
        device_info().shared_mem_per_block_optin + 4096;  // beyond the opt-in limit: no CUDA call
    const std::string msg = loom_test::error_message([&] { k.launch(cfg, &a, sizeof a); });
    CHECK(
        msg ==
        fmt::format(
            "Kernel::launch(): kernel smem_kernel asks for {} bytes of dynamic shared memory; cuda:0 allows "
            "at most {} per block",
            cfg.shared_bytes, device_info().shared_mem_per_block_optin));
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(!runtime_poisoned());
}

TEST_CASE("module errors: wrong parameter size, missing kernel, bad image, bad launch configuration") {
    Module m = load_test_module();
    Kernel k = m.kernel("scale_kernel", sizeof(ScaleArgs));
    ScaleArgs a{};
    LaunchConfig cfg;
    cfg.block.x = 32;
    try {
        k.launch(cfg, &a, sizeof a - 4, "app.cpp:12");
        FAIL("no exception");
    } catch (const Error& e) {
        const std::string msg = e.what();
        CHECK(msg.find("scale_kernel") != std::string::npos);
        CHECK(msg.find("app.cpp:12") != std::string::npos);
    }
    try {
        (void)m.kernel("no_such_kernel");
        FAIL("no exception");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("no_such_kernel") != std::string::npos);
    }
    try {
        (void)Module::load(std::string(64, 'x'), "garbage_image");
        FAIL("no exception");
    } catch (const Error& e) {
        const std::string msg = e.what();
        CHECK(msg.find("neither a cubin, a fatbin nor PTX") != std::string::npos);
        CHECK(msg.find("garbage_image") != std::string::npos);
    }
    // 2048 threads per block: an invalid configuration, reported at launch, not sticky.
    cfg.block.x = 2048;
    try {
        k.launch(cfg, &a, sizeof a, "app.cpp:20");
        FAIL("no exception");
    } catch (const CudaError& e) {
        const std::string msg = e.what();
        // CUDA 12 reports cudaErrorInvalidConfiguration, CUDA 13 cudaErrorInvalidValue.
        CHECK((e.code() == cudaErrorInvalidConfiguration || e.code() == cudaErrorInvalidValue));
        CHECK(msg.find("scale_kernel") != std::string::npos);
        CHECK(msg.find("app.cpp:20") != std::string::npos);
    }
    CHECK(!runtime_poisoned());
    CHECK(cudaGetLastError() == cudaSuccess);
    // Still usable: a correct launch works.
    Tensor in = random_normal({64}, float32, 1, Device::cuda());
    Tensor out = Tensor::empty({64}, float32, Device::cuda());
    ScaleArgs ok{static_cast<float*>(out.data()), static_cast<const float*>(in.data()), 1.0f, 64};
    cfg.block.x = 64;
    k.launch(cfg, &ok, sizeof ok);
    Tensor ho = out.to_host(), hi = in.to_host();
    CHECK(ho.get_double(63) == hi.get_double(63));
}
