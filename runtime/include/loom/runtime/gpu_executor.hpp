// The GPU path of evaluation: partition a graph into pointwise kernels, specialize, fetch or build each
// kernel, allocate outputs and launch.
#pragma once

#include <source_location>
#include <string>
#include <vector>

#include "loom/codegen/emit_cuda.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::gpu {

/// One kernel of a partitioned graph: the roots it writes (they share one iteration space).
struct KernelGroup {
    std::vector<ir::NodePtr> outputs;
    std::vector<std::size_t> root_index;  // position of each output among the evaluation's roots
    std::string name;                     // kernel name for profilers and dumps
};

/// Splits `roots` into kernels: roots of one shape share one kernel (one pass over their inputs). Throws
/// loom::Error naming the op and the user's line for an op the GPU path does not run yet (reductions).
std::vector<KernelGroup> partition(const std::vector<ir::NodePtr>& roots, std::string_view name = {});

/// Layouts of the inputs of a group's graph as bound now (strides of each Input's tensor, alignment).
std::vector<codegen::InputLayout> input_layouts(const std::vector<ir::NodePtr>& outputs);

/// Evaluates `roots` on `device`. When `outs` is non-null it holds one preallocated tensor per root (same
/// shape and dtype, on `device`) that receives the result; an output whose memory an input reads through
/// a different index map is written through a temporary, so nothing races. Returns the results.
std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, Device device, std::source_location loc,
                             const std::vector<Tensor>* outs = nullptr, std::string_view name = {});

/// Generated CUDA (complete translation units, one per kernel) for `roots` with their inputs' current
/// layouts, planned for `info` (the current device's, or the H200 without a GPU).
std::vector<codegen::KernelSource> generate(const std::vector<ir::NodePtr>& roots, std::string_view name);

}  // namespace loom::gpu
