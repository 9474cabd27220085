// GPU tests of CUDA graph capture (docs/graph-capture.md): Loom's evaluations captured on a user stream and
// replayed with new input data, a kernel whose parameters live in device memory inside a graph, and the
// clear errors (and intact captures) when a kernel is not compiled yet or something would synchronize.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "loom/runtime/capture.hpp"
#include "test_graph_util.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;
using graphtest::capture;
using graphtest::Graph;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("graph capture: two kernels into preallocated outputs, replayed with new inputs three times") {
    Stream s;
    StreamGuard on(s);
    Tensor a = rand({1000, 256}, float32, 0xc001), b = rand({256}, float32, 0xc002),
           c = rand({4096}, float32, 0xc003);
    const Array y1 = gelu(a * b + 1.0);   // [1000, 256]
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
    for (int k = 0; k < 830; ++k)
        xs.push_back(rand({2, 3, 2, 3, 2, 3, 2, 3}, float32, 0xe000 + static_cast<std::uint64_t>(k)));
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
            testing::fill_random(xs[k], 0xf000 + 1000 * static_cast<std::uint64_t>(rep) + k,
                                 default_dist(float32));
        testing::poison(out);
        s.synchronize();
        CUDA_OK(cudaGraphLaunch(g.exec, s));
        s.synchronize();
        require_reference({sum}, {out}, "replay " + std::to_string(rep));
    }
}

TEST_CASE(
    "graph capture: an uncompiled kernel raises a clear error and leaves the capture and stream usable") {
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
    CHECK(contains(message, "before"));                  // run it once before capturing
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

TEST_CASE(
    "graph capture: reductions (split full sum, softmax, column sums, a reduced value read elsewhere) "
    "replay") {
    Stream s;
    StreamGuard on(s);
    Tensor x = rand({(1 << 22) + 5}, float32, 0xe001);
    Tensor m = rand({300, 8192}, float32, 0xe002);
    const Array total = sum(Array(x) * Array(x));  // split over blocks: counters and partials
    const Array e = exp(Array(m) - max(Array(m), -1, true));
    const Array sm = e / sum(e, -1, true);             // one kernel, two stages
    const Array cols = mean(Array(m), 0);              // the column order
    const Array centered = Array(m) - mean(Array(m));  // a reduced value read by a pointwise kernel
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

// ---- Automatic graphs of traced functions (Options::capture = Auto, the default) ----

TEST_CASE(
    "automatic graphs: a traced function of three kernels runs as one graph, replayed with new data and new "
    "pointers") {
    // Two reductions of different shapes and an elementwise result: three kernels.
    auto three = [](Array x) { return std::tuple{sum(x, 0), max(x, 1), exp(x * 0.5) - x}; };
    auto f = loom::function("graph_three", three);
    auto never = loom::function("graph_three_never", three, Options{.capture = CapturePolicy::Never});
    Stream s;
    StreamGuard on(s);
    Tensor x = rand({300, 700}, float32, 0x0201);
    Tensor o1 = Tensor::empty({700}, float32, dev()), o2 = Tensor::empty({300}, float32, dev());
    Tensor o3 = Tensor::empty({300, 700}, float32, dev());
    for (Tensor* o : {&o1, &o2, &o3}) testing::poison(*o);
    f(x, o1, o2, o3);  // traced, compiled, captured, launched
    s.synchronize();
    const auto [r1, r2, r3] = three(Array(x));
    require_reference({r1, r2, r3}, {o1, o2, o3}, "first call");
    loom::detail::FunctionStats st = f.stats();
    CHECK(st.graph_captures == 1);
    CHECK(st.graph_replays == 1);
    // New data in the same tensors: the same graph, nothing patched.
    for (int k = 0; k < 3; ++k) {
        testing::fill_random(x, 0x0300 + k);
        for (Tensor* o : {&o1, &o2, &o3}) testing::poison(*o);
        f(x, o1, o2, o3);
        s.synchronize();
        require_reference({r1, r2, r3}, {o1, o2, o3}, "same tensors, new data");
    }
    st = f.stats();
    CHECK(st.graph_captures == 1);
    CHECK(st.graph_replays == 4);
    CHECK(st.graph_patched == 0);
    // New tensors every call, and results the function allocates: the pointers are patched into the nodes.
    for (int k = 0; k < 3; ++k) {
        Tensor y = rand({300, 700}, float32, 0x0400 + k);
        const auto got = f(y);
        s.synchronize();
        const auto [q1, q2, q3] = three(Array(y));
        require_reference({q1, q2, q3}, {got[0], got[1], got[2]}, "new tensors");
        // The same bits as launching the kernels one by one.
        const auto plain = never(y);
        s.synchronize();
        for (int i = 0; i < 3; ++i)
            require_same_bits(got[i], plain[i], fmt::format("output {} against capture=never", i));
    }
    st = f.stats();
    CHECK(st.graph_captures == 1);
    CHECK(st.graph_replays == 7);
    CHECK(st.graph_patched >= 3);
    CHECK(never.stats().graph_replays == 0);
    CHECK(never.stats().graph_captures == 0);
}

TEST_CASE(
    "automatic graphs: one graph per stream, split reductions, an output aliasing an argument, a user's "
    "capture") {
    // A split reduction (two long rows: several blocks per row, counters in the stream's buffer) and a row
    // epilogue: two kernels or more.
    auto norm = loom::function("graph_split", [](Array x) {
        return std::tuple{x / sum(abs(x), 1, true), sum(x * x)};
    });
    Tensor x = rand({2, 1 << 20}, float32, 0x0501);
    const Array ref_a = Array(x) / sum(abs(x), 1, true), ref_b = sum(Array(x) * x);
    Stream a, b;
    for (int round = 0; round < 3; ++round)
        for (Stream* st : {&a, &b}) {
            StreamGuard on(*st);
            Tensor y = Tensor::empty({2, 1 << 20}, float32, dev()), z = Tensor::empty({}, float32, dev());
            testing::poison(y);
            testing::poison(z);
            norm(x, y, z);
            st->synchronize();
            require_reference({ref_a, ref_b}, {y, z}, fmt::format("round {}", round));
        }
    loom::detail::FunctionStats st = norm.stats();
    CHECK(st.graph_captures == 2);  // one per stream
    CHECK(st.graph_replays == 6);

    // Outputs that are also arguments: in place element by element (replayed as a graph), or, where a later
    // kernel reads what an earlier one overwrote, through a temporary (that call launches kernel by kernel).
    // Right either way.
    auto scale = loom::function("graph_alias", [](Array v, Array w) {
        return std::tuple{v * 2.0, w + sum(v), sum(w)};
    });
    Tensor v = rand({4096}, float32, 0x0502), w = rand({4096}, float32, 0x0503),
           t = Tensor::empty({}, float32, dev());
    Tensor v0 = Tensor::empty({4096}, float32, dev()), w0 = Tensor::empty({4096}, float32, dev());
    copy_async(v0, v);
    copy_async(w0, w);
    scale(v, w, w, v, t);  // w <- v * 2 (w is read by a later kernel), v <- w + sum(v)
    synchronize();
    require_reference({Array(v0) * 2.0, Array(w0) + sum(Array(v0)), sum(Array(w0))}, {w, v, t},
                      "aliased outputs");
    const loom::detail::FunctionStats sa = scale.stats();
    CHECK(sa.graph_fallbacks + sa.graph_replays == 1);

    // Inside the user's own capture the function's kernels are recorded into the user's graph.
    Stream c;
    StreamGuard on(c);
    Tensor in = rand({300, 700}, float32, 0x0503), out1 = Tensor::empty({700}, float32, dev());
    Tensor out2 = Tensor::empty({300}, float32, dev());
    auto two = loom::function("graph_user_capture", [](Array q) { return std::tuple{sum(q, 0), sum(q, 1)}; });
    two(in, out1, out2);  // compiled, and run as its own graph once
    c.synchronize();
    const std::uint64_t before = two.stats().graph_replays;
    Graph g;
    capture(c, g, [&] { two(in, out1, out2); });
    CHECK(two.stats().graph_replays == before);  // not replayed inside the capture: recorded
    testing::poison(out1);
    testing::poison(out2);
    CUDA_OK(cudaGraphLaunch(g.exec, c));
    c.synchronize();
    require_reference({sum(Array(in), 0), sum(Array(in), 1)}, {out1, out2}, "the user's graph");
}

TEST_CASE("automatic graphs: LOOM_CAPTURE's policy, and a function of one kernel never uses a graph") {
    auto one = loom::function("graph_one", [](Array x) { return exp(x) + 1.0; });
    Tensor x = rand({1000}, float32, 0x0601);
    Tensor y = one(x);
    synchronize();
    CHECK(one.stats().graph_captures == 0);
    CHECK(one.stats().graph_replays == 0);
    CHECK(Options{}.capture == CapturePolicy::Auto);
}
