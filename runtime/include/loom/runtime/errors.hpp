// Runtime errors at the CUDA boundary: CudaError, OutOfMemory, NoDeviceError, the sticky-error state and
// LOOM_CUDA_CHECK, through which every CUDA runtime call goes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "loom/ir/error.hpp"
#include "loom/runtime/cuda_types.hpp"

namespace loom {

/// A CUDA runtime call failed. The message names the call (its source text), the CUDA error name, its
/// description and its numeric code, e.g.
/// `cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s): cudaErrorInvalidValue (1): invalid argument`.
/// After a sticky error (see is_sticky()) the message also names the last launched kernel and the user's
/// source line of that launch.
class CudaError : public Error {
  public:
    CudaError(cudaError_t code, std::string call, const std::string& what)
        : Error(what), code_(code), call_(std::move(call)) {}
    /// The CUDA status code, converted once at the boundary.
    cudaError_t code() const { return code_; }
    /// The failing call's source text ("cudaMallocAsync(&p, bytes, stream)").
    const std::string& call() const { return call_; }

  private:
    cudaError_t code_;
    std::string call_;
};

/// A device allocation failed even after the pool was trimmed and the request retried once. The message
/// names the request in bytes, the device, the bytes Loom's pool holds in use and reserved, and the
/// device's free and total memory.
class OutOfMemory : public Error {
  public:
    OutOfMemory(std::size_t requested, const std::string& what) : Error(what), requested_(requested) {}
    /// Bytes that were asked for.
    std::size_t requested() const { return requested_; }

  private:
    std::size_t requested_;
};

/// A GPU operation was asked for but no usable CUDA device (or no driver) is present. Everything up to
/// and including NVRTC compilation works without one; the first GPU use throws this.
class NoDeviceError : public Error {
  public:
    explicit NoDeviceError(const std::string& what) : Error(what) {}
};

// loom::CompileError (NVRTC failures) is declared with the NVRTC wrapper, beside these types.

/// True for errors that leave the CUDA context unusable until the process ends (CUDA Runtime API,
/// "Error Handling"): illegal address, launch failure, launch timeout, device assert, illegal or
/// misaligned instruction or address, hardware stack error, uncorrectable ECC error.
bool is_sticky(cudaError_t code);

/// Records the kernel being launched and the user's `file:line` of the launch (thread-safe; the last one
/// of the process wins). A sticky error names them, since an asynchronous fault surfaces at a later call.
/// Called by Kernel::launch() before every launch; other launch code calls it too.
void note_launch(std::string_view kernel, std::string_view where);
/// "kernel (file:line)" of the last noted launch, or "none" when nothing was launched.
std::string last_launch();

/// True once a sticky CUDA error was seen: every later CUDA use throws CudaError at once.
bool runtime_poisoned();

/// LOOM_SYNC=1 in the environment (read once): synchronize after every launch so that an asynchronous
/// fault is reported by the launch of the kernel that caused it.
bool sync_after_launch();

namespace detail {
/// Throws CudaError for `code` returned by `call` (source text) at `file:line`; marks the runtime
/// unusable first when the error is sticky. Clears CUDA's last-error state for non-sticky errors.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);
/// Throws the CudaError that a sticky error left behind.
[[noreturn]] void throw_poisoned();
/// Fast check done before each CUDA call.
bool poisoned_flag() noexcept;
/// True once the process has begun to exit (std::exit, or main returning): the destructors of static
/// objects then give nothing back to CUDA (modules, device memory, pinned memory, streams and events go
/// with the process), so that no CUDA call is made that fails with cudaErrorCudartUnloading.
bool exiting_flag() noexcept;
/// Registers the handler that sets exiting_flag(); called once the CUDA runtime is initialized, so that the
/// handler runs before the runtime's own teardown and before the destructors of static objects.
void note_cuda_initialized() noexcept;
}  // namespace detail

/// Runs a CUDA runtime call and throws loom::CudaError naming it when it fails. Throws at once, without
/// making the call, after a sticky error.
#define LOOM_CUDA_CHECK(call)                                                               \
    do {                                                                                    \
        if (::loom::detail::poisoned_flag()) ::loom::detail::throw_poisoned();              \
        const cudaError_t loom_cuda_status_ = (call);                                       \
        if (loom_cuda_status_ != cudaSuccess)                                               \
            ::loom::detail::throw_cuda_error(loom_cuda_status_, #call, __FILE__, __LINE__); \
    } while (0)

}  // namespace loom
