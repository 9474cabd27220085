// Internal: what code common to both builds asks of the CUDA runtime by name (defined in device.cpp and
// stream.cpp; in a host-only build in gpu_stubs.cpp, where there is no driver and no stream).
#pragma once

#include "loom/runtime/cuda_types.hpp"

namespace loom::detail {

/// The driver's CUDA version (cudaDriverGetVersion: 13000 for 13.0), read once; 0 without a driver.
int driver_version() noexcept;

/// cudaStreamLegacy: the legacy default stream (stream 0's implicit synchronization).
cudaStream_t legacy_stream() noexcept;

}  // namespace loom::detail
