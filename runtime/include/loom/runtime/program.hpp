// Programs: a graph over placeholder inputs, planned and compiled for one specialization of its
// arguments, launched again and again with new tensors at the cost of about one kernel launch. The
// engine under traced functions (dsl/function.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include "loom/codegen/pointwise_plan.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom {

/// What a program was specialized on, per argument: dtype, shape, strides (elements), 16-byte alignment of
/// element 0 and device. A call whose arguments match runs the program as it is.
struct ArgSpec {
    DType dtype{};
    Shape shape;
    Strides strides;
    bool aligned16 = false;
    Device device;
    /// True when `t` has exactly this specialization. No allocation.
    bool matches(const Tensor& t) const;
    static ArgSpec of(const Tensor& t);
};

class Program {
public:
    /// Specializes the graph `roots`, whose Inputs are the placeholders `params` (in argument order), for
    /// the arguments `args` (one per placeholder, same dtype and shape) on their device: lowers the
    /// graph, partitions it into kernels, plans each and compiles (or fetches from the kernel cache) each.
    /// On host tensors nothing is compiled: run() evaluates the graph on the CPU reference.
    /// `name` names the kernels. Throws as loom::evaluate() does.
    Program(std::vector<ir::NodePtr> roots, std::vector<ir::NodePtr> params, std::span<const Tensor* const> args,
            std::string name, std::source_location loc);

    /// Runs the program on `args` (matching specs(): checked by the caller) into `outs` (one per root: same
    /// shape and dtype, contiguous, on the device), asynchronously on the current stream. The hot path: no
    /// heap allocation, no lock, no hashing, no planning. An output that shares memory with an argument is
    /// written through a temporary, so nothing races (that path allocates).
    void run(std::span<const Tensor* const> args, std::span<const Tensor* const> outs) const;

    const std::vector<ArgSpec>& specs() const { return specs_; }
    const std::vector<ir::NodePtr>& roots() const { return roots_; }
    Device device() const { return device_; }
    /// The generated CUDA of every kernel of the program.
    std::string cuda_source() const;
    /// Kernels launched per run of a pointwise program (0 on the host, and for programs with reductions,
    /// which take the general evaluation path per call: partition and planning on the host, kernels from
    /// the in-memory cache).
    std::size_t kernels() const { return groups_.size(); }
    bool has_reductions() const { return reductions_; }

private:
    struct Group {
        gpu::KernelGroup group;
        codegen::PlannedPointwise planned;
        std::shared_ptr<const CompiledKernel> kernel;
        std::vector<int> arg_of_input;  // per codegen::pointwise_inputs(): index into the arguments
        std::int64_t numel = 0;
    };
    void launch(const Group& g, std::span<const Tensor* const> args, std::span<void* const> outs) const;
    std::vector<Group> plan_groups(bool compile) const;
    /// The graph with its placeholders replaced by inputs bound to `args`.
    std::vector<ir::NodePtr> bound_roots(std::span<const Tensor* const> args) const;

    std::vector<ir::NodePtr> roots_;
    std::vector<ir::NodePtr> params_;
    std::vector<ArgSpec> specs_;
    std::vector<Group> groups_;
    Device device_;
    std::string name_;
    std::string where_;
    std::source_location loc_;
    bool reductions_ = false;
};

}  // namespace loom
