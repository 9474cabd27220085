// Threads on the GPU (docs/reliability.md): 8 host threads evaluate expressions and call one traced function
// over shared inputs into outputs of their own, first each on a stream of its own, then all on one stream.
// Every result has the bits of the single-threaded run (itself checked against the CPU reference), and no
// kernel is built twice for one key: with the in-memory cache cleared, 8 racing threads build exactly as
// many kernels as one thread does. LOOM_TEST_SMALL=1 (the compute-sanitizer step) shrinks the shapes and
// the iterations.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "loom/runtime/kernel_cache.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;

namespace {

constexpr int kThreads = 8;

bool small_shapes() {
    const char* v = std::getenv("LOOM_TEST_SMALL");
    return v && *v && std::string_view(v) != "0";
}

struct Inputs {
    Tensor x, w, b, big;
};

Inputs make_inputs() {
    const bool small = small_shapes();
    const std::int64_t rows = small ? 64 : 512, cols = small ? 256 : 2048;
    return {rand({rows, cols}, float32, 0x7001), rand({cols}, float32, 0x7002), rand({cols}, float32, 0x7003),
            rand({small ? std::int64_t{1} << 20 : std::int64_t{1} << 22}, float32, 0x7004)};
}

/// One thread's work, repeated: the results of its last iteration, in a fixed order. `f` is the traced
/// function every thread shares; `t` makes one scalar differ per thread (the same kernel, another parameter).
template <class F>
std::vector<Tensor> work(const Inputs& in, const F& f, int t, int iterations) {
    const Shape& shape = in.x.shape();
    Tensor own = Tensor::empty(shape, float32, dev());
    Tensor traced = Tensor::empty(shape, float32, dev()), traced_max = Tensor::empty({}, float32, dev());
    std::vector<Tensor> out;
    for (int i = 0; i < iterations; ++i) {
        assign(own, relu(Array(in.x) * in.w + in.b) * (t + 1.0));
        const Tensor soft = eval(softmax(in.x));
        auto [rows, total] = eval(sum(in.x, 1), sum(in.big));  // the full sum is split: counters per stream
        const Tensor norm = eval(layernorm(in.x, in.w, in.b, 1e-5));
        f(in.x, in.w, traced, traced_max);
        out = {own, soft, rows, total, norm, traced, traced_max};
    }
    return out;
}

auto make_function() {
    return loom::function("threads_gpu_affine", [](Array x, Array w) {
        const Array y = gelu(x * w + 0.5);
        return std::make_tuple(y, max(y));
    });
}

std::vector<std::vector<unsigned char>> bytes_of(const std::vector<Tensor>& ts) {
    std::vector<std::vector<unsigned char>> out;
    for (const Tensor& t : ts) {
        const Tensor h = t.to_host();
        const auto* p = static_cast<const unsigned char*>(h.data());
        out.emplace_back(p, p + h.nbytes());
    }
    return out;
}

/// Runs `body(t)` on kThreads threads; an exception in a thread is returned as its message.
std::vector<std::string> on_threads(const std::function<void(int)>& body) {
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            try {
                body(t);
            } catch (const std::exception& e) {
                errors[static_cast<std::size_t>(t)] = e.what();
            }
        });
    for (auto& th : threads) th.join();
    return errors;
}

}  // namespace

TEST_CASE(
    "threads on the GPU: 8 threads on their own streams, then on one stream: right results, kernels built "
    "once") {
    const Inputs in = make_inputs();
    const int iterations = small_shapes() ? 2 : 20;
    synchronize();

    // One thread: the expected bits of every thread's results (checked against the reference), and the number
    // of kernels one run builds with an empty in-memory cache (compiled, or loaded from the disk cache, which
    // an earlier run or another test process may have filled).
    clear_kernel_cache();
    std::uint64_t c0 = kernel_cache_stats().builds;
    std::vector<std::vector<std::vector<unsigned char>>> expected(kThreads);
    std::uint64_t one_thread_builds = 0;
    {
        const auto f = make_function();
        for (int t = 0; t < kThreads; ++t) {
            const std::vector<Tensor> r = work(in, f, t, 1);
            synchronize();
            if (t == 0) one_thread_builds = kernel_cache_stats().builds - c0;
            expected[static_cast<std::size_t>(t)] = bytes_of(r);
        }
        const Array own = relu(Array(in.x) * in.w + in.b) * 1.0;
        const std::vector<Tensor> r0 = work(in, f, 0, 1);
        require_reference({own, softmax(in.x), sum(in.x, 1), sum(in.big), layernorm(in.x, in.w, in.b, 1e-5)},
                          {r0[0], r0[1], r0[2], r0[3], r0[4]}, "one thread against the reference");
    }
    CHECK(one_thread_builds > 0);
    MESSAGE("one thread builds ", one_thread_builds, " kernels");

    for (const bool one_stream : {false, true}) {
        CAPTURE(one_stream);
        clear_kernel_cache();
        c0 = kernel_cache_stats().builds;
        const auto f = make_function();  // a new traced function: its kernels come through the cache too
        std::vector<std::vector<std::vector<unsigned char>>> got(kThreads);
        Stream shared;
        const std::vector<std::string> errors = on_threads([&](int t) {
            std::unique_ptr<Stream> own_stream;
            if (!one_stream) own_stream = std::make_unique<Stream>();
            const cudaStream_t s = one_stream ? shared.get() : own_stream->get();
            std::vector<Tensor> r;
            with_stream(s, [&] {
                r = work(in, f, t, iterations);
                synchronize(s);
                got[static_cast<std::size_t>(t)] = bytes_of(r);  // synchronous copies on this thread's stream
            });
        });
        for (int t = 0; t < kThreads; ++t) {
            CHECK_MESSAGE(errors[static_cast<std::size_t>(t)].empty(), "thread ", t, ": ",
                          errors[static_cast<std::size_t>(t)]);
            const auto& g = got[static_cast<std::size_t>(t)];
            const auto& e = expected[static_cast<std::size_t>(t)];
            REQUIRE(g.size() == e.size());
            for (std::size_t k = 0; k < g.size(); ++k)
                CHECK_MESSAGE(g[k] == e[k], "thread ", t, ", result ", k, " differs");
        }
        const std::uint64_t builds = kernel_cache_stats().builds - c0;
        MESSAGE(kThreads, " threads ", one_stream ? "on one stream" : "on their own streams", " built ",
                builds, " kernels");
        CHECK(builds == one_thread_builds);  // each key once, though 8 threads needed it at the same time
    }
}
