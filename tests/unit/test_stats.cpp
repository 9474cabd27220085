// loom::stats(): one call for the counters of compilations, caches, launches and runs; reset_stats().
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>

#include "../common/needs_cuda.hpp"
#include "loom/loom.hpp"
#include "loom/runtime/host_backend.hpp"
#include "loom/runtime/kernel_cache.hpp"

using namespace loom;

TEST_CASE("stats() counts host kernels built, found and run, and reset_stats() starts the counts again") {
    const Tensor x = testing::random_tensor({4096}, float32, 11);
    reset_stats();
    const Stats zero = stats();
    CHECK(zero.host_kernel_runs == 0);
    CHECK(zero.host_kernel_hits == 0);
    CHECK(zero.host_kernel_misses == 0);
    CHECK(zero.llvm_compiles == 0);
    CHECK(zero.gpu_launches == 0);
    // A new expression: one kernel built (compiled, or loaded from the disk cache) and run.
    const Tensor a = eval(relu(Array(x) * 3.25f - 0.5f));
    const Stats first = stats();
    CHECK(first.host_kernel_runs == 1);
    CHECK(first.host_kernel_misses == 1);
    CHECK(first.llvm_compiles + first.host_disk_hits == 1);
    CHECK(first.llvm_compile_ms >= 0.0);
    // The same expression again: found in memory, run again, nothing compiled.
    const Tensor b = eval(relu(Array(x) * 3.25f - 0.5f));
    const Stats second = stats();
    CHECK(second.host_kernel_runs == 2);
    CHECK(second.host_kernel_hits == 1);
    CHECK(second.host_kernel_misses == 1);
    CHECK(second.llvm_compiles == first.llvm_compiles);
    CHECK(second.gpu_launches == 0);  // host work launches nothing on a GPU
    const std::string text = second.to_string();
    CHECK(text.find("loom stats:") == 0);
    CHECK(text.find("2 host kernel runs") != std::string::npos);
    reset_stats();
    CHECK(stats().host_kernel_runs == 0);
    CHECK(stats().host_kernel_hits == 0);
}

TEST_CASE("stats() never wraps below zero: a cache cleared after reset_stats(), and resets beside it") {
    const Tensor x = testing::random_tensor({512}, float32, 12);
    (void)eval(exp(Array(x)) + 1.0f);
    reset_stats();
    // The host cache's own counters start again from zero: stats() counts from that clearing.
    clear_host_kernel_cache();
    (void)eval(exp(Array(x)) * 3.0f);
    const Stats after_clear = stats();
    CHECK(after_clear.host_kernel_misses <= 1);
    CHECK(after_clear.host_kernel_runs == 1);
    CHECK(after_clear.llvm_compile_ms >= 0.0);
    CHECK(after_clear.llvm_compiles <= 1);
    // reset_stats() on one thread while another reads: every count stays small (a newer baseline than the
    // counts read wrapped them to about 1.8e19 before).
    std::atomic<bool> stop{false};
    std::thread resetter([&] {
        while (!stop.load()) reset_stats();
    });
    std::thread worker([&] {
        for (int i = 0; i < 200; ++i) (void)eval(exp(Array(x)) + 2.0f);
    });
    bool wrapped = false;
    for (int i = 0; i < 20000; ++i) {
        const Stats s = stats();
        wrapped = wrapped || s.host_kernel_runs > 1000000 || s.host_kernel_hits > 1000000 ||
                  s.llvm_compile_ms < 0.0;
    }
    worker.join();
    stop = true;
    resetter.join();
    CHECK_FALSE(wrapped);
}

TEST_CASE("stats() counts the NVRTC compilations of compile(), and a disk-cache hit as none" *
          loom_test::needs_cuda()) {
    // A kernel of its own (a constant no other test uses), compiled twice: the first time by NVRTC or read
    // from the disk cache (an earlier run stored it), the second time read from the disk cache (or compiled
    // again where the disk cache is off). stats() agrees with each CompileReport.
    const Tensor x = testing::random_tensor({4096}, float32, 12);
    const Array y = relu(Array(x) * 1.6180339f + 0.4142135f);
    reset_stats();
    const CompileReport first = compile({y}, "stats_nvrtc");
    REQUIRE(first.kernels >= 1);
    const Stats after_first = stats();
    CHECK(after_first.nvrtc_compiles == static_cast<std::uint64_t>(first.kernels - first.disk_hits));
    CHECK(after_first.disk_hits == static_cast<std::uint64_t>(first.disk_hits));
    CHECK(after_first.nvrtc_compile_ms == doctest::Approx(first.compile_ms).epsilon(1e-9));
    const CompileReport second = compile({y}, "stats_nvrtc");
    const Stats after_second = stats();
    CHECK(after_second.nvrtc_compiles - after_first.nvrtc_compiles ==
          static_cast<std::uint64_t>(second.kernels - second.disk_hits));
    CHECK(after_second.disk_hits - after_first.disk_hits == static_cast<std::uint64_t>(second.disk_hits));
    CHECK(after_second.gpu_launches == 0);  // compile() launches nothing
}

TEST_CASE("the GPU kernel cache counts each kernel it builds once: compiled, or loaded from the disk cache") {
    // Builds that load no module (no GPU needed): one compiled, one served by the disk cache, then a hit.
    const KernelCacheStats before = kernel_cache_stats();
    const std::uint64_t key = 0x6275696c64730001ull;  // keys no real kernel has
    auto build = [](bool from_disk) {
        return [from_disk] {
            CompiledKernel k;
            k.from_disk = from_disk;
            return k;
        };
    };
    (void)cached_kernel(key, 0, build(false));
    (void)cached_kernel(key + 1, 0, build(true));
    (void)cached_kernel(key, 0, build(false));
    const KernelCacheStats after = kernel_cache_stats();
    CHECK(after.builds - before.builds == 2);
    CHECK(after.compiles - before.compiles == 1);  // the disk cache's image compiled nothing
    CHECK(after.misses - before.misses == 2);
    CHECK(after.hits - before.hits == 1);
}
