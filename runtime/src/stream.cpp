// The per-thread current stream, scoped stream selection with a join on exit, and Stream / Event wrappers.
#include "loom/runtime/stream.hpp"

#include <cuda_runtime_api.h>

#include "cuda_internal.hpp"
#include "gather_errors.hpp"
#include "loom/runtime/capture.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"

namespace loom {

static_assert(kStreamNonBlocking == cudaStreamNonBlocking);

namespace {

thread_local cudaStream_t t_current = cudaStreamPerThread;

/// One ordering-only event per thread for the join at the end of a StreamGuard scope. Recording and then
/// waiting at once is safe to repeat: cudaStreamWaitEvent captures the event's state at the call.
struct JoinEvent {
    cudaEvent_t event = nullptr;
    ~JoinEvent() {
        if (event && !detail::exiting_flag())
            (void)cudaEventDestroy(event);  // at exit: goes with the process
    }
};

cudaEvent_t join_event() {
    thread_local JoinEvent j;
    if (!j.event) LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&j.event, cudaEventDisableTiming));
    return j.event;
}

}  // namespace

cudaStream_t detail::legacy_stream() noexcept {
    return cudaStreamLegacy;
}

cudaStream_t current_stream() noexcept {
    return t_current;
}

StreamGuard::StreamGuard(cudaStream_t stream) : previous_(t_current), stream_(stream) {
    t_current = stream;
}

StreamGuard::~StreamGuard() {
    t_current = previous_;
    if (stream_ == previous_ || detail::poisoned_flag()) return;
    // Join: the previous stream waits for the scope's work. A failure here cannot be thrown from a
    // destructor; it is a CUDA error that the next checked call on either stream reports.
    try {
        // Not while either stream is being captured: the wait would join the other stream to the capture
        // (or make a captured stream wait for uncaptured work), which ends the capture with an error.
        if (is_capturing(stream_) || is_capturing(previous_)) return;
        const cudaEvent_t e = join_event();
        if (cudaEventRecord(e, stream_) == cudaSuccess) (void)cudaStreamWaitEvent(previous_, e, 0);
    } catch (...) {
    }
}

void synchronize() {
    synchronize(current_stream());
}

void synchronize(cudaStream_t stream) {
    require_cuda("synchronize()");
    if (is_capturing(stream))
        throw Error(
            "synchronize(): the stream is being captured into a CUDA graph (cudaStreamBeginCapture), and "
            "synchronizing it would invalidate the capture; end the capture (cudaStreamEndCapture) first, "
            "then "
            "launch the graph and synchronize");
    LOOM_CUDA_CHECK(cudaStreamSynchronize(stream));
    detail::check_gather_errors(stream);
}

Stream::Stream(unsigned flags) {
    require_cuda("Stream");
    LOOM_CUDA_CHECK(cudaGetDevice(&device_));
    LOOM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, flags));
}

Stream::~Stream() {
    if (stream_ && !detail::poisoned_flag() && !detail::exiting_flag()) (void)cudaStreamDestroy(stream_);
}

Stream& Stream::operator=(Stream&& other) noexcept {
    if (this != &other) {
        if (stream_ && !detail::poisoned_flag() && !detail::exiting_flag()) (void)cudaStreamDestroy(stream_);
        stream_ = std::exchange(other.stream_, nullptr);
        device_ = other.device_;
    }
    return *this;
}

void Stream::synchronize() const {
    loom::synchronize(stream_);
}

Event::Event(bool timing) {
    require_cuda("Event");
    LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::~Event() {
    if (event_ && !detail::poisoned_flag() && !detail::exiting_flag()) (void)cudaEventDestroy(event_);
}

Event& Event::operator=(Event&& other) noexcept {
    if (this != &other) {
        if (event_ && !detail::poisoned_flag() && !detail::exiting_flag()) (void)cudaEventDestroy(event_);
        event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
}

void Event::record(cudaStream_t stream) {
    LOOM_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void Event::wait(cudaStream_t stream) const {
    LOOM_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}

void Event::synchronize() const {
    LOOM_CUDA_CHECK(cudaEventSynchronize(event_));
    if (!is_capturing(current_stream())) detail::check_gather_errors(current_stream());
}

bool Event::done() const {
    if (detail::poisoned_flag()) detail::throw_poisoned();
    const cudaError_t e = cudaEventQuery(event_);
    if (e == cudaSuccess) return true;
    if (e == cudaErrorNotReady) {
        (void)cudaGetLastError();  // not an error: clear it so that no later check reports it
        return false;
    }
    detail::throw_cuda_error(e, "cudaEventQuery(event)", __FILE__, __LINE__);
}

float Event::elapsed_ms(const Event& start, const Event& stop) {
    float ms = 0.f;
    LOOM_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, stop.event_));
    return ms;
}

}  // namespace loom
