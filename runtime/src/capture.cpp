// Stream capture queries and the errors Loom raises instead of doing something a capture forbids.
#include "loom/runtime/capture.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"

namespace loom {

bool is_capturing(cudaStream_t stream) {
    if (!cuda_available()) return false;
    if (detail::poisoned_flag()) detail::throw_poisoned();
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaError_t e = cudaStreamIsCapturing(stream, &status);
    if (e == cudaErrorStreamCaptureImplicit) {
        // A default stream while a blocking stream is being captured: using it would join the capture.
        (void)cudaGetLastError();  // an answer, not a failure: clear it so that no later check reports it
        return true;
    }
    if (e == cudaErrorCudartUnloading) return false;  // at exit: the caller's own call reports it, or not
    if (e != cudaSuccess)
        detail::throw_cuda_error(e, "cudaStreamIsCapturing(stream, &status)", __FILE__, __LINE__);
    return status != cudaStreamCaptureStatusNone;
}

void require_not_capturing(std::string_view api, std::string_view what, std::string_view advice) {
    if (!is_capturing(current_stream())) return;
    throw Error(
        fmt::format("{}: {} is not allowed while the current stream is being captured into a CUDA graph "
                    "(cudaStreamBeginCapture){}{}; the capture is unchanged and can be ended with "
                    "cudaStreamEndCapture",
                    api, what, advice.empty() ? "" : "; ", advice));
}

namespace detail {

void require_no_build_in_capture(std::string_view kernel, std::string_view where) {
    require_not_capturing("eval()",
                          fmt::format("kernel {}{} is not compiled yet, and compiling it", kernel,
                                      where.empty() ? std::string() : fmt::format(" ({})", where)),
                          "run the same computation once before cudaStreamBeginCapture (with tensors of the "
                          "same dtypes, shapes "
                          "and layouts) so that its kernels are compiled and cached, then capture");
}

}  // namespace detail

}  // namespace loom
