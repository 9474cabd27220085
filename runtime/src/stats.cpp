// loom::stats(): the caches' own counters, the launch counters below, and the pool, less the values at the
// last reset_stats(). LOOM_DUMP=stats prints them at exit.
#include "loom/runtime/stats.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "loom/ir/env.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/host_backend.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "stats_internal.hpp"

namespace loom {

namespace {

std::atomic<std::uint64_t> g_gpu_launches{0}, g_graph_replays{0}, g_host_kernel_runs{0};

std::mutex g_baseline_mu;
Stats g_baseline;  // the counts at the last reset_stats()

void print_at_exit() {
    std::fprintf(stderr, "%s", stats().to_string().c_str());
}

// The fields that count from a reset (the pool's bytes are a state, not a count).
constexpr std::uint64_t Stats::*kCounts[] = {
    &Stats::nvrtc_compiles,   &Stats::llvm_compiles,      &Stats::gpu_kernel_hits, &Stats::gpu_kernel_misses,
    &Stats::host_kernel_hits, &Stats::host_kernel_misses, &Stats::disk_hits,       &Stats::disk_misses,
    &Stats::disk_stores,      &Stats::host_disk_hits,     &Stats::gpu_launches,    &Stats::graph_replays,
    &Stats::host_kernel_runs};
constexpr double Stats::*kMilliseconds[] = {&Stats::nvrtc_compile_ms, &Stats::llvm_compile_ms};

// `now` less `base` in every count and millisecond field. A cache whose own counters were set back to zero
// after the baseline (clear_host_kernel_cache(), reset_disk_cache()) counts from that reset instead: a
// count below its baseline is taken whole, never wrapped below zero.
Stats since(Stats now, const Stats& base) {
    for (auto field : kCounts)
        if (now.*field >= base.*field) now.*field -= base.*field;
    for (auto field : kMilliseconds)
        if (now.*field >= base.*field) now.*field -= base.*field;
    return now;
}

// The counters since the process started.
Stats totals() {
    Stats s;
    // Every NVRTC compilation goes through the disk cache's compile_cached() (the launch path, compile(),
    // the parameter upload kernels), which counts it, and not a disk hit.
    const DiskCacheStats disk = disk_cache_stats();
    s.nvrtc_compiles = disk.compiles;
    s.nvrtc_compile_ms = disk.compile_ms;
    const KernelCacheStats gpu = kernel_cache_stats();
    s.gpu_kernel_hits = gpu.hits;
    s.gpu_kernel_misses = gpu.misses;
    const HostKernelCacheStats host = host_kernel_cache_stats();
    s.llvm_compiles = host.compiles;
    s.llvm_compile_ms = host.compile_ms;
    s.host_kernel_hits = host.hits;
    s.host_kernel_misses = host.misses;
    s.host_disk_hits = host.disk_hits;
    s.disk_hits = disk.hits;
    s.disk_misses = disk.misses;
    s.disk_stores = disk.stores;
    s.gpu_launches = g_gpu_launches.load(std::memory_order_relaxed);
    s.graph_replays = g_graph_replays.load(std::memory_order_relaxed);
    s.host_kernel_runs = g_host_kernel_runs.load(std::memory_order_relaxed);
    if (cuda_available()) {
        const PoolStats pool = pool_stats(current_device());
        s.pool_used_bytes = pool.used_bytes;
        s.pool_reserved_bytes = pool.reserved_bytes;
    }
    return s;
}

}  // namespace

namespace detail {
// LOOM_DUMP=stats: the handler is registered by the first counted launch, run or compilation. It reads the
// counters once first, so that every cache it reads exists before it is registered and is destroyed after
// it runs (objects are destroyed in the reverse order of their construction and of atexit registrations).
void register_stats_dump() noexcept {
    static std::once_flag once;
    std::call_once(once, [] {
        if (!env_list_contains("LOOM_DUMP", "stats")) return;
        try {
            (void)totals();
        } catch (...) {
            return;  // no counts to print (a broken CUDA runtime): print nothing at exit rather than throw
                     // there
        }
        std::atexit(print_at_exit);
    });
}
void count_gpu_launch() noexcept {
    g_gpu_launches.fetch_add(1, std::memory_order_relaxed);
    register_stats_dump();
}
void count_graph_replay() noexcept {
    g_graph_replays.fetch_add(1, std::memory_order_relaxed);
    register_stats_dump();
}
void count_host_kernel_run() noexcept {
    g_host_kernel_runs.fetch_add(1, std::memory_order_relaxed);
    register_stats_dump();
}
}  // namespace detail

std::string Stats::to_string() const {
    return fmt::format(
        "loom stats:\n"
        "  compiles: {} NVRTC in {:.1f} ms, {} LLVM in {:.1f} ms\n"
        "  kernel caches in memory: GPU {} hits, {} misses; host {} hits, {} misses\n"
        "  disk cache: {} hits, {} misses, {} stores; host objects loaded: {}\n"
        "  work: {} GPU launches, {} graph replays, {} host kernel runs\n"
        "  pool of the current device: {} bytes in use, {} reserved\n",
        nvrtc_compiles, nvrtc_compile_ms, llvm_compiles, llvm_compile_ms, gpu_kernel_hits, gpu_kernel_misses,
        host_kernel_hits, host_kernel_misses, disk_hits, disk_misses, disk_stores, host_disk_hits,
        gpu_launches, graph_replays, host_kernel_runs, pool_used_bytes, pool_reserved_bytes);
}

// Both read the counters under the baseline's lock, so that a baseline is never newer than the counts it is
// subtracted from (the counters only grow between resets).
Stats stats() {
    std::lock_guard lock(g_baseline_mu);
    return since(totals(), g_baseline);
}

void reset_stats() {
    std::lock_guard lock(g_baseline_mu);
    g_baseline = totals();
}

}  // namespace loom
