// The in-memory kernel cache: compiled pointwise kernels keyed by graph structure and specialization
// (codegen::kernel_key), so that a hit does no code generation and hashes no source text.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "loom/codegen/cuda/emit.hpp"
#include "loom/runtime/module.hpp"

namespace loom {

/// One compiled kernel: its source and plan, the loaded module and both entry points.
struct CompiledKernel {
    codegen::KernelSource source;
    Module module;
    Kernel vector_kernel;  // not loaded when the plan has no vector variant
    Kernel scalar_kernel;
    std::string arch;
    double codegen_ms = 0;
    double compile_ms = 0;
    double load_ms = 0;
    double lookup_ms = 0;    // disk cache lookup
    bool from_disk = false;  // the image came from the disk cache (no NVRTC)
};

/// Counters of the in-memory cache since the process started.
struct KernelCacheStats {
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;  // lookups that had to build (or wait for another thread's build)
    std::uint64_t builds = 0;  // kernels this cache built: compiled, or loaded from the disk cache
    // NVRTC compilations of the kernels this cache built (not those the disk cache served), and their time.
    std::uint64_t compiles = 0;
    double compile_ms = 0;
};

/// Returns the kernel for `key` on device `device`, calling `build` once per key and device when absent.
/// Thread-safe: two threads that need the same new kernel build it once (the second waits). A build that
/// throws is not cached; the exception reaches every waiting caller.
std::shared_ptr<const CompiledKernel> cached_kernel(std::uint64_t key, int device,
                                                    const std::function<CompiledKernel()>& build);

/// The kernel for `key` on `device` when it is built and cached (counted as a hit), else null; never
/// builds or waits.
std::shared_ptr<const CompiledKernel> find_cached_kernel(std::uint64_t key, int device);

KernelCacheStats kernel_cache_stats();
/// Drops every cached kernel (modules unload when no caller still holds them).
void clear_kernel_cache();

}  // namespace loom
