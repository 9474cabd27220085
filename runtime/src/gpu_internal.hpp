// Internal: the GPU path of graphs that hold reductions (gpu_reduce.cpp), called by gpu_executor.cpp.
#pragma once

#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/emit_cuda.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::gpu {

/// True when the graph of `roots` holds a reduction.
bool has_reduction(const std::vector<ir::NodePtr>& roots);

/// gpu::evaluate for graphs with reductions: reduction kernels (fused prologues, stages, element and row
/// outputs) and pointwise kernels, launched in dependency order on the current stream.
std::vector<Tensor> evaluate_reductions(const std::vector<ir::NodePtr>& roots, Device device, std::source_location loc,
                                        const std::vector<Tensor>* outs, std::string_view name);
std::string explain_reductions(const std::vector<ir::NodePtr>& roots, std::string_view name);
std::vector<codegen::KernelSource> generate_reductions(const std::vector<ir::NodePtr>& roots, std::string_view name);

}  // namespace loom::gpu
