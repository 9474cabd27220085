// NVTX ranges for profilers (Nsight Systems): evaluations, traced calls, compiles (NVRTC, LLVM, disk-cache
// loads) and copies, in the domain "Loom", when LOOM_NVTX=1 (docs/options.md). Off by default: then a range
// costs one load of a cached flag and names nothing.
#pragma once

#include <string>
#include <utility>

namespace loom::detail {

/// Whether LOOM_NVTX=1: read from the environment once, on the first call.
bool nvtx_enabled() noexcept;

/// Pushes / pops a range of the "Loom" domain on the calling thread (NVTX3, header-only: a no-op unless a
/// tool such as nsys is attached).
void nvtx_push(const std::string& name) noexcept;
void nvtx_pop() noexcept;

/// A range over a scope: `name()` (returning a std::string) is called, and the range pushed, only when
/// LOOM_NVTX=1, so that a disabled range builds no text.
class NvtxRange {
  public:
    template <class F>
    explicit NvtxRange(F&& name) {
        if (nvtx_enabled()) {
            nvtx_push(std::forward<F>(name)());
            active_ = true;
        }
    }
    ~NvtxRange() {
        if (active_) nvtx_pop();
    }
    NvtxRange(const NvtxRange&) = delete;
    NvtxRange& operator=(const NvtxRange&) = delete;

  private:
    bool active_ = false;
};

}  // namespace loom::detail
