// CUDA streams and events: the calling thread's current stream (where Loom allocates, copies and launches),
// scoped stream selection (with_stream, StreamGuard), and RAII wrappers for streams and events.
//
// Default stream. Without a scope, Loom works on `cudaStreamPerThread`, the per-thread default stream: work
// of different host threads does not serialize, and it still synchronizes with the legacy default stream
// (stream 0) of code that uses it.
//
// Memory across streams. Allocation and release are stream-ordered on the stream current at the time of
// the call (cudaMallocAsync / cudaFreeAsync). Memory freed on stream A is reused by later allocations on A
// in stream order; another stream reuses it only after the free has completed, through the pool's default
// reuse policies (follow event dependencies, opportunistic, internal dependencies; CUDA Runtime API,
// "Stream Ordered Memory Allocator"). To keep the common pattern safe, a with_stream / StreamGuard scope
// joins when it ends: the stream that was current before waits (cudaStreamWaitEvent) for the work issued in
// the scope, so tensors made or used in the scope may be released after it without a race. What Loom does
// not track: a tensor used on stream B and released while stream A is current, with B's use not ordered
// before that point (the same rule as cudaFreeAsync itself, and PyTorch's record_stream). Order such uses
// with an Event (record on B, wait on A) or synchronize B before the last handle goes.
#pragma once

#include <utility>

#include "loom/runtime/cuda_types.hpp"

namespace loom {

/// The calling thread's current stream: the innermost with_stream / StreamGuard stream, else
/// cudaStreamPerThread. Never throws; needs no GPU.
cudaStream_t current_stream() noexcept;

/// Makes `stream` the calling thread's current stream for a scope. On exit the previous stream waits for
/// the work issued on `stream` (an event, no host synchronization), then becomes current again.
/// Throws loom::CudaError / loom::NoDeviceError when the join event cannot be created.
class StreamGuard {
  public:
    explicit StreamGuard(cudaStream_t stream);
    ~StreamGuard();
    StreamGuard(const StreamGuard&) = delete;
    StreamGuard& operator=(const StreamGuard&) = delete;

  private:
    cudaStream_t previous_;
    cudaStream_t stream_;
};

/// Runs `fn()` with `stream` as the current stream (see StreamGuard) and returns its result.
template <class F>
decltype(auto) with_stream(cudaStream_t stream, F&& fn) {
    StreamGuard guard(stream);
    return std::forward<F>(fn)();
}

/// Blocks the host until the current stream's work is done. Throws loom::CudaError.
void synchronize();
/// Blocks the host until `stream`'s work is done. Throws loom::CudaError.
void synchronize(cudaStream_t stream);

/// An owned CUDA stream on the device current at construction. Non-blocking by default
/// (cudaStreamNonBlocking: no implicit synchronization with the legacy default stream), so copies and
/// kernels on separate Streams overlap. Destruction does not wait for the stream's work (cudaStreamDestroy).
class Stream {
  public:
    /// `flags`: cudaStreamCreateWithFlags's (kStreamNonBlocking is cudaStreamNonBlocking). Throws
    /// loom::NoDeviceError without a GPU, loom::CudaError.
    explicit Stream(unsigned flags = kStreamNonBlocking);
    ~Stream();
    Stream(Stream&& other) noexcept
        : stream_(std::exchange(other.stream_, nullptr)), device_(other.device_) {}
    Stream& operator=(Stream&& other) noexcept;
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    cudaStream_t get() const { return stream_; }
    operator cudaStream_t() const { return stream_; }
    int device() const { return device_; }
    /// Blocks the host until the stream's work is done.
    void synchronize() const;

  private:
    cudaStream_t stream_ = nullptr;
    int device_ = 0;
};

/// An owned CUDA event. With `timing` (the default) it records time stamps for elapsed_ms(); without, it
/// is a lighter event for ordering only (cudaEventDisableTiming).
class Event {
  public:
    /// Throws loom::NoDeviceError without a GPU, loom::CudaError.
    explicit Event(bool timing = true);
    ~Event();
    Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
    Event& operator=(Event&& other) noexcept;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    cudaEvent_t get() const { return event_; }
    /// Records the event on `stream` (the current stream by default).
    void record(cudaStream_t stream = current_stream());
    /// Makes `stream` wait for the work before the last record() (no host synchronization).
    void wait(cudaStream_t stream = current_stream()) const;
    /// Blocks the host until the recorded work is done.
    void synchronize() const;
    /// True when the recorded work is done (cudaEventQuery), without blocking.
    bool done() const;
    /// Milliseconds between two recorded, completed timing events (cudaEventElapsedTime; resolution about
    /// 0.5 µs). Throws loom::CudaError when either was not recorded or not complete.
    static float elapsed_ms(const Event& start, const Event& stop);

  private:
    cudaEvent_t event_ = nullptr;
};

}  // namespace loom
