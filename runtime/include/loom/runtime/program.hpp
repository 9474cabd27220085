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

#include "loom/codegen/options.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom {

namespace codegen {
struct DeviceInfo;
struct FusionPlan;
}  // namespace codegen
namespace host {
struct Compiled;  // a host plan with its kernels (runtime/src/host_internal.hpp)
}
namespace gpu {
struct Compiled;      // a GPU plan with its kernels (runtime/src/gpu_internal.hpp)
class ProgramGraphs;  // the CUDA graphs of a multi-kernel program (runtime/src/program_graph.hpp)
}  // namespace gpu

/// Counters of a program's automatic CUDA graphs (Options::capture = Auto; docs/graph-capture.md).
struct GraphStats {
    std::uint64_t captures = 0;  // graphs built: a stream capture of one run, and its instantiation
    std::uint64_t replays = 0;   // calls that ran as one graph launch
    std::uint64_t patched = 0;   // kernel nodes whose parameters (pointers) a replay changed
    std::uint64_t fallbacks =
        0;  // calls that launched kernel by kernel (an output sharing memory with an argument)
};

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
    /// graph, partitions it into kernels (reduction kernels and pointwise kernels when it has reductions),
    /// plans each for the arguments' layouts and compiles (or fetches from the kernel cache) each; nothing
    /// is launched. On host tensors the same happens for the host (the LLVM back end), or, when host work
    /// runs on the CPU reference (LOOM_CPU_BACKEND=reference, no module), nothing is compiled and run()
    /// evaluates the graph on the reference. `name` names the kernels; `options` enter the plan and every
    /// kernel key. `out_strides` (empty: every output contiguous; an empty entry: that output contiguous) are
    /// the strides of outputs that are views (the interior of a grid, a column): the kernels write them at
    /// their own index maps, and run() takes outputs of exactly these layouts. Throws as loom::evaluate()
    /// does.
    Program(std::vector<ir::NodePtr> roots, std::vector<ir::NodePtr> params,
            std::span<const Tensor* const> args, std::string name, std::source_location loc,
            const Options& options = current_options(), std::vector<Strides> out_strides = {});

    /// An input of `roots` that is none of the placeholders `params` (a tensor the traced body captured
    /// instead of taking it as an argument), or null. The constructor refuses such a graph.
    static const ir::Node* foreign_input(const std::vector<ir::NodePtr>& roots,
                                         const std::vector<ir::NodePtr>& params);

    /// Runs the program on `args` (matching specs(): checked by the caller) into `outs` (one per root: same
    /// shape and dtype, on the device, contiguous or with the strides the program was made for),
    /// asynchronously on the current stream. The hot path: no hashing, no planning, no kernel cache lookup,
    /// and for pointwise programs no heap allocation and no lock. An output that shares memory with an
    /// argument that a kernel from its writer on reads (other than the writer reading it in place, element by
    /// element) is written through a temporary, so nothing races (that path allocates; FusionPlan::reads).
    /// Programs with several kernels launch them in plan order and allocate per run from the stream-ordered
    /// pool: one block for the values materialized between kernels (when there are any) and the workspaces of
    /// split reductions (whose counters come from a per-stream buffer found under a lock; inside stream
    /// capture they are pool memory zeroed by a memset). Under Options::capture = Auto they run as one CUDA
    /// graph per stream instead (captured by the first call on that stream, replayed with the new pointers
    /// after; its blocks are kept with the graph). Outputs that do not fit (count, shape, dtype, device,
    /// layout) throw loom::Error naming the function, `call` (the caller's file:line) and where the function
    /// was defined.
    void run(std::span<const Tensor* const> args, std::span<const Tensor* const> outs,
             std::source_location call = std::source_location::current()) const;

    const std::vector<ArgSpec>& specs() const { return specs_; }
    /// Whether `outs` have the output layouts of this specialization (contiguous unless made with strides);
    /// empty `outs`: whether every output of the specialization is contiguous (results it allocates).
    bool outputs_match(std::span<const Tensor* const> outs) const noexcept;
    const std::vector<ir::NodePtr>& roots() const { return roots_; }
    Device device() const { return device_; }
    /// The generated CUDA of every kernel of the program (complete translation units, in launch order): on
    /// a device the kernels built for it; on the host planned now for the current GPU (an H200 without
    /// one) from the specialization's layouts. Launches nothing.
    std::string cuda_source() const;
    /// The PTX of every kernel of cuda_source(), one module per kernel in launch order, for the virtual arch
    /// of the cubin that is (or would be) loaded (`compute_90` for sm_90). Runs NVRTC for each kernel (no
    /// cache); launches nothing; needs no GPU. Throws loom::CompileError.
    std::string ptx() const;
    /// The LLVM IR of every host kernel of the specialization (one module per kernel with LLVM code, in
    /// launch order; matrix products run on the CPU reference and add none): on the host the kernels built
    /// for it; for a device program planned now for this machine's host target from the specialization's
    /// layouts, as if its arguments were host tensors. Launches nothing; needs no GPU and no LLVM.
    std::string llvm_source() const;
    /// Kernels launched per run (0 on the host).
    std::size_t kernels() const;
    bool has_reductions() const { return reductions_; }
    /// Whether calls run as one CUDA graph (a device program of several kernels under Options::capture =
    /// Auto), and the counters of those graphs (all zero otherwise).
    bool uses_graphs() const { return graphs_ != nullptr; }
    GraphStats graph_stats() const;

    const Options& options() const { return options_; }

  private:
    /// run() of a host specialization: its planned kernels, or the reference.
    void run_on_host(std::span<const Tensor* const> args, std::span<const Tensor* const> outs) const;
    /// The plan for the specialization's layouts (sources: the placeholders), for `info`.
    codegen::FusionPlan plan_for(const codegen::DeviceInfo& info) const;

    std::vector<ir::NodePtr> roots_;
    std::vector<ir::NodePtr> params_;
    std::vector<ArgSpec> specs_;
    std::vector<Strides> out_strides_;  // per output; empty: contiguous
    std::vector<std::size_t>
        overlapping_;  // outputs whose view strides overlap themselves (run() refuses them)
    std::shared_ptr<const gpu::Compiled> gpu_;  // device programs: planned and built once
    std::shared_ptr<gpu::ProgramGraphs>
        graphs_;  // Options::capture = Auto and several kernels: one graph per stream
    std::shared_ptr<const host::Compiled>
        host_;  // host programs on the LLVM back end: planned and built once
    Options options_;
    Device device_;
    std::string name_;
    std::string where_;
    std::source_location loc_;
    bool reductions_ = false;
};

}  // namespace loom
