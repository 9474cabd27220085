// Golden tests of once outputs (GpuKernel::once): a rank-0 pointwise kernel merged into a data-sized one, whose
// last block to finish stores it; an Adam step with its step counter is then one kernel. Compared as text and
// compiled with NVRTC for sm_90; and the plans where a rank-0 kernel stays on its own.
#include "golden_util.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/ir/build.hpp"
#include "loom/runtime/gpu_executor.hpp"

using namespace loom;
using namespace loom::ir;

namespace {
NodePtr sc(double v, DType t = float32) { return scalar(make_scalar_value(v, t, "test", Loc::current()), t); }
}  // namespace
namespace {
// One Adam step with its step counter as roots: (p, m, v) over n elements and t + 1 (rank 0).
std::vector<NodePtr> adam_with_counter(std::int64_t n, const NodePtr& t) {
    auto p = input(float32, {n}, "p"), g = input(float32, {n}, "g"), m = input(float32, {n}, "m"), v = input(float32, {n}, "v");
    auto t1 = binary(Op::Add, t, sc(1.0));
    auto m1 = binary(Op::Add, binary(Op::Mul, sc(0.9), m), binary(Op::Mul, sc(0.1), g));
    auto v1 = binary(Op::Add, binary(Op::Mul, sc(0.999), v), binary(Op::Mul, binary(Op::Mul, sc(0.001), g), g));
    auto bc1 = broadcast_to(binary(Op::Sub, sc(1.0), binary(Op::Pow, sc(0.9), t1)), {n});
    auto bc2 = broadcast_to(binary(Op::Sub, sc(1.0), binary(Op::Pow, sc(0.999), t1)), {n});
    auto step = binary(Op::Div, binary(Op::Mul, sc(1e-3), binary(Op::Div, m1, bc1)),
                       binary(Op::Add, unary(Op::Sqrt, binary(Op::Div, v1, bc2)), sc(1e-8)));
    return {binary(Op::Sub, p, step), m1, v1, t1};
}
std::size_t occurrences(const std::string& s, const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
    return n;
}
}  // namespace

TEST_CASE("golden: an Adam step with its step counter is one kernel; t + 1 is stored once, by the last block to finish") {
    const auto roots = adam_with_counter(1 << 26, input(float32, {}, "t"));
    const codegen::FusionPlan plan = golden::plan_gpu(roots);
    REQUIRE(plan.gpu.size() == 1);
    const codegen::FusedKernel& k = plan.partition.kernels[0];
    CHECK(k.name == "sub_div_add");  // named again as the one kernel it now is, not sub_div_add_0
    CHECK(k.outputs.size() == 3);
    REQUIRE(k.once_outputs.size() == 1);
    REQUIRE(k.writes.size() == 4);
    CHECK(k.writes[3] == codegen::Slot{codegen::Slot::Kind::Root, 3});
    CHECK(plan.gpu[0].once_reads == 1);
    CHECK(plan.gpu[0].reads.back().kind == codegen::Slot::Kind::Source);
    const std::string text = plan.to_string();
    CHECK(text.find("once, rank 0: add") != std::string::npos);
    CHECK(text.find("writes out3: by one thread of the last block to finish") != std::string::npos);
    const auto sources = gpu::emit_kernels(plan);
    REQUIRE(sources.size() == 1);
    golden::check_text("adam_step_counter", sources[0].kernel);
    golden::compile_sm90(sources[0]);
    // Both entry points run their elements, then the once outputs behind the completion counter.
    CHECK(occurrences(sources[0].kernel, "lm::last_to_finish(a.count)") == 2);
    CHECK(sources[0].kernel.find("sub_div_add_v4_elements(a.p);\n    if (lm::last_to_finish(a.count))") != std::string::npos);
    CHECK(sources[0].param_bytes == codegen::once_args_layout(plan.gpu[0].pointwise.plan, plan.gpu[0].once.plan).size);
    // The same graph unfused keeps every op a kernel of its own, and no kernel has once outputs.
    Options unfused;
    unfused.fusion = false;
    const codegen::FusionPlan apart = golden::plan_gpu(roots, unfused);
    CHECK(apart.gpu.size() > 2);
    for (const auto& fk : apart.partition.kernels) CHECK(fk.once_outputs.empty());
}

TEST_CASE("plan: where a rank-0 kernel does not merge: beside a tiled kernel, and alone") {
    // A transpose is tiled: the rank-0 output stays a kernel of its own.
    auto x = input(float32, {2048, 2048}, "x");
    const auto tiled = golden::plan_gpu({binary(Op::Mul, permute(x, {1, 0}), sc(2.0)), binary(Op::Add, input(float32, {}, "t"), sc(1.0))});
    REQUIRE(tiled.gpu.size() == 2);
    CHECK(tiled.gpu[0].tile.plan.active());
    CHECK(tiled.partition.kernels[0].once_outputs.empty());
    // Rank-0 outputs alone: one rank-0 kernel.
    const auto alone = golden::plan_gpu({binary(Op::Add, input(float32, {}, "t"), sc(1.0))});
    REQUIRE(alone.gpu.size() == 1);
    CHECK(alone.partition.kernels[0].once_outputs.empty());
}
