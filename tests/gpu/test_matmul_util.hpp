// Helpers of the GPU matmul tests (test_matmul.cpp, test_matmul_epilogue.cpp): the fused-against-unfused
// check, the kernels a graph plans into, and the tile a plan or banner names.
#pragma once

#include <cstdlib>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "test_pointwise_util.hpp"

namespace mmtest {

using namespace loom;

// Plans and kernel texts need the GPU: under LOOM_POINTWISE_TESTS_ON_HOST (pwtest::dev(), a debugging aid
// that runs the graphs on host tensors) only the values are checked.
inline bool on_gpu() {
    return pwtest::dev().is_cuda();
}

// LOOM_TEST_SMALL=1 (the compute-sanitizer step of scripts/device_run.sh, whose time boxes the kernel cases
// share): the largest products are smaller or left out, and K stays short (a sanitizer follows every K step
// of a block through shared memory).
inline bool small_shapes() {
    const char* v = std::getenv("LOOM_TEST_SMALL");
    return v && *v && std::string_view(v) != "0";
}

// run_checked (the reference, into poisoned and then random-filled outputs), then the same arrays unfused
// (every op its own kernel, every value materialized in its dtype; the other options, the product path among
// them, as they are): the same bits. Returns the fused results.
inline std::vector<Tensor> run_both(const std::vector<Array>& arrays, const std::string& what) {
    INFO(what);
    const std::vector<Tensor> fused = pwtest::run_checked(arrays);
    Options options = current_options();
    options.fusion = false;
    const OptionsScope unfused(options);
    const std::vector<Tensor> plain = pwtest::run_checked(arrays, false);
    for (std::size_t k = 0; k < fused.size(); ++k)
        pwtest::require_same_bits(fused[k], plain[k],
                                  fmt::format("{}: output {} fused against unfused", what, k));
    return fused;
}
inline Tensor run_both(const Array& a, const std::string& what) {
    return run_both(std::vector<Array>{a}, what).at(0);
}

// The current options with every product on CUDA cores: float16 and bfloat16 products (which run on tensor
// cores by default) in the contract's order, with the reference's bits.
inline Options cuda_cores() {
    Options o = current_options();
    o.product_path = ProductPath::CudaCores;
    return o;
}

// The kernels that `arrays` plan into on this GPU, and how many of them are products.
struct Kernels {
    std::size_t total = 0;
    std::size_t products = 0;
};
// The fusion plan of `arrays` on this GPU under the current options.
inline codegen::FusionPlan gpu_plan_of(const std::vector<Array>& arrays) {
    const auto graph = ir::run_pipeline(pwtest::roots_of(arrays), ir::standard_passes());
    std::vector<const ir::Node*> sources;
    return gpu::plan_bound(graph, device_info(), current_options(), "", &sources);
}
inline Kernels kernels_of(const std::vector<Array>& arrays) {
    const codegen::FusionPlan plan = gpu_plan_of(arrays);
    Kernels k;
    for (const codegen::FusedKernel& f : plan.partition.kernels) {
        ++k.total;
        if (f.family == codegen::Family::MatMul) ++k.products;
    }
    return k;
}

// The product's path on this GPU, from the explain log: "wgmma", "mma.sync", "TF32" or "3xTF32" (mma.sync
// m16n8k8) or "CUDA cores".
inline std::string product_path_of(const Array& y) {
    const std::string e = explain({y});
    if (e.find("Hopper wgmma.mma_async") != std::string::npos) return "wgmma";
    if (e.find("tensor cores (mma.sync m16n8k8 TF32 into float32, product_precision=3xtf32") !=
        std::string::npos)
        return "3xTF32";
    if (e.find("tensor cores (mma.sync m16n8k8 TF32 into float32, product_precision=tf32") !=
        std::string::npos)
        return "TF32";
    if (e.find("tensor cores (mma.sync") != std::string::npos) return "mma.sync";
    return "CUDA cores";
}

// A tensor-core product `y` (whose value is a @ b) under the current options, into outputs poisoned, then
// holding random values: within the bound of the exact product, the same bits both times and unfused.
// Returns the result.
// `precision`: the bound of a float32 product in TF32 or 3xTF32 (Options::product_precision).
inline Tensor run_within_bound(const Array& y, const Tensor& a, const Tensor& b, const std::string& what,
                               ProductPrecision precision = ProductPrecision::Float32) {
    INFO(what);
    Tensor out = Tensor::empty(y.shape(), y.dtype(), pwtest::dev());
    if (out.numel() > 0) testing::poison(out);
    assign(out, y);
    pwtest::wait_device();
    const testing::Comparison c = testing::compare_product_bound(out, a, b, what, precision);
    if (!c.ok) FAIL_CHECK(c.message);
    CHECK(c.ok);
    Tensor again = Tensor::empty(y.shape(), y.dtype(), pwtest::dev());
    if (again.numel() > 0) testing::fill_random(again, 0x7c, pwtest::default_dist(again.dtype()));
    assign(again, y);
    pwtest::wait_device();
    pwtest::require_same_bits(again, out, what + ": a second run into outputs holding random values");
    Options unfused = current_options();
    unfused.fusion = false;
    const OptionsScope scope(unfused);
    pwtest::require_same_bits(y.eval(), out, what + ": unfused");
    return out;
}

// `y` fused and unfused (every op its own kernel, the same product plan: the plan never depends on the
// epilogue), each into poisoned outputs: the same bits.
inline void fused_equals_unfused(const Array& y, const std::string& what) {
    INFO(what);
    Tensor fused = Tensor::empty(y.shape(), y.dtype(), pwtest::dev()),
           plain = Tensor::empty(y.shape(), y.dtype(), pwtest::dev());
    testing::poison(fused);
    testing::poison(plain);
    assign(fused, y);
    {
        Options unfused = current_options();
        unfused.fusion = false;
        const OptionsScope scope(unfused);
        assign(plain, y);
    }
    pwtest::wait_device();
    pwtest::require_same_bits(plain, fused, what + ": fused against unfused");
}

// A contiguous copy of a view.
inline Tensor copy_of(const Tensor& v) {
    Tensor c = Tensor::empty(v.shape(), v.dtype(), pwtest::dev());
    assign(c, Array(v));
    pwtest::wait_device();
    return c;
}

// Half-precision operands with small integer values: every sum of up to 2^18 products (|a b| <= 64) is exact
// in float32 whatever the order, so tensor cores give the reference's bits.
inline Tensor integer_valued(const Shape& shape, DType d, std::uint64_t seed) {
    const Tensor i = testing::random_tensor(shape, int8, seed, testing::Random::uniform(-8, 8));
    return reference::cast(i, d).to(pwtest::dev());
}

// The first "tile RxCxD" of a product kernel in an explain text or a kernel banner, as "RxCxD" (empty: none).
inline std::string tile_of(const std::string& text) {
    static const std::regex re(R"(tile (\d+x\d+x\d+))");
    std::smatch m;
    return std::regex_search(text, m, re) ? m[1].str() : std::string();
}

}  // namespace mmtest
