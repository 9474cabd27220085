// Timing work the way WORKLOADS.md asks: after warm-up, each call timed on its own, the median. GPU work
// between CUDA events; host work by the host's steady clock.
#pragma once

#include <functional>
#include <string>

#include "loom/runtime/stream.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom {

/// How a timing was taken.
enum class TimingClock {
    /// A pair of CUDA events on the current stream around each call, all calls enqueued back to back
    /// without synchronizing (the host's launch overhead overlaps earlier work, as in a real program), one
    /// synchronization at the end. Resolution about 0.5 µs (cudaEventElapsedTime).
    CudaEvents,
    /// std::chrono::steady_clock around each call: wall time of work that is done when the call returns
    /// (host evaluations are). Resolution that of the clock (nanoseconds on Linux).
    HostWallClock,
};

/// The median of `reps` timed calls, and how they were timed.
struct Timing {
    double median_ms = 0;
    double min_ms = 0;
    int reps = 0;
    TimingClock clock = TimingClock::CudaEvents;
    /// E.g. "median of 50 calls, 0.1234 ms (min 0.1200), CUDA events on the current stream".
    std::string to_string() const;
};

/// Times `fn` for work on `device`: `warmup` untimed calls, then max(reps, 1) calls each timed on its own
/// (CUDA events for a CUDA device, the host's steady clock for the CPU; see TimingClock). Throws
/// loom::NoDeviceError for a CUDA device without a GPU; whatever `fn` throws passes through.
Timing time_calls(const std::function<void()>& fn, Device device, int reps = 50, int warmup = 5);

/// Median milliseconds of one call of `fn`: time_calls() on the current CUDA device when a GPU is present
/// (CUDA events), else on the host (wall clock). To time host work on a machine with a GPU, call
/// time_calls(fn, Device::cpu()).
double median_ms(const std::function<void()>& fn, int reps = 50, int warmup = 5);

}  // namespace loom
