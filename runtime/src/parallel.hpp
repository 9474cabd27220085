// A small parallel_for over std::thread for the CPU reference evaluator and the test helpers, and concurrent
// independent jobs (kernel builds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace loom::detail {

/// Number of worker threads parallel_for uses: LOOM_REFERENCE_THREADS when set to a positive integer,
/// else std::thread::hardware_concurrency() (at least 1).
int reference_threads();

/// Calls `body(begin, end)` on disjoint ranges covering [0, n), each at most `grain` long, from up to
/// reference_threads() threads (the calling thread included). Runs inline when n <= grain or one thread is
/// configured. The first exception thrown by a body is rethrown on the calling thread after all ranges
/// have finished or been abandoned.
void parallel_for(std::int64_t n, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& body);

/// Runs `job(0) .. job(n - 1)`, each on a thread of its own when n > 1 (independent builds: code
/// generation, the disk cache and NVRTC, which is thread-safe for distinct programs), inline when n == 1.
/// Every job finishes before the first exception (in job order) is rethrown on the calling thread.
void run_concurrently(std::size_t n, const std::function<void(std::size_t)>& job);

}  // namespace loom::detail
