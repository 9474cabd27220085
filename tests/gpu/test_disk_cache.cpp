// Kernels loaded from the disk cache run and give the CPU reference's results: 50 distinct kernels are
// compiled into an empty cache and checked, then the in-memory cache is dropped and the disk cache reopened
// (as a new process would), and every kernel is loaded from disk without NVRTC and checked again.
#include <doctest/doctest.h>

#include <filesystem>
#include <vector>

#include "../disk_cache/stress_kernels.hpp"
#include "../unit/disk_cache_test_util.hpp"
#include "loom/loom.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

// The inputs, drawn by random_uniform (a kernel of Loom's own, compiled and cached before the counts start).
std::vector<Tensor> inputs_of(int kernels) {
    std::vector<Tensor> xs;
    for (int k = 0; k < kernels; ++k)
        xs.push_back(
            random_uniform({4097}, float32, -2, 2, static_cast<std::uint64_t>(k + 1), Device::cuda(0)));
    return xs;
}

void run_and_check(const std::vector<Tensor>& xs) {
    for (int k = 0; k < static_cast<int>(xs.size()); ++k) {
        const Array y = stress::kernel_graph(xs[static_cast<std::size_t>(k)], k);
        Tensor out = Tensor::empty({4097}, float32, Device::cuda(0));
        assign(out, y);
        const auto c = testing::check_against_reference({y.node()}, {out});
        INFO("kernel ", k, ": ", c.message);
        CHECK(c.ok);
    }
}

}  // namespace

TEST_CASE("disk cache: kernels loaded from disk run and match the CPU reference") {
    test::TempDir t;
    ::setenv("LOOM_CACHE_DIR", (t.path / "cache").c_str(), 1);
    clear_kernel_cache();
    reset_disk_cache();
    constexpr int kKernels = 50;
    const std::vector<Tensor> xs = inputs_of(kKernels);
    clear_kernel_cache();
    reset_disk_cache();
    const std::uint64_t n0 = nvrtc::compile_count();
    run_and_check(xs);
    CHECK(nvrtc::compile_count() - n0 == kKernels);
    CHECK(disk_cache_stats().stores == kKernels);

    clear_kernel_cache();
    reset_disk_cache();
    const std::uint64_t n1 = nvrtc::compile_count();
    run_and_check(xs);
    CHECK(nvrtc::compile_count() == n1);  // every image from disk
    CHECK(disk_cache_stats().hits == kKernels);
    ::unsetenv("LOOM_CACHE_DIR");
    clear_kernel_cache();
    reset_disk_cache();
}
