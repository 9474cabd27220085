// Golden tests of the vector variant of pointwise gathers: where a gather's position is the same in every
// lane of a vector (nothing in its index's cone moves along the last dimension: an embedding lookup's row
// ids), the vector variant computes it once per vector and reads the W elements of the gathered row in one
// load (G1 at its benchmark size, compared as text); the vector width is that of the widest dtype streamed;
// the gathers that cannot (a row not a whole number of vectors, rows off vector boundaries, a misaligned
// input, positions that move along the row) keep the scalar variant alone; a reduction's gathers stay element
// by element. Every kernel compiles with NVRTC for sm_90 (no GPU needed).
#include <loom/loom.hpp>

#include "golden_util.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

Tensor ids_of(const Shape& s, DType t, std::int64_t extent, std::uint64_t seed) {
    return testing::random_tensor(s, t, seed, testing::Random::uniform(0.0, static_cast<double>(extent - 1)));
}

/// The GPU plan of evaluating `arrays` on the H200 (the standard passes, the tensors' own layouts).
codegen::FusionPlan plan_of(const std::vector<Array>& arrays) {
    std::vector<ir::NodePtr> roots;
    for (const Array& a : arrays) roots.push_back(a.node());
    return gpu::plan_bound(ir::run_pipeline(roots, ir::standard_passes()), codegen::DeviceInfo::h200(),
                           Options{}, "", nullptr, {});
}

/// The plan of the one pointwise kernel of evaluating `y`; its kernel compiles with NVRTC.
codegen::PointwisePlan pointwise_plan_of(const Array& y) {
    const codegen::FusionPlan plan = plan_of({y});
    REQUIRE(plan.kernels.size() == 1);
    REQUIRE(plan.kernels[0].family() == codegen::Family::Pointwise);
    for (const codegen::KernelSource& ks : gpu::emit_kernels(plan)) golden::compile_sm90(ks);
    return plan.kernels[0].as<codegen::PointwiseKernel>().planned.plan;
}

/// Whether the plan has a vector variant that computes every gather's position once per vector.
bool gathers_per_vector(const codegen::PointwisePlan& p) {
    return p.gathers_per_vector();
}

}  // namespace

TEST_CASE("golden: G1 take(table, ids, 0), positions once per vector, a row's 4 elements in one load") {
    const Array table(ir::input(float32, {std::int64_t{1} << 20, 256}, "table"));
    const Array ids(ir::input(int64, {65536}, "ids"));
    const codegen::KernelSource ks = golden::run("g1_embedding_lookup", {take(table, ids, 0).node()});
    const codegen::PointwisePlan& p = ks.plan;
    CHECK(p.vector_width == 4);
    CHECK(!p.vector_flat);
    CHECK(p.index == codegen::IndexWidth::I32);
    REQUIRE(p.gathers.size() == 1);
    CHECK(p.gathers_per_vector());
    CHECK(p.gathers[0].mode == IndexMode::Checked);
    REQUIRE(p.loads.size() == 2);
    CHECK(p.loads[0].access == codegen::Access::Strided);  // the ids: one a row, the same in every lane
    CHECK(p.loads[0].dim_mask == 1u);
    CHECK(p.loads[1].access == codegen::Access::Indirect);  // the table: along the row at unit stride
    CHECK(p.loads[1].unit_inner);
    CHECK(ks.vector_entry == "g1_embedding_lookup_v4");
    CHECK(p.to_string().find("computed once per vector of 4 elements") != std::string::npos);
    // The explain text says so too.
    const std::string explained = golden::plan_gpu({take(table, ids, 0).node()}).to_string();
    CHECK_MESSAGE(explained.find("vector width 4 (gathers: positions once per vector") != std::string::npos,
                  explained);
}

TEST_CASE("golden: a bfloat16 lookup scaled and shifted by a row: 8 lanes, the epilogue in the same body") {
    const Array table(ir::input(bfloat16, {32000, 512}, "table"));
    const Array ids(ir::input(int32, {4096}, "ids"));
    const Array pos(ir::input(bfloat16, {512}, "pos"));
    const Array y = take(table, ids, 0, IndexMode::Clamp) * 2.0f + pos;
    const codegen::KernelSource ks = golden::run("g1_lookup_scale_shift_bf16", {y.node()});
    CHECK(ks.plan.vector_width == 8);
    CHECK(gathers_per_vector(ks.plan));
}

TEST_CASE("golden: a gathered row's vector is 16 bytes of the widest dtype streamed") {
    struct Case {
        DType table, ids;
        int width;
    };
    for (const Case c :
         {Case{int8, int64, 16}, Case{bfloat16, int32, 8}, Case{float16, int64, 8}, Case{float32, int32, 4},
          Case{float64, int32, 2}, Case{int32, int64, 4}, Case{bool_, int32, 16}}) {
        CAPTURE(name(c.table));
        const Tensor t = testing::random_tensor({300, 64}, c.table, 1);
        const Tensor ids = ids_of({40}, c.ids, 300, 2);
        for (IndexMode mode : {IndexMode::Checked, IndexMode::Clamp}) {
            const codegen::PointwisePlan p = pointwise_plan_of(take(t, ids, 0, mode));
            CHECK(p.vector_width == c.width);
            CHECK(gathers_per_vector(p));
        }
    }
    // An int8 table widened to float64: vectors of 2 (the output's 16 bytes), 2 bytes of the row per load.
    const Tensor t8 = testing::random_tensor({300, 64}, int8, 3);
    const codegen::PointwisePlan p =
        pointwise_plan_of(take(t8, ids_of({40}, int64, 300, 4), 0).astype(float64));
    CHECK(p.vector_width == 2);
    CHECK(gathers_per_vector(p));
}

TEST_CASE("golden: gathers without a vector variant: rows not of whole vectors or off their boundaries") {
    const Tensor ids = ids_of({40}, int64, 300, 5);
    // Rows of 255 elements are no whole number of vectors.
    const codegen::PointwisePlan ragged =
        pointwise_plan_of(take(testing::random_tensor({300, 255}, float32, 6), ids, 0));
    CHECK(ragged.vector_width == 1);
    REQUIRE(!ragged.gathers.empty());
    CHECK(!ragged.gathers_per_vector());
    // Rows that start one element past a 16-byte boundary (a slice from column 1), as a tensor view and as a
    // slice in the graph; from column 4 they lie on boundaries again.
    const Tensor wide = testing::random_tensor({300, 260}, float32, 7);
    CHECK(pointwise_plan_of(take(wide.slice({{0, 300}, {1, 257}}), ids, 0)).vector_width == 1);
    CHECK(pointwise_plan_of(take(Array(wide).slice({{0, 300}, {1, 257}}), ids, 0)).vector_width == 1);
    CHECK(pointwise_plan_of(take(Array(wide).slice({{0, 300}, {4, 260}}), ids, 0)).vector_width == 4);
    // Rows 65 elements apart (the first 64 columns of a [300, 65] table): a row starts on a vector
    // boundary for some ids only.
    const Array odd = Array(testing::random_tensor({300, 65}, float32, 8)).slice({{0, 300}, {0, 64}});
    CHECK(pointwise_plan_of(take(odd, ids, 0)).vector_width == 1);
    // A table whose data is not 16-byte aligned.
    const Array table(ir::input(float32, {300, 64}, "table"));
    const Array idx(ir::input(int64, {40}, "ids"));
    const codegen::FusionPlan misaligned = golden::plan_gpu({take(table, idx, 0).node()}, Options{}, false);
    CHECK(misaligned.kernels.at(0).as<codegen::PointwiseKernel>().planned.plan.vector_width == 1);
}

TEST_CASE("golden: gathers without a vector variant: positions that move along the row") {
    const Tensor x = testing::random_tensor({64, 256}, float32, 9);
    // take along the last axis, take_along_axis along it, and one element per row (x[i, label[i]], a
    // cross-entropy's read): each lane of a vector has a position of its own.
    const codegen::PointwisePlan along = pointwise_plan_of(take(x, ids_of({128}, int32, 256, 10), 1));
    CHECK(along.vector_width == 1);
    REQUIRE(!along.gathers.empty());
    CHECK(!along.gathers_per_vector());
    CHECK(pointwise_plan_of(take_along_axis(x, ids_of({64, 256}, int64, 256, 11), 1)).vector_width == 1);
    CHECK(pointwise_plan_of(take_along_axis(x, ids_of({64, 1}, int64, 256, 12), 1)).vector_width == 1);
    // A position on an axis of extent 1 that no site reads at (its coefficient drops out), from an index that
    // moves along the row: no vector variant either, where one once computed the position once per vector
    // from lane 0 and the emitter refused it (an internal error the fuzzer found).
    const codegen::PointwisePlan flat = pointwise_plan_of(take_along_axis(
        testing::random_tensor({256, 1}, float32, 28), ids_of({256, 1}, int32, 1, 29), 1, IndexMode::Clamp));
    CHECK(flat.vector_width == 1);
    CHECK(!flat.gathers_per_vector());
    // A row id computed from an iota moves along the row when the iota is of the last axis, not when it is of
    // the first: the whole cone of the index counts.
    const Array table(testing::random_tensor({600, 256}, float32, 13));
    const Array base = broadcast_to(Array(ids_of({64, 1}, int64, 300, 14)), {64, 256});
    const Array along_row = arange(256, int64).broadcast_to({64, 256});
    const Array along_column = arange(64, int64).reshape({64, 1}).broadcast_to({64, 256});
    CHECK(pointwise_plan_of(take_along_axis(table, base + along_row, 0)).vector_width == 1);
    CHECK(pointwise_plan_of(take_along_axis(table, base + along_column, 0)).vector_width == 4);
    const codegen::FusionPlan plan = plan_of({take(x, ids_of({128}, int32, 256, 15), 1)});
    const std::vector<codegen::KernelSource> ks = gpu::emit_kernels(plan);
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].vector_entry.empty());
    CHECK(ks[0].kernel.find("_vector_body(") == std::string::npos);
}

TEST_CASE("golden: broadcast indices, positions shared by a row, nested gathers and one_hot run vectorized") {
    const Tensor table = testing::random_tensor({300, 64}, float32, 16);
    // One index for the whole output (a rank-0 index): its row is the output.
    const codegen::PointwisePlan single = pointwise_plan_of(take(table, ids_of({}, int64, 300, 17), 0));
    CHECK(single.vector_width == 4);
    CHECK(gathers_per_vector(single));
    // Indices broadcast over a leading axis: each still names one row per vector.
    const Array shared = broadcast_to(Array(ids_of({1, 40}, int32, 300, 18)), {3, 40});
    const codegen::PointwisePlan lead = pointwise_plan_of(take(table, shared, 0) * 2.0f + 1.0f);
    CHECK(lead.vector_width == 4);
    CHECK(gathers_per_vector(lead));
    // One element per row (take_along_axis with one index a row), broadcast along the row it is subtracted
    // from: loaded once per vector, the same in every lane.
    const Tensor x = testing::random_tensor({64, 256}, float32, 19);
    const Array picked = take_along_axis(x, ids_of({64, 1}, int64, 256, 20), 1);
    const codegen::PointwisePlan row = pointwise_plan_of(Array(x) - broadcast_to(picked, {64, 256}));
    CHECK(row.vector_width == 4);
    CHECK(gathers_per_vector(row));
    bool once = false;
    for (const codegen::OperandPlan& o : row.loads)
        once = once || (o.access == codegen::Access::Indirect && (o.dim_mask & 2u) == 0);
    CHECK(once);
    // A gathered index (rows looked up through a map of ids) and one_hot of 16 classes (an index, no load).
    const Tensor map = ids_of({500}, int32, 300, 21);
    CHECK(gathers_per_vector(pointwise_plan_of(take(table, take(map, ids_of({40}, int64, 500, 22), 0), 0))));
    CHECK(gathers_per_vector(pointwise_plan_of(one_hot(ids_of({40}, int32, 16, 23), 16, float32))));
}

TEST_CASE(
    "golden: layernorm(take(table, ids, 0)) stays one reduction kernel, its gathers element by element") {
    const Tensor table = testing::random_tensor({500, 256}, float32, 24);
    const Tensor w = testing::random_tensor({256}, float32, 25),
                 b = testing::random_tensor({256}, float32, 26);
    const codegen::FusionPlan plan =
        plan_of({layernorm(take(table, ids_of({64}, int64, 500, 27), 0), w, b, 1e-5)});
    REQUIRE(plan.kernels.size() == 1);
    CHECK(plan.kernels[0].family() == codegen::Family::Reduction);
    const codegen::PointwisePlan& element = plan.kernels[0].as<codegen::PlannedReduce>().plan.element;
    REQUIRE(element.gathers.size() == 1);
    CHECK(!element.gathers_per_vector());
    CHECK(element.vector_width == 1);
}
