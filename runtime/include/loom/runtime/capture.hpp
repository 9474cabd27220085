// CUDA graph capture: whether a stream is being captured (cudaStreamBeginCapture ... cudaStreamEndCapture),
// and the checks that keep Loom's own work legal inside a capture.
//
// Inside a capture Loom never synchronizes, never allocates outside the stream-ordered pool (allocations
// become graph allocation nodes) and never compiles: an evaluation whose kernels are not compiled yet, a
// synchronous copy, synchronize() on the capturing stream, pinning host memory and trimming the pool raise
// loom::Error instead, without touching the capture, which the caller can still end normally. LOOM_SYNC=1
// skips its synchronization after a launch into a capturing stream. Memory allocated before the capture
// and released during it is freed after the capture ends (a graph may free only its own allocations).
// docs/graph-capture.md has the rules for users.
#pragma once

#include <string_view>

#include "loom/runtime/cuda_types.hpp"
#include "loom/runtime/stream.hpp"

namespace loom {

/// True when `stream` is being captured into a CUDA graph: cudaStreamIsCapturing reports an active (or an
/// invalidated, not yet ended) capture, or the stream is a default stream that work on it would implicitly
/// join to a capture in progress (cudaErrorStreamCaptureImplicit). False without a GPU. Cheap (one
/// runtime call, no synchronization). Throws loom::CudaError for any other failure.
bool is_capturing(cudaStream_t stream = current_stream());

/// Throws loom::Error when the current stream is being captured: "<api>: <what> is not allowed while the
/// current stream is being captured into a CUDA graph (cudaStreamBeginCapture); <advice>". The capture is
/// left untouched. Does nothing without a GPU.
void require_not_capturing(std::string_view api, std::string_view what, std::string_view advice = {});

namespace detail {
/// The check before Loom builds (generates, compiles or loads) kernel `kernel` for the user's line `where`:
/// throws loom::Error naming both and telling the user to run the computation once before capturing.
void require_no_build_in_capture(std::string_view kernel, std::string_view where);
}  // namespace detail

}  // namespace loom
