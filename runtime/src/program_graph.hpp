// Internal: the CUDA graphs of a traced program's multi-kernel runs (Options::capture = Auto). One graph per
// stream (and thread, for the per-thread default stream): built by capturing a run once its kernels are
// compiled, replayed by later calls with new pointers patched into its kernel nodes. In a host-only build
// (gpu_stubs.cpp) no plan is one that graphs replace.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "gpu_internal.hpp"
#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/runtime/program.hpp"

namespace loom::gpu {

class StreamGraph;  // the graph of one stream (program_graph.cpp)

/// The graphs of one program, one per stream.
class ProgramGraphs {
  public:
    /// Whether `plan` is one that graphs replace: several kernels, none with parameters in device memory.
    static bool wanted(const codegen::FusionPlan& plan);
    bool run(const codegen::FusionPlan& plan, const Kernels& kernels,
             std::span<const Tensor::Impl* const> sources, std::span<const Tensor* const> outs, Device device,
             std::string_view name, std::string_view where);
    loom::GraphStats stats() const;

  private:
    mutable std::mutex mu_;
    std::vector<std::shared_ptr<StreamGraph>> graphs_;
    loom::GraphStats stats_;  // under mu_ (updated by the stream graphs under their own lock, then here)
};

}  // namespace loom::gpu
