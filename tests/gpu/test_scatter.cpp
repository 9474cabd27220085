// GPU tests of the scatters (docs/semantics.md, "Scatters"): the kernels' bits equal the CPU reference's for
// every dtype, int32 and int64 indices, negative and broadcast indices, sizes 0, 1, 31, 32, 33, 4097 and
// large; heavy duplicates (100,000 and 2^22 values into 3 targets, whose chunks run on threads of their own);
// many columns (index_add of rows of 512 features), also assigned into x itself; views read in place and a
// result written into a permuted view; a kernel run twice gives the same bits; clamp mode; an out-of-range
// index raises loom::Error naming the function, the index and the user's line at the next synchronization,
// not sticky; the atomic mode within a bound of the reference.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

const Device cuda0 = Device::cuda(0);

Tensor random_of(const Shape& s, DType t, std::uint64_t seed) {
    return testing::random_tensor(
               s, t, seed, is_float(t) ? testing::Random::normal() : testing::Random::uniform(-100, 100))
        .to(cuda0);
}

Tensor indices(const Shape& s, DType dtype, std::int64_t lo, std::int64_t hi, std::uint64_t seed) {
    return testing::random_tensor(s, dtype, seed,
                                  testing::Random::uniform(static_cast<double>(lo), static_cast<double>(hi)))
        .to(cuda0);
}

Tensor int64_tensor(const std::vector<std::int64_t>& v) {
    Tensor t = Tensor::host({static_cast<std::int64_t>(v.size())}, int64);
    std::memcpy(t.data(), v.data(), v.size() * sizeof(std::int64_t));
    return t.to(cuda0);
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

// Evaluates `y` on the GPU into a poisoned output, checks it against the reference bit for bit and returns
// it.
Tensor check_bits(const Array& y, const std::string& what) {
    Tensor out = Tensor::empty(y.shape(), y.dtype(), cuda0);
    testing::poison(out);
    assign(out, y);
    const Tensor expected = reference::evaluate(y.node());
    const testing::Comparison c = testing::compare(out, expected, testing::Tolerance::exact(), what);
    CHECK_MESSAGE(c.ok, what << ": " << c.message);
    return out.to_host();
}

}  // namespace

TEST_CASE("scatters on the GPU: the reference's bits, every dtype, index dtype and size") {
    std::uint64_t seed = 1;
    for (DType t : kAllDTypes)
        for (std::int64_t n : {0, 1, 31, 32, 33, 4097, 70000})
            for (DType it : {int32, int64}) {
                const std::string w = fmt::format("{} n={} {} indices", name(t), n, name(it));
                const Tensor x = random_of({17, 3}, t, ++seed), v = random_of({n, 3}, t, ++seed);
                const Tensor idx = indices({n, 3}, it, -17, 16, ++seed);
                check_bits(scatter_add(x, idx, v, 0), "scatter_add " + w);
                check_bits(scatter(x, idx, v, 0), "scatter " + w);
                const Tensor col = indices({n}, it, -17, 16, ++seed);
                check_bits(index_add(x, col, v, 0), "index_add " + w);
                check_bits(scatter_add(x, col.reshape({n, 1}), v, 0), "broadcast index " + w);
            }
}

TEST_CASE("scatters on the GPU: heavy duplicates, many columns, views, runs twice") {
    // 100,000 and 2^22 values into 3 targets.
    for (std::int64_t n : {100000, (1 << 22) + 3}) {
        const Tensor x = random_of({3}, float32, 11), v = random_of({n}, float32, 12);
        const Tensor idx = indices({n}, int64, 0, 2, 13);
        const Tensor a = check_bits(scatter_add(x, idx, v, 0), fmt::format("{} into 3", n));
        // The same kernel again: the same bits (the workspace is written before it is read).
        CHECK(testing::same_bits(a, check_bits(scatter_add(x, idx, v, 0), "again")));
        check_bits(scatter(x, idx, v, 0), fmt::format("scatter {} into 3", n));
        const Tensor h = random_of({3}, bfloat16, 14), vh = random_of({n}, bfloat16, 15);
        check_bits(index_add(h, idx, vh, 0), fmt::format("bfloat16 {} into 3", n));
    }
    // index_add of 20,000 rows of 512 features into 1,000 (embedding gradients): 512 columns.
    {
        const Tensor x = random_of({1000, 512}, float32, 21), src = random_of({20000, 512}, float32, 22);
        const Tensor ids = indices({20000}, int32, 0, 999, 23);
        check_bits(index_add(x, ids, src, 0), "index_add [20000, 512] into [1000, 512]");
        const Tensor xh = random_of({1000, 512}, float16, 24), sh = random_of({20000, 512}, float16, 25);
        check_bits(index_add(xh, ids, sh, 0), "float16 index_add");
        check_bits(scatter(x, ids.reshape({20000, 1}), src, 0), "scatter rows");
        // Assigned into x itself (an update in place): the bits of the functional result.
        Tensor acc = x.clone();
        const Tensor want = reference::evaluate(index_add(acc, ids, src, 0).node());
        assign(acc, index_add(acc, ids, src, 0));
        CHECK(testing::same_bits(acc, want));
    }
    // Views: a permuted x and values, a broadcast index, a sliced x, an axis in the middle; a result stored
    // into a permuted view.
    for (DType t : {float32, float64, int64, bfloat16}) {
        const Tensor x = random_of({9, 5, 4}, t, 31), v = random_of({4, 700, 5}, t, 32);
        const Tensor idx = indices({700, 1}, int64, -9, 8, 33);
        const Tensor xp = x.permute({1, 0, 2}), vp = v.permute({2, 1, 0});
        const Tensor a = check_bits(scatter_add(xp, idx, vp, 1), fmt::format("{} views", name(t)));
        CHECK(testing::same_bits(a, check_bits(scatter_add(xp.clone(), idx, vp.clone(), 1), "copies")));
        check_bits(scatter(xp, idx, vp, 1), fmt::format("{} views, scatter", name(t)));
        const Tensor xs = x.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, -2}});
        const Tensor v2 = random_of({300, 5, 4}, t, 34);
        const Tensor i2 = indices({300, 1, 1}, int32, 0, 4, 35);
        check_bits(scatter_add(xs, i2, v2, 0), fmt::format("{} sliced x", name(t)));
        Tensor into = Tensor::empty({4, 5, 5}, t, cuda0).permute({2, 1, 0});  // [5, 5, 4], strided
        const Array y = scatter_add(xs, i2, v2, 0);
        assign(into, y);
        CHECK(testing::same_bits(into.clone(), reference::evaluate(y.node())));
    }
    // Lazily computed operands and a consumer: separate kernels, the same bits.
    const Tensor x = random_of({64, 32}, float32, 41), v = random_of({5000, 32}, float32, 42);
    const Tensor ids = indices({5000}, int64, -64, 63, 43);
    // exp is CUDA's on the GPU (within its ulp bound of the reference's, docs/semantics.md): the result is
    // checked with the tolerance derived from the ops, not bit for bit.
    const Array lazy = index_add(Array(x) * 0.5, ids, exp(Array(v)), 0) + 1.0;
    Tensor lo = Tensor::empty(lazy.shape(), lazy.dtype(), cuda0);
    testing::poison(lo);
    assign(lo, lazy);
    const testing::Comparison lc = testing::check_against_reference({lazy.node()}, {lo});
    CHECK_MESSAGE(lc.ok, "lazy operands: " << lc.message);
}

TEST_CASE("scatters on the GPU: clamp mode, and an out-of-range index raises at the next synchronization") {
    const Tensor x = random_of({33, 8}, float32, 51), v = random_of({4096, 8}, float32, 52);
    const Tensor wild = indices({4096, 1}, int64, -100, 100, 53);
    check_bits(scatter_add(x, wild, v, 0, {.mode = IndexMode::Clamp}), "clamp");
    check_bits(scatter(x, wild, v, 0, IndexMode::Clamp), "clamp, scatter");
    std::vector<std::int64_t> iv(4096, 3);
    iv[1234] = 33;
    const Tensor bad = int64_tensor(iv);
    Tensor out = Tensor::empty({33, 8}, float32, cuda0);
    const char* apis[] = {"scatter", "scatter_add", "index_add"};
    const Array put = scatter(x, bad.reshape({4096, 1}), v, 0);
    const int line_put = __LINE__ - 1;
    const Array add = scatter_add(x, bad.reshape({4096, 1}), v, 0);
    const int line_add = __LINE__ - 1;
    const Array index = index_add(x, bad, v, 0);
    const int line_index = __LINE__ - 1;
    const Array ys[] = {put, add, index};
    const int lines[] = {line_put, line_add, line_index};
    for (int k = 0; k < 3; ++k) {
        CAPTURE(apis[k]);
        const Array& y = ys[k];
        const int line = lines[k];
        assign(out, y);  // launches; the error is recorded in the device's error word
        const std::string msg = error_of([&] { (void)out.to_host(); });
        CHECK_MESSAGE(msg.find(fmt::format("{}(): index 33 is out of range for an axis of extent 33",
                                           apis[k])) != std::string::npos,
                      msg);
        CHECK_MESSAGE(msg.find(fmt::format("test_scatter.cpp:{}", line)) != std::string::npos, msg);
        CHECK(!runtime_poisoned());
        CHECK_NOTHROW(synchronize());  // not sticky: the word was zeroed
    }
    iv[1234] = -1;
    check_bits(index_add(x, int64_tensor(iv), v, 0), "in range again");
}

TEST_CASE("scatters on the GPU: the atomic mode adds every value, within a bound of the reference") {
    for (DType t : {float32, float64}) {
        const Tensor x = random_of({5, 64}, t, 61), v = random_of({100000, 64}, t, 62);
        const Tensor ids = indices({100000}, int64, 0, 4, 63);
        const Array y = index_add(x, ids, v, 0, {.atomic = true});
        const Tensor got = Tensor(y).to_host();
        const auto f64 = [](const Tensor& t) {
            return reference::evaluate(astype(Array(t), float64).node()).to_vector<double>();
        };
        const std::vector<double> a = f64(got), b = f64(reference::evaluate(y.node()));
        const std::vector<double> vv = f64(v.to_host());
        const std::vector<std::int64_t> iv = ids.to_host().to_vector<std::int64_t>();
        // Any order of the additions: |error| <= 2 (count + 1) u (|x| + sum |v|) per target (first order).
        std::vector<double> abs_sum(a.size(), 0.0), count(a.size(), 0.0);
        for (std::size_t p = 0; p < iv.size(); ++p)
            for (std::size_t c = 0; c < 64; ++c) {
                abs_sum[static_cast<std::size_t>(iv[p]) * 64 + c] += std::abs(vv[p * 64 + c]);
                count[static_cast<std::size_t>(iv[p]) * 64 + c] += 1.0;
            }
        const double u = t == float32 ? 0x1p-24 : 0x1p-53;
        for (std::size_t i = 0; i < a.size(); ++i)
            CHECK(std::abs(a[i] - b[i]) <= 2.0 * (count[i] + 1.0) * u * (std::abs(b[i]) + abs_sum[i]));
    }
}
