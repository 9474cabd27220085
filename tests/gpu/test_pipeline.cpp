// GPU tests: loom::Pipeline, batches of pinned host data through traced functions on three streams: every
// batch's outputs against the CPU reference (host outputs poisoned first), depth 2 and 3, several inputs
// and outputs, a second run over the same buffers, the errors of bad host tensors, and a step that throws.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <loom/loom.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using namespace loom;

namespace {

Tensor pinned_random(const Shape& shape, std::uint64_t seed) {
    Tensor h = pinned_empty(shape, float32);
    const Tensor d = random_normal(shape, float32, seed, Device::cuda());
    copy_async(h, d);
    synchronize();
    return h;
}

Tensor pinned_nan(const Shape& shape) {
    Tensor h = pinned_empty(shape, float32);
    std::memset(h.data(), 0xff, h.nbytes());  // NaN: a batch that is not written fails its check
    return h;
}

Tensor row(const Tensor& all, std::int64_t i) {
    const std::int64_t m = all.numel() / all.shape()[0];
    return all.as_strided({m}, {1}, i * m);
}

std::string message_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("pipeline: every batch through a traced function, depth 2 and 3, two inputs and two outputs") {
    auto f = loom::function("pipe_step", [](Array x, Array y) {
        return std::tuple{gelu(x * 1.5 + y), x * y - 0.5};
    });
    for (int depth : {2, 3}) {
        for (std::int64_t batches : {1, 2, 7}) {
            CAPTURE(depth);
            CAPTURE(batches);
            const std::int64_t m = 100003;  // not a multiple of any vector width
            Tensor a = pinned_random({batches, m}, 11 + batches),
                   b = pinned_random({batches, m}, 12 + batches);
            Tensor o1 = pinned_nan({batches, m}), o2 = pinned_nan({batches, m});
            Pipeline pipe({a, b}, {o1, o2}, depth);
            CHECK(pipe.batches() == batches);
            CHECK(pipe.depth() == depth);
            std::vector<std::int64_t> seen;
            for (int run = 0; run < 2; ++run) {  // a second run over the same device buffers and events
                if (run == 1) {
                    std::memset(o1.data(), 0xff, o1.nbytes());
                    std::memset(o2.data(), 0xff, o2.nbytes());
                }
                pipe.run([&](std::int64_t i, std::span<const Tensor> in, std::span<const Tensor> out) {
                    REQUIRE(in.size() == 2);
                    REQUIRE(out.size() == 2);
                    CHECK(current_stream() == pipe.compute_stream());
                    CHECK(in[0].shape() == Shape{m});
                    seen.push_back(i);
                    f(in[0], in[1], out[0], out[1]);
                });
                pipe.synchronize();
                for (std::int64_t i = 0; i < batches; ++i) {
                    CAPTURE(i);
                    const Array x(row(a, i)), y(row(b, i));
                    const auto c = testing::check_against_reference(
                        {gelu(x * 1.5 + y).node(), (x * y - 0.5).node()}, {row(o1, i), row(o2, i)});
                    CHECK_MESSAGE(c.ok, c.message);
                }
            }
            REQUIRE(seen.size() == static_cast<std::size_t>(2 * batches));
            for (std::int64_t i = 0; i < 2 * batches; ++i)
                CHECK(seen[static_cast<std::size_t>(i)] == i % batches);
        }
    }
}

TEST_CASE("pipeline: the current stream waits for the run, so its later work sees the outputs") {
    auto f = loom::function("pipe_scale", [](Array x) { return x * 2.0; });
    const std::int64_t batches = 5, m = 1 << 20;
    Tensor a = pinned_random({batches, m}, 21), o = pinned_nan({batches, m});
    Stream s;
    with_stream(s, [&] {
        Pipeline pipe({a}, {o});
        pipe.run(
            [&](std::int64_t, std::span<const Tensor> in, std::span<const Tensor> out) { f(in[0], out[0]); });
        synchronize();  // the current stream s, not the pipeline: it waited for the downloads
    });
    for (std::int64_t i = 0; i < batches; ++i) {
        CAPTURE(i);
        CHECK(static_cast<const float*>(o.data())[i * m + 17] ==
              static_cast<const float*>(a.data())[i * m + 17] * 2.0f);
        CHECK(static_cast<const float*>(o.data())[i * m + m - 1] ==
              static_cast<const float*>(a.data())[i * m + m - 1] * 2.0f);
    }
}

TEST_CASE("pipeline: errors name the tensor, its shape and dtype, and the caller's line, a throwing step") {
    Tensor pinned = pinned_random({4, 1000}, 31), out = pinned_nan({4, 1000});
    const Tensor pageable = Tensor::host({4, 1000}, float32);
    std::string e = message_of([&] { Pipeline p({pageable}, {out}); });
    CHECK(e.find("Pipeline: input 0 [4, 1000] float32 is not in pinned host memory") == 0);
    CHECK(e.find("pinned_empty()") != std::string::npos);
    CHECK(e.find("test_pipeline.cpp:") != std::string::npos);
    e = message_of([&] { Pipeline p({Tensor::empty({4, 1000}, float32, Device::cuda())}, {out}); });
    CHECK(e.find("is not in pinned host memory (on cuda:0)") != std::string::npos);
    e = message_of([&] { Pipeline p({pinned}, {pinned_nan({3, 1000})}); });
    CHECK(e.find("Pipeline: output 0 [3, 1000] float32 has 3 batches, the first tensor 4") == 0);
    e = message_of([&] { Pipeline p({pinned}, {out}, 1); });
    CHECK(e.find("Pipeline: depth 1 is less than 2") == 0);
    e = message_of([&] { Pipeline p({pinned.transposed()}, {out}); });
    CHECK(e.find("is not contiguous") != std::string::npos);
    e = message_of([&] { Pipeline p({}, {}); });
    CHECK(e.find("Pipeline: no host inputs and no host outputs") == 0);

    // A step that throws at batch 2: batches 0 and 1 still complete, the exception propagates, the later
    // outputs stay untouched (NaN).
    auto f = loom::function("pipe_neg", [](Array x) { return -x; });
    Pipeline p({pinned}, {out});
    CHECK_THROWS_AS(p.run([&](std::int64_t i, std::span<const Tensor> in, std::span<const Tensor> o) {
        if (i == 2) throw std::runtime_error("step 2 failed");
        f(in[0], o[0]);
    }),
                    std::runtime_error);
    p.synchronize();
    const float* po = static_cast<const float*>(out.data());
    const float* pi = static_cast<const float*>(pinned.data());
    CHECK(po[5] == -pi[5]);
    CHECK(po[1000 + 999] == -pi[1000 + 999]);
    CHECK(std::isnan(po[2000]));
    CHECK(std::isnan(po[3999]));
}
