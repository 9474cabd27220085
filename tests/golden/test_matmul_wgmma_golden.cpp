// Golden tests of the Hopper matmul path (matmul_plan.hpp, "Hopper"): a bfloat16 product with a
// bias-GELU-cast epilogue compared as text and compiled with NVRTC for sm_90a; the plan's tile, ring,
// majorness and tensor maps; every operand layout the copies take compiled; and each reason a product falls
// back to mma.sync, named in the plan.
#include <cstring>

#include "golden_util.hpp"
#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/codegen/cuda/matmul_plan.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

const Options kTensorCores{.product_path = ProductPath::TensorCores};

// The GPU plan of `roots` on the H200 with contiguous inputs, 16-byte aligned unless `aligned` is false.
codegen::FusionPlan plan_of(const std::vector<NodePtr>& roots, const Options& options = kTensorCores,
                            bool aligned = true) {
    return golden::plan_gpu(roots, options, aligned);
}

// Plans, emits and compiles (sm_90a for wgmma kernels) the product of `roots`; returns its plan.
codegen::MatmulPlan compile_product(const std::string& name, const std::vector<NodePtr>& roots,
                                    const Options& options = kTensorCores) {
    const codegen::FusionPlan plan = plan_of(roots, options);
    const codegen::PlannedMatmul& pm = golden::matmul_of(plan);
    const codegen::KernelSource ks = codegen::emit_matmul(name, pm);
    CHECK(ks.arch_specific == pm.plan.wgmma);
    golden::compile_sm90(ks);
    return pm.plan;
}

}  // namespace

TEST_CASE(
    "golden: matmul bfloat16 512 x 256 x 384 on Hopper's wgmma with a bias, GELU and a cast to float32") {
    auto x = input(bfloat16, {512, 256}, "x"), w = input(bfloat16, {256, 384}, "w"),
         bias = input(bfloat16, {384}, "bias");
    auto y = cast(unary(Op::GeluErf, binary(Op::Add, matmul(x, w), bias)), float32);
    const codegen::FusionPlan plan = plan_of({y});
    REQUIRE(plan.kernels.size() == 1);
    const codegen::PlannedMatmul& pm = plan.kernels[0].as<codegen::PlannedMatmul>();
    const codegen::MatmulPlan& p = pm.plan;
    CHECK(p.wgmma);
    CHECK(p.tensor_cores);
    CHECK(p.tile_m == 128);
    CHECK(p.tile_n == 128);  // K = 256 is short: ping-pong 128 x 128 tiles
    CHECK(p.tile_k == codegen::kWgmmaDepth);
    CHECK(p.pingpong);
    CHECK(p.consumers == 2);
    CHECK(p.threads() == 384);  // a producer warpgroup and two consumers
    CHECK(p.stages == 6);       // 6 x 32 KiB of the 227 KiB a block may have
    CHECK(!p.a_mn_major);       // row-major A: K-major tiles
    CHECK(p.b_mn_major);        // row-major B: N-major tiles (the MMA's transpose bit)
    CHECK(p.a_map_rank == 2);
    CHECK(p.params.fields.at(0).name == "tmap_a");
    CHECK(p.params.fields.at(0).offset == 0);
    CHECK(p.params.fields.at(1).offset == codegen::kTensorMapBytes);
    CHECK(p.params.align == 64);
    CHECK(pm.binding.persistent_blocks == 12);  // 4 x 3 tiles: fewer than the 132 multiprocessors
    CHECK(codegen::matmul_launch(pm).grid_x == 12);
    CHECK(codegen::matmul_launch(pm).block_x == 384);
    const codegen::KernelSource ks = codegen::emit_matmul("matmul_bias_gelu_cast_bf16_wgmma", pm);
    golden::check_text("matmul_bias_gelu_cast_bf16_wgmma", ks.kernel);
    CHECK(ks.arch_specific);
    const nvrtc::Result r = golden::compile_sm90(ks);
    if (LOOM_HAS_CUDA) CHECK(r.arch == "sm_90a");  // a host-only build compiles nothing
    CHECK(ks.kernel.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") != std::string::npos);
    CHECK(ks.kernel.find("lm::tma_load_2d(") != std::string::npos);
    CHECK(ks.kernel.find("lm::setmaxnreg_inc<232>()") != std::string::npos);
    CHECK(plan.to_string().find("tensor cores (Hopper wgmma.mma_async m64n128k16, within the bound") !=
          std::string::npos);
    CHECK(plan.to_string().find("2 consumer warpgroups taking whole tiles in turn") != std::string::npos);
    CHECK(plan.to_string().find("bulk tensor copies of A (K-major) and B (N-major)") != std::string::npos);
}

TEST_CASE("wgmma plan: the tensor maps of a call, and a pointer off the planned alignment") {
    auto x = input(bfloat16, {2, 300, 200}, "x"), w = input(bfloat16, {200, 136}, "w");
    const codegen::FusionPlan plan = plan_of({matmul(x, broadcast_to(w, {2, 200, 136}))});
    const codegen::PlannedMatmul& pm = golden::matmul_of(plan);
    REQUIRE(pm.plan.wgmma);
    CHECK(pm.plan.tile_n == 128);
    CHECK(pm.plan.a_map_rank == 3);  // A's two batch entries: a third dimension
    CHECK(pm.plan.b_map_rank == 2);  // B broadcasts over the batch: one matrix
    alignas(16) static unsigned char storage[64];
    const void* ins[] = {storage, storage + 32};
    const auto maps = codegen::matmul_tensor_maps(pm, ins);
    const codegen::TensorMapSpec& a = maps[0];
    CHECK(a.rank == 3);
    CHECK(a.dims[0] == 200);  // k, innermost
    CHECK(a.dims[1] == 300);
    CHECK(a.dims[2] == 2);
    CHECK(a.strides[0] == 400);        // bytes between rows
    CHECK(a.strides[1] == 300 * 400);  // bytes between batch entries
    CHECK(a.box[0] == 64);
    CHECK(a.box[1] == 128);  // the tile's rows in one copy
    const codegen::TensorMapSpec& b = maps[1];
    CHECK(b.rank == 2);
    CHECK(b.dims[0] == 136);  // n, innermost: N-major
    CHECK(b.dims[1] == 200);
    CHECK(b.strides[0] == 272);
    CHECK(b.box[0] == 64);
    CHECK(b.box[1] == 64);  // 64 k rows of 64 n per copy
    CHECK(b.address == storage + 32);
    CHECK(a.to_string().find("bfloat16 [200, 300, 2] strides [400, 120000] bytes, box [64, 128, 1]") !=
          std::string::npos);
    const void* off[] = {storage + 2, storage};
    CHECK_THROWS_AS(codegen::matmul_tensor_maps(pm, off), InternalError);
}

TEST_CASE("wgmma kernels of every operand layout compile for sm_90a") {
    SUBCASE("transposed views: an M-major A and a K-major B, float16") {
        auto at = input(float16, {136, 200}, "at"),
             bt = input(float16, {72, 136}, "bt");  // A = at^T [200, 136], B = bt^T [136, 72]
        const codegen::MatmulPlan p =
            compile_product("wgmma_views", {matmul(permute(at, {1, 0}), permute(bt, {1, 0}))});
        CHECK(p.wgmma);
        CHECK(p.a_mn_major);
        CHECK(!p.b_mn_major);
        CHECK(p.tile_n == 128);  // N = 72
    }
    SUBCASE("a batch of small products, a short tile, two outputs, K = 8") {
        const codegen::MatmulPlan p =
            compile_product("wgmma_batched",
                            {matmul(input(bfloat16, {300, 64, 8}, "a"), input(bfloat16, {300, 8, 64}, "b"))});
        CHECK(p.wgmma);
        CHECK(p.tile_m == 64);  // M = 64 and N = 64: a 64 x 64 tile, the two consumers taking tiles in turn
        CHECK(p.tile_n == 64);
        CHECK(p.pingpong);
        CHECK(p.consumers == 2);
        CHECK(p.threads() == 384);
        CHECK(p.a_map_rank == 3);
        CHECK(p.b_map_rank == 3);
        auto a = input(bfloat16, {100, 64}, "a"), b = input(bfloat16, {64, 48}, "b");
        auto mm = matmul(a, b);
        const codegen::MatmulPlan two = compile_product("wgmma_two_outputs", {mm, unary(Op::Relu, mm)});
        CHECK(two.wgmma);
        CHECK(two.tile_n == 64);
    }
    SUBCASE("a long K: the consumers side by side on 128 x 256 tiles") {
        const codegen::MatmulPlan p = compile_product(
            "wgmma_long_k", {matmul(input(bfloat16, {256, 4096}, "a"), input(bfloat16, {4096, 512}, "b"))});
        CHECK(p.wgmma);
        CHECK(!p.pingpong);
        CHECK(p.tile_n == 256);
        CHECK(p.consumers == 2);
        CHECK(p.stages == 4);  // 4 x 48 KiB
    }
    SUBCASE("hinted tiles") {
        for (const ProductTile t :
             {ProductTile{64, 64, 64}, ProductTile{128, 128, 0}, ProductTile{64, 256, 64}}) {
            auto y =
                matmul(input(bfloat16, {256, 256}, "x"), input(bfloat16, {256, 256}, "z"), Loc::current(), t);
            const codegen::MatmulPlan p =
                compile_product(fmt::format("wgmma_hint_{}x{}", t.rows, t.cols), {y});
            CHECK(p.wgmma);
            CHECK(p.hinted);
            CHECK(p.tile_m == t.rows);
            CHECK(p.tile_n == t.cols);
        }
    }
}

TEST_CASE("wgmma plan: each product that cannot take the copies runs on mma.sync, and the plan says why") {
    auto note = [](const codegen::FusionPlan& plan) {
        const codegen::MatmulPlan& p = golden::matmul_of(plan).plan;
        CHECK(!p.wgmma);
        return p.wgmma_note;
    };
    auto a = input(bfloat16, {128, 128}, "a"), b = input(bfloat16, {128, 128}, "b");
    CHECK(note(plan_of({matmul(a, b)}, Options{.product_path = ProductPath::MmaSync})) ==
          "mma_sync asked for");
    CHECK(golden::matmul_of(plan_of({matmul(a, b)}, Options{.product_path = ProductPath::MmaSync}))
              .plan.tensor_cores);
    CHECK(note(plan_of({matmul(input(bfloat16, {64, 15}, "a"), input(bfloat16, {15, 64}, "b"))}))
              .find("A's rows are 15 elements apart") == 0);
    CHECK(note(plan_of({matmul(a, b)}, kTensorCores, false)) == "A does not start 16-byte aligned");
    // An operand that would be a prologue is computed first on Hopper (the copies read memory), the log says
    // so.
    const auto sum = plan_of({matmul(binary(Op::Add, a, b), b)});
    CHECK(sum.kernels.size() == 2);
    CHECK(golden::matmul_of(sum).plan.wgmma);
    CHECK(sum.to_string().find("computed first: the product runs on Hopper's wgmma") != std::string::npos);
    CHECK(golden::matmul_of(
              plan_of({matmul(binary(Op::Add, a, b), b)}, Options{.product_path = ProductPath::MmaSync}))
              .plan.a_prologue);
    auto hinted = matmul(a, b, Loc::current(), ProductTile{32, 32, 32});
    CHECK(note(plan_of({hinted})).find("the tile 32x32x32 is not a wgmma tile") == 0);
    // Four batch axes that do not merge (reversed): more than a tensor map's 3 batch dimensions.
    auto reversed = permute(input(bfloat16, {2, 2, 2, 2, 64, 64}, "a"), {3, 2, 1, 0, 4, 5});
    CHECK(note(plan_of({matmul(reversed, input(bfloat16, {64, 64}, "b"))}))
              .find("A's batch axes form more than the tensor map's 3 batch dimensions") == 0);
    const auto fallback = plan_of({matmul(input(bfloat16, {64, 15}, "a"), input(bfloat16, {15, 64}, "b"))});
    CHECK(fallback.to_string().find("; not wgmma: A's rows are 15 elements apart") != std::string::npos);
    // int8 keeps mma.sync (exact either way) without a note; half precision runs on tensor cores by default
    // (wgmma here), CUDA cores only when asked for.
    auto i = input(int8, {64, 64}, "i"), j = input(int8, {64, 64}, "j");
    CHECK(note(plan_of({matmul(i, j)})).empty());
    const auto by_default = plan_of({matmul(a, b)}, Options{});
    CHECK(golden::matmul_of(by_default).plan.wgmma);
    INFO(by_default.to_string());
    CHECK(by_default.to_string().find("bfloat16 runs on tensor cores by default") != std::string::npos);
    CHECK(!golden::matmul_of(plan_of({matmul(a, b)}, Options{.product_path = ProductPath::CudaCores}))
               .plan.tensor_cores);
    // A device without wgmma (compute capability 8.0) plans mma.sync, with no note.
    codegen::DeviceInfo a100 = codegen::DeviceInfo::h200();
    a100.cc_major = 8;
    const auto on_a100 = golden::plan_gpu({matmul(a, b)}, kTensorCores, true, a100);
    CHECK(!golden::matmul_of(on_a100).plan.wgmma);
    CHECK(golden::matmul_of(on_a100).plan.wgmma_note.empty());
    // The plan never depends on the epilogue.
    auto bias = input(bfloat16, {128}, "bias");
    const codegen::MatmulPlan bare = golden::matmul_of(plan_of({matmul(a, b)})).plan;
    const codegen::MatmulPlan fused =
        golden::matmul_of(plan_of({unary(Op::GeluErf, binary(Op::Add, matmul(a, b), bias))})).plan;
    CHECK(bare.tile_m == fused.tile_m);
    CHECK(bare.tile_n == fused.tile_n);
    CHECK(bare.stages == fused.stages);
}

// Attention's head products: q, k and v sliced from one fused projection [B, T, 3, H, D], so a head's rows
// are 3 H D elements apart and the heads D apart inside them. The batch axes (B, H) do not merge: the maps
// take them as two batch dimensions, each at coordinates taken from the batch entry.
TEST_CASE("wgmma plan: heads sliced from a fused projection take the copies as rank-4 tensor maps") {
    constexpr std::int64_t B = 2, T = 192, H = 4, D = 64;
    auto qkv = input(bfloat16, {B, T, 3, H, D}, "qkv");
    auto head = [&](std::int64_t which) {  // [B, H, T, D]
        auto part = slice(qkv, {{}, {}, {which, which + 1}, {}, {}});
        return permute(reshape(part, {B, T, H, D}), {0, 2, 1, 3});
    };
    auto q = head(0), k = head(1), v = head(2);
    SUBCASE("q k^T: A K-major, B K-major (k^T is a transposed view)") {
        const codegen::FusionPlan plan = plan_of({matmul(q, permute(k, {0, 1, 3, 2}))}, Options{});
        const codegen::PlannedMatmul& pm = golden::matmul_of(plan);
        INFO(plan.to_string());
        REQUIRE(pm.plan.wgmma);
        CHECK(!pm.plan.a_mn_major);
        CHECK(!pm.plan.b_mn_major);
        CHECK(pm.plan.a_map_rank == 4);
        CHECK(pm.plan.b_map_rank == 4);
        CHECK(!pm.plan.a_map_flat);
        alignas(16) static unsigned char storage[4096];
        const std::vector<const void*> ins(pm.inputs.size(), storage);
        const auto maps = codegen::matmul_tensor_maps(pm, ins);
        const codegen::TensorMapSpec& a = maps[0];
        CHECK(a.rank == 4);
        CHECK(a.dims[0] == D);  // k, innermost
        CHECK(a.dims[1] == T);
        CHECK(a.dims[2] == H);  // the heads, D elements apart
        CHECK(a.dims[3] == B);
        CHECK(a.strides[0] == 3 * H * D * 2);  // rows: 3 H D elements
        CHECK(a.strides[1] == D * 2);
        CHECK(a.strides[2] == T * 3 * H * D * 2);
        CHECK(a.box[2] == 1);
        CHECK(a.box[3] == 1);
        CHECK(pm.binding.a_map_batch[0].divisor == 1);
        CHECK(pm.binding.a_map_batch[0].extent == H);
        CHECK(pm.binding.a_map_batch[1].divisor == H);
        CHECK(pm.binding.a_map_batch[1].extent == B);
        CHECK(maps[1].address == storage + D * H * 2);  // k: one block of heads further
        const codegen::KernelSource ks = codegen::emit_matmul("wgmma_heads_qk", pm);
        CHECK(ks.kernel.find("const int a_b0 = (int)(batch / p.a_bdiv0 % p.a_bext0), a_b1 = (int)(batch / "
                             "p.a_bdiv1 % p.a_bext1);") != std::string::npos);
        CHECK(ks.kernel.find("lm::tma_load_4d(as, &p.tmap_a, full0 + 8 * s, k0, (int)m0, a_b0, a_b1);") !=
              std::string::npos);
        golden::compile_sm90(ks);
        CHECK(pm.plan.to_string().find("2 batch dimensions at coordinates taken from the batch entry") !=
              std::string::npos);
        const codegen::MatmulBinding& bd = pm.binding;
        std::vector<std::byte> params(pm.plan.params.size);
        void* const outs[] = {storage};
        codegen::pack_matmul_params(pm, ins, outs, nullptr, nullptr, {}, params);
        const auto field = [&](const char* name) {
            std::int64_t v = 0;
            for (const auto& f : pm.plan.params.fields)
                if (f.name == name) std::memcpy(&v, params.data() + f.offset, sizeof v);
            return v;
        };
        CHECK(field("a_bdiv1") == H);
        CHECK(field("a_bext1") == B);
        CHECK(field("b_bext0") == H);
        CHECK(bd.batches == B * H);
    }
    SUBCASE("p v: B a head of v (N-major), A a contiguous batch of [T, T] (one flat batch dimension)") {
        auto p = input(bfloat16, {B, H, T, T}, "p");
        const codegen::MatmulPlan plan = compile_product("wgmma_heads_pv", {matmul(p, v)}, Options{});
        CHECK(plan.wgmma);
        CHECK(plan.b_mn_major);
        CHECK(plan.a_map_rank == 3);
        CHECK(plan.a_map_flat);
        CHECK(plan.b_map_rank == 4);
    }
    SUBCASE("float32 in TF32: the same maps, B's K-major tile by descriptor") {
        auto qkv32 = input(float32, {B, T, 3, H, D}, "qkv32");
        auto h32 = [&](std::int64_t which) {
            return permute(reshape(slice(qkv32, {{}, {}, {which, which + 1}, {}, {}}), {B, T, H, D}),
                           {0, 2, 1, 3});
        };
        const codegen::MatmulPlan plan =
            compile_product("wgmma_heads_qk_tf32", {matmul(h32(0), permute(h32(1), {0, 1, 3, 2}))},
                            Options{.product_precision = ProductPrecision::TF32});
        CHECK(plan.wgmma);
        CHECK(plan.a_map_rank == 4);
        CHECK(plan.b_map_rank == 4);
    }
}
