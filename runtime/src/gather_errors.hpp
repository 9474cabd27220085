// The device side of checked gathers (docs/semantics.md, section 11): one error word per device in device
// memory, which kernels with checked gathers write their first out-of-range index into, and the check that
// every synchronization makes of it.
#pragma once

#include <cuda_runtime_api.h>

namespace loom::detail {

/// The error word (ir::GatherErrorWord, zeroed) of the current device, allocated at the first call; from
/// then on every synchronization of that device reads it (check_gather_errors). Throws CudaError or
/// OutOfMemory when it cannot be allocated.
void* gather_error_word();

/// After `stream` was synchronized: when a kernel recorded an out-of-range index in the current device's
/// error word, zeroes the word and throws loom::Error naming the gather's function, the index, the extent
/// and the user's file:line. Does nothing on a device without a word (no checked gather ever launched).
void check_gather_errors(cudaStream_t stream);

}  // namespace loom::detail
