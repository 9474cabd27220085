// Golden tests of the pointwise emitter: E1, E2, E4, a Black-Scholes chain, casts and integer ops with edge
// constants, strided and reshaped views, an Adam step; each compared as text and compiled with NVRTC for
// sm_90.
#include <cmath>
#include <limits>

#include "golden_util.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/ir/build.hpp"

using namespace loom;
using namespace loom::ir;
using loom::codegen::Access;

namespace {
NodePtr sc(double v, DType t = float32) {
    return scalar(make_scalar_value(v, t, "test", Loc::current()), t);
}
NodePtr cst(double v, DType t = float32) {
    return constant(ScalarValue::of_float(v), t);
}
NodePtr cint(std::int64_t v, DType t) {
    return constant(ScalarValue::of_int(v), t);
}
}  // namespace

TEST_CASE("golden: E1 relu(x*1.5 + 0.25), float32") {
    auto x = input(float32, {1 << 28}, "x");
    auto y = unary(Op::Relu, binary(Op::Add, binary(Op::Mul, x, sc(1.5)), sc(0.25)));
    auto ks = golden::run("e1_relu_scale_bias", {y});
    CHECK(ks.plan.vector_width == 4);
    CHECK(ks.plan.vector_flat);
    CHECK(ks.vector_entry == "e1_relu_scale_bias_v4");
    CHECK(ks.kernel.find("__fmul_rn") == std::string::npos);  // spelled through the prelude
    CHECK(ks.kernel.find("lm::mul(v0, v1)") != std::string::npos);
}

TEST_CASE("golden: E2 gelu_tanh(x + b[j]) * s[j], row-broadcast vectors") {
    auto x = input(float32, {16384, 16384}, "x");
    auto b = input(float32, {16384}, "b");
    auto s = input(float32, {16384}, "s");
    auto y = binary(Op::Mul, unary(Op::GeluTanh, binary(Op::Add, x, b)), s);
    auto ks = golden::run("e2_gelu_row_broadcast", {y});
    REQUIRE(ks.plan.loads.size() == 3);
    CHECK(ks.plan.loads[0].access == Access::Contiguous);
    CHECK(ks.plan.loads[1].access == Access::RowBroadcast);
    CHECK(ks.plan.loads[2].access == Access::RowBroadcast);
    CHECK(ks.plan.vector_width == 4);
    CHECK_FALSE(ks.plan.vector_flat);
}

TEST_CASE("golden: E4 silu(a) * b in bfloat16") {
    auto a = input(bfloat16, {1 << 28}, "a");
    auto b = input(bfloat16, {1 << 28}, "b");
    auto ks = golden::run("e4_silu_mul_bf16", {binary(Op::Mul, unary(Op::Silu, a), b)});
    CHECK(ks.plan.vector_width == 8);
    CHECK(ks.kernel.find("lm::round_bf16(lm::silu(v0))") != std::string::npos);
}

TEST_CASE("golden: Black-Scholes call, one output") {
    auto S = input(float32, {1 << 26}, "S");
    auto K = input(float32, {1 << 26}, "K");
    auto T = input(float32, {1 << 26}, "T");
    auto r = sc(0.02), v = sc(0.3);
    auto sqrtT = unary(Op::Sqrt, T);
    auto vsqrtT = binary(Op::Mul, v, sqrtT);
    auto d1 = binary(
        Op::Div,
        binary(Op::Add, unary(Op::Log, binary(Op::Div, S, K)),
               binary(Op::Mul, binary(Op::Add, r, binary(Op::Mul, binary(Op::Mul, sc(0.5), v), v)), T)),
        vsqrtT);
    auto d2 = binary(Op::Sub, d1, vsqrtT);
    auto cdf = [&](const NodePtr& d) {
        return binary(Op::Mul, sc(0.5),
                      binary(Op::Add, sc(1.0), unary(Op::Erf, binary(Op::Mul, d, sc(M_SQRT1_2)))));
    };
    auto disc = unary(Op::Exp, binary(Op::Mul, unary(Op::Neg, r), T));
    auto call =
        binary(Op::Sub, binary(Op::Mul, S, cdf(d1)), binary(Op::Mul, binary(Op::Mul, K, disc), cdf(d2)));
    auto ks = golden::run("black_scholes_call", {call});
    CHECK(ks.plan.loads.size() == 3);
    CHECK(ks.plan.scalar_dtypes.size() >= 4);
}

TEST_CASE("golden: casts and integer ops with edge constants, two outputs") {
    const double inf = std::numeric_limits<double>::infinity();
    auto x = input(float32, {4097}, "x");
    auto k = input(int32, {4097}, "k");
    // float side: NaN, -0.0, Inf and a denormal, all baked
    auto f = ternary(Op::Where, unary(Op::IsNan, x), cst(-0.0),
                     binary(Op::Minimum, binary(Op::Add, x, cst(1.401298464324817e-45)), cst(inf)));
    auto f2 = binary(Op::Maximum, f, cst(-inf));
    auto g = binary(Op::Mul, f2, cst(std::nan("")));
    auto as_int = cast(g, int32);  // saturating, NaN -> 0
    auto q = binary(Op::FloorDiv, as_int, k);
    auto m = binary(Op::Mod, q, cint(std::numeric_limits<std::int32_t>::min(), int32));
    auto sh = binary(Op::Shl, m, cint(3, int32));
    auto out_i8 = cast(binary(Op::BitXor, sh, binary(Op::Div, k, cint(-1, int32))), int8);
    auto out_b = binary(Op::LogicalAnd, binary(Op::Lt, sh, k), unary(Op::IsFinite, cast(k, float16)));
    auto ks = golden::run("casts_int_edges", {out_i8, out_b});
    CHECK(ks.kernel.find("__uint_as_float(0x7f800000u) /* inf */") != std::string::npos);
    CHECK(ks.kernel.find("-0x0p+0f /* -0 */") != std::string::npos);
    CHECK(ks.kernel.find("0x1p-149f") != std::string::npos);
    CHECK(ks.kernel.find("(-2147483647 - 1)") != std::string::npos);
    CHECK(ks.plan.outputs.size() == 2);
}

TEST_CASE("golden: transposed and sliced view inputs") {
    auto x = input(float32, {64, 128}, "x");
    auto y = input(float32, {256, 64}, "y");
    auto xt = transpose(x);                                      // [128, 64], strides (1, 128)
    auto ys = slice(y, {SliceSpec{255, SliceSpec::kNone, -2}});  // rows 255, 253, ..., 1: [128, 64]
    auto ks = golden::run("transpose_slice_views", {binary(Op::Add, xt, ys)});
    REQUIRE(ks.plan.loads.size() == 2);
    CHECK(ks.plan.loads[0].access == Access::Strided);
    CHECK(ks.plan.loads[1].access == Access::Strided);
    CHECK(ks.plan.vector_width == 1);
    CHECK(ks.vector_entry.empty());
}

TEST_CASE("golden: reshape of a transposed input goes through derived indices") {
    auto x = input(float16, {6, 10}, "x");
    auto flat = reshape(transpose(x), {60});
    auto ks =
        golden::run("reshape_transposed_f16", {unary(Op::Exp, binary(Op::Mul, flat, sc(2.0, float16)))});
    REQUIRE(ks.plan.loads.size() == 1);
    CHECK(ks.plan.loads[0].access == Access::Gathered);
    CHECK(ks.plan.derived.size() == 2);
}

TEST_CASE("a broken source throws CompileError with the log and the options" * loom_test::needs_cuda()) {
    codegen::KernelSource ks;
    ks.name = "broken_kernel";
    ks.source = "extern \"C\" __global__ void broken_kernel(float* p) { p[0] = undefined_name; }\n";
    nvrtc::Options o;
    o.arch = "sm_90";
    try {
        nvrtc::compile(ks.name, ks.source, o);
        FAIL("no CompileError");
    } catch (const CompileError& e) {
        const std::string msg = e.what();
        CHECK(msg.find("broken_kernel") != std::string::npos);
        CHECK(msg.find("undefined_name") != std::string::npos);            // the log
        CHECK(msg.find("--gpu-architecture=sm_90") != std::string::npos);  // the options
        CHECK(e.log().find("undefined_name") != std::string::npos);
        CHECK(!e.source_path().empty());
        CHECK(msg.find(e.source_path()) != std::string::npos);
    }
}

TEST_CASE("golden: an Adam step, its bias corrections of a rank-0 step counter computed once per thread") {
    const std::int64_t n = 1 << 26;
    auto p = input(float32, {n}, "p"), g = input(float32, {n}, "g"), m = input(float32, {n}, "m"),
         v = input(float32, {n}, "v");
    auto t1 = binary(Op::Add, input(float32, {}, "t"), sc(1.0));
    auto m1 = binary(Op::Add, binary(Op::Mul, sc(0.9), m), binary(Op::Mul, sc(0.1), g));
    auto v1 =
        binary(Op::Add, binary(Op::Mul, sc(0.999), v), binary(Op::Mul, binary(Op::Mul, sc(0.001), g), g));
    auto bc1 = broadcast_to(binary(Op::Sub, sc(1.0), binary(Op::Pow, sc(0.9), t1)), {n});
    auto bc2 = broadcast_to(binary(Op::Sub, sc(1.0), binary(Op::Pow, sc(0.999), t1)), {n});
    auto step = binary(Op::Div, binary(Op::Mul, sc(1e-3), binary(Op::Div, m1, bc1)),
                       binary(Op::Add, unary(Op::Sqrt, binary(Op::Div, v1, bc2)), sc(1e-8)));
    auto ks = golden::run("adam_step", {binary(Op::Sub, p, step), m1, v1});
    CHECK(ks.plan.vector_width == 4);
    CHECK(ks.kernel.find("__device__ __forceinline__ void adam_step_uniforms(") != std::string::npos);
    // Seven arrays and four costly ops per element: one vector per thread, not a grid-stride loop; the
    // uniform values computed before the vector's lanes, not in them.
    CHECK(ks.plan.grid_stride_blocks == 0);
    const auto lanes = ks.kernel.rfind("#pragma unroll");
    const auto call = ks.kernel.rfind("adam_step_uniforms(p, ");
    REQUIRE(lanes != std::string::npos);
    CHECK(call < lanes);
    CHECK(ks.kernel.find("lm::pow_", ks.kernel.find("_body(")) == std::string::npos);
}
