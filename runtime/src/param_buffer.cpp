// Kernel parameters beyond the kernel parameter limit (32,764 bytes since CUDA 12.1; 4,096 before): a
// stream-ordered pool allocation holds them for one launch.
//
// How the bytes reach the device: as the parameters of a small upload kernel (loom_param_upload), in
// chunks that fit the limit, which writes them into the buffer on the current stream; then the kernel
// launches with the buffer's address, and the buffer is freed stream-ordered behind it. The buffer is
// allocated, and the upload kernel built, before the first kernel of the call is launched
// (reserve_param_buffer), so that their failures launch nothing. Not a
// cudaMemcpyAsync from a host buffer: under CUDA graph capture a copy node records the host *address*, and
// every replay of the graph would read it again, long after Loom's host buffer is gone (and pageable
// sources are not asynchronous anyway); kernel parameters are copied into the graph's node when it is
// captured. So the same path is correct with and without capture, never waits for the host, needs no
// pinned staging, and the caller's packed bytes may be reused as soon as this returns.
#include "param_buffer.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "loom/runtime/capture.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/errors.hpp"

namespace loom::gpu {

namespace {

struct Uploader {
    Module module;
    Kernel kernel;
    std::size_t words = 0;  // data words per chunk
};

// The upload kernel of `device`, built (through the disk cache) on first use.
const Uploader& uploader(int device, std::string_view where) {
    static std::mutex mutex;
    static std::map<int, std::unique_ptr<const Uploader>> uploaders;  // per device; never removed
    std::lock_guard lock(mutex);
    if (auto it = uploaders.find(device); it != uploaders.end()) return *it->second;
    detail::require_no_build_in_capture(kUploadName, where);
    const codegen::DeviceInfo& info = device_info(device);
    auto up = std::make_unique<Uploader>();
    up->words = param_upload_words(info.param_limit_bytes);
    nvrtc::Options opt;
    opt.cc_major = info.cc_major;
    opt.cc_minor = info.cc_minor;
    const CachedCompile cc = compile_cached(kUploadName, param_upload_source(up->words), opt);
    up->module =
        Module::load(std::string_view(cc.result.binary.data(), cc.result.binary.size()), kUploadName);
    up->kernel = up->module.kernel(kUploadName, static_cast<long>(kUploadHeaderBytes + 8 * up->words));
    return *uploaders.emplace(device, std::move(up)).first->second;
}

}  // namespace

Tensor reserve_param_buffer(std::size_t params_bytes, std::string_view where) {
    int device = 0;
    LOOM_CUDA_CHECK(cudaGetDevice(&device));
    (void)uploader(device, where);  // built now, before the call's first launch
    const auto words = static_cast<std::int64_t>((params_bytes + 7) / 8);
    return Tensor::empty({words * 8}, DType::UInt8,
                         Device::cuda(device));  // stream-ordered on the current stream
}

void launch_with_params_in_memory(const Kernel& kernel, const LaunchConfig& cfg,
                                  std::span<const std::byte> params, const Tensor& buffer,
                                  std::string_view where) {
    if (cfg.stream != current_stream())
        throw InternalError("launch_with_params_in_memory: the launch must be on the current stream");
    int device = 0;
    LOOM_CUDA_CHECK(cudaGetDevice(&device));
    const Uploader& up = uploader(device, where);
    const std::size_t words = (params.size() + 7) / 8;
    if (!buffer.defined() || !buffer.device().is_cuda() || buffer.device().index != device ||
        buffer.nbytes() < words * 8)
        throw InternalError(fmt::format(
            "launch_with_params_in_memory: a buffer of {} bytes on {} for {} bytes of "
            "parameters on cuda:{}",
            buffer.defined() ? buffer.nbytes() : 0,
            buffer.defined() ? buffer.device().to_string() : "<undefined>", params.size(), device));

    std::vector<std::byte> chunk(kUploadHeaderBytes + up.words * 8);
    for (std::size_t first = 0; first < words; first += up.words) {
        const std::size_t n = std::min(up.words, words - first);
        auto* dst = static_cast<unsigned long long*>(buffer.data()) + first;
        const auto count = static_cast<unsigned long long>(n);
        std::memcpy(chunk.data(), &dst, sizeof(dst));
        std::memcpy(chunk.data() + 8, &count, sizeof(count));
        const std::size_t begin = first * 8, end = std::min(params.size(), (first + n) * 8);
        std::memcpy(chunk.data() + kUploadHeaderBytes, params.data() + begin, end - begin);
        std::memset(chunk.data() + kUploadHeaderBytes + (end - begin), 0,
                    n * 8 - (end - begin));  // the last word's tail
        LaunchConfig ucfg;
        ucfg.grid = {static_cast<unsigned>((n + kUploadBlock - 1) / kUploadBlock), 1, 1};
        ucfg.block = {kUploadBlock, 1, 1};
        ucfg.stream = cfg.stream;
        ucfg.dependent_launch = true;  // its source waits first, as every Loom kernel does
        up.kernel.launch(ucfg, chunk.data(), chunk.size(), where);
    }
    const void* p = buffer.data();
    kernel.launch(cfg, &p, sizeof(p), where);
}  // the caller frees the buffer (stream-ordered, after the kernel)

}  // namespace loom::gpu
