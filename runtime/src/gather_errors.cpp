// The device's error word of checked gathers and its check at synchronization (gather_errors.hpp).
#include "gather_errors.hpp"

#include <array>
#include <atomic>
#include <mutex>

#include "loom/ir/build.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"

namespace loom::detail {

namespace {

constexpr int kMaxDevices = 64;

struct Words {
    std::mutex mu;
    std::array<std::atomic<void*>, kMaxDevices> word{};
};

Words& words() {
    static Words* w = new Words;  // never destroyed: the words live as long as the CUDA context
    return *w;
}

int current_device() {
    int d = 0;
    LOOM_CUDA_CHECK(cudaGetDevice(&d));
    if (d < 0 || d >= kMaxDevices) throw InternalError("gather error word: a device index above 63");
    return d;
}

}  // namespace

void* gather_error_word() {
    Words& w = words();
    const int d = current_device();
    if (void* p = w.word[static_cast<std::size_t>(d)].load(std::memory_order_acquire)) return p;
    std::lock_guard lock(w.mu);
    if (void* p = w.word[static_cast<std::size_t>(d)].load(std::memory_order_acquire)) return p;
    void* p = nullptr;
    LOOM_CUDA_CHECK(cudaMalloc(&p, sizeof(ir::GatherErrorWord)));
    LOOM_CUDA_CHECK(cudaMemset(p, 0, sizeof(ir::GatherErrorWord)));
    LOOM_CUDA_CHECK(cudaDeviceSynchronize());  // zero before any kernel on any stream can record in it
    w.word[static_cast<std::size_t>(d)].store(p, std::memory_order_release);
    return p;
}

void check_gather_errors(cudaStream_t stream) {
    const int d = current_device();
    void* p = words().word[static_cast<std::size_t>(d)].load(std::memory_order_acquire);
    if (!p) return;
    ir::GatherErrorWord host;
    LOOM_CUDA_CHECK(cudaMemcpyAsync(&host, p, sizeof host, cudaMemcpyDeviceToHost, stream));
    LOOM_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (host.flag == 0) return;
    // Not sticky: the word is zeroed (in stream order, after every kernel synchronized so far) and the
    // runtime stays usable.
    LOOM_CUDA_CHECK(cudaMemsetAsync(p, 0, sizeof host, stream));
    LOOM_CUDA_CHECK(cudaStreamSynchronize(stream));
    throw Error(ir::gather_error_message(host.id, host.value));
}

}  // namespace loom::detail
