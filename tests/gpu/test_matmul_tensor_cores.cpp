// Matrix products on tensor cores through mma.sync (docs/semantics.md, section 12, "Tensor cores"), forced
// with Options::product_path = ProductPath::MmaSync (int8 runs there by default; on Hopper, TensorCores takes
// half-precision products to wgmma where it can: test_matmul_wgmma.cpp). float16 and bfloat16 results
// lie within the stated componentwise bound of the exact product (testing::compare_product_bound), and their
// bits are fixed: the same into poisoned and random-filled outputs, fused and unfused, through transposed
// views and contiguous copies (the two loaders), and for every tile. Integer-valued half operands, whose sums
// are exact in any order, and int8 on either path give the reference's bits. Shapes: sizes around the MMA and
// block tiles, K = 0 and 1, vectors, batches, broadcast batches, K past a chunk; epilogues, prologues, hints
// and their errors, and traced functions with the option.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "test_matmul_util.hpp"

using namespace loom;

namespace {

using mmtest::on_gpu;
using mmtest::run_both;
using mmtest::small_shapes;

const Options kTensorCores{.product_path = ProductPath::MmaSync};

using mmtest::integer_valued;

// Whether `y`'s product kernel runs on tensor cores through mma.sync, from the explain log.
bool on_tensor_cores(const Array& y) {
    return mmtest::product_path_of(y) == "mma.sync";
}

// mmtest::run_within_bound on mma.sync.
Tensor run_within_bound(const Array& y, const Tensor& a, const Tensor& b, const std::string& what) {
    if (on_gpu() && y.numel() > 0) CHECK_MESSAGE(on_tensor_cores(y), what);
    return mmtest::run_within_bound(y, a, b, what);
}

}  // namespace

TEST_CASE(
    "tensor cores: float16 and bfloat16 around the MMA and block tiles, within the bound, the bits fixed") {
    const OptionsScope tc(kTensorCores);
    const std::vector<std::array<std::int64_t, 3>> shapes = {
        {16, 8, 16},  {17, 9, 15},   {33, 31, 17}, {64, 64, 64},    {129, 127, 33},
        {1, 129, 31}, {127, 1, 129}, {31, 33, 1},  {128, 136, 520}, {200, 264, 300}};
    std::uint64_t seed = 3000;
    for (DType d : {float16, bfloat16})
        for (const auto& [m, n, k] : shapes) {
            const Tensor a = pwtest::rand({m, k}, d, seed++), b = pwtest::rand({k, n}, d, seed++);
            run_within_bound(matmul(a, b), a, b,
                             fmt::format("[{}, {}] x [{}, {}] {} on tensor cores", m, k, k, n, name(d)));
        }
}

TEST_CASE("tensor cores: integer-valued float16 and bfloat16 operands give the reference's bits") {
    const OptionsScope tc(kTensorCores);
    std::uint64_t seed = 3100;
    for (DType d : {float16, bfloat16})
        for (const auto& [m, n, k] : std::vector<std::array<std::int64_t, 3>>{
                 {33, 31, 17}, {129, 65, 200}, {64, 128, 520}, {1, 40, 33}}) {
            const Tensor a = integer_valued({m, k}, d, seed++), b = integer_valued({k, n}, d, seed++);
            const Array y = matmul(a, b);
            if (on_gpu()) CHECK(on_tensor_cores(y));
            run_both(y, fmt::format("integer-valued [{}, {}] x [{}, {}] {}", m, k, k, n, name(d)));
        }
}

TEST_CASE("tensor cores: int8 equals CUDA cores and the reference bit for bit, on either path") {
    std::uint64_t seed = 3200;
    for (const auto& [m, n, k] : std::vector<std::array<std::int64_t, 3>>{{33, 31, 17},
                                                                          {64, 64, 64},
                                                                          {129, 127, 33},
                                                                          {1, 129, 31},
                                                                          {127, 1, 129},
                                                                          {31, 33, 1},
                                                                          {128, 136, 520}}) {
        const Tensor a = pwtest::rand({m, k}, int8, seed++), b = pwtest::rand({k, n}, int8, seed++);
        const std::string what = fmt::format("[{}, {}] x [{}, {}] int8", m, k, k, n);
        const Tensor by_default = run_both(matmul(a, b), what + " (tensor cores by default)");
        if (on_gpu()) CHECK(on_tensor_cores(matmul(a, b)));
        const OptionsScope cores({.product_path = ProductPath::CudaCores});
        if (on_gpu()) CHECK(!on_tensor_cores(matmul(a, b)));
        pwtest::require_same_bits(run_both(matmul(a, b), what + " on CUDA cores"), by_default,
                                  what + ": CUDA cores against tensor cores");
    }
    // Sums that wrap modulo 2^32 on CUDA cores too (the default path has the extremes test of
    // test_matmul.cpp).
    const std::int64_t k = small_shapes() ? 4097 : 131075;
    const std::vector<double> extremes(static_cast<std::size_t>(5 * k), -128.0);  // each product 2^14
    const Tensor a = from_host(std::span<const double>(extremes.data(), static_cast<std::size_t>(3 * k)),
                               {3, k}, int8, pwtest::dev());
    const Tensor b = from_host(std::span<const double>(extremes), {k, 5}, int8, pwtest::dev());
    const Tensor tcores = run_both(matmul(a, b), "int8 extremes on tensor cores");
    const OptionsScope cores({.product_path = ProductPath::CudaCores});
    pwtest::require_same_bits(run_both(matmul(a, b), "int8 extremes on CUDA cores"), tcores,
                              "int8 extremes: CUDA cores against tensor cores");
}

TEST_CASE("tensor cores: batches, broadcast batches, vectors, K = 0, and views against contiguous copies") {
    const OptionsScope tc(kTensorCores);
    std::uint64_t seed = 3300;
    for (DType d : {float16, bfloat16}) {
        INFO(name(d));
        const Tensor a = pwtest::rand({3, 33, 40}, d, seed++), b = pwtest::rand({3, 40, 17}, d, seed++);
        run_within_bound(matmul(a, b), a, b, "batched");
        const Tensor ab = pwtest::rand({3, 1, 33, 40}, d, seed++), bb = pwtest::rand({4, 40, 17}, d, seed++);
        run_within_bound(matmul(ab, bb), ab, bb, "broadcast batch");
        const Tensor many_a = pwtest::rand({500, 8, 24}, d, seed++),
                     many_b = pwtest::rand({500, 24, 8}, d, seed++);
        run_within_bound(matmul(many_a, many_b), many_a, many_b, "500 small products");
        const Tensor v = pwtest::rand({70}, d, seed++), m = pwtest::rand({70, 90}, d, seed++),
                     mt = pwtest::rand({90, 70}, d, seed++);
        run_within_bound(matmul(v, m), v, m, "[K] x [K, N]");
        run_within_bound(matmul(mt, v), mt, v, "[M, K] x [K]");
        // K = 0: +0 everywhere.
        const Tensor e0 = pwtest::rand({5, 0}, d, seed++), e1 = pwtest::rand({0, 7}, d, seed++);
        const Tensor zero = run_within_bound(matmul(e0, e1), e0, e1, "K = 0").to_host();
        for (std::int64_t i = 0; i < zero.numel(); ++i) CHECK(zero.get_double(i) == 0.0);
        // A transposed and a sliced operand (element loads) give the bits of contiguous copies (16-byte
        // pieces).
        const Tensor w = pwtest::rand({64, 130}, d, seed++), x = pwtest::rand({96, 260}, d, seed++);
        const Tensor wt = w.transposed(),
                     xs = x.slice({{pwtest::kNone, pwtest::kNone}, {0, 260, 2}});  // [130, 64] and [96, 130]
        const Tensor viewed = run_within_bound(matmul(xs, wt), xs, wt, "sliced x transposed views");
        Tensor xs_copy = Tensor::empty(xs.shape(), d, pwtest::dev()),
               wt_copy = Tensor::empty(wt.shape(), d, pwtest::dev());
        assign(xs_copy, Array(xs));
        assign(wt_copy, Array(wt));
        pwtest::wait_device();
        pwtest::require_same_bits(
            run_within_bound(matmul(xs_copy, wt_copy), xs_copy, wt_copy, "contiguous copies"), viewed,
            "views against contiguous copies");
    }
}

TEST_CASE("tensor cores: K past one chunk runs in one pass, within the bound") {
    const OptionsScope tc(kTensorCores);
    const std::int64_t k = small_shapes() ? 8193 : 20000;
    const Tensor a = pwtest::rand({5, k}, float16, 3400, testing::Random::uniform(-1, 1)),
                 b = pwtest::rand({k, 7}, float16, 3401, testing::Random::uniform(-1, 1));
    run_within_bound(matmul(a, b), a, b, "float16 K past a chunk");
    const Tensor c = pwtest::rand({9, k}, bfloat16, 3402), d = pwtest::rand({k, 3}, bfloat16, 3403);
    run_within_bound(matmul(c, d), c, d, "bfloat16 K past a chunk");
}

TEST_CASE(
    "tensor cores: epilogues and prologues fused equal unfused bit for bit, the product within the bound") {
    const OptionsScope tc(kTensorCores);
    std::uint64_t seed = 3500;
    for (DType d : {float16, bfloat16}) {
        INFO(name(d));
        const Tensor a = pwtest::rand({100, 72}, d, seed++), b = pwtest::rand({72, 136}, d, seed++);
        const Tensor bias = pwtest::rand({136}, d, seed++), col = pwtest::rand({100, 1}, d, seed++),
                     res = pwtest::rand({100, 136}, d, seed++);
        const Tensor product = run_within_bound(matmul(a, b), a, b, "the product alone");
        // The epilogue reads the product rounded to its dtype, so each output equals the unfused evaluation,
        // whose product kernel is the same plan.
        const Array p = matmul(a, b);
        for (const auto& [label, y] :
             std::vector<std::pair<std::string, Array>>{{"gelu(a @ b + bias)", gelu(p + bias)},
                                                        {"relu(a @ b * col) + residual", relu(p * col) + res},
                                                        {"cast to float32", p.astype(float32)}}) {
            INFO(label);
            if (on_gpu()) {
                CHECK(mmtest::kernels_of({y}).total == 1);
                CHECK(on_tensor_cores(y));
            }
            const Tensor fused = y.eval();
            Options unfused = current_options();
            unfused.fusion = false;
            const OptionsScope scope(unfused);
            pwtest::require_same_bits(y.eval(), fused, label + ": fused against unfused");
        }
        // Two outputs of one product: the pre-activation is the product's bits.
        std::vector<Tensor> two = {Tensor::empty({100, 136}, d, pwtest::dev()),
                                   Tensor::empty({100, 136}, d, pwtest::dev())};
        assign(two, {p, relu(p)});
        pwtest::wait_device();
        pwtest::require_same_bits(two[0], product, "pre-activation output against the product alone");
        // A prologue: (a + s) @ b, the sum computed as the tiles load and rounded to the dtype.
        const Tensor s = pwtest::rand({100, 72}, d, seed++);
        Tensor sum = Tensor::empty({100, 72}, d, pwtest::dev());
        assign(sum, Array(a) + s);
        pwtest::wait_device();
        pwtest::require_same_bits(run_within_bound(matmul(Array(a) + s, b), sum, b, "prologue (a + s) @ b"),
                                  run_within_bound(matmul(sum, b), sum, b, "materialized a + s"),
                                  "prologue against the materialized operand");
    }
}

TEST_CASE("tensor cores: every tile gives the same bits, a tile that is not whole MMA tiles is an error") {
    const OptionsScope tc(kTensorCores);
    const Tensor a = pwtest::rand({257, 129}, float16, 3600), b = pwtest::rand({129, 193}, float16, 3601);
    const Tensor c = run_within_bound(matmul(a, b), a, b, "no hint");
    for (const TileHint& h :
         {tile(64, 64, 16), tile(128, 64, 64), tile(32, 32, 32), tile(16, 16, 16), tile(64, 128, 32)}) {
        const std::string hinted = fmt::format("{}x{}x{}", h.rows, h.cols, h.depth);
        const Array y = matmul(a, b, h);
        if (on_gpu()) CHECK(mmtest::tile_of(explain({y})) == hinted);
        pwtest::require_same_bits(run_within_bound(y, a, b, "hint " + hinted), c,
                                  "hint " + hinted + " against no hint");
    }
    if (!on_gpu()) return;
    const Tensor i = pwtest::rand({64, 64}, int8, 3602), j = pwtest::rand({64, 64}, int8, 3603);
    try {
        (void)matmul(i, j, tile(64, 64, 16)).eval();
        FAIL("tile(64, 64, 16) of int8 on tensor cores was accepted");
    } catch (const Error& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find("matmul") != std::string::npos);
        CHECK(what.find("tile_k of 32 (the k of one mma.sync for int8)") != std::string::npos);
        CHECK(what.find("test_matmul_tensor_cores.cpp") != std::string::npos);
    }
}

TEST_CASE("tensor cores: a traced function with the option runs its product there, the scope's bits") {
    const Tensor a = pwtest::rand({96, 80}, bfloat16, 3700), b = pwtest::rand({80, 112}, bfloat16, 3701),
                 bias = pwtest::rand({112}, bfloat16, 3702);
    auto f = loom::function(
        "mma_fn", [](Array x, Array w, Array c) { return silu(matmul(x, w) + c); }, kTensorCores);
    const Tensor traced = f(a, b, bias);
    pwtest::wait_device();
    const OptionsScope tc(kTensorCores);
    const Array y = silu(matmul(a, b) + bias);
    if (on_gpu()) CHECK(on_tensor_cores(y));
    pwtest::require_same_bits(traced, y.eval(), "traced function against the scope");
}
