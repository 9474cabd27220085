// The GPU side of the runtime in a host-only build (LOOM_CUDA=OFF): the functions that the CUDA build
// defines over the CUDA runtime and NVRTC (device.cpp, stream.cpp, capture.cpp, memory_cuda.cpp, pinned.cpp,
// pipeline.cpp, module.cpp, nvrtc.cpp, gpu_launch.cpp, program_graph.cpp, errors_cuda.cpp), with no CUDA
// header or library. There is no device: device_count() is 0, every GPU entry point throws
// loom::NoDeviceError naming its API (as the CUDA build does on a machine without a GPU), and NVRTC's
// entry points throw it too, since this build has no NVRTC. What works without a GPU in the CUDA build
// works here alike (the current stream's bookkeeping, capture queries that answer "no"), except NVRTC.
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "cuda_internal.hpp"
#include "gpu_internal.hpp"
#include "loom/runtime/capture.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/module.hpp"
#include "loom/runtime/nvrtc.hpp"
#include "loom/runtime/pinned.hpp"
#include "loom/runtime/pipeline.hpp"
#include "loom/runtime/stream.hpp"
#include "memory_internal.hpp"
#include "program_graph.hpp"

static_assert(LOOM_HAS_CUDA == 0, "gpu_stubs.cpp is the host-only build's (LOOM_CUDA=OFF)");

namespace loom {

namespace {

constexpr std::string_view kWhy =
    "this Loom was built without CUDA (LOOM_CUDA=OFF: no CUDA runtime, no NVRTC)";

// The NVRTC entry points: they need no GPU in the CUDA build, and NVRTC itself here.
[[noreturn]] void no_nvrtc(std::string_view api) {
    throw NoDeviceError(
        fmt::format("no CUDA device found: {} needs NVRTC, but {}. Host tensors, tracing and code generation "
                    "(cuda_source(), explain()) work without it.",
                    api, kWhy));
}

[[noreturn]] void no_gpu(std::string_view api) {
    require_cuda(api);  // throws
    throw InternalError("require_cuda() returned in a host-only build");
}

}  // namespace

// device.hpp

int device_count() noexcept {
    return 0;
}

bool cuda_available() noexcept {
    return false;
}

void require_cuda(std::string_view api) {
    throw NoDeviceError(fmt::format(
        "no CUDA device found: {} needs a GPU, but {}. Host tensors, tracing and code generation work "
        "without one.",
        api, kWhy));
}

int current_device() {
    no_gpu("current_device()");
}

void set_device(int) {
    no_gpu("set_device()");
}

const codegen::DeviceInfo& device_info(int) {
    no_gpu("device_info()");
}

PoolStats pool_stats(int) {
    no_gpu("pool_stats()");
}

void trim_pool(int) {
    no_gpu("trim_pool()");
}

DeviceGuard::DeviceGuard(int) {
    no_gpu("DeviceGuard");
}

DeviceGuard::~DeviceGuard() = default;

int detail::driver_version() noexcept {
    return 0;
}

// errors.hpp: no CUDA call is made, so no status code is ever converted.

bool is_sticky(cudaError_t) {
    return false;
}

void detail::throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
    throw CudaError(code, call, fmt::format("CUDA error: {} failed ({}:{}): {}", call, file, line, kWhy));
}

// memory_internal.hpp: device memory.

void* detail::allocate_device(int device, std::size_t bytes) {
    no_gpu(fmt::format("allocating {} bytes on cuda:{}", bytes, device));
}

void detail::release_device(int, void*) noexcept {}  // nothing was allocated

void detail::copy_device(void*, Device dst_device, const void*, Device src_device, std::size_t bytes) {
    no_gpu(
        fmt::format("copying {} bytes from {} to {}", bytes, src_device.to_string(), dst_device.to_string()));
}

Device detail::device_of_pointer(const void*) {
    return Device::cpu();  // every pointer is the host's
}

// stream.hpp: the current stream is bookkeeping (null unless a scope sets one); streams and events need a
// GPU.

namespace {
thread_local cudaStream_t t_current = nullptr;
}  // namespace

cudaStream_t detail::legacy_stream() noexcept {
    return nullptr;
}

cudaStream_t current_stream() noexcept {
    return t_current;
}

StreamGuard::StreamGuard(cudaStream_t stream) : previous_(t_current), stream_(stream) {
    t_current = stream;
}

StreamGuard::~StreamGuard() {
    t_current = previous_;  // no GPU work was issued in the scope: nothing to join
}

void synchronize() {
    no_gpu("synchronize()");
}

void synchronize(cudaStream_t) {
    no_gpu("synchronize()");
}

Stream::Stream(unsigned) {
    no_gpu("Stream");
}

Stream::~Stream() = default;

Stream& Stream::operator=(Stream&& other) noexcept {
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = other.device_;
    return *this;
}

void Stream::synchronize() const {
    no_gpu("Stream::synchronize()");
}

Event::Event(bool) {
    no_gpu("Event");
}

Event::~Event() = default;

Event& Event::operator=(Event&& other) noexcept {
    event_ = std::exchange(other.event_, nullptr);
    return *this;
}

void Event::record(cudaStream_t) {
    no_gpu("Event::record()");
}

void Event::wait(cudaStream_t) const {
    no_gpu("Event::wait()");
}

void Event::synchronize() const {
    no_gpu("Event::synchronize()");
}

bool Event::done() const {
    no_gpu("Event::done()");
}

float Event::elapsed_ms(const Event&, const Event&) {
    no_gpu("Event::elapsed_ms()");
}

// capture.hpp: no stream is ever captured.

bool is_capturing(cudaStream_t) {
    return false;
}

void require_not_capturing(std::string_view, std::string_view, std::string_view) {}

void detail::require_no_build_in_capture(std::string_view, std::string_view) {}

// pinned.hpp

PinnedBuffer::PinnedBuffer(std::size_t) {
    no_gpu("PinnedBuffer");
}

PinnedBuffer::~PinnedBuffer() = default;

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    return *this;
}

Tensor pinned_empty(const Shape&, DType) {
    no_gpu("pinned_empty()");
}

void copy_async(PinnedBuffer&, const Tensor&, cudaStream_t) {
    no_gpu("copy_async()");
}

void copy_async(void*, const Tensor&, cudaStream_t) {
    no_gpu("copy_async()");
}

void copy_async(const Tensor&, const PinnedBuffer&, cudaStream_t) {
    no_gpu("copy_async()");
}

void copy_async(const Tensor&, const void*, cudaStream_t) {
    no_gpu("copy_async()");
}

void copy_async(const Tensor&, const Tensor&, cudaStream_t) {
    no_gpu("copy_async()");
}

// pipeline.hpp (its streams' construction throws first)

Pipeline::Pipeline(std::vector<Tensor>, std::vector<Tensor>, int, std::source_location) {
    no_gpu("Pipeline");
}

Pipeline::~Pipeline() = default;

void Pipeline::run(const Step&) {
    no_gpu("Pipeline::run()");
}

void Pipeline::synchronize() const {
    no_gpu("Pipeline::synchronize()");
}

// module.hpp: no image can be loaded, so no Kernel has a state.

const std::string& Kernel::name() const {
    no_gpu("Kernel::name()");
}

cudaKernel_t Kernel::handle() const {
    no_gpu("Kernel::handle()");
}

long Kernel::param_bytes() const {
    no_gpu("Kernel::param_bytes()");
}

void Kernel::launch(const LaunchConfig&, const void*, std::size_t, std::string_view) const {
    no_gpu("Kernel::launch()");
}

void Kernel::set_max_dynamic_shared(std::size_t, int) const {
    no_gpu("Kernel::set_max_dynamic_shared()");
}

Module Module::load(std::string_view, std::string name) {
    no_gpu(fmt::format("Module::load() of {}", name));
}

Kernel Module::kernel(std::string_view, long) const {
    no_gpu("Module::kernel()");
}

const std::string& Module::name() const {
    no_gpu("Module::name()");
}

int Module::device() const {
    no_gpu("Module::device()");
}

// nvrtc.hpp

namespace nvrtc {

Result compile(std::string_view name, std::string_view, const Options&) {
    no_nvrtc(fmt::format("nvrtc::compile() of {}", name));
}

std::string ptx(std::string_view name, std::string_view, const Options&) {
    no_nvrtc(fmt::format("nvrtc::ptx() of {}", name));
}

std::vector<std::string> option_list(const Options&) {
    no_nvrtc("nvrtc::option_list()");
}

std::string resolve_arch(int, int) {
    no_nvrtc("nvrtc::resolve_arch()");
}

const std::vector<int>& supported_archs() {
    no_nvrtc("nvrtc::supported_archs()");
}

int version() {
    return 0;  // no NVRTC
}

std::uint64_t compile_count() {
    return 0;
}

}  // namespace nvrtc

// gpu_internal.hpp, program_graph.hpp: the launch path, reached only after device_info() threw.

namespace gpu {

void run_plan(const codegen::FusionPlan&, const Kernels&, std::span<const Tensor::Impl* const>,
              std::span<const Tensor* const>, Device, std::string_view, RunMemory*) {
    no_gpu("eval()");
}

void run_plan(const codegen::FusionPlan&, const Kernels&, std::span<const Tensor::Impl* const>,
              std::span<const Tensor* const>, Device, std::string_view) {
    no_gpu("eval()");
}

bool ProgramGraphs::wanted(const codegen::FusionPlan&) {
    return false;
}

bool ProgramGraphs::run(const codegen::FusionPlan&, const Kernels&, std::span<const Tensor::Impl* const>,
                        std::span<const Tensor* const>, Device, std::string_view, std::string_view) {
    return false;
}

loom::GraphStats ProgramGraphs::stats() const {
    return {};
}

}  // namespace gpu

}  // namespace loom
