// float32 products in TF32 on Hopper's warpgroup MMAs (matmul_plan.hpp, "Hopper"; docs/semantics.md, section
// 12, "TF32"): under Options::product_precision = TF32 a product whose operands the tensor memory accelerator
// can copy runs on wgmma. TF32's MMAs read K-major shared tiles only, so each operand layout takes its own
// kernel: both K-major (A row-major, B a transposed view) from shared memory; an N-major B (both row-major)
// read into registers with the operands swapped; an M-major A (a transposed view) read into registers when B
// is a transposed view too; an M-major A with a row-major B falls back to mma.sync. For each: integer-valued
// operands (exact in TF32, so the reference's bits) catch any misplaced element, random ones lie within the
// TF32 bound, and the bits are fixed, fused and unfused. The cases are named "wgmma: TF32 ..." (the sanitizer
// step runs them).
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

using mmtest::copy_of;
using mmtest::fused_equals_unfused;
using mmtest::integer_valued;
using mmtest::on_gpu;
using mmtest::run_both;

const Options kTF32{.product_precision = ProductPrecision::TF32};

bool hopper() {
    return on_gpu() && device_info().cc_major == 9;
}

// The four operand layouts of a product of [m, k] by [k, n]: the operands as the product reads them.
struct Layout {
    const char* name;
    bool a_transposed, b_transposed;
    const char* path;  // on Hopper
};
constexpr std::array<Layout, 4> kLayouts = {
    Layout{"NN (B N-major: B's tile in registers, swapped)", false, false, "wgmma"},
    Layout{"NT (both K-major: shared tiles)", false, true, "wgmma"},
    Layout{"TN (A M-major, B N-major: mma.sync)", true, false, "TF32"},
    Layout{"TT (A M-major: A's tile in registers)", true, true, "wgmma"}};

// Fresh [rows, cols] operands drawn by `draw` in the layout asked for.
template <class Draw>
Tensor draw_operand(std::int64_t rows, std::int64_t cols, bool transposed, Draw draw) {
    return transposed ? draw(Shape{cols, rows}).transposed() : draw(Shape{rows, cols});
}

void check_path(const Array& y, const Layout& l, const std::string& what) {
    if (hopper() && y.numel() > 0) CHECK_MESSAGE(mmtest::product_path_of(y) == l.path, what);
}

}  // namespace

TEST_CASE("wgmma: TF32 integer-valued operands in every layout give the reference's bits") {
    const OptionsScope scope(kTF32);
    std::uint64_t seed = 9100;
    // Around the tiles (128 x 128 ping-pong, 64 wide for short M or N), K = 8 and K not a multiple of a
    // stage's 32, more tiles than multiprocessors with a K longer than the ring, and a batch.
    const std::vector<std::array<std::int64_t, 3>> shapes = {
        {64, 64, 32}, {33, 40, 8}, {129, 136, 72},     {200, 264, 300},
        {1, 64, 40},  {64, 1, 40}, {3000, 2000, 1000}, {130, 70, 4100}};
    for (const Layout& l : kLayouts)
        for (const auto& [m, n, k] : shapes) {
            const std::string what = fmt::format("{}: [{}, {}] x [{}, {}]", l.name, m, k, k, n);
            INFO(what);
            const Tensor a = draw_operand(m, k, l.a_transposed,
                                          [&](const Shape& s) { return integer_valued(s, float32, seed++); });
            const Tensor b = draw_operand(k, n, l.b_transposed,
                                          [&](const Shape& s) { return integer_valued(s, float32, seed++); });
            const Array y = matmul(a, b);
            // The copies need 16-byte rows (m, n and k whole multiples of 4 floats); else mma.sync is right.
            if (m % 4 == 0 && n % 4 == 0 && k % 4 == 0) check_path(y, l, what);
            run_both(y, what);
        }
    const Tensor a = integer_valued({4, 100, 72}, float32, seed++),
                 b = integer_valued({4, 72, 136}, float32, seed++);
    run_both(matmul(a, b), "a batch of 4, NN");
    run_both(matmul(a, copy_of(b.transposed()).transposed()), "a batch of 4, NT");
}

TEST_CASE("wgmma: TF32 random operands in every layout lie within the TF32 bound, the bits fixed") {
    const OptionsScope scope(kTF32);
    std::uint64_t seed = 9200;
    for (const Layout& l : kLayouts)
        for (const auto& [m, n, k] : std::vector<std::array<std::int64_t, 3>>{
                 {129, 136, 72}, {300, 264, 1000}, {16, 16, mmtest::small_shapes() ? 8200 : 20000}}) {
            const std::string what = fmt::format("{}: [{}, {}] x [{}, {}]", l.name, m, k, k, n);
            const Tensor a = draw_operand(m, k, l.a_transposed,
                                          [&](const Shape& s) { return pwtest::rand(s, float32, seed++); });
            const Tensor b = draw_operand(k, n, l.b_transposed,
                                          [&](const Shape& s) { return pwtest::rand(s, float32, seed++); });
            const Array y = matmul(a, b);
            if (m % 4 == 0 && n % 4 == 0 && k % 4 == 0) check_path(y, l, what);
            mmtest::run_within_bound(y, a, b, what, ProductPrecision::TF32);
        }
}

TEST_CASE("wgmma: TF32 epilogues fused equal unfused in one kernel, Inf and NaN reach their rows") {
    const OptionsScope scope(kTF32);
    std::uint64_t seed = 9300;
    for (bool b_transposed : {false, true}) {
        INFO((b_transposed ? "NT" : "NN"));
        const Tensor x = pwtest::rand({300, 72}, float32, seed++);
        const Tensor y = draw_operand(72, 136, b_transposed,
                                      [&](const Shape& s) { return pwtest::rand(s, float32, seed++); });
        const Tensor bias = pwtest::rand({136}, float32, seed++),
                     res = pwtest::rand({300, 136}, float32, seed++);
        const Array prod = matmul(x, y);
        for (const auto& [label, e] :
             std::vector<std::pair<std::string, Array>>{{"gelu(x @ y + bias)", gelu(prod + bias)},
                                                        {"relu(x @ y) + residual", relu(prod) + res},
                                                        {"cast to bfloat16", prod.astype(bfloat16)}}) {
            if (hopper()) CHECK(mmtest::product_path_of(e) == "wgmma");
            if (on_gpu()) CHECK(mmtest::kernels_of({e}).total == 1);
            fused_equals_unfused(e, label);
        }
    }
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> av(64 * 32), bv(32 * 64);
    for (std::size_t i = 0; i < av.size(); ++i) av[i] = 0.25f + 0.001f * static_cast<float>(i % 13);
    for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = 0.5f + 0.002f * static_cast<float>(i % 7);
    av[0 * 32 + 3] = inf;                                // row 0: +Inf times positive values
    av[1 * 32 + 2] = nan;                                // row 1: NaN
    av[2 * 32 + 5] = std::numeric_limits<float>::max();  // row 2: finite, never rounded up to Inf
    bv[4 * 64 + 6] = -inf;                               // column 6: -Inf
    const Tensor a = from_host(av, {64, 32}, float32, pwtest::dev()),
                 b = from_host(bv, {32, 64}, float32, pwtest::dev());
    for (bool b_transposed : {false, true}) {
        const Tensor bb = b_transposed ? copy_of(b.transposed()).transposed() : b;
        const Array y = matmul(a, bb);
        if (hopper()) CHECK(mmtest::product_path_of(y) == "wgmma");
        const Tensor c = mmtest::run_within_bound(y, a, bb, "specials", ProductPrecision::TF32).to_host();
        CHECK(std::isinf(c.get_double(0 * 64 + 0)));
        CHECK(c.get_double(0 * 64 + 0) > 0);
        CHECK(std::isnan(c.get_double(0 * 64 + 6)));  // +Inf - Inf
        CHECK(std::isnan(c.get_double(1 * 64 + 0)));
        CHECK(std::isfinite(c.get_double(2 * 64 + 0)));
        CHECK(c.get_double(2 * 64 + 0) > 1e38);
        CHECK(std::isinf(c.get_double(5 * 64 + 6)));
        CHECK(c.get_double(5 * 64 + 6) < 0);
    }
}

TEST_CASE("wgmma: TF32 hints that are not wgmma tiles, and 3xTF32, take mma.sync and say why") {
    const Tensor a = pwtest::rand({256, 64}, float32, 9400), b = pwtest::rand({64, 256}, float32, 9401);
    {
        const OptionsScope scope(kTF32);
        const Array hinted = matmul(a, b, tile(128, 128, 16));
        if (hopper()) {
            CHECK(mmtest::product_path_of(hinted) == "TF32");
            CHECK(explain({hinted}).find("not a wgmma tile") != std::string::npos);
            CHECK(mmtest::product_path_of(matmul(a, b, tile(128, 128, 32))) == "wgmma");
        }
        mmtest::run_within_bound(hinted, a, b, "hint 128x128x16", ProductPrecision::TF32);
    }
    const OptionsScope scope(Options{.product_precision = ProductPrecision::TF32x3});
    const Array y = matmul(a, b);
    if (hopper()) {
        CHECK(mmtest::product_path_of(y) == "3xTF32");
        CHECK(explain({y}).find("only the mma.sync kernel splits") != std::string::npos);
    }
    mmtest::run_within_bound(y, a, b, "3xTF32", ProductPrecision::TF32x3);
}
