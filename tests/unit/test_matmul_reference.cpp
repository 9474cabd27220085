// The CPU reference's matrix products against the order of docs/semantics.md, section 12, written out below
// as plain loops (naive_dot): bit for bit for odd sizes, K across the reference's K blocks (256) and across
// chunk boundaries (8192) up to six chunks, K = 1, one chunk as a single fma chain, transposed, sliced and
// broadcast operands, batches, int8 wrapping, float16 and bfloat16 rounded once, NaN, Inf and signed zeros,
// K = 0, the Oracle mode, and the speed the tests at real sizes need.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "loom/ir/build.hpp"
#include "loom/ir/half.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The contract's order for one output at accumulation type C: K in chunks of 8192, each accumulated with
/// fma in ascending k from +0, the chunk partials combined level by level by the pairwise tree ((0, 1),
/// (2, 3), ..., an odd last partial carried up). 8192 is written out rather than read from kProductChunk,
/// so that a change of the constant fails here instead of moving the oracle with it.
template <class C>
C naive_dot(const std::vector<C>& a, const std::vector<C>& b) {
    constexpr std::size_t kChunk = 8192;
    const std::size_t K = a.size();
    std::vector<C> partials;
    for (std::size_t k0 = 0; k0 < K; k0 += kChunk) {
        C acc = C(0);
        for (std::size_t k = k0; k < std::min(K, k0 + kChunk); ++k) acc = std::fma(a[k], b[k], acc);
        partials.push_back(acc);
    }
    if (partials.empty()) return C(0);
    while (partials.size() > 1) {
        std::vector<C> next;
        for (std::size_t p = 0; p + 1 < partials.size(); p += 2)
            next.push_back(partials[p] + partials[p + 1]);
        if (partials.size() % 2 == 1) next.push_back(partials.back());
        partials = next;
    }
    return partials[0];
}

/// One chunk, the contract for K <= 8192 in its simplest form: a single fma chain in ascending k from +0.
template <class C>
C single_chain(const std::vector<C>& a, const std::vector<C>& b) {
    C acc = C(0);
    for (std::size_t k = 0; k < a.size(); ++k) acc = std::fma(a[k], b[k], acc);
    return acc;
}

/// The value of `a` [M, K] times `b` [K, N] (host tensors, any strides) as float64 values of the result
/// dtype, row-major, each float output `dot(x, y)` of its row and column at the accumulation type
/// (naive_dot: the contract's value).
template <class Dot>
std::vector<double> matmul_by(const Tensor& a, const Tensor& b, Dot&& dot) {
    const std::int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
    const DType dt = a.dtype();
    std::vector<double> out;
    for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
            if (dt == DType::Int8) {  // exact in int64, then modulo 2^32
                std::int64_t s = 0;
                for (std::int64_t k = 0; k < K; ++k) s += a.get_int(i * K + k) * b.get_int(k * N + j);
                out.push_back(static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(s))));
            } else if (dt == DType::Float64) {
                std::vector<double> x, y;
                for (std::int64_t k = 0; k < K; ++k) {
                    x.push_back(a.get_double(i * K + k));
                    y.push_back(b.get_double(k * N + j));
                }
                out.push_back(dot(x, y));
            } else {  // float32, and float16 / bfloat16 widened exactly, then rounded once
                std::vector<float> x, y;
                for (std::int64_t k = 0; k < K; ++k) {
                    x.push_back(static_cast<float>(a.get_double(i * K + k)));
                    y.push_back(static_cast<float>(b.get_double(k * N + j)));
                }
                const float s = dot(x, y);
                out.push_back(dt == DType::Float16    ? round_to_half(s)
                              : dt == DType::BFloat16 ? round_to_bf16(s)
                                                      : s);
            }
        }
    return out;
}

std::vector<double> naive_matmul(const Tensor& a, const Tensor& b) {
    return matmul_by(a, b, [](const auto& x, const auto& y) { return naive_dot(x, y); });
}

bool same_bits(double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

/// `got` [M, N] holds `expected` bit for bit (signed zeros included; any NaN matches any NaN).
void check_equal(const Tensor& got, const std::vector<double>& expected, const std::string& what) {
    REQUIRE(got.numel() == static_cast<std::int64_t>(expected.size()));
    std::int64_t bad = 0, first = -1;
    for (std::int64_t e = 0; e < got.numel(); ++e)
        if (!same_bits(got.get_double(e), expected[static_cast<std::size_t>(e)])) {
            if (first < 0) first = e;
            ++bad;
        }
    CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << got.numel() << " elements differ, the first at "
                                 << first << ": " << (first >= 0 ? got.get_double(first) : 0.0)
                                 << " instead of "
                                 << (first >= 0 ? expected[static_cast<std::size_t>(first)] : 0.0));
}

Tensor random(const Shape& s, DType t, std::uint64_t seed) {
    return testing::random_tensor(
        s, t, seed, t == DType::Int8 ? testing::Random::uniform(-128, 127) : testing::Random::normal());
}

/// A host tensor of `dtype` holding `values` (converted as a cast converts).
Tensor host_values(const std::vector<double>& values, const Shape& shape, DType dtype) {
    Tensor t = Tensor::host(shape, DType::Float64);
    REQUIRE(static_cast<std::int64_t>(values.size()) == t.numel());
    std::copy(values.begin(), values.end(), static_cast<double*>(t.data()));
    return reference::cast(t, dtype);
}

NodePtr in(const Tensor& t, const char* label = "x") {
    return input(t.dtype(), t.shape(), label, t.impl());
}

Tensor product(const Tensor& a, const Tensor& b) {
    return reference::evaluate(matmul(in(a), in(b, "y")));
}

/// `t` [B, ...] at batch index i: [...] (a view).
Tensor entry(const Tensor& t, std::int64_t i) {
    return t.slice({{i, i + 1}}).squeeze(0);
}

}  // namespace

TEST_CASE("reference matmul follows the contract's order bit for bit: odd sizes, K across chunk boundaries") {
    const std::int64_t Ks[] = {1, 7, 31, 33, 255, 256, 257, 513, 1281, 2563};
    const std::pair<std::int64_t, std::int64_t> MNs[] = {{5, 37}, {1, 19}, {6, 1}, {1, 1}, {4, 16}};
    std::uint64_t seed = 100;
    for (DType dt : {DType::Float32, DType::Float64}) {
        for (std::int64_t K : Ks)
            for (auto [M, N] : MNs) {
                const Tensor a = random({M, K}, dt, seed++), b = random({K, N}, dt, seed++);
                check_equal(product(a, b), naive_matmul(a, b),
                            fmt::format("{} [{}, {}] x [{}, {}]", name(dt), M, K, K, N));
            }
    }
    // Blocks of the reference (64 rows, 256 columns, K blocks of 256) and its micro tiles (4 x 16) with
    // remainders.
    const Tensor a = random({67, 600}, DType::Float32, 7), b = random({600, 263}, DType::Float32, 8);
    check_equal(product(a, b), naive_matmul(a, b), "float32 [67, 600] x [600, 263]");
}

TEST_CASE("reference matmul across chunks of 8192: one chunk up to K = 8192, the pairwise tree above") {
    // 8191 and 8192 are one chunk, 8193 two (the second of one element), 16385 three, 5 * 8192 + 3 six and
    // 6 * 8192 + 1 seven (odd partials carried up at two levels); small M x N keep the oracle fast.
    const std::int64_t Ks[] = {8191, 8192, 8193, 16384, 16385, 5 * 8192 + 3, 6 * 8192 + 1};
    const std::pair<std::int64_t, std::int64_t> MNs[] = {{3, 5}, {1, 2}, {2, 1}, {1, 1}};
    std::uint64_t seed = 200;
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16})
        for (std::int64_t K : Ks)
            for (auto [M, N] : MNs) {
                const Tensor a = random({M, K}, dt, seed++), b = random({K, N}, dt, seed++);
                check_equal(product(a, b), naive_matmul(a, b),
                            fmt::format("{} [{}, {}] x [{}, {}]", name(dt), M, K, K, N));
            }
    // A chunk boundary that shows: 1 * 1 first, then (1 + 2^-23) (1 + 2^-20) = 1 + 2^-20 + 2^-23 + 2^-43 as
    // the last term. In one chain the fma rounds 2 + 2^-20 + 2^-23 + 2^-43 once, up to 2 + 2^-20 + 2^-22; as
    // a chunk of its own the term is first rounded to 1 + 2^-20 + 2^-23, and 1 plus it is a tie that rounds
    // to even, 2 + 2^-20.
    for (std::int64_t K : {std::int64_t{8192}, std::int64_t{8193}}) {
        CAPTURE(K);
        std::vector<double> x(static_cast<std::size_t>(K), 0.0), y(static_cast<std::size_t>(K), 0.0);
        x[0] = y[0] = 1.0;
        x.back() = 1 + 0x1p-23;
        y.back() = 1 + 0x1p-20;
        const Tensor a = host_values(x, {1, K}, DType::Float32), b = host_values(y, {K, 1}, DType::Float32);
        CHECK(product(a, b).get_double(0) == (K == 8192 ? 2 + 0x1p-20 + 0x1p-22 : 2 + 0x1p-20));
    }
}

TEST_CASE("reference matmul for K <= 8192 is a single fma chain per output from +0") {
    const std::int64_t Ks[] = {1, 7, 255, 256, 257, 513, 1000, 4096, 8191, 8192};
    std::uint64_t seed = 300;
    for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16})
        for (std::int64_t K : Ks) {
            const Tensor a = random({5, K}, dt, seed++), b = random({K, 19}, dt, seed++);
            const std::vector<double> chain =
                matmul_by(a, b, [](const auto& x, const auto& y) { return single_chain(x, y); });
            check_equal(product(a, b), chain, fmt::format("{} [5, {}] x [{}, 19]", name(dt), K, K));
        }
}

TEST_CASE("reference matmul reads transposed, sliced, reversed and broadcast operands as they are") {
    const std::int64_t M = 9, K = 300, N = 21;
    const Tensor xt = random({K, M}, DType::Float32, 11);  // a = x^T
    const Tensor yt =
        random({2 * K, N + 3}, DType::Float32, 12);  // b = every other row, columns reversed, 3 dropped
    const Tensor a = xt.transposed();
    const Tensor b = yt.slice({{0, ir::SliceSpec::kNone, 2}, {N + 2, 2, -1}});
    REQUIRE(b.shape() == Shape{K, N});
    const std::vector<double> expected = naive_matmul(a, b);
    check_equal(product(a, b), expected, "tensor views");
    // The same views as IR nodes over the whole tensors.
    const NodePtr va = transpose(in(xt));
    const NodePtr vb = slice(in(yt, "y"), {{0, ir::SliceSpec::kNone, 2}, {N + 2, 2, -1}});
    check_equal(reference::evaluate(matmul(va, vb)), expected, "IR views");
    // Contiguous copies give the same bits: the layout never changes the order.
    check_equal(product(reference::evaluate(va), reference::evaluate(vb)), expected, "contiguous copies");
    // A broadcast operand (stride 0 along K): every row of b is the same vector.
    const Tensor row = random({1, N}, DType::Float32, 13);
    const NodePtr rows = broadcast_to(in(row, "row"), {K, N});
    check_equal(reference::evaluate(matmul(in(a), rows)), naive_matmul(a, reference::evaluate(rows)),
                "broadcast rows");
    // Vectors: [K] x [K, N], [M, K] x [K] and [K] x [K], the vector a strided column of a matrix.
    const Tensor v = random({K, 4}, DType::Float32, 14).slice({{}, {2, 3}}).squeeze(1);
    const Tensor vm = reference::evaluate(in(v)).reshape({1, K}),
                 mv = reference::evaluate(in(v)).reshape({K, 1});
    check_equal(reference::evaluate(matmul(in(v), in(b))), naive_matmul(vm, b), "vector x matrix");
    check_equal(reference::evaluate(matmul(in(a), in(v))), naive_matmul(a, mv), "matrix x vector");
    check_equal(reference::evaluate(matmul(in(v), in(v))), naive_matmul(vm, mv), "vector x vector");
}

TEST_CASE("reference matmul of batches: broadcast batch axes pair the entries as NumPy does") {
    const Tensor a = random({3, 1, 5, 40}, DType::Float32, 21), b = random({4, 40, 6}, DType::Float32, 22);
    const Tensor c = product(a, b);
    REQUIRE(c.shape() == Shape{3, 4, 5, 6});
    for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t j = 0; j < 4; ++j)
            check_equal(entry(entry(c, i), j), naive_matmul(entry(entry(a, i), 0), entry(b, j)),
                        fmt::format("entry {} {}", i, j));
    // A matrix times a batch: the one matrix is every entry's left operand.
    const Tensor m = random({5, 40}, DType::Float64, 23), bb = random({3, 40, 7}, DType::Float64, 24);
    const Tensor mb = product(m, bb);
    for (std::int64_t j = 0; j < 3; ++j)
        check_equal(entry(mb, j), naive_matmul(m, entry(bb, j)), fmt::format("batch {}", j));
}

TEST_CASE("reference matmul of int8: int32 sums that wrap, exact") {
    const Tensor a = random({7, 300}, DType::Int8, 31), b = random({300, 9}, DType::Int8, 32);
    const Tensor c = product(a, b);
    CHECK(c.dtype() == DType::Int32);
    check_equal(c, naive_matmul(a, b), "random int8");
    // 127 * 127 * 140000 = 2258060000 passes 2^31 - 1: the sum wraps to 2258060000 - 2^32.
    const std::int64_t K = 140000;
    Tensor ones = Tensor::host({1, K}, DType::Int8), col = Tensor::host({K, 1}, DType::Int8);
    std::fill_n(static_cast<std::int8_t*>(ones.data()), K, std::int8_t{127});
    std::fill_n(static_cast<std::int8_t*>(col.data()), K, std::int8_t{127});
    CHECK(product(ones, col).get_int(0) == 2258060000LL - (1LL << 32));
    std::fill_n(static_cast<std::int8_t*>(col.data()), K, std::int8_t{-128});
    CHECK(product(ones, col).get_int(0) ==
          static_cast<std::int32_t>(static_cast<std::uint32_t>(127LL * -128LL * K)));
}

TEST_CASE("reference matmul of float16 and bfloat16: float32 sums rounded once") {
    for (DType dt : {DType::Float16, DType::BFloat16}) {
        CAPTURE(name(dt));
        const Tensor a = random({6, 513}, dt, 41), b = random({513, 18}, dt, 42);
        const Tensor c = product(a, b);
        CHECK(c.dtype() == dt);
        check_equal(c, naive_matmul(a, b), fmt::format("{} [6, 513] x [513, 18]", name(dt)));
    }
    // 1 + 1024 terms of 2^-12: float32 holds 1.25 exactly; summing in float16 would stay at 1 (2^-12 is below
    // half an ulp of 1).
    const std::int64_t K = 1025;
    std::vector<double> x(K, 0x1p-12), ones(K, 1.0);
    x[0] = 1.0;
    const Tensor a = host_values(x, {1, K}, DType::Float16);
    const Tensor b = host_values(ones, {K, 1}, DType::Float16);
    CHECK(product(a, b).get_double(0) == 1.25);
}

TEST_CASE("reference matmul: NaN and Inf propagate, products of -0 sum to +0, K = 0 gives +0") {
    // Row 1 of a holds a NaN: row 1 of the result is NaN, the others are not.
    Tensor a = host_values({1, 2, 3, 4, 5, kNaN, 7, 8, 9, 10, 11, 12}, {3, 4}, DType::Float32);
    const Tensor b = host_values({1, -1, 2, 0.5, 3, 1, 1, 2}, {4, 2}, DType::Float32);
    const Tensor c = product(a, b);
    CHECK(!std::isnan(c.get_double(0)));
    CHECK(std::isnan(c.get_double(2)));
    CHECK(std::isnan(c.get_double(3)));
    CHECK(!std::isnan(c.get_double(4)));
    check_equal(c, naive_matmul(a, b), "NaN row");
    // Inf * 0 is NaN; Inf and -Inf products in one output give NaN; Inf alone stays Inf; overflow gives Inf.
    const Tensor p = host_values({0, kInf, 1, 1, 3e38, 3e38}, {3, 2}, DType::Float32);
    const Tensor q = host_values({kInf, 1, 1, -1, 2, 1}, {2, 3}, DType::Float32);
    const Tensor pq = product(p, q);
    check_equal(pq, naive_matmul(p, q), "Inf and overflow");
    CHECK(std::isnan(pq.get_double(0)));  // 0 * Inf + Inf * -1
    CHECK(pq.get_double(1) == kInf);      // 0 * 1 + Inf * 2
    CHECK(pq.get_double(6) == kInf);      // 3e38 * Inf + 3e38 * -1
    CHECK(pq.get_double(7) == kInf);      // 3e38 * 1 + 3e38 * 2 overflows
    CHECK(pq.get_double(4) == 3.0);
    const Tensor u = host_values({kInf, kInf}, {1, 2}, DType::Float32),
                 w = host_values({1, -1}, {2, 1}, DType::Float32);
    CHECK(std::isnan(product(u, w).get_double(0)));  // Inf + -Inf
    // Every product -0: the sum starts from +0, so the result is +0 (not sum's -0).
    const Tensor n = host_values({-1, -2, -3}, {1, 3}, DType::Float32);
    const Tensor z = host_values({0, 0, 0}, {3, 1}, DType::Float32);
    CHECK(!std::signbit(product(n, z).get_double(0)));
    // K = 0: the empty sum, +0 (0 for int8).
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int8}) {
        const Tensor e = product(Tensor::host({2, 0}, dt), Tensor::host({0, 3}, dt));
        REQUIRE(e.shape() == Shape{2, 3});
        for (std::int64_t k = 0; k < 6; ++k) CHECK(same_bits(e.get_double(k), 0.0));
    }
    CHECK(product(Tensor::host({0, 5}, DType::Float32), Tensor::host({5, 3}, DType::Float32)).numel() == 0);
}

TEST_CASE("reference matmul in Oracle mode computes the same order in float64") {
    const Tensor a = random({4, 600}, DType::Float16, 51), b = random({600, 5}, DType::Float16, 52);
    const Tensor c = reference::evaluate(matmul(in(a), in(b, "y")), {}, reference::Mode::Oracle);
    CHECK(c.dtype() == DType::Float64);
    check_equal(c, naive_matmul(reference::cast(a, DType::Float64), reference::cast(b, DType::Float64)),
                "oracle");
}

TEST_CASE("reference matmul speed: 512^3 float32, and sampled rows of 4096 x 4096") {
    using Clock = std::chrono::steady_clock;
    const Tensor a = random({512, 512}, DType::Float32, 61), b = random({512, 512}, DType::Float32, 62);
    const auto t0 = Clock::now();
    const Tensor c = product(a, b);
    const double s512 = std::chrono::duration<double>(Clock::now() - t0).count();
    MESSAGE(fmt::format("reference matmul 512^3 float32: {:.3f} s", s512));
    CHECK(s512 < 2.0);  // well under a second on 2 cores; the bound leaves room for a loaded machine
    const Tensor a_rows = a.slice({{0, 512, 97}}), b_cols = b.slice({{}, {3, 512, 101}});
    check_equal(product(a_rows, b_cols), naive_matmul(a_rows, b_cols), "512^3 samples");
    check_equal(reference::evaluate(slice(slice(in(c), {{0, 512, 97}}), {{}, {3, 512, 101}})),
                naive_matmul(a_rows, b_cols), "512^3 sampled outputs");
    // Rows sampled from a 4096 x 4096 product: every eighth of 64 rows through a strided view.
    const Tensor A = random({4096, 4096}, DType::Float32, 63), B = random({4096, 4096}, DType::Float32, 64);
    const Tensor rows = A.slice({{5, 4096, 512}});
    const auto t1 = Clock::now();
    const Tensor R = product(rows, B);
    const double s4096 = std::chrono::duration<double>(Clock::now() - t1).count();
    MESSAGE(fmt::format("reference matmul of 8 rows of 4096 x 4096 float32: {:.3f} s", s4096));
    CHECK(s4096 < 4.0);
    const Tensor R_some = R.slice({{0, 8, 3}, {0, 4096, 1023}}), B_some = B.slice({{}, {0, 4096, 1023}});
    check_equal(R_some, naive_matmul(rows.slice({{0, 8, 3}}), B_some), "4096 samples");
}
