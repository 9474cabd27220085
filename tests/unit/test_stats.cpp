// loom::stats(): one call for the counters of compilations, caches, launches and runs; reset_stats().
#include <doctest/doctest.h>

#include <string>

#include "loom/loom.hpp"

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
