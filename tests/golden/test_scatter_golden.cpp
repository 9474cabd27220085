// Scatter kernels (Family::Scatter; docs/semantics.md, "Scatters"): a float32 index_add is one kernel on the
// sorted path, whose text is the golden file; the kernels of every path and dtype, int32 and int64 indices,
// checked and clamped, compile with NVRTC for sm_90 (no GPU needed); the plan's columns, strides, workspace
// and explain text.
#include <loom/loom.hpp>

#include "golden_util.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

codegen::FusionPlan plan_of(const Array& y) {
    return gpu::plan_bound(ir::run_pipeline({y.node()}, ir::standard_passes()), codegen::DeviceInfo::h200(),
                           {}, "", nullptr, {});
}

std::vector<codegen::KernelSource> compile_plan(const Array& y, bool compile = true) {
    std::vector<codegen::KernelSource> sources = gpu::emit_kernels(plan_of(y));
    REQUIRE(!sources.empty());
    if (compile)
        for (const codegen::KernelSource& ks : sources) golden::compile_sm90(ks);
    return sources;
}

}  // namespace

TEST_CASE("golden: a float32 index_add is one kernel on the sorted path") {
    const Tensor x = Tensor::host({1000, 64}, float32), src = Tensor::host({5000, 64}, float32);
    const Tensor index = Tensor::host({5000}, int64);
    const auto ks = compile_plan(index_add(x, index, src, 0));
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].kernel.find("lm::scatter::scatter_kernel<1, float, float, long long, true>(p);") !=
          std::string::npos);
    golden::check_text("sr1_index_add_sorted_f32", ks[0].kernel);
}

TEST_CASE("golden: the scatter kernel of every path, dtype and index mode compiles") {
    // About a second of NVRTC each: the sorted path on every dtype, the last-wins and atomic paths on a few,
    // int32 indices and clamp mode on some.
    int k = 0;
    for (DType t : kAllDTypes) {
        CAPTURE(name(t));
        const Tensor x = Tensor::host({7, 3}, t), v = Tensor::host({40, 3}, t);
        const DType it = k % 2 ? int32 : int64;
        const ScatterOptions o{.mode = k % 3 == 0 ? IndexMode::Clamp : IndexMode::Checked};
        const Tensor idx = Tensor::host({40, 3}, it);
        const auto add = compile_plan(scatter_add(x, idx, v, 0, o));
        REQUIRE(add.size() == 1);
        CHECK(add[0].kernel.find("lm::scatter::scatter_kernel<1, ") != std::string::npos);
        if (k % 3 == 1) {
            const auto put = compile_plan(scatter(x, idx, v, 0, o.mode));
            CHECK(put[0].kernel.find("lm::scatter::scatter_kernel<0, ") != std::string::npos);
        }
        if (t == float32 || t == float64) {
            const auto atomic = compile_plan(scatter_add(x, idx, v, 0, {.atomic = true, .mode = o.mode}));
            CHECK(atomic[0].kernel.find("lm::scatter::scatter_kernel<2, ") != std::string::npos);
        }
        ++k;
    }
}

TEST_CASE("golden: the scatter plan's columns, strides, workspace and explain text") {
    // Axis 1 of x [4, 50, 6] (contiguous), values [4, 300, 6] read through a permuted view, index [300, 1]
    // broadcast: the columns are the axes of 4 and 6, which merge in x and the result (strides 300 and 1) but
    // not in the values' view, so they stay two.
    const Tensor x = Tensor::host({4, 50, 6}, float32), v = Tensor::host({6, 300, 4}, float32);
    const Tensor idx = Tensor::host({300, 1}, int32);
    const codegen::FusionPlan p = plan_of(scatter_add(x, idx, v.permute({2, 1, 0}), 1));
    REQUIRE(p.kernels.size() == 1);
    const auto& s = std::get<codegen::PlannedScatter>(p.kernels[0].schedule);
    CHECK(s.plan.path == codegen::ScatterPath::Sorted);
    CHECK(s.extent == 50);
    CHECK(s.length == 300);
    CHECK(s.col_extents == std::vector<std::int64_t>{4, 6});
    CHECK(s.col_strides[0] == std::vector<std::int64_t>{300, 1});
    CHECK(s.col_strides[2] == std::vector<std::int64_t>{1, 1200});
    CHECK(s.col_strides[1] == std::vector<std::int64_t>{0, 0});  // the index broadcast over the columns
    CHECK(s.step[0] == 6);
    CHECK(s.step[1] == 1);
    CHECK(s.step[2] == 4);
    CHECK(s.columns() == 24);
    CHECK(s.blocks() == 24);
    CHECK(s.work_words() == 3 * 50 + 1 + 2 * 300 + 2 + 50);
    const std::string text = p.to_string();
    CHECK(text.find("scatter_add") != std::string::npos);
    CHECK(text.find("sorted") != std::string::npos);
    // scatter: the last-wins path, a word per target; atomic float64: no workspace; int8's accumulator.
    const Tensor x8 = Tensor::host({9}, int8), v8 = Tensor::host({20}, int8), i8 = Tensor::host({20}, int64);
    const codegen::FusionPlan p_last = plan_of(scatter(x8, i8, v8, 0));
    const auto& last = std::get<codegen::PlannedScatter>(p_last.kernels[0].schedule);
    CHECK(last.plan.path == codegen::ScatterPath::Last);
    CHECK(last.work_words() == 9);
    const codegen::FusionPlan p_sorted8 = plan_of(scatter_add(x8, i8, v8, 0, {.atomic = true}));
    const auto& sorted8 = std::get<codegen::PlannedScatter>(p_sorted8.kernels[0].schedule);
    CHECK(sorted8.plan.path == codegen::ScatterPath::Sorted);  // no atomicAdd on int8: the deterministic path
    CHECK(sorted8.plan.acc == int64);
    const Tensor xd = Tensor::host({9}, float64), vd = Tensor::host({20}, float64);
    const codegen::FusionPlan p_atomic = plan_of(scatter_add(xd, i8, vd, 0, {.atomic = true}));
    const auto& atomic = std::get<codegen::PlannedScatter>(p_atomic.kernels[0].schedule);
    CHECK(atomic.plan.path == codegen::ScatterPath::Atomic);
    CHECK(atomic.work_words() == 0);
    // Many columns with a large workspace each: fewer blocks, within the budget (each takes columns in turn).
    // (The values a broadcast row: nothing that large is allocated.)
    const Tensor xw = Tensor::host({16, 4096}, float32), row = Tensor::host({1, 4096}, float32);
    const Array vw = broadcast_to(Array(row), {1 << 18, 4096});
    const Tensor iw = Tensor::host({1 << 18}, int64);
    const codegen::FusionPlan p_wide = plan_of(index_add(xw, iw, vw, 0));
    const auto& wide = std::get<codegen::PlannedScatter>(p_wide.kernels[0].schedule);
    CHECK(wide.columns() == 4096);
    CHECK(wide.blocks() == codegen::kScatterWorkspaceBudget / (8 * wide.work_words()));
    CHECK(wide.blocks() < 300);
    CHECK(wide.blocks() * 8 * wide.work_words() <= codegen::kScatterWorkspaceBudget);
    // An elementwise producer and consumer are kernels of their own.
    const auto ks = compile_plan(scatter_add(Array(x) * 2.0, idx, v.permute({2, 1, 0}), 1) + 1.0, false);
    CHECK(ks.size() == 3);
}
