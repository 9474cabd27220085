// Modules through the CUDA runtime's library API (cudaLibraryLoadData, cudaLibraryGetKernel,
// cudaLibraryUnload) and checked launches of one-struct kernels with cudaLaunchKernelExC, with programmatic
// dependent launch for kernels that wait for the prior grid (LaunchConfig::dependent_launch).
#include "loom/runtime/module.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <map>
#include <mutex>
#include <vector>

#include "loom/ir/env.hpp"
#include "loom/runtime/capture.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "stats_internal.hpp"

namespace loom {

namespace detail {

struct ModuleState {
    cudaLibrary_t library = nullptr;
    std::string image;  // kept alive with the library; NUL-terminated for PTX
    std::string name;
    int device = 0;
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<KernelState>, std::less<>> kernels;
    ~ModuleState() {
        // At exit nothing is unloaded: the modules go with the process, and the runtime may be torn down.
        if (library && !poisoned_flag() && !exiting_flag()) (void)cudaLibraryUnload(library);
    }
};

struct KernelState {
    cudaKernel_t kernel = nullptr;
    std::string name;
    long param_bytes = -1;
    bool dependent_launch =
        false;  // the module's device has programmatic dependent launch (sm_90 and newer), allowed
    std::mutex mutex;
    std::vector<std::size_t> max_dynamic_shared;  // per device: the value set, 0 = default
};

}  // namespace detail

namespace {

std::string dims(const Dim3& d) {
    return fmt::format("({}, {}, {})", d.x, d.y, d.z);
}

// LOOM_DEPENDENT_LAUNCH=0 (or off) launches every kernel in full stream order, as before Hopper (read once).
bool dependent_launch_allowed() {
    static const bool on = env_switch("LOOM_DEPENDENT_LAUNCH", true);
    return on;
}

}  // namespace

const std::string& Kernel::name() const {
    return state_->name;
}
cudaKernel_t Kernel::handle() const {
    return state_->kernel;
}
long Kernel::param_bytes() const {
    return state_->param_bytes;
}

void Kernel::set_max_dynamic_shared(std::size_t bytes, int device) const {
    auto& s = *state_;
    std::lock_guard lock(s.mutex);
    if (s.max_dynamic_shared.size() <= static_cast<std::size_t>(device))
        s.max_dynamic_shared.resize(static_cast<std::size_t>(device) + 1, 0);
    if (s.max_dynamic_shared[static_cast<std::size_t>(device)] >= bytes) return;
    if (detail::poisoned_flag()) detail::throw_poisoned();
    const cudaError_t e = cudaKernelSetAttributeForDevice(
        s.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes), device);
    if (e != cudaSuccess) {
        const std::string call = fmt::format(
            "cudaKernelSetAttributeForDevice({}, cudaFuncAttributeMaxDynamicSharedMemorySize, {}, {})",
            s.name, bytes, device);
        detail::throw_cuda_error(e, call.c_str(), __FILE__, __LINE__);
    }
    s.max_dynamic_shared[static_cast<std::size_t>(device)] = bytes;
}

void Kernel::launch(const LaunchConfig& cfg, const void* args, std::size_t args_bytes,
                    std::string_view where) const {
    if (!state_) throw Error("Kernel::launch(): empty kernel handle");
    const auto& s = *state_;
    if (s.param_bytes >= 0 && static_cast<std::size_t>(s.param_bytes) != args_bytes)
        throw Error(fmt::format("Kernel::launch(): kernel {} takes a {}-byte parameter, given {} bytes{}",
                                s.name, s.param_bytes, args_bytes,
                                where.empty() ? "" : fmt::format(" ({})", where)));
    if (detail::poisoned_flag()) detail::throw_poisoned();
    if (cfg.shared_bytes > kDefaultDynamicSharedBytes) {
        int device = 0;
        LOOM_CUDA_CHECK(cudaGetDevice(&device));
        // Checked here, not by a CUDA call that would fail: beyond the opt-in limit no attribute helps.
        const std::size_t limit = device_info(device).shared_mem_per_block_optin;
        if (cfg.shared_bytes > limit)
            throw Error(fmt::format(
                "Kernel::launch(): kernel {} asks for {} bytes of dynamic shared memory; cuda:{} allows "
                "at most {} per block{}",
                s.name, cfg.shared_bytes, device, limit, where.empty() ? "" : fmt::format(" ({})", where)));
        set_max_dynamic_shared(cfg.shared_bytes, device);
    }
    note_launch(s.name, where);
    void* params[1] = {const_cast<void*>(args)};
    cudaLaunchConfig_t lc{};
    lc.gridDim = dim3(cfg.grid.x, cfg.grid.y, cfg.grid.z);
    lc.blockDim = dim3(cfg.block.x, cfg.block.y, cfg.block.z);
    lc.dynamicSmemBytes = cfg.shared_bytes;
    lc.stream = cfg.stream;
    cudaLaunchAttribute attribute{};
    const bool dependent = cfg.dependent_launch && s.dependent_launch;
    if (dependent) {
        attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attribute.val.programmaticStreamSerializationAllowed = 1;
        lc.attrs = &attribute;
        lc.numAttrs = 1;
    }
    cudaError_t e =
        cudaLaunchKernelExC(&lc, reinterpret_cast<const void*>(s.kernel), args_bytes ? params : nullptr);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e == cudaSuccess) detail::count_gpu_launch();
    if (e != cudaSuccess) {
        const std::string call = fmt::format(
            "cudaLaunchKernelExC({}, grid {}, block {}, {} bytes shared{}){}", s.name, dims(cfg.grid),
            dims(cfg.block), cfg.shared_bytes, dependent ? ", programmatic stream serialization" : "",
            where.empty() ? "" : fmt::format(" at {}", where));
        detail::throw_cuda_error(e, call.c_str(), __FILE__, __LINE__);
    }
    // LOOM_SYNC=1 skips launches into a stream being captured into a CUDA graph: nothing runs until the
    // graph is launched, and synchronizing would invalidate the capture.
    if (sync_after_launch() && !is_capturing(cfg.stream)) {
        e = cudaStreamSynchronize(cfg.stream);
        if (e != cudaSuccess) {
            const std::string call = fmt::format("cudaStreamSynchronize after kernel {}{} (LOOM_SYNC=1)",
                                                 s.name, where.empty() ? "" : fmt::format(" at {}", where));
            detail::throw_cuda_error(e, call.c_str(), __FILE__, __LINE__);
        }
    }
}

Module Module::load(std::string_view image, std::string name) {
    require_cuda(fmt::format("Module::load() of {}", name));
    if (image.empty()) throw Error(fmt::format("Module::load(): empty image for {}", name));
    // With lazy module loading the driver may accept anything here and fail at first use, so the kind of
    // image is checked first: an ELF cubin, a fatbin (0xBA55ED50) or its wrapper (0x466243B1), or PTX.
    const auto starts = [&](std::string_view magic) { return image.substr(0, magic.size()) == magic; };
    const bool elf = starts(
        "\x7f"
        "ELF");
    const bool fatbin = starts("\x50\xed\x55\xba") || starts("\xb1\x43\x62\x46");
    const bool ptx =
        image.find(".version") != std::string_view::npos && image.find(".target") != std::string_view::npos;
    if (!elf && !fatbin && !ptx)
        throw Error(fmt::format("Module::load(): {} ({} bytes) is neither a cubin, a fatbin nor PTX text",
                                name, image.size()));
    auto st = std::make_shared<detail::ModuleState>();
    st->image.assign(image);
    st->image.push_back('\0');  // PTX is read as a C string; harmless after a cubin or fatbin
    st->name = std::move(name);
    LOOM_CUDA_CHECK(cudaGetDevice(&st->device));
    if (detail::poisoned_flag()) detail::throw_poisoned();
    const cudaError_t e =
        cudaLibraryLoadData(&st->library, st->image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (e != cudaSuccess) {
        st->library = nullptr;
        const std::string call = fmt::format("cudaLibraryLoadData({}, {} bytes)", st->name, image.size());
        detail::throw_cuda_error(e, call.c_str(), __FILE__, __LINE__);
    }
    Module m;
    m.state_ = std::move(st);
    return m;
}

Kernel Module::kernel(std::string_view kname, long param_bytes) const {
    if (!state_) throw Error(fmt::format("Module::kernel(): no module loaded (looking for {})", kname));
    auto& s = *state_;
    std::lock_guard lock(s.mutex);
    if (auto it = s.kernels.find(kname); it != s.kernels.end()) {
        if (param_bytes >= 0 && it->second->param_bytes >= 0 && it->second->param_bytes != param_bytes)
            throw Error(fmt::format(
                "Module::kernel(): kernel {} of module {} was declared with a {}-byte parameter, now {}",
                kname, s.name, it->second->param_bytes, param_bytes));
        Kernel k;
        k.state_ = it->second;
        k.module_ = state_;
        return k;
    }
    auto ks = std::make_shared<detail::KernelState>();
    ks->name.assign(kname);
    if (detail::poisoned_flag()) detail::throw_poisoned();
    const cudaError_t e = cudaLibraryGetKernel(&ks->kernel, s.library, ks->name.c_str());
    if (e == cudaErrorSymbolNotFound || e == cudaErrorSharedObjectSymbolNotFound ||
        e == cudaErrorInvalidDeviceFunction) {
        (void)cudaGetLastError();
        throw Error(fmt::format("Module::kernel(): module {} has no kernel named '{}' ({})", s.name, kname,
                                cudaGetErrorName(e)));
    }
    if (e != cudaSuccess) {
        const std::string call = fmt::format("cudaLibraryGetKernel(&k, {}, \"{}\")", s.name, kname);
        detail::throw_cuda_error(e, call.c_str(), __FILE__, __LINE__);
    }
    ks->param_bytes = param_bytes;
    ks->dependent_launch = device_info(s.device).cc_major >= 9 && dependent_launch_allowed();
    s.kernels.emplace(ks->name, ks);
    Kernel k;
    k.state_ = std::move(ks);
    k.module_ = state_;
    return k;
}

const std::string& Module::name() const {
    static const std::string none = "(none)";
    return state_ ? state_->name : none;
}

int Module::device() const {
    return state_ ? state_->device : -1;
}

}  // namespace loom
