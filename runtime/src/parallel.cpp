// parallel_for: dynamic scheduling of fixed-size ranges over short-lived std::threads; run_concurrently.
#include "parallel.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace loom::detail {

int reference_threads() {
    static const int n = [] {
        if (const char* s = std::getenv("LOOM_REFERENCE_THREADS")) {
            const int v = std::atoi(s);
            if (v > 0) return v;
        }
        const unsigned hw = std::thread::hardware_concurrency();
        return hw == 0 ? 1 : static_cast<int>(hw);
    }();
    return n;
}

void parallel_for(std::int64_t n, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
    if (n <= 0) return;
    grain = std::max<std::int64_t>(grain, 1);
    const std::int64_t ranges = (n + grain - 1) / grain;
    const int threads = static_cast<int>(std::min<std::int64_t>(reference_threads(), ranges));
    if (threads <= 1) {
        for (std::int64_t b = 0; b < n; b += grain) body(b, std::min(n, b + grain));
        return;
    }
    std::atomic<std::int64_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&] {
        for (;;) {
            if (failed.load(std::memory_order_relaxed)) return;
            const std::int64_t r = next.fetch_add(1, std::memory_order_relaxed);
            if (r >= ranges) return;
            try {
                body(r * grain, std::min(n, (r + 1) * grain));
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!error) error = std::current_exception();
                failed.store(true);
                return;
            }
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads - 1));
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& th : pool) th.join();
    if (error) std::rethrow_exception(error);
}

void run_concurrently(std::size_t n, const std::function<void(std::size_t)>& job) {
    if (n == 0) return;
    if (n == 1) return job(0);
    std::vector<std::exception_ptr> errors(n);
    std::vector<std::thread> threads;
    threads.reserve(n);
    try {
        for (std::size_t k = 0; k < n; ++k)
            threads.emplace_back([&, k] {
                try {
                    job(k);
                } catch (...) {
                    errors[k] = std::current_exception();
                }
            });
    } catch (...) {  // no thread could be started: join the ones that were, then report it
        for (auto& t : threads) t.join();
        throw;
    }
    for (auto& t : threads) t.join();
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace loom::detail
