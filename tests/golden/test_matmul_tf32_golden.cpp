// Golden CUDA and NVRTC compiles of float32 products on tensor cores (Options::product_precision: TF32 and
// 3xTF32 on mma.sync m16n8k8): the plan, its text, and every layout and schedule the kernel takes.
#include <doctest/doctest.h>

#include "golden_util.hpp"
#include "loom/codegen/cuda/matmul_plan.hpp"
#include "loom/ir/error.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

const Options kTF32{.product_precision = ProductPrecision::TF32};
const Options k3xTF32{.product_precision = ProductPrecision::TF32x3};

// The plan of the product of `roots` (a copy: the fusion plan it comes from is a temporary).
codegen::MatmulPlan plan_of(const std::vector<NodePtr>& roots, const Options& options = {},
                            const codegen::DeviceInfo& device = codegen::DeviceInfo::h200()) {
    return golden::matmul_of(golden::plan_gpu(roots, options, true, device)).plan;
}

codegen::KernelSource compile_product(const std::string& name, const std::vector<NodePtr>& roots,
                                      const Options& options) {
    const codegen::FusionPlan plan = golden::plan_gpu(roots, options);
    const codegen::KernelSource ks = codegen::emit_matmul(name, golden::matmul_of(plan));
    golden::compile_sm90(ks);
    return ks;
}

}  // namespace

TEST_CASE(
    "golden: matmul float32 256 x 192 x 160 in 3xTF32 on tensor cores (mma.sync m16n8k8) with a bias and "
    "ReLU") {
    auto a = input(float32, {256, 160}, "a"), b = input(float32, {160, 192}, "b"),
         bias = input(float32, {192}, "bias");
    auto y = unary(Op::Relu, binary(Op::Add, matmul(a, b), bias));
    const codegen::FusionPlan plan = golden::plan_gpu({y}, k3xTF32);
    REQUIRE(plan.kernels.size() == 1);
    const codegen::MatmulPlan& p = golden::matmul_of(plan).plan;
    CHECK(p.tensor_cores);
    CHECK(!p.wgmma);  // TF32 runs on mma.sync on every device
    CHECK(p.precision() == ProductPrecision::TF32x3);
    CHECK(p.mma_k() == 8);
    CHECK(p.tile_k == 32);
    CHECK(p.pitch_a == 36);   // 32 + 4: A's fragment rows 4 words apart mod 32, distinct banks
    CHECK(p.pitch_b == 136);  // 128 + 8: B's fragment k rows 8 words apart mod 32, distinct banks
    CHECK(!p.chunked);        // one pass over K
    const codegen::KernelSource ks = codegen::emit_matmul("matmul_bias_relu_3xtf32", golden::matmul_of(plan));
    golden::check_text("matmul_bias_relu_3xtf32", ks.kernel);
    golden::compile_sm90(ks);
    CHECK(ks.kernel.find("lm::tf32_split(") != std::string::npos);
    CHECK(ks.kernel.find("lm::mma_m16n8k8_tf32(c[i][j], a_small, b_cross[j]);") !=
          std::string::npos);  // the cross terms: Inf and NaN as 0
    CHECK(p.to_string().find("product_precision=3xtf32") != std::string::npos);
}

TEST_CASE("TF32 and 3xTF32: opt-in, float32 only, on mma.sync, a conflicting product path refused") {
    auto x = input(float32, {64, 96}, "x"), w = input(float32, {96, 48}, "w");
    // The default: float32 products on CUDA cores, the reference's bits.
    CHECK(!plan_of({matmul(x, w)}).tensor_cores);
    CHECK(!plan_of({matmul(x, w)}, Options{.product_path = ProductPath::TensorCores}).tensor_cores);
    for (const Options& o : {kTF32, k3xTF32}) {
        for (ProductPath path : {ProductPath::Auto, ProductPath::TensorCores, ProductPath::MmaSync}) {
            Options with = o;
            with.product_path = path;
            const codegen::MatmulPlan p = plan_of({matmul(x, w)}, with);
            CHECK(p.tensor_cores);
            CHECK(p.precision() == o.product_precision);
        }
        // Other dtypes ignore it: float64 on CUDA cores, float16 as its product path says.
        auto d = input(float64, {32, 32}, "d");
        CHECK(!plan_of({matmul(d, d)}, o).tensor_cores);
        auto h = input(float16, {64, 64}, "h");
        const codegen::MatmulPlan hp = plan_of({matmul(h, h)}, o);
        CHECK(hp.tensor_cores);  // float16 runs on tensor cores by default, in its own precision
        CHECK(hp.precision() == ProductPrecision::Float32);
        // An older device without mma.sync keeps float32 on CUDA cores, and the plan says why.
        codegen::DeviceInfo old = codegen::DeviceInfo::h200();
        old.cc_major = 7;
        const codegen::FusionPlan on_old = golden::plan_gpu({matmul(x, w)}, o, true, old);
        CHECK(!golden::matmul_of(on_old).plan.tensor_cores);
        CHECK(on_old.to_string().find(
                  fmt::format("CUDA cores (product_precision={} asked for; this device has no mma.sync)",
                              product_precision_name(o.product_precision))) != std::string::npos);
        // CUDA cores forced conflicts with TF32: an error naming both options and the product.
        Options bad = o;
        bad.product_path = ProductPath::CudaCores;
        auto x2 = input(float32, {64, 96}, "x2"),
             w2 = input(float32, {96, 48}, "w2");  // a product of its own (no common subexpression)
        const int line = __LINE__ + 1;             // the product's line
        const NodePtr conflicting = matmul(x2, w2);
        try {
            (void)golden::plan_gpu({conflicting}, bad);
            FAIL("no error");
        } catch (const Error& e) {
            CHECK(std::string(e.what()) ==
                  fmt::format("matmul(): operands [64, 96] float32 and [96, 48] float32: "
                              "product_precision={} runs float32 products on "
                              "tensor cores, which product_path=cuda_cores forbids: set product_path to "
                              "auto, tensor_cores or mma_sync, "
                              "or product_precision to float32 (LOOM_PRODUCT_PATH and LOOM_PRODUCT_PRECISION "
                              "set the defaults) "
                              "(test_matmul_tf32_golden.cpp:{})",
                              product_precision_name(o.product_precision), line));
        }
    }
    // The two precisions are different kernels (the plan's hash and text).
    const codegen::MatmulPlan p1 = plan_of({matmul(x, w)}, kTF32);
    const codegen::MatmulPlan p3 = plan_of({matmul(x, w)}, k3xTF32);
    CHECK(p1.hash() != p3.hash());
    CHECK(p1.to_string().find("product_precision=tf32") != std::string::npos);
}

TEST_CASE("TF32 and 3xTF32 kernels: every layout and schedule compiles with NVRTC") {
    // The mma.sync kernel (Hopper's wgmma kernels in TF32: test_matmul_wgmma_tf32_golden.cpp).
    for (Options o : {kTF32, k3xTF32}) {
        o.product_path = ProductPath::MmaSync;
        const std::string tag = product_precision_name(o.product_precision);
        SUBCASE("odd sizes, K = 8, transposed operands") {
            auto a = input(float32, {33, 8}, "a"), b = input(float32, {17, 8}, "b");
            const auto ks = compile_product("tf32_t_" + tag, {matmul(a, permute(b, {1, 0}))}, o);
            CHECK(ks.kernel.find("lm::mma_m16n8k8_tf32(") != std::string::npos);
            compile_product(
                "tf32_at_" + tag,
                {matmul(permute(input(float32, {40, 31}, "c"), {1, 0}), input(float32, {40, 9}, "d"))}, o);
        }
        SUBCASE("batched with a broadcast batch, a prologue, a hinted tile, K past a chunk") {
            compile_product("tf32_batch_" + tag,
                            {matmul(input(float32, {3, 1, 20, 40}, "a"), input(float32, {4, 40, 12}, "w"))},
                            o);
            auto a = input(float32, {64, 64}, "a");
            compile_product("tf32_pro_" + tag, {matmul(binary(Op::Mul, a, a), input(float32, {64, 32}, "b"))},
                            o);
            compile_product("tf32_hint_" + tag,
                            {matmul(input(float32, {256, 64}, "a"), input(float32, {64, 256}, "b"),
                                    Loc::current(), ProductTile{64, 64, 16})},
                            o);
            compile_product("tf32_long_" + tag,
                            {matmul(input(float32, {16, 20000}, "a"), input(float32, {20000, 16}, "b"))}, o);
        }
        SUBCASE("an epilogue with several outputs and a cast") {
            auto y = matmul(input(float32, {100, 72}, "a"), input(float32, {72, 50}, "b"));
            compile_product("tf32_ep_" + tag, {y, cast(unary(Op::GeluErf, y), DType::BFloat16)}, o);
        }
    }
}
