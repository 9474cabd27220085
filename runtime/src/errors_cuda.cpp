// CUDA status codes converted to exceptions: the message names the call, CUDA's error name, description and
// code; a sticky error marks the runtime unusable first (errors.cpp keeps that state).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstring>

#include "errors_internal.hpp"
#include "loom/runtime/errors.hpp"

namespace loom {

namespace {

const char* base_name(const char* path) {
    const char* slash = std::strrchr(path, '/');
    return slash ? slash + 1 : path;
}

std::string describe(cudaError_t code) {
    return fmt::format("{} ({}): {}", cudaGetErrorName(code), static_cast<int>(code),
                       cudaGetErrorString(code));
}

}  // namespace

bool is_sticky(cudaError_t code) {
    switch (code) {
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchFailure:
        case cudaErrorLaunchTimeout:
        case cudaErrorAssert:
        case cudaErrorHardwareStackError:
        case cudaErrorIllegalInstruction:
        case cudaErrorMisalignedAddress:
        case cudaErrorInvalidAddressSpace:
        case cudaErrorInvalidPc:
        case cudaErrorECCUncorrectable:
        case cudaErrorContextIsDestroyed:
            return true;
        default:
            return false;
    }
}

namespace detail {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
    if (is_sticky(code)) {
        const std::string launch = last_launches();
        std::string msg = fmt::format(
            "CUDA error: {} failed with {} ({}:{}); last launched kernel: {}. This error is sticky: the CUDA "
            "context is unusable and every later GPU call in this process fails{}",
            call, describe(code), base_name(file), line, launch,
            sync_after_launch() ? "" : "; run with LOOM_SYNC=1 to tie an asynchronous fault to its kernel");
        poison(msg, code, call);
        throw CudaError(code, call, msg);
    }
    if (code == cudaErrorNoDevice || code == cudaErrorInsufficientDriver || code == cudaErrorStubLibrary) {
        (void)cudaGetLastError();
        throw NoDeviceError(fmt::format("no CUDA device found: {} failed with {} ({}:{})", call,
                                        describe(code), base_name(file), line));
    }
    // A non-sticky error is also recorded as CUDA's "last error": clear it so that the check after the
    // next launch does not report it again.
    (void)cudaGetLastError();
    throw CudaError(
        code, call,
        fmt::format("CUDA error: {} failed with {} ({}:{})", call, describe(code), base_name(file), line));
}

}  // namespace detail

}  // namespace loom
