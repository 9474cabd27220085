// Matrix products on the GPU (docs/semantics.md, section 12): one CUDA-core kernel (Family::MatMul) per
// product whose bits equal the CPU reference's for every dtype, because both follow the one order of the
// contract (fma in ascending k from +0 inside chunks of 8192, the chunk partials in the pairwise tree;
// float16 and bfloat16 widened to float32 and rounded once, int8 summed in int32 with wrapping). Covered:
// NumPy's shapes (vectors, rank-0 results, batches, broadcast batches, K = 0, K = 1, empty results), sizes
// around tile edges, K past one chunk, transposed, sliced, reversed and broadcast operands (the scalar
// loads) against contiguous copies (the vector loads), NaN, Inf, -0 and overflow, int8 sums that wrap, and
// tile hints, honoured or refused. Every result is checked against the reference into poisoned outputs
// (pwtest::run_checked) and against the unfused evaluation bit for bit. Epilogues fused into the product's
// kernel are in test_matmul_epilogue.cpp.
#include <doctest/doctest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "test_matmul_util.hpp"

using namespace loom;
using pwtest::kNone;

namespace {

const DType kProductDTypes[] = {float16, bfloat16, float32, float64, int8};

// LOOM_TEST_SMALL=1 (the compute-sanitizer step of scripts/device_run.sh, whose time boxes the kernel cases
// share): products of more than 2^22 multiply-adds are left out, and K stays short (a sanitizer follows every
// K step of a block through shared memory): two or three chunks, and the int8 extremes without the wrap.
using mmtest::small_shapes;
bool heavy(std::int64_t multiply_adds) {
    return small_shapes() && multiply_adds > (std::int64_t{1} << 22);
}

using mmtest::Kernels;
using mmtest::kernels_of;
using mmtest::on_gpu;
using mmtest::run_both;
using mmtest::tile_of;

// One product on the GPU: one kernel, a product's, whose explain text names its tile; then run_both.
Tensor run_product(const Array& y, const std::string& what) {
    if (on_gpu() && y.numel() > 0) {
        INFO(what);
        const Kernels k = kernels_of({y});
        CHECK(k.products == 1);
        CHECK(tile_of(explain({y})) != "");
    }
    return run_both(y, what);
}

// A device tensor of `shape` holding `values` (row-major) converted to `d` as a cast converts.
Tensor from_values(const std::vector<double>& values, const Shape& shape, DType d) {
    return from_host(std::span<const double>(values), shape, d, pwtest::dev());
}

// A contiguous device copy of the view `v` (a copy kernel; the product then reads contiguous rows).
Tensor contiguous_copy(const Tensor& v) {
    Tensor out = Tensor::empty(v.shape(), v.dtype(), pwtest::dev());
    assign(out, Array(v));
    pwtest::wait_device();
    return out;
}

// Writes `values` into the view `v` of a larger tensor (assign into a strided view).
void write_into(const Tensor& v, const Tensor& values) {
    assign(v, Array(values));
    pwtest::wait_device();
}

// The largest finite value of a float dtype.
double max_finite(DType d) {
    switch (d) {
        case DType::Float16:
            return 65504.0;
        case DType::BFloat16:
            return 0x1.fep127;
        case DType::Float32:
            return std::numeric_limits<float>::max();
        default:
            return std::numeric_limits<double>::max();
    }
}

}  // namespace

TEST_CASE("matmul: float32 sizes around tile edges (1, 31, 32, 33, 127, 129, 520), bit for bit") {
    const std::vector<std::int64_t> sizes = {1, 31, 32, 33, 127, 129};
    std::vector<std::array<std::int64_t, 3>> shapes;  // M, N, K
    for (std::size_t i = 0; i < sizes.size(); ++i)
        for (std::size_t j = 0; j < sizes.size(); ++j)
            if (sizes[i] * sizes[j] > 1)
                shapes.push_back({sizes[i], sizes[j], sizes[(i + j + 1) % sizes.size()]});
    // (Results of one element or none have a test case of their own.)
    for (auto s : std::vector<std::array<std::int64_t, 3>>{{520, 513, 515},
                                                           {512, 512, 512},
                                                           {1, 520, 513},
                                                           {520, 1, 129},
                                                           {33, 520, 1},
                                                           {129, 127, 520},
                                                           {31, 33, 64},
                                                           {64, 64, 1}})
        shapes.push_back(s);
    std::uint64_t seed = 1;
    for (const auto& [m, n, k] : shapes) {
        if (heavy(m * n * k)) continue;
        const Tensor a = pwtest::rand({m, k}, float32, seed++), b = pwtest::rand({k, n}, float32, seed++);
        run_product(matmul(a, b), fmt::format("[{}, {}] x [{}, {}] float32", m, k, k, n));
    }
}

TEST_CASE("matmul: every dtype, float16 and bfloat16 widened to float32 and rounded once, int8 into int32") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    const std::vector<std::array<std::int64_t, 3>> shapes = {{33, 31, 17},   {64, 64, 64},  {129, 127, 33},
                                                             {1, 129, 31},   {127, 1, 129}, {31, 33, 1},
                                                             {128, 136, 520}};
    std::uint64_t seed = 100;
    for (DType d : kProductDTypes) {
        for (const auto& [m, n, k] : shapes) {
            if (heavy(m * n * k)) continue;
            const Tensor a = pwtest::rand({m, k}, d, seed++), b = pwtest::rand({k, n}, d, seed++);
            const Array y = matmul(a, b);
            CHECK(y.dtype() == (d == int8 ? int32 : d));
            run_product(y, fmt::format("[{}, {}] x [{}, {}] {}", m, k, k, n, name(d)));
        }
    }
}

TEST_CASE("matmul: mixed operand dtypes promote as binary ops do before the product") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    const Tensor h = pwtest::rand({33, 40}, float16, 150), f = pwtest::rand({40, 17}, float32, 151);
    const Tensor bf = pwtest::rand({40, 17}, bfloat16, 152), i = pwtest::rand({40, 17}, int8, 153);
    const Tensor w = pwtest::rand({40, 17}, float64, 154);
    run_both(matmul(h, f), "float16 x float32: float32");
    run_both(matmul(h, bf), "float16 x bfloat16: float32");
    run_both(matmul(h, w), "float16 x float64: float64");
    run_both(matmul(h, i), "float16 x int8: float16");
    run_both(matmul(pwtest::rand({33, 40}, bool_, 155), i), "bool x int8: int8, into int32");
}

TEST_CASE("matmul: K = 0 gives +0 everywhere") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 200;
    for (DType d : kProductDTypes) {
        INFO(name(d));
        auto input = [&](const Shape& shape) { return pwtest::rand(shape, d, seed++); };
        for (const auto& [as, bs] : std::vector<std::pair<Shape, Shape>>{
                 {{5, 0}, {0, 7}}, {{3, 4, 0}, {3, 0, 2}}, {{64, 0}, {0, 64}}}) {
            const Tensor a = input(as), b = input(bs);
            const Tensor c =
                run_both(matmul(a, b), fmt::format("{} x {} {}", to_string(as), to_string(bs), name(d)))
                    .to_host();
            REQUIRE(c.numel() > 0);
            for (std::int64_t i = 0; i < c.numel(); ++i) {
                CHECK(c.get_double(i) == 0.0);
                CHECK(!std::signbit(c.get_double(i)));  // +0: every chunk starts from +0
            }
        }
    }
}

TEST_CASE("matmul: results of one element or none: dot products, [1, K] x [K, 1], empty shapes") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 250;
    for (DType d : kProductDTypes) {
        INFO(name(d));
        auto input = [&](const Shape& shape) { return pwtest::rand(shape, d, seed++); };
        for (std::int64_t k : small_shapes() ? std::vector<std::int64_t>{1, 33, 8193}
                                             : std::vector<std::int64_t>{1, 33, 520, 8193, 20000}) {
            const std::string dk = fmt::format("{} K {}", name(d), k);
            const Tensor v = input({k}), w = input({k}), a = input({1, k}), b = input({k, 1});
            CHECK(run_product(matmul(v, w), "[K] x [K]: " + dk).shape() == Shape{});  // rank 0
            CHECK(run_product(matmul(a, b), "[1, K] x [K, 1]: " + dk).shape() == Shape{1, 1});
            CHECK(run_product(matmul(v, b), "[K] x [K, 1]: " + dk).shape() == Shape{1});
            run_both(matmul(v, w) + 1.0, "[K] x [K] + 1: " + dk);
            run_both(relu(matmul(a, b) * 2.0), "relu(([1, K] x [K, 1]) * 2): " + dk);
        }
        // K = 0 as well: [0] x [0] is a rank-0 +0.
        const Tensor v0 = input({0}), w0 = input({0});
        const Tensor c0 = run_both(matmul(v0, w0), "[0] x [0]").to_host();
        REQUIRE(c0.shape() == Shape{});
        CHECK((c0.get_double(0) == 0.0 && !std::signbit(c0.get_double(0))));
        // M, N or a batch extent of 0: empty results, with and without an epilogue.
        for (const auto& [as, bs] : std::vector<std::pair<Shape, Shape>>{{{0, 9}, {9, 4}},
                                                                         {{6, 9}, {9, 0}},
                                                                         {{0, 6, 9}, {9, 4}},
                                                                         {{2, 0, 3}, {2, 3, 5}},
                                                                         {{0, 0}, {0, 0}}}) {
            const Tensor a = input(as), b = input(bs);
            const std::string what = fmt::format("{} x {} {}", to_string(as), to_string(bs), name(d));
            CHECK(run_both(matmul(a, b), what).numel() == 0);
            CHECK(run_both(matmul(a, b) * 2.0 + 1.0, what + " with an epilogue").numel() == 0);
        }
    }
}

TEST_CASE("matmul: K = 1 and vectors (NumPy's 1-D rules)") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 300;
    for (DType d : kProductDTypes) {
        for (std::int64_t k : {1, 33, 520}) {
            const std::string dk = fmt::format("{} K {}", name(d), k);
            const Tensor v = pwtest::rand({k}, d, seed++), w = pwtest::rand({k}, d, seed++);
            const Tensor a = pwtest::rand({37, k}, d, seed++), b = pwtest::rand({k, 45}, d, seed++);
            const Tensor bb = pwtest::rand({3, k, 45}, d, seed++), ab = pwtest::rand({3, 37, k}, d, seed++);
            CHECK(run_product(matmul(v, b), "[K] x [K, 45]: " + dk).shape() == Shape{45});  // M = 1
            CHECK(run_product(matmul(a, v), "[37, K] x [K]: " + dk).shape() == Shape{37});  // N = 1
            CHECK(run_product(matmul(v, bb), "[K] x [3, K, 45]: " + dk).shape() == Shape{3, 45});
            CHECK(run_product(matmul(ab, v), "[3, 37, K] x [K]: " + dk).shape() == Shape{3, 37});
            // The same as explicit rows and columns.
            CHECK(run_product(matmul(a.slice({{0, 1}}), b), "[1, K] x [K, 45]: " + dk).shape() ==
                  Shape{1, 45});
            CHECK(run_product(matmul(a, b.slice({{kNone, kNone}, {3, 4}})), "[37, K] x [K, 1]: " + dk)
                      .shape() == Shape{37, 1});
        }
    }
}

TEST_CASE(
    "matmul: matrix-vector products on one-wide tiles: a thread per output, matrix and vector in pieces, the "
    "bits of any tile") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 350;
    const std::int64_t m = small_shapes() ? 300 : 4100,
                       k = small_shapes() ? 700 : 8192 + 260;  // past a chunk when not small
    for (DType d : {float32, float64, float16}) {
        INFO(name(d));
        const Tensor a = pwtest::rand({m, k}, d, seed++), x = pwtest::rand({k}, d, seed++),
                     at = pwtest::rand({k, m}, d, seed++);
        const Array y = matmul(a, x);
        if (on_gpu()) {
            const std::string text = explain({y});
            INFO(text);
            CHECK(tile_of(text) == (d == float64 ? "64x1x128" : "128x1x128"));
            CHECK(text.find("cp.async 16-byte pieces where the pointers allow, element loads else") !=
                  std::string::npos);  // both operands
            const std::string src = cuda_source({y}, "mm_gemv");
            CHECK((d != float32 || src.find("fragments read 4 elements of A's rows and 1 of B's at once") !=
                                       std::string::npos));
        }
        const Tensor c = run_product(y, "[M, K] x [K]");
        // The bits of a square tile (the planner's choice before one-wide tiles) and of other one-wide tiles.
        for (const TileHint& h : {tile(128, 16, 16), tile(32, 1, 128), tile(256, 1, 32)})
            pwtest::require_same_bits(
                run_both(matmul(a, x, h), fmt::format("hint {}x{}x{}", h.rows, h.cols, h.depth)), c,
                "a matrix-vector product's tiles");
        // A one element off (no 16-byte pieces: element loads), a transposed matrix, a batch, a vector times
        // a matrix.
        const Tensor wide = pwtest::rand({m, k + 1}, d, seed++);
        const Tensor off = wide.slice({{kNone, kNone}, {1, k + 1}});
        pwtest::require_same_bits(run_product(matmul(off, x), "[M, K] sliced one element off x [K]"),
                                  run_product(matmul(contiguous_copy(off), x), "its contiguous copy"),
                                  "pieces against element loads");
        pwtest::require_same_bits(
            run_product(matmul(at.transposed(), x), "[K, M].T x [K]"),
            run_product(matmul(contiguous_copy(at.transposed()), x), "its contiguous copy"),
            "a transposed matrix");
        run_product(matmul(x, at), "[K] x [K, M]: M = 1");
        // The vector one element off its alignment, and every other element (a k-stride of 2): element loads
        // of the vector, the bits of its pieces.
        const Tensor xw = pwtest::rand({2 * k + 2}, d, seed++);
        const Tensor x_off = xw.slice({{1, k + 1}}), x_step = xw.slice({{0, 2 * k, 2}});
        pwtest::require_same_bits(run_product(matmul(a, x_off), "[M, K] x [K] one element off"),
                                  run_product(matmul(a, contiguous_copy(x_off)), "its contiguous copy"),
                                  "the vector by elements");
        pwtest::require_same_bits(run_product(matmul(a, x_step), "[M, K] x every other element"),
                                  run_product(matmul(a, contiguous_copy(x_step)), "its contiguous copy"),
                                  "a strided vector");
        const Tensor ab = pwtest::rand({3, 40, small_shapes() ? 65 : 1000}, d, seed++),
                     xb = pwtest::rand({small_shapes() ? 65 : 1000}, d, seed++);
        run_product(matmul(ab, xb), "[3, 40, K] x [K]");
        // With an epilogue: the bias and activation of one output per thread.
        const Tensor bias = pwtest::rand({m}, d, seed++);
        run_both(relu(y + bias), "relu(A x + bias)");
    }
}

TEST_CASE("matmul: batched, broadcast batches, and many small products") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 400;
    struct Case {
        Shape a, b;
    };
    const std::vector<Case> cases = {
        {{3, 33, 31}, {3, 31, 17}},     // [B, M, K] x [B, K, N]
        {{4, 33, 31}, {31, 17}},        // [B, M, K] x [K, N]: every entry times the same b
        {{33, 31}, {4, 31, 17}},        // [M, K] x [B, K, N]
        {{2, 1, 33, 31}, {3, 31, 17}},  // [2, 1, M, K] x [3, K, N] -> [2, 3, M, N]
        {{1, 5, 9}, {6, 9, 4}},         // a batch extent of 1 broadcast
        {{7, 1, 5, 9}, {1, 6, 9, 4}},   // both operands broadcast
        {{1000, 8, 8}, {1000, 8, 8}},   // 1000 products of 8 x 8 x 8
        {{1000, 8, 8}, {8, 8}},        {{64, 1, 64}, {64, 64, 1}},  // 64 dot products
        {{5, 129, 127}, {5, 127, 33}},
    };
    for (DType d : {float32, float16, float64, int8}) {
        for (const Case& c : cases) {
            const Tensor a = pwtest::rand(c.a, d, seed++), b = pwtest::rand(c.b, d, seed++);
            run_product(matmul(a, b), fmt::format("{} x {} {}", to_string(c.a), to_string(c.b), name(d)));
        }
    }
    // A batch axis that is not the outermost in memory: [33, 3, 31] read as [3, 33, 31].
    const Tensor s = pwtest::rand({33, 3, 31}, float32, seed++),
                 b = pwtest::rand({3, 31, 17}, float32, seed++);
    run_product(matmul(s.permute({1, 0, 2}), b), "a permuted batch axis");
    // A batch from a slice with a step (every other matrix).
    const Tensor many = pwtest::rand({8, 33, 31}, float32, seed++),
                 b4 = pwtest::rand({4, 31, 17}, float32, seed++);
    run_product(matmul(many.slice({{1, kNone, 2}}), b4), "every other matrix of a batch, from 1");
}

TEST_CASE(
    "matmul: batches whose K is one step walk their entries, the next entry's tiles copying, bit for bit") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    // The batch-pipelined schedule (MatmulPlan::batch_pipelined): a block per resident slot walks entries
    // blockIdx.y, + gridDim.y, ...; more entries than slots, several tiles per entry, a partial K step, an
    // epilogue and a broadcast operand.
    std::uint64_t seed = 450;
    struct Case {
        Shape a, b;
    };
    const std::vector<Case> cases = {
        {{600, 64, 64}, {600, 64, 64}},  // M6's shape, fewer entries: each block takes two or three
        {{300, 130, 20}, {20, 70}},      // two tiles per entry, K = 20 of a step of 32: the partial step
        {{997, 16, 12}, {997, 12, 40}},  // a prime count of entries
        {{3, 1, 33, 8}, {2, 8, 17}},     // broadcast batch axes, fewer entries than slots
    };
    for (DType d : {float32, float64, float16}) {
        for (const Case& c : cases) {
            const Tensor a = pwtest::rand(c.a, d, seed++), b = pwtest::rand(c.b, d, seed++);
            const Array y = matmul(a, b);
            if (on_gpu()) CHECK(explain({y}).find("each block walking batch entries") != std::string::npos);
            run_product(y, fmt::format("{} x {} {}", to_string(c.a), to_string(c.b), name(d)));
        }
    }
    const Tensor a = pwtest::rand({500, 48, 32}, float32, seed++),
                 b = pwtest::rand({500, 32, 40}, float32, seed++);
    const Tensor bias = pwtest::rand({40}, float32, seed++);
    run_both(relu(matmul(a, b) + bias), "relu(a @ b + bias) over 500 entries");
}

TEST_CASE("matmul: transposed, sliced, reversed and broadcast operands give the bits of contiguous copies") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    // Contiguous operands whose rows are 16-byte aligned for every dtype (the vector loads), and views of
    // the same values that are not (the scalar loads): both give the reference's bits, so the same bits.
    const std::int64_t m = 96, n = 64, k = 128;
    std::uint64_t seed = 500;
    for (DType d : kProductDTypes) {
        INFO(name(d));
        const Tensor a = pwtest::rand({m, k}, d, seed++), b = pwtest::rand({k, n}, d, seed++);
        const Tensor c = run_product(matmul(a, b), fmt::format("contiguous {}", name(d)));
        auto same = [&](const Tensor& av, const Tensor& bv, const std::string& what) {
            const Tensor got = run_product(matmul(av, bv), what);
            pwtest::require_same_bits(got, c, what + " against the contiguous operands");
        };
        // a.T of a contiguous [K, M], b.T of a contiguous [N, K], and both.
        const Tensor at = contiguous_copy(a.transposed()), bt = contiguous_copy(b.transposed());
        same(at.transposed(), b, "a transposed view");
        same(a, bt.transposed(), "b transposed view");
        same(at.transposed(), bt.transposed(), "both transposed views");
        // Offsets of one element: a[:, 1:] of a [M, K + 1] and b[1:, 1:] of a [K + 1, N + 1].
        const Tensor wide_a = pwtest::rand({m, k + 1}, d, seed++),
                     wide_b = pwtest::rand({k + 1, n + 1}, d, seed++);
        const Tensor a1 = wide_a.slice({{kNone, kNone}, {1, kNone}}),
                     b1 = wide_b.slice({{1, kNone}, {1, kNone}});
        write_into(a1, a);
        write_into(b1, b);
        same(a1, b, "a[:, 1:] (misaligned rows)");
        same(a, b1, "b[1:, 1:] (misaligned rows)");
        same(a1, b1, "both misaligned");
        // Every other row of a [2M, K]: aligned rows with a row stride of 2K.
        const Tensor tall = pwtest::rand({2 * m, k}, d, seed++);
        const Tensor a2 = tall.slice({{1, kNone, 2}});
        write_into(a2, a);
        same(a2, b, "every other row");
        // Reversed along K (a negative stride on the fastest axis of a, on the rows of b).
        const Tensor ar = contiguous_copy(a.slice({{kNone, kNone}, {kNone, kNone, -1}}));
        const Tensor br = contiguous_copy(b.slice({{kNone, kNone, -1}}));
        same(ar.slice({{kNone, kNone}, {kNone, kNone, -1}}), b, "a reversed along K");
        same(a, br.slice({{kNone, kNone, -1}}), "b reversed along K");
        // A broadcast row of a (stride 0 along M) and a broadcast column of b (stride 0 along N).
        const Tensor row = pwtest::rand({1, k}, d, seed++), col = pwtest::rand({k, 1}, d, seed++);
        const Tensor rows = contiguous_copy(row.as_strided({m, k}, {0, 1}, 0)),
                     cols = contiguous_copy(col.as_strided({k, n}, {1, 0}, 0));
        const Tensor cb = run_product(matmul(rows, cols), "materialized broadcasts");
        pwtest::require_same_bits(
            run_product(matmul(row.as_strided({m, k}, {0, 1}, 0), col.as_strided({k, n}, {1, 0}, 0)),
                        "broadcast operands (stride 0)"),
            cb, "broadcast operands against materialized ones");
        pwtest::require_same_bits(
            run_both(matmul(Array(row).broadcast_to({m, k}), cols), "a broadcast_to view"), cb,
            "a broadcast_to view against a materialized one");
    }
    // A transposed batch: [B, K, M] read as [B, M, K], float32 and int8.
    for (DType d : {float32, int8}) {
        const Tensor ab = pwtest::rand({3, 31, 33}, d, seed++), bb = pwtest::rand({3, 31, 17}, d, seed++);
        const Tensor c = run_product(matmul(contiguous_copy(ab.transposed()), bb), "a contiguous batch");
        pwtest::require_same_bits(run_product(matmul(ab.transposed(), bb), "a transposed batch"), c,
                                  "transposed batch");
    }
}

TEST_CASE("matmul: K past one chunk of 8192: the chunk partials combine in the pairwise tree") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 600;
    // 8192 is one chunk; 8193 two (the second of one element); 16384 two full ones; 20000 three; 3 * 8192 + 5
    // four (an odd partial carried up the tree); 5 * 8192 + 1 six.
    const std::vector<std::int64_t> long_k =
        small_shapes() ? std::vector<std::int64_t>{8193, 2 * 8192 + 1}
                       : std::vector<std::int64_t>{8192, 8193, 16384, 20000, 3 * 8192 + 5, 5 * 8192 + 1};
    for (std::int64_t k : long_k) {
        const Tensor a = pwtest::rand({3, k}, float32, seed++), b = pwtest::rand({k, 5}, float32, seed++);
        run_product(matmul(a, b), fmt::format("[3, K] x [K, 5] float32 K {}", k));
        const Tensor v = pwtest::rand({k}, float32, seed++);
        const Tensor am = pwtest::rand({33, k}, float32, seed++);
        run_product(matmul(am, v), fmt::format("[33, K] x [K] float32 K {}", k));  // a matrix times a vector
        const Tensor bm = pwtest::rand({k, 65}, float32, seed++);
        run_product(matmul(v, bm), fmt::format("[K] x [K, 65] float32 K {}", k));  // a vector times a matrix
        if (heavy(17 * 17 * k)) continue;
        const Tensor bt = pwtest::rand({17, k}, float32, seed++);
        run_product(matmul(am.slice({{0, 17}}), bt.transposed()),
                    fmt::format("[17, K] x [17, K].T float32 K {}", k));
    }
    for (std::int64_t k : small_shapes() ? std::vector<std::int64_t>{8193}
                                         : std::vector<std::int64_t>{8193, 20000, 3 * 8192 + 5}) {
        for (DType d : {float64, float16, bfloat16, int8}) {
            const std::string dk = fmt::format("{} K {}", name(d), k);
            const Tensor a = pwtest::rand({3, k}, d, seed++), b = pwtest::rand({k, 5}, d, seed++);
            run_product(matmul(a, b), "[3, K] x [K, 5]: " + dk);
            const Tensor v = pwtest::rand({k}, d, seed++), w = pwtest::rand({k, 2}, d, seed++);
            run_product(matmul(v, w), "[K] x [K, 2]: " + dk);
        }
    }
    // Batched with a long K.
    if (small_shapes()) return;
    const Tensor a = pwtest::rand({3, 2, 20000}, float32, seed++),
                 b = pwtest::rand({3, 20000, 3}, float32, seed++);
    run_product(matmul(a, b), "[3, 2, 20000] x [3, 20000, 3]");
}

namespace {
// The product's plan and binding on this GPU (the first product kernel of `y`'s plan).
codegen::PlannedMatmul planned_product(const Array& y) {
    const codegen::FusionPlan plan = mmtest::gpu_plan_of({y});
    for (std::size_t k = 0; k < plan.kernels.size(); ++k)
        if (plan.partition.kernels[k].family == codegen::Family::MatMul)
            return plan.kernels[k].as<codegen::PlannedMatmul>();
    FAIL("no product kernel");
    return {};
}
}  // namespace

TEST_CASE(
    "matmul: split K: blocks share a long K's chunks in aligned groups, the bits of one block walking them "
    "all") {
    // Few output tiles and K past a chunk: the chunks are shared among blocks along the grid's z in aligned
    // power-of-two groups (subtrees of the pairwise tree), the block that completes a tile's counter
    // combining the group partials. Group counts that are powers of two and not (an odd group carried up the
    // tree), groups of one chunk and of several, a last group shorter than the others, an epilogue, batches.
    std::uint64_t seed = 900;
    struct Case {
        Shape a, b;
        const char* what;
    };
    std::vector<Case> cases = {
        {{300, 4 * 8192 + 3}, {4 * 8192 + 3}, "[300, K] x [K], 5 chunks"},   // 3 tiles: 5 groups of one chunk
        {{100, 20 * 8192}, {20 * 8192, 3}, "[100, K] x [K, 3], 20 chunks"},  // one tile: groups of 2 chunks
        {{2 * 8192 + 7}, {2 * 8192 + 7, 200}, "[K] x [K, 200], 3 chunks"},   // a vector times a matrix
        {{3, 2, 3 * 8192 + 1}, {3, 3 * 8192 + 1, 5}, "[3, 2, K] x [3, K, 5], batches"},
        {{64, 20 * 8192 + 5}, {20 * 8192 + 5, 2}, "[64, K] x [K, 2], 21 chunks: groups of 2, the last of 1"},
    };
    if (!small_shapes())
        cases.push_back(
            {{64, 35 * 8192}, {35 * 8192, 2}, "[64, K] x [K, 2], 35 chunks: groups of 4, the last of 3"});
    if (!small_shapes())
        cases.push_back({{2048, 3 * 8192}, {3 * 8192}, "[2048, K] x [K], 16 tiles, 3 chunks"});
    for (const Case& c : cases) {
        INFO(c.what);
        const Tensor a = pwtest::rand(c.a, float32, seed++), b = pwtest::rand(c.b, float32, seed++);
        const Array y = matmul(a, b);
        if (on_gpu()) {
            const codegen::PlannedMatmul pm = planned_product(y);
            CHECK(pm.plan.split_k);
            CHECK(pm.binding.k_groups > 1);
            CHECK(std::has_single_bit(static_cast<std::uint64_t>(pm.binding.group_chunks)));
            CHECK(pm.binding.k_groups ==
                  (pm.binding.chunks + pm.binding.group_chunks - 1) / pm.binding.group_chunks);
            CHECK(explain({y}).find(fmt::format("shared among {} blocks per tile", pm.binding.k_groups)) !=
                  std::string::npos);
        }
        run_product(y, c.what);
        // Fused with an epilogue over the product, and back to back (the counters are left zero).
        const Tensor bias = pwtest::rand({y.shape().back()}, float32, seed++);
        for (int r = 0; r < 3; ++r)
            run_product(relu(y + bias) * 0.5, fmt::format("{}: relu(y + bias) * 0.5, call {}", c.what, r));
    }
    // Tiles for every multiprocessor: no split; the same order, so the bits of the reference as well.
    if (!small_shapes() && on_gpu()) {
        const std::int64_t rows = 128 * (device_info().sm_count + 1);
        const Tensor a = pwtest::rand({rows, 8192 + 100}, float32, seed++),
                     v = pwtest::rand({8192 + 100}, float32, seed++);
        CHECK(!planned_product(matmul(a, v)).plan.split_k);
        run_product(matmul(a, v), "[128 (SMs + 1), K] x [K]: a tile per multiprocessor and more, no split");
    }
    // A traced function whose plan has a split product and a reduction of it: one CUDA graph, replayed with
    // new data; each call against the reference.
    auto f = loom::function("split_gemv_sum", [](Array m, Array v) { return sum(matmul(m, v) * 2.0); });
    const std::int64_t k = 2 * 8192 + 5;
    for (int call = 0; call < 3; ++call) {
        const Tensor m = pwtest::rand({500, k}, float32, seed++), v = pwtest::rand({k}, float32, seed++);
        Tensor out = Tensor::empty({}, float32, pwtest::dev());
        testing::poison(out);
        f(m, v, out);
        pwtest::wait_device();
        pwtest::require_reference({sum(matmul(m, v) * 2.0)}, {out},
                                  fmt::format("traced split product, call {}", call));
    }
}

TEST_CASE("matmul: NaN, Inf, -0 and overflow follow IEEE in the fixed order") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    const double inf = std::numeric_limits<double>::infinity(),
                 nan = std::numeric_limits<double>::quiet_NaN();
    const std::int64_t m = 5, k = 8, n = 3;
    for (DType d : {float32, float64, float16, bfloat16}) {
        INFO(name(d));
        // b: random finite values, b[1, 2] = +Inf, column 0 all 2.
        std::vector<double> bv(static_cast<std::size_t>(k * n));
        for (std::int64_t i = 0; i < k; ++i)
            for (std::int64_t j = 0; j < n; ++j)
                bv[static_cast<std::size_t>(i * n + j)] =
                    j == 0 ? 2.0 : static_cast<double>((i * 7 + j * 3) % 11) - 5.25;
        bv[1 * n + 2] = inf;
        std::vector<double> av(static_cast<std::size_t>(m * k));
        for (std::int64_t i = 0; i < m * k; ++i)
            av[static_cast<std::size_t>(i)] = static_cast<double>(i % 9) * 0.75 - 3.0;
        for (std::int64_t j = 0; j < k; ++j) {
            av[static_cast<std::size_t>(0 * k + j)] = -0.0;           // row 0: all -0
            av[static_cast<std::size_t>(3 * k + j)] = max_finite(d);  // row 3: overflows
            av[static_cast<std::size_t>(4 * k + j)] = -0.0;           // row 4: -0, one -Inf
        }
        av[1 * k + 3] = nan;  // row 1: a NaN
        av[2 * k + 1] = 0.0;  // row 2: 0 * Inf in column 2
        av[4 * k + 5] = -inf;
        const Tensor a = from_values(av, {m, k}, d), b = from_values(bv, {k, n}, d);
        const Tensor c = run_product(matmul(a, b), fmt::format("special values {}", name(d))).to_host();
        auto at = [&](std::int64_t i, std::int64_t j) { return c.get_double(i * n + j); };
        // -0 times finite values: every product is -0 or +0, and the sum from +0 is +0.
        CHECK(at(0, 0) == 0.0);
        CHECK(!std::signbit(at(0, 0)));
        CHECK(at(0, 1) == 0.0);
        CHECK(!std::signbit(at(0, 1)));
        CHECK(std::isnan(at(0, 2)));  // -0 * Inf
        for (std::int64_t j = 0; j < n; ++j) CHECK(std::isnan(at(1, j)));
        CHECK(std::isnan(at(2, 2)));  // 0 * Inf
        CHECK(std::isfinite(at(2, 0)));
        CHECK(at(3, 0) == inf);       // overflow of the largest finite value times 2, 8 times
        CHECK(at(4, 0) == -inf);      // -Inf * 2 among -0 products
        CHECK(std::isnan(at(4, 2)));  // -Inf * b[5, 2] and -0 * Inf
    }
    // A row of -0 over two chunks (K = 8193): each chunk's partial is +0, and so is their sum.
    for (DType d : {float32, float16}) {
        const Tensor z = from_values(std::vector<double>(2 * 8193, -0.0), {2, 8193}, d);
        const Tensor b = pwtest::rand({8193, 4}, d, 650);
        const Tensor c = run_product(matmul(z, b), "-0 rows over two chunks").to_host();
        for (std::int64_t i = 0; i < c.numel(); ++i)
            CHECK((c.get_double(i) == 0.0 && !std::signbit(c.get_double(i))));
        // -0 times -0: +0 products.
        const Tensor zb = from_values(std::vector<double>(8193 * 4, -0.0), {8193, 4}, d);
        const Tensor c2 = run_product(matmul(z, zb), "-0 times -0").to_host();
        for (std::int64_t i = 0; i < c2.numel(); ++i)
            CHECK((c2.get_double(i) == 0.0 && !std::signbit(c2.get_double(i))));
    }
    // Specials everywhere (every other element), against the reference in every float dtype.
    std::uint64_t seed = 660;
    for (DType d : {float32, float64, float16, bfloat16}) {
        const Tensor a = pwtest::with_specials(33 * 40, d, seed++).reshape({33, 40});
        const Tensor b = pwtest::with_specials(40 * 17, d, seed++, 3).reshape({40, 17});
        run_product(matmul(a, b), fmt::format("specials at every other element {}", name(d)));
    }
}

TEST_CASE("matmul: int8 extremes: -128 x -128 sums that wrap modulo 2^32, exactly") {
    // Each product -128 * -128 = 2^14; K of them sum to 2^14 K, which passes 2^31 for K >= 131072 and wraps
    // (LOOM_TEST_SMALL: K = 4097, the same extremes without the wrap).
    for (std::int64_t k :
         small_shapes() ? std::vector<std::int64_t>{4097} : std::vector<std::int64_t>{131075, 262147}) {
        std::vector<double> av(static_cast<std::size_t>(2 * k), -128.0),
            bv(static_cast<std::size_t>(k * 3), -128.0);
        for (std::int64_t i = 0; i < k; ++i)
            bv[static_cast<std::size_t>(i * 3 + 1)] = 127.0;  // column 1: -128 * 127
        for (std::int64_t i = 0; i < k; ++i)
            bv[static_cast<std::size_t>(i * 3 + 2)] = i % 2 == 0 ? 127.0 : -128.0;
        const Tensor a = from_values(av, {2, k}, int8), b = from_values(bv, {k, 3}, int8);
        const Tensor c = run_product(matmul(a, b), fmt::format("int8 extremes K {}", k)).to_host();
        REQUIRE(c.dtype() == int32);
        auto wrap = [](std::int64_t v) {
            return static_cast<std::int64_t>(static_cast<std::int32_t>(static_cast<std::uint32_t>(v)));
        };
        const std::int64_t evens = (k + 1) / 2, odds = k / 2;
        for (std::int64_t i = 0; i < 2; ++i) {
            CHECK(c.get_int(i * 3 + 0) == wrap(16384 * k));
            CHECK(c.get_int(i * 3 + 1) == wrap(-16256 * k));
            CHECK(c.get_int(i * 3 + 2) == wrap(-16256 * evens + 16384 * odds));
        }
        // The same sums through a transposed operand.
        const Tensor bt = from_values(bv, {k, 3}, int8);
        pwtest::require_same_bits(
            run_product(matmul(a, contiguous_copy(bt.transposed()).transposed()), "int8 transposed"),
            c.to(pwtest::dev()), "int8 extremes through a transposed operand");
    }
    // Random int8 over the whole range, and the extremes among them.
    const std::int64_t kx = small_shapes() ? 1025 : 4097;
    const Tensor x = pwtest::with_specials(33 * kx, int8, 700).reshape({33, kx});
    const Tensor y = pwtest::rand({kx, 65}, int8, 701);
    run_product(matmul(x, y), "int8 with extremes at every other element");
}

TEST_CASE("matmul: a valid tile hint gives the bits of the planner's choice, and the plan names it") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 800;
    for (DType d : {float32, float64, float16, int8}) {
        INFO(name(d));
        const std::int64_t m = small_shapes() ? 129 : 257, k = small_shapes() ? 65 : 129,
                           n = small_shapes() ? 97 : 193;
        const Tensor a = pwtest::rand({m, k}, d, seed++), b = pwtest::rand({k, n}, d, seed++);
        const Tensor c = run_product(matmul(a, b), fmt::format("no hint {}", name(d)));
        // Hints every dtype's kernel can take: powers of two, K steps of at least 16 bytes.
        const std::vector<TileHint> hints =
            d == float64 ? std::vector<TileHint>{tile(64, 64, 16), tile(32, 32, 8), tile(64, 32, 16)}
            : d == int8  ? std::vector<TileHint>{tile(64, 64, 32), tile(128, 128, 32), tile(32, 32, 64)}
            // tensor cores: k in 32s
            : d == float16 ? std::vector<TileHint>{tile(64, 64, 16), tile(128, 128, 32), tile(32, 32, 16)}
                           : std::vector<TileHint>{tile(64, 64, 16), tile(128, 128, 16), tile(32, 32, 8),
                                                   tile(128, 64, 32), tile(64, 128, 8)};
        for (const TileHint& h : hints) {
            const std::string hinted = fmt::format("{}x{}x{}", h.rows, h.cols, h.depth);
            const Array y = matmul(a, b, h);
            if (on_gpu()) {
                CHECK(tile_of(explain({y})) == hinted);
                const std::string src = cuda_source({y}, "mm_hinted");
                CHECK(src.find("tile " + hinted) != std::string::npos);
            }
            pwtest::require_same_bits(run_both(y, "hint " + hinted), c,
                                      "hint " + hinted + " against no hint");
        }
        // 0 in a field: the planner chooses that one.
        const Array partial = matmul(a, b, tile(64, 0, 0));
        if (on_gpu()) CHECK(tile_of(explain({partial})).starts_with("64x"));
        pwtest::require_same_bits(run_both(partial, "hint 64x0x0"), c, "hint 64x0x0 against no hint");
    }
    // A hint on a batched product and on one with K past a chunk.
    const Tensor ab = pwtest::rand({3, 70, 50}, float32, seed++),
                 bb = pwtest::rand({3, 50, 90}, float32, seed++);
    pwtest::require_same_bits(run_both(matmul(ab, bb, tile(32, 64, 16)), "batched with a hint"),
                              run_both(matmul(ab, bb), "batched"), "batched: hint against none");
    const std::int64_t kl = small_shapes() ? 8193 : 20000;
    const Tensor al = pwtest::rand({5, kl}, float32, seed++), bl = pwtest::rand({kl, 7}, float32, seed++);
    pwtest::require_same_bits(run_both(matmul(al, bl, tile(32, 32, 32)), "long K with a hint"),
                              run_both(matmul(al, bl), "long K"), "long K: hint against none");
    // A negative extent is refused where the product is written.
    CHECK_THROWS_AS((void)matmul(ab, bb, tile(-1, 0, 0)), Error);
}

TEST_CASE("matmul: an impossible tile hint is a loom::Error naming matmul and the limit it breaks") {
    if (!on_gpu()) return;  // hints are the GPU kernel's
    auto message = [](const Array& y) {
        try {
            (void)y.eval();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    const Tensor a = pwtest::rand({300, 200}, float32, 900), b = pwtest::rand({200, 300}, float32, 901);
    const Tensor a64 = pwtest::rand({300, 200}, float64, 902), b64 = pwtest::rand({200, 300}, float64, 903);
    // 128 x 128 outputs stepping 512 along K: 64 accumulators per thread, but about 1 MB of operand tiles.
    const std::string smem = message(matmul(a, b, tile(128, 128, 512)));
    INFO(smem);
    CHECK(smem.find("matmul") != std::string::npos);
    CHECK(smem.find("shared memory") != std::string::npos);
    // A huge tile breaks both limits; either may be named.
    const std::string huge = message(matmul(a, b, tile(1024, 1024, 256)));
    INFO(huge);
    CHECK(huge.find("matmul") != std::string::npos);
    CHECK((huge.find("shared memory") != std::string::npos || huge.find("registers") != std::string::npos));
    const std::string regs = message(matmul(a64, b64, tile(256, 256, 8)));
    INFO(regs);
    CHECK(regs.find("matmul") != std::string::npos);
    CHECK(regs.find("registers") != std::string::npos);
    const std::string div = message(matmul(a, b, tile(100, 128, 16)));
    INFO(div);
    CHECK(div.find("matmul") != std::string::npos);
    CHECK((div.find("divisib") != std::string::npos || div.find("multiple") != std::string::npos));
    // The refused hints left nothing behind: a product without a hint runs.
    run_product(matmul(a.slice({{0, 64}}), b.slice({{kNone, kNone}, {0, 64}})), "after refused hints");
}
