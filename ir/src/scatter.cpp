// Scatters: the ops scatter and scatter_add (kind Scatter) and the functions that build them (scatter,
// scatter_add, index_add), with their checks. docs/semantics.md, "Scatters".
#include <fmt/format.h>

#include <cstdint>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"

namespace loom::ir {

namespace {

[[noreturn]] void fail(GatherApi api, const Loc& loc, const std::string& msg) {
    throw Error(fmt::format("{}(): {} ({})", gather_api_name(api), msg, short_location(loc)));
}

int axis_of(GatherApi api, std::int64_t axis, const Node& x, const Loc& loc) {
    const int r = x.rank();
    if (r == 0) fail(api, loc, fmt::format("x {} has no axis to write along", describe(x)));
    const int a = normalize_axis(axis, r);
    if (a < 0) fail(api, loc, fmt::format("axis {} is out of range for x {}", axis, describe(x)));
    return a;
}

void check_index(GatherApi api, const Node& idx, const Loc& loc) {
    if (idx.dtype() != DType::Int32 && idx.dtype() != DType::Int64)
        fail(api, loc, fmt::format("indices must be int32 or int64, not {}", describe(idx)));
}

// values: x's dtype and rank, x's extents off `axis`. `what` names the operand as the function calls it.
void check_values(GatherApi api, const Node& x, const Node& values, int axis, const char* what,
                  const Loc& loc) {
    if (values.dtype() != x.dtype())
        fail(api, loc,
             fmt::format("{} {} must have x's dtype: x is {} (cast one of them)", what, describe(values),
                         describe(x)));
    bool fits = values.rank() == x.rank();
    for (int d = 0; fits && d < x.rank(); ++d)
        fits = d == axis ||
               values.shape()[static_cast<std::size_t>(d)] == x.shape()[static_cast<std::size_t>(d)];
    if (!fits)
        fail(api, loc,
             fmt::format("{} {} must have x's rank and extents off axis {}: x is {}", what, describe(values),
                         axis, describe(x)));
}

}  // namespace

std::string scatter_attributes(const Node& n) {
    return fmt::format("axis={}{}{} ({})", scatter_axis(n),
                       scatter_mode(n) == IndexMode::Clamp ? " clamp" : "",
                       scatter_atomic(n) ? " atomic" : "", gather_api_name(scatter_api(n)));
}

NodePtr scatter_node(Op op, NodePtr x, NodePtr idx, NodePtr values, int axis, IndexMode mode, GatherApi api,
                     bool atomic, Loc loc) {
    if (!is_scatter(op)) throw InternalError(fmt::format("scatter_node: {} is not a scatter", op_name(op)));
    check_index(api, *idx, loc);
    if (axis < 0 || axis >= x->rank() || values->rank() != x->rank() || idx->shape() != values->shape() ||
        values->dtype() != x->dtype() || (atomic && op != Op::ScatterAdd))
        throw InternalError(fmt::format("scatter_node: x {}, index {}, values {} along axis {} do not fit",
                                        describe(*x), describe(*idx), describe(*values), axis));
    if (values->numel() > 0 && x->shape()[static_cast<std::size_t>(axis)] == 0)
        fail(api, loc,
             fmt::format("{} values into axis {} of extent 0 of x {}: there is no element to write",
                         values->numel(), axis, describe(*x)));
    NodeDesc d;
    d.op = op;
    d.dtype = x->dtype();
    d.shape = x->shape();
    d.operands = {std::move(x), std::move(idx), std::move(values)};
    d.ints = {axis, static_cast<std::int64_t>(mode), static_cast<std::int64_t>(api), atomic ? 1 : 0};
    d.loc = loc;
    return intern(std::move(d));
}

namespace {

// scatter and scatter_add: idx broadcast to values' shape (NumPy's rules, idx's axes aligned at the end).
NodePtr scatter_as(Op op, GatherApi api, NodePtr x, NodePtr idx, NodePtr values, std::int64_t axis_in,
                   IndexMode mode, bool atomic, Loc loc) {
    check_index(api, *idx, loc);
    const int a = axis_of(api, axis_in, *x, loc);
    check_values(api, *x, *values, a, "values", loc);
    Shape both;
    if (!broadcast_shapes(idx->shape(), values->shape(), both) || both != values->shape())
        fail(api, loc,
             fmt::format("the index {} does not broadcast to the values' shape: values are {}",
                         describe(*idx), describe(*values)));
    NodePtr iv = idx->shape() == values->shape() ? std::move(idx) : broadcast_to(std::move(idx), both, loc);
    return scatter_node(op, std::move(x), std::move(iv), std::move(values), a, mode, api, atomic, loc);
}

}  // namespace

NodePtr scatter(NodePtr x, NodePtr idx, NodePtr values, std::int64_t axis, IndexMode mode, Loc loc) {
    return scatter_as(Op::Scatter, GatherApi::Scatter, std::move(x), std::move(idx), std::move(values), axis,
                      mode, false, loc);
}

NodePtr scatter_add(NodePtr x, NodePtr idx, NodePtr values, std::int64_t axis, IndexMode mode, bool atomic,
                    Loc loc) {
    return scatter_as(Op::ScatterAdd, GatherApi::ScatterAdd, std::move(x), std::move(idx), std::move(values),
                      axis, mode, atomic, loc);
}

NodePtr index_add(NodePtr x, NodePtr index, NodePtr source, std::int64_t axis, IndexMode mode, bool atomic,
                  Loc loc) {
    const GatherApi api = GatherApi::IndexAdd;
    check_index(api, *index, loc);
    const int a = axis_of(api, axis, *x, loc);
    if (index->rank() != 1)
        fail(api, loc, fmt::format("the index must have rank 1, not {}", describe(*index)));
    check_values(api, *x, *source, a, "source", loc);
    const std::int64_t m = index->shape()[0];
    if (source->shape()[static_cast<std::size_t>(a)] != m)
        fail(api, loc,
             fmt::format("the index {} must have one entry per element of source {} along axis {}",
                         describe(*index), describe(*source), a));
    // The index along the axis, broadcast over the other axes: scatter_add's node, so the order and the
    // bits are scatter_add's.
    Shape along(static_cast<std::size_t>(x->rank()), 1);
    along[static_cast<std::size_t>(a)] = m;
    NodePtr iv = broadcast_to(reshape(std::move(index), along, loc), source->shape(), loc);
    return scatter_node(Op::ScatterAdd, std::move(x), std::move(iv), std::move(source), a, mode, api, atomic,
                        loc);
}

}  // namespace loom::ir
