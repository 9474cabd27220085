// GPU test that POISONS THE CUDA CONTEXT on purpose: a kernel writes to an illegal address. Its name contains
// "sticky", so main.cpp runs it in a process of its own (ctest runs every case in its own process anyway).
// Nothing in this process can use the GPU afterwards.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/module.hpp"
#include "loom/runtime/stream.hpp"
#include "loom/runtime/tensor.hpp"
#include "nvrtc_util.hpp"

using namespace loom;

TEST_CASE(
    "sticky error: an illegal address marks the runtime unusable, naming the kernel and the launch line") {
    const char* src = R"(
struct PokeArgs { int* where; int value; };
extern "C" __global__ void poke_kernel(PokeArgs a) { *(volatile int*)a.where = a.value; }
)";
    Module m = Module::load(loom_test::nvrtc_compile(src, device_info().arch()), "poke");
    Kernel k = m.kernel("poke_kernel");
    struct PokeArgs {
        int* where;
        int value;
    } a{reinterpret_cast<int*>(std::uintptr_t{0x10}), 1};  // not mapped on the device
    LaunchConfig cfg;
    cfg.block.x = 1;
    k.launch(cfg, &a, sizeof a, "user_app.cpp:77");  // the fault is asynchronous: the launch itself succeeds
    cudaError_t code = cudaSuccess;
    try {
        synchronize();
        FAIL("no exception after an illegal address");
    } catch (const CudaError& e) {
        code = e.code();
        const std::string msg = e.what();
        MESSAGE(msg);
        CHECK(is_sticky(code));
        CHECK(msg.find("cudaStreamSynchronize") != std::string::npos);
        CHECK(msg.find("poke_kernel") != std::string::npos);
        CHECK(msg.find("user_app.cpp:77") != std::string::npos);
        CHECK(msg.find("sticky") != std::string::npos);
    }
    CHECK(runtime_poisoned());
    // Every later use fails at once with the same story, without touching the dead context.
    try {
        (void)Tensor::empty({16}, float32, Device::cuda());
        FAIL("no exception after a sticky error");
    } catch (const CudaError& e) {
        const std::string msg = e.what();
        CHECK(e.code() == code);
        CHECK(msg.find("unusable") != std::string::npos);
        CHECK(msg.find("poke_kernel") != std::string::npos);
        CHECK(msg.find("user_app.cpp:77") != std::string::npos);
    }
    CHECK_THROWS_AS(k.launch(cfg, &a, sizeof a), CudaError);
    CHECK_THROWS_AS(synchronize(), CudaError);
}
