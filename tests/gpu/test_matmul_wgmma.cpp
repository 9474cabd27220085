// Matrix products on Hopper's warpgroup MMAs (matmul_plan.hpp, "Hopper"; docs/semantics.md, section 12,
// "Tensor cores"): Options::product_path = ProductPath::TensorCores takes float16 and bfloat16 products whose
// operands the tensor memory accelerator can copy to wgmma. Results lie within the componentwise bound of the
// exact product, their bits are fixed (into poisoned and random-filled outputs, fused and unfused, for every
// tile), and integer-valued operands, whose sums are exact in any order, give the reference's bits. Shapes:
// odd sizes around the tiles, K = 8, tall and skinny, more tiles than multiprocessors (each block walks
// several), batches, broadcast batches, transposed views; every epilogue; the fallbacks (mma.sync, CUDA
// cores) forced and chosen; hints and their errors; traced functions. The cases are named "wgmma: ..." (the
// sanitizer step runs them).
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "test_matmul_util.hpp"

using namespace loom;

namespace {

using mmtest::copy_of;
using mmtest::fused_equals_unfused;
using mmtest::on_gpu;
using mmtest::run_both;
using pwtest::kNone;

const Options kTensorCores{.product_path = ProductPath::TensorCores};

using mmtest::integer_valued;

// Hopper runs wgmma; other GPUs have no such path.
bool hopper() {
    return on_gpu() && device_info().cc_major == 9;
}

// mmtest::run_within_bound on the `path` the product must take on Hopper.
Tensor run_within_bound(const Array& y, const Tensor& a, const Tensor& b, const std::string& what,
                        const char* path = "wgmma") {
    if (hopper() && y.numel() > 0) CHECK_MESSAGE(mmtest::product_path_of(y) == path, what);
    return mmtest::run_within_bound(y, a, b, what);
}

// The epilogue fused equals the product and a separate pointwise kernel, bit for bit (random operands: the
// product is within its bound, not the reference's bits); returns the fused result.
Tensor fused(const Array& y, const std::string& what) {
    fused_equals_unfused(y, what);
    return y.eval();
}

}  // namespace

TEST_CASE(
    "wgmma: float16 and bfloat16 around the tiles, K = 8, tall and skinny, within the bound, the bits "
    "fixed") {
    const OptionsScope tc(kTensorCores);
    // M any; K and N multiples of 8 (16-byte rows for the copies).
    const std::vector<std::array<std::int64_t, 3>> shapes = {{64, 64, 64},    {1, 64, 8},
                                                             {33, 40, 8},     {129, 136, 72},
                                                             {200, 264, 304}, {257, 520, 1000},
                                                             {3000, 8, 64},   {8, 3000, 64},
                                                             {65, 256, 520},  {128, 512, 24},
                                                             {200, 264, 4104}};  // a long K: 128 x 256 tiles,
                                                                                 // the consumers side by side
    std::uint64_t seed = 5000;
    for (DType d : {float16, bfloat16})
        for (const auto& [m, n, k] : shapes) {
            const Tensor a = pwtest::rand({m, k}, d, seed++), b = pwtest::rand({k, n}, d, seed++);
            run_within_bound(matmul(a, b), a, b, fmt::format("[{}, {}] x [{}, {}] {}", m, k, k, n, name(d)));
        }
}

TEST_CASE("wgmma: integer-valued operands give the reference's bits, with more tiles than multiprocessors") {
    const OptionsScope tc(kTensorCores);
    std::uint64_t seed = 5100;
    // 3000 x 2000 in ping-pong tiles of 128 x 128: 24 x 16 = 384 tiles on 132 blocks, so each block's two
    // consumers take turns over several tiles; with K = 1000 (16 K steps, more than the ring's 6 stages) a
    // consumer's first stage is uses ahead of the producer's; with K = 136 the ring's phases run on across
    // tiles; K = 4104 takes 128 x 256 tiles with the consumers side by side.
    for (DType d : {float16, bfloat16})
        for (const auto& [m, n, k] : std::vector<std::array<std::int64_t, 3>>{{33, 40, 16},
                                                                              {129, 64, 200},
                                                                              {3000, 2000, 136},
                                                                              {3000, 2000, 1000},
                                                                              {1, 48, 1000},
                                                                              {300, 1000, 4104}}) {
            const Tensor a = integer_valued({m, k}, d, seed++), b = integer_valued({k, n}, d, seed++);
            const Array y = matmul(a, b);
            if (hopper()) CHECK(mmtest::product_path_of(y) == "wgmma");
            run_both(y, fmt::format("integer-valued [{}, {}] x [{}, {}] {}", m, k, k, n, name(d)));
        }
}

TEST_CASE("wgmma: batches, broadcast batches and transposed views, views take the copies too") {
    const OptionsScope tc(kTensorCores);
    std::uint64_t seed = 5200;
    for (DType d : {float16, bfloat16}) {
        INFO(name(d));
        const Tensor a = pwtest::rand({3, 100, 72}, d, seed++), b = pwtest::rand({3, 72, 40}, d, seed++);
        run_within_bound(matmul(a, b), a, b, "batched");
        const Tensor w = pwtest::rand({72, 40}, d, seed++);
        run_within_bound(matmul(a, w), a, w, "B broadcast over the batch");
        const Tensor a4 = pwtest::rand({2, 3, 64, 48}, d, seed++),
                     b4 = pwtest::rand({2, 3, 48, 64}, d, seed++);
        run_within_bound(matmul(a4, b4), a4, b4, "two batch axes, one axis of the map");
        const Tensor many_a = pwtest::rand({300, 64, 64}, d, seed++),
                     many_b = pwtest::rand({300, 64, 64}, d, seed++);
        run_within_bound(matmul(many_a, many_b), many_a, many_b, "300 products of 64 x 64 x 64");
        // Broadcast batch axes that do not collapse: a batch dimension each, at coordinates taken from the
        // batch entry.
        const Tensor ab = pwtest::rand({3, 1, 64, 40}, d, seed++), bb = pwtest::rand({4, 40, 24}, d, seed++);
        run_within_bound(matmul(ab, bb), ab, bb, "mixed broadcast batch axes");
        // Transposed views: an M-major A and a K-major B, exact for integer values and within the bound else.
        const Tensor at = pwtest::rand({136, 200}, d, seed++), bt = pwtest::rand({72, 136}, d, seed++);
        run_within_bound(matmul(at.transposed(), bt.transposed()), at.transposed(), bt.transposed(),
                         "A and B transposed views");
        run_within_bound(matmul(at.transposed(), copy_of(bt.transposed())), at.transposed(),
                         copy_of(bt.transposed()), "A transposed");
        const Tensor ia = integer_valued({136, 200}, d, seed++), ib = integer_valued({72, 136}, d, seed++);
        const Array yv = matmul(ia.transposed(), ib.transposed());
        if (hopper()) CHECK(mmtest::product_path_of(yv) == "wgmma");
        const Tensor viewed = run_both(yv, "integer-valued transposed views");
        pwtest::require_same_bits(
            viewed, run_both(matmul(copy_of(ia.transposed()), copy_of(ib.transposed())), "contiguous copies"),
            "integer-valued views against contiguous copies");
        // Rows that are not whole 16-byte pieces: mma.sync.
        const Tensor odd_a = pwtest::rand({50, 30}, d, seed++), odd_b = pwtest::rand({30, 21}, d, seed++);
        run_within_bound(matmul(odd_a, odd_b), odd_a, odd_b, "K = 30, N = 21 (mma.sync)", "mma.sync");
    }
}

TEST_CASE("wgmma: K past one chunk runs in one pass, within the bound") {
    const OptionsScope tc(kTensorCores);
    const std::int64_t k = mmtest::small_shapes() ? 8200 : 20000;
    const Tensor a = pwtest::rand({5, k}, float16, 5300, testing::Random::uniform(-1, 1)),
                 b = pwtest::rand({k, 8}, float16, 5301, testing::Random::uniform(-1, 1));
    run_within_bound(matmul(a, b), a, b, "float16 K past a chunk");
    const Tensor c = pwtest::rand({130, k}, bfloat16, 5302), e = pwtest::rand({k, 16}, bfloat16, 5303);
    run_within_bound(matmul(c, e), c, e, "bfloat16 K past a chunk");
}

TEST_CASE(
    "wgmma: every epilogue fused equals unfused bit for bit, in one kernel, the product within the bound") {
    const OptionsScope tc(kTensorCores);
    std::uint64_t seed = 5400;
    for (DType d : {float16, bfloat16}) {
        INFO(name(d));
        const Tensor a = pwtest::rand({300, 72}, d, seed++), b = pwtest::rand({72, 136}, d, seed++);
        const Tensor bias = pwtest::rand({136}, d, seed++), col = pwtest::rand({300, 1}, d, seed++),
                     res = pwtest::rand({300, 136}, d, seed++);
        const Tensor product = run_within_bound(matmul(a, b), a, b, "the product alone");
        const Array p = matmul(a, b);
        for (const auto& [label, y] : std::vector<std::pair<std::string, Array>>{
                 {"gelu(a @ b + bias)", gelu(p + bias)},
                 {"relu(a @ b * col) + residual", relu(p * col) + res},
                 {"silu, cast to float32", silu(p).astype(float32)},
                 {"cast to float32", p.astype(float32)},
                 {"gelu(a @ b + bias), cast to the other half type",
                  gelu(p + bias).astype(d == float16 ? bfloat16 : float16)}}) {
            INFO(label);
            if (hopper()) {
                CHECK(mmtest::kernels_of({y}).total == 1);
                CHECK(mmtest::product_path_of(y) == "wgmma");
            }
            fused_equals_unfused(y, label);
        }
        // Two outputs of one product: the pre-activation is the product's bits.
        std::vector<Tensor> two = {Tensor::empty({300, 136}, d, pwtest::dev()),
                                   Tensor::empty({300, 136}, d, pwtest::dev())};
        for (Tensor& t : two) testing::poison(t);
        assign(two, {p, relu(p)});
        pwtest::wait_device();
        pwtest::require_same_bits(two[0], product, "pre-activation output against the product alone");
        if (hopper()) CHECK(mmtest::kernels_of({p, relu(p)}).total == 1);
        // (a + s) @ b: the copies read memory, so the sum is computed first (a kernel the log names), the
        // same bits as a materialized sum; forced onto mma.sync, it is a prologue computed as the tiles load.
        const Tensor s = pwtest::rand({300, 72}, d, seed++);
        const Array pro = matmul(Array(a) + s, b);
        if (hopper()) {
            CHECK(mmtest::product_path_of(pro) == "wgmma");
            CHECK(mmtest::kernels_of({pro}).total == 2);
            CHECK(explain({pro}).find("computed first: the product runs on Hopper's wgmma") !=
                  std::string::npos);
        }
        fused_equals_unfused(pro, "(a + s) @ b");
        const Tensor sum = (Array(a) + s).eval();
        pwtest::require_same_bits(pro.eval(),
                                  run_within_bound(matmul(sum, b), sum, b, "the materialized a + s"),
                                  "(a + s) @ b against a + s materialized");
        const OptionsScope mma({.product_path = ProductPath::MmaSync});
        if (hopper()) CHECK(mmtest::kernels_of({pro}).total == 1);
        fused_equals_unfused(pro, "the prologue (a + s) @ b on mma.sync");
    }
}

TEST_CASE("wgmma: each path forced, every wgmma tile gives the same bits, hints that are not wgmma tiles") {
    const Tensor a = pwtest::rand({257, 136}, bfloat16, 5500), b = pwtest::rand({136, 264}, bfloat16, 5501);
    Tensor by_wgmma;
    {
        const OptionsScope tc(kTensorCores);
        by_wgmma = run_within_bound(matmul(a, b), a, b, "no hint");
        for (const TileHint& h : {tile(64, 64, 64), tile(128, 128, 64), tile(64, 256, 64), tile(128, 256, 64),
                                  tile(128, 64, 0)}) {
            const Array y = matmul(a, b, h);
            const std::string hinted = fmt::format("{}x{}x64", h.rows, h.cols);
            if (hopper()) CHECK(mmtest::tile_of(explain({y})) == hinted);
            pwtest::require_same_bits(run_within_bound(y, a, b, "hint " + hinted), by_wgmma,
                                      "hint " + hinted + " against no hint");
        }
        // A hint that fits mma.sync but not wgmma: mma.sync with that tile, and the plan says why.
        const Array small = matmul(a, b, tile(32, 32, 32));
        if (hopper())
            CHECK(explain({small}).find("not wgmma: the tile 32x32x32 is not a wgmma tile") !=
                  std::string::npos);
        run_within_bound(small, a, b, "hint 32x32x32", "mma.sync");
        // An impossible hint is an error naming the API, the tile and the user's line.
        try {
            (void)matmul(a, b, tile(64, 96, 64)).eval();
            FAIL("tile(64, 96, 64) was accepted");
        } catch (const Error& e) {
            const std::string what = e.what();
            INFO(what);
            CHECK(what.find("matmul") != std::string::npos);
            CHECK(what.find("power of two") != std::string::npos);
            CHECK(what.find("test_matmul_wgmma.cpp") != std::string::npos);
        }
    }
    {
        const OptionsScope mma({.product_path = ProductPath::MmaSync});
        run_within_bound(matmul(a, b), a, b, "mma.sync forced", "mma.sync");
    }
    {
        const OptionsScope cores({.product_path = ProductPath::CudaCores});
        if (hopper()) CHECK(mmtest::product_path_of(matmul(a, b)) == "CUDA cores");
        run_both(matmul(a, b), "CUDA cores forced: the reference's bits");
    }
}

TEST_CASE(
    "wgmma: a traced function with the option runs its product there, the scope's bits, called again and "
    "again") {
    const Tensor a = pwtest::rand({300, 80}, bfloat16, 5600), b = pwtest::rand({80, 192}, bfloat16, 5601),
                 bias = pwtest::rand({192}, bfloat16, 5602);
    auto f = loom::function(
        "wgmma_fn", [](Array x, Array w, Array c) { return gelu(matmul(x, w) + c); }, kTensorCores);
    const Tensor first = f(a, b, bias);
    pwtest::wait_device();
    const OptionsScope tc(kTensorCores);
    const Array y = gelu(matmul(a, b) + bias);
    if (hopper()) CHECK(mmtest::product_path_of(y) == "wgmma");
    const Tensor scoped = y.eval();
    pwtest::require_same_bits(first, scoped, "traced function against the scope");
    // New buffers of the same shapes: new tensor maps, the same bits for the same values.
    const Tensor a2 = copy_of(a), b2 = copy_of(b);
    for (int call = 0; call < 3; ++call) {
        const Tensor again = call % 2 ? f(a2, b2, bias) : f(a, b, bias);
        pwtest::wait_device();
        pwtest::require_same_bits(again, scoped, fmt::format("call {} of the traced function", call + 2));
    }
}

TEST_CASE(
    "wgmma: the staged epilogue in vectors where N and the pointers allow, element by element else: the same "
    "bits") {
    const OptionsScope tc(kTensorCores);
    std::uint64_t seed = 5900;
    for (DType d : {bfloat16, float16}) {
        INFO(name(d));
        // N = 264: a partial last column tile of whole vectors of 8; M not whole tiles; more tiles than
        // blocks on a small grid.
        const std::int64_t m = mmtest::small_shapes() ? 200 : 3000, n = 264, k = 136;
        const Tensor a = pwtest::rand({m, k}, d, seed++), b = pwtest::rand({k, n}, d, seed++);
        const Tensor bias = pwtest::rand({n}, d, seed++), r = pwtest::rand({m, n}, d, seed++);
        const Array y = gelu(matmul(a, b) + bias);
        if (hopper()) CHECK(mmtest::product_path_of(y) == "wgmma");
        const Tensor v = fused(y, "gelu(a @ b + bias): 8 columns at a time");
        fused(matmul(a, b) * 0.5 - r, "(a @ b) * 0.5 - r: a residual read 16 bytes at a time");
        // The bias 2 bytes past a 16-byte boundary: the epilogue goes element by element, with the same bits.
        const Tensor wide = pwtest::rand({n + 1}, d, seed++);
        const Tensor bias1 = wide.slice({{1, kNone}});
        assign(bias1, Array(bias));
        pwtest::wait_device();
        pwtest::require_same_bits(fused(gelu(matmul(a, b) + bias1), "a misaligned bias"), v,
                                  "a misaligned bias against an aligned one");
        // Into columns 1 .. N of an [M, N + 8] tensor: a misaligned, strided output.
        Tensor big = Tensor::empty({m, n + 8}, d, pwtest::dev());
        testing::poison(big);
        const Tensor inner = big.slice({{kNone, kNone}, {1, n + 1}});
        assign(inner, y);
        pwtest::wait_device();
        pwtest::require_same_bits(inner, v, "into columns 1 .. N against a whole tensor");
        // N = 260 is not whole vectors of 8: element by element.
        const Tensor b2 = pwtest::rand({k, 260}, d, seed++);
        fused(relu(matmul(a, b2)) * 2.0, "relu(a @ b) * 2, N = 260");
    }
}

// Attention's head products on views of one fused projection qkv [B, T, 3 H D], by default (half precision
// runs on tensor cores unasked): q, k and v are [B, H, T, D] views whose rows are 3 H D elements apart and
// whose heads are D apart, so the batch axes (B, H) are two dimensions of each tensor map. Within the bound;
// integer-valued operands give the bits of contiguous copies of the heads.
TEST_CASE("wgmma: heads sliced from a fused projection, q k^T and p v, by default") {
    constexpr std::int64_t B = 2, T = 136, H = 3, D = 64;
    std::uint64_t seed = 5600;
    for (DType d : {float16, bfloat16}) {
        INFO(name(d));
        for (bool integers : {false, true}) {
            const Tensor qkv = integers ? integer_valued({B, T, 3 * H * D}, d, seed++)
                                        : pwtest::rand({B, T, 3 * H * D}, d, seed++);
            auto head = [&](std::int64_t which) {  // [B, H, T, D]
                return qkv.slice({{}, {}, {which * H * D, (which + 1) * H * D}})
                    .reshape({B, T, H, D})
                    .permute({0, 2, 1, 3});
            };
            const Tensor q = head(0), kt = head(1).permute({0, 1, 3, 2}), v = head(2);
            const Array scores = matmul(q, kt);
            if (hopper()) CHECK(mmtest::product_path_of(scores) == "wgmma");
            const Tensor p =
                integers ? integer_valued({B, H, T, T}, d, seed++) : pwtest::rand({B, H, T, T}, d, seed++);
            const Array pv = matmul(p, v);
            if (hopper()) CHECK(mmtest::product_path_of(pv) == "wgmma");
            if (!integers) {
                run_within_bound(scores, q, kt, "q k^T on head views");
                run_within_bound(pv, p, v, "p v on a head view");
                continue;
            }
            pwtest::require_same_bits(run_both(scores, "integer-valued q k^T on head views"),
                                      run_both(matmul(copy_of(q), copy_of(kt)), "contiguous heads"),
                                      "q k^T: views against contiguous copies");
            pwtest::require_same_bits(run_both(pv, "integer-valued p v on a head view"),
                                      run_both(matmul(p, copy_of(v)), "a contiguous v"),
                                      "p v: views against contiguous copies");
        }
    }
    // The same views in TF32: K-major q and k^T read by descriptor; v (N-major) through registers.
    const Tensor qkv = pwtest::rand({B, T, 3 * H * D}, float32, seed++);
    auto head = [&](std::int64_t which) {
        return qkv.slice({{}, {}, {which * H * D, (which + 1) * H * D}})
            .reshape({B, T, H, D})
            .permute({0, 2, 1, 3});
    };
    Options tf32 = current_options();
    tf32.product_precision = ProductPrecision::TF32;
    const OptionsScope scope(tf32);
    const Tensor q = head(0), kt = head(1).permute({0, 1, 3, 2});
    const Array scores = matmul(q, kt);
    if (hopper()) CHECK(mmtest::product_path_of(scores) == "wgmma");
    mmtest::run_within_bound(scores, q, kt, "TF32 q k^T on head views", ProductPrecision::TF32);
}

TEST_CASE("wgmma: float16 and bfloat16 products run on tensor cores by default, CUDA cores when asked") {
    std::uint64_t seed = 5700;
    for (DType d : {float16, bfloat16}) {
        INFO(name(d));
        const Tensor a = pwtest::rand({200, 136}, d, seed++), b = pwtest::rand({136, 72}, d, seed++);
        const Array y = matmul(a, b);
        const Tensor by_default = run_within_bound(y, a, b, "by default");
        if (on_gpu()) CHECK(explain({y}).find("runs on tensor cores by default") != std::string::npos);
        {
            const OptionsScope tc(kTensorCores);
            pwtest::require_same_bits(y.eval(), by_default, "TensorCores asked for: the default's bits");
        }
        const OptionsScope cores({.product_path = ProductPath::CudaCores});
        if (on_gpu()) CHECK(mmtest::product_path_of(y) == "CUDA cores");
        run_both(y, "CUDA cores asked for: the reference's bits");
    }
    // Rows that are not whole 16-byte pieces: the mma.sync fallback, within the bound.
    const Tensor odd_a = pwtest::rand({50, 30}, bfloat16, seed++),
                 odd_b = pwtest::rand({30, 21}, bfloat16, seed++);
    run_within_bound(matmul(odd_a, odd_b), odd_a, odd_b, "K = 30, N = 21 by default (mma.sync)", "mma.sync");
}
