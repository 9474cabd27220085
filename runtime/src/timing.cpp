// median_ms: per-call CUDA event timing with the launches queued back to back.
#include "loom/runtime/timing.hpp"

#include <algorithm>
#include <vector>

#include "loom/runtime/device.hpp"

namespace loom {

double median_ms(const std::function<void()>& fn, int reps, int warmup) {
    require_cuda("median_ms()");
    for (int i = 0; i < warmup; ++i) fn();
    std::vector<Event> start(static_cast<std::size_t>(std::max(reps, 1)));
    std::vector<Event> stop(start.size());
    for (std::size_t i = 0; i < start.size(); ++i) {
        start[i].record();
        fn();
        stop[i].record();
    }
    stop.back().synchronize();
    std::vector<double> ms;
    for (std::size_t i = 0; i < start.size(); ++i) ms.push_back(Event::elapsed_ms(start[i], stop[i]));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace loom
