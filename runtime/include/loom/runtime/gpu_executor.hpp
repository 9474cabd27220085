// The GPU path of evaluation: partition a graph into pointwise kernels, specialize, fetch or build each
// kernel, allocate outputs and launch.
#pragma once

#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include "loom/codegen/emit_cuda.hpp"
#include "loom/codegen/pointwise_plan.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::gpu {

/// One kernel of a partitioned graph: the roots it writes (they share one iteration space).
struct KernelGroup {
    std::vector<ir::NodePtr> outputs;
    std::vector<std::size_t> root_index;  // position of each output among the evaluation's roots
    std::string name;                     // kernel name for profilers and dumps
};

/// Splits the roots of a pointwise graph into kernels: roots of one shape share one kernel (one pass over
/// their inputs). Graphs with reductions go through evaluate / explain / generate, which plan reduction
/// kernels; given one, this throws InternalError naming the reduction and its line.
std::vector<KernelGroup> partition(const std::vector<ir::NodePtr>& roots, std::string_view name = {});

/// Layouts of the inputs of a group's graph as bound now (strides of each Input's tensor, alignment).
std::vector<codegen::InputLayout> input_layouts(const std::vector<ir::NodePtr>& outputs);

/// Evaluates `roots` on `device`. When `outs` is non-null it holds one preallocated tensor per root (same
/// shape and dtype, on `device`) that receives the result; an output whose memory an input reads through
/// a different index map is written through a temporary, so nothing races. Returns the results.
std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, Device device, std::source_location loc,
                             const std::vector<Tensor>* outs = nullptr, std::string_view name = {});

/// The compiled kernel of group `g` for `plan` on `device`: from the in-memory cache (keyed by
/// codegen::kernel_key), else generated, compiled and loaded once.
std::shared_ptr<const CompiledKernel> kernel_for(const KernelGroup& g, const codegen::PointwisePlan& plan,
                                                 Device device);

/// The compiled kernels of `groups` (planned as `plans`, one each) on `device`: those in the in-memory
/// cache at once, the others built concurrently (one thread per new kernel when there are several).
/// Throws the first build's error after every build has finished.
std::vector<std::shared_ptr<const CompiledKernel>> kernels_for(std::span<const KernelGroup> groups,
                                                               std::span<const codegen::PlannedPointwise> plans,
                                                               Device device);

/// Launches one planned group on the current stream: `inputs` are the addresses of element 0 of the tensors
/// bound to codegen::pointwise_inputs() (in that order), `outputs` the contiguous outputs. Chooses the
/// vector or scalar variant from the pointers; packs the parameters on the stack (no allocation for
/// parameter structs up to 4 KiB); skips the launch for zero elements. `where` is the user's file:line.
void launch_group(const CompiledKernel& kernel, const codegen::PlannedPointwise& planned,
                  std::span<const void* const> inputs, std::span<void* const> outputs, std::int64_t numel,
                  std::string_view where);

/// The fusion decisions for `roots` as LOOM_EXPLAIN=fusion prints them: each kernel, its nodes with the
/// user's lines, its reads and writes, its vector width, and why it is a separate kernel.
std::string explain(const std::vector<ir::NodePtr>& roots, std::string_view name);

/// Generated CUDA (complete translation units, one per kernel) for `roots` with their inputs' current
/// layouts, planned for `info` (the current device's, or the H200 without a GPU).
std::vector<codegen::KernelSource> generate(const std::vector<ir::NodePtr>& roots, std::string_view name);

}  // namespace loom::gpu
