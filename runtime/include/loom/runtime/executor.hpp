// Evaluation of IR graphs: on the GPU (fused kernels, compiled and cached) when any input lives on a
// CUDA device, else on the host (the LLVM back end, or the CPU reference evaluator).
#pragma once

#include <source_location>
#include <string>
#include <vector>

#include "loom/ir/node.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom {

/// Evaluates `roots` and returns one new contiguous tensor per root, on the device of the inputs (the
/// host when every input is a host tensor or there are none). `name` names the kernels (profilers show
/// it); empty: derived from the ops. `loc` is the user's call site, named in errors.
/// Throws loom::Error for inputs on different devices or unbound placeholders, loom::NoDeviceError
/// without a GPU, loom::CompileError, loom::CudaError, loom::OutOfMemory.
std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots,
                             std::source_location loc = std::source_location::current(),
                             std::string_view name = {});

/// Evaluates `roots` into the preallocated `outs` (one per root: same shape and dtype, contiguous, on the
/// inputs' device). Asynchronous on the GPU (stream-ordered on the current stream). An output that an
/// input reads through a different index map is written through a temporary. Throws as evaluate(), and
/// loom::Error naming both shapes/dtypes when an output does not match its root.
void evaluate_into(const std::vector<ir::NodePtr>& roots, const std::vector<Tensor>& outs,
                   std::source_location loc = std::source_location::current(), std::string_view name = {});

/// The generated CUDA for `roots` (one complete translation unit per kernel, concatenated), planned for
/// the current GPU, or for an H200 when there is none. Needs no GPU.
std::string cuda_source(const std::vector<ir::NodePtr>& roots, std::string_view name = {});

/// The PTX of every kernel of `roots` (one module per kernel, concatenated in launch order), planned and
/// compiled as cuda_source() plans them: for the current GPU, or an H200 when there is none, for the
/// virtual arch of the cubin Loom would load (`compute_90` for sm_90). Runs NVRTC each time (no cache);
/// launches nothing; needs no GPU. Throws loom::CompileError.
std::string ptx(const std::vector<ir::NodePtr>& roots, std::string_view name = {});

/// The fusion decisions for `roots` (what LOOM_EXPLAIN=fusion prints when they are evaluated): the kernels,
/// the nodes in each with their source lines, what each reads and writes, and why kernels are separate.
/// For the plan that evaluate() would run, placed as it places them: roots placed on a GPU get the GPU plan
/// (planned for the current GPU, or an H200 when there is none); host roots get the host plan (the LLVM back
/// end's kernels and schedules, or one line saying why every kernel runs on the CPU reference). Needs no
/// GPU. Throws loom::Error naming explain() for inputs (or factories) on different devices or unbound
/// placeholders, and the planner's errors (a tile hint the GPU cannot take).
std::string explain(const std::vector<ir::NodePtr>& roots, std::string_view name = {});

/// One kernel of a compile(), in launch order.
struct KernelCompile {
    std::string name;        // the kernel's name (its entry points are `<name>` and `<name>_vec`, ...)
    std::string arch;        // "sm_90", or "compute_XY" when NVRTC emitted PTX
    std::string image_kind;  // "cubin" or "PTX"
    std::size_t image_bytes = 0;
    double compile_ms = 0;   // NVRTC, milliseconds (0 when the image came from the disk cache)
    double lookup_ms = 0;    // the disk cache lookup, milliseconds
    bool from_disk = false;  // the image came from the disk cache (docs/kernel-cache.md)
};

/// What compile() did: every kernel (`per_kernel`, in launch order) and the totals over them.
struct CompileReport {
    std::string kernel;           // the first kernel's name (every name: per_kernel)
    std::string arch;             // the first kernel's arch: "sm_90", or "compute_XY" when NVRTC emitted PTX
    std::string image_kind;       // the first kernel's image: "cubin" or "PTX"
    std::size_t image_bytes = 0;  // every kernel's image, bytes
    int kernels = 0;
    double codegen_ms = 0;  // planning and CUDA emission
    double compile_ms = 0;  // NVRTC (0 for kernels found in the disk cache)
    int disk_hits = 0;      // kernels whose image came from the disk cache (docs/kernel-cache.md)
    double lookup_ms = 0;   // disk cache lookups
    std::vector<KernelCompile> per_kernel;  // every kernel, in launch order
    /// One line per kernel (name, image kind and bytes, arch, NVRTC ms or "disk cache"), then the totals.
    std::string to_string() const;
};

/// Generates and compiles the kernels of `roots` with NVRTC without launching them (no GPU needed), through
/// the disk kernel cache (a kernel compiled by an earlier process is read, not recompiled); several kernels
/// compile concurrently.
/// Throws loom::CompileError when NVRTC rejects a kernel.
CompileReport compile(const std::vector<ir::NodePtr>& roots, std::string_view name = {});

}  // namespace loom
