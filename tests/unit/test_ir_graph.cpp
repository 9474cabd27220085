// Graph traversal, printing and verification: shared sub-graphs visited once, deep and wide graphs built,
// walked, printed, verified and freed without recursion, a stable printed form with dense names.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <limits>
#include <string>
#include <vector>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

std::size_t count_lines(const std::string& s) {
    std::size_t n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

// A chain `depth` nodes deep: x, then alternately x + y and sqrt(.) so that nothing folds.
void check_deep_chain(int depth) {
    const std::size_t before = live_node_count();
    {
        NodePtr x = input(float32, {16}, "x");
        NodePtr y = input(float32, {16}, "y");
        NodePtr cur = x;
        for (int k = 0; k < depth; ++k) cur = k % 2 ? unary(Op::Sqrt, cur) : binary(Op::Add, cur, y);
        CHECK(live_node_count() == before + static_cast<std::size_t>(depth) + 2);
        const auto order = topo_order({cur});
        REQUIRE(order.size() == static_cast<std::size_t>(depth) + 2);
        CHECK(order.back() == cur.get());
        CHECK(order.front() == x.get());
        const auto uses = use_counts(order);
        CHECK(uses[1] == depth / 2 + depth % 2);  // y: used by every add
        CHECK_NOTHROW(verify({cur}));
        const std::string text = print({cur});
        CHECK(count_lines(text) == static_cast<std::size_t>(depth) + 3);  // nodes + return
        CHECK(text.find(fmt::format("return %{}\n", depth + 1)) != std::string::npos);
        // A rewrite and the standard pipeline walk it too (nothing to change: same root back).
        CHECK(run_pipeline({cur}, standard_passes())[0].get() == cur.get());
        // Rebuilding every node on a new input walks and frees the whole chain.
        NodePtr z = input(float32, {16}, "z");
        auto swapped = rewrite({cur}, [&](const Node& n, const std::vector<NodePtr>&) -> NodePtr {
            return &n == x.get() ? z : nullptr;
        });
        CHECK(swapped[0].get() != cur.get());
        CHECK(topo_order(swapped).size() == static_cast<std::size_t>(depth) + 2);
        // Dropping `cur` (the only owner of the chain) frees it iteratively.
    }
    CHECK(live_node_count() == before);
}

}  // namespace

TEST_CASE("graph: shared sub-graphs are visited once") {
    NodePtr x = input(float32, {8}, "x"), y = input(float32, {8}, "y");
    NodePtr d = binary(Op::Add, x, y);
    NodePtr e = binary(Op::Mul, d, d);
    NodePtr f = binary(Op::Sub, e, d);
    const auto order = topo_order({f});
    CHECK(order.size() == 5);  // x, y, d, e, f
    CHECK(order == std::vector<const Node*>{x.get(), y.get(), d.get(), e.get(), f.get()});
    CHECK(use_counts(order) == std::vector<int>{1, 1, 3, 1, 0});
    // Several roots sharing nodes; a root listed twice or reachable from another root appears once.
    CHECK(topo_order({f, e, d, f}).size() == 5);

    // A diamond ladder: 2^200 paths from the top to x, 201 nodes. Visiting paths instead of nodes would
    // never finish.
    NodePtr cur = x;
    for (int k = 0; k < 200; ++k) cur = binary(Op::Mul, binary(Op::Add, cur, y), cur);
    CHECK(topo_order({cur}).size() == 2 + 2 * 200);
    CHECK_NOTHROW(verify({cur}));
}

TEST_CASE("graph: a 10,000-deep chain builds, walks, prints, verifies and frees without recursion") {
    check_deep_chain(10'000);
}

TEST_CASE("graph: a 100,000-deep chain too") {
    check_deep_chain(100'000);
}

TEST_CASE("graph: a 100,000-node wide graph") {
    const std::size_t before = live_node_count();
    {
        // 50,000 inputs summed pairwise: 49,999 adds; plus a cast of the final sum.
        std::vector<NodePtr> level;
        for (int k = 0; k < 50'000; ++k) level.push_back(input(float32, {4}, fmt::format("in{}", k)));
        while (level.size() > 1) {
            std::vector<NodePtr> next;
            for (std::size_t k = 0; k + 1 < level.size(); k += 2)
                next.push_back(binary(Op::Add, level[k], level[k + 1]));
            if (level.size() % 2) next.push_back(level.back());
            level = std::move(next);
        }
        NodePtr root = cast(level[0], float64);
        CHECK(live_node_count() == before + 100'000);
        const auto order = topo_order({root});
        CHECK(order.size() == 100'000);
        CHECK_NOTHROW(verify({root}));
        CHECK(count_lines(print({root})) == 100'001);
        CHECK(run_pipeline({root}, standard_passes())[0].get() == root.get());
    }
    CHECK(live_node_count() == before);
}

TEST_CASE("print: one line per node, dense names in topological order, the op's attributes") {
    const int l1 = __LINE__ + 1;
    NodePtr x = input(float32, {4, 3}, "x");
    const int l2 = __LINE__ + 1;
    NodePtr y = input(float32, {3}, "y");
    const int l3 = __LINE__ + 1;
    NodePtr z = binary(Op::Add, x, y);
    const int l4 = __LINE__ + 1;
    NodePtr w = unary(Op::Exp, z);
    const std::string expected = fmt::format(
        "%0 = input \"x\" : [4, 3] float32   # test_ir_graph.cpp:{0}\n"
        "%1 = input \"y\" : [3] float32   # test_ir_graph.cpp:{1}\n"
        "%2 = broadcast_to %1 : [4, 3] float32   # test_ir_graph.cpp:{2}\n"
        "%3 = add %0, %2 : [4, 3] float32   # test_ir_graph.cpp:{2}\n"
        "%4 = exp %3 : [4, 3] float32   # test_ir_graph.cpp:{3}\n"
        "return %4, %3\n",
        l1, l2, l3, l4);
    CHECK(print({w, z}) == expected);
    CHECK(print({w, z}) == expected);  // stable
    // Names are dense per printed graph, whatever the nodes' ids: a sub-graph starts at %0 again.
    CHECK(print({y}).rfind("%0 = input \"y\" : [3] float32", 0) == 0);
}

TEST_CASE("print: attributes of leaves, views and reductions") {
    NodePtr x = input(float32, {4, 6}, "x");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::string t =
        print({reduce(Op::Sum, slice(permute(x, {1, 0}), {{1, 5, 2}}), {1}, true),
               constant(ScalarValue::of_float(0.5), float32), scalar(ScalarValue::of_int(-3), int32),
               constant(ScalarValue::of_float(nan), float64)});
    CHECK(t.find("= permute %0, perm=[1, 0] : [6, 4] float32") != std::string::npos);
    CHECK(t.find("= slice %1, start::step=[1::2, 0::1] : [2, 4] float32") != std::string::npos);
    CHECK(t.find("= sum %2, axes=[1] keepdims : [2, 1] float32") != std::string::npos);
    CHECK(t.find("%4 = constant 0.5 : [] float32") != std::string::npos);
    CHECK(t.find("%5 = scalar -3 : [] int32") != std::string::npos);
    CHECK(t.find("%6 = constant nan : [] float64") != std::string::npos);
    CHECK(t.find("return %3, %4, %5, %6\n") != std::string::npos);
}

TEST_CASE("verify: accepts every graph the constructors build") {
    // Every elementwise op on every pair of dtypes, with array and constant operands: each node the
    // constructors accept must verify, and must have operands of its own shape.
    std::vector<NodePtr> roots;
    int accepted = 0, rejected = 0;
    for (DType a : kAllDTypes) {
        for (DType b : kAllDTypes) {
            NodePtr x = input(a, {3, 1}, "x"), y = input(b, {4}, "y");
            NodePtr c = constant(ScalarValue::of_int(1), b);
            if (is_float(b)) c = constant(ScalarValue::of_float(1.0), b);
            for (int k = 0; k < num_ops(); ++k) {
                const Op op = static_cast<Op>(k);
                const OpKind kind = info(op).kind;
                for (const NodePtr& other : {y, c}) {
                    try {
                        NodePtr n;
                        if (kind == OpKind::Unary && op != Op::Cast)
                            n = unary(op, x);
                        else if (op == Op::Cast)
                            n = cast(x, b);
                        else if (kind == OpKind::Binary)
                            n = binary(op, x, other);
                        else if (kind == OpKind::Ternary)
                            n = ternary(op, x, other, y);
                        else if (kind == OpKind::Reduce)
                            n = reduce(op, x, {0}, false);
                        else
                            continue;
                        if (is_elementwise(n->op()))
                            for (const auto& o : n->operands()) CHECK(o->shape() == n->shape());
                        roots.push_back(n);
                        ++accepted;
                    } catch (const loom::Error&) {
                        ++rejected;  // a typing error the user would see; not a verifier matter
                    }
                }
            }
        }
    }
    CHECK(accepted > 2000);
    CHECK(rejected > 0);
    CHECK_NOTHROW(verify(roots));
}

TEST_CASE("verify: rejects nodes that bypass the constructors, naming the node") {
    NodePtr x = input(float32, {4, 3}, "x"), y = input(float32, {3}, "y"), i = input(int32, {4, 3}, "i");
    auto raw = [](Op op, DType dt, Shape shape, std::vector<NodePtr> ops) {
        NodeDesc d;
        d.op = op;
        d.dtype = dt;
        d.shape = std::move(shape);
        d.operands = std::move(ops);
        return intern(std::move(d));
    };
    auto message = [](const NodePtr& n) -> std::string {
        try {
            verify({n});
        } catch (const loom::InternalError& e) {
            return e.what();
        }
        return "<no error>";
    };
    // Unbroadcast operand.
    const std::string m = message(raw(Op::Add, float32, {4, 3}, {x, y}));
    CHECK(m.find("verify: add node ([4, 3] float32)") != std::string::npos);
    CHECK(m.find("operand shape [3] differs") != std::string::npos);
    CHECK(m.find("this is a bug in Loom") != std::string::npos);
    // Unpromoted operand, wrong operand count, a view that changes the element count.
    CHECK(message(raw(Op::Mul, float32, {4, 3}, {x, i})).find("operand dtype differs") != std::string::npos);
    CHECK(message(raw(Op::Neg, float32, {4, 3}, {x, x})).find("2 operands, expected 1") != std::string::npos);
    CHECK(message(raw(Op::Reshape, float32, {5}, {x})).find("reshape changes numel") != std::string::npos);
    // The valid counterparts pass.
    CHECK(message(binary(Op::Add, x, y)) == "<no error>");
    CHECK(message(binary(Op::Mul, x, i)) == "<no error>");
}
