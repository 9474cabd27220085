// Golden tests of the matmul emitter (matmul_plan.hpp): a float32 product with a bias-GELU epilogue
// compared as text, a float16 product on tensor cores (mma.sync) likewise, and every dtype, layout, path and
// schedule the planner produces compiled with NVRTC for sm_90.
#include <cstring>
#include <vector>

#include "golden_util.hpp"
#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/codegen/cuda/matmul_plan.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

// The GPU plan of `roots` on the H200 with contiguous, aligned inputs.
codegen::FusionPlan plan_of(const std::vector<NodePtr>& roots, const Options& options = {}) {
    return golden::plan_gpu(roots, options);
}

// The one matmul kernel of a plan of one kernel, emitted and compiled.
codegen::KernelSource compile_product(const std::string& name, const std::vector<NodePtr>& roots,
                                      std::size_t kernels = 1, const Options& options = {}) {
    const codegen::FusionPlan plan = plan_of(roots, options);
    REQUIRE(plan.kernels.size() == kernels);
    const codegen::KernelSource ks = codegen::emit_matmul(name, golden::matmul_of(plan));
    golden::compile_sm90(ks);
    return ks;
}

}  // namespace

TEST_CASE("golden: matmul float32 512 x 256 x 384 with a bias and GELU, one kernel") {
    auto x = input(float32, {512, 256}, "x"), w = input(float32, {256, 384}, "w"),
         bias = input(float32, {384}, "bias");
    auto y = unary(Op::GeluErf, binary(Op::Add, matmul(x, w), bias));
    const codegen::FusionPlan plan = plan_of({y});
    REQUIRE(plan.kernels.size() == 1);
    REQUIRE(plan.partition.kernels[0].family == codegen::Family::MatMul);
    const codegen::MatmulPlan& p = plan.kernels[0].as<codegen::PlannedMatmul>().plan;
    CHECK(p.tile_m == 128);
    CHECK(p.tile_n == 128);
    CHECK(p.tile_k == 32);
    CHECK(p.threads() == 256);
    CHECK(p.pitch_a == 36);  // 32 + 4: rows 16-byte aligned, 4 rows of a warp in distinct banks
    CHECK(p.pitch_b == 132);
    CHECK(p.vector_a);
    CHECK(p.vector_b);
    CHECK(p.a_read == 4);  // 4 k of a row per 16-byte read; a warp's 4 rows, 36 words apart, meet in no bank
    CHECK(p.b_read ==
          4);  // 4 consecutive columns per 16-byte read: a lane's columns in two groups of 4, 32 apart
    CHECK(!p.chunked);
    CHECK(p.staged_epilogue);  // the outputs through a shared-memory tile: whole lines per warp
    CHECK(p.blocks_per_sm ==
          2);  // K = 256, 8 steps: the other block's K loop runs beside a tile's fill and epilogue
    const codegen::KernelSource ks =
        codegen::emit_matmul("matmul_bias_gelu_f32", plan.kernels[0].as<codegen::PlannedMatmul>());
    golden::check_text("matmul_bias_gelu_f32", ks.kernel);
    golden::compile_sm90(ks);
    CHECK(ks.vector_entry.empty());  // one entry point: the variant is a parameter
    CHECK(ks.scalar_entry == "matmul_bias_gelu_f32");
    CHECK(!p.tensor_cores);
    CHECK(plan.to_string().find("tile 128x128x32, 3 stages, 256 threads") != std::string::npos);
}

TEST_CASE("golden: matmul float16 256 x 192 x 160 on tensor cores (mma.sync m16n8k16) with a bias and ReLU") {
    auto a = input(float16, {256, 160}, "a"), b = input(float16, {160, 192}, "b"),
         bias = input(float16, {192}, "bias");
    const Options tc{.product_path = ProductPath::MmaSync};  // the Ampere path, forced (Hopper's is wgmma)
    const auto plan = plan_of({unary(Op::Relu, binary(Op::Add, matmul(a, b), bias))}, tc);
    REQUIRE(plan.kernels.size() == 1);
    const codegen::MatmulPlan& p = plan.kernels[0].as<codegen::PlannedMatmul>().plan;
    CHECK(p.tensor_cores);
    CHECK(p.tile_m == 128);
    CHECK(p.tile_n == 128);
    CHECK(p.tile_k == 32);  // two m16n8k16 steps per stage
    CHECK(p.warps_m == 2);
    CHECK(p.warps_n == 4);
    CHECK(p.frags_m() == 4);  // a warp tile of 64 x 32 outputs: 4 x 4 MMA tiles, 64 float32 accumulators
    CHECK(p.frags_n() == 4);
    CHECK(p.pitch_a == 40);  // 32 + 8: 32-bit fragment loads of the 8 rows of an MMA tile in distinct banks
    CHECK(!p.chunked);
    const codegen::KernelSource ks =
        codegen::emit_matmul("matmul_relu_f16_mma", plan.kernels[0].as<codegen::PlannedMatmul>());
    golden::check_text("matmul_relu_f16_mma", ks.kernel);
    golden::compile_sm90(ks);
    CHECK(ks.kernel.find("lm::mma_m16n8k16_f16(c[i][j], fa[i], fb[j])") != std::string::npos);
    CHECK(plan.to_string().find("tensor cores (mma.sync m16n8k16, within the bound") != std::string::npos);
    CHECK(ks.kernel.find("tensor cores (mma.sync m16n8k16 into float32") != std::string::npos);
    // The default puts float16 and int8 on tensor cores (int8 exact); CudaCores keeps float16 there, with the
    // reference's bits.
    CHECK(plan_of({matmul(a, b)}).kernels.at(0).as<codegen::PlannedMatmul>().plan.tensor_cores);
    CHECK(!plan_of({matmul(a, b)}, Options{.product_path = ProductPath::CudaCores})
               .kernels.at(0)
               .as<codegen::PlannedMatmul>()
               .plan.tensor_cores);
    auto i8a = input(int8, {64, 96}, "i"), i8b = input(int8, {96, 64}, "j");
    CHECK(plan_of({matmul(i8a, i8b)}).kernels.at(0).as<codegen::PlannedMatmul>().plan.tensor_cores);
    CHECK(!plan_of({matmul(i8a, i8b)}, Options{.product_path = ProductPath::CudaCores})
               .kernels.at(0)
               .as<codegen::PlannedMatmul>()
               .plan.tensor_cores);
    // float32 takes tensor cores only under product_precision tf32 or 3xtf32: asked for without it, it stays
    // on CUDA cores and the plan says why.
    const auto f32 = plan_of({matmul(input(float32, {64, 64}, "x"), input(float32, {64, 64}, "y"))}, tc);
    CHECK(!f32.kernels.at(0).as<codegen::PlannedMatmul>().plan.tensor_cores);
    CHECK(f32.to_string().find(
              "tensor cores asked for; float32 takes them only under product_precision tf32 or 3xtf32") !=
          std::string::npos);
}

TEST_CASE("matmul kernels on tensor cores: every dtype, layout and schedule compile with NVRTC") {
    const Options tc{.product_path = ProductPath::MmaSync};
    SUBCASE("bfloat16 batched with a broadcast batch and a transposed operand, result cast to float32") {
        auto a = input(bfloat16, {3, 1, 33, 40}, "a"), w = input(bfloat16, {4, 17, 40}, "w");
        const auto ks = compile_product("mma_bf16", {cast(matmul(a, permute(w, {0, 2, 1})), float32)}, 1, tc);
        CHECK(ks.kernel.find("lm::mma_m16n8k16_bf16(") != std::string::npos);
    }
    SUBCASE("int8 into int32 (the default path), odd sizes, a vector") {
        auto a = input(int8, {31, 300}, "a"), b = input(int8, {300, 5}, "b");
        const auto ks = compile_product("mma_i8", {matmul(a, b)});
        CHECK(ks.kernel.find("lm::mma_m16n8k32_s8(") != std::string::npos);
        compile_product("mma_i8_vec", {matmul(input(int8, {64}, "v"), input(int8, {64, 100}, "m"))});
    }
    SUBCASE("float16 with K past a chunk (one pass: no workspace), a prologue and a hinted tile") {
        auto a = input(float16, {8, 20000}, "a"), b = input(float16, {20000, 8}, "b");
        const auto plan = plan_of({matmul(a, b)}, tc);
        CHECK(plan.kernels.at(0).as<codegen::PlannedMatmul>().plan.tensor_cores);
        CHECK(!plan.kernels.at(0).as<codegen::PlannedMatmul>().plan.chunked);
        golden::compile_sm90(
            codegen::emit_matmul("mma_long_k", plan.kernels[0].as<codegen::PlannedMatmul>()));
        auto h = input(float16, {96, 64}, "h"), s = input(float16, {96, 64}, "s"),
             w = input(float16, {64, 80}, "w");
        compile_product("mma_prologue", {matmul(binary(Op::Add, h, s), w)}, 1, tc);
        auto y = matmul(input(float16, {256, 256}, "x"), input(float16, {256, 256}, "z"), Loc::current(),
                        ProductTile{64, 64, 64});
        const auto hinted = plan_of({y}, tc);
        CHECK(hinted.kernels.at(0).as<codegen::PlannedMatmul>().plan.warps_m *
                  hinted.kernels.at(0).as<codegen::PlannedMatmul>().plan.warps_n ==
              8);
        golden::compile_sm90(
            codegen::emit_matmul("mma_hinted", hinted.kernels[0].as<codegen::PlannedMatmul>()));
    }
    SUBCASE("a tile that is not whole MMA tiles is an error naming the limit") {
        auto y = matmul(input(int8, {64, 64}, "x"), input(int8, {64, 64}, "z"), Loc::current(),
                        ProductTile{64, 64, 16});
        CHECK_THROWS_WITH_AS(plan_of({y}), doctest::Contains("tile_k of 32 (the k of one mma.sync for int8)"),
                             Error);
    }
}

TEST_CASE("matmul kernels of every dtype, layout and schedule compile with NVRTC") {
    auto f16 = [](Shape s, const char* l) { return input(float16, std::move(s), l); };
    SUBCASE("float64, a column bias and a residual") {
        auto a = input(float64, {100, 70}, "a"), b = input(float64, {70, 90}, "b");
        auto c = input(float64, {100, 1}, "c"), r = input(float64, {100, 90}, "r");
        const auto ks = compile_product("mm_f64", {binary(Op::Add, binary(Op::Mul, matmul(a, b), c), r)});
        CHECK(ks.kernel.find("__fma_rn(") != std::string::npos);
    }
    SUBCASE("float16 batched, broadcast batch, result cast to float32") {
        auto a = f16({3, 1, 33, 40}, "a"), b = f16({4, 40, 17}, "b");
        compile_product("mm_f16", {cast(matmul(a, b), float32)});
    }
    SUBCASE("bfloat16 with a transposed operand on CUDA cores: the scalar variant only") {
        auto a = input(bfloat16, {64, 48}, "a"), w = input(bfloat16, {80, 48}, "w");
        const auto plan = plan_of({matmul(a, transpose(w))}, Options{.product_path = ProductPath::CudaCores});
        CHECK(plan.kernels.at(0)
                  .as<codegen::PlannedMatmul>()
                  .plan.vector_a);  // A's rows are contiguous: 16-byte pieces
        CHECK(!plan.kernels.at(0)
                   .as<codegen::PlannedMatmul>()
                   .plan.vector_b);  // B = w.T runs along k: element loads
        compile_product("mm_bf16_t", {matmul(a, transpose(w))});
    }
    SUBCASE("int8 x int8 -> int32 times a scalar") {
        auto a = input(int8, {31, 300}, "a"), b = input(int8, {300, 5}, "b");
        compile_product("mm_i8",
                        {binary(Op::Mul, matmul(a, b),
                                scalar(make_scalar_value(3.0, int32, "test", Loc::current()), int32))});
    }
    SUBCASE("K longer than a chunk: the pairwise tree through a workspace") {
        auto a = input(float32, {8, 20000}, "a"), b = input(float32, {20000, 8}, "b");
        const auto plan = plan_of({matmul(a, b)});
        REQUIRE(plan.kernels.size() == 1);
        CHECK(plan.kernels[0].as<codegen::PlannedMatmul>().plan.chunked);
        CHECK(plan.kernels[0].as<codegen::PlannedMatmul>().binding.chunks == 3);
        CHECK(plan.kernels[0].as<codegen::PlannedMatmul>().binding.levels == 2);
        CHECK(plan.kernels[0].as<codegen::PlannedMatmul>().plan.tile_m == 16);  // a short M gets a short tile
        golden::compile_sm90(
            codegen::emit_matmul("mm_chunked", plan.kernels[0].as<codegen::PlannedMatmul>()));
    }
    SUBCASE(
        "matrix-vector products: one-wide tiles, a thread per output, the matrix and the vector in pieces") {
        auto a = input(float32, {4096, 16384}, "a"), x = input(float32, {16384}, "x");
        const auto plan = plan_of({matmul(a, x)});
        REQUIRE(plan.kernels.size() == 1);
        const codegen::MatmulPlan& p = plan.kernels[0].as<codegen::PlannedMatmul>().plan;
        CHECK(p.tile_m == 128);
        CHECK(p.tile_n == 1);
        CHECK(p.tile_k == 128);
        CHECK(p.threads() == 128);
        CHECK(p.lanes_m == 32);
        CHECK(p.a_read == 4);  // 32 rows per warp, 68 words apart: 16-byte reads meet in no bank
        CHECK(p.vector_a);
        CHECK(!p.vector_b);
        CHECK(p.vector_b_column);  // the vector: unit stride along k
        CHECK(p.pitch_b == 1);
        CHECK(p.chunked);
        const auto ks = codegen::emit_matmul("mm_gemv", plan.kernels[0].as<codegen::PlannedMatmul>());
        CHECK(ks.kernel.find("lm::load_vec<float, 4>(as + (row0 + 32 * i) * 132 + k4)") != std::string::npos);
        CHECK(ks.kernel.find("mm_gemv_load_b_pieces") !=
              std::string::npos);  // the vector along k in cp.async pieces
        CHECK(ks.kernel.find("lm::load_vec<float, 4>(bs + k4)") !=
              std::string::npos);  // the vector, 4 k per broadcast read
        golden::check_text("matmul_gemv_f32", ks.kernel);
        golden::compile_sm90(ks);
        // A vector times a matrix: a one-high tile, a thread per column.
        const auto vt = plan_of({matmul(x, input(float32, {16384, 4096}, "w"))});
        const codegen::MatmulPlan& q = vt.kernels.at(0).as<codegen::PlannedMatmul>().plan;
        CHECK(q.tile_m == 1);
        CHECK(q.tile_n == 128);
        CHECK(q.vector_a);
        CHECK(q.vector_b);
        CHECK(q.a_read == 4);  // the vector's 16-byte reads, one broadcast per warp
        CHECK(q.b_read == 1);  // one column per thread
        golden::compile_sm90(codegen::emit_matmul("mm_gevm", vt.kernels[0].as<codegen::PlannedMatmul>()));
    }
    SUBCASE("a batch of 64 x 64 x 64 products: K in one step, two stages") {
        auto a = input(float32, {256, 64, 64}, "a"), b = input(float32, {256, 64, 64}, "b");
        const auto plan = plan_of({matmul(a, b)});
        const codegen::MatmulPlan& p = plan.kernels.at(0).as<codegen::PlannedMatmul>().plan;
        CHECK(p.tile_m == 64);
        CHECK(p.tile_n == 64);
        CHECK(p.tile_k == 64);
        CHECK(p.stages == 2);
        golden::compile_sm90(codegen::emit_matmul("mm_bmm64", plan.kernels[0].as<codegen::PlannedMatmul>()));
    }
    SUBCASE("a vector times a matrix, and two outputs of one product") {
        auto v = input(float32, {64}, "v"), m = input(float32, {64, 200}, "m");
        auto p = matmul(v, m);  // [200]: a reshape of the [1, 200] product
        compile_product("mm_vec", {p});
        auto x = input(float32, {40, 64}, "x");
        auto q = matmul(x, m);
        compile_product("mm_two", {q, unary(Op::Relu, q)});
    }
    SUBCASE(
        "prologues: a float16 operand cast to float32 and a scaled, transposed one, computed as the tiles "
        "load") {
        auto h = f16({96, 64}, "h"), w = input(float32, {80, 64}, "w");
        const auto plan = plan_of(
            {matmul(cast(h, float32),
                    binary(Op::Mul, transpose(w),
                           scalar(make_scalar_value(0.5, float32, "test", Loc::current()), float32)))});
        REQUIRE(plan.kernels.size() == 1);
        const codegen::MatmulPlan& p = plan.kernels[0].as<codegen::PlannedMatmul>().plan;
        CHECK(p.a_prologue);
        CHECK(p.b_prologue);
        CHECK(!p.vector_a);
        CHECK(!p.vector_b);
        CHECK(plan.partition.kernels[0].why.find("its prologue runs as the tiles load: cast") !=
              std::string::npos);
        const auto ks = codegen::emit_matmul("mm_prologue", plan.kernels[0].as<codegen::PlannedMatmul>());
        CHECK(ks.kernel.find("mm_prologue_pa_element(p.pa,") != std::string::npos);
        golden::compile_sm90(ks);
        // A transcendental operand is materialized instead, the reason in the plan.
        const auto plan2 =
            plan_of({matmul(unary(Op::Exp, input(float32, {32, 32}, "e")), input(float32, {32, 32}, "f"))});
        CHECK(plan2.kernels.size() == 2);
        CHECK(plan2.to_string().find("computed first: exp") != std::string::npos);
    }
    SUBCASE("a hinted tile") {
        auto a = input(float32, {256, 256}, "a"), b = input(float32, {256, 256}, "b");
        auto y = matmul(a, b, Loc::current(), ProductTile{64, 32, 32});
        const auto plan = plan_of({y});
        const codegen::MatmulPlan& p = plan.kernels[0].as<codegen::PlannedMatmul>().plan;
        CHECK(p.hinted);
        CHECK(p.tile_m == 64);
        CHECK(p.tile_n == 32);
        CHECK(p.tile_k == 32);
        const auto ks = codegen::emit_matmul("mm_hinted", plan.kernels[0].as<codegen::PlannedMatmul>());
        CHECK(ks.kernel.find("tile 64x32x32 (hinted)") != std::string::npos);
        golden::compile_sm90(ks);
    }
}

TEST_CASE(
    "matmul: a kernel that reads the product twice, once through a transposing view, is not its epilogue") {
    // Found by the fuzzer (seed 1799177366): relu(mm) and relu(mm).T + c over a square product; the
    // transposed read must come from memory, never from the accumulators' placeholder.
    for (const std::int64_t k : {0, 40}) {
        auto a = input(int8, {9, k}, "a"), b = input(int8, {k, 9}, "b"), c = input(int32, {9, 9}, "c");
        auto mm = matmul(a, unary(Op::Neg, b));
        auto r = unary(Op::Relu, mm);
        const auto plan = plan_of({binary(Op::Add, transpose(r), c), r});
        INFO(plan.to_string());
        CHECK(plan.to_string().find("not an epilogue: kernel") != std::string::npos);
        CHECK(plan.to_string().find("through a view (permute") != std::string::npos);
        for (std::size_t i = 0; i < plan.kernels.size(); ++i) {
            if (plan.partition.kernels[i].family != codegen::Family::MatMul) continue;
            const codegen::PlannedMatmul& pm = plan.kernels[i].as<codegen::PlannedMatmul>();
            // Every load of the placeholder in the epilogue is the accumulator site.
            for (std::size_t s = 0; s < pm.plan.epilogue.loads.size(); ++s)
                if (pm.inputs.at(pm.a_inputs + pm.b_inputs +
                                 static_cast<std::size_t>(pm.plan.epilogue.loads[s].input)) ==
                    pm.accumulators.get())
                    CHECK(static_cast<int>(s) == pm.plan.acc_site);
            golden::compile_sm90(codegen::emit_matmul("mm_twice", pm));
        }
    }
}

TEST_CASE(
    "matmul plan: batch pipelining, the staged epilogue, the vector in pieces along k, and each call's "
    "loads") {
    using codegen::select_matmul_loads;
    SUBCASE("M6's shape: two blocks per SM walk 4096 entries, storing from registers") {
        auto a = input(float32, {4096, 64, 64}, "a"), b = input(float32, {4096, 64, 64}, "b");
        const auto plan = plan_of({matmul(a, b)});
        const codegen::PlannedMatmul& pm = plan.kernels.at(0).as<codegen::PlannedMatmul>();
        CHECK(pm.plan.batch_pipelined);
        CHECK(pm.plan.blocks_per_sm ==
              2);  // 4 x 4 accumulators: two blocks of 256 threads fit 128 registers each
        CHECK(!pm.plan.staged_epilogue);  // a third barrier per entry cost 13% on the H200
        CHECK(pm.binding.batch_blocks == 2 * 132);
        CHECK(codegen::matmul_launch(pm).grid_y == 2 * 132);
        CHECK(pm.plan.to_string().find("each block walking batch entries") != std::string::npos);
        const auto ks = codegen::emit_matmul("mm_bp", pm);
        CHECK(ks.kernel.find("__launch_bounds__(256, 2)") != std::string::npos);
        CHECK(ks.kernel.find("lm::cp_async_wait<1>();") != std::string::npos);
    }
    SUBCASE("fewer entries than resident blocks, several tiles per entry, and K past one step") {
        auto few = plan_of({matmul(input(float32, {3, 33, 31}, "a"), input(float32, {3, 31, 17}, "b"))});
        CHECK(few.kernels.at(0).as<codegen::PlannedMatmul>().plan.batch_pipelined);
        CHECK(few.kernels.at(0).as<codegen::PlannedMatmul>().binding.batch_blocks == 3);
        auto tiles = plan_of({matmul(input(float32, {300, 130, 20}, "a"), input(float32, {20, 70}, "b"))});
        const codegen::PlannedMatmul& t = tiles.kernels.at(0).as<codegen::PlannedMatmul>();
        CHECK(t.plan.batch_pipelined);
        CHECK(t.plan.blocks_per_sm == 1);     // 8 x 8 accumulators: one block per SM
        CHECK(t.binding.batch_blocks == 66);  // 132 resident blocks over 2 tiles per entry
        auto deep = plan_of({matmul(input(float32, {2, 512, 256}, "a"), input(float32, {256, 512}, "b"))});
        const codegen::PlannedMatmul& d = deep.kernels.at(0).as<codegen::PlannedMatmul>();
        CHECK(!d.plan.batch_pipelined);
        CHECK(d.binding.batch_blocks == 2);
        CHECK(d.plan.staged_epilogue);
        CHECK(d.plan.shared_bytes() >=
              d.plan.epilogue_tile_bytes());  // the tile of outputs fits the stage buffers
        auto tc = plan_of({matmul(input(float16, {64, 64, 64}, "a"), input(float16, {64, 64, 64}, "b"))},
                          Options{.product_path = ProductPath::TensorCores});
        CHECK(!tc.kernels.at(0)
                   .as<codegen::PlannedMatmul>()
                   .plan.batch_pipelined);  // tensor cores keep the plain batch loop
    }
    SUBCASE("two blocks per SM for few K steps (M3's shape), one for long K (M1's)") {
        auto bias = input(float32, {4096}, "bias");
        const auto m3 = plan_of(
            {unary(Op::GeluErf,
                   binary(Op::Add, matmul(input(float32, {4096, 256}, "a"), input(float32, {256, 4096}, "b")),
                          bias))});
        const codegen::PlannedMatmul& pm3 = m3.kernels.at(0).as<codegen::PlannedMatmul>();
        CHECK(pm3.plan.staged_epilogue);
        CHECK(pm3.plan.blocks_per_sm == 2);
        CHECK(pm3.plan.to_string().find("2 blocks per multiprocessor") != std::string::npos);
        const auto ks = codegen::emit_matmul("mm_two", pm3);
        CHECK(ks.kernel.find("__launch_bounds__(256, 2)") != std::string::npos);
        golden::compile_sm90(ks);
        const auto m1 =
            plan_of({matmul(input(float32, {4096, 4096}, "a"), input(float32, {4096, 4096}, "b"))});
        const codegen::PlannedMatmul& pm1 = m1.kernels.at(0).as<codegen::PlannedMatmul>();
        CHECK(pm1.plan.blocks_per_sm < 2);  // K = 4096: 4096^3 lost 1% with two on the H200
        CHECK(codegen::emit_matmul("mm_one", pm1).kernel.find("__launch_bounds__(256)") != std::string::npos);
    }
    SUBCASE(
        "the epilogue 4 columns at a time where N and every pointer it streams allow (M3's shape, M6's)") {
        auto bias = input(float32, {4096}, "bias");
        const auto m3 = plan_of(
            {unary(Op::GeluErf,
                   binary(Op::Add, matmul(input(float32, {4096, 256}, "a"), input(float32, {256, 4096}, "b")),
                          bias))});
        const codegen::PlannedMatmul& pm = m3.kernels.at(0).as<codegen::PlannedMatmul>();
        REQUIRE(pm.plan.vector_epilogue == 4);
        CHECK(pm.plan.to_string().find("4 columns at a time (16-byte vectors) where the pointers allow") !=
              std::string::npos);
        alignas(16) static float storage[16];
        auto inputs = [&](const codegen::PlannedMatmul& p, const void* bias_ptr) {
            std::vector<const void*> v;
            for (const ir::Node* in : p.inputs)
                v.push_back(in == p.accumulators.get() ? nullptr
                            : in->label() == "bias"    ? bias_ptr
                                                       : static_cast<const void*>(storage));
            return v;
        };
        void* const aligned_out[] = {storage};
        void* const off_out[] = {storage + 2};  // 8 bytes past a 16-byte boundary
        CHECK(select_matmul_loads(pm, inputs(pm, storage), aligned_out).epilogue_vectors);
        CHECK(!select_matmul_loads(pm, inputs(pm, storage), off_out).epilogue_vectors);
        CHECK(!select_matmul_loads(pm, inputs(pm, storage + 1), aligned_out)
                   .epilogue_vectors);  // the bias 4 bytes off
        // The bit reaches the kernel as `pieces` bit 2, which picks the vector walk.
        std::vector<std::byte> bytes(pm.plan.params.size);
        codegen::pack_matmul_params(pm, inputs(pm, storage), aligned_out, nullptr, nullptr,
                                    select_matmul_loads(pm, inputs(pm, storage), aligned_out), bytes);
        std::int64_t pieces = 0;
        for (const codegen::ParamField& f : pm.plan.params.fields)
            if (f.name == "pieces") std::memcpy(&pieces, bytes.data() + f.offset, sizeof pieces);
        CHECK(pieces == 7);
        const auto ks = codegen::emit_matmul("mm_ep4", pm);
        CHECK(ks.kernel.find("if (p.pieces & 4) {") != std::string::npos);
        CHECK(ks.kernel.find("mm_ep4_ep_element4(p.ep, (int)((batch * p.M + m) * p.N + n), "
                             "lm::load_vec<float, 4>(ct + row * 132 + col));") != std::string::npos);
        golden::compile_sm90(ks);
        // A flat epilogue (no bias) of a row length that is not whole vectors: the plan has vectors, the call
        // not.
        const auto odd = plan_of(
            {unary(Op::Relu, matmul(input(float32, {64, 256}, "a"), input(float32, {256, 4095}, "b")))});
        const codegen::PlannedMatmul& po = odd.kernels.at(0).as<codegen::PlannedMatmul>();
        if (po.plan.vector_epilogue == 4)
            CHECK(!select_matmul_loads(po, inputs(po, storage), aligned_out).epilogue_vectors);
        // A bias row that is not whole vectors: no vector variant planned.
        const auto odd_bias =
            plan_of({binary(Op::Add, matmul(input(float32, {64, 256}, "a"), input(float32, {256, 4094}, "b")),
                            input(float32, {4094}, "bias"))});
        CHECK(odd_bias.kernels.at(0).as<codegen::PlannedMatmul>().plan.vector_epilogue == 0);
        // M6: the batch-pipelined kernel stores from its registers, 4 columns per store.
        const auto m6 =
            plan_of({matmul(input(float32, {4096, 64, 64}, "a"), input(float32, {4096, 64, 64}, "b"))});
        const codegen::PlannedMatmul& p6 = m6.kernels.at(0).as<codegen::PlannedMatmul>();
        REQUIRE(p6.plan.batch_pipelined);
        CHECK(p6.plan.vector_epilogue == 4);
        const auto k6 = codegen::emit_matmul("mm6_ep4", p6);
        CHECK(k6.kernel.find("mm6_ep4_ep_element4(p.ep,") != std::string::npos);
        golden::compile_sm90(k6);
        // mma.sync keeps element stores; wgmma's staged epilogue takes vectors of one swizzled piece (8
        // float16 values).
        const auto a = input(float16, {256, 256}, "a"), b = input(float16, {256, 256}, "b");
        const auto mma = plan_of({matmul(a, b)}, Options{.product_path = ProductPath::MmaSync});
        CHECK(mma.kernels.at(0).as<codegen::PlannedMatmul>().plan.vector_epilogue == 0);
        const auto tc = plan_of({matmul(a, b)}, Options{.product_path = ProductPath::TensorCores});
        CHECK(tc.kernels.at(0).as<codegen::PlannedMatmul>().plan.wgmma);
        CHECK(tc.kernels.at(0).as<codegen::PlannedMatmul>().plan.vector_epilogue == 8);
    }
    SUBCASE(
        "a matrix times a vector: the vector's pieces along k where the pointer, K and the strides allow") {
        auto a = input(float32, {4096, 4096}, "a"), x = input(float32, {4096}, "x");
        const auto plan = plan_of({matmul(a, x)});
        const codegen::PlannedMatmul& pm = plan.kernels.at(0).as<codegen::PlannedMatmul>();
        REQUIRE(pm.plan.vector_b_column);
        alignas(16) static float storage[16];
        const void* aligned = storage;
        const void* off = storage + 1;  // 4 bytes past a 16-byte boundary
        const void* both[] = {aligned, aligned};
        void* const outs[] = {storage};
        CHECK(select_matmul_loads(pm, both, outs).b_pieces);
        CHECK(select_matmul_loads(pm, both, outs).a_pieces);
        const void* vector_off[] = {aligned, off};
        CHECK(!select_matmul_loads(pm, vector_off, outs).b_pieces);
        CHECK(select_matmul_loads(pm, vector_off, outs).a_pieces);
        // K not whole pieces: element loads for both.
        const auto odd = plan_of({matmul(input(float32, {4096, 4097}, "a"), input(float32, {4097}, "x"))});
        const codegen::PlannedMatmul& po = odd.kernels.at(0).as<codegen::PlannedMatmul>();
        CHECK(po.plan.vector_b_column);
        CHECK(!select_matmul_loads(po, both, outs).b_pieces);
        CHECK(!select_matmul_loads(po, both, outs).a_pieces);
        // A row-major B of one column read through a k-stride of N is not a column in pieces.
        const auto wide =
            plan_of({matmul(a, input(float32, {4096, 64}, "w"))}, Options{.tile = TileHint{128, 1, 128}});
        CHECK(!wide.kernels.at(0).as<codegen::PlannedMatmul>().plan.vector_b_column);
    }
}

TEST_CASE(
    "matmul plan: split K when the tiles leave multiprocessors idle: aligned groups of chunks along the "
    "grid's z") {
    SUBCASE("M5's shape: 128 tiles on 132 SMs, two groups of one chunk") {
        const auto plan =
            plan_of({matmul(input(float32, {16384, 16384}, "a"), input(float32, {16384}, "x"))});
        const codegen::PlannedMatmul& pm = plan.kernels.at(0).as<codegen::PlannedMatmul>();
        CHECK(pm.plan.chunked);
        CHECK(pm.plan.split_k);
        CHECK(pm.binding.k_groups == 2);
        CHECK(pm.binding.group_chunks == 1);
        CHECK(codegen::matmul_launch(pm).grid_x == 128);
        CHECK(codegen::matmul_launch(pm).grid_z == 2);
        CHECK(codegen::matmul_counter_count(pm) == 128);
        // Per group: a stack of bit_width(1) = 1 slot and its partial; each slot one float per output.
        CHECK(codegen::matmul_workspace_bytes(pm) == 2 * (1 + 1) * 16384 * 4);
        CHECK(pm.plan.to_string().find("shared among blocks in aligned groups of chunks") !=
              std::string::npos);
        CHECK(plan.to_string().find("shared among 2 blocks per tile along the grid's z, 1 chunk(s) each") !=
              std::string::npos);
        const auto ks = codegen::emit_matmul("mm_split", pm);
        CHECK(ks.kernel.find("atomicAdd(count, 1u)") != std::string::npos);
        CHECK(ks.kernel.find("if (!lm_last) continue;") != std::string::npos);
        golden::compile_sm90(ks);
    }
    SUBCASE("one tile and 20 chunks: 16 groups asked, groups of 2 chunks, 10 of them") {
        const auto plan =
            plan_of({matmul(input(float32, {100, 20 * 8192}, "a"), input(float32, {20 * 8192, 3}, "b"))});
        const codegen::PlannedMatmul& pm = plan.kernels.at(0).as<codegen::PlannedMatmul>();
        CHECK(pm.plan.split_k);
        CHECK(pm.binding.group_chunks == 2);
        CHECK(pm.binding.k_groups == 10);
        CHECK(codegen::matmul_workspace_bytes(pm) == 10 * (2 + 1) * 100 * 3 * 4);
    }
    SUBCASE("five chunks on three tiles: five groups of one (an odd group carried up the tree)") {
        const auto plan =
            plan_of({matmul(input(float32, {300, 4 * 8192 + 3}, "a"), input(float32, {4 * 8192 + 3}, "x"))});
        const codegen::PlannedMatmul& pm = plan.kernels.at(0).as<codegen::PlannedMatmul>();
        CHECK(pm.plan.split_k);
        CHECK(pm.binding.group_chunks == 1);
        CHECK(pm.binding.k_groups == 5);
    }
    SUBCASE("no split: one chunk, a tile for every SM, tensor cores") {
        CHECK(!plan_of({matmul(input(float32, {16384, 8192}, "a"), input(float32, {8192}, "x"))})
                   .kernels.at(0)
                   .as<codegen::PlannedMatmul>()
                   .plan.split_k);
        const auto many =
            plan_of({matmul(input(float32, {128 * 133, 8192 + 1}, "a"), input(float32, {8192 + 1}, "x"))});
        CHECK(many.kernels.at(0).as<codegen::PlannedMatmul>().plan.chunked);
        CHECK(!many.kernels.at(0).as<codegen::PlannedMatmul>().plan.split_k);
        CHECK(codegen::matmul_counter_count(many.kernels.at(0).as<codegen::PlannedMatmul>()) == 0);
        const auto tc =
            plan_of({matmul(input(bfloat16, {64, 20000}, "a"), input(bfloat16, {20000, 64}, "b"))},
                    Options{.product_path = ProductPath::TensorCores});
        CHECK(
            !tc.kernels.at(0).as<codegen::PlannedMatmul>().plan.split_k);  // one pass over K on tensor cores
    }
}
