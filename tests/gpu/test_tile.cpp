// Tiled kernels on the GPU (tile_plan.hpp): transposes and permutes through shared memory, stencils over
// shifted slices, tile hints. Every result is checked against the CPU reference, whose tolerance is exact
// for moves and for sums and products of taps (docs/semantics.md), and against the unfused evaluation bit
// for bit; outputs are poisoned before each run (pwtest::run_checked).
#include <doctest/doctest.h>

#include "test_pointwise_util.hpp"

using namespace loom;
using pwtest::kNone;

namespace {

// The tiled plan of the first tiled kernel of `arrays` on this device (kind None when none tiles).
codegen::TilePlan tile_plan_of(const std::vector<Array>& arrays) {
    const auto graph = ir::run_pipeline(pwtest::roots_of(arrays), ir::standard_passes());
    std::vector<const ir::Node*> sources;
    const codegen::FusionPlan plan = gpu::plan_bound(graph, device_info(), current_options(), "", &sources);
    for (const codegen::GpuKernel& g : plan.kernels)
        if (const auto* t = std::get_if<codegen::TiledKernel>(&g.schedule)) return t->tile.plan;
    return {};
}

// Whether the first kernel of `arrays` that tiles does, and of which kind.
codegen::TileKind tile_kind_of(const std::vector<Array>& arrays) {
    return tile_plan_of(arrays).kind;
}

// run_checked, then the same arrays unfused: the same bits.
Tensor run_both(const Array& a, const std::string& what) {
    INFO(what);
    const Tensor fused = pwtest::run_one(a);
    OptionsScope unfused({.fusion = false});
    const Tensor plain = pwtest::run_one(a, false);
    pwtest::require_same_bits(fused, plain, what + ": fused against unfused");
    return fused;
}

Array shift(const Array& x, std::vector<std::pair<std::int64_t, std::int64_t>> ranges) {
    std::vector<ir::SliceSpec> specs;
    for (auto [b, e] : ranges) specs.push_back({b, e, 1});
    return x.slice(specs);
}

Array five_point(const Array& x) {
    return 0.25 * (shift(x, {{0, -2}, {1, -1}}) + shift(x, {{2, kNone}, {1, -1}}) +
                   shift(x, {{1, -1}, {0, -2}}) + shift(x, {{1, -1}, {2, kNone}}));
}

}  // namespace

TEST_CASE("tiled transpose: sizes 1, 31, 32, 33, 4097 and odd rectangles, float32") {
    const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
        {1, 1},    {1, 33},   {31, 1},     {31, 31},   {32, 32},   {33, 33}, {32, 4097}, {4097, 33},
        {65, 127}, {1000, 3}, {129, 4097}, {256, 300}, {4100, 64}, {96, 4}};  // the last three: extents that
                                                                              // divide by 4 (the vector
                                                                              // variant)
    std::uint64_t seed = 1;
    for (const auto& [m, n] : shapes) {
        const Tensor x = pwtest::rand({m, n}, float32, seed++);
        const Array t = transpose(x);
        if (m > 1 && n > 1) CHECK(tile_kind_of({t}) == codegen::TileKind::Transpose);
        run_both(t, fmt::format("transpose of [{}, {}]", m, n));
    }
}

TEST_CASE("tiled transpose: every dtype, 1-byte and 2-byte elements packed in shared memory") {
    std::uint64_t seed = 40;
    for (DType d : kAllDTypes) {
        const Tensor x = pwtest::rand({67, 45}, d, seed++);
        const Array t = transpose(x);
        CHECK(tile_kind_of({t}) == codegen::TileKind::Transpose);
        run_both(t, fmt::format("transpose of [67, 45] {}", name(d)));
    }
}

TEST_CASE(
    "tiled transpose: 16-byte vectors of 2-byte and 1-byte elements, and the scalar variant where they do "
    "not fit") {
    // Extents that divide by the vector width (8 for 2-byte, 16 for 1-byte elements) run the vector variant;
    // one column more, or a view one element in, runs the scalar one. Every dtype of 1 and 2 bytes, sizes
    // around the tile (64 rows for 2-byte, 128 for 1-byte elements) and odd tiles at the edges.
    std::uint64_t seed = 60;
    for (DType d : kAllDTypes) {
        const std::size_t size = itemsize(d);
        if (size > 2) continue;
        const std::int64_t V = static_cast<std::int64_t>(16 / size);
        CAPTURE(name(d));
        for (const auto& [m, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{{V, V},
                                                                                     {128, 64},
                                                                                     {256, 320},
                                                                                     {V * 3, V * 5},
                                                                                     {4096 + V, 2 * V},
                                                                                     {V * 7, 4096 + V},
                                                                                     {130, 66},
                                                                                     {V, V + 1}}) {
            const Tensor x = pwtest::rand({m, n}, d, seed++);
            const Array t = transpose(x);
            const codegen::TilePlan tp = tile_plan_of({t});
            CHECK(tp.kind == codegen::TileKind::Transpose);
            CHECK(tp.vector_width == V);
            run_both(t, fmt::format("transpose of [{}, {}] {}", m, n, name(d)));
        }
        const Tensor big = pwtest::rand({8 * V, 16 * V}, d, seed++);
        run_both(transpose(big.slice({{0, kNone}, {1, 16 * V - V + 1}})),
                 fmt::format("transpose of a view one element in, {}", name(d)));
        run_both(permute(pwtest::rand({3, 2 * V, 4, 3 * V}, d, seed++), {0, 3, 2, 1}),
                 fmt::format("permute (0, 3, 2, 1) {}", name(d)));
    }
    // Fused work on both sides of a 2-byte transpose: (x * s).T + b[j], and a 1-byte one with an integer
    // bias.
    const Tensor h = pwtest::rand({512, 192}, bfloat16, 70);
    const Tensor hs = pwtest::rand({}, bfloat16, 71);
    const Tensor hb = pwtest::rand({512}, bfloat16, 72);
    const Array y = transpose(Array(h) * hs) + hb;
    CHECK(tile_plan_of({y}).vector_width == 8);
    run_both(y, "(x * s).T + b[j], bfloat16");
    const Tensor q = pwtest::rand({384, 256}, int8, 73);
    const Tensor qb = pwtest::rand({384}, int8, 74);
    const Array z = transpose(Array(q)) + qb;
    CHECK(tile_plan_of({z}).vector_width == 16);
    run_both(z, "x.T + b[j], int8");
    // A transpose of two inputs at once (two staged loads), float16.
    const Tensor f1 = pwtest::rand({256, 128}, float16, 75), f2 = pwtest::rand({256, 128}, float16, 76);
    const Array w = transpose(Array(f1)) - transpose(Array(f2));
    CHECK(tile_plan_of({w}).staged.size() == 2);
    run_both(w, "x.T - y.T, float16");
}

TEST_CASE("tiled permutes: any rank and permutation, and those that keep the last axis need no tile") {
    const Tensor x3 = pwtest::rand({5, 33, 70}, float32, 7);
    const Tensor x4 = pwtest::rand({3, 17, 9, 40}, bfloat16, 8);
    for (const auto& perm :
         std::vector<std::vector<std::int64_t>>{{2, 0, 1}, {1, 2, 0}, {0, 2, 1}, {2, 1, 0}}) {
        const Array p = permute(x3, perm);
        CHECK(tile_kind_of({p}) == codegen::TileKind::Transpose);
        run_both(p, fmt::format("permute of [5, 33, 70] by ({})", fmt::join(perm, ", ")));
    }
    CHECK(tile_kind_of({permute(x3, {1, 0, 2})}) == codegen::TileKind::None);  // whole rows move
    run_both(permute(x3, {1, 0, 2}), "permute (1, 0, 2): rows");
    for (const auto& perm :
         std::vector<std::vector<std::int64_t>>{{0, 2, 3, 1}, {3, 2, 1, 0}, {1, 3, 0, 2}, {0, 2, 1, 3}}) {
        const Array p = permute(x4, perm);
        CHECK(tile_kind_of({p}) ==
              (perm.back() == 3 ? codegen::TileKind::None : codegen::TileKind::Transpose));
        run_both(p, fmt::format("permute of [3, 17, 9, 40] bf16 by ({})", fmt::join(perm, ", ")));
    }
}

TEST_CASE("tiled transpose: strided inputs, broadcast operands and fused elementwise work on both sides") {
    const Tensor x = pwtest::rand({300, 257}, float32, 11);
    const Tensor s = pwtest::rand({}, float32, 12);
    const Tensor b = pwtest::rand({300}, float32, 13);
    // out = (x * s).T + b[j]: a per-column bias of the transposed result.
    const Array y = transpose(Array(x) * s) + b;
    CHECK(tile_kind_of({y}) == codegen::TileKind::Transpose);
    run_both(y, "(x * s).T + b[j]");
    // A strided view (every other row, from row 1) transposed, plus a contiguous operand of the output's
    // shape.
    const Tensor xs = x.slice({{1, kNone, 2}});
    const Tensor c = pwtest::rand({257, 150}, float32, 14);
    run_both(sqrt(abs(transpose(xs))) * c, "sqrt(|x[1::2].T|) * c");
    // The vector variant needs 16-byte aligned rows: a view starting one element in runs the scalar variant.
    const Tensor big = pwtest::rand({260, 516}, float32, 15);
    run_both(transpose(big), "transpose of [260, 516] (vector variant)");
    run_both(transpose(big.slice({{0, kNone}, {1, 513}})),
             "transpose of a view one element in (scalar variant)");
    run_both(transpose(Array(big) * 3.0) + pwtest::rand({260}, float32, 16),
             "(x * 3).T + b[j] (vector variant)");
    // A transposed view of a transposed tensor reads contiguously: no tile.
    const Tensor xt = x.transposed();
    CHECK(tile_kind_of({transpose(xt) + 1.0}) == codegen::TileKind::None);
    run_both(transpose(xt) + 1.0, "transpose of a transposed view");
    // A reduction's epilogue that feeds a transpose: x - mean(x, rows), transposed.
    const Array centred = transpose(Array(x) - mean(x, {1}, true));
    run_both(centred, "transpose(x - mean(x, axis 1))");
}

namespace {

// Every stencil pattern of the tests, run fused (tiled) and unfused: the same bits, and the reference's.
// `halo`: the options ask for shared halo tiles, and the tiled plans must have them.
void stencil_cases(bool halo) {
    auto expect_halo = [&](const Array& a) {
        if (halo) CHECK(!tile_plan_of({a}).halos.empty());
    };
    for (auto [m, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {3, 3}, {33, 33}, {34, 4097}, {4097, 31}, {257, 130}}) {
        const Tensor x = pwtest::rand({m, n}, float32, static_cast<std::uint64_t>(m * 7 + n));
        const Array s = five_point(Array(x));
        if (m > 3 && n > 3) CHECK(tile_kind_of({s}) == codegen::TileKind::Stencil);  // [1, 1] is one element
        if (m > 3 && n > 3) expect_halo(s);
        run_both(s, fmt::format("5-point stencil of [{}, {}]", m, n));
    }
    const Tensor x3 = pwtest::rand({34, 33, 70}, float32, 21);
    const Array c = shift(x3, {{1, -1}, {1, -1}, {1, -1}});
    Array sum = c;
    for (auto r :
         std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>{{{0, -2}, {1, -1}, {1, -1}},
                                                                         {{2, kNone}, {1, -1}, {1, -1}},
                                                                         {{1, -1}, {0, -2}, {1, -1}},
                                                                         {{1, -1}, {2, kNone}, {1, -1}},
                                                                         {{1, -1}, {1, -1}, {0, -2}},
                                                                         {{1, -1}, {1, -1}, {2, kNone}}})
        sum = sum + shift(x3, r);
    const Array s7 = sum * (1.0 / 7.0);
    CHECK(tile_kind_of({s7}) == codegen::TileKind::Stencil);
    expect_halo(s7);
    run_both(s7, "7-point stencil of [34, 33, 70]");
    // x[1:] - x[:-1] along rows of a matrix, and a 1-D difference (rank 1: the flat walk).
    const Tensor m = pwtest::rand({40, 4097}, float32, 22);
    run_both(shift(m, {{0, kNone}, {1, kNone}}) - shift(m, {{0, kNone}, {0, -1}}), "x[:, 1:] - x[:, :-1]");
    const Tensor v = pwtest::rand({4097}, float64, 23);
    run_both(Array(v.slice({{1, kNone, 1}})) - v.slice({{0, -1, 1}}), "1-D x[1:] - x[:-1]");
    // A 3-tap convolution along rows with run-time weights (0-d tensors) and a 2-D one with constants.
    const Tensor w0 = pwtest::rand({}, float32, 24), w1 = pwtest::rand({}, float32, 25),
                 w2 = pwtest::rand({}, float32, 26);
    const Array conv = shift(m, {{0, kNone}, {0, -2}}) * w0 + shift(m, {{0, kNone}, {1, -1}}) * w1 +
                       shift(m, {{0, kNone}, {2, kNone}}) * w2;
    CHECK(tile_kind_of({conv}) == codegen::TileKind::Stencil);
    expect_halo(conv);
    run_both(conv, "3-tap convolution with run-time weights");
    Array conv2 = shift(m, {{0, -2}, {0, -2}}) * 0.0625;
    for (int di = 0; di < 3; ++di)
        for (int dj = 0; dj < 3; ++dj)
            if (di + dj > 0)
                conv2 = conv2 +
                        shift(m, {{di, di - 2 == 0 ? kNone : di - 2}, {dj, dj - 2 == 0 ? kNone : dj - 2}}) *
                            (di == 1 && dj == 1 ? 0.25 : 0.125);
    run_both(conv2, "3x3 convolution with constant weights");
    // Shifted slices of two different inputs, or with different steps, are not one stencil.
    const Tensor y = pwtest::rand({40, 4097}, float32, 27);
    run_both(shift(m, {{0, kNone}, {1, kNone}}) - shift(y, {{0, kNone}, {0, -1}}), "slices of two inputs");
    const Array steps =
        Array(m.slice({{0, kNone, 1}, {0, 2048, 1}})) + m.slice({{0, kNone, 1}, {0, 4096, 2}});
    CHECK(tile_kind_of({steps}) == codegen::TileKind::None);
    run_both(steps, "slices with different steps");
    // Stencils over a view (every other row, from row 1), over bfloat16 and int32, and over the corner of
    // a larger input, so that the halo's box ends inside the input.
    const Tensor big = pwtest::rand({301, 260}, float32, 28);
    run_both(five_point(Array(big.slice({{1, kNone, 2}}))), "5-point stencil of a view x[1::2]");
    run_both(five_point(Array(big.slice({{5, 100}, {7, 77}}))), "5-point stencil of x[5:100, 7:77]");
    const Tensor hb = pwtest::rand({130, 200}, bfloat16, 29);
    run_both(five_point(Array(hb)), "5-point stencil, bfloat16");
    const Tensor iv = pwtest::rand({70, 129}, int32, 30);
    run_both(
        shift(iv, {{0, -2}, {1, -1}}) + shift(iv, {{2, kNone}, {1, -1}}) - shift(iv, {{1, -1}, {0, -2}}) * 3,
        "integer stencil");
}

}  // namespace

TEST_CASE("stencils: 5-point and 7-point Laplacians, finite differences and convolutions, bit for bit") {
    stencil_cases(current_options().stencil_reuse == StencilReuse::SharedHalo);
}

TEST_CASE("stencils: the same patterns with their taps staged in shared halo tiles, the same bits") {
    Options o = current_options();
    o.stencil_reuse = StencilReuse::SharedHalo;
    const OptionsScope scope(o);
    stencil_cases(true);
    // A halo tile that does not fit in shared memory is refused for a hinted tile, with the limit named.
    // (tile 32 x 512 of float64 with a halo of 2 rows and 2 columns: 34 x 514 x 8 bytes, above 48 KiB.)
    const Tensor d = pwtest::rand({200, 600}, float64, 31);
    o.tile = tile(32, 512);
    const OptionsScope hinted(o);
    try {
        Tensor t = five_point(Array(d));
        FAIL("expected a loom::Error for a halo tile above the shared memory per block");
    } catch (const loom::Error& e) {
        CHECK(std::string(e.what()).find("shared memory") != std::string::npos);
    }
}

TEST_CASE("stencils: a Jacobi iteration in a traced function runs one kernel per sweep, into the interior") {
    const std::int64_t n = 130;
    Tensor u = pwtest::rand({n, n}, float32, 31);
    Tensor v = u.to(Device::cuda(0));  // copies: the boundary of both grids is u's
    const Tensor u0 = u.to(Device::cpu());
    auto sweep = loom::function("jacobi_sweep", [](Array a) { return five_point(a); });
    for (int k = 0; k < 4; ++k) {
        sweep(u, v.slice({{1, -1, 1}, {1, -1, 1}}));
        sweep(v, u.slice({{1, -1, 1}, {1, -1, 1}}));
    }
    synchronize();
    CHECK(sweep.stats().specializations == 1);  // both grids have one layout, both interiors another
    // One kernel per sweep, tiled as a stencil (the specialization with a contiguous result has the same
    // one).
    const std::string src = sweep.cuda_source(u);
    std::size_t kernels = 0;
    for (std::size_t at = src.find("__global__"); at != std::string::npos;
         at = src.find("__global__", at + 1))
        ++kernels;
    CHECK(kernels == 1);
    CHECK(src.find("_tile(") != std::string::npos);
    // The same sweeps on the CPU reference, from the same start.
    Tensor hu = u0.to(Device::cpu()), hv = u0.to(Device::cpu());
    for (int k = 0; k < 4; ++k) {
        assign(hv.slice({{1, -1, 1}, {1, -1, 1}}), five_point(Array(hu)));
        assign(hu.slice({{1, -1, 1}, {1, -1, 1}}), five_point(Array(hv)));
    }
    pwtest::require_same_bits(u.to(Device::cpu()), hu, "Jacobi after 8 sweeps");
}

TEST_CASE("tile hints: honoured, and an impossible hint names the limit it breaks") {
    const Tensor x = pwtest::rand({200, 300}, float32, 41);
    {
        OptionsScope hinted({.tile = tile(32, 128)});
        run_both(transpose(x), "transpose with tile(32, 128)");
        run_both(five_point(Array(x)), "stencil with tile(32, 128)");
    }
    auto message = [&](TileHint h, const Array& a) {
        OptionsScope hinted({.tile = h});
        try {
            (void)a.eval();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message(tile(8, 16), transpose(x)).find("threads per block") != std::string::npos);
    CHECK(message(tile(64, 48), transpose(x)).find("multiple of 32") != std::string::npos);
    CHECK(message(tile(256, 256), transpose(x)).find("per thread") != std::string::npos);
    const Tensor x64 = pwtest::rand({200, 300}, float64, 42);
    CHECK(message(tile(128, 128), transpose(x64)).find("shared memory") != std::string::npos);
    CHECK(message(tile(64, 64, 16), transpose(x)).find("depth") != std::string::npos);
    CHECK(message(tile(64, 64, 16), transpose(x)).find("test_tile.cpp") != std::string::npos);
}
