// Golden tests of the tiled emitter (tile_plan.hpp): a tiled f32 transpose, a bf16 permute that moves the
// fastest axis, the 5-point and the 7-point stencils; each compared as text and compiled with NVRTC for
// sm_90.
#include "golden_util.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/cuda/tile_plan.hpp"
#include "loom/ir/build.hpp"

using namespace loom;
using namespace loom::ir;
using loom::codegen::TileKind;

namespace {

NodePtr sc(double v, DType t = float32) {
    return scalar(make_scalar_value(v, t, "test", Loc::current()), t);
}

// Plans with contiguous layouts on the H200, checks that a tile was taken, compares the text and compiles it.
codegen::PlannedTile run_tile(const std::string& name, const std::vector<NodePtr>& outs, TileKind kind,
                              StencilReuse reuse = StencilReuse::Auto) {
    const auto dev = codegen::DeviceInfo::h200();
    const auto pw = codegen::plan_pointwise(outs, golden::contiguous_layouts(outs), dev.plan_target());
    auto tile = codegen::plan_tile(outs, pw, dev, {}, reuse);
    REQUIRE(tile.plan.kind == kind);
    const auto ks = codegen::emit_tile(name, outs, pw.plan, tile.plan);
    golden::check_text(name, ks.kernel);
    golden::compile_sm90(ks);
    CHECK(ks.scalar_entry == name + "_tile");
    CHECK(ks.vector_entry.empty() == (tile.plan.vector_width == 1));
    return tile;
}

NodePtr shifted(const NodePtr& x, std::vector<std::pair<std::int64_t, std::int64_t>> ranges) {
    std::vector<SliceSpec> specs;
    for (auto [b, e] : ranges) specs.push_back(SliceSpec{b, e, 1});
    return slice(x, specs);
}

TEST_CASE("golden: tiled transpose, float32 16384 x 16384") {
    auto x = input(float32, {16384, 16384}, "x");
    const auto t =
        run_tile("tiled_transpose_f32", {binary(Op::Add, transpose(x), sc(0.0))}, TileKind::Transpose);
    CHECK(t.plan.dim_a == 0);
    CHECK(t.plan.tile_rows == 64);
    CHECK(t.plan.tile_cols == 64);
    REQUIRE(t.plan.staged.size() == 1);
    CHECK(t.plan.staged[0].pitch == 65);  // 65 words per row: odd, so a warp's column reads hit 32 banks
    CHECK(t.plan.vector_width == 4);  // and the vector variant: 16-byte loads of x and stores of the result
}

TEST_CASE("golden: bf16 permute (0, 2, 3, 1) with a per-column bias, tiled") {
    auto x = input(bfloat16, {8, 64, 16, 128}, "x");
    auto bias = input(bfloat16, {64}, "bias");
    auto y = binary(Op::Add, permute(x, {0, 2, 3, 1}), bias);  // [8, 16, 128, 64] + bias[j]
    const auto t = run_tile("tiled_permute_bf16", {y}, TileKind::Transpose);
    REQUIRE(t.plan.staged.size() == 1);
    CHECK(t.plan.staged[0].pitch ==
          130);                       // 128 rows of 2-byte elements two to a word, padded to 65 words (odd)
    CHECK(t.plan.vector_width == 8);  // 16-byte vectors of 8
}

NodePtr five_point(const NodePtr& x) {
    auto up = shifted(x, {{0, -2}, {1, -1}}), down = shifted(x, {{2, SliceSpec::kNone}, {1, -1}});
    auto left = shifted(x, {{1, -1}, {0, -2}}), right = shifted(x, {{1, -1}, {2, SliceSpec::kNone}});
    return binary(Op::Mul, sc(0.25),
                  binary(Op::Add, binary(Op::Add, binary(Op::Add, up, down), left), right));
}

NodePtr seven_point(const NodePtr& x) {
    const std::int64_t N = SliceSpec::kNone;
    auto sum = shifted(x, {{1, -1}, {1, -1}, {1, -1}});
    for (auto r : {std::vector<std::pair<std::int64_t, std::int64_t>>{{0, -2}, {1, -1}, {1, -1}},
                   {{2, N}, {1, -1}, {1, -1}},
                   {{1, -1}, {0, -2}, {1, -1}},
                   {{1, -1}, {2, N}, {1, -1}},
                   {{1, -1}, {1, -1}, {0, -2}},
                   {{1, -1}, {1, -1}, {2, N}}})
        sum = binary(Op::Add, sum, shifted(x, r));
    return binary(Op::Mul, sum, sc(1.0 / 7.0));
}

}  // namespace

TEST_CASE("golden: 5-point stencil from slices") {
    auto x = input(float32, {4096, 4096}, "x");
    const auto t = run_tile("stencil5_2d", {five_point(x)}, TileKind::Stencil);
    REQUIRE(t.plan.stencils.size() == 1);
    CHECK(t.plan.stencils[0].sites.size() == 4);
    CHECK(t.plan.stencils[0].halo_hi[0] - t.plan.stencils[0].halo_lo[0] == 2);
    CHECK(t.plan.stencils[0].halo_hi[1] - t.plan.stencils[0].halo_lo[1] == 2);
    CHECK(t.plan.staged.empty());
}

TEST_CASE("golden: 7-point 3-D stencil from slices") {
    auto x = input(float32, {256, 256, 256}, "x");
    const auto t = run_tile("stencil7_3d", {seven_point(x)}, TileKind::Stencil);
    REQUIRE(t.plan.stencils.size() == 1);
    CHECK(t.plan.stencils[0].sites.size() == 7);
    CHECK(t.plan.dim_a == 1);
}

TEST_CASE("golden: 5-point stencil with its taps in a shared halo tile") {
    auto x = input(float32, {4096, 4096}, "x");
    const auto t = run_tile("stencil5_2d_halo", {five_point(x)}, TileKind::Stencil, StencilReuse::SharedHalo);
    REQUIRE(t.plan.halos.size() == 1);
    const auto& h = t.plan.halos[0];
    CHECK(h.sites.size() == 4);
    CHECK(h.rows == t.plan.tile_rows + 2);   // shifts 0..2 along the rows from the first tap (up)
    CHECK(h.pitch == t.plan.tile_cols + 2);  // and -1..1 along the columns
    CHECK(h.lo_b == -1);
}

TEST_CASE("golden: 7-point 3-D stencil, five taps of the plane in a shared halo tile, two from L1") {
    auto x = input(float32, {256, 256, 256}, "x");
    const auto t =
        run_tile("stencil7_3d_halo", {seven_point(x)}, TileKind::Stencil, StencilReuse::SharedHalo);
    REQUIRE(t.plan.halos.size() == 1);
    CHECK(t.plan.halos[0].sites.size() == 5);  // the centre and its four neighbours in the plane
    CHECK(
        t.plan
            .to_string(codegen::plan_pointwise({seven_point(x)}, golden::contiguous_layouts({seven_point(x)}),
                                               codegen::DeviceInfo::h200().plan_target())
                           .plan)
            .find("5 taps read from the shared halo tile below, 2 (shifted along an outer dimension) from "
                  "L1") != std::string::npos);
}
