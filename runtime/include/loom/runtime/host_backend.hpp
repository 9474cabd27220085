// The host back end: host tensors run on LLVM-generated code (the loom_llvm module, loaded with dlopen on
// first use) by default, on the CPU reference with LOOM_CPU_BACKEND=reference or when the module cannot be
// loaded. docs/llvm-backend.md describes the back end, its placement, caching and numerics.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/ir/node.hpp"

namespace loom {

/// Where host tensors run, decided once per process when host work first needs it.
struct HostBackendInfo {
    bool llvm = false;  // the LLVM back end runs host work
    std::string
        reason;  // when not: why the reference does ("LOOM_CPU_BACKEND=reference", a dlopen error, ...)
    std::string module;        // the path of the loaded libloom_llvm.so
    std::string llvm_version;  // "19.1.7"
    std::string triple, cpu,
        features;         // the JIT's target (the host's features, bfloat16 conversions removed)
    int vector_bits = 0;  // widest vector registers the generated code uses
    std::int64_t cache_bytes =
        0;            // the last-level cache the host schedule plans for (streamed stores beyond it)
    int threads = 1;  // threads of the host thread pool (LOOM_CPU_THREADS)
};

/// The host back end of this process (loads the module on first call). Thread-safe.
const HostBackendInfo& host_backend_info();

/// The LLVM IR of every host kernel of `roots` (one module per kernel, concatenated), for the inputs' layouts
/// and this machine's target (an AVX-512 target when the module is not loaded). Needs no LLVM: the IR is
/// text.
std::string llvm_source(const std::vector<ir::NodePtr>& roots, std::string_view name = {});

/// Counters of the host kernel cache since the process started (or the last clear).
struct HostKernelCacheStats {
    std::uint64_t hits = 0;       // kernels found in memory: no code generation
    std::uint64_t misses = 0;     // kernels built (or waited for)
    std::uint64_t compiles = 0;   // LLVM compilations (misses of the disk cache too)
    std::uint64_t disk_hits = 0;  // object files loaded from the disk cache
    std::uint64_t shared =
        0;                  // kernels whose IR but for their name is a kernel's built before: its code reused
    double compile_ms = 0;  // total LLVM time (parse, optimize, code generation)
    double load_ms = 0;     // total time linking objects into the JIT
};
HostKernelCacheStats host_kernel_cache_stats();
/// Drops every cached host kernel (its code is freed when no evaluation still holds it) and zeroes the
/// counters.
void clear_host_kernel_cache();

}  // namespace loom
