// Golden test of a multi-output kernel: Black-Scholes call and put (samples/black_scholes.cpp's formula,
// written with the DSL over placeholders) as ONE kernel that reads S, K and T once and writes both prices.
#include <loom/loom.hpp>
#include <string>

#include "golden_util.hpp"
#include "loom/ir/build.hpp"

using namespace loom;
using loom::codegen::Access;

namespace {

std::size_t count(const std::string& s, const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + part.size())) ++n;
    return n;
}

bool contains_text(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("golden: Black-Scholes call and put, one kernel, three inputs read once, two outputs") {
    const std::int64_t n = std::int64_t{1} << 26;
    const Array S(ir::input(float32, {n}, "S")), K(ir::input(float32, {n}, "K")),
        T(ir::input(float32, {n}, "T"));
    const double r = 0.02, v = 0.3;
    // samples/black_scholes.cpp
    Array sq = sqrt(T);
    Array d1 = (log(S / K) + (r + 0.5 * v * v) * T) / (v * sq);
    Array d2 = d1 - v * sq;
    Array n1 = 0.5 * (1.0 + erf(d1 * 0.7071067811865476));
    Array n2 = 0.5 * (1.0 + erf(d2 * 0.7071067811865476));
    Array disc = K * exp(-r * T);
    const Array call = S * n1 - disc * n2;
    const Array put = disc * (1.0 - n2) - S * (1.0 - n1);

    const auto ks = golden::run("black_scholes_call_put", {call.node(), put.node()});
    REQUIRE(ks.plan.loads.size() == 3);  // S, K and T, each loaded once
    for (const auto& load : ks.plan.loads) CHECK(load.access == Access::Contiguous);
    CHECK(ks.plan.loads[0].input != ks.plan.loads[1].input);
    CHECK(ks.plan.loads[1].input != ks.plan.loads[2].input);
    REQUIRE(ks.plan.outputs.size() == 2);
    CHECK(ks.plan.vector_width == 4);
    CHECK(ks.plan.vector_flat);
    CHECK(ks.plan.bytes_per_element() == 20);  // 3 reads + 2 writes of 4 bytes
    CHECK_FALSE(ks.plan.params_in_memory);
    // The shared subexpressions are computed once for both outputs: one sqrt, one log, one exp, two erf.
    const std::string body = ks.kernel.substr(ks.kernel.find("_body("));
    CHECK(count(body, "lm::sqrt_(") == 1);
    CHECK(count(body, "lm::log_(") == 1);
    CHECK(count(body, "lm::exp_(") == 1);
    CHECK(count(body, "lm::erf_(") == 2);
    CHECK(count(ks.kernel, "p.out0[e] =") == 1);
    CHECK(count(ks.kernel, "p.out1[e] =") == 1);
}

TEST_CASE("golden: arithmetic-heavy flat kernels are pipelined grid-stride loops, light ones are not") {
    // Black-Scholes: two divisions, log, exp, sqrt and two erf per element: the vector variant loops over
    // at most 16 blocks per SM (132 SMs on the H200) and loads its next vector before this one's math.
    auto black_scholes = [](std::int64_t n) {
        const Array S(ir::input(float32, {n}, "S")), K(ir::input(float32, {n}, "K")),
            T(ir::input(float32, {n}, "T"));
        const Array sq = sqrt(T);
        const Array d1 = (log(S / K) + 0.065 * T) / (0.3 * sq);
        const Array d2 = d1 - 0.3 * sq;
        const Array disc = K * exp(-0.02 * T);
        return std::vector<ir::NodePtr>{(S * erf(d1) - disc * erf(d2)).node(), (disc * erf(d2)).node()};
    };
    const auto outs = black_scholes(std::int64_t{1} << 26);
    const auto ks = codegen::generate_pointwise("bs", outs, golden::contiguous_layouts(outs),
                                                codegen::DeviceInfo::h200());
    CHECK(ks.plan.grid_stride_blocks == 16 * 132);
    CHECK(ks.plan.launch(std::int64_t{1} << 26, codegen::Variant::Vector).grid_x == 16 * 132);
    CHECK(ks.plan.launch(4096, codegen::Variant::Vector).grid_x == 4);  // fewer vectors than the cap
    CHECK(ks.plan.launch(std::int64_t{1} << 26, codegen::Variant::Scalar).grid_x == (1u << 26) / 256);
    CHECK(count(ks.kernel, "if (more) {") == 1);
    CHECK(contains_text(ks.plan.to_string(), "grid-stride"));
    golden::compile_sm90(ks);
    // Past 2^31 elements the same loop runs on 64-bit indices.
    const auto big = black_scholes((std::int64_t{1} << 31) + 5);
    const auto kb = codegen::generate_pointwise("bs_big", big, golden::contiguous_layouts(big),
                                                codegen::DeviceInfo::h200());
    CHECK(kb.plan.index == codegen::IndexWidth::I64);
    CHECK(kb.plan.grid_stride_blocks > 0);
    CHECK(count(kb.kernel, "const long long step") == 1);
    golden::compile_sm90(kb);
    // relu(x * s + b) and a GELU: memory-bound, one vector per thread.
    const Array x(ir::input(float32, {1 << 20}, "x")), b(ir::input(float32, {1 << 20}, "b"));
    for (const Array& y : {relu(x * 2.0 + b), gelu(x) * b, exp(x) / (1.0 + exp(x))}) {
        const auto light = codegen::generate_pointwise(
            "light", {y.node()}, golden::contiguous_layouts({y.node()}), codegen::DeviceInfo::h200());
        CHECK(light.plan.grid_stride_blocks == 0);
        CHECK(count(light.kernel, "if (more) {") == 0);
    }
}
