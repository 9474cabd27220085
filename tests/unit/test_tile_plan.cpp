// The tiled plan (tile_plan.hpp) without a GPU: which pointwise kernels tile, with which staged loads,
// padding and halo; the explain text; tile hints and the limits an impossible one names; traced functions
// writing into views (the Jacobi sweep's interior) on the host.
#include <doctest/doctest.h>

#include "../common/gpu_explain.hpp"
#include "error_message.hpp"
#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/codegen/cuda/tile_plan.hpp"
#include "loom/ir/build.hpp"
#include "loom/loom.hpp"

using namespace loom;
using codegen::TileKind;

namespace {

constexpr std::int64_t kEnd = ir::SliceSpec::kNone;

codegen::PlannedTile tile_of(const ir::NodePtr& out, const TileHint& hint = {},
                             std::vector<codegen::InputLayout> layouts = {},
                             StencilReuse reuse = StencilReuse::Auto) {
    const std::vector<ir::NodePtr> outs{out};
    if (layouts.empty())
        for (const auto* in : codegen::pointwise_inputs(outs))
            layouts.push_back({in->dtype(), contiguous_strides(in->shape()), true});
    const auto dev = codegen::DeviceInfo::h200();
    return codegen::plan_tile(outs, codegen::plan_pointwise(outs, layouts, dev.plan_target()), dev, hint,
                              reuse);
}

ir::NodePtr shift(const ir::NodePtr& x, std::vector<std::pair<std::int64_t, std::int64_t>> r) {
    std::vector<ir::SliceSpec> spec;
    for (auto [b, e] : r) spec.push_back({b, e, 1});
    return ir::slice(x, spec);
}

ir::NodePtr add(const ir::NodePtr& a, const ir::NodePtr& b) {
    return ir::binary(ir::Op::Add, a, b);
}

Array five_point(const Array& u) {
    return 0.25 * (u.slice({{0, -2, 1}, {1, -1, 1}}) + u.slice({{2, kEnd, 1}, {1, -1, 1}}) +
                   u.slice({{1, -1, 1}, {0, -2, 1}}) + u.slice({{1, -1, 1}, {2, kEnd, 1}}));
}

}  // namespace

TEST_CASE(
    "tile plan: a transpose stages its load, rows padded to an odd number of words for every element size") {
    for (DType d : kAllDTypes) {
        auto x = ir::input(d, {100, 70}, "x");
        const auto t = tile_of(ir::transpose(x));
        REQUIRE(t.plan.kind == TileKind::Transpose);
        CHECK(t.plan.dim_a == 0);
        REQUIRE(t.plan.staged.size() == 1);
        const std::size_t bytes = itemsize(d) * static_cast<std::size_t>(t.plan.staged[0].pitch);
        CHECK(t.plan.staged[0].pitch >= t.plan.tile_rows);
        if (itemsize(d) < 8)
            CHECK((bytes % 4 == 0 && bytes / 4 % 2 == 1));  // an odd number of 4-byte words
        else
            CHECK(t.plan.staged[0].pitch % 2 == 1);  // 8-byte: an odd number of elements
    }
}

TEST_CASE("tile plan: which permutes tile, and which read rows or contiguously") {
    auto x = ir::input(DType::Float32, {4, 5, 6, 7}, "x");
    CHECK(tile_of(ir::permute(x, {0, 1, 3, 2})).plan.kind == TileKind::Transpose);
    CHECK(tile_of(ir::permute(x, {3, 0, 1, 2})).plan.kind == TileKind::Transpose);
    CHECK(tile_of(ir::permute(x, {1, 0, 2, 3})).plan.kind ==
          TileKind::None);  // the last axis stays: rows move
    CHECK(tile_of(ir::unary(ir::Op::Neg, x)).plan.kind == TileKind::None);
    // A transpose of a column-major tensor reads contiguously: no tile.
    auto y = ir::input(DType::Float32, {50, 60}, "y");
    CHECK(tile_of(ir::transpose(y), {}, {{DType::Float32, {1, 50}, true}}).plan.kind == TileKind::None);
    // The plan's kernel key differs from the untiled pointwise kernel's.
    auto t = tile_of(ir::transpose(y));
    CHECK(t.plan.hash() != codegen::TilePlan{}.hash());
}

TEST_CASE("tile plan: stencils are recognized with their halo, and near-patterns say why not") {
    auto x = ir::input(DType::Float32, {64, 80}, "x");
    auto s5 = add(
        add(add(shift(x, {{0, -2}, {1, -1}}), shift(x, {{2, kEnd}, {1, -1}})), shift(x, {{1, -1}, {0, -2}})),
        shift(x, {{1, -1}, {2, kEnd}}));
    const auto t = tile_of(s5);
    REQUIRE(t.plan.kind == TileKind::Stencil);
    REQUIRE(t.plan.stencils.size() == 1);
    CHECK(t.plan.stencils[0].sites.size() == 4);
    CHECK(t.plan.stencils[0].halo_hi[0] - t.plan.stencils[0].halo_lo[0] == 2);
    CHECK(t.plan.stencils[0].halo_hi[1] - t.plan.stencils[0].halo_lo[1] == 2);
    CHECK(t.plan
              .to_string(codegen::plan_pointwise({s5}, {{DType::Float32, {80, 1}, true}},
                                                 codegen::DeviceInfo::h200().plan_target())
                             .plan)
              .find("stencil: 4 taps of input 0") != std::string::npos);
    // Different steps: not a stencil, and the note says so.
    auto steps = add(ir::slice(x, {{0, kEnd, 1}, {0, 40, 1}}), ir::slice(x, {{0, kEnd, 1}, {0, 80, 2}}));
    const auto n = tile_of(steps);
    CHECK(n.plan.kind == TileKind::None);
    CHECK(n.note.find("different strides") != std::string::npos);
    // Slices of two inputs are two loads, not a stencil.
    auto y = ir::input(DType::Float32, {64, 80}, "y");
    CHECK(tile_of(add(shift(x, {{0, -1}, {0, kEnd}}), shift(y, {{1, kEnd}, {0, kEnd}}))).plan.kind ==
          TileKind::None);
    // Rank 1 after coalescing: x[1:] - x[:-1] of a vector keeps the flat walk, and the note says why.
    auto v = ir::input(DType::Float32, {1000}, "v");
    const auto r1 =
        tile_of(ir::binary(ir::Op::Sub, ir::slice(v, {{1, kEnd, 1}}), ir::slice(v, {{0, -1, 1}})));
    CHECK(r1.plan.kind == TileKind::None);
    CHECK(r1.note.find("rank 1") != std::string::npos);
}

TEST_CASE("tile plan: hints are taken, and an impossible one names the limit it breaks") {
    auto x = ir::input(DType::Float32, {300, 200}, "x");
    const auto t = tile_of(ir::transpose(x), tile(32, 128));
    CHECK(t.plan.tile_rows == 32);
    CHECK(t.plan.tile_cols == 128);
    CHECK(t.plan.hinted);
    auto err = [&](TileHint h, DType d = DType::Float32) {
        return loom_test::error_message([&] {
            (void)tile_of(ir::transpose(ir::input(d, {300, 200}, "x")), h);
        });
    };
    CHECK(err(tile(8, 16)).find("fewer than the 256 threads per block") != std::string::npos);
    CHECK(err(tile(64, 48)).find("multiple of 32 (the lanes of a warp)") != std::string::npos);
    CHECK(err(tile(40, 64)).find("rows must be a multiple of 32") != std::string::npos);
    CHECK(err(tile(256, 256)).find("elements per thread") != std::string::npos);
    CHECK(err(tile(128, 128), DType::Float64).find("shared memory") != std::string::npos);
    CHECK(err(tile(64, 64, 16)).find("not a depth") != std::string::npos);
    CHECK(err(tile(64, 48)).find("test_tile_plan.cpp") != std::string::npos);  // the user's line
}

TEST_CASE("tile plan: LOOM_EXPLAIN's text names the tile and the staged load") {
    const Tensor x = testing::random_tensor({200, 300}, float32, 1);
    const std::string text = loom_test::gpu_explain({transpose(x) * 2.0});
    CHECK(text.find("pointwise, tiled") != std::string::npos);
    CHECK(text.find("tiled plan: transpose, tile 64 x 64") != std::string::npos);
    CHECK(text.find("staged: in0") != std::string::npos);
    const std::string st = loom_test::gpu_explain({five_point(Array(x))});
    CHECK(st.find("tiled plan: stencil") != std::string::npos);
    CHECK(st.find("halo") != std::string::npos);
}

TEST_CASE("traced functions write into views: a Jacobi sweep into the interior of the other grid") {
    Tensor u = testing::random_tensor({34, 40}, float32, 2);
    Tensor v = u.clone();  // grids of their own: to() on the same device would share u's memory
    const Tensor u0 = u.clone();
    auto sweep = loom::function("jacobi_host", [](Array a) { return five_point(a); });
    const std::vector<ir::SliceSpec> inner = {{1, -1, 1}, {1, -1, 1}};
    sweep(u, v.slice(inner));
    sweep(v, u.slice(inner));
    CHECK(sweep.stats().specializations == 1);
    // The same two sweeps written with assign(): the same bits, the boundary untouched.
    Tensor hu = u0.clone(), hv = u0.clone();
    assign(hv.slice(inner), five_point(Array(hu)));
    assign(hu.slice(inner), five_point(Array(hv)));
    CHECK(testing::compare(u, hu, testing::Tolerance::exact()).ok);
    CHECK(testing::compare(v, hv, testing::Tolerance::exact()).ok);
    CHECK(u.get_double(0) == u0.get_double(0));
    // A new result (contiguous) is another specialization, and so is a transposed view as the output.
    const Tensor fresh = sweep(u);
    CHECK(fresh.shape() == Shape{32, 38});
    CHECK(sweep.stats().specializations == 2);
    Tensor store = Tensor::empty({38, 32}, float32, Device::cpu());
    sweep(u, store.transposed());
    CHECK(sweep.stats().specializations == 3);
    CHECK(testing::compare(store.transposed(), fresh, testing::Tolerance::exact()).ok);
    // An output that overlaps itself is refused, naming the function and the call.
    const Tensor row = Tensor::empty({38}, float32, Device::cpu());
    const std::string msg = loom_test::error_message([&] { sweep(u, row.as_strided({32, 38}, {0, 1}, 0)); });
    CHECK(msg.find("jacobi_host(): output 0") == 0);
    CHECK(msg.find("overlaps itself") != std::string::npos);
    CHECK(msg.find("test_tile_plan.cpp") != std::string::npos);
}

TEST_CASE("tile plan: the options' text shows a hint") {
    Options o;
    o.tile = tile(32, 128);
    CHECK(o.to_string().find("tile=32x128x0") != std::string::npos);
    CHECK(Options{}.to_string().find("tile=auto") != std::string::npos);
}

TEST_CASE("tile plan: the vector variant of a float32 transpose, and when the scalar one runs instead") {
    auto x = ir::input(DType::Float32, {256, 300}, "x");
    const std::vector<ir::NodePtr> outs{ir::transpose(x)};
    const auto dev = codegen::DeviceInfo::h200();
    const auto pw = codegen::plan_pointwise(outs, {{DType::Float32, {300, 1}, true}}, dev.plan_target());
    const auto t = codegen::plan_tile(outs, pw, dev, {});
    REQUIRE(t.plan.vector_width == 4);
    alignas(16) static float in[4], out[4];
    const void* ins[] = {in};
    void* os[] = {out};
    CHECK(t.plan.select_variant(pw.plan, pw.binding, ins, os) == codegen::Variant::Vector);
    const void* shifted[] = {in + 1};  // element 0 not 16-byte aligned
    CHECK(t.plan.select_variant(pw.plan, pw.binding, shifted, os) == codegen::Variant::Scalar);
    void* out_shifted[] = {out + 1};
    CHECK(t.plan.select_variant(pw.plan, pw.binding, ins, out_shifted) == codegen::Variant::Scalar);
    // Extents that do not divide by 4: the scalar variant.
    auto y = ir::input(DType::Float32, {255, 300}, "y");
    const std::vector<ir::NodePtr> outs2{ir::transpose(y)};
    const auto pw2 = codegen::plan_pointwise(outs2, {{DType::Float32, {300, 1}, true}}, dev.plan_target());
    const auto t2 = codegen::plan_tile(outs2, pw2, dev, {});
    CHECK(t2.plan.select_variant(pw2.plan, pw2.binding, ins, os) == codegen::Variant::Scalar);
    // 2-byte elements: vectors of 8, 1-byte elements: vectors of 16, both in 128-row tiles.
    auto h = ir::input(DType::BFloat16, {256, 300}, "h");
    const auto th = tile_of(ir::transpose(h)).plan;
    CHECK(th.vector_width == 8);
    CHECK(th.tile_rows == 128);
    CHECK(th.staged[0].pitch == 130);  // 65 words: odd
    auto q = ir::input(DType::Int8, {256, 300}, "q");
    const auto tq = tile_of(ir::transpose(q)).plan;
    CHECK(tq.vector_width == 16);
    CHECK(tq.tile_rows == 128);
    CHECK(tq.tile_cols == 32);
    CHECK(tq.staged[0].pitch == 132);  // 33 words: odd
    // 8-byte elements, and a cast between the staged load and the output (two element sizes): scalar only.
    auto d = ir::input(DType::Float64, {256, 300}, "d");
    CHECK(tile_of(ir::transpose(d)).plan.vector_width == 1);
    CHECK(tile_of(ir::cast(ir::transpose(h), DType::Float32)).plan.vector_width == 1);
    // A hint whose rows do not hold whole warps of 16-element vectors keeps the scalar variant only.
    const auto tq32 = tile_of(ir::transpose(q), tile(64, 64)).plan;
    CHECK(tq32.vector_width == 1);
}

TEST_CASE("tile plan: a stencil's taps from L1 by default, from a shared halo tile on request") {
    auto x = ir::input(DType::Float32, {64, 80}, "x");
    auto s5 = add(
        add(add(shift(x, {{0, -2}, {1, -1}}), shift(x, {{2, kEnd}, {1, -1}})), shift(x, {{1, -1}, {0, -2}})),
        shift(x, {{1, -1}, {2, kEnd}}));
    CHECK(tile_of(s5).plan.halos.empty());  // Auto: L1, the faster on the H200
    CHECK(tile_of(s5, {}, {}, StencilReuse::L1).plan.halos.empty());
    const auto h = tile_of(s5, {}, {}, StencilReuse::SharedHalo).plan;
    REQUIRE(h.halos.size() == 1);
    const codegen::StagedHalo& sh = h.halos[0];
    CHECK(sh.ref == h.stencils[0].sites[0]);
    CHECK(sh.sites == h.stencils[0].sites);
    CHECK(sh.shift_a == std::vector<std::int64_t>{0, 2, 1, 1});  // up, down, left, right from up
    CHECK(sh.shift_b == std::vector<std::int64_t>{0, 0, -1, 1});
    CHECK(sh.rows == h.tile_rows + 2);
    CHECK(sh.pitch == h.tile_cols + 2);
    CHECK(h.shared_bytes(codegen::plan_pointwise({s5}, {{DType::Float32, {80, 1}, true}},
                                                 codegen::DeviceInfo::h200().plan_target())
                             .plan) == static_cast<std::size_t>(sh.rows * sh.pitch) * 4);
    CHECK(h.hash() != tile_of(s5).plan.hash());  // a kernel of its own
    // 3-D: the taps of the tile's plane share the halo tile; those shifted along dimension 0 stay L1 loads.
    auto c = ir::input(DType::Float32, {20, 30, 40}, "c");
    ir::NodePtr s7 = shift(c, {{1, -1}, {1, -1}, {1, -1}});
    for (auto r : std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>{
             {{0, -2}, {1, -1}, {1, -1}},
             {{2, kEnd}, {1, -1}, {1, -1}},
             {{1, -1}, {0, -2}, {1, -1}},
             {{1, -1}, {2, kEnd}, {1, -1}},
             {{1, -1}, {1, -1}, {0, -2}},
             {{1, -1}, {1, -1}, {2, kEnd}}})
        s7 = add(s7, shift(c, r));
    const auto h7 = tile_of(s7, {}, {}, StencilReuse::SharedHalo).plan;
    REQUIRE(h7.halos.size() == 1);
    CHECK(h7.halos[0].sites.size() == 5);
    // Taps shifted only along an outer dimension: no two share a plane, so no halo tile, and the note says
    // so. (Dimensions 1 and 2 sliced too, so that no two dimensions coalesce and the shift stays outside the
    // plane.)
    auto d = add(shift(c, {{0, -1}, {1, kEnd}, {1, kEnd}}), shift(c, {{1, kEnd}, {1, kEnd}, {1, kEnd}}));
    const auto nd = tile_of(d, {}, {}, StencilReuse::SharedHalo);
    REQUIRE(nd.plan.kind == TileKind::Stencil);
    CHECK(nd.plan.halos.empty());
    CHECK(nd.note.find("no shared halo") != std::string::npos);
    // A hinted tile whose halo tile passes the shared memory per block is refused, naming the limit.
    auto big = ir::input(DType::Float64, {200, 600}, "big");
    auto b5 = add(add(add(shift(big, {{0, -2}, {1, -1}}), shift(big, {{2, kEnd}, {1, -1}})),
                      shift(big, {{1, -1}, {0, -2}})),
                  shift(big, {{1, -1}, {2, kEnd}}));
    const std::string msg =
        loom_test::error_message([&] { tile_of(b5, tile(32, 512), {}, StencilReuse::SharedHalo); });
    CHECK(msg.find("shared memory") != std::string::npos);
    CHECK(msg.find("tile(32, 512)") != std::string::npos);
    CHECK(tile_of(b5, tile(32, 512), {}, StencilReuse::L1).plan.kind ==
          TileKind::Stencil);  // from L1 it fits
}
