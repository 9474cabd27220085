// Threads on the host (docs/reliability.md): 8 threads evaluate expressions over shared host tensors into
// outputs of their own, call one traced function, and build kernels through the caches with NVRTC (no GPU:
// compile(), cuda_source(), explain(), the disk cache in a shared directory, and the in-memory kernel cache's
// one-build-per-key rule). Every result must have the single-threaded bits and every key must be built once.
// scripts/tsan.sh builds this test with ThreadSanitizer (build-tsan/) and runs it in CI; it also runs as an
// ordinary CTest (label unit).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <loom/loom.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../common/needs_cuda.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

constexpr int kThreads = 8;

/// Runs `body(t)` on kThreads threads started together; an exception in a thread is returned as its message.
std::vector<std::string> on_threads(const std::function<void(int)>& body) {
    std::vector<std::string> errors(kThreads);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            ready.fetch_add(1);
            while (ready.load() < kThreads) std::this_thread::yield();  // start together: more overlap
            try {
                body(t);
            } catch (const std::exception& e) {
                errors[static_cast<std::size_t>(t)] = e.what();
            }
        });
    for (auto& th : threads) th.join();
    return errors;
}

std::vector<unsigned char> bytes_of(const Tensor& t) {
    const auto* p = static_cast<const unsigned char*>(t.data());
    return {p, p + t.nbytes()};
}

/// A private cache directory for this process (removed at the end).
struct CacheDir {
    std::filesystem::path path;
    CacheDir() {
        path = std::filesystem::temp_directory_path() / fmt::format("loom-threads-{}", ::getpid());
        std::filesystem::remove_all(path);
        setenv("LOOM_CACHE_DIR", path.c_str(), 1);
        reset_disk_cache();
    }
    ~CacheDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

struct Inputs {
    Tensor x = testing::random_tensor({96, 160}, float32, 0x7101);
    Tensor w = testing::random_tensor({160}, float32, 0x7102);
    Tensor b = testing::random_tensor({160}, float32, 0x7103);
    Tensor i = testing::random_tensor({96, 160}, int32, 0x7104, testing::Random::uniform(-1000, 1000));
};

template <class F>
std::vector<std::vector<unsigned char>> work(const Inputs& in, const F& f, int t) {
    Tensor own = Tensor::host(in.x.shape(), float32);
    Tensor traced = Tensor::host(in.x.shape(), float32), traced_max = Tensor::host({}, float32);
    assign(own, relu(Array(in.x) * in.w + in.b) * (t + 1.0));
    const Tensor soft = eval(softmax(in.x));
    auto [rows, norm] = eval(sum(in.x, 1), layernorm(in.x, in.w, in.b, 1e-5));
    const Tensor ints =
        eval((Array(in.i).transposed() % 7) * (t + 2) + argmax(in.i, 0).astype(int32).reshape({160, 1}));
    f(in.x, in.w, traced, traced_max);
    const double v = (var(in.x, {}, 1) + t).item<double>();
    Tensor vt = Tensor::host({}, float64);
    *static_cast<double*>(vt.data()) = v;
    return {bytes_of(own),  bytes_of(soft),   bytes_of(rows),       bytes_of(norm),
            bytes_of(ints), bytes_of(traced), bytes_of(traced_max), bytes_of(vt)};
}

}  // namespace

TEST_CASE(
    "threads: 8 threads evaluate shared host tensors and call one traced function: the single-threaded "
    "bits") {
    const Inputs in;
    auto f = loom::function("threads_host_affine", [](Array x, Array w) {
        const Array y = gelu(x * w + 0.5);
        return std::make_tuple(y, max(y));
    });
    std::vector<std::vector<std::vector<unsigned char>>> expected(kThreads), got(kThreads);
    for (int t = 0; t < kThreads; ++t) expected[static_cast<std::size_t>(t)] = work(in, f, t);
    const int iterations = 6;
    const std::vector<std::string> errors = on_threads([&](int t) {
        for (int k = 0; k < iterations; ++k) got[static_cast<std::size_t>(t)] = work(in, f, t);
    });
    for (int t = 0; t < kThreads; ++t) {
        CHECK_MESSAGE(errors[static_cast<std::size_t>(t)].empty(), "thread ", t, ": ",
                      errors[static_cast<std::size_t>(t)]);
        CHECK_MESSAGE(got[static_cast<std::size_t>(t)] == expected[static_cast<std::size_t>(t)], "thread ", t,
                      " differs");
    }
    CHECK(f.stats().specializations == 1);  // one kind of arguments: traced once, whatever the threads
    CHECK(f.stats().traces == 1);
}

TEST_CASE("threads: 8 threads build kernels through the disk and in-memory caches with NVRTC: each key once" *
          loom_test::needs_cuda()) {
    const CacheDir dir;
    const Inputs in;
    // Four kernels every thread needs: each compiled by compile() (disk cache, NVRTC), and built through the
    // in-memory cache under its own key.
    const std::vector<Array> arrays{
        relu(Array(in.x) * in.w + in.b), sum(Array(in.x) * in.x, 1), softmax(in.x),
        (Array(in.i) >> 2) ^ Array(in.i).slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, -1}})};
    constexpr std::uint64_t kKeyBase = 0x7468726561647300ull;  // "threads\0": keys no other test uses
    std::array<std::atomic<int>, 4> builds{};
    std::array<std::shared_ptr<const CompiledKernel>, kThreads * 4> seen{};
    std::vector<std::string> sources(arrays.size());
    for (std::size_t k = 0; k < arrays.size(); ++k)
        sources[k] = cuda_source({arrays[k]}, fmt::format("threads_k{}", k));
    const std::vector<std::string> errors = on_threads([&](int t) {
        for (int round = 0; round < 2; ++round)
            for (std::size_t j = 0; j < arrays.size(); ++j) {
                const std::size_t k =
                    (j + static_cast<std::size_t>(t)) % arrays.size();  // threads start on different kernels
                const CompileReport r = compile({arrays[k]}, fmt::format("threads_k{}", k));
                if (r.kernels != 1 || r.image_bytes == 0)
                    throw Error(fmt::format("compile() of kernel {}: {} kernels", k, r.kernels));
                if (cuda_source({arrays[k]}, fmt::format("threads_k{}", k)) != sources[k])
                    throw Error(fmt::format("cuda_source() of kernel {} differs between threads", k));
                (void)explain({arrays[k]});
                auto ck = cached_kernel(kKeyBase + k, 0, [&] {
                    builds[k].fetch_add(1);
                    CompiledKernel c;
                    c.source.name = fmt::format("threads_k{}", k);
                    c.source.source = sources[k];
                    nvrtc::Options o;
                    const CachedCompile cc = compile_cached(c.source.name, c.source.source, o);
                    c.arch = cc.result.arch;
                    c.from_disk = cc.from_disk;
                    return c;  // no module: loading needs a GPU
                });
                if (round == 0)
                    seen[static_cast<std::size_t>(t) * 4 + k] = ck;
                else if (seen[static_cast<std::size_t>(t) * 4 + k] != ck)
                    throw Error("the cached kernel changed");
            }
    });
    for (int t = 0; t < kThreads; ++t)
        CHECK_MESSAGE(errors[static_cast<std::size_t>(t)].empty(), "thread ", t, ": ",
                      errors[static_cast<std::size_t>(t)]);
    for (std::size_t k = 0; k < arrays.size(); ++k) {
        CHECK_MESSAGE(builds[k].load() == 1, "kernel ", k, " built ", builds[k].load(), " times");
        for (int t = 1; t < kThreads; ++t)
            CHECK(seen[static_cast<std::size_t>(t) * 4 + k] == seen[k]);  // one object for all
    }
    const DiskCacheStats s = disk_cache_stats();
    MESSAGE("disk cache: ", s.hits, " hits, ", s.misses, " misses, ", s.stores, " stores, ", s.compiles,
            " NVRTC compiles");
    CHECK(s.rejected == 0);
    CHECK(s.store_failures == 0);
    CHECK(s.stores >= 4);
    CHECK(s.hits + s.misses == static_cast<std::uint64_t>(kThreads) * 2 * 4 +
                                   4);  // compile() per thread, round and kernel; one build each
}
