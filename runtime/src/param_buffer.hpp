// Launching a kernel whose parameter struct exceeds the kernel parameter limit (codegen::PointwisePlan::
// params_in_memory): the bytes go to device memory first and the kernel gets a pointer to them
// (param_buffer.cpp; the upload kernel's source is param_upload.cpp's).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "loom/runtime/module.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::gpu {

/// The device buffer for `params_bytes` of parameters on the current device and stream (stream-ordered pool
/// memory, freed stream-ordered when the tensor goes), with the upload kernel built when this process has
/// not built it yet. Called for every such kernel of a call before the first launch, so that an
/// OutOfMemory, a CompileError or a capture error here launches nothing. Throws loom::OutOfMemory,
/// loom::CudaError, loom::Error (a build inside stream capture).
Tensor reserve_param_buffer(std::size_t params_bytes, std::string_view where);

/// Launches `kernel`, which takes one pointer to its parameter struct, with the packed struct `params` in
/// device memory, on cfg.stream (the current stream): `buffer` (from reserve_param_buffer, at least
/// `params` long) is filled on the stream and passed to the kernel; the caller releases it after the launch
/// (stream-ordered). Returns without waiting; `params` may be reused at once. Legal inside CUDA graph
/// capture once the upload kernel is compiled. Throws loom::CudaError, loom::Error.
void launch_with_params_in_memory(const Kernel& kernel, const LaunchConfig& cfg,
                                  std::span<const std::byte> params, const Tensor& buffer,
                                  std::string_view where);

/// The upload kernel: its name, the bytes of its parameter struct before the data words (the destination
/// pointer and the word count), and its block size in threads.
inline constexpr const char* kUploadName = "loom_param_upload";
inline constexpr std::size_t kUploadHeaderBytes = 16;
inline constexpr unsigned kUploadBlock = 256;

/// The CUDA source of the upload kernel (loom_param_upload) for chunks of `words` 8-byte words; its one
/// parameter is a struct of 16 + 8 * words bytes. Exposed for tests (compiled with NVRTC without a GPU).
std::string param_upload_source(std::size_t words);
/// Words per upload chunk for a device whose kernel parameter limit is `param_limit_bytes`.
std::size_t param_upload_words(std::size_t param_limit_bytes);

}  // namespace loom::gpu
