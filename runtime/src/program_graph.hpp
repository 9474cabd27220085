// Internal: the CUDA graphs of a traced program's multi-kernel runs (Options::capture = Auto). One graph per
// stream (and thread, for the per-thread default stream): built by capturing a run once its kernels are
// compiled, replayed by later calls with new pointers patched into its kernel nodes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "gpu_internal.hpp"
#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/runtime/program.hpp"
#include "loom/runtime/stream.hpp"

namespace loom::gpu {

/// The graph of one stream.
class StreamGraph {
  public:
    StreamGraph(unsigned long long stream_id, std::thread::id owner) : stream_id_(stream_id), owner_(owner) {}
    ~StreamGraph();
    StreamGraph(const StreamGraph&) = delete;
    StreamGraph& operator=(const StreamGraph&) = delete;
    bool is(unsigned long long id, std::thread::id owner) const {
        return id == stream_id_ && owner == owner_;
    }

    /// Runs the plan as a graph on the current stream: builds it on the first call, else patches the
    /// parameters that changed and launches it. False when this call cannot run as a graph (nothing was
    /// issued; the caller launches kernel by kernel).
    bool run(const codegen::FusionPlan& plan, const Kernels& kernels,
             std::span<const Tensor::Impl* const> sources, std::span<const Tensor* const> outs, Device device,
             std::string_view name, std::string_view where, loom::GraphStats& stats);

  private:
    void build(const codegen::FusionPlan& plan, const Kernels& kernels,
               std::span<const Tensor::Impl* const> sources, std::span<const Tensor* const> outs,
               Device device, std::string_view where);
    void release() noexcept;

    std::mutex mu_;  // one run at a time (two threads may share a stream)
    unsigned long long stream_id_;
    std::thread::id owner_;
    RunMemory mem_;
    std::vector<LaunchRecord> captured_, now_;
    std::vector<cudaGraphNode_t> nodes_;  // the kernel nodes, in launch order
    cudaGraph_t graph_ = nullptr;
    cudaGraphExec_t exec_ = nullptr;
    std::unique_ptr<Event> last_;
    std::unique_ptr<Stream> capture_;  // where the graph is captured  // recorded after each launch: the
                                       // blocks are freed after it
    bool disabled_ = false;
};

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
