// matmul in the IR, the DSL and the planners (docs/semantics.md, section 12): NumPy's shape rules for every
// 1-D, 2-D and batched combination, broadcast batches, dtypes and promotion, errors with the caller's
// file:line, the printer and the verifier, the partition around products, host tensors against the
// reference (LLVM back end or reference, and the explain log), and the GPU planner's error.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "../common/gpu_explain.hpp"
#include "disk_cache_test_util.hpp"
#include "error_message.hpp"
#include "loom/codegen/llvm/host_plan.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/ir/view.hpp"
#include "loom/runtime/reference_plan.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

ir::NodePtr placeholder(const Shape& s, DType t, const char* label = "x") {
    return ir::input(t, s, label);
}

/// The matmul node of a graph (the root, or the product under the reshape that drops a vector's axis).
const ir::Node* product_of(const ir::NodePtr& root) {
    for (const ir::Node* n : ir::topo_order({root}))
        if (n->op() == ir::Op::MatMul) return n;
    return nullptr;
}

Tensor filled(const Shape& s, DType t, std::uint64_t seed) {
    return testing::random_tensor(
        s, t, seed, is_float(t) ? testing::Random::normal() : testing::Random::uniform(-128, 127));
}

/// `got` equals the reference's value of `root` bit for bit.
void check_bits(const ir::NodePtr& root, const Tensor& got, const std::string& what) {
    const testing::Comparison c =
        testing::compare(got, reference::evaluate(root), testing::Tolerance::exact(), what);
    CHECK_MESSAGE(c.ok, what << ": " << c.message);
}

bool reference_requested() {
    const char* b = std::getenv("LOOM_CPU_BACKEND");
    return b && std::string_view(b) == "reference";
}

}  // namespace

TEST_CASE("matmul shapes follow NumPy: vectors promoted and squeezed, batch axes broadcast") {
    struct Case {
        Shape a, b, out;
        Shape a_op, b_op;  // the matmul node's operands: [B..., M, K] and [B..., K, N]
    };
    const Case cases[] = {
        {{3}, {3}, {}, {1, 3}, {3, 1}},
        {{3}, {3, 4}, {4}, {1, 3}, {3, 4}},
        {{2, 3}, {3}, {2}, {2, 3}, {3, 1}},
        {{2, 3}, {3, 4}, {2, 4}, {2, 3}, {3, 4}},
        {{5, 2, 3}, {3, 4}, {5, 2, 4}, {5, 2, 3}, {5, 3, 4}},
        {{2, 3}, {5, 3, 4}, {5, 2, 4}, {5, 2, 3}, {5, 3, 4}},
        {{5, 2, 3}, {5, 3, 4}, {5, 2, 4}, {5, 2, 3}, {5, 3, 4}},
        {{3}, {5, 3, 4}, {5, 4}, {5, 1, 3}, {5, 3, 4}},
        {{5, 2, 3}, {3}, {5, 2}, {5, 2, 3}, {5, 3, 1}},
        {{2, 1, 2, 3}, {4, 3, 5}, {2, 4, 2, 5}, {2, 4, 2, 3}, {2, 4, 3, 5}},
        {{1, 2, 3}, {6, 3, 4}, {6, 2, 4}, {6, 2, 3}, {6, 3, 4}},
        {{6, 1, 2, 3}, {1, 7, 3, 1}, {6, 7, 2, 1}, {6, 7, 2, 3}, {6, 7, 3, 1}},
        {{0, 3}, {3, 4}, {0, 4}, {0, 3}, {3, 4}},
        {{2, 0}, {0, 4}, {2, 4}, {2, 0}, {0, 4}},
        {{0}, {0}, {}, {1, 0}, {0, 1}},
    };
    for (const Case& c : cases) {
        CAPTURE(to_string(c.a));
        CAPTURE(to_string(c.b));
        const ir::NodePtr y =
            ir::matmul(placeholder(c.a, DType::Float32), placeholder(c.b, DType::Float32, "y"));
        CHECK(y->shape() == c.out);
        CHECK(y->dtype() == DType::Float32);
        const ir::Node* m = product_of(y);
        REQUIRE(m != nullptr);
        CHECK(m->operand(0)->shape() == c.a_op);
        CHECK(m->operand(1)->shape() == c.b_op);
        CHECK(numel(m->shape()) == numel(c.out));
        ir::verify({y});
        // The same shapes evaluate on host tensors, against the reference.
        const Tensor a = filled(c.a, DType::Float32, 1), b = filled(c.b, DType::Float32, 2);
        const Array r = matmul(a, b);
        const Tensor got = r;
        CHECK(got.shape() == c.out);
        check_bits(r.node(), got, "matmul");
    }
}

TEST_CASE("matmul dtypes: floats keep theirs, int8 gives int32, mixed operands promote as binary ops do") {
    struct Case {
        DType a, b, out, operands;
    };
    const Case cases[] = {
        {DType::Float32, DType::Float32, DType::Float32, DType::Float32},
        {DType::Float64, DType::Float64, DType::Float64, DType::Float64},
        {DType::Float16, DType::Float16, DType::Float16, DType::Float16},
        {DType::BFloat16, DType::BFloat16, DType::BFloat16, DType::BFloat16},
        {DType::Int8, DType::Int8, DType::Int32, DType::Int8},
        {DType::Float16, DType::Float32, DType::Float32, DType::Float32},
        {DType::BFloat16, DType::Float16, DType::Float32, DType::Float32},
        {DType::Float32, DType::Float64, DType::Float64, DType::Float64},
        {DType::Int8, DType::Float32, DType::Float32, DType::Float32},
        {DType::Bool, DType::Int8, DType::Int32, DType::Int8},
        {DType::Int32, DType::Float16, DType::Float16, DType::Float16},
    };
    for (const Case& c : cases) {
        CAPTURE(name(c.a));
        CAPTURE(name(c.b));
        const ir::NodePtr y = ir::matmul(placeholder({2, 3}, c.a), placeholder({3, 4}, c.b, "y"));
        CHECK(y->dtype() == c.out);
        CHECK((y->dtype() == promote(c.a, c.b) || (c.operands == DType::Int8 && y->dtype() == DType::Int32)));
        CHECK(y->operand(0)->dtype() == c.operands);
        CHECK(y->operand(1)->dtype() == c.operands);
        ir::verify({y});
    }
    for (auto [a, b] : {std::pair{DType::Int32, DType::Int32},
                        {DType::Int8, DType::UInt8},
                        {DType::Bool, DType::Bool},
                        {DType::Int64, DType::Int8},
                        {DType::UInt8, DType::UInt8}}) {
        CAPTURE(name(a));
        CAPTURE(name(b));
        CHECK_THROWS_AS(ir::matmul(placeholder({2, 3}, a), placeholder({3, 4}, b, "y")), Error);
    }
}

TEST_CASE("matmul errors name the API, both shapes and dtypes, and the caller's file:line") {
    const Tensor a = Tensor::host({2, 3}, float32), b = Tensor::host({4, 5}, float32),
                 v = Tensor::host({3}, float32);
    const Tensor batch_a = Tensor::host({2, 2, 3}, float32), batch_b = Tensor::host({3, 3, 4}, float32);
    const Tensor i32 = Tensor::host({3, 4}, int32), u8 = Tensor::host({3, 4}, uint8),
                 i8 = Tensor::host({2, 3}, int8);
    int line = 0;
    std::string msg;
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)matmul(a, b); });
    CHECK(
        msg ==
        fmt::format("matmul(): operands [2, 3] float32 and [4, 5] float32: the contraction extents differ (3 "
                    "and 4) (test_matmul.cpp:{})",
                    line));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)matmul(v, b); });
    CHECK(msg ==
          fmt::format(
              "matmul(): operands [3] float32 and [4, 5] float32: the contraction extents differ (3 and 4) "
              "(test_matmul.cpp:{})",
              line));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)matmul(batch_a, batch_b); });
    CHECK(msg ==
          fmt::format(
              "matmul(): operands [2, 2, 3] float32 and [3, 3, 4] float32: the batch axes [2] and [3] do "
              "not broadcast (test_matmul.cpp:{})",
              line));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)matmul(a, 2.0); });
    CHECK(msg ==
          fmt::format(
              "matmul(): operands [2, 3] float32 and [] float32: a matrix product takes operands of rank 1 "
              "or more, not scalars (test_matmul.cpp:{})",
              line));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)matmul(Array(a).astype(int32), i32); });
    CHECK(msg ==
          fmt::format(
              "matmul(): operands [2, 3] int32 and [3, 4] int32: products take float16, bfloat16, float32, "
              "float64 or int8 operands, and these promote to int32 (test_matmul.cpp:{})",
              line));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)matmul(i8, u8); });
    CHECK(msg ==
          fmt::format(
              "matmul(): operands [2, 3] int8 and [3, 4] uint8: products take float16, bfloat16, float32, "
              "float64 or int8 operands, and these promote to int32 (test_matmul.cpp:{})",
              line));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)matmul(Array(), a); });
    CHECK(msg.starts_with("matmul(): "));
    CHECK(msg.ends_with(fmt::format("(test_matmul.cpp:{})", line)));
    // The result never has more axes than the wider operand: rank 8 stays rank 8.
    const ir::NodePtr r8 = placeholder({1, 1, 1, 1, 1, 1, 2, 3}, DType::Float32);
    const ir::NodePtr b8 = placeholder({2, 1, 1, 1, 1, 1, 3, 4}, DType::Float32);
    CHECK(ir::matmul(r8, b8)->shape() == Shape{2, 1, 1, 1, 1, 1, 2, 4});
}

TEST_CASE("matmul in the printer and the verifier") {
    const ir::NodePtr x = placeholder({2, 3}, DType::Float32, "x"),
                      y = placeholder({3, 4}, DType::Float32, "y");
    const int line = __LINE__ + 1;
    const ir::NodePtr p = ir::matmul(x, y);
    const std::string text = ir::print({p});
    CHECK(text.find(fmt::format("= matmul %0, %1, k=3 : [2, 4] float32   # test_matmul.cpp:{}", line)) !=
          std::string::npos);
    ir::verify({p});
    // Nodes the constructor never makes are rejected as broken invariants.
    auto bad = [&](Shape a, Shape b, Shape out, DType da, DType db, DType dout) {
        ir::NodeDesc d;
        d.op = ir::Op::MatMul;
        d.dtype = dout;
        d.shape = std::move(out);
        d.operands = {placeholder(a, da), placeholder(b, db)};
        return ir::intern(std::move(d));
    };
    CHECK_THROWS_AS(ir::verify({bad({2, 3}, {4, 5}, {2, 5}, DType::Float32, DType::Float32, DType::Float32)}),
                    InternalError);
    CHECK_THROWS_AS(ir::verify({bad({2, 3}, {3, 5}, {2, 4}, DType::Float32, DType::Float32, DType::Float32)}),
                    InternalError);
    CHECK_THROWS_AS(ir::verify({bad({3}, {3, 5}, {5}, DType::Float32, DType::Float32, DType::Float32)}),
                    InternalError);
    CHECK_THROWS_AS(
        ir::verify({bad({2, 2, 3}, {3, 3, 5}, {2, 2, 5}, DType::Float32, DType::Float32, DType::Float32)}),
        InternalError);
    CHECK_THROWS_AS(ir::verify({bad({2, 3}, {3, 5}, {2, 5}, DType::Float32, DType::Float16, DType::Float32)}),
                    InternalError);
    CHECK_THROWS_AS(ir::verify({bad({2, 3}, {3, 5}, {2, 5}, DType::Int8, DType::Int8, DType::Int8)}),
                    InternalError);
    CHECK_THROWS_AS(ir::verify({bad({2, 3}, {3, 5}, {2, 5}, DType::Int32, DType::Int32, DType::Int32)}),
                    InternalError);
    CHECK_NOTHROW(ir::verify({bad({2, 3}, {3, 5}, {2, 5}, DType::Int8, DType::Int8, DType::Int32)}));
    // The standard passes rebuild products through the constructor.
    const ir::NodePtr z =
        ir::matmul(ir::cast(ir::broadcast_to(placeholder({}, DType::Float16), {2, 3}), DType::Float32), y);
    const auto lowered = ir::run_pipeline({z}, ir::standard_passes());
    CHECK(lowered[0]->shape() == Shape{2, 4});
    ir::verify(lowered);
}

TEST_CASE(
    "partition: a product is a kernel of its own, operands other than inputs and views are materialized") {
    const Tensor xt = filled({6, 5}, float32, 3), wt = filled({7, 5}, float32, 4),
                 ct = filled({7, 3}, float32, 5);
    const Tensor bias = filled({7}, float32, 6);
    const Array x(xt), w(wt), c(ct);
    const Array h = matmul(x * 2, w.transposed());   // [6, 7]: x * 2 is computed first; w is read transposed
    const Array y = relu(h + bias);                  // the epilogue reads the product's temporary
    const Array z = matmul(h, c) + sum(x, 1, true);  // a product of a product, and a reduction beside it
    const std::vector<ir::NodePtr> roots =
        ir::run_pipeline({y.node(), z.node(), h.node()}, ir::standard_passes());
    for (bool fusion : {true, false}) {
        CAPTURE(fusion);
        codegen::PartitionOptions po;
        po.fusion = fusion;
        const codegen::Partition P = codegen::partition(roots, po);
        int products = 0;
        for (const codegen::FusedKernel& k : P.kernels) {
            if (k.family != codegen::Family::MatMul) continue;
            ++products;
            for (const ir::Node* n :
                 ir::topo_order(k.outputs))  // operands as views; an epilogue only elementwise
                CHECK((ir::info(n->op()).kind == ir::OpKind::Leaf || ir::is_view(n->op()) ||
                       n->op() == ir::Op::MatMul || ir::is_elementwise(n->op())));
            CHECK(codegen::product_of(k.outputs)->op() == ir::Op::MatMul);
        }
        CHECK(products == 2);
        const std::string text = P.to_string();
        CHECK(text.find("matmul matmul_") != std::string::npos);
        CHECK(text.find("a matrix product (test_matmul.cpp:") != std::string::npos);
        // Followed kernel by kernel on the reference, the partition gives the graph's bits.
        const std::vector<Tensor> parts = reference::evaluate_partition(P, roots);
        const std::vector<Tensor> whole = reference::evaluate(roots);
        for (std::size_t i = 0; i < roots.size(); ++i) {
            const testing::Comparison cmp =
                testing::compare(parts[i], whole[i], testing::Tolerance::exact(), "root");
            CHECK_MESSAGE(cmp.ok, cmp.message);
        }
    }
}

// Attention's head products over a fused projection, written as a model is: qkv = x w + bias, heads by a
// slice and a reshape of qkv, then permutes. The bias is qkv's epilogue (computed once), not a prologue of
// every head product; the heads' reshapes have strides (qkv is contiguous), so the head products read qkv in
// place; a reshape without strides is materialized.
TEST_CASE(
    "partition: head products read a fused projection in place, its bias in the projection's epilogue") {
    constexpr std::int64_t B = 2, T = 8, H = 2, D = 4, C = H * D;
    const Tensor xt = filled({B, T, C}, float32, 11), wt = filled({C, 3 * C}, float32, 12),
                 bt = filled({3 * C}, float32, 13);
    const Array qkv = matmul(Array(xt), Array(wt)) + Array(bt);  // [B, T, 3C]
    auto head = [&](std::int64_t which) {                        // [B, H, T, D]
        return qkv.slice({{}, {}, {which * C, (which + 1) * C}}).reshape({B, T, H, D}).permute({0, 2, 1, 3});
    };
    const Array scores = matmul(head(0), head(1).permute({0, 1, 3, 2}));  // [B, H, T, T]
    const Array out = matmul(scores, head(2));                            // [B, H, T, D]
    // The heads merged back into rows (permuted, then reshaped) have no strides: that operand is computed (a
    // prologue here: a copy costs no less).
    const Array merged =
        matmul(out.permute({0, 2, 1, 3}).reshape({B, T, C}), Array(filled({C, 3}, float32, 14)));
    const std::vector<ir::NodePtr> roots =
        ir::run_pipeline({out.node(), merged.node()}, ir::standard_passes());
    const codegen::Partition P = codegen::partition(roots);
    int products = 0, views = 0;
    for (const codegen::FusedKernel& k : P.kernels) {
        if (k.family != codegen::Family::MatMul) continue;
        ++products;
        const ir::NodePtr& m = codegen::product_of(k.outputs);
        for (const auto& operand : m->operands()) {  // views of a source of the kernel, read in place
            const ir::Node& base = ir::view_base(*operand);
            views += base.op() == ir::Op::Input &&
                     ir::compose_views(*operand, contiguous_strides(base.shape())).has_value();
        }
    }
    CHECK(products == 4);
    CHECK(P.kernels.size() == 4);
    CHECK(views == 7);  // all but the merged heads
    const std::string text = P.to_string();
    CAPTURE(text);
    // qkv's bias is the projection's epilogue: computed once, the result read by the head products.
    CHECK(text.find("its epilogue runs on the accumulators: add") != std::string::npos);
    CHECK(text.find("whose epilogue computes it once") != std::string::npos);
    const std::vector<Tensor> parts = reference::evaluate_partition(P, roots);
    const std::vector<Tensor> whole = reference::evaluate(roots);
    for (std::size_t i = 0; i < roots.size(); ++i) {
        const testing::Comparison cmp =
            testing::compare(parts[i], whole[i], testing::Tolerance::exact(), "root");
        CHECK_MESSAGE(cmp.ok, cmp.message);
    }
}

TEST_CASE("matmul eval on host tensors equals the reference, with prologues, epilogues and views") {
    const Tensor xt = filled({33, 40}, float32, 11), wt = filled({17, 40}, float32, 12),
                 bias = filled({17}, float32, 13);
    const Tensor at = filled({3, 1, 9, 31}, float16, 14), bt = filled({4, 31, 7}, float16, 15);
    const Tensor it = filled({9, 300}, int8, 16), jt = filled({300, 5}, int8, 17);
    const Array x(xt), w(wt);
    const Array y1 = gelu(matmul(x * 0.5, w.transposed()) + bias);
    const Array y2 = matmul(Array(at), Array(bt));  // broadcast batch [3, 4]
    const Array y3 = matmul(Array(it), Array(jt)) * 3;
    const Array y4 = matmul(x.slice({{1, ir::SliceSpec::kNone, 2}}),
                            w.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, -1}}).transposed());
    const Array y5 = matmul(x, w.transposed()).transposed();  // a view of a product
    for (const Array& y : {y1, y2, y3, y4, y5}) {
        const Tensor got = y;
        check_bits(y.node(), got, "matmul graph");
    }
    // Several outputs of one evaluation, and assign() into a transposed view.
    auto [p, q] = eval(matmul(x, w.transposed()), relu(matmul(x, w.transposed())));
    check_bits(matmul(x, w.transposed()).node(), p, "eval output 0");
    check_bits(relu(matmul(x, w.transposed())).node(), q, "eval output 1");
    Tensor out = Tensor::host({17, 33}, float32);
    assign(out.transposed(), matmul(x, w.transposed()));
    check_bits(matmul(x, w.transposed()).node(), out.transposed(), "assign into a transposed view");
    // A traced function.
    auto f = loom::function("mm_bias", [](Array a, Array b, Array c) { return matmul(a, b) + c; });
    const Tensor bt2 = filled({40, 17}, float32, 18);
    Tensor r = Tensor::host({33, 17}, float32);
    f(xt, bt2, bias, r);
    f(xt, bt2, bias, r);  // the cached specialization
    check_bits((matmul(x, Array(bt2)) + Array(bias)).node(), r, "traced function");
}

TEST_CASE("matmul eval on host tensors: the explain log says where the product runs") {
    const Tensor xt = filled({8, 16}, float32, 21), wt = filled({16, 4}, float32, 22);
    const int line = __LINE__ + 1;
    const Array y = relu(matmul(Array(xt) + 1, Array(wt)));
    ::setenv("LOOM_EXPLAIN", "fusion", 1);
    std::string text;
    {
        test::StderrCapture cap;
        const Tensor got = y;
        text = cap.text();
        check_bits(y.node(), got, "explained evaluation");
    }
    ::unsetenv("LOOM_EXPLAIN");
    if (reference_requested()) {
        CHECK(text.find("every kernel runs on the CPU reference") != std::string::npos);
    } else {
        CHECK(text.find(fmt::format(
                  "matmul [8, 16] float32 x [16, 4] float32 -> [8, 4] float32: matmul (test_matmul.cpp:{})",
                  line)) != std::string::npos);
        CHECK(text.find("micro tiles") != std::string::npos);  // the LLVM back end's product family
        CHECK(text.find("epilogue on the final accumulators: relu (test_matmul.cpp:") != std::string::npos);
        CHECK(text.find("runs on the CPU reference") == std::string::npos);
    }
    // The host plan itself, whichever back end runs it.
    const std::vector<ir::NodePtr> roots = ir::run_pipeline({y.node()}, ir::standard_passes());
    std::vector<const ir::Node*> sources;
    std::vector<codegen::InputLayout> layouts;
    for (const ir::Node* n : ir::topo_order(roots))
        if (n->op() == ir::Op::Input) {
            sources.push_back(n);
            layouts.push_back({n->dtype(), contiguous_strides(n->shape()), false});
        }
    const codegen::HostPlan plan =
        codegen::plan_host(roots, sources, layouts, codegen::HostTarget::avx512(), current_options());
    // x + 1 is computed first (the host's product packs its operands from memory), then the product with relu
    // as its epilogue; the accumulators' placeholder reads no memory.
    REQUIRE(plan.kernels.size() == 2);
    CHECK(plan.partition.kernels[0].family == codegen::Family::Pointwise);
    CHECK(plan.partition.kernels[1].family == codegen::Family::MatMul);
    CHECK(plan.kernels[1].reads == std::vector<codegen::Slot>{{codegen::Slot::Kind::Temp, 0},
                                                              {codegen::Slot::Kind::Source, 1},
                                                              {codegen::Slot::Kind::Index, 0}});
    const std::string text1 = plan.to_string();
    const std::size_t kernel1 = text1.find("kernel 1  ");
    REQUIRE(kernel1 != std::string::npos);
    CHECK(text1.find("matmul [8, 16] float32 x [16, 4] float32 -> [8, 4] float32", kernel1) !=
          std::string::npos);
    CHECK(text1.find("micro tiles", kernel1) != std::string::npos);
    CHECK(plan.to_string().find("computed first: the host's product packs its operands from memory") !=
          std::string::npos);
}

TEST_CASE(
    "matmul on the GPU planner: one kernel with its epilogue, boundaries named, impossible hints refused") {
    const Tensor x = Tensor::host({64, 32}, float32),
                 w = Tensor::host({32, 16}, float32);  // planned, never run
    const Tensor bias = Tensor::host({16}, float32);
    const int line = __LINE__ + 1;
    const Array y = matmul(x, w);
    {
        const std::string text = loom_test::gpu_explain({relu(y + Array(bias)).node()});
        CHECK(
            text.find(fmt::format(
                "matmul [64, 32] float32 x [32, 16] float32 -> [64, 16] float32: matmul (test_matmul.cpp:{})",
                line)) != std::string::npos);
        CHECK(text.find("epilogue: add (test_matmul.cpp:") != std::string::npos);
        CHECK(text.find("relu (test_matmul.cpp:") != std::string::npos);
        CHECK(text.find("kernel 1") == std::string::npos);  // one kernel
        const std::string cuda = loom::cuda_source({relu(y + Array(bias)).node()});
        CHECK(cuda.find("tile 64x16x32: 256 threads") !=
              std::string::npos);  // the default tile fits the 64 x 16 outputs, K = 32 in one step
    }
    {  // a reduction over the product is a boundary the log names, and so is a read through a transposing
       // view
        const std::string text = loom_test::gpu_explain({sum(y, 1).node()});
        CHECK(text.find("not an epilogue: a reduction kernel") != std::string::npos);
        const std::string t2 = loom_test::gpu_explain({(y.transposed() + 1).node()});
        CHECK(t2.find("reads it through a view (permute") != std::string::npos);
    }
    {  // hints: honoured, or refused with the limit they break
        const Tensor a = Tensor::host({256, 256}, float32), b = Tensor::host({256, 256}, float32);
        CHECK(
            loom_test::gpu_explain({matmul(a, b, tile(64, 32, 32)).node()}).find("tile 64x32x32 (hinted)") !=
            std::string::npos);
        {  // the options value's tile, for products without a hint of their own; 0: the planner's choice
            OptionsScope scope({.tile = tile(64, 32)});
            CHECK(loom_test::gpu_explain({matmul(a, b).node()}).find("tile 64x32x32 (hinted)") !=
                  std::string::npos);
            CHECK(loom_test::gpu_explain({matmul(a, b, tile(32, 32, 32)).node()})
                      .find("tile 32x32x32 (hinted)") != std::string::npos);
        }
        const int l2 = __LINE__ + 1;
        const ir::NodePtr big = matmul(a, b, tile(256, 256, 16)).node();
        CHECK(loom_test::error_message([&] { (void)loom_test::gpu_explain({big}); }) ==
              fmt::format("matmul(): operands [256, 256] float32 and [256, 256] float32: tile(256, 256, 16) "
                          "needs 256 accumulators "
                          "per thread (256 registers), more than the 64 registers per thread the kernel "
                          "allows for accumulators "
                          "(test_matmul.cpp:{})",
                          l2));
        const std::string smem = loom_test::error_message(
            [&] { (void)loom_test::gpu_explain({matmul(a, b, tile(128, 128, 512)).node()}); });
        CHECK(smem.find("bytes of shared memory in 2 stages, more than the 232448 bytes per block") !=
              std::string::npos);
        const std::string odd = loom_test::error_message(
            [&] { (void)loom_test::gpu_explain({matmul(a, b, tile(96, 128, 16)).node()}); });
        CHECK(odd.find("tile(96, 128, 16) is not divisible as the kernel needs: every extent must be a power "
                       "of two") != std::string::npos);
        CHECK(loom_test::error_message([&] {
                  (void)matmul(a, b, tile(-1, 0, 0));
              }).find("has a negative extent") != std::string::npos);
    }
}

TEST_CASE(
    "reference::product_bound and testing::compare_product_bound: the tensor-core bound of section 12") {
    // [[1, -2, 3]] x [[4], [5], [-6]]: C = 4 - 10 - 18 = -24, |A||B| = 4 + 10 + 18 = 32.
    const Tensor a = from_host(std::vector<double>{1, -2, 3}, {1, 3}, float16, Device::cpu());
    const Tensor b = from_host(std::vector<double>{4, 5, -6}, {3, 1}, float16, Device::cpu());
    const reference::ProductBound pb = reference::product_bound(a, b);
    REQUIRE(pb.value.shape() == Shape{1, 1});
    CHECK(pb.value.get_double(0) == -24.0);
    const double gamma = 3 * reference::kMmaUnit / (1 - 3 * reference::kMmaUnit);
    CHECK(pb.bound.get_double(0) >= gamma * 32);
    CHECK(pb.bound.get_double(0) <= gamma * 32 * (1 + 1e-9));
    CHECK(reference::product_gamma(std::int64_t{1} << 22, reference::kMmaUnit) ==
          std::numeric_limits<double>::infinity());
    // Vectors are promoted and squeezed; batch axes broadcast.
    const Tensor v = testing::random_tensor({40}, bfloat16, 1),
                 m = testing::random_tensor({3, 40, 7}, bfloat16, 2);
    CHECK(reference::product_bound(v, m).value.shape() == Shape{3, 7});
    CHECK(reference::product_bound(testing::random_tensor({2, 1, 5, 40}, bfloat16, 3), m).value.shape() ==
          Shape{2, 3, 5, 7});
    CHECK_THROWS_WITH_AS(reference::product_bound(v, testing::random_tensor({41, 2}, bfloat16, 4)),
                         doctest::Contains("reference::product_bound()"), Error);

    // The reference's own product lies within the bound; a result pushed past it, a NaN, or a wrong shape
    // does not.
    const Tensor x = testing::random_tensor({33, 300}, float16, 5),
                 w = testing::random_tensor({300, 17}, float16, 6);
    const Tensor y = reference::evaluate(matmul(x, w).node());
    const testing::Comparison ok = testing::compare_product_bound(y, x, w);
    INFO(ok.message);
    CHECK(ok.ok);
    CHECK(ok.count == 33 * 17);
    const reference::ProductBound exact = reference::product_bound(x, w);
    std::vector<double> o(33 * 17);
    for (std::size_t i = 0; i < o.size(); ++i) o[i] = y.get_double(static_cast<std::int64_t>(i));
    const std::int64_t e = 5 * 17 + 3;
    o[e] = exact.value.get_double(e) + 3 * exact.bound.get_double(e) +
           0.01 * std::fabs(exact.value.get_double(e)) + 1e-3;
    const testing::Comparison bad =
        testing::compare_product_bound(from_host(o, {33, 17}, float16, Device::cpu()), x, w, "pushed");
    CHECK(!bad.ok);
    CHECK(bad.mismatches == 1);
    CHECK(bad.worst_multi_index == std::vector<std::int64_t>{5, 3});
    CHECK(bad.message.find("pushed: 1 of 561 elements outside the tensor-core bound") != std::string::npos);
    o[e] = std::numeric_limits<double>::quiet_NaN();
    CHECK(!testing::compare_product_bound(from_host(o, {33, 17}, float16, Device::cpu()), x, w).ok);
    CHECK(!testing::compare_product_bound(testing::random_tensor({17, 33}, float16, 7), x, w).ok);

    // Specials: an Inf operand gives IEEE's Inf or NaN, which got must match; overflow only where the bound
    // allows.
    const double inf = std::numeric_limits<double>::infinity(),
                 nan = std::numeric_limits<double>::quiet_NaN();
    const Tensor ai = from_host(std::vector<double>{inf, 1, 0, 1}, {2, 2}, float16,
                                Device::cpu());  // rows [inf, 1], [0, 1]
    const Tensor bi = from_host(std::vector<double>{1, 0, 1, 1}, {2, 2}, float16,
                                Device::cpu());  // C = [[inf, nan], [1, 1]]
    auto got_of = [](std::vector<double> v) { return from_host(v, {2, 2}, float16, Device::cpu()); };
    CHECK(testing::compare_product_bound(got_of({inf, nan, 1, 1}), ai, bi).ok);
    CHECK(!testing::compare_product_bound(got_of({1, nan, 1, 1}), ai, bi).ok);
    CHECK(!testing::compare_product_bound(got_of({inf, 0, 1, 1}), ai, bi).ok);
    CHECK(!testing::compare_product_bound(got_of({inf, nan, nan, 1}), ai, bi).ok);
    const Tensor big = from_host(std::vector<double>{60000, 60000}, {1, 2}, float16, Device::cpu());
    const Tensor one = from_host(std::vector<double>{1, 1}, {2, 1}, float16,
                                 Device::cpu());  // C = 120000: float16 overflows
    CHECK(testing::compare_product_bound(from_host(std::vector<double>{inf}, {1, 1}, float16, Device::cpu()),
                                         big, one)
              .ok);
    CHECK(!testing::compare_product_bound(
               from_host(std::vector<double>{-inf}, {1, 1}, float16, Device::cpu()), big, one)
               .ok);
    // A float32 cast of a float16 product keeps float16's rounding of the accumulator.
    CHECK(testing::compare_product_bound(reference::cast(y, float32), x, w).ok);
    // int8: the exact sum modulo 2^32, nothing within the bound.
    const Tensor i8a = testing::random_tensor({9, 70}, int8, 8, testing::Random::uniform(-128, 127));
    const Tensor i8b = testing::random_tensor({70, 5}, int8, 9, testing::Random::uniform(-128, 127));
    const Tensor iy = reference::evaluate(matmul(i8a, i8b).node());
    CHECK(testing::compare_product_bound(iy, i8a, i8b).ok);
    std::vector<double> iv(45);
    for (std::size_t i = 0; i < iv.size(); ++i) iv[i] = iy.get_double(static_cast<std::int64_t>(i));
    iv[7] += 1;
    CHECK(!testing::compare_product_bound(from_host(iv, {9, 5}, int32, Device::cpu()), i8a, i8b).ok);
}
