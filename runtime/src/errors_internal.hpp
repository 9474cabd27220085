// Internal: what errors_cuda.cpp (CUDA status codes to exceptions) needs of the sticky-error state that
// errors.cpp keeps.
#pragma once

#include <string>

#include "loom/runtime/cuda_types.hpp"

namespace loom::detail {

/// last_launch(), followed by " (the launch before it: ...)" when there was an earlier launch: an
/// asynchronous fault may come from either.
std::string last_launches();

/// Marks the runtime unusable after a sticky error: every later CUDA use throws a CudaError with
/// `message`, `code` and `call` (the first sticky error's; later ones keep it).
void poison(const std::string& message, cudaError_t code, const char* call);

}  // namespace loom::detail
