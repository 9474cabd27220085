// Scans (cumsum, cumprod, cummax, cummin, logcumsumexp; docs/semantics.md, "Scans") on the CPU reference:
// integers exactly equal to a serial int64 scan; floats within the derived bound of a float64 serial scan;
// the reference follows the contract's tree (a small re-implementation written recursively, on values whose
// sums tell orders apart); exclusive scans are the inclusive ones shifted; non-last axes and views; NaN,
// -0.0 and infinities; empty axes; the errors of building one.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "loom/codegen/plan/partition.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

const std::vector<std::int64_t> kSizes = {0, 1, 31, 32, 33, 2047, 2048, 2049, 4097, 3 * 2048 + 5, 70000};

using ScanFn = Array (*)(const Operand&, std::int64_t, ScanOptions, Loc);

struct ScanOp {
    const char* name;
    ScanFn fn;
    ir::Op id;
};
const ScanOp kOps[] = {{"cumsum", cumsum, ir::Op::CumSum},
                       {"cumprod", cumprod, ir::Op::CumProd},
                       {"cummax", cummax, ir::Op::CumMax},
                       {"cummin", cummin, ir::Op::CumMin},
                       {"logcumsumexp", logcumsumexp, ir::Op::LogCumSumExp}};

// A deterministic stream of 64-bit words (splitmix64).
struct Words {
    std::uint64_t s;
    std::uint64_t next() {
        std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }  // [0, 1)
};

// A host tensor of `t` holding `values` (each exactly representable in t, or rounded by the cast).
Tensor tensor_of(const std::vector<double>& values, const Shape& shape, DType t) {
    REQUIRE(static_cast<std::int64_t>(values.size()) == numel(shape));
    Tensor f = Tensor::host(shape, DType::Float64);
    std::memcpy(f.data(), values.data(), values.size() * sizeof(double));
    return t == DType::Float64 ? f : reference::evaluate(astype(Array(f), t).node());
}

std::vector<double> values_of(const Tensor& t) {
    return reference::evaluate(astype(Array(t), DType::Float64).node()).to_vector<double>();
}

Tensor ref(const Array& y) {
    return reference::evaluate(y.node());
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

// Values of dtype t for op: small integers (cumprod: mostly 1, some 2 and -1, so products stay in range for a
// while and then wrap); floats from a normal-ish spread (cumprod: close to 1, logcumsumexp: [-10, 10)).
std::vector<double> draw(const char* op, DType t, std::int64_t n, std::uint64_t seed) {
    Words w{seed};
    std::vector<double> v(static_cast<std::size_t>(n));
    const std::string o = op;
    for (auto& x : v) {
        const double u = w.uniform();
        if (t == DType::Bool)
            x = u < 0.5 ? 0.0 : 1.0;
        else if (!is_float(t))
            x = o == "cumprod"      ? (u < 0.9    ? 1.0
                                       : u < 0.95 ? 2.0
                                                  : -1.0)
                : t == DType::UInt8 ? std::floor(u * 256.0)
                                    : std::floor(u * 200.0) - 100.0;
        else if (o == "cumprod")
            x = 1.0 + (u - 0.5) / 64.0;
        else
            x = (u - 0.5) * 20.0;
    }
    return v;
}

// The serial inclusive scan in float64 (floats) or wrapping int64 (integers), as plain loops.
std::vector<double> serial(const std::string& op, const std::vector<double>& v, bool ints) {
    std::vector<double> out(v.size());
    std::int64_t iacc = 0;
    double acc = 0.0;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const double x = v[i];
        if (ints) {
            const auto xi = static_cast<std::int64_t>(x);
            if (i == 0)
                iacc = xi;
            else if (op == "cumsum")
                iacc = static_cast<std::int64_t>(static_cast<std::uint64_t>(iacc) +
                                                 static_cast<std::uint64_t>(xi));
            else if (op == "cumprod")
                iacc = static_cast<std::int64_t>(static_cast<std::uint64_t>(iacc) *
                                                 static_cast<std::uint64_t>(xi));
            else if (op == "cummax")
                iacc = std::max(iacc, xi);
            else
                iacc = std::min(iacc, xi);
            out[i] = static_cast<double>(iacc);
            continue;
        }
        if (i == 0)
            acc = x;
        else if (op == "cumsum")
            acc += x;
        else if (op == "cumprod")
            acc *= x;
        else if (op == "cummax")
            acc = std::max(acc, x);
        else if (op == "cummin")
            acc = std::min(acc, x);
        else
            acc = std::max(acc, x) + std::log1p(std::exp(std::min(acc, x) - std::max(acc, x)));
        out[i] = acc;
    }
    return out;
}

// Unit roundoff of the accumulator of a float dtype, and of the dtype itself.
double acc_unit(DType t) {
    return t == DType::Float64 ? 0x1p-53 : 0x1p-24;
}
double dtype_unit(DType t) {
    return t == DType::Float16 ? 0x1p-11 : t == DType::BFloat16 ? 0x1p-8 : acc_unit(t);
}

// The depth bound of docs/semantics.md, "Scans": 26 + 2 ceil(log2(tiles)) combines on any value's path.
double depth(std::int64_t n) {
    const std::int64_t tiles = std::max<std::int64_t>(1, (n + 2047) / 2048);
    return 26.0 + 2.0 * std::ceil(std::log2(static_cast<double>(tiles)));
}

// Checks one op and dtype on a row of n elements against the serial scan.
void check_row(const ScanOp& op, DType t, std::int64_t n) {
    CAPTURE(std::string(op.name));
    CAPTURE(name(t));
    CAPTURE(n);
    const std::vector<double> v = draw(op.name, t, n, static_cast<std::uint64_t>(n) * 31 + 7);
    const Tensor x = tensor_of(v, {n}, t);
    const std::vector<double> xv = values_of(x);  // the values as the dtype holds them
    const Tensor y = ref(op.fn(x, 0, {}, Loc::current()));
    CHECK(y.dtype() == ir::scan_result_dtype(op.id, t));
    REQUIRE(y.shape() == Shape{n});
    const std::vector<double> got = values_of(y);
    const bool ints = !is_float(t);
    const std::string o = op.name;
    const std::vector<double> want = serial(o, xv, ints);
    if (ints || o == "cummax" || o == "cummin") {
        for (std::size_t i = 0; i < got.size(); ++i)
            if (got[i] != want[i]) {
                FAIL_CHECK("element " << i << ": " << got[i] << ", serial " << want[i]);
                break;
            }
        return;
    }
    // Floats: |r - exact| <= gamma_h * (sum |v| or, cumprod, |product|; logcumsumexp: 4 units of |r| + 1 per
    // combine), then the rounding to the dtype.
    const double u = acc_unit(t), h = depth(n), gamma = h * u / (1.0 - h * u);
    double abs_sum = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        abs_sum += std::abs(xv[i]);
        double bound = o == "cumsum"    ? gamma * abs_sum
                       : o == "cumprod" ? static_cast<double>(i + 1) * u * 1.01 * std::abs(want[i])
                                        : 4.0 * h * u * (std::abs(want[i]) + 1.0);
        bound = bound * 1.01 + dtype_unit(t) * std::abs(want[i]) * 1.01 + 1e-300;
        if (!(std::abs(got[i] - want[i]) <= bound)) {
            FAIL_CHECK("element " << i << ": " << got[i] << ", float64 serial " << want[i] << ", bound "
                                  << bound);
            break;
        }
    }
}

}  // namespace

TEST_CASE("scan: every op and dtype on rows of 0 to 70000 elements against a serial scan") {
    for (const ScanOp& op : kOps)
        for (DType t : kAllDTypes) {
            if (std::string(op.name) == "logcumsumexp" && !is_float(t)) continue;
            for (std::int64_t n : kSizes) {
                if (n == 70000 && t != DType::Float32 && t != DType::Int32)
                    continue;  // time: one float, one int
                check_row(op, t, n);
            }
        }
}

TEST_CASE("scan: result dtypes") {
    const Tensor x8 = Tensor::host({4}, DType::Int8), xh = Tensor::host({4}, DType::Float16);
    CHECK(cumsum(x8, 0).dtype() == DType::Int64);
    CHECK(cumprod(Tensor::host({4}, DType::Bool), 0).dtype() == DType::Int64);
    CHECK(cumsum(Tensor::host({4}, DType::UInt8), 0).dtype() == DType::Int64);
    CHECK(cumsum(Tensor::host({4}, DType::Int64), 0).dtype() == DType::Int64);
    CHECK(cummax(x8, 0).dtype() == DType::Int8);
    CHECK(cummin(Tensor::host({4}, DType::Bool), 0).dtype() == DType::Bool);
    CHECK(cumsum(xh, 0).dtype() == DType::Float16);
    CHECK(logcumsumexp(Tensor::host({4}, DType::BFloat16), 0).dtype() == DType::BFloat16);
}

namespace {

// The contract's order for a float32 cumsum, written independently of the reference: each quantity as a
// recursive function of its definition (docs/semantics.md, "Scans", steps 1 to 7), nothing memoized.
struct TreeSum {
    const std::vector<float>& v;
    std::int64_t n;

    std::int64_t tile_len(std::int64_t j) const { return std::min<std::int64_t>(2048, n - 2048 * j); }
    std::int64_t threads(std::int64_t j) const { return (tile_len(j) + 7) / 8; }
    float thread_total(std::int64_t j, std::int64_t t) const {
        const std::int64_t b = 2048 * j + 8 * t, e = std::min(2048 * j + tile_len(j), b + 8);
        float s = v[static_cast<std::size_t>(b)];
        for (std::int64_t k = b + 1; k < e; ++k) s = s + v[static_cast<std::size_t>(k)];
        return s;
    }
    // X_t after the lane scan's steps d = 1 .. 2^(level-1).
    float lane(std::int64_t j, std::int64_t t, int level) const {
        if (level == 0) return thread_total(j, t);
        const std::int64_t d = std::int64_t{1} << (level - 1);
        if (t % 32 < d) return lane(j, t, level - 1);
        return lane(j, t - d, level - 1) + lane(j, t, level - 1);
    }
    float warp_total(std::int64_t j, std::int64_t w) const {
        return lane(j, std::min(threads(j), 32 * (w + 1)) - 1, 5);
    }
    float warp(std::int64_t j, std::int64_t w, int level) const {
        if (level == 0) return warp_total(j, w);
        const std::int64_t d = std::int64_t{1} << (level - 1);
        if (w < d) return warp(j, w, level - 1);
        return warp(j, w - d, level - 1) + warp(j, w, level - 1);
    }
    float aggregate(std::int64_t j) const { return warp(j, (threads(j) + 31) / 32 - 1, 3); }
    float node(std::int64_t s, int k) const {
        if (k == 0) return aggregate(s);
        return node(s, k - 1) + node(s + (std::int64_t{1} << (k - 1)), k - 1);
    }
    // The inclusive outputs of the row.
    std::vector<float> outputs() const {
        std::vector<float> r(static_cast<std::size_t>(n));
        for (std::int64_t j = 0; 2048 * j < n; ++j) {
            bool has_carry = false;
            float carry = 0.0f;
            std::int64_t start = 0;
            for (int k = 40; k >= 0; --k)
                if ((j >> k) & 1) {
                    const float part = node(start, k);
                    carry = has_carry ? carry + part : part;
                    has_carry = true;
                    start += std::int64_t{1} << k;
                }
            for (std::int64_t t = 0; t < threads(j); ++t) {
                bool has = has_carry;
                float p = carry;
                const auto fold = [&](float x) {
                    p = has ? p + x : x;
                    has = true;
                };
                if (t / 32 > 0) fold(warp(j, t / 32 - 1, 3));
                if (t % 32 > 0) fold(lane(j, t - 1, 5));
                const std::int64_t b = 2048 * j + 8 * t, e = std::min(2048 * j + tile_len(j), b + 8);
                float acc = has ? p + v[static_cast<std::size_t>(b)] : v[static_cast<std::size_t>(b)];
                r[static_cast<std::size_t>(b)] = acc;
                for (std::int64_t k = b + 1; k < e; ++k)
                    r[static_cast<std::size_t>(k)] = acc = acc + v[static_cast<std::size_t>(k)];
            }
        }
        return r;
    }
};

}  // namespace

TEST_CASE("scan: the reference follows the contract's tree (an independent re-implementation)") {
    // Values of magnitudes 2^-20 to 2^20 and both signs: every order of the additions rounds differently.
    // 70 tiles and more: a row that is the only one has its tiles shared among the reference's threads.
    for (std::int64_t n : {33, 2047, 2049, 3 * 2048 + 5, 5 * 2048 + 77, 8 * 2048, 70 * 2048 + 13}) {
        CAPTURE(n);
        Words w{static_cast<std::uint64_t>(n)};
        std::vector<float> v(static_cast<std::size_t>(n));
        for (auto& x : v)
            x = static_cast<float>((w.uniform() - 0.5) *
                                   std::ldexp(1.0, static_cast<int>(w.next() % 41) - 20));
        Tensor t = Tensor::host({n}, DType::Float32);
        std::memcpy(t.data(), v.data(), v.size() * 4);
        const std::vector<float> got = ref(cumsum(t, 0)).to_vector<float>();
        const std::vector<float> want = TreeSum{v, n}.outputs();
        std::int64_t differ = 0, serial_differ = 0;
        float s = 0.0f;
        for (std::size_t i = 0; i < got.size(); ++i) {
            differ += std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i]);
            s = i == 0 ? v[0] : s + v[i];
            serial_differ += got[i] != s;
        }
        CHECK(differ == 0);
        if (n > 1000) CHECK(serial_differ > 0);  // the values tell the tree from a serial sum
        // Exclusive, scanned in place of the output: the inclusive result shifted by one after +0.
        const std::vector<float> ex = ref(cumsum(t, 0, {.exclusive = true})).to_vector<float>();
        CHECK(std::bit_cast<std::uint32_t>(ex[0]) == 0u);
        std::int64_t shifted = 0;
        for (std::size_t i = 1; i < ex.size(); ++i)
            shifted += std::bit_cast<std::uint32_t>(ex[i]) != std::bit_cast<std::uint32_t>(got[i - 1]);
        CHECK(shifted == 0);
    }
}

TEST_CASE("scan: exclusive is the inclusive scan shifted by one, opened by the identity") {
    for (const ScanOp& op : kOps)
        for (DType t : {DType::Float32, DType::Int32, DType::Float16, DType::Bool, DType::UInt8}) {
            if (std::string(op.name) == "logcumsumexp" && !is_float(t)) continue;
            CAPTURE(std::string(op.name));
            CAPTURE(name(t));
            const std::int64_t n = 4097;
            const Tensor x = tensor_of(draw(op.name, t, 2 * n, 3), {2, n}, t);
            const Tensor inc = ref(op.fn(x, 1, {}, Loc::current()));
            const Tensor exc = ref(op.fn(x, -1, {.exclusive = true}, Loc::current()));
            const std::vector<double> a = values_of(inc), b = values_of(exc);
            const DType rt = inc.dtype();
            double identity = 0.0;
            const std::string o = op.name;
            if (o == "cumprod") identity = 1.0;
            if (o == "cummax" || o == "logcumsumexp")
                identity = is_float(rt) ? -INFINITY : rt == DType::Int32 ? INT32_MIN : 0.0;
            if (o == "cummin")
                identity = is_float(rt)         ? INFINITY
                           : rt == DType::Int32 ? INT32_MAX
                           : rt == DType::UInt8 ? 255.0
                                                : 1.0;
            for (std::int64_t r = 0; r < 2; ++r) {
                CHECK(b[static_cast<std::size_t>(r * n)] == identity);
                for (std::int64_t i = 1; i < n; ++i)
                    if (!(b[static_cast<std::size_t>(r * n + i)] ==
                          a[static_cast<std::size_t>(r * n + i - 1)])) {
                        FAIL_CHECK("row " << r << " element " << i << ": "
                                          << b[static_cast<std::size_t>(r * n + i)] << " vs "
                                          << a[static_cast<std::size_t>(r * n + i - 1)]);
                        break;
                    }
            }
        }
    // An exclusive float cumsum opens with +0.
    const Tensor e = ref(cumsum(tensor_of({-0.0, -0.0}, {2}, DType::Float32), 0, {.exclusive = true}));
    CHECK(!std::signbit(e.to_vector<float>()[0]));
    CHECK(std::signbit(e.to_vector<float>()[1]));
}

TEST_CASE("scan: non-last axes and views give the bits of the same rows scanned contiguously") {
    const Tensor x = testing::random_tensor({3, 2049, 2}, DType::Float32, 11);
    // Axis 1 of [3, 2049, 2] against axis 2 of the contiguous [3, 2, 2049].
    const Tensor xp = x.permute({0, 2, 1}).clone();
    for (const ScanOp& op : kOps) {
        CAPTURE(std::string(op.name));
        const Tensor a = ref(op.fn(x, 1, {}, Loc::current())), b = ref(op.fn(x, -2, {}, Loc::current()));
        const Tensor c = ref(op.fn(xp, 2, {}, Loc::current()));
        CHECK(testing::same_bits(a, b));
        CHECK(testing::same_bits(a.permute({0, 2, 1}), c));
        // A permuted input (a view) equals its contiguous copy.
        CHECK(testing::same_bits(ref(op.fn(x.permute({0, 2, 1}), 2, {}, Loc::current())), c));
    }
    // Axis 0 of a [2049, 3] int32 tensor against a serial sum of each column.
    const Tensor xi = tensor_of(draw("cumsum", DType::Int32, 2049 * 3, 5), {2049, 3}, DType::Int32);
    const std::vector<double> xv = values_of(xi), got = values_of(ref(cumsum(xi, 0)));
    for (std::int64_t c = 0; c < 3; ++c) {
        double s = 0.0;
        for (std::int64_t i = 0; i < 2049; ++i) {
            s += xv[static_cast<std::size_t>(i * 3 + c)];
            CHECK_MESSAGE(got[static_cast<std::size_t>(i * 3 + c)] == s, "column " << c << " element " << i);
            if (got[static_cast<std::size_t>(i * 3 + c)] != s) break;
        }
    }
    // A sliced input, every other element backwards.
    const Tensor long_row = testing::random_tensor({8201}, DType::Float32, 12);
    const Tensor sliced = long_row.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, -2}});
    CHECK(testing::same_bits(ref(cumsum(sliced, 0)), ref(cumsum(sliced.clone(), 0))));
    CHECK(testing::same_bits(ref(logcumsumexp(sliced, 0)), ref(logcumsumexp(sliced.clone(), 0))));
}

TEST_CASE("scan: NaN, -0.0 and infinities") {
    const std::int64_t n = 4097;
    // A sum of only -0.0 is -0.0 across tiles (no identity is ever added).
    const std::vector<float> z =
        ref(cumsum(tensor_of(std::vector<double>(n, -0.0), {n}, DType::Float32), 0)).to_vector<float>();
    bool all_negative_zero = true;
    for (float f : z) all_negative_zero = all_negative_zero && f == 0.0f && std::signbit(f);
    CHECK(all_negative_zero);
    // A NaN at 3000 makes every later output NaN, and none before.
    std::vector<double> v = draw("cummax", DType::Float32, n, 9);
    v[3000] = NAN;
    for (const ScanOp& op : kOps) {
        CAPTURE(std::string(op.name));
        const std::vector<double> y =
            values_of(ref(op.fn(tensor_of(v, {n}, DType::Float32), 0, {}, Loc::current())));
        bool ok = true;
        for (std::int64_t i = 0; i < n; ++i)
            ok = ok && std::isnan(y[static_cast<std::size_t>(i)]) == (i >= 3000);
        CHECK(ok);
    }
    // cummax of -0.0 then +0.0 gives +0.0; cummin of +0.0 then -0.0 gives -0.0.
    const std::vector<float> mx =
        ref(cummax(tensor_of({-0.0, 0.0, -0.0}, {3}, DType::Float32), 0)).to_vector<float>();
    CHECK(std::signbit(mx[0]));
    CHECK(!std::signbit(mx[1]));
    CHECK(!std::signbit(mx[2]));
    const std::vector<float> mn =
        ref(cummin(tensor_of({0.0, -0.0, 0.0}, {3}, DType::Float32), 0)).to_vector<float>();
    CHECK(!std::signbit(mn[0]));
    CHECK(std::signbit(mn[1]));
    CHECK(std::signbit(mn[2]));
    // logcumsumexp: -inf with -inf is -inf, x with -inf is x, +inf stays; cumsum of +inf then -inf is NaN.
    for (DType t : {DType::Float32, DType::Float64, DType::BFloat16}) {
        CAPTURE(name(t));
        const std::vector<double> l = values_of(
            ref(logcumsumexp(tensor_of({-INFINITY, -INFINITY, 1.5, -INFINITY, INFINITY, 2.0}, {6}, t), 0)));
        CHECK(l[0] == -INFINITY);
        CHECK(l[1] == -INFINITY);
        CHECK(l[2] == 1.5);
        CHECK(l[3] == 1.5);
        CHECK(l[4] == INFINITY);
        CHECK(l[5] == INFINITY);
        const std::vector<double> s =
            values_of(ref(cumsum(tensor_of({1.0, INFINITY, -INFINITY}, {3}, t), 0)));
        CHECK(s[1] == INFINITY);
        CHECK(std::isnan(s[2]));
    }
    // log(e^0 + e^0) = log 2, in float32 within one unit.
    const std::vector<float> two =
        ref(logcumsumexp(tensor_of({0.0, 0.0}, {2}, DType::Float32), 0)).to_vector<float>();
    CHECK(std::abs(two[1] - std::log(2.0f)) <= 0x1p-24f);
}

TEST_CASE("scan: empty axes give empty results, rank-1 rows of one element") {
    const Tensor e = ref(cumsum(Tensor::host({3, 0}, DType::Float32), 1));
    CHECK(e.shape() == Shape{3, 0});
    CHECK(ref(cummax(Tensor::host({0, 5}, DType::Int32), 1)).shape() == Shape{0, 5});
    CHECK(ref(logcumsumexp(Tensor::host({0}, DType::Float16), 0, {.exclusive = true})).shape() == Shape{0});
    const std::vector<std::int64_t> one =
        ref(cumprod(tensor_of({-3.0}, {1}, DType::Int8), 0)).to_vector<std::int64_t>();
    CHECK(one == std::vector<std::int64_t>{-3});
}

TEST_CASE("scan: errors name the op, the operand and the caller's line") {
    const Tensor x = Tensor::host({3, 4}, DType::Float32);
    const std::string axis = error_of([&] { (void)cumsum(x, 2); });
    CHECK(axis.find("cumsum()") != std::string::npos);
    CHECK(axis.find("[3, 4] float32") != std::string::npos);
    CHECK(axis.find("axis 2") != std::string::npos);
    CHECK(axis.find("test_scan.cpp:") != std::string::npos);
    const std::string neg = error_of([&] { (void)cummin(x, -3); });
    CHECK(neg.find("cummin()") != std::string::npos);
    const std::string scalar = error_of([&] { (void)cumprod(Tensor::host({}, DType::Float32), 0); });
    CHECK(scalar.find("cumprod()") != std::string::npos);
    const std::string ints = error_of([&] { (void)logcumsumexp(Tensor::host({5}, DType::Int32), 0); });
    CHECK(ints.find("logcumsumexp()") != std::string::npos);
    CHECK(ints.find("[5] int32") != std::string::npos);
    CHECK(ints.find("test_scan.cpp:") != std::string::npos);
}

TEST_CASE(
    "scan: the host back end and fusion off give the reference's bits, elementwise work fuses on the GPU") {
    const Tensor x = testing::random_tensor({3, 4100}, DType::Float32, 21);
    const Array y = cumsum(Array(x) * 0.5, 1) + 1.0;
    const Tensor expected = reference::evaluate(y.node());
    Tensor out = Tensor::host(y.shape(), y.dtype());
    testing::poison(out);
    assign(out, y);
    CHECK(testing::same_bits(out, expected));
    {
        const OptionsScope unfused(Options{.fusion = false});
        testing::poison(out);
        assign(out, y);
    }
    CHECK(testing::same_bits(out, expected));
    // On the GPU the producer is the scan's prologue and the consumer its epilogue: one kernel, no temporary.
    const std::vector<ir::NodePtr> g = ir::run_pipeline({y.node()}, ir::standard_passes());
    const codegen::Partition P = codegen::partition(g);
    REQUIRE(P.kernels.size() == 1);
    CHECK(P.temps.empty());
    CHECK(P.kernels[0].family == codegen::Family::Scan);
    CHECK(P.kernels[0].name.find("cumsum") != std::string::npos);
    CHECK(P.kernels[0].why.find("its prologue computes the operand as it loads: mul") != std::string::npos);
    CHECK(P.kernels[0].why.find("its epilogue runs on the scan's elements as they are stored: add") !=
          std::string::npos);
    // The host runs scans on the reference, from memory: the producer, the scan and the consumer.
    const codegen::Partition H = codegen::partition(g, {.operands_from_memory = true});
    REQUIRE(H.kernels.size() == 3);
    CHECK(H.kernels[1].family == codegen::Family::Scan);
    // A view of an input is read in place: one kernel, no temporary.
    const Array v = logcumsumexp(x.permute({1, 0}), 0, {.exclusive = true});
    const codegen::Partition Q = codegen::partition(ir::run_pipeline({v.node()}, ir::standard_passes()));
    REQUIRE(Q.kernels.size() == 1);
    CHECK(Q.temps.empty());
    Tensor vo = Tensor::host(v.shape(), v.dtype());
    assign(vo, v);
    CHECK(testing::same_bits(vo, reference::evaluate(v.node())));
    // Every op and a few dtypes through the host back end.
    for (const ScanOp& op : kOps)
        for (DType t : {DType::Int8, DType::Float16, DType::Float64}) {
            if (std::string(op.name) == "logcumsumexp" && !is_float(t)) continue;
            const Array z =
                op.fn(tensor_of(draw(op.name, t, 2 * 2100, 4), {2100, 2}, t), 0, {}, Loc::current());
            Tensor zo = Tensor::host(z.shape(), z.dtype());
            assign(zo, z);
            CHECK_MESSAGE(testing::same_bits(zo, reference::evaluate(z.node())), op.name << " " << name(t));
        }
}
