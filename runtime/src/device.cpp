// CUDA device discovery, the per-thread current device and the cached DeviceInfo of each device.
#include "loom/runtime/device.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_internal.hpp"

namespace loom {

namespace {

struct Discovery {
    int count = 0;
    std::string reason;  // why there is no device, when count == 0
};

const Discovery& discovery() {
    static const Discovery d = [] {
        Discovery r;
        int n = 0;
        const cudaError_t e = cudaGetDeviceCount(&n);
        detail::note_cuda_initialized();  // from now on, exiting runs a handler before the runtime's teardown
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            r.reason =
                fmt::format("cudaGetDeviceCount() reported {} ({}): {}{}", cudaGetErrorName(e),
                            static_cast<int>(e), cudaGetErrorString(e),
                            e == cudaErrorInsufficientDriver
                                ? " (no usable NVIDIA driver: libcuda.so.1 is missing or older than CUDA 13)"
                                : "");
            return r;
        }
        if (n == 0) r.reason = "cudaGetDeviceCount() found 0 devices";
        r.count = n;
        return r;
    }();
    return d;
}

struct InfoCache {
    std::mutex mutex;
    std::vector<std::unique_ptr<codegen::DeviceInfo>> infos;  // stable addresses: entries never move
};

InfoCache& info_cache() {
    static InfoCache c;
    return c;
}

int attribute(cudaDeviceAttr attr, int device) {
    int v = 0;
    LOOM_CUDA_CHECK(cudaDeviceGetAttribute(&v, attr, device));
    return v;
}

codegen::DeviceInfo query(int d) {
    codegen::DeviceInfo info;
    info.cc_major = attribute(cudaDevAttrComputeCapabilityMajor, d);
    info.cc_minor = attribute(cudaDevAttrComputeCapabilityMinor, d);
    info.sm_count = attribute(cudaDevAttrMultiProcessorCount, d);
    info.max_threads_per_block = attribute(cudaDevAttrMaxThreadsPerBlock, d);
    info.max_threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor, d);
    info.warp_size = attribute(cudaDevAttrWarpSize, d);
    info.shared_mem_per_block = static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlock, d));
    info.shared_mem_per_block_optin =
        static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, d));
    info.shared_mem_per_sm =
        static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, d));
    info.regs_per_sm = attribute(cudaDevAttrMaxRegistersPerMultiprocessor, d);
    info.l2_bytes = static_cast<std::size_t>(attribute(cudaDevAttrL2CacheSize, d));
    int runtime = 0, driver = 0;
    LOOM_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    LOOM_CUDA_CHECK(cudaDriverGetVersion(&driver));
    // 32,764-byte kernel parameters need CUDA 12.1 on both sides and Volta (7.0) or newer.
    info.param_limit_bytes = (runtime >= 12010 && driver >= 12010 && info.cc_major >= 7) ? 32764 : 4096;
    cudaDeviceProp prop{};
    LOOM_CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    info.name = prop.name;
    return info;
}

}  // namespace

int device_count() noexcept {
    try {
        return discovery().count;
    } catch (...) {
        return 0;
    }
}

bool cuda_available() noexcept {
    return device_count() > 0;
}

void require_cuda(std::string_view api) {
    const auto& d = discovery();
    if (d.count > 0) return;
    throw NoDeviceError(fmt::format(
        "no CUDA device found: {} needs a GPU, but {}. Host tensors, tracing, code generation and NVRTC "
        "compilation work without one.",
        api, d.reason));
}

int current_device() {
    require_cuda("current_device()");
    int d = 0;
    LOOM_CUDA_CHECK(cudaGetDevice(&d));
    return d;
}

void set_device(int index) {
    require_cuda("set_device()");
    if (index < 0 || index >= device_count())
        throw Error(
            fmt::format("set_device(): device {} does not exist ({} CUDA devices)", index, device_count()));
    LOOM_CUDA_CHECK(cudaSetDevice(index));
}

const codegen::DeviceInfo& device_info(int index) {
    require_cuda("device_info()");
    const int n = device_count();
    if (index < 0 || index >= n)
        throw Error(fmt::format("device_info(): device {} does not exist ({} CUDA devices)", index, n));
    auto& c = info_cache();
    std::lock_guard lock(c.mutex);
    if (c.infos.empty()) c.infos.resize(static_cast<std::size_t>(n));
    auto& slot = c.infos[static_cast<std::size_t>(index)];
    if (!slot) slot = std::make_unique<codegen::DeviceInfo>(query(index));
    return *slot;
}

int detail::driver_version() noexcept {
    static const int v = [] {
        int d = 0;
        return cudaDriverGetVersion(&d) == cudaSuccess ? d : 0;  // 0 without a driver
    }();
    return v;
}

DeviceGuard::DeviceGuard(int index) {
    require_cuda("DeviceGuard");
    int cur = 0;
    LOOM_CUDA_CHECK(cudaGetDevice(&cur));
    if (cur != index) {
        LOOM_CUDA_CHECK(cudaSetDevice(index));
        previous_ = cur;
    }
}

DeviceGuard::~DeviceGuard() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

}  // namespace loom
