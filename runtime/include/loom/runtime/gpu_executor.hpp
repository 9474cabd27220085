// The GPU path of evaluation: plan (codegen::plan_fusion for the layouts of the bound tensors), build the
// kernels the plan names (kernel cache, disk cache, NVRTC), and run the plan: one build function and one
// launch path for every kernel family.
#pragma once

#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::gpu {

/// The built kernels of a plan, one per kernel of its partition.
using Kernels = std::vector<std::shared_ptr<const CompiledKernel>>;

/// The Input nodes of the graph of `roots` (topological order) and the layouts of their bound tensors: the
/// sources of an evaluation. Throws loom::Error for a placeholder with no tensor bound.
void bound_sources(const std::vector<ir::NodePtr>& roots, std::vector<const ir::Node*>& sources,
                   std::vector<codegen::InputLayout>& layouts);

/// The plan of evaluating `roots` (after the standard passes) with the tensors bound to its inputs now, for
/// `info` (the device's facts) under `options`. Prints it with LOOM_EXPLAIN=fusion. `sources` receives the
/// plan's sources (the graph's Input nodes). `root_strides`: the strides of outputs that are views (an empty
/// entry, or none: contiguous).
codegen::FusionPlan plan_bound(const std::vector<ir::NodePtr>& roots, const codegen::DeviceInfo& info,
                               const Options& options, std::string_view name,
                               std::vector<const ir::Node*>* sources,
                               std::span<const Strides> root_strides = {});

/// Fetches every kernel of `plan` from the in-memory cache and builds the missing ones, all families alike,
/// concurrently when there are several (code generation, the disk cache and NVRTC); every build finishes
/// before the first error is rethrown. Inside stream capture a missing kernel throws loom::Error naming it
/// and `where` (the user's file:line) before anything is built.
Kernels build_kernels(const codegen::FusionPlan& plan, Device device, std::string_view where);

/// Compiles every kernel of `plan` for `info`'s device through the disk cache without loading it (no GPU
/// needed), concurrently; `sources` (optional) receives the kernels' sources. Throws loom::CompileError.
std::vector<CachedCompile> compile_kernels(const codegen::FusionPlan& plan, const codegen::DeviceInfo& info,
                                           std::vector<codegen::KernelSource>* sources = nullptr);

/// The PTX of `kernels` for `info`'s device under `options` (fast math, line info), one module per kernel,
/// concatenated in launch order; compiled concurrently by NVRTC (nvrtc::ptx: no cache). Needs no GPU.
/// Throws loom::CompileError.
std::string ptx(const std::vector<codegen::KernelSource>& kernels, const codegen::DeviceInfo& info,
                const Options& options);

/// Copies `tmp` (an output written through a temporary) into `user`, stream-ordered: one copy when both are
/// contiguous, else a pointwise kernel storing into the view.
void copy_back_into(const Tensor& user, const Tensor& tmp, Device device);

/// Runs `plan` with its `kernels` on the current stream: `sources` are the tensors of the plan's sources
/// (with the planned layouts), `outs` one contiguous output per root. Allocates from the stream-ordered
/// pool only: the temporary block when the plan has temporaries, the split workspaces of split reductions,
/// and a temporary per output that aliases a source the plan reads (FusionPlan::reads says when), copied
/// back after the last kernel. Nothing else: no planning, hashing or cache lookup.
void run_plan(const codegen::FusionPlan& plan, const Kernels& kernels,
              std::span<const Tensor::Impl* const> sources, std::span<const Tensor* const> outs,
              Device device, std::string_view where);

/// Evaluates `roots` on `device` under the current options. When `outs` is non-null it holds one
/// preallocated tensor per root (same shape and dtype, on `device`; contiguous, or a view that does not
/// overlap itself, written at its own strides). Returns the results.
std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, Device device, std::source_location loc,
                             const std::vector<Tensor>* outs = nullptr, std::string_view name = {});

/// The generated CUDA of every kernel of `plan`, in launch order (writes each plan with LOOM_DUMP=plans).
std::vector<codegen::KernelSource> emit_kernels(const codegen::FusionPlan& plan);

/// The fusion decisions for `roots` as LOOM_EXPLAIN=fusion prints them (codegen::FusionPlan::to_string),
/// planned for the current device (the H200 without a GPU).
std::string explain(const std::vector<ir::NodePtr>& roots, std::string_view name);

/// Generated CUDA (complete translation units, one per kernel) for `roots` with their inputs' current
/// layouts, planned for the current device (the H200 without a GPU).
std::vector<codegen::KernelSource> generate(const std::vector<ir::NodePtr>& roots, std::string_view name);

/// The facts of the current device, or of the H200 when there is no GPU (for planning without one).
codegen::DeviceInfo planning_device();

}  // namespace loom::gpu
