// GPU tests: device discovery and DeviceInfo, pool allocation and reuse, out of memory, copies between
// host and device including strided Tensor::to and views of device pointers.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "loom/ir/half.hpp"
#include "loom/loom.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/stream.hpp"
#include "loom/runtime/tensor.hpp"

using namespace loom;

namespace {

Tensor host_iota(const Shape& shape, DType dtype) {
    Tensor t = Tensor::host(shape, dtype);
    const auto n = t.numel();
    for (std::int64_t i = 0; i < n; ++i) {
        const double v =
            static_cast<double>((i * 7) % 1000) - 300.0;  // nonzero pattern, exact in every dtype but bool
        switch (dtype) {
            case DType::Float32:
                static_cast<float*>(t.data())[i] = static_cast<float>(v) + 0.5f;
                break;
            case DType::Float64:
                static_cast<double*>(t.data())[i] = v + 0.25;
                break;
            case DType::Float16:
                static_cast<std::uint16_t*>(t.data())[i] = float_to_half_bits(static_cast<float>(v));
                break;
            case DType::Int64:
                static_cast<std::int64_t*>(t.data())[i] = static_cast<std::int64_t>(v) * 1000003;
                break;
            default:
                static_cast<std::uint8_t*>(t.data())[i] = static_cast<std::uint8_t>(i * 13 + 1);
                break;
        }
    }
    return t;
}

void check_same(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    REQUIRE(a.dtype() == b.dtype());
    for (std::int64_t i = 0; i < a.numel(); ++i)
        if (a.get_double(i) != b.get_double(i))
            FAIL("element ", i, ": ", a.get_double(i), " != ", b.get_double(i));
}

}  // namespace

TEST_CASE("device discovery fills DeviceInfo from the GPU and caches it") {
    REQUIRE(cuda_available());
    REQUIRE(device_count() >= 1);
    CHECK(current_device() == 0);
    const auto& info = device_info(0);
    CHECK(&info == &device_info(0));  // cached
    CHECK(info.cc_major >= 7);
    CHECK(info.sm_count > 0);
    CHECK(info.warp_size == 32);
    CHECK(info.max_threads_per_block == 1024);
    CHECK(info.shared_mem_per_block == 48 * 1024);
    CHECK(info.shared_mem_per_block_optin >= info.shared_mem_per_block);
    CHECK(info.shared_mem_per_sm >= info.shared_mem_per_block_optin);
    CHECK(info.regs_per_sm >= 65536);
    CHECK(info.l2_bytes > 0);
    CHECK(info.param_limit_bytes == 32764);  // CUDA 13 runtime and driver
    CHECK(!info.name.empty());
    CHECK(info.arch() == "sm_" + std::to_string(info.cc_major) + std::to_string(info.cc_minor));
    MESSAGE(info.name, " ", info.arch(), ", ", info.sm_count, " SMs, L2 ", info.l2_bytes,
            " B, shared opt-in ", info.shared_mem_per_block_optin, " B");
    if (info.name.find("H200") != std::string::npos) {
        CHECK(info.cc_major == 9);
        CHECK(info.cc_minor == 0);
        CHECK(info.sm_count == 132);
        CHECK(info.shared_mem_per_block_optin == 227 * 1024);
    }
    CHECK_THROWS_AS(set_device(device_count()), Error);
    CHECK_THROWS_AS(device_info(-1), Error);
    {
        DeviceGuard g(0);
        CHECK(current_device() == 0);
    }
}

TEST_CASE("pool allocation: aligned, counted, cached after release, reused on the same stream") {
    const std::size_t bytes = 8u << 20;
    trim_pool(0);
    const PoolStats before = pool_stats(0);
    void* first = nullptr;
    {
        Tensor t = Tensor::empty({static_cast<std::int64_t>(bytes / 4)}, float32, Device::cuda());
        first = t.data();
        CHECK(reinterpret_cast<std::uintptr_t>(first) % 256 == 0);
        CHECK(t.device() == Device::cuda(0));
        const PoolStats during = pool_stats(0);
        CHECK(during.used_bytes >= before.used_bytes + bytes);
        CHECK(during.reserved_bytes >= bytes);
    }
    synchronize();
    const PoolStats after = pool_stats(0);
    CHECK(after.used_bytes == before.used_bytes);
    CHECK(after.reserved_bytes >= bytes);  // release threshold high: kept for reuse, not returned
    Tensor again = Tensor::empty({static_cast<std::int64_t>(bytes / 4)}, float32, Device::cuda());
    CHECK(again.data() == first);                                 // stream-ordered reuse of the freed block
    CHECK(pool_stats(0).reserved_bytes == after.reserved_bytes);  // no new memory from the device
}

TEST_CASE("out of memory: 1 PB and more than free memory throw OutOfMemory, the runtime stays usable") {
    const std::size_t pb = std::size_t{1} << 50;
    try {
        (void)Tensor::empty({static_cast<std::int64_t>(pb)}, uint8, Device::cuda());
        FAIL("no exception for 1 PB");
    } catch (const OutOfMemory& e) {
        CHECK(e.requested() == pb);
        const std::string msg = e.what();
        CHECK(msg.find("1125899906842624 bytes") != std::string::npos);
        CHECK(msg.find("cuda:0") != std::string::npos);
        CHECK(msg.find("in use") != std::string::npos);
        MESSAGE(msg);
    }
    // More than is free but less than the device has: the pool is trimmed, the request retried, then OOM.
    const PoolStats s = pool_stats(0);
    const std::size_t big = s.device_total_bytes - (std::size_t{1} << 20);
    try {
        (void)Tensor::empty({static_cast<std::int64_t>(big)}, uint8, Device::cuda());
        FAIL("no exception for nearly all device memory");
    } catch (const OutOfMemory& e) {
        CHECK(std::string(e.what()).find("trimmed") != std::string::npos);
        MESSAGE(e.what());
    }
    CHECK(!runtime_poisoned());
    CHECK(cudaGetLastError() == cudaSuccess);  // the failure was cleared
    Tensor h = host_iota({1 << 20}, float32);
    check_same(h.to(Device::cuda()).to_host(), h);
}

TEST_CASE("copies host <-> device for every size and several dtypes") {
    for (DType dt : {float32, float64, float16, int64, uint8}) {
        for (std::int64_t n : {0, 1, 31, 32, 33, 4097, 1 << 20}) {
            CAPTURE(n);
            Tensor h = host_iota({n}, dt);
            Tensor d = h.to(Device::cuda());
            CHECK(d.device().is_cuda());
            Tensor back = d.to_host();
            check_same(back, h);
            Tensor d2 = d.to(Device::cuda());  // same device, contiguous: the same handle
            CHECK(d2.data() == d.data());
        }
    }
    // memory::copy device -> device
    Tensor h = host_iota({1000}, float32);
    Tensor a = h.to(Device::cuda());
    Tensor b = Tensor::empty({1000}, float32, Device::cuda());
    memory::copy(b.data(), Device::cuda(), a.data(), Device::cuda(), a.nbytes());
    check_same(b.to_host(), h);
}

TEST_CASE("strided Tensor::to: transposed, stepped, reversed and offset views on host and device") {
    Tensor h = host_iota({64, 48}, float32);
    Tensor d = h.to(Device::cuda());
    // Transposed view (48 x 64, strides 1, 48).
    for (const Tensor& src : {h, d}) {
        Tensor tv = src.as_strided({48, 64}, {1, 48}, 0);
        CHECK(!tv.is_contiguous());
        Tensor dev = tv.to(Device::cuda());
        CHECK(dev.is_contiguous());
        Tensor back = dev.to_host();
        for (std::int64_t i = 0; i < 48; ++i)
            for (std::int64_t j = 0; j < 64; ++j)
                REQUIRE(back.get_double(i * 64 + j) == h.get_double(j * 48 + i));
        // Every other column from column 1, and rows reversed.
        Tensor step = src.as_strided({64, 24}, {48, 2}, 1);
        Tensor sb = step.to(Device::cuda()).to_host();
        for (std::int64_t i = 0; i < 64; ++i)
            for (std::int64_t j = 0; j < 24; ++j)
                REQUIRE(sb.get_double(i * 24 + j) == h.get_double(i * 48 + 2 * j + 1));
        Tensor rev = src.as_strided({64, 48}, {-48, 1}, 63 * 48);
        Tensor rb = rev.to_host();
        for (std::int64_t i = 0; i < 64; ++i)
            for (std::int64_t j = 0; j < 48; ++j)
                REQUIRE(rb.get_double(i * 48 + j) == h.get_double((63 - i) * 48 + j));
        // Broadcast view (stride 0).
        Tensor bc = src.as_strided({5, 48}, {0, 1}, 48);
        Tensor bb = bc.to(Device::cuda()).to_host();
        for (std::int64_t i = 0; i < 5; ++i)
            for (std::int64_t j = 0; j < 48; ++j) REQUIRE(bb.get_double(i * 48 + j) == h.get_double(48 + j));
    }
}

TEST_CASE("Tensor::view of a device pointer the user owns: read, not freed by Loom") {
    void* p = nullptr;
    REQUIRE(cudaMalloc(&p, 4096 * sizeof(float)) == cudaSuccess);
    Tensor h = host_iota({4096}, float32);
    REQUIRE(cudaMemcpy(p, h.data(), h.nbytes(), cudaMemcpyHostToDevice) == cudaSuccess);
    {
        Tensor v = Tensor::view(p, {64, 64}, float32);
        CHECK(v.device() == Device::cuda(0));
        Tensor back = v.to_host();
        for (std::int64_t i = 0; i < 4096; ++i) REQUIRE(back.get_double(i) == h.get_double(i));
        Tensor col = Tensor::view(p, {64}, float32, {64}).to_host();  // a strided view: column 0
        for (std::int64_t i = 0; i < 64; ++i) REQUIRE(col.get_double(i) == h.get_double(i * 64));
    }
    CHECK(cudaFree(p) == cudaSuccess);  // still ours: Loom did not free it
}

TEST_CASE(
    "Tensor::view without a device takes the pointer's: device and managed memory on the GPU, host "
    "memory (pinned or not) on the host") {
    void* d = nullptr;
    void* m = nullptr;
    void* pinned = nullptr;
    REQUIRE(cudaMalloc(&d, 256) == cudaSuccess);
    REQUIRE(cudaMallocManaged(&m, 256) == cudaSuccess);
    REQUIRE(cudaMallocHost(&pinned, 256) == cudaSuccess);
    std::vector<float> plain(64, 1.0f);
    CHECK(Tensor::view(d, {64}, float32).device() == Device::cuda(current_device()));
    CHECK(Tensor::view(m, {64}, float32).device() == Device::cuda(current_device()));
    CHECK(Tensor::view(pinned, {64}, float32).device() == Device::cpu());
    CHECK(Tensor::view(plain.data(), {64}, float32).device() == Device::cpu());
    // A host view evaluates on the host: the same values as the buffer, doubled.
    const Tensor twice = eval(Array(Tensor::view(plain.data(), {64}, float32)) * 2.0f);
    CHECK(twice.device() == Device::cpu());
    CHECK(twice.to_vector<float>() == std::vector<float>(64, 2.0f));
    CHECK(cudaFree(d) == cudaSuccess);
    CHECK(cudaFree(m) == cudaSuccess);
    CHECK(cudaFreeHost(pinned) == cudaSuccess);
}
