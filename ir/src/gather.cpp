// Gathers: the one IR op (Op::Gather, NumPy's take_along_axis with every broadcast explicit) and the
// functions built on it (take, take_along_axis, index_select, one_hot). docs/semantics.md, "Gathers".
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"

namespace loom::ir {

namespace {

[[noreturn]] void fail(GatherApi api, const Loc& loc, const std::string& msg) {
    throw Error(fmt::format("{}(): {} ({})", gather_api_name(api), msg, short_location(loc)));
}

int axis_of(GatherApi api, std::int64_t axis, int rank, const Node& x, const Loc& loc) {
    if (rank == 0) fail(api, loc, fmt::format("the operand {} has no axis to index", describe(x)));
    if (axis < -rank || axis >= rank)
        fail(api, loc, fmt::format("axis {} is out of range for the operand {}", axis, describe(x)));
    return static_cast<int>(axis < 0 ? axis + rank : axis);
}

void check_index(GatherApi api, const Node& idx, const Loc& loc) {
    if (idx.dtype() != DType::Int32 && idx.dtype() != DType::Int64)
        fail(api, loc, fmt::format("indices must be int32 or int64, not {}", describe(idx)));
}

Shape concat(const Shape& a, const Shape& b) {
    Shape s = a;
    s.insert(s.end(), b.begin(), b.end());
    return s;
}

}  // namespace

std::string gather_error_message(GatherApi api, std::int64_t v, std::int64_t extent, const Loc& loc) {
    if (api == GatherApi::CrossEntropy) {
        // cross_entropy reads a negative label L at L - C, never a valid index: the label is recovered here.
        const std::int64_t label = v < 0 ? v + extent : v;
        return fmt::format(
            "cross_entropy(): label {} is out of range for {} classes (valid: 0 to {}, or the "
            "ignore index) ({})",
            label, extent, extent - 1, short_location(loc));
    }
    return fmt::format("{}(): index {} is out of range for an axis of extent {} (valid: {} to {}) ({})",
                       gather_api_name(api), v, extent, -extent, extent - 1, short_location(loc));
}

std::string gather_error_message(const Node& n, std::int64_t v) {
    return gather_error_message(static_cast<GatherApi>(n.ints().at(2)), v,
                                n.operand(0)->shape().at(static_cast<std::size_t>(n.ints().at(0))), n.loc());
}

namespace {

struct ErrorSite {
    GatherApi api;
    std::int64_t extent;
    Loc loc;
};

struct ErrorSites {
    std::mutex mu;
    std::vector<ErrorSite> sites;
    std::map<std::tuple<int, std::int64_t, std::string, std::uint32_t, std::uint32_t>, std::uint32_t> index;
};

ErrorSites& error_sites() {
    static ErrorSites* t = new ErrorSites;  // never destroyed: kernels may report after static destruction
    return *t;
}

}  // namespace

std::uint32_t gather_error_id(const Node& n) {
    const auto api = static_cast<GatherApi>(n.ints().at(2));
    const std::int64_t extent = n.operand(0)->shape().at(static_cast<std::size_t>(n.ints().at(0)));
    ErrorSites& t = error_sites();
    std::lock_guard lock(t.mu);
    const auto key = std::make_tuple(static_cast<int>(api), extent, std::string(n.loc().file_name()),
                                     n.loc().line(), n.loc().column());
    const auto [it, fresh] = t.index.try_emplace(key, static_cast<std::uint32_t>(t.sites.size()));
    if (fresh) t.sites.push_back({api, extent, n.loc()});
    return it->second;
}

std::string gather_error_message(std::uint32_t id, std::int64_t value) {
    ErrorSites& t = error_sites();
    std::lock_guard lock(t.mu);
    if (id >= t.sites.size()) throw InternalError(fmt::format("gather_error_message: unknown gather {}", id));
    const ErrorSite& e = t.sites[id];
    return gather_error_message(e.api, value, e.extent, e.loc);
}

namespace {

// The error of indices into an axis of extent 0, said of the user's index: the APIs check it
// before they broadcast the index over the operand's other axes, which would multiply its count.
void no_element_to_take(GatherApi api, const Node& x, int axis, const Node& idx, Loc loc) {
    if (idx.numel() > 0 && x.shape()[static_cast<std::size_t>(axis)] == 0)
        fail(api, loc,
             fmt::format("the {} {} of {} point into axis {} of extent 0 of {}: there is no element to take",
                         idx.numel(), idx.numel() == 1 ? "index" : "indices", describe(idx), axis,
                         describe(x)));
}

// The result of a checked gather that has no element although its index has some (the operand's other axes
// have extent 0): zero elements sliced from a gather of every index from a row of the axis's extent, so
// that the indices are checked all the same (docs/semantics.md, "Gathers": every index is checked, as NumPy
// checks take's). The partition computes a checked gather read only in part whole, and the reference
// computes every node, so the check happens on every back end, with the gather's own message.
NodePtr checked_empty_result(std::int64_t extent, NodePtr idx, DType dtype, const Shape& out, GatherApi api,
                             Loc loc) {
    const ScalarValue zero = is_float(dtype) ? ScalarValue::of_float(0.0) : ScalarValue::of_int(0);
    NodePtr row = broadcast_to(constant(zero, dtype, loc), {extent}, loc);
    const std::int64_t count = idx->numel();
    NodePtr each =
        gather(std::move(row), reshape(std::move(idx), {count}, loc), 0, IndexMode::Checked, api, loc);
    return reshape(slice(std::move(each), {SliceSpec{0, 0, 1}}, loc), out, loc);
}

}  // namespace

NodePtr gather(NodePtr x, NodePtr idx, int axis, IndexMode mode, GatherApi api, Loc loc) {
    check_index(api, *idx, loc);
    const int r = x->rank();
    if (idx->rank() != r || axis < 0 || axis >= r)
        throw InternalError(fmt::format("gather: operand {} and index {} of unequal rank, or axis {}",
                                        describe(*x), describe(*idx), axis));
    for (int d = 0; d < r; ++d)
        if (d != axis && x->shape()[static_cast<std::size_t>(d)] != idx->shape()[static_cast<std::size_t>(d)])
            throw InternalError(fmt::format("gather: operand {} and index {} differ off axis {}",
                                            describe(*x), describe(*idx), axis));
    no_element_to_take(api, *x, axis, *idx, loc);
    NodeDesc d;
    d.op = Op::Gather;
    d.dtype = x->dtype();
    d.shape = idx->shape();
    d.operands = {std::move(x), std::move(idx)};
    d.ints = {axis, static_cast<std::int64_t>(mode), static_cast<std::int64_t>(api)};
    d.loc = loc;
    return intern(std::move(d));
}

namespace {

// take with the API named in errors: the result is x.shape[:axis] + idx.shape + x.shape[axis+1:], one gather
// of x broadcast over the index's leading axes by the index broadcast over x's other axes.
NodePtr take_as(NodePtr x, NodePtr idx, std::int64_t axis_in, IndexMode mode, GatherApi api, Loc loc) {
    check_index(api, *idx, loc);
    const int r = x->rank();
    const int a = axis_of(api, axis_in, r, *x, loc);
    const Shape& xs = x->shape();
    const Shape before(xs.begin(), xs.begin() + a), after(xs.begin() + a + 1, xs.end());
    const Shape out = concat(concat(before, idx->shape()), after);
    check_shape(gather_api_name(api), out, loc);
    no_element_to_take(api, *x, a, *idx, loc);
    if (mode == IndexMode::Checked && numel(out) == 0 && idx->numel() > 0)
        return checked_empty_result(xs[static_cast<std::size_t>(a)], std::move(idx), x->dtype(), out, api,
                                    loc);
    if (idx->rank() == 0) {  // one index: take a slice of extent 1 along the axis, then drop the axis
        NodePtr one = take_as(std::move(x), reshape(std::move(idx), {1}, loc), a, mode, api, loc);
        return reshape(std::move(one), out, loc);
    }
    const int k = idx->rank();
    const int g = a + k - 1;  // the gathered axis of the result
    const Shape ones_k(static_cast<std::size_t>(k - 1), 1);
    const Shape xe = concat(concat(before, ones_k), concat({xs[static_cast<std::size_t>(a)]}, after));
    Shape xb = out;
    xb[static_cast<std::size_t>(g)] = xs[static_cast<std::size_t>(a)];
    NodePtr xv = broadcast_to(reshape(std::move(x), xe, loc), xb, loc);
    const Shape ie = concat(concat(Shape(before.size(), 1), idx->shape()), Shape(after.size(), 1));
    NodePtr iv = broadcast_to(reshape(std::move(idx), ie, loc), out, loc);
    return gather(std::move(xv), std::move(iv), g, mode, api, loc);
}

}  // namespace

NodePtr take(NodePtr x, NodePtr idx, std::int64_t axis, IndexMode mode, Loc loc) {
    return take_as(std::move(x), std::move(idx), axis, mode, GatherApi::Take, loc);
}

NodePtr index_select(NodePtr x, std::int64_t axis, NodePtr idx, IndexMode mode, Loc loc) {
    if (idx->rank() > 1)
        fail(GatherApi::IndexSelect, loc,
             fmt::format("the index must have rank 0 or 1, not {}", describe(*idx)));
    return take_as(std::move(x), std::move(idx), axis, mode, GatherApi::IndexSelect, loc);
}

NodePtr take_along_axis(NodePtr x, NodePtr idx, std::int64_t axis, IndexMode mode, Loc loc) {
    const GatherApi api = GatherApi::TakeAlongAxis;
    check_index(api, *idx, loc);
    const int r = x->rank();
    const int a = axis_of(api, axis, r, *x, loc);
    if (idx->rank() != r)
        fail(api, loc,
             fmt::format("the index {} must have the rank of the operand {}", describe(*idx), describe(*x)));
    no_element_to_take(api, *x, a, *idx, loc);
    // The other axes broadcast against each other (NumPy); the axis keeps each side's extent.
    Shape xs = x->shape(), is = idx->shape();
    const std::int64_t n = xs[static_cast<std::size_t>(a)], m = is[static_cast<std::size_t>(a)];
    xs[static_cast<std::size_t>(a)] = 1;
    is[static_cast<std::size_t>(a)] = 1;
    Shape both;
    if (!broadcast_shapes(xs, is, both))
        fail(api, loc,
             fmt::format("the operand {} and the index {} do not broadcast off axis {}", describe(*x),
                         describe(*idx), a));
    Shape xb = both, ib = both;
    xb[static_cast<std::size_t>(a)] = n;
    ib[static_cast<std::size_t>(a)] = m;
    if (mode == IndexMode::Checked && numel(ib) == 0 && idx->numel() > 0)
        return checked_empty_result(n, std::move(idx), x->dtype(), ib, api, loc);
    return gather(broadcast_to(std::move(x), xb, loc), broadcast_to(std::move(idx), ib, loc), a, mode, api,
                  loc);
}

NodePtr one_hot(NodePtr idx, std::int64_t classes, DType dtype, IndexMode mode, Loc loc) {
    const GatherApi api = GatherApi::OneHot;
    check_index(api, *idx, loc);
    if (classes < 0) fail(api, loc, fmt::format("classes must be 0 or more, not {}", classes));
    if (classes == 0 && idx->numel() > 0)
        fail(api, loc,
             fmt::format("classes is 0: no class for the {} indices of {}", idx->numel(), describe(*idx)));
    const Shape out = concat(idx->shape(), {classes});
    check_shape("one_hot", out, loc);
    // The class of each index, checked (or clamped) as a take from arange(classes) is, then compared with
    // the class axis: nothing is read but the indices.
    const Shape with_one = concat(idx->shape(), {1});
    NodePtr cls =
        take_as(iota({classes}, 0, kHostDeviceCode, "one_hot", loc), std::move(idx), 0, mode, api, loc);
    NodePtr lhs = broadcast_to(reshape(std::move(cls), with_one, loc), out, loc);
    NodePtr hot = binary(Op::Eq, std::move(lhs), iota(out, -1, kHostDeviceCode, "one_hot", loc), loc);
    return cast(std::move(hot), dtype, loc);
}

}  // namespace loom::ir
