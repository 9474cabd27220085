// The sticky-error state and the record of the last launch (errors_cuda.cpp converts CUDA status codes to
// exceptions; a host-only build has none to convert).
#include "loom/runtime/errors.hpp"

#include <fmt/format.h>

#include <atomic>
#include <mutex>

#include "errors_internal.hpp"
#include "loom/ir/env.hpp"

namespace loom {

namespace {

struct LaunchRecord {
    std::mutex mutex;
    std::string kernel, where;            // the last noted launch
    std::string prev_kernel, prev_where;  // the one before: an asynchronous fault may come from it
    int count = 0;
    std::string poison_message;  // set once, on the first sticky error
    cudaError_t poison_code = cudaSuccess;
    std::string poison_call;
};

LaunchRecord& record() {
    static LaunchRecord r;
    return r;
}

std::atomic<bool> g_poisoned{false};
std::atomic<bool> g_exiting{false};

}  // namespace

void note_launch(std::string_view kernel, std::string_view where) {
    auto& r = record();
    std::lock_guard lock(r.mutex);
    r.prev_kernel.swap(r.kernel);
    r.prev_where.swap(r.where);
    r.kernel.assign(kernel);  // assign() reuses the buffers: no allocation once warm
    r.where.assign(where);
    if (r.count < 2) ++r.count;
}

namespace {

std::string launch_text(const std::string& kernel, const std::string& where) {
    return where.empty() ? kernel : fmt::format("{} ({})", kernel, where);
}

}  // namespace

std::string last_launch() {
    auto& r = record();
    std::lock_guard lock(r.mutex);
    if (r.count == 0) return "none";
    return launch_text(r.kernel, r.where);
}

bool runtime_poisoned() {
    return g_poisoned.load(std::memory_order_acquire);
}

bool sync_after_launch() {
    static const bool on = env_switch("LOOM_SYNC", false);
    return on;
}

namespace detail {

bool poisoned_flag() noexcept {
    return g_poisoned.load(std::memory_order_relaxed);
}

bool exiting_flag() noexcept {
    return g_exiting.load(std::memory_order_relaxed);
}

void note_cuda_initialized() noexcept {
    static std::once_flag once;
    std::call_once(once, [] { std::atexit([] { g_exiting.store(true, std::memory_order_relaxed); }); });
}

std::string last_launches() {
    std::string launch = last_launch();
    auto& r = record();
    std::lock_guard lock(r.mutex);
    if (r.count > 1)
        launch += fmt::format(" (the launch before it: {})", launch_text(r.prev_kernel, r.prev_where));
    return launch;
}

void poison(const std::string& message, cudaError_t code, const char* call) {
    {
        auto& r = record();
        std::lock_guard lock(r.mutex);
        if (r.poison_message.empty()) {
            r.poison_message = message;
            r.poison_code = code;
            r.poison_call = call;
        }
    }
    g_poisoned.store(true, std::memory_order_release);
}

void throw_poisoned() {
    auto& r = record();
    std::lock_guard lock(r.mutex);
    throw CudaError(r.poison_code, r.poison_call,
                    fmt::format("CUDA runtime unusable after an earlier sticky error: {}", r.poison_message));
}

}  // namespace detail

}  // namespace loom
