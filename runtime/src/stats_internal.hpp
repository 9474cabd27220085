// The counters that exist only for loom::stats(): launches, graph replays and host kernel runs.
#pragma once

namespace loom::detail {

void count_gpu_launch() noexcept;
void count_graph_replay() noexcept;
void count_host_kernel_run() noexcept;

}  // namespace loom::detail
