// float32 products on tensor cores, opted into with Options::product_precision (docs/semantics.md, section
// 12, "TF32"): single-pass TF32 and the 3xTF32 split, on mma.sync m16n8k8 (and TF32 on Hopper's wgmma where
// the default path takes it; tests/gpu/test_matmul_wgmma_tf32.cpp tests that kernel's layouts). Each result
// lies within its stated componentwise bound of the exact product; its bits are fixed (into poisoned and
// random-filled outputs, fused and unfused, for every tile and loader); 3xTF32 is far more accurate than
// TF32; Inf and NaN reach their rows and columns as IEEE says, and finite values near float32's largest do
// not overflow in the split. Neither is the default. The cases are named "tf32: ...".
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test_matmul_util.hpp"

using namespace loom;

namespace {

using mmtest::fused_equals_unfused;
using mmtest::on_gpu;

constexpr std::array<ProductPrecision, 2> kPrecisions = {ProductPrecision::TF32, ProductPrecision::TF32x3};

Options with_precision(ProductPrecision p, ProductPath path = ProductPath::Auto) {
    return Options{.product_path = path, .product_precision = p};
}

// mmtest::run_within_bound with the precision's bound; on a GPU with mma.sync the product must run in TF32
// (on mma.sync, or on Hopper's wgmma unless mma.sync is asked for).
Tensor run_within_bound(const Array& y, const Tensor& a, const Tensor& b, const std::string& what) {
    const ProductPrecision p = current_options().product_precision;
    if (on_gpu() && device_info().cc_major >= 8 && y.numel() > 0) {
        const std::string path = mmtest::product_path_of(y);
        const bool wgmma_allowed = p == ProductPrecision::TF32 && device_info().cc_major == 9 &&
                                   current_options().product_path != ProductPath::MmaSync;
        CHECK_MESSAGE(
            (path == (p == ProductPrecision::TF32 ? "TF32" : "3xTF32") || (wgmma_allowed && path == "wgmma")),
            what);
    }
    return mmtest::run_within_bound(y, a, b, fmt::format("{} ({})", what, product_precision_name(p)), p);
}

// The largest |got - C| / (|A||B|) over the elements (C the exact product, in float64).
double worst_relative_error(const Tensor& got, const Tensor& a, const Tensor& b) {
    const reference::ProductBound exact = reference::product_bound(a, b);  // value: C; bound: gamma |A||B|
    const double gamma = reference::product_bound_factor(a.shape().back()) +
                         reference::product_gamma(a.shape().back() + 1, 0x1p-53);
    const Tensor g = reference::cast(got, DType::Float64);
    double worst = 0;
    for (std::int64_t i = 0; i < g.numel(); ++i) {
        const double magnitude = exact.bound.get_double(i) / gamma;
        if (magnitude > 0)
            worst = std::max(worst, std::fabs(g.get_double(i) - exact.value.get_double(i)) / magnitude);
    }
    return worst;
}

}  // namespace

TEST_CASE(
    "tf32: TF32 and 3xTF32 around the tiles, K = 8, odd sizes, K past a chunk, within their bounds, the bits "
    "fixed") {
    const std::vector<std::array<std::int64_t, 3>> shapes = {{64, 64, 64},
                                                             {1, 64, 8},
                                                             {33, 40, 8},
                                                             {7, 9, 5},
                                                             {129, 136, 72},
                                                             {200, 264, 304},
                                                             {3000, 8, 64},
                                                             {8, 3000, 64},
                                                             {65, 256, 520},
                                                             {257, 520, 1000},
                                                             {16, 16, mmtest::small_shapes() ? 8200 : 20000}};
    std::uint64_t seed = 7000;
    for (ProductPrecision p : kPrecisions)
        for (ProductPath path : {ProductPath::Auto, ProductPath::MmaSync}) {
            const OptionsScope scope(with_precision(p, path));
            for (const auto& [m, n, k] : shapes) {
                const Tensor a = pwtest::rand({m, k}, float32, seed++),
                             b = pwtest::rand({k, n}, float32, seed++);
                run_within_bound(matmul(a, b), a, b, fmt::format("[{}, {}] x [{}, {}]", m, k, k, n));
            }
        }
}

TEST_CASE("tf32: 3xTF32 is far more accurate than TF32, neither is the default") {
    const Tensor a = pwtest::rand({256, 64}, float32, 7100), b = pwtest::rand({64, 256}, float32, 7101);
    double err[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
        const OptionsScope scope(with_precision(kPrecisions[static_cast<std::size_t>(i)]));
        err[i] = worst_relative_error(run_within_bound(matmul(a, b), a, b, "256 x 64 x 256"), a, b);
    }
    INFO("worst error / (|A||B|): TF32 " << err[0] << ", 3xTF32 " << err[1]);
    CHECK(err[0] > 0x1p-16);      // TF32 truncates the operands: errors near 2^-10 of |A||B| appear
    CHECK(err[1] < err[0] / 64);  // the split recovers (nearly) float32's accuracy
    CHECK(err[1] < 0x1p-18);
    // The default: CUDA cores, the reference's bits.
    if (on_gpu()) CHECK(mmtest::product_path_of(matmul(a, b)) == "CUDA cores");
    pwtest::run_checked({matmul(a, b)});
    // A traced function keeps its own precision; the same bits as the expression under that scope.
    auto f = loom::function(
        "tf32_fn", [](Array x, Array y) { return matmul(x, y); }, with_precision(ProductPrecision::TF32x3));
    const Tensor traced = f(a, b);
    pwtest::wait_device();
    const OptionsScope scope(with_precision(ProductPrecision::TF32x3));
    pwtest::require_same_bits(traced, matmul(a, b).eval(), "a traced 3xTF32 function against the scope's");
}

TEST_CASE("tf32: Inf and NaN reach their rows and columns, values near float32's largest stay finite") {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const float big = std::numeric_limits<float>::max();
    std::vector<float> av(16 * 8), bv(8 * 8);
    for (std::size_t i = 0; i < av.size(); ++i) av[i] = 0.25f + 0.001f * static_cast<float>(i % 13);
    for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = 0.5f + 0.002f * static_cast<float>(i % 7);
    av[0 * 8 + 3] = inf;   // row 0: +Inf times positive values
    av[1 * 8 + 2] = nan;   // row 1: NaN
    av[2 * 8 + 5] = big;   // row 2: float32's largest (TF32 would round it to Inf), times about 0.5: finite
    av[3 * 8 + 1] = -big;  // row 3: its negative
    bv[4 * 8 + 6] = -inf;  // column 6: -Inf times positive values (and +Inf in row 0: NaN there)
    const Tensor a = from_host(av, {16, 8}, float32, pwtest::dev()),
                 b = from_host(bv, {8, 8}, float32, pwtest::dev());
    for (ProductPrecision p : kPrecisions) {
        const OptionsScope scope(with_precision(p));
        const Tensor c = run_within_bound(matmul(a, b), a, b, "specials").to_host();
        CHECK(std::isinf(c.get_double(0 * 8 + 0)));
        CHECK(c.get_double(0 * 8 + 0) > 0);
        CHECK(std::isnan(c.get_double(0 * 8 + 6)));  // +Inf - Inf
        CHECK(std::isnan(c.get_double(1 * 8 + 0)));
        CHECK(std::isfinite(c.get_double(2 * 8 + 0)));
        CHECK(c.get_double(2 * 8 + 0) > 1e38);
        CHECK(std::isfinite(c.get_double(3 * 8 + 0)));
        CHECK(std::isinf(c.get_double(5 * 8 + 6)));
        CHECK(c.get_double(5 * 8 + 6) < 0);
        CHECK(std::isfinite(c.get_double(5 * 8 + 0)));
    }
}

TEST_CASE(
    "tf32: batches, broadcast batches, transposed views, prologues and every epilogue, fused equals "
    "unfused") {
    // The mma.sync kernel, whose views and tiles share one MMA step order (wgmma's kernels differ by layout).
    std::uint64_t seed = 7200;
    for (ProductPrecision p : kPrecisions) {
        const OptionsScope scope(with_precision(p, ProductPath::MmaSync));
        INFO(product_precision_name(p));
        const Tensor a = pwtest::rand({3, 100, 72}, float32, seed++),
                     b = pwtest::rand({3, 72, 40}, float32, seed++);
        run_within_bound(matmul(a, b), a, b, "batched");
        const Tensor w = pwtest::rand({72, 40}, float32, seed++);
        run_within_bound(matmul(a, w), a, w, "B broadcast over the batch");
        const Tensor ab = pwtest::rand({3, 1, 64, 40}, float32, seed++),
                     bb = pwtest::rand({4, 40, 24}, float32, seed++);
        run_within_bound(matmul(ab, bb), ab, bb, "mixed broadcast batch axes");
        // Transposed views (element loads) against contiguous copies (16-byte pieces): the same MMA steps in
        // the same order, so the same bits.
        const Tensor at = pwtest::rand({136, 200}, float32, seed++),
                     bt = pwtest::rand({72, 136}, float32, seed++);
        const Tensor viewed = run_within_bound(matmul(at.transposed(), bt.transposed()), at.transposed(),
                                               bt.transposed(), "transposed views");
        const Tensor ca = mmtest::copy_of(at.transposed()), cb = mmtest::copy_of(bt.transposed());
        pwtest::require_same_bits(viewed, run_within_bound(matmul(ca, cb), ca, cb, "contiguous copies"),
                                  "views against contiguous copies");
        // Every tile hint gives the same bits.
        for (const TileHint& h : {tile(64, 64, 16), tile(32, 128, 32), tile(128, 64, 8)})
            pwtest::require_same_bits(run_within_bound(matmul(ca, cb, h), ca, cb,
                                                       fmt::format("hint {}x{}x{}", h.rows, h.cols, h.depth)),
                                      viewed, "a hinted tile against the default");
        // A prologue (a * 2 computed as the tiles load) is the materialized operand's product.
        const Tensor twice = (Array(ca) * 2.0f).eval();
        pwtest::require_same_bits(matmul(Array(ca) * 2.0f, cb).eval(),
                                  run_within_bound(matmul(twice, cb), twice, cb, "2 a materialized"),
                                  "the prologue against the materialized operand");
        // Epilogues: fused equals unfused bit for bit, in one kernel.
        const Tensor x = pwtest::rand({300, 72}, float32, seed++),
                     y = pwtest::rand({72, 136}, float32, seed++);
        const Tensor bias = pwtest::rand({136}, float32, seed++),
                     res = pwtest::rand({300, 136}, float32, seed++);
        const Array prod = matmul(x, y);
        for (const auto& [label, e] :
             std::vector<std::pair<std::string, Array>>{{"gelu(x @ y + bias)", gelu(prod + bias)},
                                                        {"relu(x @ y) + residual", relu(prod) + res},
                                                        {"cast to bfloat16", prod.astype(bfloat16)}}) {
            if (on_gpu()) CHECK(mmtest::kernels_of({e}).total == 1);
            fused_equals_unfused(e, label);
        }
        std::vector<Tensor> two = {Tensor::empty({300, 136}, float32, pwtest::dev()),
                                   Tensor::empty({300, 136}, float32, pwtest::dev())};
        for (Tensor& t : two) testing::poison(t);
        assign(two, {prod, silu(prod)});
        pwtest::wait_device();
        pwtest::require_same_bits(two[0], run_within_bound(prod, x, y, "the product alone"),
                                  "pre-activation output against the product alone");
    }
}
