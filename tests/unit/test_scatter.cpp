// Scatters (scatter, scatter_add, index_add; docs/semantics.md, "Scatters") on host tensors: hand-computed
// small cases; the reference against a direct evaluation of the contract's order written out here (each
// target's values in ascending position, chunks of 256 in sequence from -0.0, the pairwise tree, x added
// once, halves rounded once) on sizes 0, 1, 31, 32, 33 and 4097 and every dtype; the host back end equal to
// the reference bit for bit; views as operands, broadcast and negative indices, clamp mode; 100,000 values
// into 3 targets; index_add equal to scatter_add bit for bit; out-of-range indices raising with the user's
// line and leaving the outputs as they were; the errors of building one; a scatter is a kernel of its own.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "loom/codegen/plan/partition.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/half.hpp"
#include "loom/ir/pass.hpp"
#include "loom/ir/reduce_order.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

const DType kAll[] = {bool_, int8, uint8, int32, int64, float16, bfloat16, float32, float64};

// Random values, never zeros alone: floats normal, integers and bools uniform.
Tensor random_of(const Shape& s, DType t, std::uint64_t seed) {
    return testing::random_tensor(
        s, t, seed, is_float(t) ? testing::Random::normal() : testing::Random::uniform(-100, 100));
}

// Indices in [lo, hi] of `dtype`.
Tensor indices(const Shape& s, DType dtype, std::int64_t lo, std::int64_t hi, std::uint64_t seed) {
    return testing::random_tensor(s, dtype, seed,
                                  testing::Random::uniform(static_cast<double>(lo), static_cast<double>(hi)));
}

template <class T>
Tensor tensor_of(const std::vector<T>& v, const Shape& s, DType t) {
    Tensor r = Tensor::host(s, t);
    REQUIRE(r.nbytes() == v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(r.data(), v.data(), v.size() * sizeof(T));
    return r;
}

std::vector<double> values_of(const Tensor& t) {
    return reference::evaluate(astype(Array(t), float64).node()).to_vector<double>();
}

std::vector<std::int64_t> ints_of(const Tensor& t) {
    return reference::evaluate(astype(Array(t), int64).node()).to_vector<std::int64_t>();
}

// Evaluates `y` on the host back end into a poisoned output; checks it against the reference bit for bit and
// returns it.
Tensor host_bits(const Array& y, const char* what) {
    Tensor out = Tensor::host(y.shape(), y.dtype());
    testing::poison(out);
    assign(out, y);
    const Tensor expected = reference::evaluate(y.node());
    CHECK_MESSAGE(testing::same_bits(out, expected), what);
    return out;
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

// One float value rounded to dtype t (halves from float32), as a double.
double round_to(double v, DType t) {
    if (t == float16) return half_bits_to_float(float_to_half_bits(static_cast<float>(v)));
    if (t == bfloat16) return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v)));
    return v;
}

// An int64 sum converted to dtype t as a cast does: modulo 2^bits, bool its truth.
double wrap_to(std::uint64_t v, DType t) {
    switch (t) {
        case DType::Bool:
            return v != 0 ? 1.0 : 0.0;
        case DType::Int8:
            return static_cast<std::int8_t>(v);
        case DType::UInt8:
            return static_cast<std::uint8_t>(v);
        case DType::Int32:
            return static_cast<std::int32_t>(v);
        default:
            return static_cast<double>(static_cast<std::int64_t>(v));
    }
}

// The contract's sum of `vals` (already in ascending position) in accumulator A: chunks of 256 in sequence
// from -0.0, the pairwise tree over chunk partials.
template <class A>
A contract_sum(const std::vector<double>& vals) {
    std::vector<A> partial;
    for (std::size_t c = 0; c < vals.size(); c += 256) {
        A acc = static_cast<A>(-0.0);
        for (std::size_t k = c; k < std::min(vals.size(), c + 256); ++k) acc = acc + static_cast<A>(vals[k]);
        partial.push_back(acc);
    }
    std::size_t n = partial.size();
    while (n > 1) {
        std::size_t k = 0;
        for (; k + 1 < n; k += 2) partial[k / 2] = partial[k] + partial[k + 1];
        if (k < n) partial[k / 2] = partial[k];
        n = (n + 1) / 2;
    }
    return partial[0];
}

// The contract written out for x [T, C], indices and values [n, C] along axis 0 (indices already in range
// after normalizing): scatter_add's or scatter's result as doubles, row-major.
std::vector<double> contract(bool add, const Tensor& x, const Tensor& idx, const Tensor& values) {
    const DType t = x.dtype();
    const std::int64_t T = x.shape()[0], C = x.shape()[1], n = values.shape()[0];
    const std::vector<double> xv = values_of(x), vv = values_of(values);
    const std::vector<std::int64_t> iv = ints_of(idx);
    std::vector<double> out = xv;
    for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t target = 0; target < T; ++target) {
            std::vector<double> mine;  // ascending position
            for (std::int64_t p = 0; p < n; ++p) {
                std::int64_t k = iv[static_cast<std::size_t>(p * C + c)];
                if (k < 0) k += T;
                if (k == target) mine.push_back(vv[static_cast<std::size_t>(p * C + c)]);
            }
            if (mine.empty()) continue;  // x's element, bit for bit
            double& o = out[static_cast<std::size_t>(target * C + c)];
            if (!add) {
                o = mine.back();
            } else if (t == float64) {
                o = o + contract_sum<double>(mine);
            } else if (is_float(t)) {
                o = round_to(static_cast<float>(o) + contract_sum<float>(mine), t);
            } else {
                std::uint64_t s = 0;
                for (double v : mine) s += static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
                o = wrap_to(static_cast<std::uint64_t>(static_cast<std::int64_t>(o)) + s, t);
            }
        }
    return out;
}

// Whether two vectors of doubles hold the same bits (-0.0 is not +0.0).
bool same_doubles(const std::vector<double>& a, const std::vector<double>& b, std::string* where) {
    if (a.size() != b.size()) {
        *where = fmt::format("sizes {} and {}", a.size(), b.size());
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::bit_cast<std::uint64_t>(a[i]) != std::bit_cast<std::uint64_t>(b[i])) {
            *where = fmt::format("element {}: {} vs {}", i, a[i], b[i]);
            return false;
        }
    return true;
}

}  // namespace

TEST_CASE("scatter: hand-computed small cases") {
    const Tensor x = tensor_of<std::int64_t>({1, 2, 3, 4, 5}, {5}, int64);
    const Tensor idx = tensor_of<std::int64_t>({1, 3, 1, -1}, {4}, int64);
    const Tensor v = tensor_of<std::int64_t>({10, 20, 30, 40}, {4}, int64);
    // scatter: the largest position wins at target 1; -1 names the last element.
    CHECK(host_bits(scatter(x, idx, v, 0), "scatter").to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{1, 30, 3, 20, 40});
    CHECK(host_bits(scatter_add(x, idx, v, 0), "scatter_add").to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{1, 42, 3, 24, 45});
    CHECK(host_bits(index_add(x, idx, v, 0), "index_add").to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{1, 42, 3, 24, 45});
    // x is not modified: functional.
    CHECK(x.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2, 3, 4, 5});
    // Along axis 1 of [2, 3], an index [2, 1] broadcast over the values' columns.
    const Tensor x2 = tensor_of<float>({1, 2, 3, 4, 5, 6}, {2, 3}, float32);
    const Tensor i2 = tensor_of<std::int32_t>({2, 0}, {2, 1}, int32);
    const Tensor v2 = tensor_of<float>({0.5f, 0.25f, 8, 16}, {2, 2}, float32);
    CHECK(host_bits(scatter_add(x2, i2, v2, 1), "axis 1").to_vector<float>() ==
          std::vector<float>{1, 2, 3.75f, 28, 5, 6});
    CHECK(host_bits(scatter(x2, i2, v2, -1), "axis -1").to_vector<float>() ==
          std::vector<float>{1, 2, 0.25f, 16, 5, 6});
    // index_add along axis 1: source columns 0 and 1 into x's columns 2 and 0.
    const Tensor i1 = tensor_of<std::int32_t>({2, 0}, {2}, int32);
    CHECK(host_bits(index_add(x2, i1, v2, 1), "index_add axis 1").to_vector<float>() ==
          std::vector<float>{1.25f, 2, 3.5f, 20, 5, 14});
    // int8 wraps: 100 + 100 + 100 = 300 = 44 (mod 256); bool adds as a truth: false + true + true = true.
    const Tensor x8 = tensor_of<std::int8_t>({100, 7}, {2}, int8);
    const Tensor v8 = tensor_of<std::int8_t>({100, 100}, {2}, int8);
    const Tensor zeros = tensor_of<std::int64_t>({0, 0}, {2}, int64);
    CHECK(host_bits(scatter_add(x8, zeros, v8, 0), "int8").to_vector<std::int8_t>() ==
          std::vector<std::int8_t>{44, 7});
    const Tensor xb = tensor_of<std::uint8_t>({0, 0}, {2}, bool_);
    const Tensor vb = tensor_of<std::uint8_t>({1, 1}, {2}, bool_);
    CHECK(host_bits(scatter_add(xb, zeros, vb, 0), "bool").to_vector<std::uint8_t>() ==
          std::vector<std::uint8_t>{1, 0});
}

TEST_CASE("scatter: float16 accumulates in float32 and rounds once, and untouched targets keep x's bits") {
    // 2048 + 1 + 1 in float16 would stay 2048 (2049 rounds to even); in float32 it is 2050.
    const Tensor x =
        reference::evaluate(astype(Array(tensor_of<float>({0, -0.0f}, {2}, float32)), float16).node());
    const Tensor v =
        reference::evaluate(astype(Array(tensor_of<float>({2048, 1, 1}, {3}, float32)), float16).node());
    const Tensor i = tensor_of<std::int64_t>({0, 0, 0}, {3}, int64);
    const std::vector<double> r = values_of(host_bits(scatter_add(x, i, v, 0), "halves"));
    CHECK(r[0] == 2050.0);
    // Target 1 received nothing: -0.0 stays -0.0 (x + 0 would give +0.0).
    CHECK(r[1] == 0.0);
    CHECK(std::signbit(r[1]));
    // A sum of -0.0 values into -0.0 is -0.0; into +0.0, +0.0.
    const Tensor xz = tensor_of<float>({-0.0f, 0.0f}, {2}, float32);
    const Tensor vz = tensor_of<float>({-0.0f, -0.0f, -0.0f}, {3}, float32);
    const Tensor iz = tensor_of<std::int64_t>({0, 1, 0}, {3}, int64);
    const std::vector<float> z = host_bits(scatter_add(xz, iz, vz, 0), "zeros").to_vector<float>();
    CHECK(std::signbit(z[0]));
    CHECK(!std::signbit(z[1]));
}

TEST_CASE("scatter: a NaN value reaches its target only, and infinities add as IEEE says") {
    const Tensor x = tensor_of<float>({1, 2, 3, 4}, {4}, float32);
    const Tensor v = tensor_of<float>({NAN, 5, INFINITY, -INFINITY, 7}, {5}, float32);
    const Tensor i = tensor_of<std::int64_t>({0, 1, 2, 2, 3}, {5}, int64);
    const std::vector<float> a = host_bits(scatter_add(x, i, v, 0), "nan").to_vector<float>();
    CHECK(std::isnan(a[0]));
    CHECK(a[1] == 7.0f);
    CHECK(std::isnan(a[2]));  // inf + -inf
    CHECK(a[3] == 11.0f);
    const std::vector<float> b = host_bits(scatter(x, i, v, 0), "nan scatter").to_vector<float>();
    CHECK(std::isnan(b[0]));
    CHECK(b[2] == -INFINITY);  // the later position wins
    CHECK(b[3] == 7.0f);
}

TEST_CASE("scatter: the reference and the host back end give the contract's bits on every dtype and size") {
    const std::int64_t sizes[] = {0, 1, 31, 32, 33, 4097};
    std::uint64_t seed = 100;
    for (DType t : kAll)
        for (std::int64_t n : sizes)
            for (DType it : {int32, int64}) {
                CAPTURE(name(t));
                CAPTURE(n);
                CAPTURE(name(it));
                const std::int64_t T = 7, C = 3;
                const Tensor x = random_of({T, C}, t, ++seed);
                const Tensor v = random_of({n, C}, t, ++seed);
                const Tensor idx = indices({n, C}, it, -T, T - 1, ++seed);
                std::string where;
                const Tensor add = host_bits(scatter_add(x, idx, v, 0), "scatter_add");
                CHECK_MESSAGE(same_doubles(values_of(add), contract(true, x, idx, v), &where), where);
                const Tensor put = host_bits(scatter(x, idx, v, 0), "scatter");
                CHECK_MESSAGE(same_doubles(values_of(put), contract(false, x, idx, v), &where), where);
                // An index [n, 1] broadcast over the columns is index_add's index.
                const Tensor col = indices({n}, it, -T, T - 1, ++seed);
                const Tensor a1 = host_bits(scatter_add(x, col.reshape({n, 1}), v, 0), "broadcast");
                const Tensor a2 = host_bits(index_add(x, col, v, 0), "index_add");
                CHECK(testing::same_bits(a1, a2));
                const Tensor wide =
                    reference::evaluate(broadcast_to(Array(col.reshape({n, 1})), {n, C}).node());
                CHECK_MESSAGE(same_doubles(values_of(a1), contract(true, x, wide, v), &where), where);
            }
}

TEST_CASE("scatter: 100,000 values into 3 targets follow the contract's order, not a serial sum") {
    const std::int64_t n = 100000;
    const Tensor x = random_of({3, 1}, float32, 7);
    // Values of very different magnitudes, so that the order of the additions decides the bits.
    Tensor v = testing::random_tensor({n, 1}, float32, 8, testing::Random::uniform(-1.0, 1.0));
    std::vector<float> vv = v.to_vector<float>();
    for (std::size_t i = 0; i < vv.size(); i += 97) vv[i] *= 1.0e6f;
    v = tensor_of(vv, {n, 1}, float32);
    const Tensor idx = indices({n, 1}, int64, 0, 2, 9);
    std::string where;
    const Tensor got = host_bits(scatter_add(x, idx, v, 0), "heavy");
    CHECK_MESSAGE(same_doubles(values_of(got), contract(true, x, idx, v), &where), where);
    // A serial float32 sum gives other bits for at least one target: the order is the contract's.
    const std::vector<std::int64_t> iv = idx.to_vector<std::int64_t>();
    const std::vector<float> xv = x.to_vector<float>(), g = got.to_vector<float>();
    bool differs = false;
    for (std::int64_t target = 0; target < 3; ++target) {
        float s = -0.0f;
        for (std::int64_t p = 0; p < n; ++p)
            if (iv[static_cast<std::size_t>(p)] == target) s += vv[static_cast<std::size_t>(p)];
        differs = differs || xv[static_cast<std::size_t>(target)] + s != g[static_cast<std::size_t>(target)];
    }
    CHECK(differs);
    // index_add of the same: the same bits.
    CHECK(testing::same_bits(got, host_bits(index_add(x, idx.reshape({n}), v, 0), "heavy index_add")));
    // The atomic option on the host is the deterministic sum.
    CHECK(testing::same_bits(got,
                             host_bits(scatter_add(x, idx, v, 0, {.atomic = true}), "atomic on the host")));
}

TEST_CASE("scatter: views as operands and axes other than the first give the bits of contiguous copies") {
    for (DType t : {float32, bfloat16, int32}) {
        CAPTURE(name(t));
        const Tensor x = random_of({9, 5, 4}, t, 31);
        const Tensor v = random_of({4, 70, 5}, t, 32);  // permuted to [5, 70, 4] below
        const Tensor idx = indices({70, 1}, int64, -9, 8, 33);
        // Axis 1 of x [5, 9, 4] (a permuted view), values [5, 70, 4] (a permuted view), idx [70, 1]
        // broadcast.
        const Tensor xp = x.permute({1, 0, 2}), vp = v.permute({2, 1, 0});
        const Array a = scatter_add(xp, idx, vp, 1), b = scatter_add(xp.clone(), idx, vp.clone(), 1);
        CHECK(testing::same_bits(host_bits(a, "views"), host_bits(b, "copies")));
        const Array c = scatter(xp, idx, vp, -2), d = scatter(xp.clone(), idx, vp.clone(), 1);
        CHECK(testing::same_bits(host_bits(c, "views"), host_bits(d, "copies")));
        // A sliced x (every other row, backwards) and lazily computed operands.
        const Tensor xs = x.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, -2}});
        const Tensor v2 = random_of({3, 5, 4}, t, 34);
        const Tensor i2 = indices({3, 1, 1}, int32, 0, 4, 35);
        CHECK(testing::same_bits(host_bits(scatter_add(xs, i2, v2, 0), "slice"),
                                 host_bits(scatter_add(xs.clone(), i2, v2, 0), "slice copy")));
        const Array lazy = scatter_add(Array(xs) + Array(xs), i2, Array(v2) * 2, 0);
        const Tensor l = host_bits(lazy, "lazy");
        const Tensor xx = reference::evaluate((Array(xs) + Array(xs)).node());
        const Tensor vv = reference::evaluate((Array(v2) * 2).node());
        CHECK(testing::same_bits(l, reference::evaluate(scatter_add(xx, i2, vv, 0).node())));
    }
}

TEST_CASE("scatter: clamp mode moves out-of-range indices to the nearer end") {
    const Tensor x = random_of({4, 2}, float64, 41);
    const Tensor v = random_of({6, 2}, float64, 42);
    const Tensor bad = tensor_of<std::int64_t>({-100, 9, 3, -5, 4, 0}, {6, 1}, int64);
    const Tensor fixed = tensor_of<std::int64_t>({0, 3, 3, 0, 3, 0}, {6, 1}, int64);
    const ScatterOptions clamp{.mode = IndexMode::Clamp};
    CHECK(testing::same_bits(host_bits(scatter_add(x, bad, v, 0, clamp), "clamp"),
                             host_bits(scatter_add(x, fixed, v, 0), "fixed")));
    CHECK(testing::same_bits(host_bits(scatter(x, bad, v, 0, IndexMode::Clamp), "clamp"),
                             host_bits(scatter(x, fixed, v, 0), "fixed")));
    CHECK(testing::same_bits(host_bits(index_add(x, bad.reshape({6}), v, 0, clamp), "clamp"),
                             host_bits(index_add(x, fixed.reshape({6}), v, 0), "fixed")));
}

TEST_CASE("scatter: an out-of-range index raises with the function and the user's line, outputs untouched") {
    const Tensor x = random_of({33, 4}, float32, 51);
    const Tensor v = random_of({100, 4}, float32, 52);
    for (std::int64_t bad : {33, -34, 1000000}) {
        CAPTURE(bad);
        std::vector<std::int64_t> iv(100, 3);
        iv[57] = bad;
        const Tensor idx = tensor_of(iv, {100}, int64);
        const Array put = scatter(x, idx.reshape({100, 1}), v, 0);
        const int line_put = __LINE__ - 1;
        const Array add = scatter_add(x, idx.reshape({100, 1}), v, 0);
        const int line_add = __LINE__ - 1;
        const Array index = index_add(x, idx, v, 0);
        const int line_index = __LINE__ - 1;
        const Array ys[] = {put, add, index};
        const int lines[] = {line_put, line_add, line_index};
        const char* apis[] = {"scatter", "scatter_add", "index_add"};
        for (int k = 0; k < 3; ++k) {
            CAPTURE(apis[k]);
            const std::string expect =
                fmt::format("{}(): index {} is out of range for an axis of extent 33", apis[k], bad);
            Tensor out = Tensor::host({33, 4}, float32);
            testing::poison(out);
            const Tensor before = out.clone();
            std::string msg = error_of([&] { assign(out, ys[k]); });
            CHECK_MESSAGE(msg.find(expect) != std::string::npos, msg);
            CHECK_MESSAGE(msg.find(fmt::format("test_scatter.cpp:{}", lines[k])) != std::string::npos, msg);
            CHECK(testing::same_bits(out, before));
            // With a second output written by another kernel: neither is written.
            Tensor other = Tensor::host({33, 4}, float32);
            testing::poison(other);
            const Tensor other_before = other.clone();
            msg = error_of([&] { assign({out, other}, {ys[k], Array(x) * 2}); });
            CHECK_MESSAGE(msg.find(expect) != std::string::npos, msg);
            CHECK(testing::same_bits(out, before));
            CHECK(testing::same_bits(other, other_before));
            msg = error_of([&] { (void)reference::evaluate(ys[k].node()); });
            CHECK_MESSAGE(msg.find(expect) != std::string::npos, msg);
        }
    }
    // int32 indices; the runtime is usable after the error.
    const Tensor i32 = tensor_of<std::int32_t>({0, 1, 40}, {3}, int32);
    const std::string msg = error_of([&] { (void)Tensor(index_add(x, i32, v.slice({{0, 3}}), 0)); });
    CHECK_MESSAGE(
        msg.find("index_add(): index 40 is out of range for an axis of extent 33") != std::string::npos, msg);
    const Tensor ok = tensor_of<std::int32_t>({0, 1, 2}, {3}, int32);
    CHECK(Tensor(index_add(x, ok, v.slice({{0, 3}}), 0)).shape() == Shape{33, 4});
}

TEST_CASE("scatter: errors of building one name the function, the operands and the caller's line") {
    const Tensor x = Tensor::host({5, 4}, float32);
    const Tensor v = Tensor::host({3, 4}, float32);
    const Tensor idx = Tensor::host({3, 4}, int64);
    const auto has = [](const std::string& msg, std::initializer_list<const char*> parts) {
        for (const char* p : parts) CHECK_MESSAGE(msg.find(p) != std::string::npos, msg << " lacks " << p);
    };
    has(error_of([&] {
            (void)scatter(x, idx, Tensor::host({3, 5}, float32), 0);
        }),
        {"scatter():", "[3, 5] float32", "[5, 4] float32", "test_scatter.cpp:"});
    has(error_of([&] {
            (void)scatter_add(x, idx, Tensor::host({3, 4}, float64), 0);
        }),
        {"scatter_add():", "[3, 4] float64", "[5, 4] float32", "x's dtype", "test_scatter.cpp:"});
    has(error_of([&] {
            (void)scatter_add(x, Tensor::host({3, 4}, float32), v, 0);
        }),
        {"scatter_add():", "int32 or int64", "[3, 4] float32"});
    has(error_of([&] { (void)scatter(x, idx, v, 2); }), {"scatter():", "axis 2", "[5, 4] float32"});
    has(error_of([&] {
            (void)scatter(x, Tensor::host({2, 4}, int64), v, 0);
        }),
        {"scatter():", "[2, 4] int64", "does not broadcast", "[3, 4] float32"});
    has(error_of([&] {
            (void)scatter(Tensor::host({}, float32), Tensor::host({}, int64), Tensor::host({}, float32), 0);
        }),
        {"scatter():", "no axis"});
    has(error_of([&] {
            (void)index_add(x, Tensor::host({3, 1}, int64), v, 0);
        }),
        {"index_add():", "rank 1", "[3, 1] int64"});
    has(error_of([&] { (void)index_add(x, Tensor::host({2}, int64), v, 0); }),
        {"index_add():", "[2] int64", "[3, 4] float32", "test_scatter.cpp:"});
    has(error_of([&] {
            (void)scatter_add(Tensor::host({0, 4}, float32), idx, v, 0);
        }),
        {"scatter_add():", "extent 0"});
    // Empty values into an empty axis, and empty values: x itself.
    CHECK(Tensor(scatter_add(Tensor::host({0, 4}, float32), Tensor::host({0, 4}, int64),
                             Tensor::host({0, 4}, float32), 0))
              .shape() == Shape{0, 4});
    const Tensor xr = random_of({5, 4}, float32, 61);
    CHECK(testing::same_bits(
        host_bits(scatter_add(xr, Tensor::host({0, 4}, int64), Tensor::host({0, 4}, float32), 0),
                  "empty values"),
        xr));
    // Result dtypes: x's.
    CHECK(
        scatter_add(Tensor::host({3}, int8), Tensor::host({2}, int32), Tensor::host({2}, int8), 0).dtype() ==
        int8);
}

TEST_CASE("scatter: a kernel of its own, and fusion off and the host back end give the reference's bits") {
    const Tensor x = random_of({50, 8}, float32, 71);
    const Tensor v = random_of({300, 8}, float32, 72);
    const Tensor idx = indices({300}, int32, -50, 49, 73);
    const Array y = index_add(Array(x) * 0.5, idx, Array(v) + 1.0, 0) * 3.0;
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
    // The producers (x's and the values' shapes differ: two kernels), the scatter and the consumer.
    const codegen::Partition P = codegen::partition(ir::run_pipeline({y.node()}, ir::standard_passes()));
    int scatters = 0;
    for (const codegen::FusedKernel& k : P.kernels)
        if (k.family == codegen::Family::Scatter) {
            ++scatters;
            CHECK(k.name.find("scatter_add") != std::string::npos);
        }
    CHECK(scatters == 1);
    CHECK(P.kernels.size() == 4);
    CHECK(P.kernels[2].family == codegen::Family::Scatter);
    // Assigned into x itself (an update in place): the bits of the functional result.
    Tensor acc = x.clone();
    const Tensor want = reference::evaluate(index_add(acc, idx, v, 0).node());
    assign(acc, index_add(acc, idx, v, 0));
    CHECK(testing::same_bits(acc, want));
    // Operands that are views of inputs are read in place: one kernel, no temporary.
    const Array w = scatter(x.permute({1, 0}), idx.reshape({1, 300}), v.permute({1, 0}), 1);
    const codegen::Partition Q = codegen::partition(ir::run_pipeline({w.node()}, ir::standard_passes()));
    REQUIRE(Q.kernels.size() == 1);
    CHECK(Q.kernels[0].family == codegen::Family::Scatter);
    CHECK(Q.temps.empty());
    host_bits(w, "views in place");
}
