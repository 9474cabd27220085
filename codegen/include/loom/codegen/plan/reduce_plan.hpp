// The reduction plan: how one fused reduction kernel walks its reduced range, in the order that
// docs/semantics.md ("Reduction order") fixes as a function of the shape and the axes alone.
//
// A reduction kernel computes a group of reductions that share one operand shape S and one set of reduced
// axes: O output elements ("rows"), each reducing L elements. Its graph has three parts, each a pointwise
// plan (pointwise_plan.hpp) over its own iteration space:
//   * the element space, (O, L) for the inner schedule or (L, O) for the outer one: the operand of every
//     reduction (its elementwise producers fused, read once per pass) and, for normalizations, the
//     element outputs of shape S (softmax's `e / sum(e)`): the reduced values of earlier stages enter this
//     graph as "row values" held in registers, never read from memory;
//   * the row space, O elements: the epilogue, i.e. the row outputs (the reduced values themselves and
//     elementwise functions of them, e.g. `sqrt(var + eps)`), computed by the thread that finishes a row.
// Reductions whose operands read earlier reductions of the group run as later stages of the same kernel
// (layernorm: mean, then the variance around it, then the element outputs).
//
// Schedules (the plan is plain data, printed in the kernel banner):
//   * Inner: a group of `group` threads per row (a warp, or a 256-thread block), lanes strided over the
//     group, 4 consecutive elements per lane and run (16-byte vectors for float32 when aligned). Rows that
//     fit are loaded once into registers and every stage works from them ("cached").
//   * Outer (the innermost axis is kept; the column order of the contract): one thread per output (4
//     outputs with 16-byte vectors across outputs), 256 consecutive outputs per block, so a block reads a
//     contiguous 1-4 KiB of each row; each thread sums whole chunks of 256 rows in sequence.
//   * Split: when there are too few rows to fill the device, the chunks of one row are shared by several
//     blocks. Inner: balanced contiguous chunk ranges, one partial per chunk, and a counter tree (groups
//     of 256 chunk partials, then the row) whose completing blocks combine them. Outer: a power-of-two
//     number of chunks per block, the last block of a row group combining the block partials. Either way
//     the pairwise tree over chunks is unchanged, and the same kernel finishes the row and its epilogue.
// None of these choices changes the result: every schedule computes the documented order exactly.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/node.hpp"
#include "loom/ir/reduce_order.hpp"

namespace loom::codegen {

/// The constants of the documented reduction order (loom/ir/reduce_order.hpp, defined once).
using loom::kColumnChunk;
using loom::kReduceChunk;
using loom::kReduceLanes;
using loom::kReduceRun;
/// Inner split reductions (few long rows): resident blocks per SM of the waves that share the rows' chunks
/// (the kernel's __launch_bounds__ minimum), and the fan-in of the counter tree their chunk partials climb.
inline constexpr std::int64_t kSplitBlocksPerSM = 2;
inline constexpr std::int64_t kSplitGroup = 256;

enum class ReduceSchedule : std::uint8_t { Inner, Outer };
std::string_view schedule_name(ReduceSchedule s);

/// One reduction of a kernel.
struct ReduceOpPlan {
    ir::Op op = ir::Op::Sum;
    DType in = DType::Float32;   // operand dtype
    DType out = DType::Float32;  // result dtype
    int stage = 0;               // 0-based; stage k reads the values of stages < k
    bool operator==(const ReduceOpPlan&) const = default;
};

/// What a group of reductions is asked to compute: the input of plan_reduce.
struct ReduceGroupSpec {
    std::vector<ir::NodePtr> reductions;       // same operand shape, same axes; stage order (operands first)
    std::vector<ir::NodePtr> element_outputs;  // shape S (inner schedule, reduced axes trailing)
    std::vector<ir::NodePtr> row_outputs;      // O elements each; reductions of the group appear in them
};

/// Thrown by plan_reduce when the group cannot run as one kernel (a row value read at another row, a
/// split multi-stage group, ...): the caller materializes and re-partitions. The message says why.
struct NotFusable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct ReducePlan {
    ReduceSchedule schedule = ReduceSchedule::Inner;
    int block = 256;        // threads per block
    int group = 256;        // inner: threads per row (32 or 256); outer: 1 (a thread per output)
    int cached_blocks = 0;  // inner: 1024-element blocks of a row held in registers (0: re-read per pass)
    bool full_rows =
        false;  // inner, held rows: the row length is exactly cached_blocks * 1024, so the vector
                // variant's positions need no bounds checks (row-level values are then computed once)
    bool split = false;  // several blocks per row; the block that completes a row (inner) or the last
                         // block of a row group (outer) finishes it
    bool vector_variant = false;  // inner: a 4-wide vector entry point exists
    int stages = 1;
    std::vector<ReduceOpPlan> ops;
    int element_outputs = 0;             // element-plan outputs after the reduction operands
    PointwisePlan element;               // outputs: one operand per reduction, then the element outputs
    PointwisePlan row;                   // outputs: the row outputs (each reshaped to O elements)
    std::vector<int> element_row_value;  // per element-plan input: the reduction whose row value it is, or -1
    std::vector<int> row_row_value;      // per row-plan input: likewise
    /// The kernel's parameter struct: the element space's struct, the row space's (when there are row
    /// outputs), then O, L, the chunks, chunks per block, blocks per row, the split counters and one partials
    /// workspace per reduction.
    ParamLayout params;
    std::vector<int> cached_sites;  // cached rows: the element-plan sites held in registers (those that
                                    // vary from row to row, and row broadcasts that fit beside them in
                                    // 96 registers per thread with a block per row); the others are
                                    // loaded where used

    int rows_per_block() const { return schedule == ReduceSchedule::Inner ? block / group : block; }
    bool operator==(const ReducePlan&) const = default;
    std::uint64_t hash() const;
    std::string to_string() const;
};

/// The numbers of one call.
struct ReduceBinding {
    PointwiseBinding element, row;
    std::int64_t outputs = 0;           // O
    std::int64_t length = 0;            // L
    std::int64_t chunks = 0;            // ceil(L / 8192)
    std::int64_t chunks_per_block = 1;  // split: outer, a power of two; inner, ceil(chunks / blocks_per_row)
    std::int64_t blocks_per_row =
        1;  // split: outer, ceil(chunks / chunks_per_block); inner, one wave's share

    /// Split workspaces. Counters (unsigned int, zero before the launch and zero again after it): outer, one
    /// per row group; inner, per row one per group of kSplitGroup chunks and one for the row. Partials
    /// (accumulators) per reduction: outer, one per block; inner, per row one per chunk and one per group.
    std::int64_t split_groups() const { return (chunks + kSplitGroup - 1) / kSplitGroup; }
};

struct PlannedReduce {
    ReducePlan plan;
    ReduceBinding binding;
    /// Graphs of the element and row spaces (row values substituted by placeholder inputs): the emitter's
    /// input, and the source of the inputs' order (pointwise_inputs of each).
    std::vector<ir::NodePtr> element_roots, row_roots;
    /// The placeholder input of each reduction (index = reduction number).
    std::vector<ir::NodePtr> placeholders;
    /// The element-plan and row-plan inputs that are bound tensors (placeholders left out), in the order of
    /// pointwise_inputs of each plan's roots: pack_reduce_params and reduce_launch take their addresses in
    /// this order. Nodes of element_roots / row_roots, which keep them alive.
    std::vector<const ir::Node*> inputs;
};

/// Layout of a bound input node (the runtime's view of its tensor).
using LayoutOf = std::function<InputLayout(const ir::Node&)>;

/// Plans one reduction kernel for `spec`. Throws NotFusable when the group cannot be one kernel, loom::Error
/// for limits (parameters), InternalError for a malformed spec.
PlannedReduce plan_reduce(const ReduceGroupSpec& spec, const LayoutOf& layout_of, const PlanTarget& target);

/// The accumulator of one reduction (docs/semantics.md section 7, "Accumulation type"), decided once here;
/// each back end spells it (the CUDA emitter: float, double, long long, unsigned char, lm::argacc<T>).
struct Accumulator {
    enum class Kind : std::uint8_t {
        /// A value of `dtype`: sum, prod and mean (float32 for float16/bfloat16, int64 for integers and
        /// bool), min and max (the operand's register type: float32 for the half dtypes).
        Value,
        Flag,     // one byte, 0 or 1: any, all
        Indexed,  // a value of `dtype` and its int64 index in the reduced range: argmin, argmax
    };
    Kind kind = Kind::Value;
    DType dtype = DType::Float32;
    /// Bytes of one accumulator in a split workspace (Indexed: the value and the index, 16 bytes).
    std::size_t bytes() const;
    bool operator==(const Accumulator&) const = default;
};
Accumulator accumulator_of(const ReduceOpPlan& op);

/// Size in bytes of one partial accumulator of reduction `op` (split workspace): accumulator_of(op).bytes().
std::size_t accumulator_bytes(const ReduceOpPlan& op);

/// Bytes of the kernel parameter struct and their packing. `inputs` in PlannedReduce::inputs order,
/// `el_outputs` the element outputs, `row_outputs` the row outputs, `partials` (split only) the zeroed
/// counters (one unsigned int per row group, i.e. per block column of the grid) then one workspace per
/// reduction.
std::size_t reduce_params_size(const ReducePlan& plan);
void pack_reduce_params(const PlannedReduce& pr, std::span<const void* const> inputs,
                        std::span<void* const> el_outputs, std::span<void* const> row_outputs,
                        std::span<void* const> partials, std::span<std::byte> out,
                        void* error_word = nullptr);
/// Whether a plan's element or row space has a checked gather (the kernel takes the error word).
inline bool checks_indices(const ReducePlan& plan) {
    return plan.element.checks_indices() || plan.row.checks_indices();
}

/// Launch shape (grid x: row blocks, grid y: blocks per row, block) and whether the vector entry point can
/// be used with these pointers (`inputs` in PlannedReduce::inputs order; the element outputs).
LaunchConfig reduce_launch(const PlannedReduce& pr, std::span<const void* const> inputs,
                           std::span<void* const> el_outputs);

/// Blocks per row of an inner split: `rows` rows of `chunks` chunks each on `slots` resident blocks. One
/// wave, B = floor(slots / rows), when it keeps all but 2% of the slots busy (1 row: B = slots); else the
/// fewest blocks B (at most `chunks` and 65535) whose waves, ceil(rows B / slots) of them, each doing 1/B
/// of a row, take within 2% of the ideal rows / slots; when none does, the B that comes closest.
std::int64_t split_blocks_per_row(std::int64_t rows, std::int64_t chunks, std::int64_t slots);

/// The split workspaces of a launch `l` of `pr` (0 when the plan is not split; ReduceBinding says what they
/// hold): counters (unsigned int) and partial accumulators per reduction (accumulator_bytes each).
std::int64_t split_counter_count(const PlannedReduce& pr, const LaunchConfig& l);
std::int64_t split_partial_count(const PlannedReduce& pr);

}  // namespace loom::codegen
