// Launching a kernel whose parameter struct exceeds the kernel parameter limit (codegen::PointwisePlan::
// params_in_memory): the bytes go to device memory first and the kernel gets a pointer to them.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "loom/runtime/module.hpp"

namespace loom::gpu {

/// Launches `kernel`, which takes one pointer to its parameter struct, with the packed struct `params` in
/// device memory, on cfg.stream (the current stream): a stream-ordered pool allocation, filled on the
/// stream, passed to the kernel, freed stream-ordered after the launch. Returns without waiting; `params`
/// may be reused at once. Legal inside CUDA graph capture once the upload kernel is compiled (the first
/// such launch outside a capture compiles it). Throws loom::CudaError, loom::OutOfMemory, loom::Error.
void launch_with_params_in_memory(const Kernel& kernel, const LaunchConfig& cfg, std::span<const std::byte> params,
                                  std::string_view where);

/// The CUDA source of the upload kernel (loom_param_upload) for chunks of `words` 8-byte words; its one
/// parameter is a struct of 16 + 8 * words bytes. Exposed for tests (compiled with NVRTC without a GPU).
std::string param_upload_source(std::size_t words);
/// Words per upload chunk for a device whose kernel parameter limit is `param_limit_bytes`.
std::size_t param_upload_words(std::size_t param_limit_bytes);

}  // namespace loom::gpu
