// plan_tile: recognizes transposed loads and stencils in a planned pointwise kernel and chooses its tiled
// schedule (tile_plan.hpp).
#include "loom/codegen/cuda/tile_plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <utility>

#include "../plan/pointwise_graph.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/hash.hpp"

namespace loom::codegen {

namespace {

constexpr int kWarps = kTileBlock / 32;
constexpr int kMaxElementsPerThread = 64;

// Elements per row of a staged tile of `rows` elements of `bytes` each: rows padded to an odd number of
// 4-byte words (a warp's column-wise reads then fall into 32 distinct banks; 1- and 2-byte elements share
// words); 8-byte elements, which a warp reads in two half-warp phases, padded to an odd element count.
int padded_pitch(int rows, std::size_t bytes) {
    for (int pitch = rows;; ++pitch) {
        const std::size_t b = static_cast<std::size_t>(pitch) * bytes;
        if (bytes >= 8) {
            if (pitch % 2 == 1) return pitch;
        } else if (b % 4 == 0 && (b / 4) % 2 == 1) {
            return pitch;
        }
    }
}

// The element size shared by a transpose's staged loads and its outputs (every output contiguous), or 0
// when they differ (a cast on the way) or an output is a view: the vector variant needs one size.
std::size_t uniform_element_size(const TilePlan& tp, const PointwisePlan& pw) {
    std::size_t size = 0;
    auto same = [&](std::size_t s) {
        if (size == 0) size = s;
        return size == s;
    };
    for (const StagedLoad& st : tp.staged)
        if (!same(itemsize(pw.loads[static_cast<std::size_t>(st.site)].dtype))) return 0;
    for (const OperandPlan& o : pw.outputs)
        if (o.access != Access::Contiguous || !same(itemsize(o.dtype))) return 0;
    return size;
}

// The shift of each dimension that makes `delta` elements under strides `coef` (largest stride first,
// rounded to the nearest whole shift); false when the offset is not a sum of whole shifts.
bool shifts_of(std::int64_t delta, const std::vector<std::int64_t>& coef, std::vector<std::int64_t>& shift) {
    shift.assign(coef.size(), 0);
    std::vector<std::size_t> order;
    for (std::size_t d = 0; d < coef.size(); ++d)
        if (coef[d] != 0) order.push_back(d);
    std::sort(order.begin(), order.end(),
              [&](std::size_t x, std::size_t y) { return std::llabs(coef[x]) > std::llabs(coef[y]); });
    for (std::size_t d : order) {
        const std::int64_t c = coef[d];
        const std::int64_t half = std::llabs(c) / 2;
        const std::int64_t s = delta >= 0 ? (delta + half) / c : -((-delta + half) / c);
        shift[d] = s;
        delta -= s * c;
    }
    return delta == 0;
}

// The shared halo tiles of a stencil plan (StagedHalo): per stencil, the largest group of taps with the same
// shifts along every dimension outside the tile's two, staged from the group's first tap. False when no group
// has two taps.
bool plan_halos(TilePlan& tp, const PointwisePlan& pw) {
    const std::size_t R = static_cast<std::size_t>(pw.rank);
    const std::size_t da = static_cast<std::size_t>(tp.dim_a), db = R - 1;
    for (const StencilTaps& sc : tp.stencils) {
        const std::vector<std::vector<std::int64_t>>& shifts = sc.shifts;
        // Group the taps by their shifts outside the tile's dimensions; keep the largest group (the first on
        // a tie).
        std::map<std::vector<std::int64_t>, std::vector<std::size_t>> groups;
        std::vector<std::vector<std::int64_t>> order;
        for (std::size_t k = 0; k < sc.sites.size(); ++k) {
            std::vector<std::int64_t> outer;
            for (std::size_t d = 0; d < R; ++d)
                if (d != da && d != db) outer.push_back(shifts[k][d]);
            if (!groups.count(outer)) order.push_back(outer);
            groups[outer].push_back(k);
        }
        const std::vector<std::size_t>* best = nullptr;
        for (const auto& key : order)
            if (!best || groups[key].size() > best->size()) best = &groups[key];
        if (best->size() < 2) continue;
        StagedHalo h;
        const std::size_t r0 = (*best)[0];
        h.ref = sc.sites[r0];
        for (std::size_t k : *best) {
            h.sites.push_back(sc.sites[k]);
            h.shift_a.push_back(shifts[k][da] - shifts[r0][da]);
            h.shift_b.push_back(shifts[k][db] - shifts[r0][db]);
        }
        h.lo_a = *std::min_element(h.shift_a.begin(), h.shift_a.end());
        h.hi_a = *std::max_element(h.shift_a.begin(), h.shift_a.end());
        h.lo_b = *std::min_element(h.shift_b.begin(), h.shift_b.end());
        h.hi_b = *std::max_element(h.shift_b.begin(), h.shift_b.end());
        h.rows = tp.tile_rows + static_cast<int>(h.hi_a - h.lo_a);
        h.pitch =
            tp.tile_cols + static_cast<int>(h.hi_b - h.lo_b);  // lanes read along a row: no padding needed
        tp.halos.push_back(std::move(h));
    }
    return !tp.halos.empty();
}

std::string input_name(const ir::Node& in, int number) {
    return in.label().empty() ? fmt::format("input {}", number)
                              : fmt::format("input {} \"{}\"", number, in.label());
}

}  // namespace

std::string_view tile_kind_name(TileKind k) {
    switch (k) {
        case TileKind::None:
            return "none";
        case TileKind::Transpose:
            return "transpose";
        case TileKind::Stencil:
            return "stencil";
    }
    return "?";
}

std::size_t TilePlan::shared_bytes(const PointwisePlan& pw) const {
    std::size_t b = 0;
    for (const StagedLoad& s : staged)
        b += static_cast<std::size_t>(tile_cols) * static_cast<std::size_t>(s.pitch) *
             itemsize(pw.loads[static_cast<std::size_t>(s.site)].dtype);
    for (const StagedHalo& h : halos)
        b += static_cast<std::size_t>(h.rows) * static_cast<std::size_t>(h.pitch) *
             itemsize(pw.loads[static_cast<std::size_t>(h.ref)].dtype);
    return b;
}

LaunchConfig TilePlan::launch(const PointwiseBinding& binding) const {
    LaunchConfig lc;
    if (!active() || binding.numel == 0) return lc;
    const std::size_t R = binding.extents.size();
    std::int64_t blocks = 1;
    for (std::size_t d = 0; d + 1 < R; ++d)
        if (static_cast<int>(d) != dim_a) blocks *= binding.extents[d];
    blocks *= (binding.extents[static_cast<std::size_t>(dim_a)] + tile_rows - 1) / tile_rows;
    blocks *= (binding.extents[R - 1] + tile_cols - 1) / tile_cols;
    if (blocks > 2147483647)
        throw Error(fmt::format("tiled kernel: {} tiles exceed the grid's 2^31 - 1 blocks", blocks));
    lc.grid_x = static_cast<std::uint32_t>(blocks);
    lc.block_x = kTileBlock;
    return lc;
}

Variant TilePlan::select_variant(const PointwisePlan& pw, const PointwiseBinding& b,
                                 std::span<const void* const> inputs, std::span<void* const> outputs) const {
    const int V = vector_width;
    if (V <= 1) return Variant::Scalar;
    const std::size_t R = b.extents.size();
    if (b.extents[static_cast<std::size_t>(dim_a)] % V != 0 || b.extents[R - 1] % V != 0)
        return Variant::Scalar;
    auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    for (const StagedLoad& st : staged) {
        const std::size_t s = static_cast<std::size_t>(st.site);
        if (!aligned(site_pointer(pw, b, inputs, s))) return Variant::Scalar;
        for (std::size_t d = 0; d < R; ++d)
            if (static_cast<int>(d) != dim_a && b.sites[s].coefs[d] % V != 0) return Variant::Scalar;
    }
    for (std::size_t o = 0; o < outputs.size(); ++o)
        if (pw.outputs[o].access != Access::Contiguous || !aligned(outputs[o])) return Variant::Scalar;
    return Variant::Vector;
}

std::uint64_t TilePlan::hash() const {
    Hasher h;
    h.add(0x74696c6500000001ull);
    h.add(static_cast<std::uint64_t>(kind));
    h.add(static_cast<std::uint64_t>(dim_a));
    h.add(static_cast<std::uint64_t>(tile_rows));
    h.add(static_cast<std::uint64_t>(tile_cols));
    for (const StagedLoad& s : staged) {
        h.add(static_cast<std::uint64_t>(s.site));
        h.add(static_cast<std::uint64_t>(s.pitch));
    }
    h.add(static_cast<std::uint64_t>(vector_width));
    for (const StagedHalo& sh : halos) {
        h.add(static_cast<std::uint64_t>(sh.ref));
        for (std::size_t k = 0; k < sh.sites.size(); ++k) {
            h.add(static_cast<std::uint64_t>(sh.sites[k]));
            h.add(static_cast<std::uint64_t>(sh.shift_a[k]));
            h.add(static_cast<std::uint64_t>(sh.shift_b[k]));
        }
        h.add(static_cast<std::uint64_t>(sh.rows));
        h.add(static_cast<std::uint64_t>(sh.pitch));
    }
    return h.digest();
}

std::string TilePlan::reuse_text(const StencilTaps& sc) const {
    std::size_t in_halo = 0;
    for (const StagedHalo& h : halos)
        for (int site : h.sites)
            in_halo += static_cast<std::size_t>(std::count(sc.sites.begin(), sc.sites.end(), site));
    if (in_halo == 0) return "neighbours re-read from L1 within the tile";
    if (in_halo == sc.sites.size()) return "every tap read from the shared halo tile below";
    return fmt::format(
        "{} taps read from the shared halo tile below, {} (shifted along an outer dimension) from L1",
        in_halo, sc.sites.size() - in_halo);
}

std::string TilePlan::to_string(const PointwisePlan& pw) const {
    if (!active()) return {};
    std::string s;
    auto out = std::back_inserter(s);
    const int R = pw.rank;
    fmt::format_to(
        out,
        "tiled plan: {}, tile {} x {}{} (rows along dimension {}, columns along dimension {}), {} threads, "
        "{} elements per thread, one block per tile\n",
        tile_kind_name(kind), tile_rows, tile_cols, hinted ? " (the options' tile hint)" : "", dim_a, R - 1,
        kTileBlock, tile_rows * tile_cols / kTileBlock);
    for (const StagedLoad& st : staged) {
        const DType t = pw.loads[static_cast<std::size_t>(st.site)].dtype;
        fmt::format_to(
            out,
            "staged: in{} ({}) read along dimension {} into shared memory, {} x {} elements (rows padded to "
            "{} bytes: no bank conflicts)\n",
            st.site, name(t), dim_a, tile_cols, st.pitch, static_cast<std::size_t>(st.pitch) * itemsize(t));
    }
    for (const StencilTaps& sc : stencils) {
        std::vector<std::string> halo;
        for (int d = 0; d < R; ++d)
            if (sc.halo_lo[static_cast<std::size_t>(d)] != 0 || sc.halo_hi[static_cast<std::size_t>(d)] != 0)
                halo.push_back(fmt::format("dimension {} shifts {}..{}", d,
                                           sc.halo_lo[static_cast<std::size_t>(d)],
                                           sc.halo_hi[static_cast<std::size_t>(d)]));
        std::vector<std::string> sites;
        for (int k : sc.sites) sites.push_back(fmt::format("in{}", k));
        fmt::format_to(out, "stencil: {} taps of input {} ({}); halo from the first tap: {}; {}\n",
                       sc.sites.size(), sc.input, fmt::join(sites, ", "),
                       halo.empty() ? std::string("none") : fmt::format("{}", fmt::join(halo, ", ")),
                       reuse_text(sc));
    }
    for (const StagedHalo& h : halos) {
        std::vector<std::string> sites;
        for (int k : h.sites) sites.push_back(fmt::format("in{}", k));
        fmt::format_to(out,
                       "halo: {} taps ({}) read from shared memory, a tile of {} x {} elements staged from "
                       "in{} (the tile "
                       "plus shifts {}..{} along dimension {} and {}..{} along dimension {})\n",
                       h.sites.size(), fmt::join(sites, ", "), h.rows, h.pitch, h.ref, h.lo_a, h.hi_a, dim_a,
                       h.lo_b, h.hi_b, R - 1);
    }
    if (!staged.empty() || !halos.empty())
        fmt::format_to(out, "shared memory: {} bytes per block\n", shared_bytes(pw));
    if (vector_width > 1)
        fmt::format_to(
            out,
            "vector variant: {}-byte vectors of {} elements for the staged loads and the stores, when the "
            "tile's extents divide by {} and the pointers are aligned\n",
            16, vector_width, vector_width);
    return s;
}

namespace {

// Rank 1 after coalescing, or nothing to run: no tile. The flat walk of the pointwise kernel already reads
// neighbouring taps from L1; the note says so for an input read at several taps.
std::string rank1_note(const PointwisePlan& pw, const PointwiseBinding& b,
                       const std::vector<const ir::Node*>& inputs) {
    std::string note;
    std::map<int, int> per_input;
    for (const OperandPlan& o : pw.loads)
        if (!o.index && o.access != Access::Scalar) ++per_input[o.input];
    for (const auto& [in, count] : per_input)
        if (count >= 2 && b.numel > 0)
            note = fmt::format(
                "{} taps of {} over a space of rank 1: no tile (the pointwise kernel's flat walk reads "
                "neighbouring taps from L1)",
                count, input_name(*inputs[static_cast<std::size_t>(in)], in));
    return note;
}

// Why no tile can serve the kernel, whatever its loads: an output view whose unit stride is not along the
// last dimension (it is written where it lies), or a load through a reshape that is not a strided view (no
// tile walks it). Empty when a tile can.
std::string untileable(const PointwisePlan& pw) {
    for (const OperandPlan& o : pw.outputs)
        if (o.access != Access::Contiguous && !o.unit_inner)
            return "no tile: an output is a view whose unit stride is not along the last dimension (written "
                   "where it lies)";
    for (const OperandPlan& o : pw.loads)
        if (o.access == Access::Gathered)
            return "no tile: a load goes through a reshape that is not a strided view";
        else if (o.access == Access::Indirect)
            return "no tile: a load is a gather's, at positions the kernel computes";
    return {};
}

// Whether load site `s` is transposed along dimension `d` (not the last): unit stride along `d` and a longer
// one along the last dimension, which the warps walk, so their reads of it would not coalesce.
bool transposed_along(const PointwisePlan& pw, const PointwiseBinding& b, std::size_t s, int d) {
    const OperandPlan& o = pw.loads[s];
    if (o.index || o.access != Access::Strided) return false;
    const auto& c = b.sites[s].coefs;
    return c[static_cast<std::size_t>(d)] == 1 && c.back() != 0 && c.back() != 1;
}

// A transpose: the tile's rows go along the dimension (other than the last) where the transposed loads of
// most bytes per element have their unit stride, and those loads are staged through shared memory, read
// along the rows and used along the columns.
void find_transpose(const PointwisePlan& pw, const PointwiseBinding& b, TilePlan& tp) {
    const int R = pw.rank;
    std::vector<std::int64_t> staged_bytes(static_cast<std::size_t>(R), 0);
    for (std::size_t s = 0; s < pw.loads.size(); ++s)
        for (int d = 0; d + 1 < R; ++d)
            if (transposed_along(pw, b, s, d))
                staged_bytes[static_cast<std::size_t>(d)] +=
                    static_cast<std::int64_t>(itemsize(pw.loads[s].dtype));
    const auto best = std::max_element(staged_bytes.begin(), staged_bytes.end() - 1);
    if (*best == 0) return;
    tp.kind = TileKind::Transpose;
    tp.dim_a = static_cast<int>(best - staged_bytes.begin());
    for (std::size_t s = 0; s < pw.loads.size(); ++s)
        if (transposed_along(pw, b, s, tp.dim_a)) tp.staged.push_back({static_cast<int>(s), 0});
}

// The taps of input `in`, read at `sites`, when they make a stencil: one set of strides, and offsets that are
// whole shifts of one another along the dimensions, not all the same (the halo from the first tap). Else
// nothing, and `why` says what the loads do instead.
std::optional<StencilTaps> stencil_taps(const PointwiseBinding& b, int in, const std::vector<int>& sites,
                                        int R, std::string& why) {
    const auto site = [&](int s) -> const PointwiseBinding::Site& {
        return b.sites[static_cast<std::size_t>(s)];
    };
    const auto& c0 = site(sites[0]).coefs;
    bool same = true;
    for (int s : sites) same = same && site(s).coefs == c0;
    if (!same) {
        why = "walk it with different strides";
        return std::nullopt;
    }
    StencilTaps taps;
    taps.input = in;
    taps.halo_lo.assign(static_cast<std::size_t>(R), 0);
    taps.halo_hi.assign(static_cast<std::size_t>(R), 0);
    bool shifts = true;
    for (int s : sites) {
        std::vector<std::int64_t> sh;
        shifts = shifts && shifts_of(site(s).offset - site(sites[0]).offset, c0, sh);
        for (int d = 0; d < R && shifts; ++d) {
            const auto dd = static_cast<std::size_t>(d);
            taps.halo_lo[dd] = std::min(taps.halo_lo[dd], sh[dd]);
            taps.halo_hi[dd] = std::max(taps.halo_hi[dd], sh[dd]);
        }
        taps.shifts.push_back(std::move(sh));
    }
    bool distinct = false;
    for (int s : sites) distinct = distinct || site(s).offset != site(sites[0]).offset;
    if (!shifts || !distinct) {
        why = distinct ? "are not whole shifts of one another" : "read the same elements";
        return std::nullopt;
    }
    taps.sites = sites;
    return taps;
}

// Stencils: the inputs loaded at several sites (other than scalars, row broadcasts and index sites) whose
// taps make a stencil (stencil_taps). Returns the near misses, for the note: the inputs loaded at several
// sites that are not a stencil, and why.
std::string find_stencils(const PointwisePlan& pw, const PointwiseBinding& b,
                          const std::vector<const ir::Node*>& inputs, TilePlan& tp) {
    std::map<int, std::vector<int>> by_input;
    for (std::size_t s = 0; s < pw.loads.size(); ++s) {
        const OperandPlan& o = pw.loads[s];
        if (o.index || o.access == Access::Scalar || o.access == Access::RowBroadcast) continue;
        by_input[o.input].push_back(static_cast<int>(s));
    }
    std::string near;
    for (const auto& [in, sites] : by_input) {
        if (sites.size() < 2) continue;
        std::string why;
        if (std::optional<StencilTaps> taps = stencil_taps(b, in, sites, pw.rank, why)) {
            tp.stencils.push_back(std::move(*taps));
            continue;
        }
        near += fmt::format("{}not a stencil: the {} loads of {} {}", near.empty() ? "" : "; ", sites.size(),
                            input_name(*inputs[static_cast<std::size_t>(in)], in), why);
    }
    return near;
}

// Sets the tile's rows and columns, and the padded pitch of each staged load for them.
void set_shape(TilePlan& tp, const PointwisePlan& pw, int rows, int cols) {
    tp.tile_rows = rows;
    tp.tile_cols = cols;
    for (StagedLoad& st : tp.staged)
        st.pitch = padded_pitch(rows, itemsize(pw.loads[static_cast<std::size_t>(st.site)].dtype));
}

// The hinted tile, as its errors name it.
std::string hinted_tile(const TileHint& hint, TileKind kind, const std::vector<ir::NodePtr>& outputs) {
    return fmt::format("tile({}, {}{}) for the tiled {} at {}", hint.rows, hint.cols,
                       hint.depth ? fmt::format(", {}", hint.depth) : std::string(), tile_kind_name(kind),
                       short_location(outputs[0]->loc()));
}

// A hinted tile stands as given, or raises loom::Error naming the limit it breaks: rows and columns only,
// positive; at least a thread per element; columns in whole warps; a transpose's rows in whole warps too (its
// lanes read the transposed operand along the rows); rows in whole multiples of the block's warps; at most
// kMaxElementsPerThread elements per thread; staged loads within a block's shared memory.
void apply_hint(TilePlan& tp, const PointwisePlan& pw, const TileHint& hint, const DeviceInfo& device,
                const std::vector<ir::NodePtr>& outputs) {
    const std::string what = hinted_tile(hint, tp.kind, outputs);
    const std::int64_t elements = static_cast<std::int64_t>(hint.rows) * hint.cols;
    if (hint.depth != 0)
        throw Error(
            fmt::format("{}: a tiled {} takes rows and columns, not a depth", what, tile_kind_name(tp.kind)));
    if (hint.rows <= 0 || hint.cols <= 0)
        throw Error(fmt::format("{}: rows and columns must both be given and positive", what));
    if (elements < kTileBlock)
        throw Error(fmt::format("{}: {} elements are fewer than the {} threads per block", what, elements,
                                kTileBlock));
    if (hint.cols % 32 != 0)
        throw Error(fmt::format("{}: columns must be a multiple of 32 (the lanes of a warp)", what));
    if (tp.kind == TileKind::Transpose && hint.rows % 32 != 0)
        throw Error(fmt::format(
            "{}: rows must be a multiple of 32 (the lanes read the transposed operand along the rows)",
            what));
    if (hint.rows % kWarps != 0)
        throw Error(fmt::format("{}: rows must be a multiple of {} (the warps of a block)", what, kWarps));
    if (elements > static_cast<std::int64_t>(kMaxElementsPerThread) * kTileBlock)
        throw Error(fmt::format("{}: {} elements per thread exceed the {} that fit in registers", what,
                                elements / kTileBlock, kMaxElementsPerThread));
    set_shape(tp, pw, hint.rows, hint.cols);
    if (tp.shared_bytes(pw) > device.shared_mem_per_block)
        throw Error(
            fmt::format("{}: its staged loads take {} bytes of shared memory, above the {} bytes per block",
                        what, tp.shared_bytes(pw), device.shared_mem_per_block));
    tp.hinted = true;
}

// The transpose's own tile: 64 x 64, and 128 rows for 1- and 2-byte elements, so that the vector variant's
// 16-element vectors fill a warp's staging reads (8 vectors of 16 along dim_a): 128 x 32 for 1-byte elements,
// 128 x 64 for 2-byte ones, each faster than 64 x 64 (docs/performance.md). Smaller while the staged loads
// do not fit a block's shared memory; false when not even 32 x 32 fits.
bool default_transpose_shape(TilePlan& tp, const PointwisePlan& pw, const DeviceInfo& device) {
    const std::size_t size = uniform_element_size(tp, pw);
    if (size == 1)
        set_shape(tp, pw, 128, 32);
    else if (size == 2)
        set_shape(tp, pw, 128, 64);
    else
        set_shape(tp, pw, 64, 64);
    for (auto [rows, cols] : {std::pair{64, 64}, std::pair{32, 64}, std::pair{32, 32}})
        if (tp.shared_bytes(pw) > device.shared_mem_per_block) set_shape(tp, pw, rows, cols);
    return tp.shared_bytes(pw) <= device.shared_mem_per_block;
}

// The stencil's own tile (docs/performance.md): 32 x 64 for a 2-D stencil (S1); a 3-D stencil, whose taps
// along the outer dimension come from other blocks through L2, runs best in flat 8 x 128 tiles (S2).
void default_stencil_shape(TilePlan& tp, const PointwisePlan& pw) {
    if (pw.rank >= 3)
        set_shape(tp, pw, 8, 128);
    else
        set_shape(tp, pw, 32, 64);
}

// Every thread holds its elements' direct loads at once (they are issued together): keep that within
// kVectorRegisterBudget registers by taking fewer rows, down to a warp's rows for a transpose (its lanes
// read along the rows) and a row per warp for a stencil.
void cap_rows_for_registers(TilePlan& tp, const PointwisePlan& pw) {
    int words = 0;
    for (std::size_t s = 0; s < pw.loads.size(); ++s) {
        const OperandPlan& o = pw.loads[s];
        bool staged = false;
        for (const StagedLoad& st : tp.staged) staged = staged || st.site == static_cast<int>(s);
        if (!staged && !o.index && o.access != Access::Scalar) words += register_words(o.dtype);
    }
    const int min_rows = tp.kind == TileKind::Transpose ? 32 : kWarps;
    while (tp.tile_rows > min_rows &&
           tp.tile_rows * tp.tile_cols / kTileBlock * words > kVectorRegisterBudget)
        set_shape(tp, pw, tp.tile_rows / 2, tp.tile_cols);
}

// The stencil's shared halo tiles (StencilReuse::SharedHalo). None, with a `note`, when no stencil has two
// taps shifted within the tile's dimensions or when the tiles would not fit a block's shared memory (an error
// for a hinted tile, which stands as given): the taps then come from L1.
void plan_shared_halo(TilePlan& tp, const PointwisePlan& pw, const DeviceInfo& device, const TileHint& hint,
                      const std::vector<ir::NodePtr>& outputs, std::string& note) {
    if (!plan_halos(tp, pw)) {
        note = "no shared halo: no stencil has two taps shifted within the tile's dimensions; taps from L1";
        return;
    }
    if (tp.shared_bytes(pw) <= device.shared_mem_per_block) return;
    if (tp.hinted)
        throw Error(fmt::format(
            "{}: its halo tiles take {} bytes of shared memory, above the {} bytes per block",
            hinted_tile(hint, tp.kind, outputs), tp.shared_bytes(pw), device.shared_mem_per_block));
    tp.halos.clear();
    note = "no shared halo: it would not fit in shared memory; taps from L1";
}

// The transpose's vector variant moves 16-byte vectors of V = 16 / size elements, so the staged loads and the
// outputs must share one element size of 4, 2 or 1 bytes, and the tile must hold whole warps of vectors in
// both phases: 8 vectors along dim_a per warp row when staging, 32 columns when storing.
void plan_transpose_vector(TilePlan& tp, const PointwisePlan& pw) {
    const std::size_t size = uniform_element_size(tp, pw);
    const int V = size == 4 || size == 2 || size == 1 ? static_cast<int>(16 / size) : 1;
    if (V > 1 && tp.tile_rows % (8 * V) == 0 && tp.tile_cols % 32 == 0) tp.vector_width = V;
}

}  // namespace

PlannedTile plan_tile(const std::vector<ir::NodePtr>& outputs, const PlannedPointwise& planned,
                      const DeviceInfo& device, const TileHint& hint, StencilReuse reuse) {
    // Taps from L1 beat a shared halo tile at every tile tried (docs/performance.md): the halo's staging pass
    // and barrier cost more than the L1 hits it saves, so L1 is the choice; the halo stays as an option.
    if (reuse == StencilReuse::Auto) reuse = StencilReuse::L1;
    PlannedTile result;
    const PointwisePlan& pw = planned.plan;
    const PointwiseBinding& b = planned.binding;
    const auto inputs = pointwise_inputs(outputs);
    if (b.numel == 0 || pw.rank < 2) {
        result.note = rank1_note(pw, b, inputs);
        return result;
    }
    result.note = untileable(pw);
    if (!result.note.empty()) return result;

    // The pattern: a transpose where there are transposed loads, else a stencil, over the last two
    // dimensions.
    TilePlan tp;
    find_transpose(pw, b, tp);
    const std::string near = find_stencils(pw, b, inputs, tp);
    if (!tp.active() && !tp.stencils.empty()) {
        tp.kind = TileKind::Stencil;
        tp.dim_a = pw.rank - 2;
    }
    if (!tp.active()) {
        result.note = near;
        return result;
    }

    // The tile: the hint as given, else the pattern's own, with no more rows than the registers allow.
    if (!hint.empty()) {
        apply_hint(tp, pw, hint, device, outputs);
    } else if (tp.kind == TileKind::Stencil) {
        default_stencil_shape(tp, pw);
    } else if (!default_transpose_shape(tp, pw, device)) {
        result.note = fmt::format(
            "no tile: {} transposed loads would take {} bytes of shared memory, above the {} per block",
            tp.staged.size(), tp.shared_bytes(pw), device.shared_mem_per_block);
        return result;
    }
    if (hint.empty()) cap_rows_for_registers(tp, pw);
    if (tp.kind == TileKind::Stencil && reuse == StencilReuse::SharedHalo)
        plan_shared_halo(tp, pw, device, hint, outputs, result.note);
    if (tp.kind == TileKind::Transpose) plan_transpose_vector(tp, pw);
    if (result.note.empty())
        result.note = near;
    else if (!near.empty())
        result.note += "; " + near;
    result.plan = std::move(tp);
    return result;
}

}  // namespace loom::codegen
