// Random numbers drawn inside kernels: the kernel of N1, x + 0.1 * random_normal(shape, seed), reads x and
// writes the sum, with the normals computed from each element's row-major index and the seed (a parameter),
// and every random kernel below compiles with NVRTC for sm_90: each float dtype, uniform and normal values,
// views of random arrays, a random op in a reduction's prologue, and bernoulli.
#include <loom/loom.hpp>

#include "golden_util.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

/// The kernels of evaluating `arrays` on the H200, each compiled with NVRTC, in launch order.
std::vector<codegen::KernelSource> compile_plan(const std::vector<Array>& arrays) {
    std::vector<ir::NodePtr> roots;
    for (const Array& a : arrays) roots.push_back(a.node());
    const codegen::FusionPlan plan = gpu::plan_bound(ir::run_pipeline(roots, ir::standard_passes()),
                                                     codegen::DeviceInfo::h200(), Options{}, "", nullptr, {});
    std::vector<codegen::KernelSource> sources = gpu::emit_kernels(plan);
    REQUIRE(!sources.empty());
    for (const codegen::KernelSource& ks : sources) golden::compile_sm90(ks);
    return sources;
}

}  // namespace

TEST_CASE("golden: N1, x + 0.1 * random_normal(shape, seed), one kernel with the normals drawn in it") {
    const Device cpu = Device::cpu();
    const Tensor x = testing::random_tensor({1 << 20}, float32, 3);
    const auto ks = compile_plan({Array(x) + 0.1 * random_normal({1 << 20}, 42, float32, cpu)});
    REQUIRE(ks.size() == 1);
    golden::check_text("n1_add_random_normal", ks[0].kernel);
}

TEST_CASE("golden: random kernels of every float dtype, views, reductions and bernoulli compile") {
    const Device cpu = Device::cpu();
    for (DType t : {float32, float64, float16, bfloat16}) {
        CAPTURE(name(t));
        compile_plan({random_uniform({33, 7}, 1, t, cpu), random_normal({33, 7}, 2, t, cpu)});
    }
    const Tensor x = testing::random_tensor({64, 100}, float32, 4);
    compile_plan({Array(x) * random_uniform({100, 64}, 5, float32, cpu).transposed()});
    compile_plan({sum(Array(x) * random_normal({64, 100}, 6, float32, cpu), -1)});
    compile_plan({bernoulli(0.25, {4097}, 7, cpu), bernoulli(Array(x) * 0.01, {64, 100}, 8)});
    compile_plan({random_normal({}, 9, float64, cpu)});
}
