// The host as a first-class target of the inspection API: llvm_source() of Arrays (the LLVM IR of the host
// kernels, from <loom/loom.hpp>, without a GPU) and explain() of Arrays placed as evaluation places them
// (host arrays: the host plan that runs; arrays placed on the GPU: the GPU plan, as before). With
// LOOM_CPU_BACKEND=reference (the "unit-reference" run of CTest) the host plan is the line saying so.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "../common/gpu_explain.hpp"
#include "loom/ir/build.hpp"
#include "loom/runtime/host_backend.hpp"

using namespace loom;

namespace {

bool contains(const std::string& text, std::string_view what) {
    return text.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("llvm backend: llvm_source() of Arrays is the IR of every host kernel of a fused expression") {
    const Tensor x = testing::random_tensor({64, 256}, float32, 1);
    const Tensor b = testing::random_tensor({256}, float32, 2);
    const Array y = relu(x * 2.0 + b);  // one pointwise kernel
    const Array s = sum(y, 1);          // a row sum: a reduction kernel
    const std::string ir = llvm_source({y, s}, "probe");
    INFO(ir.substr(0, 2000));
    // Two kernels: the row sum (its producers fused in: x * 2 + b and relu computed again) and y. Their entry
    // points, and the ops, each instruction commented with the op and the user's line.
    CHECK(contains(ir, "; ---- Loom reduction kernel probe_0"));
    CHECK(contains(ir, "define void @probe_0_rows("));
    CHECK(contains(ir, "; ---- Loom pointwise kernel probe_1"));
    CHECK(contains(ir, "define void @probe_1("));
    CHECK(contains(ir, "fmul"));
    CHECK(contains(ir, "fadd"));
    CHECK(contains(ir, "mul (test_host_explain.cpp:"));
    CHECK(contains(ir, "add (test_host_explain.cpp:"));
    CHECK(contains(ir, "relu (test_host_explain.cpp:"));
    CHECK(contains(ir, "reduction 0: sum float32 -> float32 (test_host_explain.cpp:"));
    // The same text through the runtime's function of IR nodes, and for one Array alone.
    CHECK(ir == llvm_source(std::vector<ir::NodePtr>{y.node(), s.node()}, "probe"));
    CHECK(contains(llvm_source({y}), "define void @"));
}

TEST_CASE("llvm backend: llvm_source() of an empty Array names the API") {
    try {
        (void)llvm_source({Array()});
        FAIL("no loom::Error");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).starts_with("llvm_source(): empty Array"));
    }
}

TEST_CASE("llvm backend: explain() of host arrays is the host plan that runs, not the GPU's") {
    const Tensor x = testing::random_tensor({64, 256}, float32, 1);
    const Tensor b = testing::random_tensor({256}, float32, 2);
    const Array y = relu(x * 2.0 + b);
    const std::string text = explain({y, sum(y, 1)}, "probe");
    INFO(text);
    if (host_backend_info().llvm) {
        CHECK(text.starts_with("host     LLVM back end: "));
        CHECK(contains(text, "lanes per vector"));
        CHECK(contains(text, "kernel 0  probe_0"));
        CHECK(contains(text, "relu (test_host_explain.cpp:"));
    } else {
        CHECK(text.starts_with("host     every kernel runs on the CPU reference: "));
    }
    // What only the GPU plan prints.
    CHECK_FALSE(contains(text, "threads per block"));
    CHECK_FALSE(contains(text, "vector width"));
    CHECK_FALSE(contains(text, "launch"));
}

TEST_CASE("explain() of a placeholder names explain() and the line of the expression") {
    const Array p(ir::input(float32, {2, 3}, "p"));
    const int line = __LINE__ + 1;
    const Array y = p * 2.0;
    try {
        (void)explain({y});
        FAIL("no loom::Error");
    } catch (const Error& e) {
        CHECK(std::string(e.what()) ==
              fmt::format("explain(): input p ([2, 3] float32) is a placeholder with no tensor bound "
                          "(test_host_explain.cpp:{})",
                          line));
    }
}

TEST_CASE("explain() of arrays placed on the GPU by their factories keeps the GPU plan's text") {
    // No tensor inputs: the factories' device places the graph, as eval() places it (a GPU is not needed
    // to plan it). The text is the GPU planner's, byte for byte: what explain() gave every graph before it
    // followed the device, and what the unit and golden tests of GPU plans check (loom_test::gpu_explain).
    const Array i = arange(0.0, 4096.0, 1.0, float32, Device::cuda(0));
    const Array y = relu(i * 2.0 + 1.0);
    const std::string text = explain({y}, "on_gpu");
    CHECK(text == loom_test::gpu_explain({y}, "on_gpu"));
    CHECK(contains(text, "kernel 0  on_gpu"));
    CHECK(contains(text, "vector width"));
    CHECK_FALSE(contains(text, "LLVM"));
}
