// testing::compare_product_bound: a tensor-core product against the componentwise bound of docs/semantics.md,
// section 12, with the exact product and |A||B| from reference::product_bound().
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <mutex>

#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"
#include "parallel.hpp"

namespace loom::testing {

namespace {

// The unit roundoff and smallest subnormal of a float dtype.
double unit_roundoff(DType d) {
    switch (d) {
        case DType::Float16: return 0x1p-11;
        case DType::BFloat16: return 0x1p-8;
        case DType::Float32: return 0x1p-24;
        default: return 0x1p-53;
    }
}
double smallest_subnormal(DType d) {
    switch (d) {
        case DType::Float16: return 0x1p-24;
        case DType::BFloat16: return 0x1p-133;
        case DType::Float32: return 0x1p-149;
        default: return 0x1p-1074;
    }
}

}  // namespace

Comparison compare_product_bound(const Tensor& got_in, const Tensor& a, const Tensor& b, const std::string& what) {
    const reference::ProductBound pb = reference::product_bound(a, b);
    Comparison c;
    if (got_in.shape() != pb.value.shape()) {
        c.ok = false;
        c.message = fmt::format("{}: shape {} differs from the product's {}", what, to_string(got_in.shape()), to_string(pb.value.shape()));
        return c;
    }
    const Tensor got = reference::cast(got_in, DType::Float64);
    // The product's dtype rounds the accumulator once (a result cast to a wider dtype keeps that rounding);
    // int8 products are exact: their int32 sums must equal the exact sum modulo 2^32.
    const DType product_dtype = a.dtype();
    const bool exact = !is_float(product_dtype);
    const double u = exact ? 0.0 : unit_roundoff(product_dtype);
    const double s = exact ? 0.0 : smallest_subnormal(product_dtype);
    // Past the largest finite value of the product's dtype (and half an ulp), a result rounds to Inf.
    const double overflow = product_dtype == DType::Float16 ? 65520.0 : product_dtype == DType::BFloat16 ? 0x1.ffp127 : 0x1.ffffffp127;
    const std::int64_t K = a.shape().back();
    if (!exact && static_cast<double>(K) * reference::kMmaUnit >= 1.0) {
        c.ok = false;
        c.message = fmt::format("{}: K = {} makes the tensor-core bound vacuous (K 2^-22 >= 1): nothing can be checked against it", what, K);
        return c;
    }
    const auto* g = static_cast<const double*>(got.data());
    const auto* v = static_cast<const double*>(pb.value.data());
    const auto* bd = static_cast<const double*>(pb.bound.data());
    const std::int64_t n = got.numel();
    c.count = n;
    std::mutex m;
    double worst_ratio = -1.0;
    loom::detail::parallel_for(n, 1 << 14, [&](std::int64_t begin, std::int64_t end) {
        std::int64_t bad = 0, wi = -1;
        double wr = -1.0;
        for (std::int64_t i = begin; i < end; ++i) {
            bool ok;
            double ratio;
            if (exact) {
                // The exact sum (|C| < 2^53 for any int8 product a tensor holds) modulo 2^32, as int32.
                const auto wrapped = static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::int64_t>(v[i])));
                ok = g[i] == static_cast<double>(wrapped);
                ratio = ok ? 0.0 : std::numeric_limits<double>::infinity();
            } else if (!std::isfinite(v[i])) {
                // An Inf or NaN operand: IEEE's result (Inf of C's sign, or NaN), whatever the bound says.
                ok = std::isnan(v[i]) ? std::isnan(g[i]) : g[i] == v[i];
                ratio = ok ? 0.0 : std::numeric_limits<double>::infinity();
            } else {
                const double limit = bd[i] * (1.0 + u) + u * std::fabs(v[i]) + s;
                if (std::isinf(g[i])) {
                    // Overflow is allowed only where the bound reaches the dtype's overflow threshold, with C's sign.
                    ok = std::fabs(v[i]) + limit >= overflow && std::signbit(g[i]) == std::signbit(v[i]);
                    ratio = ok ? 0.0 : std::numeric_limits<double>::infinity();
                } else {
                    const double err = std::fabs(g[i] - v[i]);  // NaN for a NaN result: a mismatch
                    ok = err <= limit;
                    ratio = std::isnan(err) ? std::numeric_limits<double>::infinity() : limit > 0 ? err / limit : err > 0 ? INFINITY : 0.0;
                }
            }
            if (!ok) ++bad;
            if (ratio > wr) wr = ratio, wi = i;
        }
        const std::lock_guard<std::mutex> lock(m);
        c.mismatches += bad;
        if (wr > worst_ratio) worst_ratio = wr, c.worst_index = wi;
    });
    c.ok = c.mismatches == 0;
    if (c.worst_index >= 0) {
        c.worst_got = g[c.worst_index];
        c.worst_expected = v[c.worst_index];
        c.worst_ulps = worst_ratio;  // here: the error as a fraction of the element's bound
        c.worst_multi_index.assign(got.shape().size(), 0);
        std::int64_t rem = c.worst_index;
        for (std::size_t k = got.shape().size(); k-- > 0;) {
            c.worst_multi_index[k] = rem % got.shape()[k];
            rem /= got.shape()[k];
        }
    }
    c.message = fmt::format(
        "{}: {} of {} elements outside the tensor-core bound gamma(K = {}, 2^-22) |A||B| (1 + u) + u |C| + {} (u = {}, {} product{}); "
        "worst at [{}]: got {}, exact {}, bound {} (error {:.3g} of the bound)",
        what, c.mismatches, n, K, s, u, name(product_dtype), exact ? ": exact, modulo 2^32" : "", fmt::join(c.worst_multi_index, ", "), c.worst_got, c.worst_expected,
        c.worst_index >= 0 ? bd[c.worst_index] * (1.0 + u) + u * std::fabs(v[c.worst_index]) + s : 0.0, worst_ratio);
    return c;
}

}  // namespace loom::testing
