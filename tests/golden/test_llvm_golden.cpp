// Golden tests of the LLVM emitters (codegen/llvm/emit.hpp): E1 (relu(x*1.5+0.25), float32) and R1 (row sum
// of a 2-D float32) as LLVM IR text for a fixed AVX-512 host target, compared with tests/golden/expected/*.ll
// (LOOM_UPDATE_GOLDEN=1 rewrites them), then compiled by the loom_llvm module when it is built.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <loom/loom.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "golden_util.hpp"
#include "loom/codegen/llvm/emit.hpp"
#include "loom/codegen/llvm/host_family.hpp"
#include "loom/codegen/llvm/host_plan.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/host_backend.hpp"
#include "loom/runtime/host_backend_abi.h"

using namespace loom;

namespace {

// The host kernels of `ys` over their bound tensors' layouts, for the fixed AVX-512 target.
std::vector<codegen::LlvmKernelSource> llvm_kernels(const std::vector<Array>& ys, std::string_view name) {
    std::vector<ir::NodePtr> roots;
    for (const auto& y : ys) roots.push_back(y.node());
    const auto graph = ir::run_pipeline(roots, ir::standard_passes());
    std::vector<const ir::Node*> sources;
    std::vector<codegen::InputLayout> layouts;
    for (const ir::Node* n : ir::topo_order(graph))
        if (n->op() == ir::Op::Input) {
            sources.push_back(n);
            layouts.push_back({n->dtype(), contiguous_strides(n->shape()), false});
        }
    const codegen::HostPlan plan =
        codegen::plan_host(graph, sources, layouts, codegen::HostTarget::avx512(), Options{}, name);
    std::vector<codegen::LlvmKernelSource> out;
    for (std::size_t i = 0; i < plan.kernels.size(); ++i)
        out.push_back(codegen::emit_host_kernel(plan, i).value());
    return out;
}

// Compiles `ir` with the loom_llvm module (for this machine's CPU) when the process has loaded it.
void compile_with_module(const codegen::LlvmKernelSource& src) {
    const HostBackendInfo& info = host_backend_info();
    if (!info.llvm) {
        MESSAGE("LLVM back end not loaded (" << info.reason << "): IR not compiled");
        return;
    }
    void* h = dlopen(info.module.c_str(), RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(h != nullptr);
    auto fn = reinterpret_cast<loom_llvm_backend_v1_fn>(dlsym(h, "loom_llvm_backend_v1"));
    REQUIRE(reinterpret_cast<void*>(fn) != nullptr);
    const loom_host_backend_v1* t = fn();
    // The IR is emitted for the fixed AVX-512 target; the module compiles for this machine's CPU, whose code
    // generator cannot lower AVX-512 intrinsics (CF1's table lookup) without the features.
    const std::string features = t->features();
    if (src.ir.find("@llvm.x86.avx512") != std::string::npos &&
        features.find("+avx512f") == std::string::npos) {
        MESSAGE("this CPU has no AVX-512: " << src.name << "'s AVX-512 IR not compiled");
        dlclose(h);
        return;
    }
    loom_hb_buffer obj{}, err{};
    const int rc = t->compile(src.ir.data(), src.ir.size(), src.name.c_str(), &obj, &err, nullptr);
    CHECK_MESSAGE(rc == 0, "LLVM rejected " << src.name << ": " << (err.data ? err.data : ""));
    CHECK(obj.size > 0);
    t->free_buffer(&obj);
    t->free_buffer(&err);
    dlclose(h);
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("golden llvm: E1 relu(x * 1.5 + 0.25) over float32") {
    Tensor x = Tensor::host({1 << 20}, float32);
    const auto ks = llvm_kernels({relu(Array(x) * 1.5 + 0.25)}, "e1_relu_scale_bias");
    REQUIRE(ks.size() == 1);
    golden::check_text("e1_relu_scale_bias", ks[0].ir, ".ll");
    CHECK(ks[0].entry == "e1_relu_scale_bias");
    CHECK(contains(ks[0].ir, "fmul <16 x float>"));  // explicit vectors of 16 lanes for AVX-512
    CHECK(!contains(ks[0].ir, "fast"));              // no fast-math flag anywhere
    CHECK(!contains(ks[0].ir, "contract"));
    CHECK(contains(ks[0].ir, "; mul (test_llvm_golden.cpp:"));  // the user's file:line on the instruction
    compile_with_module(ks[0]);
}

TEST_CASE("golden llvm: CE1, E1 over 2^26 float32: more than the cache holds, streamed") {
    const auto ks = llvm_kernels({relu(Array(ir::input(float32, {std::int64_t{1} << 26}, "x")) * 1.5 + 0.25)},
                                 "ce1_relu_scale_bias");
    REQUIRE(ks.size() == 1);
    golden::check_text("ce1_relu_scale_bias", ks[0].ir, ".ll");
    CHECK(contains(ks[0].ir, "non-temporal stores"));  // the schedule in the banner
    CHECK(contains(ks[0].ir, "store <16 x float> %nt.v5, ptr %out0.p.2, align 64, !nontemporal !{i32 1}"));
    compile_with_module(ks[0]);
}

TEST_CASE("golden llvm: R1 row sum of a 2-D float32") {
    Tensor x = Tensor::host({512, 16384}, float32);
    const auto ks = llvm_kernels({sum(Array(x), 1)}, "r1_row_sum");
    REQUIRE(ks.size() == 1);
    golden::check_text("r1_row_sum", ks[0].ir, ".ll");
    CHECK(ks[0].entry == "r1_row_sum_rows");
    CHECK(contains(ks[0].ir, "@r1_row_sum.chunk.s0"));
    CHECK(contains(ks[0].ir, "butterfly"));
    CHECK(contains(ks[0].ir, "fadd <16 x float>"));  // 16 of the 256 lanes at a time
    CHECK(!contains(ks[0].ir, "reassoc"));
    compile_with_module(ks[0]);
}

TEST_CASE("golden llvm: CF1 softmax over 4096 x 4096 float32") {
    const auto ks = llvm_kernels({softmax(Array(ir::input(float32, {4096, 4096}, "x")))}, "cf1_softmax");
    REQUIRE(ks.size() == 1);
    golden::check_text("cf1_softmax", ks[0].ir, ".ll");
    CHECK(contains(ks[0].ir, "out0 holds the operand of reduction 1"));  // exp(x - max) computed once
    CHECK(contains(ks[0].ir, "call <16 x double> @llvm.fma.v16f64"));    // the inline exp
    CHECK(contains(ks[0].ir, "@llvm.x86.avx512.vpermi2var.pd.512"));     // its table of 2^(j/16) in registers
    CHECK(contains(ks[0].ir, "@loom_exp_f32_v"));                        // and its library lanes
    CHECK(!contains(ks[0].ir, "fast"));
    compile_with_module(ks[0]);
}

TEST_CASE("golden llvm: comments leave the disk cache key") {
    Tensor x = Tensor::host({1000}, float32);
    const auto a = llvm_kernels({relu(Array(x) * 1.5 + 0.25)}, "k");
    const auto b = llvm_kernels({relu(Array(x) * 1.5 + 0.25)}, "k");  // another line: other comments
    REQUIRE(a.size() == 1);
    REQUIRE(b.size() == 1);
    CHECK(a[0].ir != b[0].ir);
    CHECK(codegen::strip_llvm_comments(a[0].ir) == codegen::strip_llvm_comments(b[0].ir));
}

TEST_CASE("golden llvm: a float32 product with a bias and GELU (CM1's kernel, its epilogue fused)") {
    const Array x(ir::input(float32, {2048, 2048}, "x")), w(ir::input(float32, {2048, 2048}, "w")),
        bias(ir::input(float32, {2048}, "bias"));
    const auto ks = llvm_kernels({gelu(matmul(x, w) + bias)}, "cm1_matmul_bias_gelu");
    REQUIRE(ks.size() == 1);
    golden::check_text("cm1_matmul_bias_gelu", ks[0].ir, ".ll");
    CHECK(ks[0].entry == "cm1_matmul_bias_gelu");
    CHECK(ks[0].partials_entry == "cm1_matmul_bias_gelu_pack");
    CHECK(contains(ks[0].ir, "define internal void @cm1_matmul_bias_gelu_micro("));
    // Two vectors of 16 lanes per row of the micro tile, one fma per k: no fast-math flag, no reassociation.
    CHECK(contains(ks[0].ir, "call <16 x float> @llvm.fma.v16f32("));
    CHECK(!contains(ks[0].ir, "fast"));
    CHECK(!contains(ks[0].ir, "reassoc"));
    CHECK(!contains(ks[0].ir, "contract"));
    CHECK(contains(ks[0].ir, "; gelu (test_llvm_golden.cpp:"));  // the epilogue's ops with the user's lines
    compile_with_module(ks[0]);
}
