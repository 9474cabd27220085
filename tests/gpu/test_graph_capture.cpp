// GPU tests of CUDA graph capture (docs/graph-capture.md): Loom's evaluations captured on a user stream and
// replayed with new input data, a kernel whose parameters live in device memory inside a graph, and the
// clear errors (and intact captures) when a kernel is not compiled yet or something would synchronize.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "loom/runtime/capture.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;

namespace {

#define CUDA_OK(call) REQUIRE_MESSAGE((call) == cudaSuccess, #call)

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// An instantiated graph, destroyed at the end of the scope.
struct Graph {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ~Graph() {
        if (exec) (void)cudaGraphExecDestroy(exec);
        if (graph) (void)cudaGraphDestroy(graph);
    }
    std::size_t nodes() const {
        std::size_t n = 0;
        (void)cudaGraphGetNodes(graph, nullptr, &n);
        return n;
    }
};

/// Captures `work` on `s` (the current stream) into `g` and instantiates it.
template <class F>
void capture(cudaStream_t s, Graph& g, F&& work) {
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(is_capturing(s));
    work();
    CUDA_OK(cudaStreamEndCapture(s, &g.graph));
    CHECK_FALSE(is_capturing(s));
    CUDA_OK(cudaGraphInstantiate(&g.exec, g.graph, 0));
}

}  // namespace

TEST_CASE("graph capture: two kernels into preallocated outputs, replayed with new inputs three times") {
    Stream s;
    StreamGuard on(s);
    Tensor a = rand({1000, 256}, float32, 0xc001), b = rand({256}, float32, 0xc002), c = rand({4096}, float32, 0xc003);
    const Array y1 = gelu(a * b + 1.0);  // [1000, 256]
    const Array y2 = exp(c * 0.125) - c;  // [4096]: another iteration space, another kernel
    Tensor o1 = Tensor::empty(y1.shape(), float32, dev()), o2 = Tensor::empty(y2.shape(), float32, dev());
    assign({o1, o2}, {y1, y2});  // warm-up: both kernels compiled and cached
    s.synchronize();
    require_reference({y1, y2}, {o1, o2}, "warm-up");

    Graph g;
    capture(s, g, [&] { assign({o1, o2}, {y1, y2}); });
    CHECK(g.nodes() >= 2);  // one launch per kernel
    for (int rep = 0; rep < 3; ++rep) {
        // New data in the same input tensors, outputs poisoned: the replay must write everything again.
        testing::fill_random(a, 0xd000 + static_cast<std::uint64_t>(rep), default_dist(float32));
        testing::fill_random(b, 0xd100 + static_cast<std::uint64_t>(rep), default_dist(float32));
        testing::fill_random(c, 0xd200 + static_cast<std::uint64_t>(rep), default_dist(float32));
        testing::poison(o1);
        testing::poison(o2);
        s.synchronize();
        CUDA_OK(cudaGraphLaunch(g.exec, s));
        s.synchronize();
        require_reference({y1, y2}, {o1, o2}, "replay " + std::to_string(rep));
    }
}

TEST_CASE("graph capture: a kernel with its parameters in device memory replays with new inputs") {
    Stream s;
    StreamGuard on(s);
    // The graph of test_whole_programs.cpp (sum of 415 products of permuted inputs), so that the two tests
    // share one kernel: it takes NVRTC a while.
    const std::vector<std::int64_t> reversed{7, 6, 5, 4, 3, 2, 1, 0};
    std::vector<Tensor> xs;
    for (int k = 0; k < 830; ++k) xs.push_back(rand({2, 3, 2, 3, 2, 3, 2, 3}, float32, 0xe000 + static_cast<std::uint64_t>(k)));
    const std::uint32_t old_limit = set_lazy_node_limit(0);
    Array sum;
    for (std::size_t k = 0; k < xs.size(); k += 2) {
        Array p = Array(xs[k]).permute(reversed) * Array(xs[k + 1]).permute(reversed);
        sum = k == 0 ? p : sum + p;
    }
    set_lazy_node_limit(old_limit);
    Tensor out = Tensor::empty(sum.shape(), float32, dev());
    REQUIRE(plan_of({sum}, {out}).plan.params_in_memory);
    assign(out, sum);  // warm-up: the kernel and the parameter upload kernel compiled
    s.synchronize();
    require_reference({sum}, {out}, "warm-up");

    Graph g;
    capture(s, g, [&] { assign(out, sum); });  // allocation, upload, kernel and free become graph nodes
    CHECK(g.nodes() >= 3);
    for (int rep = 0; rep < 3; ++rep) {
        for (std::size_t k = 0; k < xs.size(); k += 7)
            testing::fill_random(xs[k], 0xf000 + 1000 * static_cast<std::uint64_t>(rep) + k, default_dist(float32));
        testing::poison(out);
        s.synchronize();
        CUDA_OK(cudaGraphLaunch(g.exec, s));
        s.synchronize();
        require_reference({sum}, {out}, "replay " + std::to_string(rep));
    }
}

TEST_CASE("graph capture: an uncompiled kernel raises a clear error and leaves the capture and stream usable") {
    Stream s;
    StreamGuard on(s);
    Tensor x = rand({777}, float32, 0xc101);
    const Array y = x * 3.0 + sin(x) * cos(x) - 7.25;  // a kernel no other test compiles
    Tensor out = Tensor::empty(y.shape(), float32, dev());

    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    std::string message;
    try {
        assign(out, y);
    } catch (const Error& e) {
        message = e.what();
    }
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CHECK(cudaStreamIsCapturing(s, &status) == cudaSuccess);
    CHECK(status == cudaStreamCaptureStatusActive);  // not invalidated
    cudaGraph_t graph = nullptr;
    CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess);
    if (graph) CHECK(cudaGraphDestroy(graph) == cudaSuccess);
    MESSAGE(message);
    CHECK(contains(message, "not compiled yet"));
    CHECK(contains(message, "cudaStreamBeginCapture"));
    CHECK(contains(message, "before"));  // run it once before capturing
    CHECK(contains(message, "test_graph_capture.cpp"));  // the user's line

    // The stream works as before: the same evaluation now compiles and runs.
    assign(out, y);
    s.synchronize();
    require_reference({y}, {out}, "after the failed capture");
}

TEST_CASE("graph capture: synchronizing or copying synchronously raises an error, the capture stays valid") {
    Stream s;
    StreamGuard on(s);
    Tensor x = rand({1024}, float32, 0xc201);
    Tensor before = Tensor::empty({1 << 20}, float32, dev());  // allocated before the capture
    s.synchronize();
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    std::string sync_msg, copy_msg, pin_msg;
    try {
        s.synchronize();
    } catch (const Error& e) {
        sync_msg = e.what();
    }
    try {
        (void)x.to_host();
    } catch (const Error& e) {
        copy_msg = e.what();
    }
    try {
        PinnedBuffer p(4096);
    } catch (const Error& e) {
        pin_msg = e.what();
    }
    {
        Tensor inside = Tensor::empty({4096}, float32, dev());  // a graph allocation, freed inside the graph
    }
    before = Tensor();  // memory from before the capture: freed after it ends, not by the graph
    cudaGraph_t graph = nullptr;
    CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess);
    REQUIRE(graph != nullptr);
    cudaGraphExec_t exec = nullptr;
    CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);
    s.synchronize();
    CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
    CHECK(cudaGraphDestroy(graph) == cudaSuccess);
    CHECK(contains(sync_msg, "synchronize()"));
    CHECK(contains(sync_msg, "captured"));
    CHECK(contains(copy_msg, "synchronous copy"));
    CHECK(contains(pin_msg, "cudaHostAlloc"));
    Tensor after = Tensor::empty({1 << 20}, float32, dev());  // frees the deferred block, stream-ordered
    s.synchronize();
    CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("graph capture: reductions (split full sum, softmax, column sums, a reduced value read elsewhere) replay") {
    Stream s;
    StreamGuard on(s);
    Tensor x = rand({(1 << 22) + 5}, float32, 0xe001);
    Tensor m = rand({300, 8192}, float32, 0xe002);
    const Array total = sum(Array(x) * Array(x));                   // split over blocks: counters and partials
    const Array e = exp(Array(m) - max(Array(m), -1, true));
    const Array sm = e / sum(e, -1, true);                          // one kernel, two stages
    const Array cols = mean(Array(m), 0);                           // the column order
    const Array centered = Array(m) - mean(Array(m));               // a reduced value read by a pointwise kernel
    const std::vector<Array> ys{total, sm, cols, centered};
    std::vector<Tensor> outs;
    for (const auto& y : ys) outs.push_back(Tensor::empty(y.shape(), y.dtype(), dev()));
    assign(outs, ys);  // warm-up: every kernel compiled
    s.synchronize();
    require_reference(ys, outs, "warm-up");
    Graph g;
    capture(s, g, [&] { assign(outs, ys); });
    for (int rep = 0; rep < 3; ++rep) {
        testing::fill_random(x, 0xe100 + static_cast<std::uint64_t>(rep), default_dist(float32));
        testing::fill_random(m, 0xe200 + static_cast<std::uint64_t>(rep), default_dist(float32));
        for (auto& o : outs) testing::poison(o);
        s.synchronize();
        CUDA_OK(cudaGraphLaunch(g.exec, s));
        s.synchronize();
        require_reference(ys, outs, "replay " + std::to_string(rep));
    }
}
