// The fusion plan: what an evaluation runs, as plain data. Two parts:
//   * the partition (target-neutral): which nodes form which kernel, the values materialized between
//     kernels (temporaries) and where each kernel reads and writes (a source of the graph, a temporary or a
//     root), each boundary with its reason tied to the user's source lines; made by partition()
//     (codegen/src/partition.cpp), a pure function of the roots and the options;
//   * per target, a schedule: for the GPU, each kernel's family plan (pointwise_plan.hpp, reduce_plan.hpp)
//     with its grid, block, vector width, splits and workspaces, the temporaries' offsets in one block and
//     the kernel cache keys; made by plan_fusion() (codegen/src/fusion_plan.cpp) for the layouts of the
//     graph's inputs and the target's facts.
// It also holds what is not a kernel: the temporary block, the split workspaces (in each reduction's
// binding) and the rule for outputs that alias inputs (written through a temporary, copied back after the
// last kernel). Nothing in it names a back end's types: the CUDA emitters (cuda/emit.hpp) spell
// them. The runtime builds and launches what the plan says and decides nothing (runtime/src/gpu_run.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/cuda/device_info.hpp"
#include "loom/codegen/cuda/matmul_plan.hpp"
#include "loom/codegen/cuda/tile_plan.hpp"
#include "loom/codegen/options.hpp"
#include "loom/codegen/plan/partition.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen {

/// The GPU schedule of one kernel of the partition.
struct GpuKernel {
    PlannedPointwise pointwise;  // Family::Pointwise
    /// Family::Pointwise: the tiled schedule (tile_plan.hpp) when the layouts show a transposed load or the
    /// graph a stencil, else none (`tile.note` then says why a near-pattern was not taken). Whether a load is
    /// transposed depends on the bound layouts (a transpose of a transposed view reads contiguously), which
    /// the partition does not know, so the GPU schedule decides.
    PlannedTile tile;
    PlannedReduce reduce;  // Family::Reduction
    PlannedMatmul matmul;  // Family::MatMul
    /// Where each kernel input is read from, in the plan's input order (pointwise_inputs of the outputs, or
    /// PlannedReduce::inputs).
    std::vector<Slot> reads;
    std::int64_t numel = 0;  // pointwise: elements of the iteration space
    /// Pointwise: the graph has a view (an output aliasing an input is then never written in place).
    bool has_views = false;
    /// The in-memory kernel cache key: graph structure, plan and options.
    std::uint64_t key = 0;
    bool operator==(const GpuKernel& o) const;
};

struct FusionPlan {
    Partition partition;
    Options options;
    std::vector<GpuKernel> gpu;  // parallel to partition.kernels
    std::vector<TempBuffer> temps;
    std::size_t temp_bytes = 0;  // the temporary block (0: none)
    std::size_t sources = 0;     // the number of sources the plan was made for
    /// The sources the graph reads. An output sharing memory with one of them is written through a temporary
    /// and copied back after the last kernel, unless the only kernel reading it is the one writing the
    /// output, a pointwise kernel without views, and the source has the output's exact layout (each element
    /// is read before it is written, in one thread).
    std::vector<int> reads;

    bool operator==(const FusionPlan&) const = default;
    std::uint64_t hash() const;
    /// What LOOM_EXPLAIN=fusion prints: every kernel with its nodes, schedule, reads and writes, every
    /// temporary and every boundary with its reason.
    std::string to_string() const;
};

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
