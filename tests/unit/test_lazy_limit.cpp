// The lazy graph size limit: ir::Node::size_bound(), and Arrays that evaluate themselves once their graph
// passes lazy_node_limit() (on host tensors here; tests/gpu/test_whole_programs.cpp on the GPU).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <loom/loom.hpp>
#include <memory>
#include <vector>

#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/runtime/reference.hpp"

using namespace loom;

namespace {

/// Sets the lazy graph size limit for a scope.
struct LazyLimit {
    std::uint32_t old;
    explicit LazyLimit(std::uint32_t nodes) : old(set_lazy_node_limit(nodes)) {}
    ~LazyLimit() { set_lazy_node_limit(old); }
};

/// A chain of `ops` ops over x and y with rounding, transcendental and casting steps (the same ops for
/// every call, so that two chains built under different limits compute the same values).
Array chain(const Tensor& x, const Tensor& y, int ops) {
    Array a = x;
    for (int k = 0; k < ops; ++k) {
        switch (k % 5) {
            case 0:
                a = a * 1.0009765625;
                break;
            case 1:
                a = a + y;
                break;
            case 2:
                a = sin(a) * 3.0;
                break;
            case 3:
                a = a.astype(float16).astype(float32);
                break;
            default:
                a = a - y * 0.25;
                break;
        }
    }
    return a;
}

}  // namespace

TEST_CASE("size_bound: 1 + the distinct operands' bounds, saturating, placeholders are tracked") {
    auto x = ir::input(float32, {4}, "x", std::make_shared<int>(0));
    auto y = ir::input(float32, {4}, "y", std::make_shared<int>(0));
    CHECK(x->size_bound() == 1);
    CHECK_FALSE(x->reads_placeholder());
    auto m = ir::binary(ir::Op::Mul, x, y);
    CHECK(m->size_bound() == 3);
    CHECK(ir::binary(ir::Op::Add, x, x)->size_bound() == 2);  // one operand used twice
    CHECK(ir::binary(ir::Op::Add, m, x)->size_bound() == 5);  // x shared: counted once per use
    ir::NodePtr d = x;  // d_{k+1} = d_k + d_k * y: the bound doubles, the graph grows by 2 nodes per step
    for (int k = 0; k < 40; ++k) d = ir::binary(ir::Op::Add, d, ir::binary(ir::Op::Mul, d, y));
    CHECK(d->size_bound() == UINT32_MAX);
    CHECK(ir::topo_order({d}).size() == 82);
    auto p = ir::input(float32, {4}, "placeholder");
    CHECK(p->reads_placeholder());
    CHECK(ir::binary(ir::Op::Add, m, p)->reads_placeholder());
    CHECK_FALSE(ir::unary(ir::Op::Neg, m)->reads_placeholder());
}

TEST_CASE("set_lazy_node_limit returns the previous limit, 1024 by default") {
    const std::uint32_t before = lazy_node_limit();
    CHECK(before == 1024);  // LOOM_LAZY_MAX_NODES is not set in the tests
    CHECK(set_lazy_node_limit(17) == before);
    CHECK(lazy_node_limit() == 17);
    CHECK(set_lazy_node_limit(before) == 17);
}

TEST_CASE("limit 8: a chain of 100 ops on host tensors gives the bits of the unsplit graph's reference") {
    const Tensor x = testing::random_tensor({33, 7}, float32, 11);
    const Tensor y = testing::random_tensor({7}, float32, 12);  // row broadcast
    Array whole;
    {
        LazyLimit off(0);
        whole = chain(x, y, 100);
    }
    CHECK(whole.node()->size_bound() > 100);
    const Tensor want = reference::evaluate(whole.node());

    Array split;
    {
        LazyLimit eight(8);
        split = chain(x, y, 100);
        // The returned Array holds a small graph: the evaluated prefix is one input node.
        CHECK(ir::topo_order({split.node()}).size() <= 8);
    }
    const Tensor got = split;
    const testing::Comparison c = testing::compare(got, want, testing::Tolerance::exact(), "split chain");
    CHECK_MESSAGE(c.ok, c.message);
}

TEST_CASE("the limit never splits graphs over placeholders, over no tensors, or over two devices") {
    LazyLimit eight(8);
    // placeholders (what a traced function's callable sees)
    Array p(ir::input(float32, {16}, "p"));
    Array a = p;
    for (int k = 0; k < 30; ++k) a = a * 2.0 + 1.0;
    CHECK(a.node()->size_bound() > 8);
    // a traced function over host tensors: one graph, evaluated by the reference when called
    auto f = loom::function("long_chain", [](Array v) {
        for (int k = 0; k < 30; ++k) v = v * 0.5 + 1.0;
        return v;
    });
    const Tensor x = testing::random_tensor({16}, float32, 3);
    const Tensor fx = f(x);
    Array direct = x;
    for (int k = 0; k < 30; ++k) direct = direct * 0.5 + 1.0;  // split every few ops: the same bits
    const testing::Comparison c = testing::compare(fx, direct.eval(), testing::Tolerance::exact(), "traced");
    CHECK_MESSAGE(c.ok, c.message);
    // two devices: left lazy, so that eval() reports the mix where the user evaluates
    std::vector<float> buf(16, 0.0f);
    Tensor g = Tensor::view(buf.data(), {16}, float32, {}, Device::cuda(0));  // never dereferenced
    Array mixed = Array(g) + x;
    for (int k = 0; k < 10; ++k) mixed = mixed * 2.0;
    CHECK(mixed.node()->size_bound() > 8);
    CHECK_THROWS_AS(mixed.eval(), Error);
}

TEST_CASE("a chain of 10,000 ops under the default limit evaluates on the host in pieces") {
    CHECK(lazy_node_limit() == 1024);
    const Tensor x = testing::random_tensor({16}, float32, 10);
    std::vector<float> expect(static_cast<const float*>(x.data()), static_cast<const float*>(x.data()) + 16);
    Array a = x;
    for (int k = 0; k < 10000; ++k) {
        if (k % 2 == 0) {
            a = a * 0.5;
            for (float& v : expect) v = v * 0.5f;
        } else {
            a = a + 1.0;
            for (float& v : expect) v = v + 1.0f;
        }
        REQUIRE(ir::topo_order({a.node()}).size() <= 1024);
    }
    const Tensor out = a;
    for (int k = 0; k < 16; ++k)
        CHECK(static_cast<const float*>(out.data())[k] == expect[static_cast<std::size_t>(k)]);
}

TEST_CASE("a loop of 252 steps over two state arrays settles at the same place of each step: few kernels") {
    // A Monte Carlo path written naturally: the price and its running sum, one step per iteration, with
    // normals drawn in the kernel. The sum's graph holds the price's; when it passes the limit, the price
    // (which the loop holds) is evaluated with it, so both chains start again from tensors at that step.
    const std::int64_t paths = 256, steps = 252;
    const Tensor s0 = testing::random_tensor({paths}, float32, 1, testing::Random::uniform(90, 110));
    const Tensor a0 = testing::random_tensor({paths}, float32, 2);
    const auto path = [&] {
        Array s = s0, acc = a0;
        for (std::int64_t i = 0; i < steps; ++i) {
            s = s * exp(0.0001 + 0.015 * random_normal({paths}, 1000 + static_cast<std::uint64_t>(i)));
            acc = acc + s;
        }
        return acc / static_cast<double>(steps);
    };
    const Stats before = stats();
    const Tensor split = path();
    const std::uint64_t compiled = stats().host_kernel_misses - before.host_kernel_misses;
    CHECK_MESSAGE(compiled <= 6, compiled << " host kernels compiled for " << steps << " steps");
    Array whole;
    {
        const LazyLimit none(0);  // one graph of every step, on the reference
        whole = path();
    }
    const Tensor expected = reference::evaluate(whole.node());
    CHECK(std::memcmp(split.data(), expected.data(), split.nbytes()) == 0);
}

TEST_CASE("the limit counts a graph's distinct nodes: sharing that size_bound overcounts does not split it") {
    // d = d + d * y: 2 nodes a step, while the bound doubles (d is used twice).
    const Tensor x = testing::random_tensor({5}, float32, 21), y = testing::random_tensor({5}, float32, 22);
    LazyLimit fifty(50);
    Array d = x;
    for (int k = 0; k < 20; ++k) d = d + d * y;  // 42 nodes, a bound past 2^20
    CHECK(d.node()->size_bound() > 50);
    CHECK(ir::topo_order({d.node()}).size() == 42);  // not evaluated: still the whole graph
    for (int k = 0; k < 10; ++k) d = d + d * y;      // 62 nodes would pass 50: evaluated on the way
    CHECK(ir::topo_order({d.node()}).size() <= 50);
    Array whole;
    {
        LazyLimit off(0);
        whole = x;
        for (int k = 0; k < 30; ++k) whole = whole + whole * y;
    }
    const testing::Comparison c = testing::compare(Tensor(d), reference::evaluate(whole.node()),
                                                   testing::Tolerance::exact(), "shared steps");
    CHECK_MESSAGE(c.ok, c.message);
}
