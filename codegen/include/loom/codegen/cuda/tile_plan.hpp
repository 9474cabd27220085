// The tiled plan: a pointwise kernel whose iteration space is walked in 2-D tiles instead of one element per
// thread, for the two patterns that reuse data across neighbouring elements:
//   * transposes and permutes that move the fastest axis: a load site whose unit stride runs along another
//     dimension than the output's last one is staged through shared memory. A block first reads its tile
//     of that operand along the operand's fastest axis (coalesced), then computes the tile along the
//     output's fastest axis (coalesced writes), reading the staged values from shared memory. Rows of the
//     shared tile are padded to an odd number of 4-byte words, so both the row-wise writes and the
//     column-wise reads of a warp fall into distinct banks for every element size (1-byte and 2-byte
//     elements packed several to a word).
//   * stencils: several load sites of one input that differ only by constant offsets (shifted slices,
//     `x[1:] - x[:-1]`, the 5-point Laplacian). A block computes a tile of outputs with its lanes along the
//     fastest axis and each thread walking several rows, so the taps of neighbouring outputs are read from
//     global memory once and served again from L1, or (StencilReuse::SharedHalo) from the block's tile of
//     the input plus its halo, staged once in shared memory. L1 is the default: it was the faster at every
//     tile measured (docs/tiling.md).
//     Taps are summed in the user's order: the body is the pointwise body.
// The walk needs no division per element (the tile's position comes from the block index once), which is
// most of what the one-element-per-thread variant spends on rank-2 and rank-3 index maps.
//
// The tiled kernel keeps the pointwise plan's parameter struct, body and binding: a tiled plan is a
// pointwise plan plus this schedule (plan_tile), and every element is computed by the same body with the
// same operands, so its bits equal the pointwise kernel's and the reference's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loom/codegen/cuda/device_info.hpp"
#include "loom/codegen/options.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen {

/// Threads per block of every tiled kernel: 8 warps.
inline constexpr int kTileBlock = 256;

enum class TileKind : std::uint8_t { None, Transpose, Stencil };
std::string_view tile_kind_name(TileKind k);

/// One load site staged through shared memory.
struct StagedLoad {
    int site = 0;   // index into PointwisePlan::loads
    int pitch = 0;  // elements per row of its shared tile (tile_a plus the padding)
    bool operator==(const StagedLoad&) const = default;
};

/// A recognized stencil: the taps of one input (load sites with the same strides, different offsets).
struct StencilTaps {
    int input = 0;           // canonical input number (pointwise_inputs order)
    std::vector<int> sites;  // its load sites, in the body's order
    /// Per iteration dimension: the largest shift below and above the first tap (the halo), in elements.
    std::vector<std::int64_t> halo_lo, halo_hi;
    /// Per tap of `sites`: its shift along each iteration dimension from the first tap.
    std::vector<std::vector<std::int64_t>> shifts;
    bool operator==(const StencilTaps&) const = default;
};

/// Taps of a stencil read from the block's tile of their input plus its halo, staged once in shared memory
/// (StencilReuse::SharedHalo): the taps whose shifts from the reference tap lie within the tile's two
/// dimensions (dim_a and the last); taps shifted along an outer dimension stay loads from global memory.
struct StagedHalo {
    int ref = 0;             // the reference tap (a load site); the others' shifts are from it
    std::vector<int> sites;  // the taps read from shared memory, the reference first
    std::vector<std::int64_t> shift_a, shift_b;  // per tap of `sites`: its shift along dim_a and the last
    std::int64_t lo_a = 0, hi_a = 0, lo_b = 0, hi_b = 0;  // the halo: the least and greatest shifts
    int rows = 0, pitch = 0;  // the shared tile: tile_rows + hi_a - lo_a rows of `pitch` elements
    bool operator==(const StagedHalo&) const = default;
};

struct TilePlan {
    TileKind kind = TileKind::None;
    int dim_a = 0;      // the tile's row dimension; its column dimension is the last one (rank - 1)
    int tile_rows = 0;  // elements along dim_a
    int tile_cols = 0;  // elements along the last dimension
    std::vector<StagedLoad> staged;  // Transpose: the sites read through shared memory
    std::vector<StencilTaps> stencils;
    std::vector<StagedHalo> halos;  // Stencil, SharedHalo: the taps staged with their halo
    bool hinted = false;            // the tile shape came from Options::tile
    /// Transposes whose staged loads and outputs share one element size of 4, 2 or 1 bytes: the vector
    /// variant reads the staged operands and writes the outputs in 16-byte vectors of this many elements
    /// (4, 8 or 16). A warp stages 4 rows of 8 vectors and computes V rows of 32 / V vectors, which with rows
    /// of an odd number of words keeps shared memory free of bank conflicts. 1: no vector variant.
    int vector_width = 1;

    bool active() const { return kind != TileKind::None; }
    /// Shared memory of one block, bytes.
    std::size_t shared_bytes(const PointwisePlan& pw) const;
    /// One block per tile, kTileBlock threads. grid_x == 0: nothing to do.
    LaunchConfig launch(const PointwiseBinding& binding) const;
    /// The vector variant when the plan has one, both tile extents divide by the vector width, every staged
    /// load starts 16-byte aligned with row strides that keep it aligned, and every output is contiguous and
    /// 16-byte aligned; else the scalar variant. `inputs`: element 0 of each bound tensor (pointwise_inputs
    /// order), `outputs`: the output pointers.
    Variant select_variant(const PointwisePlan& pw, const PointwiseBinding& binding,
                           std::span<const void* const> inputs, std::span<void* const> outputs) const;
    bool operator==(const TilePlan&) const = default;
    std::uint64_t hash() const;
    /// Lines for the kernel banner and LOOM_EXPLAIN=fusion (tile, halo, staged loads).
    std::string to_string(const PointwisePlan& pw) const;
    /// How stencil `sc`'s taps are reused: from L1, from a halo tile, or both.
    std::string reuse_text(const StencilTaps& sc) const;
};

/// Why no tile was taken, for the explain log (empty when `plan.active()`).
struct PlannedTile {
    TilePlan plan;
    std::string note;  // a recognized pattern and its schedule, or why a near-pattern was not taken
};

/// Chooses the tiled schedule of the planned pointwise kernel of `outputs` (plan_pointwise's result), or
/// none (kind None, with the reason in `note` when something looked like a transpose or a stencil).
/// `hint` (Options::tile; empty: Loom chooses) gives rows (along dim_a) and columns (along the last
/// dimension); an impossible hint raises loom::Error naming the limit it breaks: threads per block (a tile
/// smaller than a block), the divisibility the kernel needs (columns a multiple of 32 lanes, rows of 8
/// warps), registers (more than 64 elements per thread) or shared memory per block.
/// `reuse` (Options::stencil_reuse) decides how a stencil's taps are reused (L1 or a shared halo tile).
PlannedTile plan_tile(const std::vector<ir::NodePtr>& outputs, const PlannedPointwise& pw,
                      const DeviceInfo& device, const TileHint& hint,
                      StencilReuse reuse = StencilReuse::Auto);

}  // namespace loom::codegen
