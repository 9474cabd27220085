// Internal: what the GPU path (gpu_run.cpp) and traced programs (program.cpp) share.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/module.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::gpu {

/// A plan with its kernels built: what a traced function keeps per specialization.
struct Compiled {
    codegen::FusionPlan plan;
    Kernels kernels;
};

/// The tensor bound to an Input node (its payload).
const Tensor::Impl& bound_tensor(const ir::Node& input);
/// Layout of the tensor bound to an Input node (strides, dtype, 16-byte alignment of element 0); throws
/// loom::Error for a placeholder with no tensor bound.
codegen::InputLayout layout_of(const ir::Node& input);
/// Address of element 0 of the tensor bound to an Input node.
const void* address_of(const ir::Node& input);
/// Compiles `source` (through the disk cache) for `info`'s device under `options` (fast math, line info)
/// and loads its entry points, each declared with the parameter size `param_bytes` of the plan.
CompiledKernel load_kernel(codegen::KernelSource source, double codegen_ms, const codegen::DeviceInfo& info,
                           const Options& options, std::size_t param_bytes);

/// One kernel launch of a run of a plan as run_plan() issues it: what a CUDA graph's kernel node holds.
struct LaunchRecord {
    cudaKernel_t kernel{};
    Dim3 grid, block;
    std::size_t shared_bytes = 0;
    std::vector<std::byte> params;
    bool same_launch(const LaunchRecord& o) const {
        return kernel == o.kernel && grid.x == o.grid.x && grid.y == o.grid.y && grid.z == o.grid.z &&
               block.x == o.block.x && block.y == o.block.y && block.z == o.block.z &&
               shared_bytes == o.shared_bytes;
    }
};

/// The memory of the runs of a plan that one CUDA graph replays (program_graph.cpp): run_plan() takes its
/// temporaries and split workspaces here instead of from the pool per call (allocated by the first run,
/// outside any capture, the same blocks afterwards), records its launches, and with `launch` false only
/// records them (the parameters of a replay with new pointers). `unsupported` is set for a run a graph
/// cannot replay: an output written through a temporary, parameters in device memory, split counters beyond
/// the per-stream buffer.
struct RunMemory {
    std::vector<Tensor> blocks;
    std::size_t next_block = 0;
    std::vector<void*> counters;
    std::size_t next_counter = 0;
    std::vector<LaunchRecord>* records = nullptr;
    std::size_t next_record = 0;
    bool launch = true;
    bool unsupported = false;
    void start(std::vector<LaunchRecord>* into, bool do_launch) {
        next_block = next_counter = next_record = 0;
        records = into;
        launch = do_launch;
        unsupported = false;
    }
    /// The next block of `bytes` (16-byte aligned), allocated on the first run.
    void* block(std::size_t bytes, Device device);
    /// The split counters of the next split launch (the per-stream buffer; null when it is too small).
    void* counter(int device, std::int64_t needed);
    void record(const Kernel& k, const LaunchConfig& cfg, std::span<const std::byte> params);
};

}  // namespace loom::gpu

namespace loom::gpu {
/// run_plan() of gpu_executor.hpp, its temporaries, workspaces and launches through `mem` (null: the pool,
/// launched at once).
void run_plan(const codegen::FusionPlan& plan, const Kernels& kernels,
              std::span<const Tensor::Impl* const> sources, std::span<const Tensor* const> outs,
              Device device, std::string_view where, RunMemory* mem);
}  // namespace loom::gpu
