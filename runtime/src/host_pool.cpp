// The host back end's thread pool (host_pool.hpp): detached workers that take tasks of queued jobs; the
// calling thread works on its own job too and returns when every task has finished and no worker still
// holds the job.
#include "host_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LOOM_HAVE_MXCSR 1
#endif

namespace loom::host {

FloatEnvironment::FloatEnvironment() {
#ifdef LOOM_HAVE_MXCSR
    saved_ = _mm_getcsr();
    // 0x1f80: the six exception masks set; rounding control 00 (to nearest even); FTZ (bit 15) and DAZ (bit
    // 6) clear, so subnormal inputs and results are kept (docs/semantics.md, section 1).
    _mm_setcsr(0x1f80u | (saved_ & 0x3fu));  // the sticky exception flags stay as they were
#endif
}

FloatEnvironment::~FloatEnvironment() {
#ifdef LOOM_HAVE_MXCSR
    _mm_setcsr(saved_);
#endif
}

int pool_threads() {
    static const int n = [] {
        const unsigned hw_count = std::thread::hardware_concurrency();
        const int hw = hw_count == 0 ? 1 : static_cast<int>(hw_count);
        const char* s = std::getenv("LOOM_CPU_THREADS");
        if (!s || !*s) return hw;
        // A whole number from 1 to kMaxPoolThreads, nothing after it; anything else is warned about.
        char* end = nullptr;
        const long v = std::strtol(s, &end, 10);
        if (end == s || *end != '\0' || v < 1 || v > kMaxPoolThreads) {
            fmt::print(stderr,
                       "loom: warning: LOOM_CPU_THREADS={} is not a thread count from 1 to {}; using the "
                       "hardware's {}\n",
                       s, kMaxPoolThreads, hw);
            return hw;
        }
        return static_cast<int>(v);
    }();
    return n;
}

namespace {

struct Job {
    const std::function<void(std::int64_t)>* task = nullptr;
    std::int64_t tasks = 0;
    std::atomic<std::int64_t> next{0};
    std::int64_t finished = 0;  // under the pool's mutex
    int holders = 0;            // workers inside this job, under the pool's mutex
};

class Pool {
  public:
    // A thread the system refuses (a process limit) leaves the pool with the workers started so far: the
    // calling thread takes tasks too, so every job still runs to its end.
    explicit Pool(int workers) {
        for (int k = 0; k < workers; ++k) {
            try {
                std::thread([this] { worker(); }).detach();
            } catch (const std::system_error& e) {
                fmt::print(stderr, "loom: warning: the host pool started {} of its {} worker threads: {}\n",
                           k, workers, e.what());
                break;
            }
        }
    }

    void run(std::int64_t tasks, const std::function<void(std::int64_t)>& task) {
        Job job;
        job.task = &task;
        job.tasks = tasks;
        {
            std::lock_guard lock(mu_);
            queue_.push_back(&job);
        }
        work_.notify_all();
        const std::int64_t mine = take(job);
        std::unique_lock lock(mu_);
        job.finished += mine;
        done_.wait(lock, [&] { return job.finished == job.tasks && job.holders == 0; });
        const auto it = std::find(queue_.begin(), queue_.end(), &job);
        if (it != queue_.end()) queue_.erase(it);
    }

  private:
    // Runs tasks of `job` until none is left; returns how many it ran.
    static std::int64_t take(Job& job) {
        std::int64_t ran = 0;
        for (;;) {
            const std::int64_t t = job.next.fetch_add(1, std::memory_order_relaxed);
            if (t >= job.tasks) return ran;
            (*job.task)(t);
            ++ran;
        }
    }

    void worker() {
        const FloatEnvironment
            fe;  // the contract's rounding and subnormals, for every kernel this thread runs
        std::unique_lock lock(mu_);
        for (;;) {
            work_.wait(lock, [&] { return !queue_.empty(); });
            Job* job = queue_.front();
            if (job->next.load(std::memory_order_relaxed) >=
                job->tasks) {  // every task taken: not ours to wait for
                queue_.pop_front();
                continue;
            }
            ++job->holders;
            lock.unlock();
            const std::int64_t ran = take(*job);
            lock.lock();
            job->finished += ran;
            --job->holders;
            if (!queue_.empty() && queue_.front() == job) queue_.pop_front();
            if (job->finished == job->tasks && job->holders == 0) done_.notify_all();
        }
    }

    std::mutex mu_;
    std::condition_variable work_, done_;
    std::deque<Job*> queue_;
};

Pool& pool() {
    // Never destroyed: the workers are detached and may wait on it until the process ends.
    static Pool* p = new Pool(std::max(0, pool_threads() - 1));
    return *p;
}

}  // namespace

void run(std::int64_t tasks, const std::function<void(std::int64_t)>& task) {
    if (tasks <= 0) return;
    const FloatEnvironment fe;  // the calling thread runs tasks too
    if (tasks == 1 || pool_threads() <= 1) {
        for (std::int64_t t = 0; t < tasks; ++t) task(t);
        return;
    }
    pool().run(tasks, task);
}

}  // namespace loom::host
