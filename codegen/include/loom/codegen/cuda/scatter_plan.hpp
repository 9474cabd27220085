// The GPU plan of one scatter node (Family::Scatter; docs/semantics.md, "Scatters"): which kernel runs it
// (scatter's last position wins, scatter_add's grouping of each target's values in ascending position, or
// the opt-in atomic adds) and where its operands and result lie (strides of the columns, the coordinates off
// the axis, and along the axis). Plain data: codegen/src/cuda/emit_scatter.cpp emits the kernel and
// codegen/src/cuda/family_scatter.cpp binds one call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/plan/partition.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
#include "loom/ir/node.hpp"
#include "loom/ir/op.hpp"

namespace loom::codegen {

/// How a scatter kernel combines a column's values. Last: scatter, the largest position per target found
/// with integer atomicMax, then one copy per target. Sorted: scatter_add in the contract's order, the
/// column's values grouped by target in ascending position (a stable counting sort: per tile of 256
/// positions a bitonic sort of (target, position) keys in shared memory gives each value its rank among its
/// target's), chunks of 256 summed by a thread each, the pairwise tree over a target's chunk partials.
/// Atomic: scatter_add with atomicAdd into x's copy (float32 and float64 only; not reproducible).
enum class ScatterPath : std::uint8_t { Last, Sorted, Atomic };
/// "last", "sorted", "atomic".
const char* scatter_path_name(ScatterPath p);

/// The column axes (the axes besides the scattered one) a scatter kernel indexes (more must merge).
inline constexpr int kScatterColumnAxes = 6;
/// The most blocks a scatter launch runs (each takes columns blockIdx.x, + gridDim.x, ...), and the bytes
/// their workspaces (one per block) may take together before fewer blocks run: at least one block runs, with
/// the workspace one column needs.
inline constexpr std::int64_t kScatterMaxBlocks = 1024;
inline constexpr std::int64_t kScatterWorkspaceBudget = std::int64_t{1} << 30;

/// What the kernel's code depends on (the cache key): the path, the dtypes, the index mode.
struct ScatterPlan {
    ir::Op op = ir::Op::ScatterAdd;
    DType dtype = DType::Float32;  // x's, the values' and the result's
    DType acc = DType::Float32;    // scatter_add's accumulator: float32 (float32, halves), float64, int64
    DType index = DType::Int64;
    ir::IndexMode mode = ir::IndexMode::Checked;
    ScatterPath path = ScatterPath::Sorted;
    int threads = 256;

    bool operator==(const ScatterPlan&) const = default;
    std::uint64_t hash() const;
    /// The plan's banner lines.
    std::string to_string() const;
};

/// One operand of a scatter kernel as a strided view of one of its inputs: x (0), the indices (1), the
/// values (2).
struct ScatterOperand {
    int input = 0;  // index into PlannedScatter::inputs
    std::int64_t offset = 0;
    bool operator==(const ScatterOperand&) const = default;
};

/// A scatter kernel's GPU schedule: the plan, the node, its inputs (deduplicated) and the operands' and the
/// result's strides: along the axis (`step`) and over the merged column axes (`col_strides`, outermost
/// first), in the order x, indices, values, result.
struct PlannedScatter {
    ScatterPlan plan;
    ir::NodePtr node;
    std::vector<const ir::Node*> inputs;
    std::array<ScatterOperand, 3> operands{};
    std::int64_t extent = 0;  // x's extent along the axis: the targets of a column
    std::int64_t length = 0;  // the values' extent along the axis: the positions of a column
    std::array<std::int64_t, 4> step{};
    std::vector<std::int64_t> col_extents;
    std::array<std::vector<std::int64_t>, 4> col_strides;
    bool operator==(const PlannedScatter& o) const {
        return plan == o.plan && operands == o.operands && extent == o.extent && length == o.length &&
               step == o.step && col_extents == o.col_extents && col_strides == o.col_strides;
    }
    std::int64_t columns() const;
    /// The blocks of a launch: min(columns, kScatterMaxBlocks), fewer where their workspaces would pass
    /// kScatterWorkspaceBudget (at least 1), 0 when there is nothing to do.
    std::int64_t blocks() const;
    /// The workspace of one block, in 8-byte words (scatter_params.inc, `work`).
    std::int64_t work_words() const;
};

/// The accumulator of scatter_add into `dtype`: float32 for float32 and the halves, float64, int64.
DType scatter_accumulator(DType dtype);

/// Plans the scatter kernel `k` (Family::Scatter: the scatter node over views of its inputs, written to one
/// or more contiguous outputs), whose inputs have the layouts `layout_of`. Throws NotFusable for an operand
/// that is a reshape without strides for its input's layout (the strict partition computes it first),
/// loom::Error for more than kScatterColumnAxes column axes that do not merge.
PlannedScatter plan_scatter(const FusedKernel& k, const LayoutOf& layout_of);

/// The bytes of a scatter kernel's one parameter (lm::ScatterParams, codegen/src/cuda/scatter_params.inc).
std::size_t scatter_param_bytes();

/// The CUDA source of a scatter kernel (codegen/src/cuda/emit_scatter.cpp): the prelude, the scatter device
/// code (codegen/src/cuda/scatter.cuh) and the entry point `<name>`, which instantiates the plan's kernel.
KernelSource emit_scatter(std::string_view user_name, const PlannedScatter& ps);

}  // namespace loom::codegen
