// The fusion plan as data (codegen/include/loom/codegen/cuda/fusion_plan.hpp): one partitioner for graphs
// with and without reductions, its fused, strict and unfused cases, equality and hashing, the cost-model
// hook, options in the plan and the kernel keys, and partitions followed kernel by kernel on the reference.
#include <doctest/doctest.h>

#include <loom/loom.hpp>
#include <string>

#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/reference_plan.hpp"

using namespace loom;
using codegen::Family;
using codegen::Slot;

namespace {

std::vector<ir::NodePtr> lowered(const std::vector<Array>& arrays) {
    std::vector<ir::NodePtr> roots;
    for (const Array& a : arrays) roots.push_back(a.node());
    return ir::run_pipeline(roots, ir::standard_passes());
}

codegen::FusionPlan plan_of(const std::vector<Array>& arrays, const Options& options = {}) {
    return gpu::plan_bound(lowered(arrays), gpu::planning_device(), options, "", nullptr);
}

Tensor filled(const Shape& s, DType d, std::uint64_t seed) {
    Tensor t = Tensor::host(s, d);
    testing::fill_random(t, seed, testing::Random::normal());
    return t;
}

void require_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
        const testing::Comparison c =
            testing::compare(a[k], b[k], testing::Tolerance::exact(), "partition vs whole graph");
        CHECK_MESSAGE(c.ok, c.message);
    }
}

/// A cost model that keeps every reduction apart.
struct Apart : codegen::FusionCostModel {
    bool join_reduction(const std::vector<ir::NodePtr>&, const ir::Node&) const override { return false; }
};

}  // namespace

TEST_CASE("fusion plan: graphs without reductions go through the same partitioner") {
    Tensor x = filled({33, 40}, float32, 1), row = filled({40}, float32, 2);
    const Array a = Array(x) * Array(row) + 1.0, b = exp(Array(row)) - 2.0, c = Array(x) - 3.0;
    const codegen::FusionPlan p = plan_of({a, b, c});
    REQUIRE(p.partition.kernels.size() == 2);
    CHECK(p.partition.kernels[0].family == Family::Pointwise);
    CHECK(p.partition.kernels[0].writes ==
          std::vector<Slot>{{Slot::Kind::Root, 0}, {Slot::Kind::Root, 2}});  // one pass over x
    CHECK(p.partition.kernels[1].writes == std::vector<Slot>{{Slot::Kind::Root, 1}});
    CHECK(p.partition.kernels[0].name == "sub_add_mul_0");  // named after its ops, the last first
    CHECK(p.partition.temps.empty());
    CHECK(p.temp_bytes == 0);
    CHECK(p.kernels[0].as<codegen::PointwiseKernel>().planned.binding.numel == 33 * 40);
    CHECK(p.reads == std::vector<int>{0, 1});
}

TEST_CASE("fusion plan: equal graphs give equal plans and hashes, different ones differ") {
    Tensor x = filled({64, 1000}, float32, 3);
    auto softmax_of = [&](const Array& X) {
        const Array e = exp(X - max(X, -1, true));
        return e / sum(e, -1, true);
    };
    const codegen::FusionPlan p1 = plan_of({softmax_of(Array(x))}), p2 = plan_of({softmax_of(Array(x))});
    CHECK(p1.partition == p2.partition);
    CHECK(p1.partition.hash() == p2.partition.hash());
    CHECK(p1 == p2);
    CHECK(p1.hash() == p2.hash());
    CHECK(p1.to_string() == p2.to_string());
    const codegen::FusionPlan p3 = plan_of({exp(Array(x) - max(Array(x), -1, true))});
    CHECK(!(p1.partition == p3.partition));
    CHECK(p1.partition.hash() != p3.partition.hash());
    // Options enter the plan and every kernel key.
    const codegen::FusionPlan fast = plan_of({softmax_of(Array(x))}, Options{.fast_math = true});
    CHECK(fast.partition == p1.partition);
    CHECK(fast.kernels[0].key != p1.kernels[0].key);
    CHECK(fast.hash() != p1.hash());
}

TEST_CASE("fusion plan: fusion off runs every elementwise op and every reduction as a kernel of its own") {
    Tensor x = filled({100}, float32, 4);
    const Array y = relu(Array(x) * 2.0 + 1.0);
    const codegen::FusionPlan fused = plan_of({y});
    CHECK(fused.partition.kernels.size() == 1);
    const codegen::FusionPlan off = plan_of({y}, Options{.fusion = false});
    REQUIRE(off.partition.kernels.size() == 3);  // mul, add, relu
    REQUIRE(off.partition.temps.size() == 2);
    CHECK(off.partition.temps[0].value->op() == ir::Op::Mul);
    CHECK(off.partition.temps[1].value->op() == ir::Op::Add);
    CHECK(off.partition.kernels[0].writes == std::vector<Slot>{{Slot::Kind::Temp, 0}});
    CHECK(off.partition.kernels[1].writes == std::vector<Slot>{{Slot::Kind::Temp, 1}});
    CHECK(off.partition.kernels[2].writes == std::vector<Slot>{{Slot::Kind::Root, 0}});
    CHECK(off.kernels[1].reads == std::vector<Slot>{{Slot::Kind::Temp, 0}});
    CHECK(off.partition.note.rfind("fusion off", 0) == 0);
    // A reduction and its consumers, in the half dtype: every value materialized in its own dtype.
    Tensor q = filled({4, 300}, bfloat16, 5);
    const Array Q(q);
    const Array count = sum(Q == max(Q, -1, true), -1);
    const codegen::FusionPlan un = plan_of({Q, count}, Options{.fusion = false});
    // max, eq, sum, and a copy of the input root.
    REQUIRE(un.partition.kernels.size() == 4);
    CHECK(un.partition.kernels[0].family == Family::Reduction);
    CHECK(un.partition.temps[0].placeholder->dtype() == bfloat16);
    CHECK(un.partition.temps[1].placeholder->dtype() == bool_);
    // A root that is an input gets a copy kernel.
    CHECK(un.partition.kernels[3].family == Family::Pointwise);
    CHECK(un.partition.kernels[3].writes == std::vector<Slot>{{Slot::Kind::Root, 0}});
}

TEST_CASE("fusion plan: a cost model decides fusion boundaries") {
    Tensor x = filled({64, 1000}, float32, 6);
    const Array X(x);
    const std::vector<ir::NodePtr> g = lowered({sum(X, -1), max(X, -1)});
    const Apart apart;
    codegen::PartitionOptions po;
    CHECK(codegen::partition(g, po).kernels.size() == 1);
    po.cost = &apart;
    const codegen::Partition p = codegen::partition(g, po);
    CHECK(p.kernels.size() == 2);
    CHECK(p.kernels[1].why == "first reduction of its operand shape and axes");
}

TEST_CASE("fusion plan: partitions followed kernel by kernel on the reference give the whole graph's bits") {
    Tensor x = filled({16, 300}, bfloat16, 7), w = filled({300}, float16, 8);
    const Array X(x), W(w);
    const Array e = exp(X - max(X, -1, true));
    const std::vector<Array> arrays{e / sum(e, -1, true), sum(X == max(X, -1, true), -1), X * W, mean(X) - X};
    const std::vector<ir::NodePtr> g = lowered(arrays);
    const std::vector<Tensor> whole = reference::evaluate(g);
    codegen::PartitionOptions fused, strict, off;
    strict.strict = true;
    off.fusion = false;
    for (const auto* o : {&fused, &strict, &off}) {
        const codegen::Partition p = codegen::partition(g, *o);
        CAPTURE(p.to_string());
        require_same(reference::evaluate_partition(p, g), whole);
    }
    // A temporary held in another dtype than its value's is caught.
    codegen::Partition bad = codegen::partition(g, off);
    REQUIRE(!bad.temps.empty());
    const ir::NodePtr& ph = bad.temps[0].placeholder;
    bad.temps[0].placeholder =
        ir::input(ph->dtype() == float32 ? float64 : float32, ph->shape(), "wrong dtype");
    CHECK_THROWS_AS(reference::evaluate_partition(bad, g), InternalError);
}

TEST_CASE("fusion plan: options come from the scope, the environment or the traced function") {
    const Options defaults = current_options();
    CHECK(defaults.fusion);
    {
        const OptionsScope s(Options{.fusion = false});
        CHECK(!current_options().fusion);
        {
            const OptionsScope inner(Options{.line_info = true});
            CHECK(current_options().line_info);
            CHECK(current_options().fusion);  // a scope replaces the options, it does not merge them
        }
        CHECK(!current_options().fusion);
    }
    CHECK(current_options() == defaults);
    CHECK(Options{}.to_string() ==
          "fast_math=off line_info=off fusion=on capture=auto tile=auto product_path=auto "
          "product_precision=float32 stencil_reuse=auto attention_rewrite=off");
    CHECK(Options{.product_path = ProductPath::TensorCores}.to_string().find("product_path=tensor_cores") !=
          std::string::npos);
    CHECK(Options{.product_path = ProductPath::MmaSync}.to_string().find("product_path=mma_sync") !=
          std::string::npos);
    CHECK(Options{.product_path = ProductPath::MmaSync}.hash() !=
          Options{.product_path = ProductPath::TensorCores}.hash());
    CHECK(Options{}.hash() != Options{.product_path = ProductPath::CudaCores}.hash());
    CHECK(Options{.product_precision = ProductPrecision::TF32}.to_string().find("product_precision=tf32") !=
          std::string::npos);
    CHECK(Options{.product_precision = ProductPrecision::TF32x3}.to_string().find(
              "product_precision=3xtf32") != std::string::npos);
    CHECK(Options{}.hash() != Options{.product_precision = ProductPrecision::TF32}.hash());
    CHECK(Options{.product_precision = ProductPrecision::TF32x3}.hash() !=
          Options{.product_precision = ProductPrecision::TF32}.hash());
    CHECK(Options{.tile = tile(128, 128, 32)}.to_string().find("tile=128x128x32") != std::string::npos);
    CHECK(Options{}.hash() != Options{.fast_math = true}.hash());
    // A traced function on host tensors keeps its options; its CUDA is planned with them.
    auto f = loom::function(
        "opt_fn", [](Array a) { return relu(a * 2.0 + 1.0); }, Options{.fusion = false});
    Tensor x = filled({64}, float32, 9);
    const std::string src = f.cuda_source(x);
    std::size_t kernels = 0;
    for (std::size_t p = src.find("// ---- Loom pointwise kernel"); p != std::string::npos;
         p = src.find("// ---- Loom pointwise kernel", p + 1))
        ++kernels;
    CHECK(kernels == 3);
}
