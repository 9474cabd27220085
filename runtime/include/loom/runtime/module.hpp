// Loaded GPU code: a cubin, fatbin or PTX image loaded through the CUDA runtime's library API
// (cudaLibraryLoadData; no libcuda), its kernels by name, and launches of kernels that take one struct.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "loom/runtime/cuda_types.hpp"
#include "loom/runtime/stream.hpp"

namespace loom {

/// Grid or block extents.
struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
};

/// How to launch: grid and block extents, dynamic shared memory in bytes, and the stream (the calling
/// thread's current stream at the time the config is made, unless set).
/// Dynamic shared memory a kernel may use without opting in (every architecture from 7.0 on); beyond it
/// Kernel::launch() raises the kernel's limit first.
inline constexpr std::size_t kDefaultDynamicSharedBytes = 48 * 1024;

struct LaunchConfig {
    Dim3 grid;
    Dim3 block;
    std::size_t shared_bytes = 0;
    cudaStream_t stream = current_stream();
    /// Programmatic dependent launch: the kernel may begin while the previous kernel in the stream finishes
    /// (the launch attribute cudaLaunchAttributeProgrammaticStreamSerialization), which takes the launch gap
    /// off the critical path. Only for kernels whose every thread waits for the prior grid (PTX
    /// `griddepcontrol.wait`) before its first access to global memory, as every kernel Loom emits does
    /// (the prelude's lm::await_prior_grids). Used on devices of compute capability 9.0 and newer, unless
    /// LOOM_DEPENDENT_LAUNCH=0; elsewhere the launch is an ordinary one.
    bool dependent_launch = false;
};

namespace detail {
struct ModuleState;
struct KernelState;
}  // namespace detail

/// A kernel of a loaded Module. Cheap to copy; keeps its module loaded.
class Kernel {
  public:
    Kernel() = default;
    /// The kernel's (extern "C") name.
    const std::string& name() const;
    /// The runtime handle (usable as `const void*` with cudaFunc* and cudaLaunch* calls).
    cudaKernel_t handle() const;
    /// Bytes of the kernel's one parameter as its caller declared them to Module::kernel() (the plan's
    /// parameter layout; 0 for a kernel without parameters), or -1 when not declared.
    long param_bytes() const;

    /// Launches the kernel with one by-value parameter: the `args_bytes` bytes at `args` (a struct the
    /// caller laid out as the kernel declares it; null and 0 for a kernel without parameters). `where` is
    /// the user's `file:line` of the operation, recorded with note_launch() before the launch so that a
    /// later sticky error names it. Sets the kernel's maximum dynamic shared memory on the current device
    /// first when `cfg.shared_bytes` exceeds 48 KiB (once per size and device). After the launch checks
    /// cudaGetLastError(); with LOOM_SYNC=1 synchronizes the stream and checks again.
    /// Throws loom::Error when args_bytes differs from the declared parameter size, loom::CudaError for a
    /// failed launch (naming the kernel), or at once after an earlier sticky error.
    void launch(const LaunchConfig& cfg, const void* args, std::size_t args_bytes,
                std::string_view where = {}) const;

    /// Allows up to `bytes` of dynamic shared memory per block on device `device`
    /// (cudaKernelSetAttributeForDevice, cudaFuncAttributeMaxDynamicSharedMemorySize). Throws
    /// loom::CudaError, e.g. beyond the device's opt-in limit.
    void set_max_dynamic_shared(std::size_t bytes, int device) const;

  private:
    friend class Module;
    std::shared_ptr<detail::KernelState> state_;
    std::shared_ptr<detail::ModuleState> module_;  // keeps the library loaded
};

/// A loaded image. A library loaded with cudaLibraryLoadData is context-independent: one Module serves
/// every device whose architecture the image fits, and the CUDA runtime loads it into a device's context
/// when that device first uses it (lazy loading, CUDA_MODULE_LOADING). Loom's kernel cache keeps one
/// Module per compiled image (per architecture); the device current at load time is recorded. Unloaded
/// (cudaLibraryUnload) when the Module and all its Kernels are gone.
class Module {
  public:
    Module() = default;
    /// Loads a cubin or fatbin, or PTX text (JIT-compiled by the driver), from `image` (the bytes are
    /// copied and kept while the library lives; PTX need not be NUL-terminated here). `name` labels
    /// errors. Throws loom::NoDeviceError without a GPU, loom::CudaError (e.g. cudaErrorInvalidPtx,
    /// cudaErrorNoKernelImageForDevice) naming `name`.
    static Module load(std::string_view image, std::string name = "module");

    /// The kernel called `name` (an extern "C" or mangled name), looked up once and cached. `param_bytes`
    /// declares the size of its one by-value parameter (the generated struct's size, which the plan lays
    /// out; 0 for none; -1: not declared, launches are not checked). Nothing is asked of the driver about
    /// parameters: Loom makes no CUDA call that it expects to fail. Throws loom::Error when the image has
    /// no such kernel, or when it is looked up again with another declared size.
    Kernel kernel(std::string_view name, long param_bytes = -1) const;

    bool loaded() const { return state_ != nullptr; }
    const std::string& name() const;
    /// The device current when the module was loaded.
    int device() const;

  private:
    std::shared_ptr<detail::ModuleState> state_;
};

}  // namespace loom
