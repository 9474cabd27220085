// The counters that exist only for loom::stats(): launches, graph replays and host kernel runs; and the
// LOOM_DUMP=stats exit handler, registered by the first of them or the first compilation.
#pragma once

namespace loom::detail {

void count_gpu_launch() noexcept;
void count_graph_replay() noexcept;
void count_host_kernel_run() noexcept;
// Registers the LOOM_DUMP=stats exit handler once (when the variable asks for it); called by the counters
// above and by the NVRTC and LLVM compile paths, so that a program that only compiles prints its counts too.
void register_stats_dump() noexcept;

}  // namespace loom::detail
