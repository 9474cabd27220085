// Internals of the host back end shared by host_backend.cpp (loading the module), host_build.cpp (kernels:
// emission, the in-memory and disk caches, the JIT), host_run.cpp (running a plan on the thread pool), the
// scalar library and the host branches of executor.cpp and program.cpp.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/llvm/emit.hpp"
#include "loom/codegen/llvm/host_plan.hpp"
#include "loom/codegen/options.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/host_backend.hpp"
#include "loom/runtime/host_backend_abi.h"
#include "loom/runtime/tensor.hpp"

namespace loom::host {

/// The functions of the scalar library (host_scalar_library.cpp), by name, for the JIT.
const std::vector<loom_hb_symbol>& scalar_library();

/// The loaded module: its table (null when host work runs on the reference) and the JIT's target.
struct Backend {
    const loom_host_backend_v1* table = nullptr;
    codegen::HostTarget target;
    HostBackendInfo info;
};
/// Loads the module on first call (LOOM_CPU_BACKEND, LOOM_LLVM_MODULE); thread-safe.
const Backend& backend();
inline bool use_llvm() {
    return backend().table != nullptr;
}
/// The target plans are made for: the JIT's, or a fixed AVX-512 one when the module is not loaded.
codegen::HostTarget planning_target();

/// An object file linked into the JIT; its code is freed with the last kernel that uses it.
struct LoadedObject {
    void* handle = nullptr;
    LoadedObject() = default;
    LoadedObject(const LoadedObject&) = delete;
    LoadedObject& operator=(const LoadedObject&) = delete;
    ~LoadedObject();
};

/// One compiled host kernel: its IR and the entry points in the JIT.
struct CompiledKernel {
    using Entry = void (*)(const void* params, std::int64_t begin, std::int64_t end);
    codegen::LlvmKernelSource source;
    std::shared_ptr<const LoadedObject> object;  // several kernels of one plan may share one object file
    Entry entry = nullptr, partials = nullptr, finish = nullptr;
    double codegen_ms = 0, compile_ms = 0, load_ms = 0;
    bool from_disk = false;
    bool shared = false;  // the code of a kernel built before whose IR is this one's but for the name
};
/// One entry per kernel of a plan; null for matmul kernels, which run on the CPU reference.
using Kernels = std::vector<std::shared_ptr<const CompiledKernel>>;

/// A plan with its kernels built: what a traced function keeps per specialization.
struct Compiled {
    codegen::HostPlan plan;
    Kernels kernels;
};

/// The emitted IR of kernel `i` of `plan` (LOOM_DUMP=llvm writes it).
codegen::LlvmKernelSource emit_kernel(const codegen::HostPlan& plan, std::size_t i);
/// Every kernel of `plan`, from the in-memory cache, the disk cache or LLVM (concurrently for several).
/// Throws loom::CompileError (with the saved IR) when LLVM rejects a kernel.
Kernels build_kernels(const codegen::HostPlan& plan);
/// The kernels of several plans (for each plan, what build_kernels() of it returns), the new ones compiled
/// together: one LLVM module, or more when kernels of different plans define functions of the same name.
std::vector<Kernels> build_kernels(std::span<const codegen::HostPlan* const> plans);

/// The plan of `roots` over the tensors bound to its Input nodes (their order: `sources`); `outs` (null: new
/// contiguous results) are the outputs of assign(), whose views the plan writes at their strides.
codegen::HostPlan plan_bound(const std::vector<ir::NodePtr>& roots, const Options& options,
                             std::string_view name, std::vector<const ir::Node*>* sources,
                             const std::vector<Tensor>* outs = nullptr);
/// Runs `plan` on host tensors: `sources` in the plan's source order, `outs` one host tensor per root
/// (contiguous, or a view the plan writes at its strides). An output sharing memory with a source the plan
/// reads, or a view the plan writes contiguous, is written through a temporary and copied at the end.
void run_plan(const codegen::HostPlan& plan, const Kernels& kernels,
              std::span<const Tensor::Impl* const> sources, std::span<const Tensor* const> outs);
/// evaluate() / evaluate_into() of host tensors on the LLVM back end (`outs` null: new results).
std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, const std::vector<Tensor>* outs,
                             std::string_view name);

/// The explain text for host tensors (LOOM_EXPLAIN=fusion): the plan, or why the reference runs them.
std::string explain(const codegen::HostPlan* plan);

/// Copies `src` (contiguous, on the host) into host tensor `dst` of its shape and dtype: one copy, or element
/// by element at dst's strides (an output that is a view).
void copy_into(const Tensor& dst, const Tensor& src);

}  // namespace loom::host
