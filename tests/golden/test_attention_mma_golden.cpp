// Attention on tensor cores (codegen AttentionPath::Mma; docs/semantics.md, "Attention in float16 and
// bfloat16 on tensor cores"): the plan takes float16 and bfloat16 heads of D a multiple of 16 up to 256 to
// the mma.sync kernel (lm::att::attention_mma) unless products are held to CUDA cores, and every such kernel
// compiles with NVRTC for sm_90 (no GPU needed): both dtypes, D in {16, 64, 80, 128, 256}, each combination
// of a causal mask and a bias; the entry point's text for one of them is the golden file.
#include <cstdlib>
#include <loom/loom.hpp>

#include "golden_util.hpp"
#include "loom/codegen/cuda/attention_plan.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

/// The plan of evaluating `y` on the H200 under `options`.
codegen::FusionPlan plan_of(const Array& y, const Options& options = {}) {
    return gpu::plan_bound(ir::run_pipeline({y.node()}, ir::standard_passes()), codegen::DeviceInfo::h200(),
                           options, "", nullptr, {});
}

/// The attention kernel of `plan` (FAIL when it has none).
const codegen::PlannedAttention& attention_of(const codegen::FusionPlan& plan) {
    for (std::size_t k = 0; k < plan.kernels.size(); ++k)
        if (plan.partition.kernels[k].family == codegen::Family::Attention)
            return plan.kernels[k].as<codegen::PlannedAttention>();
    FAIL("no attention kernel in the plan");
    return plan.kernels.at(0).as<codegen::PlannedAttention>();
}

/// The kernels of `y`'s plan, each compiled with NVRTC for sm_90.
std::vector<codegen::KernelSource> compile_plan(const Array& y, const Options& options = {}) {
    std::vector<codegen::KernelSource> sources = gpu::emit_kernels(plan_of(y, options));
    REQUIRE(!sources.empty());
    for (const codegen::KernelSource& ks : sources) golden::compile_sm90(ks);
    return sources;
}

Array attention_of_shape(DType t, std::int64_t D, CausalMask causal, bool bias) {
    const Tensor q = testing::random_tensor({2, 4, 100, D}, t, 1);
    const Tensor k = testing::random_tensor({2, 2, 70, D}, t, 2);
    const Tensor v = testing::random_tensor({2, 2, 70, D}, t, 3);
    AttentionOptions o;
    o.causal = causal;
    if (bias) o.bias = Array(testing::random_tensor({1, 4, 100, 70}, t, 4));
    return attention(q, k, v, o);
}

}  // namespace

TEST_CASE("golden: attention of float16 and bfloat16 heads runs on tensor cores, the plan's block") {
    for (DType t : {float16, bfloat16}) {
        for (std::int64_t D : {16, 64, 80, 128, 256}) {
            CAPTURE(name(t));
            CAPTURE(D);
            const codegen::AttentionPlan p =
                attention_of(plan_of(attention_of_shape(t, D, CausalMask::None, false))).plan;
            CHECK(p.path == codegen::AttentionPath::Mma);
            CHECK(p.block_queries == (D <= 128 ? 128 : 64));
            CHECK(p.block_keys == (D <= 128 ? 64 : 32));
            CHECK(p.threads == 2 * p.block_queries);
            CHECK(p.shared_bytes ==
                  static_cast<std::size_t>((p.block_queries + 4 * p.block_keys) * (D + 8) * 2));
            CHECK(p.to_string().find("tensor cores") != std::string::npos);
        }
    }
    // Not on tensor cores: float32, D not a multiple of 16, products held to CUDA cores.
    CHECK(attention_of(plan_of(attention_of_shape(float32, 64, CausalMask::None, false))).plan.path ==
          codegen::AttentionPath::Simt);
    CHECK(attention_of(plan_of(attention_of_shape(float16, 40, CausalMask::None, false))).plan.path ==
          codegen::AttentionPath::Simt);
    const Array y = attention_of_shape(bfloat16, 64, CausalMask::TopLeft, false);
    const codegen::AttentionPlan simt =
        attention_of(plan_of(y, Options{.product_path = ProductPath::CudaCores})).plan;
    CHECK(simt.path == codegen::AttentionPath::Simt);
    CHECK(simt.block_queries == 64);
    CHECK(simt.block_keys == 64);
    CHECK(simt.hash() != attention_of(plan_of(y)).plan.hash());
}

TEST_CASE("golden: the tensor-core attention kernels compile with NVRTC for sm_90") {
    // Each kernel takes seconds of NVRTC: by default one per head dimension, dtype, mask and bias each
    // covered once; LOOM_TEST_EXHAUSTIVE=1 compiles every combination.
    const bool all = std::getenv("LOOM_TEST_EXHAUSTIVE") != nullptr;
    int n = 0;
    for (DType t : {float16, bfloat16})
        for (std::int64_t D : {16, 64, 80, 128, 256})
            for (CausalMask causal : {CausalMask::None, CausalMask::TopLeft, CausalMask::BottomRight})
                for (bool bias : {false, true}) {
                    if (causal == CausalMask::BottomRight && D != 64) continue;  // the same kernel as TopLeft
                    const bool mask = causal != CausalMask::None;
                    // The sample: D 16 float16 plain, 64 bfloat16 causal, 80 float16 bias, 128 bfloat16
                    // causal with a bias, 256 float16 plain.
                    const bool sampled =
                        (D == 16 && t == float16 && !mask && !bias) ||
                        (D == 64 && t == bfloat16 && causal == CausalMask::TopLeft && !bias) ||
                        (D == 80 && t == float16 && !mask && bias) ||
                        (D == 128 && t == bfloat16 && causal == CausalMask::TopLeft && bias) ||
                        (D == 256 && t == float16 && !mask && !bias);
                    if (!all && !sampled) continue;
                    CAPTURE(name(t));
                    CAPTURE(D);
                    CAPTURE(static_cast<int>(causal));
                    CAPTURE(bias);
                    const auto ks = compile_plan(attention_of_shape(t, D, causal, bias));
                    REQUIRE(ks.size() == 1);
                    CHECK(ks[0].kernel.find("lm::att::attention_mma<") != std::string::npos);
                    ++n;
                }
    CHECK(n >= 5);
    const auto ks = compile_plan(attention_of_shape(float16, 64, CausalMask::TopLeft, false));
    golden::check_text("attention_mma_f16_d64_causal", ks[0].kernel);
}
