// How graphs with reductions are partitioned and planned, without a GPU: one kernel for a fused
// normalization, the boundaries and materialized values of graphs that need several, the strict fallback,
// and the plans the schedules choose. Read from the fusion plan's fields (codegen::FusionPlan); one test
// keeps the explain text.
#include <doctest/doctest.h>

#include <loom/loom.hpp>
#include <string>

#include "../common/gpu_explain.hpp"
#include "../common/needs_cuda.hpp"
#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"

using namespace loom;
using codegen::Family;
using codegen::Slot;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

/// The plan the GPU path makes for `arrays` (the H200 without a GPU).
codegen::FusionPlan plan_of(const std::vector<Array>& arrays) {
    std::vector<ir::NodePtr> roots;
    for (const Array& a : arrays) roots.push_back(a.node());
    return gpu::plan_bound(ir::run_pipeline(roots, ir::standard_passes()), gpu::planning_device(), Options{},
                           "", nullptr);
}

const codegen::ReducePlan& reduce_plan(const codegen::FusionPlan& p, std::size_t k) {
    REQUIRE(p.partition.kernels.at(k).family == Family::Reduction);
    return p.kernels.at(k).as<codegen::PlannedReduce>().plan;
}

}  // namespace

TEST_CASE("reduce partition: softmax, layernorm and rmsnorm written by hand are one kernel each") {
    Tensor x = Tensor::host({64, 4096}, float32), w = Tensor::host({4096}, float32),
           b = Tensor::host({4096}, float32);
    const Array X(x), W(w), B(b);
    const Array e = exp(X - max(X, -1, true));
    const codegen::FusionPlan sm = plan_of({e / sum(e, -1, true)});
    REQUIRE(sm.partition.kernels.size() == 1);
    const codegen::FusedKernel& k = sm.partition.kernels[0];
    CHECK(k.family == Family::Reduction);
    REQUIRE(k.members.size() == 2);
    CHECK(k.members[0]->op() == ir::Op::Max);
    CHECK(k.members[1]->op() == ir::Op::Sum);
    CHECK(reduce_plan(sm, 0).ops[1].stage == 1);
    CHECK(k.group.element_outputs.size() == 1);
    CHECK(k.writes == std::vector<Slot>{{Slot::Kind::Root, 0}});
    CHECK(sm.partition.temps.empty());
    CHECK(reduce_plan(sm, 0).cached_blocks > 0);  // the row is held in registers
    const Array d = X - mean(X, -1, true);
    CHECK(plan_of({d * rsqrt(mean(d * d, -1, true) + 1e-5) * W + B}).partition.kernels.size() == 1);
    CHECK(plan_of({X * rsqrt(mean(X * X, -1, true) + 1e-6) * W}).partition.kernels.size() == 1);
    CHECK(plan_of({layernorm(X, W, B, 1e-5)}).partition.kernels.size() == 1);
}

TEST_CASE("reduce partition: a prologue, an epilogue and several reductions of one operand share a kernel") {
    Tensor x = Tensor::host({300, 1000}, float32);
    const Array X(x);
    const codegen::FusionPlan plan = plan_of({sum(X * X, 1), max(X, 1), sqrt(mean(X * X, 1)) + 1.0});
    REQUIRE(plan.partition.kernels.size() == 1);
    CHECK(plan.partition.kernels[0].group.row_outputs.size() == 3);
    CHECK(plan.partition.kernels[0].writes ==
          std::vector<Slot>{{Slot::Kind::Root, 0}, {Slot::Kind::Root, 1}, {Slot::Kind::Root, 2}});
    CHECK(reduce_plan(plan, 0).schedule == codegen::ReduceSchedule::Inner);
    CHECK(reduce_plan(plan, 0).group == 32);  // rows of 1000: a warp per row
    const codegen::FusionPlan cols = plan_of({sum(X, 0), argmax(X, 0)});
    REQUIRE(cols.partition.kernels.size() == 1);
    CHECK(reduce_plan(cols, 0).schedule == codegen::ReduceSchedule::Outer);
}

TEST_CASE("reduce partition: boundaries are explained and reduced values are materialized where needed") {
    Tensor x = Tensor::host({128, 512}, float32);
    const Array X(x);
    // A full mean read back at every element: the mean's kernel writes a temporary, a pointwise kernel reads
    // it.
    const codegen::FusionPlan centered = plan_of({X - mean(X)});
    REQUIRE(centered.partition.kernels.size() == 2);
    REQUIRE(centered.partition.temps.size() == 1);
    CHECK(centered.partition.temps[0].value->op() == ir::Op::Mean);
    CHECK(centered.partition.kernels[0].writes == std::vector<Slot>{{Slot::Kind::Temp, 0}});
    CHECK(centered.partition.kernels[1].family == Family::Pointwise);
    CHECK(centered.partition.kernels[1].outputs[0]->shape() == Shape{128, 512});
    CHECK(centered.kernels[1].reads == std::vector<Slot>{{Slot::Kind::Source, 0}, {Slot::Kind::Temp, 0}});
    CHECK(centered.temps[0].dtype == float32);
    CHECK(centered.temp_bytes == 256);  // one float, in a 256-byte slot
    // Reductions over different axes: two kernels, the second reads the first's value.
    const codegen::FusionPlan two = plan_of({sum(X - mean(X, 0, true), 1)});
    REQUIRE(two.partition.kernels.size() == 2);
    CHECK(contains(two.partition.temps.at(0).why, "read by sum"));
    CHECK(contains(two.partition.kernels[1].why, "reads reduced values of another kernel"));
    // A reduced value read at another row (reversed): not fusable, so every reduction gets its own kernel.
    const Array m = sum(X, 1, true);
    const Array reversed = m.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, -1}});
    const codegen::FusionPlan strict = plan_of({X * reversed});
    CHECK(contains(strict.partition.note, "one kernel per reduction"));
    CHECK(strict.partition.kernels.size() == 2);
}

TEST_CASE("reduce partition: the explain text of a plan") {
    Tensor x = Tensor::host({128, 512}, float32);
    const Array X(x);
    // One row of 65,536 elements read back at every element: too few rows for one pass per stage, so the
    // mean runs as a split kernel of its own into a temporary, and a pointwise kernel reads it.
    const std::string centered = loom_test::gpu_explain({X - mean(X)});
    CHECK(contains(
        centered,
        "plan     one kernel per reduction: 1 rows of 65536 elements are too few to fill the device"));
    CHECK(contains(
        centered,
        "kernel 0  mean_0   reduction of [128, 512] over axes [0, 1]: mean (test_reduce_partition.cpp:"));
    CHECK(contains(
        centered, "schedule inner, 256 threads per block, 256 threads per row, split over 8 blocks per row"));
    CHECK(contains(centered, "0 element output(s), 1 row output(s); one launch"));
    CHECK(contains(centered, "materialize t0 = mean (test_reduce_partition.cpp:"));
    CHECK(contains(centered,
                   "kernel 1  pointwise_1   pointwise [128, 512]: broadcast_to (test_reduce_partition.cpp:"));
    CHECK(contains(centered,
                   "reads input [128, 512] float32 [in0], t0 (mean) [] float32 [t0]; writes out0; vector "
                   "width 4; 1 launch"));
    CHECK(contains(centered,
                   "boundary  kernel 1: results of shape [128, 512] read reduced values of other kernels"));
    const std::string fused = loom_test::gpu_explain({sum(X, 1), max(X, 1)});
    CHECK(contains(fused, "boundary  kernel 0: first reduction of its operand shape and axes"));
}

TEST_CASE("reduce partition: split plans for few long rows, the generated CUDA compiles" *
          loom_test::needs_cuda()) {
    Tensor x = Tensor::host({1 << 22}, float32);
    const codegen::FusionPlan plan = plan_of({sum(Array(x))});
    REQUIRE(plan.partition.kernels.size() == 1);  // a split reduction is one launch, not two
    CHECK(reduce_plan(plan, 0).split);
    // Inner splits run one wave of 2 blocks per SM (264 on the H200 the plans are made for), whose balanced
    // chunk ranges need not be powers of two: 512 chunks go to 264 blocks.
    CHECK(plan.kernels[0].as<codegen::PlannedReduce>().binding.blocks_per_row == 264);
    CHECK(contains(
        loom_test::gpu_explain({sum(Array(x))}),
        "split over 264 blocks per row (balanced chunk ranges in full waves; groups of 256 chunk partials"));
    // Three rows share the wave: 88 blocks each; fewer chunks than the share: a block per chunk.
    Tensor three = Tensor::host({3, 1 << 22}, float32);
    CHECK(plan_of({sum(Array(three), 1)}).kernels[0].as<codegen::PlannedReduce>().binding.blocks_per_row ==
          88);
    Tensor shortrows = Tensor::host({3, 5 * 8192}, float32);
    CHECK(
        plan_of({max(Array(shortrows), 1)}).kernels[0].as<codegen::PlannedReduce>().binding.blocks_per_row ==
        5);
    // Rows that do not divide the wave: nearly full waves of smaller ranges instead of one part-filled wave
    // (200 rows on 264 slots: 13 blocks each, 2600 blocks in 10 waves, 1.5% above the ideal).
    Tensor many = Tensor::host({200, 1 << 22}, float32);
    CHECK(plan_of({sum(Array(many), 1)}).kernels[0].as<codegen::PlannedReduce>().binding.blocks_per_row ==
          13);
    CHECK(codegen::split_blocks_per_row(1, 32768, 264) == 264);
    CHECK(codegen::split_blocks_per_row(3, 512, 264) == 88);
    CHECK(codegen::split_blocks_per_row(7, 301, 264) == 37);    // 259 of 264 slots: within 2%
    CHECK(codegen::split_blocks_per_row(100, 301, 264) == 13);  // 1300 blocks: 5 waves less 20 blocks
    CHECK(codegen::split_blocks_per_row(131, 301, 264) == 2);   // 262 of 264 slots
    CHECK(codegen::split_blocks_per_row(263, 512, 264) == 1);   // one wave already: no split
    CHECK(codegen::split_blocks_per_row(200, 512, 264) == 13);
    CHECK(codegen::split_blocks_per_row(200, 5, 264) ==
          5);  // few chunks: the best there is, 1000 blocks in 4 waves
    Tensor c = Tensor::host({4096, 1024}, float32);
    const codegen::FusionPlan col = plan_of({sum(Array(c), 0)});
    CHECK(reduce_plan(col, 0).schedule == codegen::ReduceSchedule::Outer);
    CHECK(reduce_plan(col, 0).block == 256);
    // Outer splits aim at 2 blocks per SM (132 on the H200): 1024 columns are one block of outputs, 512
    // chunks of 256 rows go 2 to a block, so 256 blocks.
    Tensor row = Tensor::host({1024}, float32);
    CHECK(plan_of({sum(Array(row).broadcast_to({131072, 1024}), 0)})
              .kernels[0]
              .as<codegen::PlannedReduce>()
              .binding.blocks_per_row == 256);
    const auto rep = compile({sum(Array(x) * 2.0)}, "split_sum");
    CHECK(rep.kernels == 1);
    // Few long rows with a normalization: too few rows for one pass per stage, so one kernel per
    // reduction (split) and a pointwise kernel.
    Tensor y = Tensor::host({2, 1 << 16}, float32);
    const Array Y(y);
    const Array e = exp(Y - max(Y, -1, true));
    const codegen::FusionPlan few = plan_of({e / sum(e, -1, true)});
    CHECK(contains(few.partition.note, "one kernel per reduction"));
    REQUIRE(few.partition.kernels.size() == 3);
    CHECK(few.partition.kernels[2].family == Family::Pointwise);
    // Every reduction op and accumulator type in a split kernel (chunk partials, group trees, the row's
    // windows): the generated CUDA compiles.
    for (DType d : kAllDTypes) {
        CAPTURE(name(d));
        Tensor t = Tensor::host({3, 5 * 8192 + 3}, d);
        const Array T(t);
        std::vector<Array> ys{sum(T, 1),    max(T, 1), min(T, 1), argmax(T, 1),
                              argmin(T, 1), any(T, 1), all(T, 1)};
        if (d != bool_) ys.push_back(mean(T, 1));
        for (const Array& yv : ys) {
            CHECK(plan_of({yv}).kernels[0].as<codegen::PlannedReduce>().binding.blocks_per_row ==
                  6);  // 6 chunks, the last one of 3 elements
            CHECK(compile({yv}, "split_" + std::string(name(d))).kernels == 1);
        }
    }
}
