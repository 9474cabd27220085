// The CUDA runtime types that Loom's public API names (streams, events, kernels, status codes), one
// spelling for both builds: with CUDA (LOOM_HAS_CUDA 1) they are the toolkit's, from <driver_types.h>; in a
// host-only build (LOOM_CUDA=OFF) they are declared here as the same opaque handles, so that every
// signature is the same in both builds and no CUDA header is needed. A host-only build and the CUDA headers
// do not mix in one translation unit.
#pragma once

#include "loom/runtime/config.hpp"

#if LOOM_HAS_CUDA
#include <driver_types.h>
#else
struct CUstream_st;
struct CUevent_st;
struct CUkern_st;
using cudaStream_t = CUstream_st*;  // the toolkit's handles: pointers to opaque structs
using cudaEvent_t = CUevent_st*;
using cudaKernel_t = CUkern_st*;
/// The CUDA status code of loom::CudaError. A host-only build makes no CUDA call, so only success is named.
enum cudaError { cudaSuccess = 0 };
using cudaError_t = cudaError;
#endif

namespace loom {

/// The toolkit's cudaStreamNonBlocking (0x01), which Stream's constructor takes by default.
inline constexpr unsigned kStreamNonBlocking = 0x01;

}  // namespace loom
