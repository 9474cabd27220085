// var, std, softmax, layernorm, rmsnorm as compositions of the DSL's ops (docs/semantics.md, section 7).
// The operand is resolved once, so every use reads the same input node, and interning makes the shared
// sub-expressions (mean(x), x - mean(x)) one node each: layernorm's mean is var's mean.
#include "loom/dsl/composites.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "loom/ir/dtype.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/shape.hpp"

namespace loom {

namespace {

[[noreturn]] void fail(std::string_view api, const Loc& loc, const std::string& msg) {
    throw Error(fmt::format("{}(): {} ({})", api, msg, short_location(loc)));
}

// Checks `axes` against x the way a reduction does, but naming `api`, and returns the number of reduced
// elements N. A zero-length reduced axis is an error unless the result is empty (as for mean).
std::int64_t reduced_count(std::string_view api, const Array& x, const Axes& axes, const Loc& loc) {
    const int r = x.rank();
    std::vector<bool> reduced(static_cast<std::size_t>(r), axes.empty());
    for (const auto ax : axes) {
        const std::int64_t n = ax < 0 ? ax + r : ax;
        if (n < 0 || n >= r)
            fail(api, loc, fmt::format("axis {} out of range for operand {}", ax, ir::describe(*x.node())));
        if (reduced[static_cast<std::size_t>(n)])
            fail(api, loc,
                 fmt::format("axis {} repeated in [{}] for operand {}", ax, fmt::join(axes, ", "),
                             ir::describe(*x.node())));
        reduced[static_cast<std::size_t>(n)] = true;
    }
    std::int64_t count = 1, kept = 1, empty_axis = 0;
    std::vector<int> norm;
    for (int k = 0; k < r; ++k) {
        const std::int64_t e = x.shape()[static_cast<std::size_t>(k)];
        if (reduced[static_cast<std::size_t>(k)]) {
            norm.push_back(k);
            if (e == 0) empty_axis = k;
        }
        (reduced[static_cast<std::size_t>(k)] ? count : kept) *= e;
    }
    if (count == 0 && kept > 0)
        fail(api, loc,
             fmt::format(
                 "reduction of operand {} over axes [{}]: axis {} has length 0 and {} needs at least one "
                 "element",
                 ir::describe(*x.node()), fmt::join(norm, ", "), empty_axis, api));
    return count;
}

// The dtype every step of a composite runs at: float16 and bfloat16 are widened (exactly) to float32, as
// are integers and bool; float32 and float64 are kept. Statistics of half data are thus computed in
// float32 and rounded once at the end, as cuDNN and PyTorch compute them: squares of half values of 256
// or more would overflow float16.
Array at_accumulation(const Array& x, const Loc& loc) {
    return is_float(x.dtype()) && !is_half(x.dtype()) ? x : astype(x, float32, loc);
}

// The dtype of a composite's result for operand dtype `dt`: float dtypes are kept, integers and bool
// give float32 (as mean does).
DType result_dtype(DType dt) {
    return is_float(dt) ? dt : float32;
}

Array rounded_to(const Array& y, DType dt, const Loc& loc) {
    return y.dtype() == dt ? y : astype(y, dt, loc);
}

// The deviations d = x - m at the accumulation type, m = mean(x, axes, keepdims = true): for integers and
// bool the exact int64 mean (divided in double, float32), for floats the mean of the widened x (for
// halves not rounded to the half dtype). var and layernorm build this same interned node.
Array deviations(const Array& x, const Axes& axes, const Loc& loc) {
    const Array xa = at_accumulation(x, loc);
    return sub(xa, mean(is_float(x.dtype()) ? xa : x, axes, true, loc), loc);
}

// The variance at the accumulation type (float32 for halves, integers and bool; not yet rounded).
Array variance(std::string_view api, const Array& x, Axes axes, double correction, bool keepdims,
               const Loc& loc) {
    const std::int64_t n = reduced_count(api, x, axes, loc);
    const Array d = deviations(x, axes, loc);
    const Array q = mul(d, d, loc);
    // max(): a non-positive count gives a zero divisor, so +Inf or NaN as in NumPy, never a negative
    // variance.
    const double divisor = std::max(static_cast<double>(n) - correction, 0.0);
    return div(sum(q, std::move(axes), keepdims, loc), Operand(divisor, loc), loc);
}

// The dtype of `x_dtype` combined with the operand `w` (an array's dtype, or a weak scalar that takes
// x's), for an affine weight or bias; checks that w broadcasts against `shape` (x's, or x's broadcast
// with the weight's for the bias) and widens `shape` to the broadcast one.
DType with_affine(std::string_view api, std::string_view what, const Array& x, Shape& shape, DType x_dtype,
                  const Operand& w, const Loc& loc) {
    w.check(api);
    if (!w.is_array()) return x_dtype;
    const ir::NodePtr wn = w.resolve(Operand(x, loc), api);
    Shape out;
    if (!broadcast_shapes(shape, wn->shape(), out))
        fail(api, loc,
             fmt::format("{} {} does not broadcast against {} {}", what, ir::describe(*wn),
                         shape == x.shape() ? "x" : "x and weight",
                         shape == x.shape() ? ir::describe(*x.node()) : to_string(shape)));
    shape = out;
    return promote(x_dtype, wn->dtype());
}

Array standard_deviation(std::string_view api, const Operand& x_in, Axes axes, double correction,
                         bool keepdims, const Loc& loc) {
    const Array x(x_in.resolve_alone(api));
    return rounded_to(sqrt(variance(api, x, std::move(axes), correction, keepdims, loc), loc),
                      result_dtype(x.dtype()), loc);
}

}  // namespace

Array var(const Operand& x_in, Axes axes, double correction, bool keepdims, Loc loc) {
    const Array x(x_in.resolve_alone("var"));
    return rounded_to(variance("var", x, std::move(axes), correction, keepdims, loc), result_dtype(x.dtype()),
                      loc);
}

Array std(const Operand& x, Axes axes, double correction, bool keepdims, Loc loc) {
    return standard_deviation("std", x, std::move(axes), correction, keepdims, loc);
}

Array stddev(const Operand& x, Axes axes, double correction, bool keepdims, Loc loc) {
    return standard_deviation("stddev", x, std::move(axes), correction, keepdims, loc);
}

Array softmax(const Operand& x_in, std::int64_t axis, Loc loc) {
    const Array x(x_in.resolve_alone("softmax"));
    (void)reduced_count("softmax", x, {axis}, loc);
    const Array xa = at_accumulation(x, loc);
    const Array e = exp(sub(xa, max(xa, axis, true, loc), loc), loc);
    return rounded_to(div(e, sum(e, axis, true, loc), loc), result_dtype(x.dtype()), loc);
}

Array logsumexp(const Operand& x_in, std::int64_t axis, bool keepdims, Loc loc) {
    const Array x(x_in.resolve_alone("logsumexp"));
    (void)reduced_count("logsumexp", x, {axis}, loc);
    const Array xa = at_accumulation(x, loc);
    // A row whose maximum is not finite (all -Inf, or holding +Inf) is shifted by 0 instead: -Inf rows give
    // log(0) = -Inf, +Inf rows +Inf, NaN rows NaN, as NumPy/SciPy, PyTorch and JAX define it.
    const Array m = max(xa, axis, true, loc);
    const Array shift = where(isfinite(m, loc), m, Operand(0.0, loc), loc);
    const Array s = sum(exp(sub(xa, shift, loc), loc), axis, keepdims, loc);
    const Array shift_out = keepdims ? shift : shift.reshape(s.shape(), loc);
    return rounded_to(add(log(s, loc), shift_out, loc), result_dtype(x.dtype()), loc);
}

Array layernorm(const Operand& x_in, const Operand& weight, const Operand& bias, double eps,
                std::int64_t axis, Loc loc) {
    const Array x(x_in.resolve_alone("layernorm"));
    const Array v = variance("layernorm", x, {axis}, 0.0, true, loc);
    Shape shape = x.shape();
    DType out = with_affine("layernorm", "weight", x, shape, result_dtype(x.dtype()), weight, loc);
    out = with_affine("layernorm", "bias", x, shape, out, bias, loc);
    const Array d = deviations(x, {axis}, loc);  // the node variance() built
    const Array y = add(mul(mul(d, rsqrt(add(v, Operand(eps, loc), loc), loc), loc), weight, loc), bias, loc);
    return rounded_to(y, out, loc);
}

Array rmsnorm(const Operand& x_in, const Operand& weight, double eps, std::int64_t axis, Loc loc) {
    const Array x(x_in.resolve_alone("rmsnorm"));
    (void)reduced_count("rmsnorm", x, {axis}, loc);
    Shape shape = x.shape();
    const DType out = with_affine("rmsnorm", "weight", x, shape, result_dtype(x.dtype()), weight, loc);
    const Array xa = at_accumulation(x, loc);
    const Array ms = mean(mul(xa, xa, loc), axis, true, loc);
    return rounded_to(mul(mul(xa, rsqrt(add(ms, Operand(eps, loc), loc), loc), loc), weight, loc), out, loc);
}

Array cross_entropy(const Operand& logits_in, const Operand& labels_in, CrossEntropyOptions options,
                    Loc loc) {
    const Array x(logits_in.resolve_alone("cross_entropy"));
    const Array labels(labels_in.resolve_alone("cross_entropy"));
    const std::string shapes =
        fmt::format("logits {}, labels {}", ir::describe(*x.node()), ir::describe(*labels.node()));
    if (!is_float(x.dtype()) || x.rank() == 0)
        fail("cross_entropy", loc, fmt::format("logits must be floats with a class axis ({})", shapes));
    const std::int64_t classes = x.shape().back();
    Shape rows = x.shape();
    rows.pop_back();
    if (classes == 0) fail("cross_entropy", loc, fmt::format("no classes ({})", shapes));
    if (labels.dtype() != int32 && labels.dtype() != int64)
        fail("cross_entropy", loc, fmt::format("labels must be int32 or int64 class indices ({})", shapes));
    if (labels.shape() != rows)
        fail("cross_entropy", loc,
             fmt::format("labels must have the logits' shape without the class axis, {} ({})",
                         to_string(rows), shapes));
    const Array xa = at_accumulation(x, loc);
    // An ignore_index that int32 labels cannot hold is compared in int64 (it then ignores nothing), not
    // refused as a scalar out of the labels' range.
    const bool fits =
        labels.dtype() == int64 || (options.ignore_index >= std::numeric_limits<std::int32_t>::min() &&
                                    options.ignore_index <= std::numeric_limits<std::int32_t>::max());
    const Array ignored =
        eq(fits ? labels : astype(labels, int64, loc), Operand(options.ignore_index, loc), loc);
    // The index read: 0 for an ignored row (its value is discarded); a negative label L becomes L - C, which
    // the checked gather refuses (take's negative indices would wrap) and whose message gives L back. In
    // int64, so that neither an int32 label near its minimum nor a class count beyond int32 wraps.
    const Array wide = labels.dtype() == int64 ? labels : astype(labels, int64, loc);
    const Array shifted =
        where(lt(wide, Operand(0, loc), loc), sub(wide, Operand(classes, loc), loc), wide, loc);
    const Array index = where(ignored, Operand(0, loc), shifted, loc);
    Shape picked_shape = rows;
    picked_shape.push_back(1);
    const Array picked(ir::gather(xa.node(), index.reshape(picked_shape, loc).node(), x.rank() - 1,
                                  ir::IndexMode::Checked, ir::GatherApi::CrossEntropy, loc));
    const Array per_row = where(ignored, Operand(0.0, loc),
                                sub(logsumexp(xa, -1, false, loc), picked.reshape(rows, loc), loc), loc);
    const DType dt = result_dtype(x.dtype());
    switch (options.reduction) {
        case LossReduction::None:
            return rounded_to(per_row, dt, loc);
        case LossReduction::Sum:
            return rounded_to(sum(per_row, {}, false, loc), dt, loc);
        case LossReduction::Mean:
            break;
    }
    const Array counted = sum(astype(logical_not(ignored, loc), xa.dtype(), loc), {}, false, loc);
    return rounded_to(div(sum(per_row, {}, false, loc), counted, loc), dt, loc);
}

}  // namespace loom
