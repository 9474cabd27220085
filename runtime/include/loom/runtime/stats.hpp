// One place for Loom's counters: compilations, the kernel caches in memory and on disk, launches, graph
// replays and the memory pool, since the process started or since reset_stats().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom {

/// Loom's counters. Counts and milliseconds are since the process started or the last reset_stats(); a
/// cache cleared with its own call since then (clear_host_kernel_cache(), reset_disk_cache()) counts from
/// that clearing. The pool's bytes are the current device's now (0 without a GPU). Every field is
/// process-wide: all threads and devices; stats() may run beside evaluations and reset_stats() on any thread.
struct Stats {
    // Compilations (each also a miss of the memory cache; a disk-cache hit compiles nothing).
    std::uint64_t nvrtc_compiles = 0;  // CUDA kernels compiled by NVRTC
    double nvrtc_compile_ms = 0;       // their total NVRTC time
    std::uint64_t llvm_compiles = 0;   // host kernels compiled by LLVM
    double llvm_compile_ms = 0;        // their total LLVM time (parse, optimize, code generation)
    // The in-memory kernel caches: a hit needs no code generation.
    std::uint64_t gpu_kernel_hits = 0, gpu_kernel_misses = 0;
    std::uint64_t host_kernel_hits = 0, host_kernel_misses = 0;
    // The disk cache, CUDA images and host kernel objects alike.
    std::uint64_t disk_hits = 0, disk_misses = 0, disk_stores = 0;
    std::uint64_t host_disk_hits = 0;  // of the hits, host kernel objects loaded
    // Work.
    std::uint64_t gpu_launches = 0;      // kernels launched one by one (not those inside a graph replay)
    std::uint64_t graph_replays = 0;     // automatic CUDA graphs of traced functions launched
    std::uint64_t host_kernel_runs = 0;  // host kernels run (each on the thread pool)
    // Memory of the current device's stream-ordered pool, now (not reset).
    std::size_t pool_used_bytes = 0;
    std::size_t pool_reserved_bytes = 0;

    /// A few lines, one per group above, for a log.
    std::string to_string() const;
};

/// The counters now. Never throws for want of a GPU (the pool's bytes are then 0).
Stats stats();
/// Starts the counts and milliseconds again from zero (the caches keep their kernels).
void reset_stats();

}  // namespace loom
