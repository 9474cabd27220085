// FOR TESTS ONLY: fault injection. A test arms one site (an allocation, an NVRTC compilation, a disk-cache
// write) to fail at its n-th event from now on, runs an evaluation, and checks what Loom promises after a
// failure (docs/reliability.md): the error is the one a real failure raises (OutOfMemory, CompileError, one
// warning and the disk cache skipped), nothing leaks, the user's tensors keep their bytes, and the next
// evaluation works. Counting without failing (kNever) tells a test how many events of a site one
// evaluation has, so that it can fail each in turn.
//
// Unarmed, every site costs one relaxed atomic load. The state is the process's (all threads): arm it only
// in a test that runs no other Loom work at the same time.
#pragma once

#include <cstdint>
#include <limits>

namespace loom::testing {

/// The places a fault can be injected.
enum class FaultSite : unsigned {
    /// memory::allocate() of host memory: Tensor::host(), the CPU reference's values and results. Raises
    /// loom::OutOfMemory as a failed aligned_alloc does.
    HostAllocation,
    /// memory::allocate() on a CUDA device (results, temporaries, split workspaces, parameter buffers) and
    /// the per-stream split-counter buffers. Raises loom::OutOfMemory as a failed cudaMallocAsync does
    /// after the trim and retry.
    DeviceAllocation,
    /// nvrtc::compile(): raises loom::CompileError instead of compiling (NVRTC is not called).
    NvrtcCompile,
    /// DiskCache::store(): the entry's write fails with the armed errno (default ENOSPC: the disk is full;
    /// EROFS or EACCES fail the temporary file's creation, as a read-only directory does).
    DiskCacheWrite,
};
inline constexpr unsigned kFaultSites = 4;

/// An event number that is never reached: the site counts its events and never fails.
inline constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

/// Arms `site`: its events are counted from 0 again, and event number `nth` fails (once). `error` is the
/// errno of a DiskCacheWrite fault (0: ENOSPC) and ignored elsewhere. Other sites keep their state.
void inject_fault(FaultSite site, std::uint64_t nth, int error = 0);
/// Disarms every site, resets the event counts and the injected-fault counts.
void clear_faults();
/// Events at `site` since it was armed (0 when it is not armed: unarmed sites do not count).
std::uint64_t fault_events(FaultSite site);
/// Faults injected at `site` since the last clear_faults().
std::uint64_t faults_injected(FaultSite site);

/// Arms `site` for the scope of the object; the destructor calls clear_faults().
class FaultScope {
  public:
    explicit FaultScope(FaultSite site, std::uint64_t nth = kNever, int error = 0) {
        inject_fault(site, nth, error);
    }
    ~FaultScope() { clear_faults(); }
    FaultScope(const FaultScope&) = delete;
    FaultScope& operator=(const FaultScope&) = delete;
};

/// Host memory blocks handed out by memory::allocate() and not yet released (every thread): a leak check
/// for host evaluations, whose "pool statistics" this is.
std::int64_t live_host_allocations();

}  // namespace loom::testing
