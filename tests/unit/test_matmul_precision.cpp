// The bounds of float32 products in TF32 and 3xTF32 (docs/semantics.md, section 12, "TF32";
// reference::product_bound_factor, testing::compare_product_bound): checked on a host emulation of the
// kernels' operand arithmetic (TF32: each operand truncated to TF32, its low 13 bits dropped; 3xTF32: rounded
// to nearest, ties away from zero, saturating, and split into big and small parts and a_small b_small
// dropped), the products and sums in float64, and shown to tell the precisions apart. The environment
// variable and the options text name the choice.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <loom/loom.hpp>
#include <vector>

#include "../common/gpu_explain.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

// TF32 as the single-pass kernels read it (lm::tf32_truncate, and wgmma's tensor cores): the low 13 mantissa
// bits dropped.
float tf32_truncated(float x) {
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) & 0xffffe000u);
}

// TF32 as 3xTF32 rounds its big and small parts (lm::tf32_round): 10 explicit mantissa bits, to nearest with
// ties away from zero, a finite value that would round to Inf kept at TF32's largest finite value.
float tf32(float x) {
    if (!std::isfinite(x)) return x;
    std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    const std::uint32_t sign = u & 0x80000000u;
    std::uint32_t mag = ((u & 0x7fffffffu) + 0x1000u) & 0xffffe000u;
    if (mag >= 0x7f800000u) mag = 0x7f7fe000u;
    return std::bit_cast<float>(sign | mag);
}

// The product of `a` [M, K] and `b` [K, N] (float32, host, contiguous) with the operands as the precision
// takes them, in float64.
Tensor emulate(const Tensor& a, const Tensor& b, ProductPrecision p) {
    const std::int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
    const auto* av = static_cast<const float*>(a.data());
    const auto* bv = static_cast<const float*>(b.data());
    std::vector<double> out(static_cast<std::size_t>(M * N));
    for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
            double acc = 0;
            for (std::int64_t k = 0; k < K; ++k) {
                const float x = av[i * K + k], y = bv[k * N + j];
                const double xb = tf32(x), yb = tf32(y);
                if (p == ProductPrecision::TF32) {
                    acc += static_cast<double>(tf32_truncated(x)) * tf32_truncated(y);
                } else {
                    const double xs = tf32(static_cast<float>(x - xb)), ys = tf32(static_cast<float>(y - yb));
                    acc += xs * yb + xb * ys + xb * yb;
                }
            }
            out[static_cast<std::size_t>(i * N + j)] = acc;
        }
    return from_host(out, {M, N}, float64, Device::cpu());
}

}  // namespace

TEST_CASE("TF32 and 3xTF32 bounds: an emulation lies within its own, and TF32 outside 3xTF32's") {
    CHECK(reference::product_bound_factor(8) == reference::product_gamma(8, reference::kMmaUnit));
    CHECK(reference::product_bound_factor(8, ProductPrecision::TF32) > 0x1p-10);
    CHECK(reference::product_bound_factor(8, ProductPrecision::TF32x3) < 0x1p-16);
    CHECK(std::isinf(
        reference::product_bound_factor(std::int64_t{1} << 21, ProductPrecision::TF32x3)));  // 3K 2^-22 >= 1
    CHECK(std::isfinite(reference::product_bound_factor(std::int64_t{1} << 21, ProductPrecision::TF32)));
    for (std::int64_t K : {8, 300}) {
        const Tensor a = testing::random_tensor({24, K}, float32, 11),
                     b = testing::random_tensor({K, 20}, float32, 12);
        INFO("K = " << K);
        for (ProductPrecision p : {ProductPrecision::TF32, ProductPrecision::TF32x3}) {
            const testing::Comparison c =
                testing::compare_product_bound(emulate(a, b, p), a, b, "emulated", p);
            INFO(c.message);
            CHECK(c.ok);
        }
        // The exact float32 product lies within both bounds.
        for (ProductPrecision p : {ProductPrecision::TF32, ProductPrecision::TF32x3})
            CHECK(testing::compare_product_bound(reference::evaluate(matmul(a, b).node()), a, b, "float32", p)
                      .ok);
    }
    // For a short K the 3xTF32 bound is tight enough that TF32's rounding of the operands breaks it.
    const Tensor a = testing::random_tensor({24, 8}, float32, 13),
                 b = testing::random_tensor({8, 20}, float32, 14);
    const testing::Comparison c = testing::compare_product_bound(
        emulate(a, b, ProductPrecision::TF32), a, b, "TF32 against 3xTF32's bound", ProductPrecision::TF32x3);
    CHECK(!c.ok);
    CHECK(c.message.find("(3 2^-22 + gamma(3K = 24, 2^-22)) (1 + 2^-9)") != std::string::npos);
    // The vacuous bound names 3K for 3xTF32 (K = 2^21: 3K 2^-22 >= 1).
    const Tensor wide = testing::random_tensor({1, std::int64_t{1} << 21}, float32, 15),
                 tall = testing::random_tensor({std::int64_t{1} << 21, 1}, float32, 16);
    const testing::Comparison v = testing::compare_product_bound(
        reference::evaluate(matmul(wide, tall).node()), wide, tall, "long", ProductPrecision::TF32x3);
    CHECK(!v.ok);
    CHECK(v.message.find("vacuous (3K 2^-22 >= 1)") != std::string::npos);
}

TEST_CASE("LOOM_PRODUCT_PRECISION sets the default precision, an unknown value warns and keeps float32") {
    const char* before = std::getenv("LOOM_PRODUCT_PRECISION");
    const std::string saved = before ? before : "";
    setenv("LOOM_PRODUCT_PRECISION", "3xtf32", 1);
    CHECK(environment_options().product_precision == ProductPrecision::TF32x3);
    setenv("LOOM_PRODUCT_PRECISION", "tf32", 1);
    CHECK(environment_options().product_precision == ProductPrecision::TF32);
    setenv("LOOM_PRODUCT_PRECISION", "fp8", 1);
    CHECK(environment_options().product_precision == ProductPrecision::Float32);
    if (before)
        setenv("LOOM_PRODUCT_PRECISION", saved.c_str(), 1);
    else
        unsetenv("LOOM_PRODUCT_PRECISION");
}

TEST_CASE("TF32 and 3xTF32 in the explain log: the path and the precision on the GPU planner") {
    const Tensor x = Tensor::host({64, 32}, float32),
                 w = Tensor::host({32, 16}, float32);  // planned, never run
    // Planned for Hopper (the H200 without a GPU): TF32 takes wgmma, 3xTF32 and a forced mma.sync the
    // mma.sync kernel.
    for (ProductPath path : {ProductPath::Auto, ProductPath::MmaSync})
        for (ProductPrecision p : {ProductPrecision::TF32, ProductPrecision::TF32x3}) {
            const OptionsScope scope({.product_path = path, .product_precision = p});
            const bool wgmma = p == ProductPrecision::TF32 && path == ProductPath::Auto;
            const std::string text = loom::cuda_source({matmul(x, w).node()});
            INFO(text.substr(0, 600));
            CHECK(text.find(wgmma ? "wgmma.mma_async m64n64k8 TF32 (product_precision=tf32"
                                  : "tensor cores (mma.sync m16n8k8 TF32 into float32") != std::string::npos);
            CHECK(text.find(fmt::format("product_precision={}", product_precision_name(p))) !=
                  std::string::npos);
            const std::string log = loom_test::gpu_explain({matmul(x, w).node()});
            INFO(log);
            CHECK(log.find(wgmma ? "wgmma.mma_async m64n64k8 TF32 into float32, product_precision=tf32"
                                 : "tensor cores (mma.sync m16n8k8 TF32 into float32") != std::string::npos);
        }
}
