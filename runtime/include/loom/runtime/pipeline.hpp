// Pipelines: batches of pinned host data streamed through device work, with the copies in both directions
// overlapped with the kernels and with each other.
//
//   Tensor in = pinned_empty({16, m}, float32), out = pinned_empty({16, m}, float32);   // [batches, ...]
//   auto f = loom::function("e1", [](Array x) { return relu(x * 1.5 + 0.25); });
//   Pipeline pipe({in}, {out});                      // device buffers for `depth` batches, three streams
//   pipe.run([&](std::int64_t, std::span<const Tensor> x, std::span<const Tensor> y) { f(x[0], y[0]); });
//   pipe.synchronize();                              // or keep working: run() never blocks the host
//
// Batch i uses buffer slot s = i % depth on each side. Three streams, ordered by events only:
//
//   upload:    H2D 0 | H2D 1 | H2D 2 | ...               (waits for the step of batch i - depth: slot s read)
//   compute:         | step 0 | step 1 | ...             (waits for its upload, and for the download of batch
//                                                          i - depth: slot s of the outputs free)
//   download:                 | D2H 0  | D2H 1 | ...     (waits for its step)
//
// so the host-to-device and device-to-host copy engines each run back to back, and a step only delays the
// download of its own batch: the wall time is that of the copies, plus one step and one batch's copy at
// either end (fill and drain). Nothing inside run() synchronizes the host. The step runs with the compute
// stream as the current stream (loom::current_stream()), so a traced function, assign() or a kernel of the
// caller's launched on current_stream() lands there.
#pragma once

#include <cstdint>
#include <functional>
#include <source_location>
#include <span>
#include <vector>

#include "loom/runtime/stream.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom {

class Pipeline {
  public:
    /// The work of one batch: its index, the device buffers holding its inputs (one per host input, the
    /// batch's shape: the host tensor's shape without its first extent), and the device buffers to fill
    /// with its outputs (likewise). The buffers of a slot are reused every `depth` batches.
    using Step = std::function<void(std::int64_t batch, std::span<const Tensor> inputs,
                                    std::span<const Tensor> outputs)>;

    /// `host_inputs` and `host_outputs`: contiguous tensors in pinned host memory (pinned_empty()), each of
    /// shape [batches, ...] with the same number of batches (at least one input or output). `depth` >= 2
    /// buffers per side on the current CUDA device (2: double buffering). Allocates `depth` batches of
    /// every input and output on the device and creates three streams and the events between them.
    /// Throws loom::Error naming the tensor, its shape, dtype and the caller's file:line for a tensor that
    /// is not pinned host memory, not contiguous, or has another number of batches, and for depth < 2;
    /// loom::NoDeviceError without a GPU; loom::OutOfMemory, loom::CudaError.
    Pipeline(std::vector<Tensor> host_inputs, std::vector<Tensor> host_outputs, int depth = 2,
             std::source_location loc = std::source_location::current());
    /// Makes the current stream wait for the pipeline's work (no host synchronization) before the device
    /// buffers go, so nothing is freed under a copy or a step.
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    /// Enqueues every batch: its uploads, `step`, its downloads. Returns once all are enqueued, before they
    /// run. The work waits for what the current stream had enqueued before the call, and the current
    /// stream waits for the whole run afterwards (events; so synchronize() of the current stream, or of
    /// this pipeline, makes the outputs readable on the host). The host tensors must stay unchanged (inputs)
    /// and unread (outputs) until then. An exception from `step` stops the enqueuing; the batches before it
    /// still complete, and the exception propagates after the same join.
    void run(const Step& step);
    /// Blocks the host until the last run's downloads are done. Throws loom::CudaError.
    void synchronize() const;

    std::int64_t batches() const { return batches_; }
    int depth() const { return depth_; }
    /// The streams, for events or work of the caller's own (uploads, steps, downloads).
    cudaStream_t upload_stream() const { return upload_; }
    cudaStream_t compute_stream() const { return compute_; }
    cudaStream_t download_stream() const { return download_; }

  private:
    std::vector<Tensor> host_in_, host_out_;
    std::vector<std::vector<Tensor>> dev_in_, dev_out_;  // [slot][tensor]
    std::int64_t batches_ = 0;
    int depth_ = 2;
    Stream upload_, compute_, download_;
    std::vector<Event> uploaded_, computed_, downloaded_;  // one per slot
    Event start_{false}, done_{false};
    bool ran_ = false;
};

}  // namespace loom
