// Lifetimes on the GPU (docs/reliability.md): tensors and arrays dropped while the kernels that read or write
// them still run are not freed under those kernels. Loom's frees are stream-ordered (cudaFreeAsync on the
// current stream), so memory given back behind a queued kernel is reused only by work ordered after it: the
// pool may hand the same block to the next allocation at once, and what is written there lands after the
// kernel. Each case queues kernels, drops their operands at once, allocates and overwrites memory of the
// same size, and checks every result on the host; compute-sanitizer's memcheck (scripts/device_run.sh, step
// sanitizer) checks that no kernel touched memory outside a live allocation.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "loom/runtime/memory.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;

namespace {

bool small_shapes() {
    const char* v = std::getenv("LOOM_TEST_SMALL");
    return v && *v && std::string_view(v) != "0";
}

std::int64_t elements() {
    return small_shapes() ? std::int64_t{1} << 16 : std::int64_t{1} << 24;
}

constexpr int kSteps = 24;  // multiply-adds per element: the kernel runs a while, exactly (int32 wraps)

std::vector<std::int32_t> host_values(std::int64_t n, std::int32_t seed) {
    std::vector<std::int32_t> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
        v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i * 2654435761u) ^ seed;
    return v;
}

std::int32_t step(std::int32_t a) {  // two's complement wrap, as the kernel computes it
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * 1103515245u + 12345u);
}
std::vector<std::int32_t> expected(const std::vector<std::int32_t>& in) {
    std::vector<std::int32_t> out = in;
    for (auto& a : out)
        for (int k = 0; k < kSteps; ++k) a = step(a);
    return out;
}

Tensor device_from(const std::vector<std::int32_t>& v) {
    Tensor t = Tensor::empty({static_cast<std::int64_t>(v.size())}, int32, dev());
    memory::copy(t.data(), t.device(), v.data(), Device::cpu(), v.size() * sizeof(std::int32_t));
    return t;
}

std::vector<std::int32_t> host_of(const Tensor& t) {
    const Tensor h = t.to_host();
    const auto* p = static_cast<const std::int32_t*>(h.data());
    return {p, p + h.numel()};
}

Array chain(const Array& x) {
    Array a = x;
    for (int k = 0; k < kSteps; ++k) a = a * 1103515245 + 12345;
    return a;
}

}  // namespace

TEST_CASE("lifetimes: inputs and arrays dropped while their kernel runs are not freed under it") {
    const std::int64_t n = elements();
    const auto v1 = host_values(n, 11), v2 = host_values(n, 22);
    Tensor y1 = Tensor::empty({n}, int32, dev()), y2 = Tensor::empty({n}, int32, dev());
    Tensor filler_src = device_from(host_values(n, 33));
    synchronize();
    std::vector<Tensor> overwritten;
    {
        Tensor x1 = device_from(v1), x2 = device_from(v2);
        Array a1 = chain(x1), a2 = chain(x2);
        assign(y1, a1);  // queued: the kernels may still run when x1, x2, a1 and a2 go below
        assign(y2, a2);
    }
    // Memory of the same size, written at once: the pool may return the blocks of x1 and x2, in stream order.
    for (int k = 0; k < 4; ++k) {
        Tensor z = Tensor::empty({n}, int32, dev());
        assign(z, Array(filler_src) * 0 + (k + 7));
        overwritten.push_back(z);
    }
    CHECK(host_of(y1) == expected(v1));
    CHECK(host_of(y2) == expected(v2));
    for (int k = 0; k < 4; ++k) {
        const auto z = host_of(overwritten[static_cast<std::size_t>(k)]);
        CHECK(z == std::vector<std::int32_t>(static_cast<std::size_t>(n), k + 7));
    }
}

TEST_CASE(
    "lifetimes: results and temporaries of a dropped evaluation, on a stream of its own and after its "
    "scope") {
    const std::int64_t n = elements();
    const auto v = host_values(n, 44);
    Tensor keep = Tensor::empty({n}, int32, dev());
    Stream s;
    with_stream(s, [&] {
        Tensor x = device_from(v);
        // eval() makes a result that is dropped at once; assign() through a copy-back temporary (the output
        // aliases its input read reversed): both free their memory behind the kernels, on stream s.
        (void)eval(chain(x));
        assign(x, chain(Array(x).slice({{kNone, kNone, -1}})));
        assign(keep, Array(x) + 0);
    });  // the scope's end: the previous stream waits for s, so its later allocations follow s's kernels
    for (int k = 0; k < 4; ++k) {
        Tensor z = Tensor::empty({n}, int32, dev());
        assign(z, Array(keep) * 0 + k);
        CHECK(host_of(z) == std::vector<std::int32_t>(static_cast<std::size_t>(n), k));
    }
    std::vector<std::int32_t> reversed(v.rbegin(), v.rend());
    CHECK(host_of(keep) == expected(reversed));
}

TEST_CASE("lifetimes: a traced function's operands and results dropped behind its launch") {
    const std::int64_t n = elements();
    auto f = loom::function("lifetimes_chain", [](Array x) { return chain(x); });
    const auto v = host_values(n, 55);
    Tensor out = Tensor::empty({n}, int32, dev());
    for (int round = 0; round < 3; ++round) {
        {
            Tensor x = device_from(v);
            (void)f(x);  // a result dropped at once
            f(x, out);
        }
        Tensor z = Tensor::empty({n}, int32, dev());
        assign(z, Array(out) * 0 - 1);
        CHECK(host_of(out) == expected(v));
        CHECK(host_of(z) == std::vector<std::int32_t>(static_cast<std::size_t>(n), -1));
    }
}
