// time_calls and median_ms: per-call CUDA event timing with the launches queued back to back, or the host's
// steady clock around each call.
#include "loom/runtime/timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "loom/runtime/device.hpp"

namespace loom {

namespace {

std::vector<double> event_times(const std::function<void()>& fn, std::size_t reps) {
    std::vector<Event> start(reps), stop(reps);
    for (std::size_t i = 0; i < reps; ++i) {
        start[i].record();
        fn();
        stop[i].record();
    }
    stop.back().synchronize();
    std::vector<double> ms;
    for (std::size_t i = 0; i < reps; ++i) ms.push_back(Event::elapsed_ms(start[i], stop[i]));
    return ms;
}

std::vector<double> wall_times(const std::function<void()>& fn, std::size_t reps) {
    using Clock = std::chrono::steady_clock;
    std::vector<double> ms;
    for (std::size_t i = 0; i < reps; ++i) {
        const Clock::time_point t0 = Clock::now();
        fn();
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return ms;
}

}  // namespace

std::string Timing::to_string() const {
    return fmt::format("median of {} calls, {:.4f} ms (min {:.4f}), {}", reps, median_ms, min_ms,
                       clock == TimingClock::CudaEvents ? "CUDA events on the current stream"
                                                        : "the host's steady clock (wall time)");
}

Timing time_calls(const std::function<void()>& fn, Device device, int reps, int warmup) {
    if (device.is_cuda()) require_cuda("time_calls() of GPU work");
    for (int i = 0; i < warmup; ++i) fn();
    const std::size_t n = static_cast<std::size_t>(std::max(reps, 1));
    std::vector<double> ms = device.is_cuda() ? event_times(fn, n) : wall_times(fn, n);
    std::sort(ms.begin(), ms.end());
    Timing t;
    t.median_ms = ms[ms.size() / 2];
    t.min_ms = ms.front();
    t.reps = static_cast<int>(n);
    t.clock = device.is_cuda() ? TimingClock::CudaEvents : TimingClock::HostWallClock;
    return t;
}

double median_ms(const std::function<void()>& fn, int reps, int warmup) {
    const Device device = cuda_available() ? Device::cuda(current_device()) : Device::cpu();
    return time_calls(fn, device, reps, warmup).median_ms;
}

}  // namespace loom
