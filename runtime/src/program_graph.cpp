// The CUDA graphs of traced programs: capture a run once, replay it with new pointers.
#include "program_graph.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <thread>

#include "loom/ir/error.hpp"
#include "loom/runtime/capture.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/stream.hpp"
#include "stats_internal.hpp"

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

namespace {

constexpr std::size_t kMaxStreams = 16;  // graphs kept per program (one per stream and thread)

// The kernel nodes of a graph captured from one stream: a chain, walked from its root in launch order.
std::vector<cudaGraphNode_t> kernel_nodes_in_order(cudaGraph_t graph) {
    std::size_t roots = 0;
    LOOM_CUDA_CHECK(cudaGraphGetRootNodes(graph, nullptr, &roots));
    std::vector<cudaGraphNode_t> out;
    if (roots != 1) return out;  // not a chain: the caller gives up on the graph
    cudaGraphNode_t node = nullptr;
    LOOM_CUDA_CHECK(cudaGraphGetRootNodes(graph, &node, &roots));
    for (;;) {
        cudaGraphNodeType type{};
        LOOM_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
        if (type == cudaGraphNodeTypeKernel) out.push_back(node);
        // Room for two, so that a count of 2 means "not a chain"; with the edge data, since kernels launched
        // with programmatic dependent launch are joined by programmatic edges, which a query without it
        // refuses (cudaErrorLossyQuery).
        cudaGraphNode_t next[2] = {};
        cudaGraphEdgeData edges[2] = {};
        std::size_t count = 2;
        LOOM_CUDA_CHECK(cudaGraphNodeGetDependentNodes(node, next, edges, &count));
        if (count == 0) break;
        if (count != 1) return {};
        node = next[0];
    }
    return out;
}

}  // namespace

StreamGraph::~StreamGraph() {
    // The blocks in mem_ are freed stream-ordered on the current stream: after the last replay.
    if (last_) (void)cudaStreamWaitEvent(current_stream(), last_->get(), 0);
    release();
}

void StreamGraph::release() noexcept {
    if (exec_) (void)cudaGraphExecDestroy(exec_);
    if (graph_) (void)cudaGraphDestroy(graph_);
    exec_ = nullptr;
    graph_ = nullptr;
    nodes_.clear();
    captured_.clear();
}

void StreamGraph::build(const codegen::FusionPlan& plan, const Kernels& kernels,
                        std::span<const Tensor::Impl* const> sources, std::span<const Tensor* const> outs,
                        Device device, std::string_view where) {
    release();
    // The run captured on a stream of the graph's own, never the caller's: other threads may be launching on
    // the caller's stream meanwhile, and their work must not land in this graph (thread-local mode: other
    // threads' CUDA calls are unaffected). Its temporaries are mem_'s blocks, made by the dry run before.
    if (!capture_) capture_ = std::make_unique<Stream>();
    const cudaStream_t stream = capture_->get();
    StreamGuard on(stream);
    LOOM_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    mem_.start(&captured_, true);
    try {
        run_plan(plan, kernels, sources, outs, device, where, &mem_);
    } catch (...) {
        cudaGraph_t partial = nullptr;
        (void)cudaStreamEndCapture(stream, &partial);
        if (partial) (void)cudaGraphDestroy(partial);
        throw;
    }
    LOOM_CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
    captured_.resize(mem_.next_record);
    nodes_ = kernel_nodes_in_order(graph_);
    if (nodes_.size() !=
        captured_.size()) {  // not the chain of kernels it should be: launch kernel by kernel
        release();
        disabled_ = true;
        return;
    }
    LOOM_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
}

bool StreamGraph::run(const codegen::FusionPlan& plan, const Kernels& kernels,
                      std::span<const Tensor::Impl* const> sources, std::span<const Tensor* const> outs,
                      Device device, std::string_view name, std::string_view where, loom::GraphStats& stats) {
    std::lock_guard lock(mu_);
    if (disabled_) return false;
    const cudaStream_t stream = current_stream();
    // The launches this call would make (no launch): its parameters with today's pointers. The first run
    // also allocates the blocks and takes the split counters, outside any capture.
    mem_.start(&now_, false);
    run_plan(plan, kernels, sources, outs, device, where, &mem_);
    if (mem_.unsupported) {
        ++stats.fallbacks;
        return false;
    }
    now_.resize(mem_.next_record);
    bool same = exec_ && now_.size() == captured_.size();
    for (std::size_t i = 0; same && i < now_.size(); ++i) same = now_[i].same_launch(captured_[i]);
    if (!same) {  // first call, or other grids or variants (other alignments): capture again
        build(plan, kernels, sources, outs, device, where);
        if (disabled_) return false;
        ++stats.captures;
    } else {
        for (std::size_t i = 0; i < now_.size(); ++i) {
            if (now_[i].params == captured_[i].params) continue;
            // The node's launch as captured, with the new parameter bytes (the kernel handle cast to void*,
            // as the runtime takes a cudaKernel_t).
            const LaunchRecord& r = now_[i];
            void* args[1] = {now_[i].params.data()};
            cudaKernelNodeParams kp{};
            kp.func = reinterpret_cast<void*>(r.kernel);
            kp.gridDim = dim3(r.grid.x, r.grid.y, r.grid.z);
            kp.blockDim = dim3(r.block.x, r.block.y, r.block.z);
            kp.sharedMemBytes = static_cast<unsigned int>(r.shared_bytes);
            kp.kernelParams = r.params.empty() ? nullptr : args;
            kp.extra = nullptr;
            LOOM_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(exec_, nodes_[i], &kp));
            captured_[i].params.swap(now_[i].params);
            ++stats.patched;
        }
    }
    if (detail::poisoned_flag()) detail::throw_poisoned();
    note_launch(name, where);
    cudaError_t e = cudaGraphLaunch(exec_, stream);
    if (e != cudaSuccess)
        detail::throw_cuda_error(
            e, fmt::format("cudaGraphLaunch of {} ({} kernels) at {}", name, nodes_.size(), where).c_str(),
            __FILE__, __LINE__);
    if (!last_) last_ = std::make_unique<Event>(false);
    last_->record(stream);
    if (sync_after_launch()) {
        e = cudaStreamSynchronize(stream);
        if (e != cudaSuccess)
            detail::throw_cuda_error(
                e,
                fmt::format("cudaStreamSynchronize after the graph of {} at {} (LOOM_SYNC=1)", name, where)
                    .c_str(),
                __FILE__, __LINE__);
    }
    ++stats.replays;
    detail::count_graph_replay();
    return true;
}

bool ProgramGraphs::wanted(const codegen::FusionPlan& plan) {
    if (plan.kernels.size() < 2) return false;
    for (const codegen::GpuKernel& k : plan.kernels)
        if (k.params_in_memory()) return false;
    return true;
}

bool ProgramGraphs::run(const codegen::FusionPlan& plan, const Kernels& kernels,
                        std::span<const Tensor::Impl* const> sources, std::span<const Tensor* const> outs,
                        Device device, std::string_view name, std::string_view where) {
    const cudaStream_t stream = current_stream();
    if (is_capturing(stream)) return false;  // the caller's own capture records the kernels
    unsigned long long id = 0;
    LOOM_CUDA_CHECK(cudaStreamGetId(stream, &id));
    const std::thread::id owner =
        stream == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id();
    std::shared_ptr<StreamGraph>
        g;  // held through the run: another thread may drop it from the list meanwhile
    {
        std::lock_guard lock(mu_);
        for (const auto& p : graphs_)
            if (p->is(id, owner)) g = p;
        if (!g) {
            if (graphs_.size() == kMaxStreams)
                graphs_.erase(graphs_.begin());  // the oldest stream's graph goes
            g = graphs_.emplace_back(std::make_shared<StreamGraph>(id, owner));
        }
    }
    loom::GraphStats delta;
    const bool ran = g->run(plan, kernels, sources, outs, device, name, where, delta);
    std::lock_guard lock(mu_);
    stats_.captures += delta.captures;
    stats_.replays += delta.replays;
    stats_.patched += delta.patched;
    stats_.fallbacks += delta.fallbacks;
    return ran;
}

loom::GraphStats ProgramGraphs::stats() const {
    std::lock_guard lock(mu_);
    return stats_;
}

}  // namespace loom::gpu
