// plan_scatter: the GPU plan of one scatter node (scatter_plan.hpp).
#include "loom/codegen/cuda/scatter_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/hash.hpp"
#include "loom/ir/view.hpp"

namespace loom::codegen {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

// Merges adjacent column axes whose strides in all four arrays lay them out one after the other, and drops
// axes of extent 1: a column's offsets then walk fewer axes.
void merge_axes(std::vector<std::int64_t>& extent, std::array<std::vector<std::int64_t>, 4>& s) {
    std::vector<std::int64_t> e2;
    std::array<std::vector<std::int64_t>, 4> s2;
    for (std::size_t d = 0; d < extent.size(); ++d) {
        if (extent[d] == 1) continue;
        bool joins = !e2.empty();
        for (int o = 0; joins && o < 4; ++o) joins = s2[o].back() == s[o][d] * extent[d];
        if (joins) {
            e2.back() *= extent[d];
            for (int o = 0; o < 4; ++o) s2[o].back() = s[o][d];
            continue;
        }
        e2.push_back(extent[d]);
        for (int o = 0; o < 4; ++o) s2[o].push_back(s[o][d]);
    }
    extent = std::move(e2);
    s = std::move(s2);
}

}  // namespace

const char* scatter_path_name(ScatterPath p) {
    switch (p) {
        case ScatterPath::Last:
            return "last";
        case ScatterPath::Sorted:
            return "sorted";
        case ScatterPath::Atomic:
            return "atomic";
    }
    return "?";
}

DType scatter_accumulator(DType dtype) {
    if (!is_float(dtype)) return DType::Int64;
    return dtype == DType::Float64 ? DType::Float64 : DType::Float32;
}

std::int64_t PlannedScatter::columns() const {
    std::int64_t c = 1;
    for (std::int64_t e : col_extents) c *= e;
    return c;
}

std::int64_t PlannedScatter::blocks() const {
    const std::int64_t c = columns();
    if (c == 0 || extent == 0) return 0;
    const std::int64_t bytes = 8 * work_words();
    const std::int64_t fit =
        bytes == 0 ? kScatterMaxBlocks : std::max<std::int64_t>(1, kScatterWorkspaceBudget / bytes);
    return std::min({c, kScatterMaxBlocks, fit});
}

std::int64_t PlannedScatter::work_words() const {
    switch (plan.path) {
        case ScatterPath::Last:
            return extent;
        case ScatterPath::Sorted:
            // cnt, start, cstart (n + 1), rank, sorted, and at most ceil(m / 256) + min(n, m) chunk partials.
            return 3 * extent + 1 + 2 * length + (length + 255) / 256 + std::min(extent, length);
        case ScatterPath::Atomic:
            return 0;
    }
    return 0;
}

std::uint64_t ScatterPlan::hash() const {
    Hasher h;
    h.add(0x7363617474657201ull);
    h.add(static_cast<std::uint64_t>(op));
    h.add(static_cast<std::uint64_t>(dtype));
    h.add(static_cast<std::uint64_t>(acc));
    h.add(static_cast<std::uint64_t>(index));
    h.add(static_cast<std::uint64_t>(mode));
    h.add(static_cast<std::uint64_t>(path));
    h.add(static_cast<std::uint64_t>(threads));
    return h.digest();
}

std::string ScatterPlan::to_string() const {
    return fmt::format(
        "{} of {} at {} indices ({}), accumulated in {}\n"
        "path: {}\n"
        "block: {} threads per column (the coordinates off the axis), columns blockIdx.x + k gridDim.x",
        ir::op_name(op), name(dtype), name(index), mode == ir::IndexMode::Checked ? "checked" : "clamped",
        name(acc),
        path == ScatterPath::Last
            ? "last: the largest position per target (integer atomicMax), one copy per target"
        : path == ScatterPath::Sorted
            ? "sorted: ranks from a bitonic sort per tile of 256 positions, targets' runs in ascending "
              "position, "
              "a thread per chunk of 256, the pairwise tree over chunk partials, x added once"
            : "atomic: atomicAdd into x's copy (not reproducible)",
        threads);
}

PlannedScatter plan_scatter(const FusedKernel& k, const LayoutOf& layout_of) {
    if (k.outputs.empty() || !ir::is_scatter(k.outputs[0]->op()))
        throw InternalError(fmt::format("plan_scatter(): kernel {} is not one scatter node", k.name));
    PlannedScatter ps;
    ps.node = k.outputs[0];
    const ir::Node& n = *ps.node;
    const auto axis = static_cast<std::size_t>(ir::scatter_axis(n));
    std::array<Strides, 4> strides;
    for (std::size_t j = 0; j < 3; ++j) {
        const ir::Node& x = *n.operand(static_cast<int>(j));
        const std::optional<ir::StridedView> view =
            ir::view_of_input(x, [&](const ir::Node& in) { return layout_of(in).strides; });
        if (!view)
            throw NotFusable(fmt::format(
                "operand {} of {} is a reshape that has no strides for its input's layout", j, where_of(n)));
        const auto it = std::find(ps.inputs.begin(), ps.inputs.end(), view->base);
        const int input = static_cast<int>(it - ps.inputs.begin());
        if (it == ps.inputs.end()) ps.inputs.push_back(view->base);
        ps.operands[j] = ScatterOperand{input, view->offset};
        strides[j] = view->strides;
    }
    strides[3] = contiguous_strides(n.shape());
    const Shape& vs = n.operand(2)->shape();
    ps.extent = n.shape()[axis];
    ps.length = vs[axis];
    for (std::size_t o = 0; o < 4; ++o) ps.step[o] = strides[o][axis];
    for (std::size_t d = 0; d < vs.size(); ++d) {
        if (d == axis) continue;
        ps.col_extents.push_back(vs[d]);
        for (std::size_t o = 0; o < 4; ++o) ps.col_strides[o].push_back(strides[o][d]);
    }
    merge_axes(ps.col_extents, ps.col_strides);
    if (ps.col_extents.size() > static_cast<std::size_t>(kScatterColumnAxes))
        throw Error(
            fmt::format("{}(): {} axes besides the scattered one that do not merge; a scatter kernel "
                        "takes at most {} ({})",
                        ir::gather_api_name(ir::scatter_api(n)), ps.col_extents.size(), kScatterColumnAxes,
                        short_location(n.loc())));
    ScatterPlan& p = ps.plan;
    p.op = n.op();
    p.dtype = n.dtype();
    p.acc = scatter_accumulator(n.dtype());
    p.index = n.operand(1)->dtype();
    p.mode = ir::scatter_mode(n);
    const bool atomic_type = n.dtype() == DType::Float32 || n.dtype() == DType::Float64;
    p.path = n.op() == ir::Op::Scatter              ? ScatterPath::Last
             : ir::scatter_atomic(n) && atomic_type ? ScatterPath::Atomic
                                                    : ScatterPath::Sorted;
    p.threads = 256;
    return ps;
}

}  // namespace loom::codegen
