// plan_scan: the GPU plan of one scan node (scan_plan.hpp).
#include "loom/codegen/cuda/scan_plan.hpp"

#include <fmt/format.h>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/hash.hpp"
#include "loom/ir/view.hpp"

namespace loom::codegen {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

// Merges adjacent axes of `extent` whose strides in both `a` and `b` lay them out one after the other, and
// drops axes of extent 1: the row index then walks fewer axes.
void merge_axes(std::vector<std::int64_t>& extent, std::vector<std::int64_t>& a,
                std::vector<std::int64_t>& b) {
    std::vector<std::int64_t> e2, a2, b2;
    for (std::size_t d = 0; d < extent.size(); ++d) {
        if (extent[d] == 1) continue;
        if (!e2.empty() && a2.back() == a[d] * extent[d] && b2.back() == b[d] * extent[d]) {
            e2.back() *= extent[d];
            a2.back() = a[d];
            b2.back() = b[d];
            continue;
        }
        e2.push_back(extent[d]);
        a2.push_back(a[d]);
        b2.push_back(b[d]);
    }
    extent = std::move(e2);
    a = std::move(a2);
    b = std::move(b2);
}

}  // namespace

const char* scan_path_name(ScanPath p) {
    switch (p) {
        case ScanPath::Warp:
            return "warp";
        case ScanPath::Tile:
            return "tile";
        case ScanPath::Tree:
            return "tree";
    }
    return "?";
}

DType scan_accumulator(DType out) {
    if (!is_float(out)) return DType::Int64;
    return out == DType::Float64 ? DType::Float64 : DType::Float32;
}

std::int64_t PlannedScan::rows() const {
    std::int64_t r = 1;
    for (std::int64_t e : outer) r *= e;
    return r;
}

std::int64_t PlannedScan::tiles() const {
    return (length + ir::kScanTile - 1) / ir::kScanTile;
}

std::uint64_t ScanPlan::hash() const {
    Hasher h;
    h.add(0x7363616e00000001ull);
    h.add(static_cast<std::uint64_t>(op));
    h.add(static_cast<std::uint64_t>(in));
    h.add(static_cast<std::uint64_t>(acc));
    h.add(static_cast<std::uint64_t>(out));
    h.add(exclusive ? 1u : 0u);
    h.add(static_cast<std::uint64_t>(path));
    h.add(static_cast<std::uint64_t>(threads));
    h.add(static_cast<std::uint64_t>(row_warps));
    return h.digest();
}

std::string ScanPlan::to_string() const {
    return fmt::format(
        "{}{} of {} -> {}, accumulated in {}\n"
        "path: {}\n"
        "block: {} threads of {} elements (a tile of {}): thread totals, Kogge-Stone over lanes (shuffles) "
        "and over warps (shared memory), the thread prefixes, the outputs",
        ir::op_name(op), exclusive ? " (exclusive)" : "", name(in), name(out), name(acc),
        path == ScanPath::Warp
            ? "one warp per row of at most 256 elements, 8 rows per block (no warp scan, no "
              "carry)"
        : path == ScanPath::Tile
            ? (row_warps == 8
                   ? std::string("one block per row of at most one tile (no carry)")
                   : fmt::format("{} warps per row of at most {} elements, {} rows per block (no carry)",
                                 row_warps, row_warps * 32 * ir::kScanThreadElements, 8 / row_warps))
            : "single pass: a block per tile in launch order (a counter), carries from "
              "the pairwise tree of tile "
              "aggregates that earlier tiles publish (release / acquire)",
        threads, ir::kScanThreadElements, ir::kScanTile);
}

PlannedScan plan_scan(const FusedKernel& k, const LayoutOf& layout_of) {
    if (k.outputs.empty() || !ir::is_scan(k.outputs[0]->op()))
        throw InternalError(fmt::format("plan_scan(): kernel {} is not one scan node", k.name));
    PlannedScan ps;
    ps.node = k.outputs[0];
    const ir::Node& n = *ps.node;
    const ir::Node& x = *n.operand(0);
    const std::optional<ir::StridedView> view =
        ir::view_of_input(x, [&](const ir::Node& in) { return layout_of(in).strides; });
    if (!view)
        throw NotFusable(fmt::format(
            "the operand of {} is a reshape that has no strides for its input's layout", where_of(n)));
    ps.input = view->base;
    ps.in_offset = view->offset;
    const Strides out = contiguous_strides(n.shape());
    const auto axis = static_cast<std::size_t>(ir::scan_axis(n));
    ps.length = n.shape()[axis];
    ps.in_step = view->strides[axis];
    ps.out_step = out[axis];
    for (std::size_t d = 0; d < n.shape().size(); ++d) {
        if (d == axis) continue;
        ps.outer.push_back(n.shape()[d]);
        ps.in_outer.push_back(view->strides[d]);
        ps.out_outer.push_back(out[d]);
    }
    merge_axes(ps.outer, ps.in_outer, ps.out_outer);
    if (ps.outer.size() > static_cast<std::size_t>(kScanOuterAxes))
        throw Error(
            fmt::format("{}(): {} axes besides the scanned one that do not merge; a scan kernel takes at "
                        "most {} ({})",
                        ir::op_name(n.op()), ps.outer.size(), kScanOuterAxes, short_location(n.loc())));
    ScanPlan& p = ps.plan;
    p.op = n.op();
    p.in = x.dtype();
    p.out = n.dtype();
    p.acc = scan_accumulator(n.dtype());
    p.exclusive = ir::scan_exclusive(n);
    p.path = ps.length > ir::kScanTile                  ? ScanPath::Tree
             : ps.length > 32 * ir::kScanThreadElements ? ScanPath::Tile
                                                        : ScanPath::Warp;
    p.threads = ir::kScanThreads;
    const std::int64_t warps =
        (ps.length + 32 * ir::kScanThreadElements - 1) / (32 * ir::kScanThreadElements);
    p.row_warps = p.path == ScanPath::Tile   ? (warps <= 2   ? 2
                                                : warps <= 4 ? 4
                                                             : 8)
                  : p.path == ScanPath::Warp ? 1
                                             : 8;
    return ps;
}

}  // namespace loom::codegen
