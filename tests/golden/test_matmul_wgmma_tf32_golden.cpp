// Golden tests of float32 products in TF32 on Hopper's wgmma (matmul_plan.hpp, "Hopper"; docs/semantics.md,
// section 12, "TF32"): a row-major product with a bias-GELU epilogue compared as text (B's N-major tile read
// into registers, the operands swapped) and compiled with NVRTC for sm_90a; the other layouts' plans (both
// K-major from shared memory, an M-major A in registers) compiled; and the cases that keep mma.sync, each
// with its reason in the plan.
#include "golden_util.hpp"
#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/codegen/cuda/matmul_plan.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

const Options kTF32{.product_precision = ProductPrecision::TF32};

// Plans, emits and compiles (sm_90a for wgmma kernels) the product of `roots` under `options`.
codegen::MatmulPlan compile_product(const std::string& name, const std::vector<NodePtr>& roots,
                                    const Options& options = kTF32) {
    const codegen::FusionPlan plan = golden::plan_gpu(roots, options, true);
    const codegen::PlannedMatmul& pm = golden::matmul_of(plan);
    const codegen::KernelSource ks = codegen::emit_matmul(name, pm);
    CHECK(ks.arch_specific == pm.plan.wgmma);
    golden::compile_sm90(ks);
    return pm.plan;
}

}  // namespace

TEST_CASE("golden: matmul float32 512 x 256 x 384 in TF32 on Hopper's wgmma with a bias and GELU") {
    auto x = input(float32, {512, 256}, "x"), w = input(float32, {256, 384}, "w"),
         bias = input(float32, {384}, "bias");
    auto y = unary(Op::GeluErf, binary(Op::Add, matmul(x, w), bias));
    const codegen::FusionPlan plan = golden::plan_gpu({y}, kTF32, true);
    REQUIRE(plan.kernels.size() == 1);
    const codegen::PlannedMatmul& pm = plan.kernels[0].as<codegen::PlannedMatmul>();
    const codegen::MatmulPlan& p = pm.plan;
    CHECK(p.wgmma);
    CHECK(p.precision() == ProductPrecision::TF32);
    CHECK(p.tile_m == 128);
    CHECK(p.tile_n == 128);
    CHECK(p.tile_k == 32);  // one 128-byte swizzled row of float32
    CHECK(p.wgmma_depth() == 32);
    CHECK(p.wgmma_k() == 8);
    CHECK(p.pingpong);
    CHECK(!p.staged_epilogue);  // float32 products: the epilogue from registers
    CHECK(!p.a_mn_major);
    CHECK(p.b_mn_major);            // row-major B: N-major tiles, which TF32's MMAs cannot read ...
    CHECK(p.wgmma_a_registers());   // ... so B's tile goes through registers
    CHECK(p.wgmma_swap());          // as the MMAs' A operand: C^T = B^T A^T
    CHECK(p.consumer_mmas() == 2);  // the tile's 128 columns are the MMAs' rows
    CHECK(p.wgmma_n() == 128);
    CHECK(p.stages == 6);  // 6 x 32 KiB
    const codegen::KernelSource ks = codegen::emit_matmul("matmul_bias_gelu_f32_tf32_wgmma", pm);
    golden::check_text("matmul_bias_gelu_f32_tf32_wgmma", ks.kernel);
    const nvrtc::Result r = golden::compile_sm90(ks);
    if (LOOM_HAS_CUDA) CHECK(r.arch == "sm_90a");  // a host-only build compiles nothing
    CHECK(ks.kernel.find("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32") != std::string::npos);
    CHECK(ks.kernel.find("_fragment(a[r], bs + r * 8192u") != std::string::npos);
    CHECK(ks.kernel.find("m64n128k8 TF32") != std::string::npos);  // the banner
    CHECK(ks.kernel.find("B's tile is read into registers") != std::string::npos);
    // The tensor maps: float32, 32 elements (128 bytes) inner, B in boxes of 32 n by 32 k.
    alignas(16) static unsigned char storage[64];
    const void* ins[] = {storage, storage + 32};
    const auto maps = codegen::matmul_tensor_maps(pm, ins);
    CHECK(maps[0].dtype == float32);
    CHECK(maps[0].box[0] == 32);
    CHECK(maps[0].box[1] == 128);  // A: the tile's 128 rows of 32 k
    CHECK(maps[1].box[0] == 32);
    CHECK(maps[1].box[1] == 32);  // B: 32 k rows of 32 n per copy
    CHECK(maps[1].strides[0] == 384 * 4);
}

TEST_CASE("wgmma TF32 kernels of the other layouts compile for sm_90a, the rest keep mma.sync and say why") {
    auto x = input(float32, {300, 200}, "x"), wt = input(float32, {136, 200}, "wt"),
         xt = input(float32, {200, 300}, "xt"), w = input(float32, {200, 136}, "w");
    SUBCASE("x @ wt^T: both K-major, from shared memory") {
        const codegen::MatmulPlan p = compile_product("tf32_nt", {matmul(x, permute(wt, {1, 0}))});
        CHECK(p.wgmma);
        CHECK(!p.wgmma_a_registers());
        CHECK(!p.wgmma_swap());
    }
    SUBCASE("xt^T @ wt^T: an M-major A, into registers") {
        const codegen::MatmulPlan p =
            compile_product("tf32_tt", {matmul(permute(xt, {1, 0}), permute(wt, {1, 0}))});
        CHECK(p.wgmma);
        CHECK(p.wgmma_a_registers());
        CHECK(!p.wgmma_swap());
    }
    SUBCASE("a batch of row-major products") {
        auto xb = input(float32, {4, 100, 64}, "xb"), wb = input(float32, {4, 64, 72}, "wb");
        const codegen::MatmulPlan p = compile_product("tf32_batched", {matmul(xb, wb)});
        CHECK(p.wgmma);
        CHECK(p.a_map_rank == 3);
        CHECK(p.wgmma_swap());
    }
    SUBCASE("xt^T @ w: an M-major A and an N-major B, mma.sync") {
        const codegen::MatmulPlan p = compile_product("tf32_tn", {matmul(permute(xt, {1, 0}), w)});
        CHECK(!p.wgmma);
        CHECK(p.precision() == ProductPrecision::TF32);
        CHECK(p.wgmma_note.find("A (M-major) and B (N-major)") != std::string::npos);
    }
    SUBCASE("3xTF32: mma.sync") {
        const codegen::MatmulPlan p =
            compile_product("tf32x3", {matmul(x, w)}, Options{.product_precision = ProductPrecision::TF32x3});
        CHECK(!p.wgmma);
        CHECK(p.wgmma_note.find("only the mma.sync kernel splits") != std::string::npos);
    }
    SUBCASE("a hint that is not a wgmma tile: mma.sync") {
        Options hinted = kTF32;
        hinted.tile = TileHint{128, 128, 16};
        const codegen::MatmulPlan p = compile_product("tf32_hint", {matmul(x, w)}, hinted);
        CHECK(!p.wgmma);
        CHECK(p.wgmma_note.find("tile_k 32") != std::string::npos);
    }
}
