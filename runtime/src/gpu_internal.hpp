// Internal: what gpu_executor.cpp (pointwise kernels) and gpu_reduce.cpp (graphs with reductions) share.
#pragma once

#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/emit_cuda.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::gpu {

/// The tensor bound to an Input node (its payload).
const Tensor::Impl& bound_tensor(const ir::Node& input);
/// Layout of the tensor bound to an Input node (strides, dtype, 16-byte alignment of element 0); throws
/// loom::Error for a placeholder with no tensor bound.
codegen::InputLayout layout_of(const ir::Node& input);
/// Address of element 0 of the tensor bound to an Input node.
const void* address_of(const ir::Node& input);
/// Compiles `source` (through the disk cache) for `info`'s device and loads its entry points.
CompiledKernel load_kernel(codegen::KernelSource source, double codegen_ms, const codegen::DeviceInfo& info);

/// True when the graph of `roots` holds a reduction.
bool has_reduction(const std::vector<ir::NodePtr>& roots);

/// gpu::evaluate for graphs with reductions: reduction kernels (fused prologues, stages, element and row
/// outputs) and pointwise kernels, launched in dependency order on the current stream.
std::vector<Tensor> evaluate_reductions(const std::vector<ir::NodePtr>& roots, Device device, std::source_location loc,
                                        const std::vector<Tensor>* outs, std::string_view name);
std::string explain_reductions(const std::vector<ir::NodePtr>& roots, std::string_view name);
std::vector<codegen::KernelSource> generate_reductions(const std::vector<ir::NodePtr>& roots, std::string_view name);

}  // namespace loom::gpu
