// var, std, softmax, logsumexp, layernorm and rmsnorm (docs/semantics.md, section 7) on host tensors: each is
// the documented graph node for node, and its values are within the documented error bound of the exact
// result, computed here in long double over fresh random inputs (the seed is printed on failure;
// LOOM_TEST_SEED fixes it).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <loom/loom.hpp>
#include <random>
#include <string>
#include <vector>

#include "error_message.hpp"

using namespace loom;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::uint64_t fresh_seed() {
    if (const char* s = std::getenv("LOOM_TEST_SEED")) return std::strtoull(s, nullptr, 10);
    return (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
}

Tensor random_host(const Shape& shape, DType dt, std::uint64_t seed, testing::Random dist = {}) {
    return testing::random_tensor(shape, dt, seed, dist);
}

Tensor host_of(const Shape& shape, DType dt, const std::vector<double>& v) {
    Tensor t = Tensor::host(shape, float64);
    REQUIRE(static_cast<std::int64_t>(v.size()) == t.numel());
    std::copy(v.begin(), v.end(), static_cast<double*>(t.data()));
    return dt == float64 ? t : reference::cast(t, dt);
}

std::vector<long double> values(const Tensor& t) {
    std::vector<long double> v(static_cast<std::size_t>(t.numel()));
    const Tensor h = t.to_host();
    for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = h.get_double(i);
    return v;
}

double unit_roundoff(DType dt) {
    return dt == float64 ? 0x1p-53 : 0x1p-24;
}

// γ_k for the documented reduction order over L elements: k additions on one element's path (at most
// 4 ceil(Lc / 1024) in its lane, Lc = min(L, 8192), 8 in the butterfly, ceil(log2(chunks)) in the tree).
double gamma_order(std::int64_t L, double u) {
    const std::int64_t lc = std::min<std::int64_t>(L, 8192), chunks = (L + 8191) / 8192;
    const double k = 4.0 * static_cast<double>((lc + 1023) / 1024) + 8.0 +
                     std::ceil(std::log2(static_cast<double>(chunks)));
    return k * u / (1.0 - k * u);
}

// The exact two-pass statistics of one group of values.
struct Exact {
    long double mean = 0, s = 0, abs_mean = 0;  // s = sum of squared deviations
};
Exact exact_stats(const std::vector<long double>& v) {
    Exact e;
    for (long double x : v) {
        e.mean += x;
        e.abs_mean += std::fabs(x);
    }
    e.mean /= static_cast<long double>(v.size());
    e.abs_mean /= static_cast<long double>(v.size());
    for (long double x : v) e.s += (x - e.mean) * (x - e.mean);
    return e;
}

// Relative error bound of var (docs/semantics.md, "Variance and standard deviation"): γ_k for the sum of
// squares, 4u for the roundings of d, q and the division (and k's), plus the shift N (m - mean)^2 / s of an
// inexact mean m, with |m - mean| <= γ_k mean|x| + u |mean| (the mean's own sum and division).
double var_rel_bound(const Exact& e, std::int64_t n, double u) {
    const double g = gamma_order(n, u);
    const double dm = g * static_cast<double>(e.abs_mean) + 2 * u * std::fabs(static_cast<double>(e.mean));
    const double shift = e.s > 0 ? static_cast<double>(n) * dm * dm / static_cast<double>(e.s) : 0.0;
    return g + 4 * u + shift;
}

// Elements of a row-major tensor of `shape` grouped by output element of a reduction over `axes`.
std::vector<std::vector<long double>> groups(const std::vector<long double>& v, const Shape& shape,
                                             const Axes& axes) {
    const int r = static_cast<int>(shape.size());
    std::vector<bool> red(static_cast<std::size_t>(r), axes.empty());
    for (auto a : axes) red[static_cast<std::size_t>(a < 0 ? a + r : a)] = true;
    std::int64_t n_out = 1;
    for (int k = 0; k < r; ++k)
        if (!red[static_cast<std::size_t>(k)]) n_out *= shape[static_cast<std::size_t>(k)];
    std::vector<std::vector<long double>> g(static_cast<std::size_t>(n_out));
    std::vector<std::int64_t> idx(static_cast<std::size_t>(r), 0);
    for (std::size_t lin = 0; lin < v.size(); ++lin) {
        std::int64_t out = 0;
        for (int k = 0; k < r; ++k)
            if (!red[static_cast<std::size_t>(k)])
                out = out * shape[static_cast<std::size_t>(k)] + idx[static_cast<std::size_t>(k)];
        g[static_cast<std::size_t>(out)].push_back(v[lin]);
        for (int k = r - 1; k >= 0; --k) {
            if (++idx[static_cast<std::size_t>(k)] < shape[static_cast<std::size_t>(k)]) break;
            idx[static_cast<std::size_t>(k)] = 0;
        }
    }
    return g;
}

// Checks var and std of x over `axes` against the exact values, for correction c.
void check_var_std(const Tensor& x, const Axes& axes, double c, bool keepdims = false) {
    CAPTURE(c);
    CAPTURE(keepdims);
    const Tensor v = var(x, axes, c, keepdims).eval();
    const Tensor s = loom::std(x, axes, c, keepdims).eval();
    const DType dt = is_float(x.dtype()) ? x.dtype() : float32;
    CHECK(v.dtype() == dt);
    CHECK(s.dtype() == dt);
    const auto g = groups(values(x), x.shape(), axes);
    REQUIRE(static_cast<std::int64_t>(g.size()) == v.numel());
    const double u = unit_roundoff(dt);
    const auto got_v = values(v), got_s = values(s);
    for (std::size_t o = 0; o < g.size(); ++o) {
        const Exact e = exact_stats(g[o]);
        const auto n = static_cast<std::int64_t>(g[o].size());
        const long double want = e.s / (static_cast<long double>(n) - c);
        const double rel = var_rel_bound(e, n, u);
        CAPTURE(o);
        CAPTURE(static_cast<double>(want));
        CHECK(std::fabs(got_v[o] - want) <= rel * want);
        CHECK(std::fabs(got_s[o] - std::sqrt(want)) <= (rel / 2 + u) * std::sqrt(want));
    }
}

// Whether a call compiles (a requires-expression is only a test inside a template).
template <class T>
concept var_axes_bool = requires(const T& t) {
    var(t, Axes{1}, true);
};
template <class T>
concept var_axis_bool = requires(const T& t) {
    var(t, 1, true);
};
template <class T>
concept std_axes_bool = requires(const T& t) {
    loom::std(t, Axes{1}, false, true);
};
template <class T>
concept stddev_axis_bool = requires(const T& t) {
    stddev(t, -1, true);
};
template <class T>
concept var_axes_int = requires(const T& t) {
    var(t, Axes{}, 1);
};
template <class T>
concept stddev_axis_int_keepdims = requires(const T& t) {
    stddev(t, 1, 1, true);
};

}  // namespace

TEST_CASE(
    "var and std: float32 and float64 rows, columns and all axes, corrections 0 and 1, within the bound") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    for (DType dt : {float32, float64}) {
        const std::string dtype_name(name(dt));
        CAPTURE(dtype_name);
        const Tensor x = random_host({7, 3000}, dt, seed, testing::Random::normal(0.5, 2.0));
        for (double c : {0.0, 1.0}) {
            check_var_std(x, {1}, c);
            check_var_std(x, {0}, c);
            check_var_std(x, {}, c);       // all 21000 elements: three chunks
            check_var_std(x, {-1, 0}, c);  // the same, axes given
        }
    }
}

TEST_CASE("var and std: keepdims, several axes, negative axes, one-axis overloads") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    const Tensor x = random_host({4, 5, 6}, float32, seed, testing::Random::normal(-3.0, 0.7));
    check_var_std(x, {0, 2}, 1.0);
    check_var_std(x, {-1, 0}, 0.0, true);
    check_var_std(x, {1}, 1.0, true);
    CHECK(var(x, {0, 2}).shape() == Shape{5});
    CHECK(var(x, {0, 2}, 1, true).shape() == Shape{1, 5, 1});
    CHECK(loom::std(x, -1, 1, true).shape() == Shape{4, 5, 1});
    CHECK(var(x).shape() == Shape{});
    CHECK(var(x, {}, 1).shape() == Shape{});  // an empty brace list is "all axes", not axis 0
    CHECK(var(x, 1).node() == var(x, Axes{1}).node());
    CHECK(loom::std(x, 2, 1.0).node() == loom::std(x, Axes{-1}, 1.0).node());
    // keepdims changes the shape only.
    const auto a = values(var(x, {0, 2}, 1).eval()), b = values(var(x, {0, 2}, 1, true).eval());
    CHECK(a == b);
}

TEST_CASE("var and std are the written-out two-pass formulas, bit for bit") {
    const Tensor x = random_host({3, 1000}, float32, fresh_seed());
    for (double c : {0.0, 1.0, 2.5}) {
        const Array m = mean(x, 1, true);
        const Array q = (Array(x) - m) * (Array(x) - m);
        const Array formula = sum(q, 1) / (1000.0 - c);
        CHECK(var(x, 1, c).node() == formula.node());  // the same interned graph
        CHECK(loom::std(x, 1, c).node() == sqrt(formula).node());
    }
    CHECK(var(x, 1).node() != mean(x, 1).node());
    // With correction 0 the value is mean((x - m)^2): one division by N at the accumulation type.
    const Array q = (Array(x) - mean(x, 1, true)) * (Array(x) - mean(x, 1, true));
    CHECK(values(var(x, 1).eval()) == values(mean(q, 1).eval()));
}

TEST_CASE("var and std of integer and bool inputs are float32 and use the exact integer mean") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    const Tensor xi = random_host({6, 500}, int32, seed, testing::Random::uniform(-1000, 1000));
    check_var_std(xi, {1}, 0.0);
    check_var_std(xi, {1}, 1.0);
    check_var_std(xi, {}, 1.0);
    const Tensor x8 = random_host({300}, int8, seed + 1, testing::Random::uniform(-128, 127));
    check_var_std(x8, {}, 1.0);  // x - m in float32: int8 never wraps
    const Tensor b = host_of({4}, bool_, {1, 0, 1, 1});
    const Tensor vb = var(b).eval();
    CHECK(vb.dtype() == float32);
    CHECK(vb.get_double(0) == 0.1875);  // p (1 - p), exactly
    CHECK(var(b, {}, 1).eval().get_double(0) == 0.25);
}

TEST_CASE("var and std: N - correction <= 0 gives +Inf, or NaN when every deviation is 0 (as NumPy)") {
    const Tensor x = host_of({3}, float32, {1, 2, 3});
    CHECK(var(x, {}, 3).eval().get_double(0) == kInf);
    CHECK(var(x, {}, 4).eval().get_double(0) == kInf);  // N - c < 0: clamped to 0, never negative
    CHECK(loom::std(x, {}, 3).eval().get_double(0) == kInf);
    CHECK(var(x, {}, 2).eval().get_double(0) == 2.0);
    const Tensor same = host_of({3}, float32, {2, 2, 2});
    CHECK(std::isnan(var(same, {}, 3).eval().get_double(0)));
    CHECK(var(same, {}, 0).eval().get_double(0) == 0.0);
    const Tensor one = host_of({2, 1}, float64, {5, 7});
    const Tensor v1 = var(one, 1, 1).eval();
    CHECK(std::isnan(v1.get_double(0)));
    CHECK(std::isnan(loom::std(one, 1, 1).eval().get_double(1)));
    const Tensor inf = host_of({3}, float32, {1, kInf, 3});
    CHECK(std::isnan(var(inf).eval().get_double(0)));  // Inf - Inf
}

TEST_CASE("var is two-pass: data at 1e4 with unit spread keeps its digits where E[x^2] - E[x]^2 loses them") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    const std::int64_t n = 1 << 16;
    const Tensor x = random_host({n}, float32, seed, testing::Random::normal(1e4, 1.0));
    check_var_std(x, {}, 0.0);
    check_var_std(x, {}, 1.0);
    const Exact e = exact_stats(values(x));
    const double want = static_cast<double>(e.s / n);
    const double two_pass = var(x).eval().get_double(0);
    const double naive = (mean(Array(x) * x) - mean(x) * mean(x)).eval().get_double(0);
    CAPTURE(want);
    CAPTURE(two_pass);
    CAPTURE(naive);
    CHECK(std::fabs(two_pass - want) <= 1e-5 * want);
    CHECK(std::fabs(naive - want) >
          0.5 * want);  // a difference of values near 1e8 (ulp 8): no digit is right
}

TEST_CASE("float16 and bfloat16: var, std, softmax, layernorm, rmsnorm run in float32 and round once") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    for (DType dt : {float16, bfloat16}) {
        const std::string dtype_name(name(dt));
        CAPTURE(dtype_name);
        const double uh = dt == float16 ? 0x1p-11 : 0x1p-8;  // the half dtype's unit roundoff
        // The documented graphs: x widened to float32, every step at float32, one rounding at the end.
        const Tensor x = random_host({8, 1000}, dt, seed, testing::Random::normal(1.0, 2.0));
        const Array xa = astype(x, float32), m = mean(xa, 1, true), d = xa - m;
        CHECK(var(x, 1, 1.0).node() == astype(sum(d * d, 1) / 999.0, dt).node());
        CHECK(loom::std(x, 1).node() == astype(sqrt(sum(d * d, 1) / 1000.0), dt).node());
        const Array e = exp(xa - max(xa, -1, true));
        CHECK(softmax(x).node() == astype(e / sum(e, -1, true), dt).node());
        CHECK(rmsnorm(x, 1.0, 1e-6).node() ==
              astype(xa * rsqrt(mean(xa * xa, -1, true) + 1e-6) * 1.0, dt).node());
        CHECK(layernorm(x, 1.0, 0.0, 1e-5).node() ==
              astype(d * rsqrt(sum(d * d, 1, true) / 1000.0 + 1e-5) * 1.0 + 0.0, dt).node());
        // Within float32's bound, plus the final rounding to the half dtype.
        const auto xv = values(x), vv = values(var(x, 1, 1.0).eval());
        for (std::int64_t r = 0; r < 8; ++r) {
            const std::vector<long double> row(xv.begin() + r * 1000, xv.begin() + (r + 1) * 1000);
            const Exact ex = exact_stats(row);
            const double want = static_cast<double>(ex.s / 999);
            CAPTURE(r);
            CHECK(std::fabs(vv[static_cast<std::size_t>(r)] - want) <=
                  (var_rel_bound(ex, 1000, 0x1p-24) + uh) * want);
        }
        // 100000 squares of about 4 sum to 4e5, beyond float16's 65504: the sum is kept in float32.
        const Tensor big = random_host({100000}, dt, seed + 1, testing::Random::normal(1.0, 2.0));
        const Exact eb = exact_stats(values(big));
        const double wb = static_cast<double>(eb.s / (100000 - 1));
        CHECK(std::fabs(var(big, {}, 1).eval().get_double(0) - wb) <=
              (var_rel_bound(eb, 100000, 0x1p-24) + uh) * wb);

        // Deviations of 256 or more: their squares pass float16's range, but not float32's.
        std::vector<double> v(100, 0.0);
        v[0] = 260;
        v[1] = -260;
        const Tensor h = host_of({100}, dt, v);
        const double hv = var(h).eval().get_double(0);
        CHECK(hv == static_cast<double>(reference::cast(host_of({}, float64, {1352.0}), dt).get_double(0)));
        CHECK(stddev(h).eval().get_double(0) ==
              reference::cast(host_of({}, float64, {std::sqrt(1352.0)}), dt).get_double(0));
        const Tensor r2 = rmsnorm(host_of({2}, dt, {300, 300}), 1.0, 1e-5).eval();
        CHECK(r2.dtype() == dt);
        CHECK(r2.get_double(0) == 1.0);
        CHECK(r2.get_double(1) == 1.0);
        const Tensor l4 = layernorm(host_of({4}, dt, {-300, 300, -300, 300}), 1.0, 0.0, 1e-5).eval();
        CHECK(l4.dtype() == dt);
        for (int i = 0; i < 4; ++i) CHECK(l4.get_double(i) == (i % 2 ? 1.0 : -1.0));
        // eps = 1e-8 is 0 in float16 but not in float32: zeros normalize to zeros, not NaN.
        const Tensor z = rmsnorm(host_of({2}, dt, {0, 0}), 1.0, 1e-8).eval();
        CHECK(z.get_double(0) == 0.0);
        CHECK(z.get_double(1) == 0.0);
        // The result dtype is x's promoted with weight's: a float32 weight gives float32.
        const Tensor w32 = random_host({1000}, float32, seed + 2);
        CHECK(rmsnorm(x, w32, 1e-6).dtype() == float32);
        CHECK(layernorm(x, w32, 0.0, 1e-6).dtype() == float32);
        CHECK(layernorm(x, 1.0, Tensor(random_host({1000}, dt, seed + 3)), 1e-6).dtype() == dt);
    }
}

TEST_CASE("stddev is loom::std, and a bool in the correction's place does not compile") {
    const Tensor x = random_host({3, 50}, float32, fresh_seed());
    CHECK(stddev(x, 1, 1.0).node() == loom::std(x, 1, 1.0).node());
    CHECK(stddev(x, {0, 1}).node() == loom::std(x).node());
    // var(x, {1}, true) would silently mean correction 1 (sum's third argument is keepdims).
    static_assert(!var_axes_bool<Tensor>);
    static_assert(!var_axis_bool<Tensor>);
    static_assert(!std_axes_bool<Tensor>);
    static_assert(!stddev_axis_bool<Tensor>);
    static_assert(var_axes_int<Tensor>);  // an integer correction is fine
    static_assert(stddev_axis_int_keepdims<Tensor>);
}

TEST_CASE("var, std, softmax, layernorm, rmsnorm: errors name the function and the caller's line") {
    const Tensor x = random_host({3, 4}, float32, 1);
    std::string m = loom_test::error_message([&] { (void)var(x, 2); });
    CHECK(m.find("var(): axis 2 out of range for operand [3, 4] float32") == 0);
    CHECK(m.find("test_composites.cpp:") != std::string::npos);
    m = loom_test::error_message([&] { (void)loom::std(x, {1, -1}); });
    CHECK(m.find("std(): axis -1 repeated in [1, -1]") == 0);
    m = loom_test::error_message([&] { (void)softmax(x, 5); });
    CHECK(m.find("softmax(): axis 5 out of range") == 0);
    m = loom_test::error_message([&] { (void)layernorm(x, 1.0, 0.0, 1e-5, -3); });
    CHECK(m.find("layernorm(): axis -3 out of range") == 0);
    m = loom_test::error_message([&] { (void)rmsnorm(x, Tensor(random_host({3}, float32, 2)), 1e-6); });
    CHECK(m.find("rmsnorm(): weight [3] float32 does not broadcast against x [3, 4] float32") == 0);
    CHECK(m.find("test_composites.cpp:") != std::string::npos);
    m = loom_test::error_message([&] {
        (void)layernorm(x, 1.0, Tensor(random_host({2, 1}, float16, 3)), 1e-6);
    });
    CHECK(m.find("layernorm(): bias [2, 1] float16 does not broadcast against x [3, 4] float32") == 0);
    // The bias is checked against x broadcast with the weight.
    m = loom_test::error_message([&] {
        (void)layernorm(x, Tensor(random_host({2, 1, 4}, float32, 4)),
                        Tensor(random_host({5, 1, 1}, float32, 5)), 1e-6);
    });
    CHECK(m.find("layernorm(): bias [5, 1, 1] float32 does not broadcast against x and weight [2, 3, 4]") ==
          0);
    m = loom_test::error_message([&] { (void)stddev(x, 5); });
    CHECK(m.find("stddev(): axis 5 out of range") == 0);
    const Tensor empty = Tensor::host({3, 0}, float32);
    m = loom_test::error_message([&] { (void)softmax(empty); });
    CHECK(m.find(
              "softmax(): reduction of operand [3, 0] float32 over axes [1]: axis 1 has length 0 and softmax "
              "needs at least one element") == 0);
    CHECK(var(empty, 0).shape() == Shape{0});  // an empty result is fine
}

TEST_CASE("softmax is the documented graph, and rows sum to 1 and match an exact softmax") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    const std::int64_t R = 64, C = 1000;
    const Tensor x = random_host({R, C}, float32, seed, testing::Random::normal(0.0, 3.0));
    const Array e = exp(Array(x) - max(x, -1, true));
    CHECK(softmax(x).node() == (e / sum(e, -1, true)).node());
    const Tensor y = softmax(x).eval();
    CHECK(y.dtype() == float32);
    CHECK(y.shape() == x.shape());
    const auto xv = values(x), yv = values(y);
    const double u = 0x1p-24, g = gamma_order(C, u);
    for (std::int64_t r = 0; r < R; ++r) {
        CAPTURE(r);
        long double mx = -INFINITY, s = 0, row_sum = 0, spread = 0;
        for (std::int64_t c = 0; c < C; ++c) mx = std::max(mx, xv[static_cast<std::size_t>(r * C + c)]);
        for (std::int64_t c = 0; c < C; ++c) {
            s += std::exp(xv[static_cast<std::size_t>(r * C + c)] - mx);
            spread = std::max(spread, mx - xv[static_cast<std::size_t>(r * C + c)]);
        }
        // Per element: x - m rounds (relative error of exp <= |x - m| u), exp 1 ulp (2u), the sum γ_k plus
        // its terms' errors, the division u.
        const double sp = static_cast<double>(spread);
        for (std::int64_t c = 0; c < C; ++c) {
            const auto i = static_cast<std::size_t>(r * C + c);
            const long double want = std::exp(xv[i] - mx) / s;
            const double d = static_cast<double>(mx - xv[i]);
            const double bound = (d + sp) * u + 4 * u + g + u;
            if (!(std::fabs(yv[i] - want) <= bound * want)) {
                FAIL_CHECK("element " << c << ": got " << static_cast<double>(yv[i]) << ", want "
                                      << static_cast<double>(want));
                break;
            }
            row_sum += yv[i];
        }
        CHECK(std::fabs(static_cast<double>(row_sum) - 1.0) <= 2 * sp * u + 5 * u + g);
    }
    // Along the first axis too: columns sum to 1.
    const auto yc = values(softmax(x, 0).eval());
    for (std::int64_t c = 0; c < C; c += 97) {
        long double col = 0;
        for (std::int64_t r = 0; r < R; ++r) col += yc[static_cast<std::size_t>(r * C + c)];
        CHECK(std::fabs(static_cast<double>(col) - 1.0) <= 1e-5);
    }
}

TEST_CASE("logsumexp is the documented graph and matches an exact log-sum-exp, non-finite rows as NumPy") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    const std::int64_t R = 64, C = 1000;
    const Tensor x = random_host({R, C}, float32, seed, testing::Random::normal(0.0, 3.0));
    const Array m = max(x, -1, true), c = where(isfinite(m), m, 0.0);
    CHECK(logsumexp(x).node() == (log(sum(exp(Array(x) - c), -1)) + c.reshape({R})).node());
    CHECK(logsumexp(x, 1, true).node() == (log(sum(exp(Array(x) - c), 1, true)) + c).node());
    const Tensor y = logsumexp(x).eval();
    CHECK(y.shape() == Shape{R});
    CHECK(y.dtype() == float32);
    const auto xv = values(x), yv = values(y);
    const double u = 0x1p-24, g = gamma_order(C, u);
    for (std::int64_t r = 0; r < R; ++r) {
        CAPTURE(r);
        long double mx = -INFINITY, s = 0, spread = 0;
        for (std::int64_t k = 0; k < C; ++k) mx = std::max(mx, xv[static_cast<std::size_t>(r * C + k)]);
        for (std::int64_t k = 0; k < C; ++k) {
            s += std::exp(xv[static_cast<std::size_t>(r * C + k)] - mx);
            spread = std::max(spread, mx - xv[static_cast<std::size_t>(r * C + k)]);
        }
        const long double want = std::log(s) + mx;
        // The sum's relative error (each term's x - m rounding, exp's 2u, the order's γ_k) becomes an
        // absolute error of log; log itself and the final addition round once each.
        const double rel_sum = static_cast<double>(spread) * u + 2 * u + g;
        const double bound = rel_sum / (1 - rel_sum) + 2 * u * static_cast<double>(std::fabs(want)) + u;
        CHECK(std::fabs(static_cast<double>(yv[static_cast<std::size_t>(r)] - want)) <= bound);
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const Tensor z = host_of({5, 3}, float32,
                             {-kInf, -kInf, -kInf,  //
                              1, kInf, 2,           //
                              1, nan, kInf,         //
                              -kInf, 0, -kInf,      //
                              1000, 1000, -kInf});
    const Tensor w = logsumexp(z).eval();
    CHECK(w.get_double(0) == -kInf);
    CHECK(w.get_double(1) == kInf);
    CHECK(std::isnan(w.get_double(2)));
    CHECK(w.get_double(3) == 0.0);
    CHECK(w.get_double(4) ==
          doctest::Approx(1000 + std::log(2.0)).epsilon(1e-7));  // no overflow of exp(1000)
    // Integers give float32; halves compute in float32 and round once.
    CHECK(logsumexp(host_of({2}, int32, {0, 0})).eval().get_double(0) ==
          doctest::Approx(std::log(2.0)).epsilon(1e-7));
    const Tensor h = random_host({4, 100}, bfloat16, seed + 1);
    const Array ha = astype(h, float32), hm = max(ha, -1, true), hc = where(isfinite(hm), hm, 0.0);
    CHECK(logsumexp(h).node() == astype(log(sum(exp(ha - hc), -1)) + hc.reshape({4}), bfloat16).node());
    const std::string e = loom_test::error_message([&] { (void)logsumexp(x, 2); });
    CHECK(e.find("logsumexp(): axis 2 out of range for operand [64, 1000] float32") == 0);
    CHECK(e.find("test_composites.cpp:") != std::string::npos);
}

TEST_CASE("softmax: -Inf entries give 0, rows of -Inf only or with +Inf or NaN give NaN, ints give float32") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const Tensor x = host_of({4, 4}, float32,
                             {-kInf, 0, -kInf, std::log(3.0),  //
                              -kInf, -kInf, -kInf, -kInf,      //
                              1, kInf, 2, 3,                   //
                              1, nan, 2, 3});
    const Tensor y = softmax(x).eval();
    CHECK(y.get_double(0) == 0.0);
    CHECK(y.get_double(2) == 0.0);
    CHECK(y.get_double(1) == doctest::Approx(0.25).epsilon(1e-6));
    CHECK(y.get_double(3) == doctest::Approx(0.75).epsilon(1e-6));
    for (int i = 4; i < 16; ++i) {
        CAPTURE(i);
        CHECK(std::isnan(y.get_double(i)));
    }
    // x - max in float32: -128 - 127 = -255 (in int8 it would wrap to 1 and take most of the mass).
    const Tensor xi = host_of({1, 3}, int8, {-128, 100, 127});
    const Tensor yi = softmax(xi).eval();
    CHECK(yi.dtype() == float32);
    CHECK(yi.get_double(0) == 0.0);  // exp(-255) underflows float32
    CHECK(yi.get_double(1) == doctest::Approx(std::exp(-27.0) / (1.0 + std::exp(-27.0))).epsilon(1e-5));
    CHECK(yi.get_double(2) == doctest::Approx(1.0 / (1.0 + std::exp(-27.0))));
}

TEST_CASE("layernorm is the documented graph and matches an exact layernorm within the bound") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    const std::int64_t R = 32, C = 768;
    const double eps = 1e-5;
    const Tensor x = random_host({R, C}, float32, seed, testing::Random::normal(0.5, 2.0));
    const Tensor w = random_host({C}, float32, seed + 1), b = random_host({C}, float32, seed + 2);
    const Array d = Array(x) - mean(x, -1, true);
    CHECK(layernorm(x, w, b, eps).node() == ((d * rsqrt(var(x, -1, 0, true) + eps)) * w + b).node());
    const Tensor y = layernorm(x, w, b, eps).eval();
    CHECK(y.dtype() == float32);
    const auto xv = values(x), wv = values(w), bv = values(b), yv = values(y);
    const double u = 0x1p-24, g = gamma_order(C, u);
    for (std::int64_t r = 0; r < R; ++r) {
        CAPTURE(r);
        const std::vector<long double> row(xv.begin() + r * C, xv.begin() + (r + 1) * C);
        const Exact e = exact_stats(row);
        const long double v = e.s / C,
                          rs = 1.0L / std::sqrt(v + static_cast<long double>(static_cast<float>(eps)));
        // |Δm| from the mean; relative error of r: half of v's (and of + eps) plus rsqrt's 1 ulp (2u).
        const double dm =
            g * static_cast<double>(e.abs_mean) + 2 * u * std::fabs(static_cast<double>(e.mean));
        const double er = (var_rel_bound(e, C, u) + u) / 2 + 2 * u;
        for (std::int64_t c = 0; c < C; ++c) {
            const auto i = static_cast<std::size_t>(r * C + c);
            const long double dd = row[static_cast<std::size_t>(c)] - e.mean;
            const long double want =
                dd * rs * wv[static_cast<std::size_t>(c)] + bv[static_cast<std::size_t>(c)];
            const double rw = static_cast<double>(std::fabs(rs * wv[static_cast<std::size_t>(c)]));
            const double bound = 2 * (rw * (dm + u * std::fabs(static_cast<double>(dd))) +
                                      rw * std::fabs(static_cast<double>(dd)) * (er + 2 * u) +
                                      u * std::fabs(static_cast<double>(want)));
            if (!(std::fabs(yv[i] - want) <= bound)) {
                FAIL_CHECK("element " << c << ": got " << static_cast<double>(yv[i]) << ", want "
                                      << static_cast<double>(want) << ", bound " << bound);
                break;
            }
        }
    }
    // No affine transform: weight 1 and bias 0; the rows then have mean 0 and variance 1 / (1 + eps / v).
    const auto z = values(layernorm(x, 1.0, 0.0, eps).eval());
    const auto g0 = groups(z, {R, C}, {1});
    for (const auto& row : g0) {
        const Exact e = exact_stats(row);
        CHECK(std::fabs(static_cast<double>(e.mean)) <= 1e-5);
        CHECK(static_cast<double>(e.s / C) == doctest::Approx(1.0).epsilon(1e-5));
    }
}

TEST_CASE("rmsnorm is the documented graph and matches an exact rmsnorm within the bound") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    const std::int64_t R = 16, C = 4096;
    const double eps = 1e-6;
    const Tensor x = random_host({R, C}, float32, seed, testing::Random::normal(0.0, 1.5));
    const Tensor w = random_host({C}, float32, seed + 1);
    CHECK(rmsnorm(x, w, eps).node() == ((Array(x) * rsqrt(mean(Array(x) * x, -1, true) + eps)) * w).node());
    const Tensor y = rmsnorm(x, w, eps).eval();
    CHECK(y.dtype() == float32);
    const auto xv = values(x), wv = values(w), yv = values(y);
    const double u = 0x1p-24, g = gamma_order(C, u);
    // Relative error per element: the mean of squares γ_k + 2u (squares, division), + eps u, halved by
    // rsqrt, plus rsqrt's 1 ulp (2u), plus two products (2u).
    const double bound = 2 * ((g + 3 * u) / 2 + 2 * u + 2 * u);
    for (std::int64_t r = 0; r < R; ++r) {
        long double ms = 0;
        for (std::int64_t c = 0; c < C; ++c)
            ms += xv[static_cast<std::size_t>(r * C + c)] * xv[static_cast<std::size_t>(r * C + c)];
        ms /= C;
        const long double rs = 1.0L / std::sqrt(ms + static_cast<long double>(static_cast<float>(eps)));
        for (std::int64_t c = 0; c < C; ++c) {
            const auto i = static_cast<std::size_t>(r * C + c);
            const long double want = xv[i] * rs * wv[static_cast<std::size_t>(c)];
            if (!(std::fabs(yv[i] - want) <= bound * std::fabs(want))) {
                FAIL_CHECK("row " << r << " element " << c << ": got " << static_cast<double>(yv[i])
                                  << ", want " << static_cast<double>(want));
                break;
            }
        }
    }
    // Integers are converted to float32 first: x * x never wraps.
    const Tensor xi = host_of({1, 2}, int32, {100000, -100000});
    const Tensor yi = rmsnorm(xi, 1.0, 0.0).eval();
    CHECK(yi.dtype() == float32);
    CHECK(yi.get_double(0) == doctest::Approx(1.0));
    CHECK(yi.get_double(1) == doctest::Approx(-1.0));
}
