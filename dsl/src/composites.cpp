// var, std, softmax, layernorm, rmsnorm as compositions of the DSL's ops (docs/semantics.md, section 7).
// The operand is resolved once, so every use reads the same input node, and interning makes the shared
// sub-expressions (mean(x), x - mean(x)) one node each: layernorm's mean is var's mean.
#include "loom/dsl/composites.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "loom/ir/error.hpp"

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
    std::int64_t count = 1, kept = 1;
    for (int k = 0; k < r; ++k)
        (reduced[static_cast<std::size_t>(k)] ? count : kept) *= x.shape()[static_cast<std::size_t>(k)];
    if (count == 0 && kept > 0)
        fail(api, loc,
             fmt::format("reduction of operand {} over a zero-length axis has no identity",
                         ir::describe(*x.node())));
    return count;
}

// Integer and bool operands become float32 (as FloatMath ops do); float dtypes are kept.
Array as_float(const Array& x, const Loc& loc) {
    return is_float(x.dtype()) ? x : astype(x, float32, loc);
}

Array variance(std::string_view api, const Operand& x_in, Axes axes, double correction, bool keepdims,
               const Loc& loc) {
    const Array x(x_in.resolve_alone(api));
    const std::int64_t n = reduced_count(api, x, axes, loc);
    const Array m = mean(x, axes, true, loc);
    const Array d = sub(as_float(x, loc), m, loc);  // integers and bool: float32, mean's dtype
    const Array q = mul(d, d, loc);
    // max(): a non-positive count gives a zero divisor, so +Inf or NaN as in NumPy, never a negative
    // variance.
    const double divisor = std::max(static_cast<double>(n) - correction, 0.0);
    if (is_half(q.dtype()))  // sum and divide at the accumulation type, round once (like mean)
        return astype(
            div(sum(astype(q, float32, loc), std::move(axes), keepdims, loc), Operand(divisor, loc), loc),
            q.dtype(), loc);
    return div(sum(q, std::move(axes), keepdims, loc), Operand(divisor, loc), loc);
}

}  // namespace

Array var(const Operand& x, Axes axes, double correction, bool keepdims, Loc loc) {
    return variance("var", x, std::move(axes), correction, keepdims, loc);
}

Array std(const Operand& x, Axes axes, double correction, bool keepdims, Loc loc) {
    return sqrt(variance("std", x, std::move(axes), correction, keepdims, loc), loc);
}

Array softmax(const Operand& x_in, std::int64_t axis, Loc loc) {
    const Array x = as_float(Array(x_in.resolve_alone("softmax")), loc);
    (void)reduced_count("softmax", x, {axis}, loc);
    const Array e = exp(sub(x, max(x, axis, true, loc), loc), loc);
    return div(e, sum(e, axis, true, loc), loc);
}

Array layernorm(const Operand& x_in, const Operand& weight, const Operand& bias, double eps,
                std::int64_t axis, Loc loc) {
    const Array x(x_in.resolve_alone("layernorm"));
    const Array v = variance("layernorm", x, {axis}, 0.0, true, loc);
    const Array d = sub(as_float(x, loc), mean(x, axis, true, loc), loc);  // the node variance() built
    return add(mul(mul(d, rsqrt(add(v, Operand(eps, loc), loc), loc), loc), weight, loc), bias, loc);
}

Array rmsnorm(const Operand& x_in, const Operand& weight, double eps, std::int64_t axis, Loc loc) {
    const Array x = as_float(Array(x_in.resolve_alone("rmsnorm")), loc);
    (void)reduced_count("rmsnorm", x, {axis}, loc);
    const Array ms = mean(mul(x, x, loc), axis, true, loc);
    return mul(mul(x, rsqrt(add(ms, Operand(eps, loc), loc), loc), loc), weight, loc);
}

}  // namespace loom
