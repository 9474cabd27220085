// The GPU schedule: plan_fusion() schedules the partition (plan/partition.hpp) for one GPU through the
// schedule both back ends share (plan/schedule.hpp), giving each kernel its family's GPU plan (an alternative
// of GpuSchedule: pointwise, tiled, reduction or matrix product, with its grid, block, vector width, splits
// and workspaces) and its kernel cache key, for the layouts of the graph's inputs and the device's facts.
// Plain data: the family objects (kernel_family.hpp) emit, explain and bind each kernel, and the runtime
// builds and launches what the plan says and decides nothing (runtime/src/gpu_run.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "loom/codegen/cuda/attention_plan.hpp"
#include "loom/codegen/cuda/device_info.hpp"
#include "loom/codegen/cuda/matmul_plan.hpp"
#include "loom/codegen/cuda/scan_plan.hpp"
#include "loom/codegen/cuda/scatter_plan.hpp"
#include "loom/codegen/cuda/tile_plan.hpp"
#include "loom/codegen/options.hpp"
#include "loom/codegen/plan/partition.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
#include "loom/codegen/plan/schedule.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen {

/// Family::Pointwise on the GPU: one element, or one 16-byte vector, per thread (pointwise_plan.hpp).
struct PointwiseKernel {
    PlannedPointwise planned;
    /// The graph has a view: an output that aliases an input is then written in place only where every read
    /// of that input and the write are contiguous (the runtime's rule for outputs that alias inputs).
    bool has_views = false;
    /// Why a near-pattern was not tiled (PlannedTile::note), for the explain log; empty when nothing looked
    /// like a transpose or a stencil.
    std::string tile_note;
};

/// Family::Tiled: a pointwise kernel of the partition walked in 2-D tiles (tile_plan.hpp), with the
/// pointwise plan's parameters, body and binding.
struct TiledKernel {
    PlannedPointwise planned;
    PlannedTile tile;
    bool has_views = false;  // as PointwiseKernel::has_views
};

/// The GPU schedule of one kernel: one alternative per family, in the order of Family (Family::Reduction:
/// PlannedReduce, Family::MatMul: PlannedMatmul, Family::Attention: PlannedAttention, Family::Scan:
/// PlannedScan, Family::Scatter: PlannedScatter). Each alternative's family object (kernel_family.hpp) emits,
/// explains, prepares and binds its kernels.
using GpuSchedule = std::variant<PointwiseKernel, TiledKernel, PlannedReduce, PlannedMatmul, PlannedAttention,
                                 PlannedScan, PlannedScatter>;

/// One kernel of a FusionPlan: its schedule, where it reads, its cache key.
struct GpuKernel {
    GpuSchedule schedule;
    /// Where each kernel input is read from, in the plan's input order (pointwise_inputs of the outputs,
    /// PlannedReduce::inputs or PlannedMatmul::inputs).
    std::vector<Slot> reads;
    /// The in-memory kernel cache key: graph structure, plan and options.
    std::uint64_t key = 0;

    Family family() const { return static_cast<Family>(schedule.index()); }
    /// Whether the kernel takes its parameters from device memory (PointwisePlan::params_in_memory): each
    /// launch uploads them first, which a CUDA graph's replay would not.
    bool params_in_memory() const;
    /// The schedule of family `S`; InternalError when the kernel is of another family.
    template <class S>
    const S& as() const {
        if (const S* s = std::get_if<S>(&schedule)) return *s;
        throw_wrong_family(family());
    }
    /// Same family, plan, reads and key.
    bool operator==(const GpuKernel& o) const;

  private:
    [[noreturn]] static void throw_wrong_family(Family f);
};

/// The GPU's plan of an evaluation: the scheduled partition (plan/schedule.hpp: the partition, the
/// temporary block, the sources read) and each kernel's GPU schedule.
struct FusionPlan : ScheduledPartition {
    using Kernel = GpuKernel;
    std::vector<GpuKernel> kernels;  // parallel to partition.kernels

    bool operator==(const FusionPlan&) const = default;
    std::uint64_t hash() const;
    /// What LOOM_EXPLAIN=fusion prints: every kernel with its nodes, schedule, reads and writes, every
    /// temporary and every boundary with its reason.
    std::string to_string() const;
};

/// Whether kernel `k` of `plan` reads source `s` only at the element it writes root `r` to (so `r` may be
/// written in place over `s` when both have one layout): a pointwise kernel whose graph has no view, or a
/// flat one whose every read of `s` and whose write of `r` are contiguous (element index = flat index; a
/// rank-0 step counter broadcast to every element is a view elsewhere). Never for the other families.
bool reads_in_place(const FusionPlan& plan, std::size_t k, int s, std::size_t r);

/// Plans the evaluation of `roots` (after the standard passes), whose Input nodes are among `sources` (a
/// source the graph does not read is allowed) with layouts `layouts`, for the GPU `device`, under
/// `options`. Pure. When a reduction group cannot run as one kernel (plan_reduce throws NotFusable) the
/// graph is partitioned again strictly. `root_strides` (empty: every root contiguous; an empty entry: that
/// root contiguous) gives the strides of outputs that are views (assign() into a column or a strided slice;
/// the caller checks that none overlaps itself): pointwise kernels write them at their own index maps, and a
/// reduction kernel's strided root goes through a temporary and a pointwise kernel that stores it. Throws
/// loom::Error for limits, InternalError for an Input that is not a source.
FusionPlan plan_fusion(const std::vector<ir::NodePtr>& roots, std::span<const ir::Node* const> sources,
                       std::span<const InputLayout> layouts, const DeviceInfo& device, const Options& options,
                       std::string_view name = {}, const FusionCostModel* cost = nullptr,
                       std::span<const Strides> root_strides = {});

}  // namespace loom::codegen
