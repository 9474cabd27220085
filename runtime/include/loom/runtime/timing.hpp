// Timing GPU work the way WORKLOADS.md asks: CUDA events around each call, after warm-up, median.
#pragma once

#include <functional>

#include "loom/runtime/stream.hpp"

namespace loom {

/// Median milliseconds of one call of `fn` on the current stream: `warmup` untimed calls, then `reps`
/// calls each bracketed by a pair of CUDA events, all enqueued back to back without synchronizing, so
/// that the host's launch overhead overlaps earlier work as in a real program; one synchronization at the
/// end. Resolution about 0.5 µs (cudaEventElapsedTime). Throws loom::NoDeviceError without a GPU.
double median_ms(const std::function<void()>& fn, int reps = 50, int warmup = 5);

}  // namespace loom
