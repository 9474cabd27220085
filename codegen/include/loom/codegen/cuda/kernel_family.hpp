// The GPU side of each kernel family: one object per alternative of GpuSchedule (fusion_plan.hpp) that
// emits, explains, prepares and binds its kernels. The runtime reaches a family only through these, by
// std::visit over GpuKernel::schedule (runtime/src/gpu_run.cpp), so a family added to GpuSchedule without
// its object does not compile. Pure functions of the plan and one call's pointers: nothing here touches a
// device, and the runtime does what they say (allocates the scratch, encodes the tensor maps, launches).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/codegen/cuda/matmul_plan.hpp"

namespace loom::codegen {

/// What one launch needs besides its pointers, asked for every kernel of a call before the first launches,
/// so that an allocation that fails launches nothing.
struct LaunchNeeds {
    std::size_t param_bytes = 0;    // the parameter struct
    bool params_in_memory = false;  // passed through device memory (beyond the parameter limit)
    /// Unsigned int counters that are zero at the launch and that the kernel leaves zero (split reductions,
    /// split K): a buffer reused launch after launch serves.
    std::int64_t counters = 0;
    /// Workspaces of these many bytes each, written before they are read (no zeroing).
    std::vector<std::size_t> workspaces;
    /// The kernel has checked gathers: it takes the device's error word (KernelPointers::error_word), which
    /// the runtime reads at the next synchronization.
    bool error_word = false;
    bool needs_scratch() const { return params_in_memory || counters > 0 || !workspaces.empty(); }
};

/// The scratch the runtime allocated for LaunchNeeds: the counters (null when none were asked for) and the
/// workspaces, in order.
struct LaunchScratch {
    void* counters = nullptr;
    std::span<void* const> workspaces;
};

/// One launch bound to its pointers: the parameters are packed (but the tensor maps), and this says how to
/// launch them.
struct BoundLaunch {
    LaunchConfig config;  // grid (grid_x 0: nothing to launch), block; `vector`: the vector entry point
    std::size_t shared_bytes = 0;  // dynamic shared memory, bytes
    /// Tensor maps the runtime encodes into the parameters at `map_offsets` (Hopper products: A's and B's).
    std::array<TensorMapSpec, 2> maps{};
    std::array<std::size_t, 2> map_offsets{};
    int map_count = 0;
};

/// The family object of GpuSchedule alternative `S`. Each specialization provides:
///   static KernelSource emit(const FusedKernel& k, const S& s);   // the CUDA source
///   static std::string plan_text(const S& s);                     // the plan, for LOOM_DUMP=plans
///   static std::string explain(const FusionPlan& plan, std::size_t i, const S& s);  // LOOM_EXPLAIN=fusion
///   static LaunchNeeds needs(const S& s, KernelPointers p);
///   static BoundLaunch bind(const S& s, KernelPointers p, const LaunchScratch& scratch,
///                           std::span<std::byte> params);      // params: needs().param_bytes
template <class S>
struct GpuFamily;

template <>
struct GpuFamily<PointwiseKernel> {
    static KernelSource emit(const FusedKernel& k, const PointwiseKernel& s);
    static std::string plan_text(const PointwiseKernel& s);
    static std::string explain(const FusionPlan& plan, std::size_t i, const PointwiseKernel& s);
    static LaunchNeeds needs(const PointwiseKernel& s, KernelPointers p);
    static BoundLaunch bind(const PointwiseKernel& s, KernelPointers p, const LaunchScratch& scratch,
                            std::span<std::byte> params);
};

template <>
struct GpuFamily<TiledKernel> {
    static KernelSource emit(const FusedKernel& k, const TiledKernel& s);
    static std::string plan_text(const TiledKernel& s);
    static std::string explain(const FusionPlan& plan, std::size_t i, const TiledKernel& s);
    static LaunchNeeds needs(const TiledKernel& s, KernelPointers p);
    static BoundLaunch bind(const TiledKernel& s, KernelPointers p, const LaunchScratch& scratch,
                            std::span<std::byte> params);
};

template <>
struct GpuFamily<PlannedReduce> {
    static KernelSource emit(const FusedKernel& k, const PlannedReduce& s);
    static std::string plan_text(const PlannedReduce& s);
    static std::string explain(const FusionPlan& plan, std::size_t i, const PlannedReduce& s);
    /// Split plans: the counters and one partials workspace per reduction.
    static LaunchNeeds needs(const PlannedReduce& s, KernelPointers p);
    static BoundLaunch bind(const PlannedReduce& s, KernelPointers p, const LaunchScratch& scratch,
                            std::span<std::byte> params);
};

template <>
struct GpuFamily<PlannedMatmul> {
    static KernelSource emit(const FusedKernel& k, const PlannedMatmul& s);
    static std::string plan_text(const PlannedMatmul& s);
    static std::string explain(const FusionPlan& plan, std::size_t i, const PlannedMatmul& s);
    /// K longer than a chunk: the chunk tree's workspace; split K: its counters too.
    static LaunchNeeds needs(const PlannedMatmul& s, KernelPointers p);
    static BoundLaunch bind(const PlannedMatmul& s, KernelPointers p, const LaunchScratch& scratch,
                            std::span<std::byte> params);
};

template <>
struct GpuFamily<PlannedAttention> {
    static KernelSource emit(const FusedKernel& k, const PlannedAttention& s);
    static std::string plan_text(const PlannedAttention& s);
    static std::string explain(const FusionPlan& plan, std::size_t i, const PlannedAttention& s);
    /// Decoding with split keys: the chunks' states (a workspace) and a counter per row block.
    static LaunchNeeds needs(const PlannedAttention& s, KernelPointers p);
    /// One block per block of queries of each head (and per key chunk when split), the longest (causal)
    /// blocks first; the operands' loads in 16-byte pieces where every d stride is 1 and every row and
    /// pointer is aligned.
    static BoundLaunch bind(const PlannedAttention& s, KernelPointers p, const LaunchScratch& scratch,
                            std::span<std::byte> params);
};

template <>
struct GpuFamily<PlannedScan> {
    static KernelSource emit(const FusedKernel& k, const PlannedScan& s);
    static std::string plan_text(const PlannedScan& s);
    static std::string explain(const FusionPlan& plan, std::size_t i, const PlannedScan& s);
    /// The tree path: the tickets, the blocks done and a flag per tree node (counters), the nodes' values.
    static LaunchNeeds needs(const PlannedScan& s, KernelPointers p);
    /// One block per tile of every row; whole 16-byte pieces where the rows are contiguous and aligned.
    static BoundLaunch bind(const PlannedScan& s, KernelPointers p, const LaunchScratch& scratch,
                            std::span<std::byte> params);
};

template <>
struct GpuFamily<PlannedScatter> {
    static KernelSource emit(const FusedKernel& k, const PlannedScatter& s);
    static std::string plan_text(const PlannedScatter& s);
    static std::string explain(const FusionPlan& plan, std::size_t i, const PlannedScatter& s);
    /// The sorted and last paths' per-block workspace; the error word of checked indices.
    static LaunchNeeds needs(const PlannedScatter& s, KernelPointers p);
    /// A block per column, at most kScatterMaxBlocks (each then takes several columns in turn).
    static BoundLaunch bind(const PlannedScatter& s, KernelPointers p, const LaunchScratch& scratch,
                            std::span<std::byte> params);
};

}  // namespace loom::codegen
