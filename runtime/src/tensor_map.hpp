// Encoded tensor maps for the bulk tensor copies of Hopper matmul kernels (codegen::TensorMapSpec).
#pragma once

#include <cstddef>
#include <span>

#include "loom/codegen/cuda/matmul_plan.hpp"

namespace loom::detail {

/// Encodes `spec` (cuTensorMapEncodeTiled, through cudaGetDriverEntryPointByVersion: 128-byte swizzle, zeros
/// outside the tensor, 256-byte L2 promotion) into `out`. The last 1024 maps are cached by their spec,
/// address included, so a call whose buffers and shapes repeat encodes nothing. Throws loom::Error naming the
/// spec when the driver refuses it, or when the driver has no cuTensorMapEncodeTiled.
void encode_tensor_map(const codegen::TensorMapSpec& spec,
                       std::span<std::byte, codegen::kTensorMapBytes> out);

/// Maps encoded (cache misses) since the process started.
std::size_t tensor_map_encodes();

}  // namespace loom::detail
