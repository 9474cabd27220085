// Traced functions with reductions on the GPU: planned and built once, then launched call after call with
// fresh inputs into poisoned outputs, bit for bit against the lazy (eager) evaluation of the same graph and
// against the CPU reference; fused, multi-kernel (materialized values), split and strict graphs; outputs
// that are arguments; no kernel cache lookup after the first call; a captured and replayed call.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "loom/runtime/capture.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;

namespace {

// Non-zero values of both signs: |v| in [0.25, 2].
void fill_nonzero(Tensor& t, std::uint64_t seed) {
    testing::fill_random(t, seed, testing::Random::uniform(0.25, 2.0));
    Tensor sign = Tensor::empty(t.shape(), t.dtype(), dev());
    testing::fill_random(sign, seed ^ 0x5151, testing::Random::uniform(-1.0, 1.0));
    assign(t, where(Array(sign) < 0.0, -Array(t), Array(t)));
    wait_device();
}

Tensor nonzero(const Shape& shape, std::uint64_t seed) {
    Tensor t = Tensor::empty(shape, float32, dev());
    fill_nonzero(t, seed);
    return t;
}

Array softmax_rows(const Array& x) {
    const Array e = exp(x - max(x, -1, true));
    return e / sum(e, -1, true);
}

}  // namespace

TEST_CASE("traced reductions: softmax and layernorm called many times match eager evaluation bit for bit") {
    auto sm = loom::function("traced_softmax", [](Array x) { return softmax_rows(x); });
    auto ln = loom::function("traced_layernorm", [](Array x, Array w, Array b) {
        const Array mu = mean(x, -1, true);
        const Array d = x - mu;
        const Array rstd = rsqrt(mean(d * d, -1, true) + 1e-5);
        return std::tuple{d * rstd * w + b, rstd};  // an element output and a row output
    });
    Tensor x = Tensor::empty({300, 3000}, float32, dev());
    Tensor w = Tensor::empty({3000}, float32, dev()), b = Tensor::empty({3000}, float32, dev());
    Tensor y = Tensor::empty({300, 3000}, float32, dev()), z = Tensor::empty({300, 3000}, float32, dev());
    Tensor r = Tensor::empty({300, 1}, float32, dev());
    for (int call = 0; call < 40; ++call) {
        CAPTURE(call);
        const std::uint64_t seed = 0xf100 + 16 * static_cast<std::uint64_t>(call);
        fill_nonzero(x, seed);
        fill_nonzero(w, seed + 1);
        fill_nonzero(b, seed + 2);
        testing::poison(y);
        testing::poison(z);
        testing::poison(r);
        sm(x, y);
        ln(x, w, b, z, r);
        const Array X(x), W(w), B(b);
        const Array mu = mean(X, -1, true);
        const Array d = X - mu;
        const Array rstd = rsqrt(mean(d * d, -1, true) + 1e-5);
        // Eager evaluation of each function's graph (run_checked also checks it against the reference).
        const Tensor eager_sm = run_one(softmax_rows(X), false);
        const std::vector<Tensor> eager_ln = run_checked({d * rstd * W + B, rstd}, false);
        require_same_bits(y, eager_sm, "traced softmax vs eager");
        require_same_bits(z, eager_ln[0], "traced layernorm vs eager");
        require_same_bits(r, eager_ln[1], "traced layernorm rstd vs eager");
        if (call % 8 == 0)
            require_reference({softmax_rows(X), d * rstd * W + B, rstd}, {y, z, r}, "traced vs reference");
    }
    CHECK(sm.stats().traces == 1);
    CHECK(ln.stats().traces == 1);
    CHECK(sm.stats().calls == 40);
    // New tensors of the same specialization and allocating calls: no new trace.
    Tensor x2 = nonzero({300, 3000}, 0xf900);
    const Tensor y2 = sm(x2);
    wait_device();
    require_same_bits(y2, run_one(softmax_rows(Array(x2)), false), "allocating traced call vs eager");
    CHECK(sm.stats().specializations == 1);
}

TEST_CASE(
    "traced reductions: split, multi-kernel and strict graphs, repeated, no kernel cache lookup per call") {
    // A full sum over 2^24 + 3 elements: one split kernel (counters and partials); a centred copy (the
    // mean's kernel, then a pointwise kernel reading the materialized mean); softmax over two rows of
    // 65536 (too few rows for one fused kernel: one kernel per reduction, split, and a pointwise kernel).
    auto total = loom::function("traced_total", [](Array x) { return sum(x * x); });
    auto centred = loom::function("traced_centred", [](Array x) { return x - mean(x); });
    auto few = loom::function("traced_few_rows", [](Array x) { return softmax_rows(x); });
    const std::int64_t n = (std::int64_t{1} << 24) + 3;
    Tensor big = Tensor::empty({n}, float32, dev()), s = Tensor::empty({}, float32, dev());
    Tensor m = Tensor::empty({512, 700}, float32, dev()), c = Tensor::empty({512, 700}, float32, dev());
    Tensor f = Tensor::empty({2, 65536}, float32, dev()), g = Tensor::empty({2, 65536}, float32, dev());
    const std::string plan = explain({softmax_rows(Array(f))});
    CHECK(plan.find("one kernel per reduction") != std::string::npos);
    for (int call = 0; call < 30; ++call) {
        CAPTURE(call);
        const std::uint64_t seed = 0xf200 + 16 * static_cast<std::uint64_t>(call);
        fill_nonzero(big, seed);
        fill_nonzero(m, seed + 1);
        fill_nonzero(f, seed + 2);
        testing::poison(s);
        testing::poison(c);
        testing::poison(g);
        const KernelCacheStats before = kernel_cache_stats();
        total(big, s);
        centred(m, c);
        few(f, g);
        if (call >=
            1) {  // every kernel built at the first call; later calls only launch (no lookup, no build)
            const KernelCacheStats now = kernel_cache_stats();
            CHECK(now.hits == before.hits);
            CHECK(now.misses == before.misses);
            CHECK(now.compiles == before.compiles);
        }
        wait_device();
        const std::vector<Array> lazy{sum(Array(big) * Array(big)), Array(m) - mean(Array(m)),
                                      softmax_rows(Array(f))};
        require_same_bits(s, run_one(lazy[0], false), "traced split sum vs eager");
        require_same_bits(c, run_one(lazy[1], false), "traced centred vs eager");
        require_same_bits(g, run_one(lazy[2], false), "traced strict softmax vs eager");
        if (call % 10 == 0) require_reference(lazy, {s, c, g}, "traced vs reference");
    }
    CHECK(total.stats().traces == 1);
    CHECK(centred.stats().traces == 1);
    CHECK(few.stats().traces == 1);
}

TEST_CASE("traced reductions: an output that is an argument is written after every kernel has read it") {
    // An output that shares memory with an argument the graph reads goes through a temporary copied back
    // after the last launch: the centred copy reads its argument in two kernels, the strict softmax in three.
    auto centred = loom::function("traced_centred_inplace", [](Array x) { return x - mean(x); });
    auto few = loom::function("traced_few_rows_inplace", [](Array x) { return softmax_rows(x); });
    auto sm = loom::function("traced_softmax_inplace", [](Array x) { return softmax_rows(x); });
    Tensor m = Tensor::empty({512, 700}, float32, dev());
    Tensor f = Tensor::empty({2, 65536}, float32, dev());
    Tensor x = Tensor::empty({300, 3000}, float32, dev());
    for (int call = 0; call < 10; ++call) {
        CAPTURE(call);
        const std::uint64_t seed = 0xf300 + 16 * static_cast<std::uint64_t>(call);
        fill_nonzero(m, seed);
        fill_nonzero(f, seed + 1);
        fill_nonzero(x, seed + 2);
        // Eager results first, before the inputs are overwritten.
        const std::vector<Tensor> eager{run_one(Array(m) - mean(Array(m)), false),
                                        run_one(softmax_rows(Array(f)), false),
                                        run_one(softmax_rows(Array(x)), false)};
        centred(m, m);
        few(f, f);
        sm(x, x);
        wait_device();
        require_same_bits(m, eager[0], "centred in place vs eager");
        require_same_bits(f, eager[1], "strict softmax in place vs eager");
        require_same_bits(x, eager[2], "softmax in place vs eager");
    }
    // Two arguments that are one tensor, one of them also the output.
    auto add_rows =
        loom::function("traced_add_row_sums", [](Array a, Array b) { return a + sum(b, -1, true); });
    Tensor a = nonzero({64, 1000}, 0xf3f0);
    const Tensor expect = run_one(Array(a) + sum(Array(a), -1, true), false);
    add_rows(a, a, a);
    wait_device();
    require_same_bits(a, expect, "a + sum(a) into a");
}

TEST_CASE("traced reductions: a call captured into a CUDA graph replays with new inputs") {
    Stream st;
    StreamGuard on(st);
    auto few = loom::function("traced_few_rows_captured", [](Array x) { return softmax_rows(x); });
    auto total = loom::function("traced_total_captured", [](Array x) { return sum(x * x); });
    Tensor f = nonzero({2, 65536}, 0xf400), g = Tensor::empty({2, 65536}, float32, dev());
    Tensor big = nonzero({(std::int64_t{1} << 22) + 5}, 0xf401), s = Tensor::empty({}, float32, dev());
    few(f, g);  // the first call traces, plans and builds
    total(big, s);
    st.synchronize();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    REQUIRE(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal) == cudaSuccess);
    few(f, g);
    total(big, s);
    REQUIRE(cudaStreamEndCapture(st, &graph) == cudaSuccess);
    REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    for (int rep = 0; rep < 3; ++rep) {
        fill_nonzero(f, 0xf410 + static_cast<std::uint64_t>(rep));
        fill_nonzero(big, 0xf420 + static_cast<std::uint64_t>(rep));
        testing::poison(g);
        testing::poison(s);
        st.synchronize();
        REQUIRE(cudaGraphLaunch(exec, st) == cudaSuccess);
        st.synchronize();
        require_same_bits(g, run_one(softmax_rows(Array(f)), false), "replayed strict softmax vs eager");
        require_same_bits(s, run_one(sum(Array(big) * Array(big)), false), "replayed split sum vs eager");
    }
    CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
    CHECK(cudaGraphDestroy(graph) == cudaSuccess);
    CHECK(few.stats().traces == 1);
}
