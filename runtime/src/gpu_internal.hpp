// Internal: what gpu_executor.cpp (pointwise kernels) and gpu_reduce.cpp (graphs with reductions) share.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/emit_cuda.hpp"
#include "loom/codegen/pointwise_plan.hpp"
#include "loom/codegen/reduce_plan.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::gpu {

/// The tensor bound to an Input node (its payload).
const Tensor::Impl& bound_tensor(const ir::Node& input);
/// Layout of the tensor bound to an Input node (strides, dtype, 16-byte alignment of element 0); throws
/// loom::Error for a placeholder with no tensor bound.
codegen::InputLayout layout_of(const ir::Node& input);
/// Address of element 0 of a tensor.
const void* address_of(const Tensor::Impl& t);
/// Address of element 0 of the tensor bound to an Input node.
const void* address_of(const ir::Node& input);
/// Compiles `source` (through the disk cache) for `info`'s device and loads its entry points.
CompiledKernel load_kernel(codegen::KernelSource source, double codegen_ms, const codegen::DeviceInfo& info);

// Up to N values on the stack, more on the heap: the pointer arrays of one launch.
template <class T, std::size_t N>
class SmallArray {
public:
    explicit SmallArray(std::size_t n) : size_(n) {
        if (n > N) heap_.resize(n);
    }
    T& operator[](std::size_t i) { return data()[i]; }
    std::span<T> span() { return {data(), size_}; }
    std::span<T> span(std::size_t from, std::size_t count) { return {data() + from, count}; }

private:
    T* data() { return size_ > N ? heap_.data() : stack_; }
    T stack_[N];
    std::vector<T> heap_;
    std::size_t size_;
};

/// True when the graph of `roots` holds a reduction.
bool has_reduction(const std::vector<ir::NodePtr>& roots);

/// Where a kernel of a ReductionPlan reads or writes: a source of the plan (an input of the graph; index
/// into the plan's sources), a temporary that one kernel writes and a later one reads (index into
/// ReductionPlan::temps), or a root of the evaluation (index into the roots).
struct Slot {
    enum class Kind : std::uint8_t { Source, Temp, Root };
    Kind kind = Kind::Source;
    int index = 0;
};

/// One kernel of a ReductionPlan: a reduction kernel (`reduce`) or a pointwise kernel (`group`,
/// `pointwise`), with the slot of each of its inputs and outputs.
struct PlannedKernel {
    bool is_reduce = false;
    std::string name;
    codegen::PlannedReduce reduce;
    KernelGroup group;
    codegen::PlannedPointwise pointwise;
    std::int64_t numel = 0;  // pointwise: elements of the iteration space
    /// Per kernel input, in PlannedReduce::inputs order (reduction) or codegen::pointwise_inputs order.
    std::vector<Slot> inputs;
    /// Reduction: the element outputs, then the row outputs; pointwise: the outputs.
    std::vector<Slot> outputs;
    std::size_t element_outputs = 0;
    std::shared_ptr<const CompiledKernel> kernel;  // null until build_reduction_kernels()
};

/// A temporary of a ReductionPlan: a reduced value materialized between kernels (contiguous).
struct PlannedTemp {
    Shape shape;
    DType dtype = DType::Float32;
    std::size_t offset = 0;  // bytes into the launch's one temporary block (a multiple of 256)
};

/// A graph with reductions partitioned into kernels and every kernel planned, for the layouts (dtype,
/// strides, 16-byte alignment) of its sources: plain data that depends on layouts only, never on addresses,
/// so one plan serves every launch with tensors of those layouts (a traced function plans once, an
/// evaluation once per call).
struct ReductionPlan {
    std::vector<PlannedKernel> kernels;  // launch order: the reduction kernels, then the pointwise kernels
    std::vector<PlannedTemp> temps;
    std::size_t temp_bytes = 0;  // bytes of the block that holds every temporary (0: none)
    std::size_t sources = 0;     // number of sources the plan was made for
    std::vector<int> reads;      // the sources the graph reads (an output sharing their memory goes through a temporary)
};

/// Partitions and plans the graph of `roots`, whose Input nodes are among `sources` (any order; a source
/// the graph does not read is allowed), source k having layout `layouts[k]`. Temporaries are planned as
/// contiguous and 16-byte aligned (launch_reductions() gives each its own 256-byte aligned offset). Prints
/// the fusion decisions with LOOM_EXPLAIN=fusion. Names the kernels after `name` (after their ops when
/// empty). Throws loom::Error for limits (parameters), InternalError for an Input that is not a source.
ReductionPlan plan_reductions(const std::vector<ir::NodePtr>& roots, std::span<const ir::Node* const> sources,
                              std::span<const codegen::InputLayout> layouts, std::string_view name,
                              const codegen::DeviceInfo& info);

/// The Input nodes of the graph of `roots` (topological order) and the layouts of their bound tensors: the
/// sources of an evaluation. Throws loom::Error for a placeholder with no tensor bound.
void bound_sources(const std::vector<ir::NodePtr>& roots, std::vector<const ir::Node*>& sources,
                   std::vector<codegen::InputLayout>& layouts);

/// Fetches every kernel of `plan` from the in-memory cache, building the missing ones (in parallel when
/// there are several). Inside stream capture a missing kernel throws loom::Error naming it and `where` (the
/// user's file:line) before anything is built.
void build_reduction_kernels(ReductionPlan& plan, Device device, std::string_view where);

/// Launches the kernels of `plan` (built) in order on the current stream: `sources` are the tensors of the
/// plan's sources (same layouts as planned), `outs` one contiguous output per root. Allocates from the
/// stream-ordered pool only: one block for the plan's temporaries (when it has any), one per output that
/// shares memory with a source the graph reads (written there and copied back after the last launch, so no
/// kernel reads values another has already overwritten), and the split workspaces of split reductions.
void launch_reductions(const ReductionPlan& plan, std::span<const Tensor::Impl* const> sources,
                       std::span<const Tensor* const> outs, Device device, std::string_view where);

/// The CUDA source of every kernel of `plan`, in launch order (writes each plan with LOOM_DUMP=plans).
std::vector<codegen::KernelSource> emit_reductions(const ReductionPlan& plan);

/// gpu::evaluate for graphs with reductions: reduction kernels (fused prologues, stages, element and row
/// outputs) and pointwise kernels, launched in dependency order on the current stream.
std::vector<Tensor> evaluate_reductions(const std::vector<ir::NodePtr>& roots, Device device, std::source_location loc,
                                        const std::vector<Tensor>* outs, std::string_view name);
std::string explain_reductions(const std::vector<ir::NodePtr>& roots, std::string_view name);
std::vector<codegen::KernelSource> generate_reductions(const std::vector<ir::NodePtr>& roots, std::string_view name);

}  // namespace loom::gpu
