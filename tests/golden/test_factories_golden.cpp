// Factories and writes into strided views: the kernels their fusion plans generate compile with NVRTC
// for sm_90, and the golden file of one of each reads as reviewed: an index computed from the element's
// coordinates (arange, eye) fused with its consumer, and an output stored at its own strides.
#include <loom/loom.hpp>

#include "golden_util.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

/// The kernels of evaluating `arrays` on the H200 into outputs of `out_strides` (empty: contiguous), each
/// compiled with NVRTC. Returns their sources, in launch order.
std::vector<codegen::KernelSource> compile_plan(const std::vector<Array>& arrays,
                                                const std::vector<Strides>& out_strides = {}) {
    std::vector<ir::NodePtr> roots;
    for (const Array& a : arrays) roots.push_back(a.node());
    const codegen::FusionPlan plan =
        gpu::plan_bound(ir::run_pipeline(roots, ir::standard_passes()), codegen::DeviceInfo::h200(),
                        Options{}, "", nullptr, out_strides);
    std::vector<codegen::KernelSource> sources = gpu::emit_kernels(plan);
    REQUIRE(!sources.empty());
    for (const codegen::KernelSource& ks : sources) golden::compile_sm90(ks);
    return sources;
}

}  // namespace

TEST_CASE(
    "golden: factories fuse into their consumers and compile: arange, linspace, eye, full, and an index in a "
    "reduction") {
    const Device cpu = Device::cpu();
    const Tensor x = testing::random_tensor({64, 1000}, float32, 3);
    const auto ks =
        compile_plan({Array(x) * arange(0.0, 1000.0, 1.0, float32, cpu) + ones({64, 1000}, float32, cpu)});
    REQUIRE(ks.size() == 1);
    golden::check_text("factory_arange_scale", ks[0].kernel);
    compile_plan({arange(33, int64, cpu)});
    compile_plan({linspace(-1.0, 2.0, 4097, float16, true, cpu)});
    compile_plan({eye(33, 31, 1, bfloat16, cpu)});
    compile_plan({full({7, 9}, 2.5, float64, cpu) * Array(testing::random_tensor({7, 9}, float64, 4))});
    compile_plan({sum(Array(x) * arange(0.0, 1000.0, 1.0, float32, cpu), -1)});  // an index in a prologue
    compile_plan(
        {Array(x) - max(Array(x) * eye(64, 1000, 0, float32, cpu), -1, true)});  // and broadcast back
}

TEST_CASE(
    "golden: outputs stored at their own strides compile: a column, a reversed slice, a transpose, a "
    "reduction into a column") {
    const Tensor x = testing::random_tensor({33, 31}, float32, 5);
    const Tensor base = testing::random_tensor({33, 64}, float32, 6);
    // A transposed output: [31, 33] at strides [1, 31] of a [33, 31] tensor.
    const auto ks = compile_plan({Array(x).transposed() * 2.0}, {Strides{1, 31}});
    REQUIRE(ks.size() == 1);
    golden::check_text("strided_output_transpose", ks[0].kernel);
    compile_plan({Array(x) + 1.0}, {Strides{64, 2}});    // every second column
    compile_plan({Array(x) + 1.0}, {Strides{-64, -1}});  // reversed both ways
    compile_plan({sum(Array(x), -1)}, {Strides{64}});    // a row sum into a column
    compile_plan({Array(x).astype(float16), sum(Array(x), 0)},
                 {Strides{1, 33}, Strides{3}});  // two outputs, two layouts
}
