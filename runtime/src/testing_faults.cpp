// Fault injection for tests (loom/runtime/testing_faults.hpp): per-site event counters and targets.
#include <array>
#include <atomic>
#include <cstdint>

#include "faults_internal.hpp"

namespace loom {

namespace detail {

std::atomic<bool> g_faults_armed{false};

namespace {

struct Site {
    std::atomic<bool> armed{false};
    std::atomic<std::uint64_t> events{0};
    std::atomic<std::uint64_t> target{testing::kNever};
    std::atomic<int> error{0};
    std::atomic<std::uint64_t> injected{0};
};

std::array<Site, testing::kFaultSites>& sites() {
    static std::array<Site, testing::kFaultSites> s;
    return s;
}

std::atomic<std::int64_t> g_live_host{0};

}  // namespace

bool should_fail_armed(testing::FaultSite site, int* error) noexcept {
    Site& s = sites()[static_cast<unsigned>(site)];
    if (!s.armed.load(std::memory_order_acquire)) return false;
    const std::uint64_t n = s.events.fetch_add(1, std::memory_order_relaxed);
    if (n != s.target.load(std::memory_order_relaxed)) return false;
    s.injected.fetch_add(1, std::memory_order_relaxed);
    if (error) *error = s.error.load(std::memory_order_relaxed);
    return true;
}

void note_host_allocation(int delta) noexcept {
    g_live_host.fetch_add(delta, std::memory_order_relaxed);
}

}  // namespace detail

namespace testing {

void inject_fault(FaultSite site, std::uint64_t nth, int error) {
    detail::Site& s = detail::sites()[static_cast<unsigned>(site)];
    s.armed.store(false, std::memory_order_relaxed);
    s.events.store(0, std::memory_order_relaxed);
    s.target.store(nth, std::memory_order_relaxed);
    s.error.store(error, std::memory_order_relaxed);
    s.armed.store(true, std::memory_order_release);
    detail::g_faults_armed.store(true, std::memory_order_release);
}

void clear_faults() {
    detail::g_faults_armed.store(false, std::memory_order_release);
    for (detail::Site& s : detail::sites()) {
        s.armed.store(false, std::memory_order_relaxed);
        s.events.store(0, std::memory_order_relaxed);
        s.target.store(kNever, std::memory_order_relaxed);
        s.error.store(0, std::memory_order_relaxed);
        s.injected.store(0, std::memory_order_relaxed);
    }
}

std::uint64_t fault_events(FaultSite site) {
    return detail::sites()[static_cast<unsigned>(site)].events.load(std::memory_order_relaxed);
}

std::uint64_t faults_injected(FaultSite site) {
    return detail::sites()[static_cast<unsigned>(site)].injected.load(std::memory_order_relaxed);
}

std::int64_t live_host_allocations() {
    return detail::g_live_host.load(std::memory_order_relaxed);
}

}  // namespace testing

}  // namespace loom
