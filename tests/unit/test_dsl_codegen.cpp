// The CUDA that the DSL generates for an expression: kernel name, plan banner, the user's file:line on
// every op, and compilation to an sm_90 cubin with NVRTC (no GPU needed).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <loom/loom.hpp>
#include <string>

#include "../common/needs_cuda.hpp"

using namespace loom;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

/// The op comment the generator puts after each op: "// mul (test_dsl_codegen.cpp:12)".
std::string op_at(const char* op, int line) {
    return fmt::format("// {} (test_dsl_codegen.cpp:{})", op, line);
}

}  // namespace

TEST_CASE("cuda_source names the kernel, prints the plan banner and the user's line of every op") {
    Tensor x = Tensor::host({4096, 512}, float32);
    Tensor b = Tensor::host({512}, float32);

    const int line1 = __LINE__ + 1;
    const Array t = x * 1.5 + b;
    const int line2 = __LINE__ + 1;
    const Array y = gelu(t);

    const std::string src = cuda_source({y}, "bias_gelu");
    CHECK(contains(src, "bias_gelu"));
    CHECK(contains(src, "__global__"));
    CHECK(contains(src, "pointwise plan:"));  // the plan banner
    CHECK(contains(src, "// ---- Loom pointwise kernel "));
    CHECK(contains(src, op_at("mul", line1)));
    CHECK(contains(src, op_at("add", line1)));
    CHECK(contains(src, op_at("gelu", line2)));
    // The weak scalar is a float32 kernel parameter from the user's line; b is read as a row broadcast.
    CHECK(contains(src, fmt::format("scalar float32 (test_dsl_codegen.cpp:{})", line1)));
    CHECK(contains(src, fmt::format("row broadcast (test_dsl_codegen.cpp:{})", line1)));
    // Deterministic: the same expression gives the same text.
    CHECK(cuda_source({y}, "bias_gelu") == src);
}

TEST_CASE("cuda_source of several outputs and of constants") {
    Tensor h = Tensor::host({1 << 16}, bfloat16);
    const int line = __LINE__ + 1;
    const Array a = silu(h) * constant(0.5), c = h - 1.0;
    const std::string src = cuda_source({a, c}, "two_outputs");
    CHECK(contains(src, "two_outputs"));
    CHECK(contains(src, op_at("silu", line)));
    CHECK(contains(src, op_at("mul", line)));
    CHECK(contains(src, op_at("sub", line)));
    CHECK(contains(src, fmt::format("constant bfloat16 (test_dsl_codegen.cpp:{})", line)));
    CHECK(contains(src, "r1 = "));  // a second output
}

TEST_CASE("compile() returns an sm_90 cubin (NVRTC, no GPU)" * loom_test::needs_cuda()) {
    Tensor x = Tensor::host({1 << 20}, float32);
    const Array y = relu(x * 1.5 + 0.25);
    const CompileReport rep = compile({y}, "scale_bias_relu");
    CHECK(contains(rep.kernel, "scale_bias_relu"));
    CHECK(rep.kernels == 1);
    if (!cuda_available()) {  // planned for an H200 when no GPU is present
        CHECK(rep.arch == "sm_90");
    }
    CHECK(rep.image_kind == "cubin");
    CHECK(rep.image_bytes > 0);
    CHECK((rep.compile_ms > 0.0 || rep.disk_hits == 1));  // compiled now, or by an earlier run (disk cache)
}
