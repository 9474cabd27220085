// Internal: the checks that the fault sites make (loom/runtime/testing_faults.hpp). Unarmed, one relaxed
// atomic load.
#pragma once

#include <atomic>

#include "loom/runtime/testing_faults.hpp"

namespace loom::detail {

/// True while any site is armed.
extern std::atomic<bool> g_faults_armed;
bool should_fail_armed(testing::FaultSite site, int* error) noexcept;

/// Counts an event of `site` and returns whether it is the one to fail (then `*error`, when given, is the
/// armed errno or 0).
inline bool should_fail(testing::FaultSite site, int* error = nullptr) noexcept {
    if (!g_faults_armed.load(std::memory_order_relaxed)) [[likely]]
        return false;
    return should_fail_armed(site, error);
}

/// Counts host blocks handed out and taken back (testing::live_host_allocations()).
void note_host_allocation(int delta) noexcept;

}  // namespace loom::detail
