// GPU tests: streams (current stream, with_stream scopes and their join), events and their timing, pinned
// buffers and tensors, asynchronous copies on a user stream.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>

#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/pinned.hpp"
#include "loom/runtime/stream.hpp"
#include "loom/runtime/tensor.hpp"

using namespace loom;

TEST_CASE("current stream: per-thread default, with_stream scopes nest and restore") {
    CHECK(current_stream() == cudaStreamPerThread);
    Stream a, b;
    CHECK(a.get() != nullptr);
    CHECK(a.device() == 0);
    const int r = with_stream(a, [&] {
        CHECK(current_stream() == a.get());
        with_stream(b, [&] { CHECK(current_stream() == b.get()); });
        CHECK(current_stream() == a.get());
        return 7;
    });
    CHECK(r == 7);
    CHECK(current_stream() == cudaStreamPerThread);
    {
        StreamGuard g(b);
        CHECK(current_stream() == b.get());
    }
    CHECK(current_stream() == cudaStreamPerThread);
    Stream moved = std::move(a);
    CHECK(a.get() == nullptr);
    CHECK(moved.get() != nullptr);
}

TEST_CASE("pinned buffers: async copies host -> device -> host on a user stream, timed with events") {
    const std::int64_t n = 1 << 22;  // 16 MiB of float32
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    PinnedBuffer up(bytes), down(bytes);
    CHECK(up.bytes() == bytes);
    unsigned int flags = 0;
    CHECK(cudaHostGetFlags(&flags, up.data()) == cudaSuccess);  // really page-locked
    for (std::int64_t i = 0; i < n; ++i) up.as<float>()[i] = static_cast<float>(i % 4099) * 0.5f - 7.0f;
    std::memset(down.data(), 0xff, bytes);  // poison

    Stream s;
    Event start, stop;
    with_stream(s, [&] {
        Tensor d = Tensor::empty({n}, float32, Device::cuda());  // stream-ordered on s
        start.record();
        copy_async(d, up);    // host -> device on s
        copy_async(down, d);  // device -> host on s
        stop.record();
    });
    stop.synchronize();
    CHECK(stop.done());
    const float ms = Event::elapsed_ms(start, stop);
    CHECK(ms > 0.f);
    MESSAGE("pinned round trip of ", bytes, " bytes: ", ms, " ms (",
            2.0 * static_cast<double>(bytes) / ms / 1e6, " GB/s)");
    CHECK(std::memcmp(up.data(), down.data(), bytes) == 0);

    // Host pointer variants and errors.
    Tensor d2 = Tensor::empty({n}, float32, Device::cuda());
    synchronize();  // allocated on the per-thread stream, used on s next
    copy_async(d2, static_cast<const void*>(up.data()), s);
    std::memset(down.data(), 0, bytes);
    copy_async(down.data(), d2, s);
    s.synchronize();
    CHECK(std::memcmp(up.data(), down.data(), bytes) == 0);
    PinnedBuffer small(16);
    CHECK_THROWS_AS(copy_async(small, d2, s), Error);
    Tensor strided = d2.as_strided({n / 2}, {2}, 0);
    CHECK_THROWS_AS(copy_async(down, strided, s), Error);
    PinnedBuffer moved = std::move(small);
    CHECK(moved.bytes() == 16);
    CHECK(small.data() == nullptr);
}

TEST_CASE(
    "pinned tensors: host tensors over page-locked memory, copied asynchronously to and from the device") {
    Tensor p = pinned_empty({3, 1000}, float32);
    CHECK(p.device() == Device::cpu());
    CHECK(p.is_contiguous());
    unsigned int flags = 0;
    CHECK(cudaHostGetFlags(&flags, p.data()) == cudaSuccess);
    for (int i = 0; i < 3000; ++i) static_cast<float*>(p.data())[i] = static_cast<float>(i) + 0.25f;
    Stream s;
    Tensor d = Tensor::empty({3, 1000}, float32, Device::cuda());
    synchronize();  // d was allocated on the per-thread stream; s uses it next
    copy_async(d, p, s);
    Tensor q = pinned_empty({3, 1000}, float32);
    copy_async(q, d, s);
    s.synchronize();
    for (int i = 0; i < 3000; ++i) REQUIRE(q.get_double(i) == static_cast<double>(i) + 0.25);
    Tensor wrong = pinned_empty({1000, 3}, float32);
    CHECK_THROWS_AS(copy_async(wrong, d, s), Error);
    // An ordinary synchronous copy reads pinned host tensors too.
    Tensor back = d.to_host();
    CHECK(back.get_double(2999) == 2999.25);
}

TEST_CASE("a with_stream scope joins: work on the outer stream after the scope sees the scope's results") {
    Stream s;
    const std::int64_t n = 1 << 24;
    PinnedBuffer src(static_cast<std::size_t>(n) * 4), dst(static_cast<std::size_t>(n) * 4);
    for (std::int64_t i = 0; i < n; ++i) src.as<std::int32_t>()[i] = static_cast<std::int32_t>(i * 3 + 1);
    Tensor d = Tensor::empty({n}, int32, Device::cuda());
    synchronize();
    with_stream(s, [&] { copy_async(d, src); });  // enqueued on s; the scope ends without a host sync
    copy_async(dst, d);                           // on the per-thread stream: must wait for s
    synchronize();
    CHECK(std::memcmp(src.data(), dst.data(), static_cast<std::size_t>(n) * 4) == 0);
}
