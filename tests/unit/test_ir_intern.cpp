// IR interning: equal nodes are one object, different attributes or operands give different nodes, the
// table is thread-safe and keeps no node alive.
#include <doctest/doctest.h>

#include <atomic>
#include <limits>
#include <thread>
#include <vector>

#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/node.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

ScalarValue f(double v) {
    return ScalarValue::of_float(v);
}
ScalarValue i(std::int64_t v) {
    return ScalarValue::of_int(v);
}

}  // namespace

TEST_CASE("interning: building an existing node returns the same object") {
    NodePtr x = input(float32, {4, 3}, "x");
    NodePtr y = input(float32, {4, 3}, "y");
    NodePtr a = binary(Op::Add, x, y);
    NodePtr b = binary(Op::Add, x, y);
    CHECK(a.get() == b.get());
    CHECK(a->op() == Op::Add);
    CHECK(unary(Op::Exp, a).get() == unary(Op::Exp, b).get());
    CHECK(constant(f(0.5), float32).get() == constant(f(0.5), float32).get());
    CHECK(scalar(f(2.0), float32).get() == scalar(f(2.0), float32).get());
    CHECK(reduce(Op::Sum, a, {1}, false).get() == reduce(Op::Sum, a, {-1}, false).get());  // axes normalized
    CHECK(permute(x, {1, 0}).get() == transpose(x).get());
    CHECK(a->hash() == b->hash());
}

TEST_CASE("interning: the source location is not part of a node's identity") {
    NodePtr x = input(float32, {8}, "x");
    NodePtr a = unary(Op::Sqrt, x, Loc::current());
    NodePtr b = unary(Op::Sqrt, x, Loc::current());  // another line
    CHECK(a.get() == b.get());
    CHECK(b->loc().line() == a->loc().line());  // b is a: it keeps the first call's location
}

TEST_CASE("interning: each input is a distinct node, even with the same dtype, shape and label") {
    NodePtr x1 = input(float32, {4}, "x");
    NodePtr x2 = input(float32, {4}, "x");
    CHECK(x1.get() != x2.get());
    CHECK(x1->input_id() != x2->input_id());
    CHECK(binary(Op::Mul, x1, x1).get() != binary(Op::Mul, x2, x2).get());
}

TEST_CASE("interning: different attributes or operands give different nodes") {
    NodePtr x = input(float32, {4, 6}, "x");
    NodePtr y = input(float32, {4, 6}, "y");

    SUBCASE("op") {
        CHECK(binary(Op::Add, x, y).get() != binary(Op::Sub, x, y).get());
    }
    SUBCASE("operands swapped") {
        NodePtr xy = binary(Op::Sub, x, y), yx = binary(Op::Sub, y, x);
        CHECK(xy.get() != yx.get());
        // Even for a commutative op: Loom does not reorder operands (results stay as written).
        CHECK(binary(Op::Add, x, y).get() != binary(Op::Add, y, x).get());
    }
    SUBCASE("dtype") {
        CHECK(cast(x, float64).get() != cast(x, float16).get());
    }
    SUBCASE("constant value, including the sign of zero and the dtype") {
        CHECK(constant(f(1.0), float32).get() != constant(f(2.0), float32).get());
        CHECK(constant(f(0.0), float32).get() != constant(f(-0.0), float32).get());
        CHECK(constant(f(1.0), float32).get() != constant(f(1.0), float64).get());
        CHECK(constant(i(1), int32).get() != constant(i(1), int64).get());
        CHECK(constant(f(1.0), float32).get() != scalar(f(1.0), float32).get());  // Constant vs Scalar
    }
    SUBCASE("NaN constants with the same bits are one node") {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        CHECK(constant(f(nan), float32).get() == constant(f(nan), float32).get());
    }
    SUBCASE("reduction axes and keepdims") {
        CHECK(reduce(Op::Sum, x, {0}, false).get() != reduce(Op::Sum, x, {1}, false).get());
        CHECK(reduce(Op::Sum, x, {1}, false).get() != reduce(Op::Sum, x, {1}, true).get());
        CHECK(reduce(Op::Sum, x, {1}, false).get() != reduce(Op::Max, x, {1}, false).get());
    }
    SUBCASE("view attributes") {
        CHECK(reshape(x, {24}).get() != reshape(x, {6, 4}).get());
        CHECK(slice(x, {{0, 2, 1}}).get() != slice(x, {{1, 3, 1}}).get());
        CHECK(slice(x, {{0, 4, 2}}).get() != slice(x, {{0, 4, 1}, {0, 6, 3}}).get());
        CHECK(broadcast_to(x, {2, 4, 6}).get() != broadcast_to(x, {3, 4, 6}).get());
    }
}

TEST_CASE("interning: the table does not keep nodes alive") {
    const std::size_t before = live_node_count();
    {
        NodePtr x = input(float32, {16}, "x");
        NodePtr y = input(int32, {16}, "y");
        NodePtr z = unary(Op::Tanh, binary(Op::Mul, x, y));  // cast, mul, tanh
        CHECK(live_node_count() == before + 5);
        CHECK(topo_order({z}).size() == 5);
    }
    CHECK(live_node_count() == before);

    // A node rebuilt after its death is a new object (its id is never reused).
    NodePtr x = input(float32, {16}, "x");
    std::uint64_t first_id;
    {
        NodePtr e = unary(Op::Exp, x);
        first_id = e->id();
    }
    NodePtr e2 = unary(Op::Exp, x);
    CHECK(e2->id() != first_id);
    CHECK(live_node_count() == before + 2);
}

TEST_CASE("interning: many threads building the same expressions get identical pointers") {
    constexpr int kThreads = 8;
    constexpr int kExprs = 400;
    NodePtr x = input(float32, {32, 8}, "x");
    NodePtr y = input(float32, {8}, "y");
    NodePtr s = input(int32, {32, 1}, "s");
    const std::size_t before = live_node_count();

    auto build = [&](int k) {
        // Expressions differ by a constant; each builds casts, broadcasts and arithmetic through the table.
        NodePtr c = constant(ScalarValue::of_float(static_cast<double>(k)), float32);
        NodePtr t = binary(Op::Mul, binary(Op::Add, x, y), c);
        t = binary(Op::Sub, t, s);
        return reduce(Op::Sum, unary(Op::Exp, t), {1}, true);
    };
    std::vector<std::vector<NodePtr>> results(kThreads);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            ready.fetch_add(1);
            while (ready.load() < kThreads) {
            }
            // Alternate the order in which threads walk the expressions to mix creation and lookup.
            results[static_cast<std::size_t>(t)].resize(kExprs);
            for (int j = 0; j < kExprs; ++j) {
                const int k = t % 2 ? kExprs - 1 - j : j;
                results[static_cast<std::size_t>(t)][static_cast<std::size_t>(k)] = build(k);
            }
        });
    }
    for (auto& th : threads) th.join();
    for (int t = 1; t < kThreads; ++t)
        for (int k = 0; k < kExprs; ++k)
            REQUIRE(results[static_cast<std::size_t>(t)][static_cast<std::size_t>(k)].get() ==
                    results[0][static_cast<std::size_t>(k)].get());
    // Shared by all: x, y, s, broadcast y, x + y, cast s, broadcast of the cast. Per k: the constant, its
    // broadcast, mul, sub, exp, sum; except k == 1, where (x + y) * 1 folds to x + y (sub, exp, sum only).
    std::vector<NodePtr> roots = results[0];
    CHECK(topo_order(roots).size() == 7 + 6 * (kExprs - 1) + 3);
    results.clear();
    roots.clear();
    CHECK(live_node_count() == before);
}

TEST_CASE("interning: concurrent creation and destruction keeps the table consistent") {
    constexpr int kThreads = 4;
    NodePtr x = input(float32, {64}, "x");
    const std::size_t before = live_node_count();
    std::vector<std::thread> threads;
    std::atomic<int> mismatches{0};
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            for (int round = 0; round < 2000; ++round) {
                // Divisors 2 .. 8: x / 1 would fold to x.
                NodePtr c = constant(ScalarValue::of_float(static_cast<double>(round % 7 + 2)), float32);
                NodePtr a = binary(Op::Div, unary(Op::Sin, x), c);
                NodePtr b = binary(Op::Div, unary(Op::Sin, x), c);
                if (a.get() != b.get() || a->operand(0)->op() != Op::Sin) mismatches.fetch_add(1);
                // a and b die here, often while another thread looks the same node up.
            }
        });
    }
    for (auto& th : threads) th.join();
    CHECK(mismatches.load() == 0);
    CHECK(live_node_count() == before);
}
