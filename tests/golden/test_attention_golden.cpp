// Attention kernels (Family::Attention; docs/semantics.md, "Attention"): causal attention over heads sliced
// from a fused qkv tensor is one kernel reading them in place, whose text is the golden file; the CUDA-core
// kernel of every dtype and of D = 16, 64, 80, 128 and 256, with and without a mask and a bias, compiles with
// NVRTC for sm_90 (no GPU needed); so does the decoding kernel (8 queries per block, the keys split in chunks
// whose states the last block combines), whose text is a golden file too.
#include <fmt/format.h>

#include <cstdlib>
#include <loom/loom.hpp>

#include "golden_util.hpp"
#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

std::vector<codegen::KernelSource> compile_plan(const std::vector<Array>& arrays,
                                                const Options& options = {}) {
    std::vector<ir::NodePtr> roots;
    for (const Array& a : arrays) roots.push_back(a.node());
    const codegen::FusionPlan plan = gpu::plan_bound(ir::run_pipeline(roots, ir::standard_passes()),
                                                     codegen::DeviceInfo::h200(), options, "", nullptr, {});
    std::vector<codegen::KernelSource> sources = gpu::emit_kernels(plan);
    REQUIRE(!sources.empty());
    for (const codegen::KernelSource& ks : sources) golden::compile_sm90(ks);
    return sources;
}

}  // namespace

TEST_CASE("golden: causal attention over heads of a fused qkv is one kernel reading them in place") {
    const std::int64_t B = 2, T = 128, H = 4, D = 64;
    const Array x(testing::random_tensor({B, T, 3, H, D}, float32, 1));
    const auto head = [&](std::int64_t j) {
        return x.slice({{}, {}, {j, j + 1}}).reshape({B, T, H, D}).permute({0, 2, 1, 3});
    };
    const auto ks = compile_plan({attention(head(0), head(1), head(2), {.causal = CausalMask::TopLeft})});
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].kernel.find("lm::att::attention_simt<float, 64, true, false, 8, false>") !=
          std::string::npos);
    CHECK(ks[0].source.find("lm::expc::exp_f32") != std::string::npos);
    golden::check_text("a2_attention_causal_f32", ks[0].kernel);
}

TEST_CASE("golden: the CUDA-core attention kernel of every dtype and D compiles") {
    // Each kernel takes seconds of NVRTC: by default one per dtype and head dimension along a diagonal (every
    // D, every dtype, masks and biases each at least once); LOOM_TEST_EXHAUSTIVE=1 compiles them all.
    const bool all = std::getenv("LOOM_TEST_EXHAUSTIVE") != nullptr;
    const Options cores{.product_path = ProductPath::CudaCores};
    const DType dtypes[] = {float32, float16, bfloat16};
    const std::int64_t dims[] = {16, 64, 80, 128, 256};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j) {
            if (!all && j % 3 != i) continue;
            const DType t = dtypes[i];
            const std::int64_t D = dims[j];
            CAPTURE(name(t));
            CAPTURE(D);
            const Tensor q = testing::random_tensor({1, 2, 33, D}, t, 2),
                         k = testing::random_tensor({1, 2, 70, D}, t, 3);
            const Tensor bias = testing::random_tensor({33, 70}, t, 4);
            AttentionOptions o;
            if (D % 32 == 0) o.causal = CausalMask::BottomRight;
            if (D == 80 || D == 256) o.bias = Array(bias);
            const auto ks = compile_plan({attention(q, k, k, o)}, cores);
            REQUIRE(ks.size() == 1);
            CHECK(ks[0].kernel.find("lm::att::attention_simt<") != std::string::npos);
        }
}

TEST_CASE(
    "golden: an attention operand that is a reshape without strides for its input's layout is computed "
    "first") {
    // A column-major [7, 96] input reshaped to [2, 2, 24, 7]: no strides exist, so the plan partitions again
    // with the operand materialized (a copy kernel before the attention kernel).
    const Tensor stored = testing::random_tensor({96, 7}, float32, 5);
    const Tensor column_major = stored.transposed();
    const Array q = Array(column_major).reshape({2, 2, 24, 7});
    const Tensor k = testing::random_tensor({2, 2, 30, 7}, float32, 6);
    const auto ks = compile_plan({attention(q, k, k)});
    REQUIRE(ks.size() == 2);
    CHECK(ks[1].kernel.find("lm::att::attention_simt<float, 7, false, false, 8, false>") !=
          std::string::npos);
}

TEST_CASE("golden: decoding attention splits long rows' keys among blocks, for every dtype") {
    // One query over 2000 keys (4 chunks of 512): 8 queries per block, a block per chunk, the last block of
    // each row block combining the chunks' states; grouped heads (8 query heads over 2 kv heads) and the
    // bottom-right mask of a KV cache. Halves take the same CUDA-core kernel (decoding never runs on tensor
    // cores).
    const DType dtypes[] = {float32, float16, bfloat16};
    const std::int64_t dims[] = {64, 128, 80};
    for (int i = 0; i < 3; ++i) {
        const DType t = dtypes[i];
        const std::int64_t D = dims[i];
        CAPTURE(name(t));
        const Tensor q = testing::random_tensor({2, 8, 1, D}, t, 7),
                     k = testing::random_tensor({2, 2, 2000, D}, t, 8),
                     v = testing::random_tensor({2, 2, 2000, D}, t, 9);
        const auto ks = compile_plan({attention(q, k, v, {.causal = CausalMask::BottomRight})});
        REQUIRE(ks.size() == 1);
        CHECK(ks[0].kernel.find(fmt::format("lm::att::attention_simt<{}, {}, true, false, 1, true>",
                                            t == float32   ? "float"
                                            : t == float16 ? "lm::f16"
                                                           : "lm::bf16",
                                            D)) != std::string::npos);
        CHECK(ks[0].kernel.find("decoding: the keys split in chunks of 512") != std::string::npos);
        if (t == float32) golden::check_text("a4_attention_decode_split_f32", ks[0].kernel);
    }
    // The plan: 8 queries per block, split; the family asks for each row's chunk states (m, l, seen, o) and a
    // counter per row block, and launches a block per chunk of each row block.
    {
        const Tensor q = testing::random_tensor({2, 8, 1, 64}, bfloat16, 12),
                     k = testing::random_tensor({2, 2, 2000, 64}, bfloat16, 13);
        const Array y = attention(q, k, k);
        const codegen::FusionPlan plan = gpu::plan_bound(ir::run_pipeline({y.node()}, ir::standard_passes()),
                                                         codegen::DeviceInfo::h200(), {}, "", nullptr, {});
        REQUIRE(plan.kernels.size() == 1);
        const auto* pa = std::get_if<codegen::PlannedAttention>(&plan.kernels[0].schedule);
        REQUIRE(pa);
        CHECK(pa->plan.path == codegen::AttentionPath::Simt);
        CHECK(pa->plan.split);
        CHECK(pa->plan.block_queries == 8);
        const codegen::LaunchNeeds n = codegen::GpuFamily<codegen::PlannedAttention>::needs(*pa, {});
        REQUIRE(n.workspaces.size() == 1);
        CHECK(n.workspaces[0] ==
              std::size_t{2 * 8 * 1 * 4 * (64 + 3) * 4});  // rows x chunks x (D + 3) floats
        CHECK(n.counters == 2 * 8);                        // one row block per head
    }
    // Few queries over keys within one chunk: 8 queries per block, not split.
    const Tensor q = testing::random_tensor({1, 4, 16, 64}, bfloat16, 10),
                 k = testing::random_tensor({1, 4, 512, 64}, bfloat16, 11);
    const auto ks = compile_plan({attention(q, k, k)});
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].kernel.find("lm::att::attention_simt<lm::bf16, 64, false, false, 1, false>") !=
          std::string::npos);
}

TEST_CASE("attention's result in several places: the kernel stores it once, copies store the rest") {
    // The attention kernel stores one result: written to a strided root, a second root and read by a
    // consumer, it goes to a temporary, and a pointwise kernel writes both roots from it.
    const Array q(testing::random_tensor({3, 2, 7, 16}, float32, 1));
    const Array k(testing::random_tensor({3, 2, 7, 16}, float32, 2));
    const Array v(testing::random_tensor({3, 2, 7, 16}, float32, 3));
    const Array a = attention(q, k, v, {.scale = 0.25});
    const Array y = maximum(a, -0.9375) * 0.21875;
    const std::vector<ir::NodePtr> roots{y.node(), a.node(), a.node()};
    const std::vector<Strides> root_strides{{}, {84, -14, -2, 1176}, {}};
    const codegen::FusionPlan plan =
        gpu::plan_bound(ir::run_pipeline(roots, ir::standard_passes()), codegen::DeviceInfo::h200(), {}, "",
                        nullptr, root_strides);
    int attention_kernels = 0;
    std::vector<int> roots_written;
    for (const codegen::FusedKernel& fk : plan.partition.kernels) {
        if (fk.family == codegen::Family::Attention) {
            ++attention_kernels;
            REQUIRE(fk.writes.size() == 1);
            CHECK(fk.writes[0].kind == codegen::Slot::Kind::Temp);
        }
        for (const codegen::Slot& w : fk.writes)
            if (w.kind == codegen::Slot::Kind::Root) roots_written.push_back(w.index);
    }
    CHECK(attention_kernels == 1);
    std::sort(roots_written.begin(), roots_written.end());
    CHECK(roots_written == std::vector<int>{0, 1, 2});
    for (const codegen::KernelSource& ks : gpu::emit_kernels(plan)) golden::compile_sm90(ks);
}
