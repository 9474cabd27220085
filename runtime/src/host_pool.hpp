// The host back end's thread pool: one per process, std::thread workers started on first use, each with the
// floating-point control state the contract needs (MXCSR: round to nearest, no flush to zero, no
// denormals-are-zero). Work is a number of tasks whose boundaries the plan fixed from the shape alone; which
// thread runs a task never changes what it computes.
#pragma once

#include <cstdint>
#include <functional>

namespace loom::host {

/// The most threads LOOM_CPU_THREADS may ask for.
inline constexpr int kMaxPoolThreads = 1024;

/// Threads that run host kernels: LOOM_CPU_THREADS when set to a whole number from 1 to kMaxPoolThreads,
/// else std::thread::hardware_concurrency() (at least 1; another value is warned about). The calling
/// thread counts as one.
int pool_threads();

/// Runs `task(t)` for every t in [0, tasks), on the pool's workers and the calling thread, and returns when
/// all have finished. Inline on the calling thread when tasks <= 1 or the pool has one thread. Tasks must not
/// throw (generated code does not) and must not call run() themselves. Thread-safe: concurrent calls share
/// the workers.
void run(std::int64_t tasks, const std::function<void(std::int64_t)>& task);

/// Sets this thread's floating-point control state to the contract's (MXCSR 0x1f80 on x86-64: every exception
/// masked, round to nearest even, FTZ and DAZ off) for its lifetime, restoring the previous state after.
class FloatEnvironment {
  public:
    FloatEnvironment();
    ~FloatEnvironment();
    FloatEnvironment(const FloatEnvironment&) = delete;
    FloatEnvironment& operator=(const FloatEnvironment&) = delete;

  private:
    unsigned saved_ = 0;
};

}  // namespace loom::host
