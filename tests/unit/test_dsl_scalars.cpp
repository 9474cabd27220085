// DSL typing: weak C++ scalars take the array's dtype, Scalar vs Constant nodes, kernels shared across
// scalar values, and common subexpressions shared by construction (CSE through interning).
#include <doctest/doctest.h>

#include <cstdint>
#include <loom/loom.hpp>
#include <thread>
#include <vector>

#include "loom/codegen/plan/kernel_key.hpp"
#include "loom/ir/graph.hpp"

using namespace loom;
using ir::Op;

namespace {

int count_ops(const Array& a, Op op) {
    int n = 0;
    for (const ir::Node* node : ir::topo_order({a.node()}))
        if (node->op() == op) ++n;
    return n;
}

}  // namespace

TEST_CASE("a float scalar keeps a float array's dtype") {
    for (DType dt : {float16, bfloat16, float32, float64}) {
        CAPTURE(dt);
        Tensor x = Tensor::host({8}, dt);
        const Array y = x * 2.0;
        CHECK(y.dtype() == dt);
        // No Cast node: the scalar itself is a value of dt, and x is used as is.
        CHECK(count_ops(y, Op::Cast) == 0);
        REQUIRE(y.node()->op() == Op::Mul);
        CHECK(y.node()->operand(0)->op() == Op::Input);
        const ir::Node* bcast = y.node()->operand(1);
        REQUIRE(bcast->op() == Op::BroadcastTo);
        CHECK(bcast->operand(0)->op() == Op::Scalar);
        CHECK(bcast->operand(0)->dtype() == dt);
        CHECK((1.5f + x).dtype() == dt);
        CHECK((x / 3).dtype() == dt);  // an integer scalar with a float array: the array's dtype
        CHECK(relu(x * 1.5 + 0.25).dtype() == dt);
    }
}

TEST_CASE("the scalar is rounded to the array's dtype once, as a cast would") {
    Tensor h = Tensor::host({4}, float16);
    const Array yh = h * 0.1;  // the Array holds the graph that the node pointers below point into
    const ir::Node* s = yh.node()->operand(1)->operand(0);
    REQUIRE(s->op() == Op::Scalar);
    CHECK(s->value().f == half_bits_to_float(double_to_half_bits(0.1)));
    CHECK(s->value().f != 0.1);

    Tensor b = Tensor::host({4}, bfloat16);
    const Array yb = b + 0.1;
    const ir::Node* sb = yb.node()->operand(1)->operand(0);
    REQUIRE(sb->op() == Op::Scalar);
    CHECK(sb->value().f == bf16_bits_to_float(double_to_bf16_bits(0.1)));

    Tensor f = Tensor::host({4}, float32);
    const Array yf = f - 0.1;
    const ir::Node* sf = yf.node()->operand(1)->operand(0);
    REQUIRE(sf->op() == Op::Scalar);
    CHECK(sf->value().f == static_cast<double>(0.1f));
}

TEST_CASE("x * (2.0 * h) with a C++ double h keeps float32") {
    Tensor x = Tensor::host({16}, float32);
    const double h = 0.125;
    const Array y = x * (2.0 * h);
    CHECK(y.dtype() == float32);
    CHECK(count_ops(y, Op::Cast) == 0);
    CHECK(y.node()->operand(1)->operand(0)->value().f == 0.25);
}

TEST_CASE("integer and bool arrays with weak scalars") {
    Tensor i32 = Tensor::host({4}, int32);
    CHECK((i32 * 1.5).dtype() == float32);  // a float scalar with an integer array: float32
    CHECK((1.5 * i32).dtype() == float32);
    CHECK((i32 + 3).dtype() == int32);  // an integer scalar keeps the integer dtype
    CHECK((i32 + 3).node()->operand(1)->operand(0)->value().i == 3);
    for (DType dt : {int8, uint8, int32, int64}) {
        CAPTURE(dt);
        Tensor t = Tensor::host({4}, dt);
        CHECK((t + 3).dtype() == dt);
        CHECK((t * std::int64_t{2}).dtype() == dt);
        CHECK((t - 1.0).dtype() == float32);
        CHECK(count_ops(t + 3, Op::Cast) == 0);
    }
    Tensor b = Tensor::host({4}, bool_);
    CHECK((b + 1).dtype() == int32);  // an integer scalar with a bool array: int32
    CHECK((b * 2.5).dtype() == float32);
    CHECK((b & true).dtype() == bool_);  // a bool scalar with a bool array stays bool
    Tensor i64 = Tensor::host({4}, int64);
    CHECK((i64 + 1).dtype() == int64);
    CHECK((i64 < 1.5).dtype() == bool_);
}

TEST_CASE("weak scalars in ternary ops take the dtype of an array operand") {
    Tensor h = Tensor::host({4}, float16);
    Tensor c = Tensor::host({4}, bool_);
    CHECK(where(c, h, 0.0).dtype() == float16);
    CHECK(where(c, 1.0, h).dtype() == float16);
    CHECK(clamp(h, 0, 1).dtype() == float16);
    CHECK(clamp(h, -0.5, 0.5).dtype() == float16);
    CHECK(fma(h, 2.0, 1.0).dtype() == float16);
    Tensor u8 = Tensor::host({4}, uint8);
    CHECK(clamp(u8, 10, 200).dtype() == uint8);
    CHECK(where(c, u8, 7).dtype() == uint8);
}

TEST_CASE("loom::constant bakes a Constant node, a plain scalar is a Scalar kernel parameter") {
    Tensor x = Tensor::host({8}, float32);
    const Array c = x * constant(0.5);
    const Array s = x * 0.5;
    CHECK(count_ops(c, Op::Constant) == 1);
    CHECK(count_ops(c, Op::Scalar) == 0);
    CHECK(count_ops(s, Op::Scalar) == 1);
    CHECK(count_ops(s, Op::Constant) == 0);
    CHECK(c.node() != s.node());
    CHECK(c.dtype() == float32);

    // Constants of every C++ kind are weakly typed too, and integers keep all 64 bits.
    Tensor h = Tensor::host({8}, float16);
    CHECK((h * constant(2)).dtype() == float16);
    Tensor i64 = Tensor::host({8}, int64);
    const std::int64_t big = (std::int64_t{1} << 60) + 1;  // not a double
    const Array ib = i64 + constant(big);
    CHECK(ib.dtype() == int64);
    const ir::Node* k = ib.node()->operand(1)->operand(0);
    REQUIRE(k->op() == Op::Constant);
    CHECK(k->value().i == big);
    Tensor b = Tensor::host({8}, bool_);
    CHECK((b ^ constant(true)).dtype() == bool_);

    // Constants fold; scalars never do (their values are kernel parameters).
    const Array folded = x * (constant(2.0) * constant(3.0));
    const ir::Node* f = folded.node()->operand(1)->operand(0);
    REQUIRE(f->op() == Op::Constant);
    CHECK(f->value().f == 6.0);
    // x * constant(1) is x itself (an exact identity); x * 1.0 stays a multiply by a parameter.
    CHECK((x * constant(1.0)).node() == Array(x).node());
    CHECK((x * 1.0).node()->op() == Op::Mul);
}

TEST_CASE("x * 1.5 and x * 2.5 are different nodes but one kernel") {
    Tensor x = Tensor::host({1024}, float32);
    const Array a = x * 1.5, b = x * 2.5;
    CHECK(a.node() != b.node());
    CHECK(codegen::structural_key({a.node()}) == codegen::structural_key({b.node()}));
    // Baked constants are part of the kernel.
    const Array ca = x * constant(1.5), cb = x * constant(2.5);
    CHECK(codegen::structural_key({ca.node()}) != codegen::structural_key({cb.node()}));
    // A different op is a different kernel.
    CHECK(codegen::structural_key({a.node()}) != codegen::structural_key({(x + 1.5).node()}));
    // The generated code is the same text for both scalar values.
    CHECK(cuda_source({a}, "scale") == cuda_source({b}, "scale"));
}

TEST_CASE("common subexpressions are shared by construction") {
    Tensor x = Tensor::host({64}, float32);
    const Array a1 = Array(x) + 1.0;
    const Array a2 = Array(x) + 1.0;
    CHECK(a1.node() == a2.node());
    CHECK((relu(x * 2.0) - 3.0).node() == (relu(x * 2.0) - 3.0).node());
    CHECK((Array(x) + 1.0).node() != (Array(x) + 2.0).node());
    CHECK((Array(x) + 1.0).node() != (Array(x) + constant(1.0)).node());

    // x + x reads x once: one Input node, used twice.
    const Array twice = x + x;
    CHECK(count_ops(twice, Op::Input) == 1);
    CHECK(twice.node()->operand(0) == twice.node()->operand(1));
    // A copied Tensor handle is the same input; a second view of the same memory is another input.
    Tensor same = x;
    CHECK(count_ops(x * same, Op::Input) == 1);
    Tensor other = Tensor::view(x.data(), x.shape(), float32, {}, Device::cpu());
    CHECK(count_ops(x * other, Op::Input) == 2);

    // (x + 1) * (x + 1) builds the add once.
    const Array sq = (x + 1.0) * (x + 1.0);
    CHECK(count_ops(sq, Op::Add) == 1);
    CHECK(count_ops(sq, Op::Input) == 1);
}

TEST_CASE("operators and free functions build the same IR") {
    Tensor a = Tensor::host({4, 4}, int32);
    Tensor b = Tensor::host({4}, int32);
    CHECK((a + b).node() == add(a, b).node());
    CHECK((a - b).node() == sub(a, b).node());
    CHECK((a * b).node() == mul(a, b).node());
    CHECK((a / b).node() == div(a, b).node());
    CHECK((a % b).node() == rem(a, b).node());
    CHECK((a == b).node() == eq(a, b).node());
    CHECK((a != b).node() == ne(a, b).node());
    CHECK((a < b).node() == lt(a, b).node());
    CHECK((a <= b).node() == le(a, b).node());
    CHECK((a > b).node() == gt(a, b).node());
    CHECK((a >= b).node() == ge(a, b).node());
    CHECK((a & b).node() == bitwise_and(a, b).node());
    CHECK((a | b).node() == bitwise_or(a, b).node());
    CHECK((a ^ b).node() == bitwise_xor(a, b).node());
    CHECK((a << b).node() == shift_left(a, b).node());
    CHECK((a >> b).node() == shift_right(a, b).node());
    CHECK((-Array(a)).node() == neg(a).node());
    CHECK((!Array(a)).node() == logical_not(a).node());
    CHECK((a / b).node()->op() == Op::Div);
    CHECK((a % b).node()->op() == Op::Rem);
    CHECK(astype(a, float32).node() == Array(a).astype(float32).node());
    CHECK(transpose(a).node() == Array(a).transposed().node());
    CHECK(transpose(a).shape() == Shape{4, 4});
    CHECK(permute(a, {1, 0}).node() == transpose(a).node());
}

TEST_CASE("threads building expressions over one tensor share its one input node") {
    for (int round = 0; round < 200; ++round) {
        Tensor x = Tensor::host({8}, float32);  // fresh: no input node yet
        std::vector<Array> built(4);
        std::vector<std::thread> threads;
        for (std::size_t k = 0; k < built.size(); ++k) threads.emplace_back([&, k] { built[k] = x * 2.0; });
        for (auto& t : threads) t.join();
        for (const Array& a : built) REQUIRE(a.node() == built[0].node());
    }
}

TEST_CASE("where with two scalar branches types them against each other, not against the condition") {
    Tensor c = loom::Tensor::host({4}, float16);
    const Array w = where(c, 1.0, 0.0);
    CHECK(w.dtype() == float32);
    Tensor x = loom::Tensor::host({4}, bfloat16);
    CHECK(where(c, x, 0.0).dtype() == bfloat16);
    CHECK(where(c, 2, x).dtype() == bfloat16);
}

TEST_CASE("an int64 scalar meeting a float array is rounded once, as a cast of an int64 array is") {
    // Above 2^53 a plain double rounds first: 2^62 + 2^38 + 1 became 2^62 in float32, where one rounding
    // gives 2^62 + 2^39 (docs/semantics.md, sections 2 and 6); 2^60 + 2^52 + 1 becomes 2^60 + 2^53 in
    // bfloat16, not 2^60.
    const std::int64_t v = (std::int64_t{1} << 62) + (std::int64_t{1} << 38) + 1;
    const Tensor zero = from_host(std::vector<float>{0.0f}, {1}, float32, Device::cpu());
    const Tensor as_array = from_host(std::vector<std::int64_t>{v}, {1}, int64, Device::cpu());
    const float cast = Tensor(astype(as_array, float32)).item<float>();
    CHECK(cast == 4611686568183201792.0f);  // 2^62 + 2^39
    CHECK(Tensor(zero + v).item<float>() == cast);
    CHECK(Tensor(v + zero).item<float>() == cast);
    const std::int64_t b = (std::int64_t{1} << 60) + (std::int64_t{1} << 52) + 1;
    const Tensor zb = astype(zero, bfloat16);
    CHECK(Tensor(astype(zb + b, float64)).item<double>() == 1161928703861587968.0);  // 2^60 + 2^53
    const Tensor zh = astype(zero, float64);
    CHECK(Tensor(zh + v).item<double>() == static_cast<double>(v));  // float64: the one rounding
}
