// CUDA devices: presence (without throwing), the calling thread's current device, and the facts about a
// device that planning needs (codegen::DeviceInfo), queried once per device and cached.
#pragma once

#include <cstddef>
#include <string_view>

#include "loom/codegen/cuda/device_info.hpp"
#include "loom/runtime/errors.hpp"

namespace loom {

/// Number of usable CUDA devices; 0 without a driver or a device. Queried once per process; never throws.
int device_count() noexcept;
/// True when at least one CUDA device is usable. Never throws; safe to call on machines without a driver.
bool cuda_available() noexcept;
/// Throws loom::NoDeviceError ("no CUDA device found: <api> needs a GPU ...", with CUDA's reason) when no
/// device is usable. Every GPU entry point of Loom calls it first, so the first GPU use without a GPU
/// raises this instead of a crash.
void require_cuda(std::string_view api);

/// The calling thread's current CUDA device (CUDA's per-thread current device; 0 unless set_device() or
/// cudaSetDevice() changed it). Throws NoDeviceError without a GPU.
int current_device();
/// Makes `index` the calling thread's current device. Throws loom::Error for an index out of range,
/// NoDeviceError without a GPU.
void set_device(int index);

/// Facts about device `index` (compute capability, SM count, shared memory per block / opt-in / per SM,
/// registers per SM, L2 bytes, thread limits, parameter limit, name), from cudaDeviceGetAttribute and
/// cudaGetDeviceProperties on first use, cached after. The parameter limit is 32,764 bytes when both the
/// runtime and the driver are CUDA >= 12.1 and the device is Volta or newer (CUDA C++ Programming Guide,
/// "Function Parameters"), else 4,096. Throws NoDeviceError without a GPU, loom::Error for a bad index.
const codegen::DeviceInfo& device_info(int index);
/// device_info() of the calling thread's current device.
inline const codegen::DeviceInfo& device_info() {
    return device_info(current_device());
}

/// Byte counts of a device's stream-ordered memory pool (the device's default pool, which Loom allocates
/// from), and of the device itself.
struct PoolStats {
    std::size_t used_bytes = 0;  // handed out and not yet freed (cudaMemPoolAttrUsedMemCurrent)
    std::size_t reserved_bytes =
        0;  // held from the device, cached for reuse (cudaMemPoolAttrReservedMemCurrent)
    std::size_t device_free_bytes = 0;   // cudaMemGetInfo
    std::size_t device_total_bytes = 0;  // cudaMemGetInfo
};
/// Pool and device memory of device `index`. Throws NoDeviceError without a GPU, loom::CudaError.
PoolStats pool_stats(int index);
/// Returns the pool's cached, unused memory to the device (after synchronizing the device, so that
/// pending frees complete): cudaMemPoolTrimTo(pool, 0). Throws NoDeviceError, loom::CudaError.
void trim_pool(int index);

/// Makes a device current for a scope and restores the previous one (a no-op when it already is).
class DeviceGuard {
  public:
    explicit DeviceGuard(int index);
    ~DeviceGuard();
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;

  private:
    int previous_ = -1;
};

}  // namespace loom
