// Pipelines: uploads, steps and downloads of batches on three streams, ordered by events.
#include "loom/runtime/pipeline.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <exception>

#include "loom/ir/error.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/pinned.hpp"

namespace loom {

namespace {

bool is_pinned_host(const Tensor& t) {
    if (t.device().is_cuda() || t.nbytes() == 0) return false;
    cudaPointerAttributes attr{};
    LOOM_CUDA_CHECK(cudaPointerGetAttributes(&attr, t.data()));
    return attr.type == cudaMemoryTypeHost;
}

// Batch `i` of a contiguous [batches, ...] tensor: a view of its memory with the rest of the shape.
Tensor batch_of(const Tensor& all, std::int64_t i) {
    const Shape rest(all.shape().begin() + 1, all.shape().end());
    return all.as_strided(rest, contiguous_strides(rest), all.offset() + i * numel(rest));
}

}  // namespace

Pipeline::Pipeline(std::vector<Tensor> host_inputs, std::vector<Tensor> host_outputs, int depth,
                   std::source_location loc)
    : host_in_(std::move(host_inputs)), host_out_(std::move(host_outputs)), depth_(depth) {
    const std::string where = short_location(loc);
    require_cuda("Pipeline");
    if (depth < 2)
        throw Error(fmt::format(
            "Pipeline: depth {} is less than 2; a pipeline needs two buffers per side ({})", depth, where));
    if (host_in_.empty() && host_out_.empty())
        throw Error(fmt::format("Pipeline: no host inputs and no host outputs ({})", where));
    batches_ = -1;
    auto check = [&](const Tensor& t, const char* side, std::size_t k) {
        const std::string what =
            t.defined() ? fmt::format("{} {} {}", side, k,
                                      fmt::format("{} {}", to_string(t.shape()), name(t.dtype())))
                        : fmt::format("{} {}", side, k);
        if (!t.defined()) throw Error(fmt::format("Pipeline: {} is undefined ({})", what, where));
        if (t.shape().empty())
            throw Error(
                fmt::format("Pipeline: {} has rank 0; host tensors are [batches, ...] ({})", what, where));
        if (!t.is_contiguous()) throw Error(fmt::format("Pipeline: {} is not contiguous ({})", what, where));
        if (!is_pinned_host(t))
            throw Error(
                fmt::format("Pipeline: {} is not in pinned host memory (on {}); copies from pageable memory "
                            "do not overlap: allocate it with pinned_empty() ({})",
                            what, t.device().to_string(), where));
        if (batches_ >= 0 && t.shape()[0] != batches_)
            throw Error(fmt::format("Pipeline: {} has {} batches, the first tensor {} ({})", what,
                                    t.shape()[0], batches_, where));
        batches_ = t.shape()[0];
    };
    for (std::size_t k = 0; k < host_in_.size(); ++k) check(host_in_[k], "input", k);
    for (std::size_t k = 0; k < host_out_.size(); ++k) check(host_out_[k], "output", k);
    const Device dev = Device::cuda(current_device());
    dev_in_.resize(static_cast<std::size_t>(depth));
    dev_out_.resize(static_cast<std::size_t>(depth));
    for (int s = 0; s < depth; ++s) {
        for (const Tensor& t : host_in_)
            dev_in_[static_cast<std::size_t>(s)].push_back(
                Tensor::empty(batch_of(t, 0).shape(), t.dtype(), dev));
        for (const Tensor& t : host_out_)
            dev_out_[static_cast<std::size_t>(s)].push_back(
                Tensor::empty(batch_of(t, 0).shape(), t.dtype(), dev));
        uploaded_.emplace_back(false);
        computed_.emplace_back(false);
        downloaded_.emplace_back(false);
    }
}

Pipeline::~Pipeline() {
    // The buffers are freed stream-ordered on the current stream: order that after the pipeline's work.
    if (ran_) (void)cudaStreamWaitEvent(current_stream(), done_.get(), 0);
}

void Pipeline::run(const Step& step) {
    const cudaStream_t caller = current_stream();
    start_.record(caller);  // what the caller enqueued before (for example the buffers' allocation)
    for (cudaStream_t s : {upload_.get(), compute_.get(), download_.get()}) start_.wait(s);
    ran_ = true;
    std::exception_ptr failed;
    {
        StreamGuard on(compute_);  // the step's launches go to the compute stream
        for (std::int64_t i = 0; i < batches_ && !failed; ++i) {
            const auto s = static_cast<std::size_t>(i % depth_);
            if (i >= depth_) computed_[s].wait(upload_);  // the step of batch i - depth has read slot s
            for (std::size_t k = 0; k < host_in_.size(); ++k)
                copy_async(dev_in_[s][k], batch_of(host_in_[k], i), upload_);
            uploaded_[s].record(upload_);
            uploaded_[s].wait(compute_);
            if (i >= depth_) downloaded_[s].wait(compute_);  // batch i - depth's outputs are on the host
            try {
                step(i, dev_in_[s], dev_out_[s]);
            } catch (...) {
                failed = std::current_exception();
            }
            computed_[s].record(compute_);
            computed_[s].wait(download_);
            if (!failed)
                for (std::size_t k = 0; k < host_out_.size(); ++k)
                    copy_async(batch_of(host_out_[k], i), dev_out_[s][k], download_);
            downloaded_[s].record(download_);
        }
    }
    // The download stream's last work follows every step and (through them) every upload.
    done_.record(download_);
    done_.wait(caller);
    if (failed) std::rethrow_exception(failed);
}

void Pipeline::synchronize() const {
    if (ran_) done_.synchronize();
}

}  // namespace loom
