// The host as a first-class target of the inspection API: llvm_source() of Arrays (the LLVM IR of the host
// kernels, from <loom/loom.hpp>, without a GPU).
#include <doctest/doctest.h>

#include <loom/loom.hpp>
#include <string>
#include <vector>

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
