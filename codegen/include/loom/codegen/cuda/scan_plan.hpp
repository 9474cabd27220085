// The GPU plan of one scan node (Family::Scan; docs/semantics.md, "Scans"): which kernel runs it (a block per
// row of one tile, or the single-pass tree over tiles), and where its operand and result lie (strides of the
// other axes and along the axis). Plain data: codegen/src/cuda/emit_scan.cpp emits the kernel and
// codegen/src/cuda/family_scan.cpp binds one call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/cuda/device_info.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/options.hpp"
#include "loom/codegen/plan/partition.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
#include "loom/ir/node.hpp"
#include "loom/ir/op.hpp"

namespace loom::codegen {

/// How a scan kernel walks its rows. Warp: rows of at most 256 elements (32 threads of 8), one per warp, 8
/// per block: no warp scan, no carry. Tile: a row of at most one tile (kScanTile elements) per block, no
/// carry. Tree: rows of several tiles, cut into chunks of 2^chunk_shift consecutive tiles, a block per chunk
/// taking its index from a counter in launch order: it reads its tiles for their aggregates and builds the
/// chunk's part of the contract's pairwise tree, publishes it (the last of 32 chunks to publish builds their
/// node, and so on up), takes the nodes before it from earlier chunks, then scans the tiles it holds in
/// registers with their carries.
enum class ScanPath : std::uint8_t { Warp, Tile, Tree };
/// "warp", "tile", "tree".
const char* scan_path_name(ScanPath p);

/// The axes besides the scanned one that a scan kernel indexes (more must merge into these).
inline constexpr int kScanOuterAxes = 6;
/// The tree path's chunk: at most this many 4-byte registers per thread hold its accumulated values (8 per
/// tile a thread), so that its block loads the whole chunk at once and reads it once.
inline constexpr int kScanChunkRegisters = 32;
/// The tree path's blocks per multiprocessor, which its registers must let in (the kernel's launch bounds: up
/// to 80 registers a thread) and for which its chunks are sized.
inline constexpr int kScanChunkBlocksPerSM = 3;

/// What the kernel's code depends on (the cache key): the op, the dtypes, exclusive, the path.
struct ScanPlan {
    ir::Op op = ir::Op::CumSum;
    DType in = DType::Float32;   // the operand's dtype
    DType acc = DType::Float32;  // the accumulator: float32 (float32, halves), float64, int64 (bool, ints)
    DType out = DType::Float32;  // the result's dtype
    bool exclusive = false;
    ScanPath path = ScanPath::Tile;
    int threads = 256;  // kScanThreads: 8 elements each
    int row_warps = 8;  // the tile path: the warps of a row (2, 4 or 8; 8 / row_warps rows per block)
    /// A fused kernel: the operand computed element by element by an elementwise prologue (a pointwise plan
    /// over the scan's shape) instead of read from memory, and/or the result handed element by element to an
    /// elementwise epilogue (a pointwise plan over the scan's shape, the scan's value at site `acc_site`),
    /// which computes and stores the kernel's outputs.
    bool prologue = false;
    bool epilogue = false;
    PointwisePlan prologue_plan;
    PointwisePlan epilogue_plan;
    int acc_site = -1;
    /// A row reduction instead of an epilogue (rows of 1 to 1024: the warp path, or the tile path's 2 or 4
    /// warps): the kernel's outputs are elementwise work on a sum or mean over each row of elementwise work
    /// on the scan's elements, each row reduced in the reductions' row order as the kernel finishes it
    /// (scan.cuh, reduce_row and reduce_tile_row); the scan's elements are never stored. `operand_plan`: the
    /// reduction's operand from the scan's element (rounded to its dtype) at site `operand_site`, over the
    /// scan's shape; `row_plan`: the kernel's outputs from the row's reduced value at site `row_site`, over
    /// the rows.
    bool row_reduction = false;
    ir::Op reduce_op = ir::Op::Sum;       // Sum or Mean
    DType reduce_dtype = DType::Float32;  // the reduction's operand and accumulator: float32 or float64
    PointwisePlan operand_plan;
    int operand_site = -1;
    PointwisePlan row_plan;
    int row_site = -1;

    bool operator==(const ScanPlan&) const = default;
    std::uint64_t hash() const;
    /// The tree path: the most tiles of a chunk, whose values a thread holds in registers
    /// (kScanChunkRegisters: 4 tiles of a 4-byte accumulator, 2 of an 8-byte one).
    int chunk_tiles() const;
    /// A prologue computed in vectors of W consecutive elements (the prologue plan's vector width, without
    /// gathers, dividing a thread's 8): W; 0 when it computes element by element. A launch uses the vectors
    /// where every row allows (ScanParams::vector_in).
    int prologue_vector_width() const;
    /// An epilogue fed in vectors of W consecutive elements (its plan's vector width, dividing a thread's 8;
    /// inclusive scans: an exclusive one's outputs sit one position later): W, else 0. A launch uses them
    /// where every row allows (ScanParams::vector_out).
    int epilogue_vector_width() const;
    /// The plan's banner lines.
    std::string to_string() const;
};

/// A scan kernel's GPU schedule: the plan, the node, the input it reads (a strided view of it) and the
/// result's strides; the other axes merged where their strides allow, outermost first.
struct PlannedScan {
    ScanPlan plan;
    ir::NodePtr node;
    const ir::Node* input =
        nullptr;  // the operand's input when it is read from memory (null with a prologue)
    /// The kernel's inputs, in the order of its pointers: the operand's (`input`, or the prologue's inputs),
    /// then the epilogue's (`accumulators` among them, a placeholder for the scan's value that takes no
    /// pointer).
    std::vector<const ir::Node*> inputs;
    std::size_t operand_inputs = 0;
    ir::NodePtr accumulators;
    std::vector<ir::NodePtr> epilogue_outputs;  // the kernel's outputs over `accumulators`
    PointwiseBinding prologue_binding;
    PointwiseBinding epilogue_binding;
    /// A row reduction: {the reduction's operand over `accumulators`}, the kernel's outputs over `reduced` (a
    /// placeholder for each row's reduced value, which takes no pointer either), their bindings, and how many
    /// of `inputs` after the operand's are the reduction operand's (the row outputs' follow).
    std::vector<ir::NodePtr> reduction_operand;
    ir::NodePtr reduced;
    std::vector<ir::NodePtr> row_outputs;
    PointwiseBinding operand_binding;
    PointwiseBinding row_binding;
    std::size_t reduction_operand_inputs = 0;
    std::int64_t in_offset = 0;  // elements
    std::int64_t length = 0;     // the row's length: the axis's extent
    std::int64_t in_step = 0;    // strides along the axis, in elements
    std::int64_t out_step = 0;
    std::vector<std::int64_t> outer;      // the other axes' extents (merged), outermost first
    std::vector<std::int64_t> in_outer;   // their strides in the operand
    std::vector<std::int64_t> out_outer;  // and in the result
    /// The tree path: a chunk is 2^chunk_shift consecutive tiles of a row: ScanPlan::chunk_tiles(), fewer
    /// where that would leave less than a wave of blocks (kScanChunkBlocksPerSM per multiprocessor), at most
    /// the row.
    int chunk_shift = 0;
    bool operator==(const PlannedScan& o) const {
        return plan == o.plan && in_offset == o.in_offset && length == o.length && in_step == o.in_step &&
               out_step == o.out_step && outer == o.outer && in_outer == o.in_outer &&
               out_outer == o.out_outer && chunk_shift == o.chunk_shift;
    }
    std::int64_t rows() const;
    std::int64_t tiles() const;   // per row
    std::int64_t chunks() const;  // per row, the tree path's
    /// The tree path's counter words per row (loom/ir/scan_core.hpp's row_words, which the kernel indexes
    /// them by): a flag per unit of the hierarchy over the chunks, an arrival count per unit above a chunk.
    std::int64_t counter_words() const;
};

/// The accumulator dtype of a scan of `in` giving `out`.
DType scan_accumulator(DType out);

/// Plans the scan kernel `k` (Family::Scan: the scan node over a view of its input or over an elementwise
/// prologue, written to one or more contiguous outputs or through an elementwise epilogue: a strided root
/// goes through a temporary), whose inputs have the layouts `layout_of`. Throws NotFusable for an operand
/// that is a reshape without strides for its input's layout (the strict partition computes it first),
/// loom::Error for more than kScanOuterAxes other axes that do not merge.
PlannedScan plan_scan(const FusedKernel& k, const LayoutOf& layout_of, const DeviceInfo& device);

/// The bytes of a scan kernel's parameters: lm::ScanParams, then the prologue's and the epilogue's structs,
/// or the reduction operand's and the row outputs' (a fused kernel), each at its alignment.
struct ScanParamLayout {
    std::size_t prologue_offset = 0, epilogue_offset = 0, operand_offset = 0, row_offset = 0, size = 0,
                align = 8;
};
ScanParamLayout scan_param_layout(const ScanPlan& p);

/// The bytes of a scan kernel's one parameter (lm::ScanParams, codegen/src/cuda/scan_params.inc).
std::size_t scan_param_bytes();

/// The CUDA source of a scan kernel (codegen/src/cuda/emit_scan.cpp): the prelude, the scan device code
/// (codegen/src/cuda/scan.cuh, with loom/ir/scan_core.hpp) and the entry point `<name>`, which instantiates
/// the plan's kernel; one parameter, lm::ScanParams (scan_params.inc).
KernelSource emit_scan(std::string_view user_name, const PlannedScan& ps);

}  // namespace loom::codegen
