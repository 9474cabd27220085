// Constant folding and algebraic simplification at node construction: what must fold, and the IEEE-754
// cases that must not (x*0, x-x, x/x, x+0.0 for floats).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

// Constants of a dtype, converted as the DSL converts C++ scalars.
NodePtr cf(double v, DType t = float32) {
    return constant(make_scalar_value(v, t, "test", Loc::current()), t);
}
NodePtr ci(std::int64_t v, DType t = int32) {
    return constant(make_scalar_value(v, t, "test", Loc::current()), t);
}

// The rank-0 constant a folded result broadcasts (the result itself when it is rank 0).
const Node* folded_constant(const NodePtr& n) {
    const Node* p = n.get();
    if (p->op() == Op::BroadcastTo) p = p->operand(0);
    return p->op() == Op::Constant ? p : nullptr;
}

}  // namespace

TEST_CASE("folding: constant operands are computed at construction") {
    SUBCASE("float32 arithmetic, rounded to the dtype") {
        NodePtr r = binary(Op::Add, cf(2.0), cf(3.0));
        REQUIRE(r->op() == Op::Constant);
        CHECK(r->dtype() == float32);
        CHECK(r->value().f == 5.0);
        // 0.1f + 0.2f rounds to float32 once: not the double sum.
        NodePtr s = binary(Op::Add, cf(0.1), cf(0.2));
        REQUIRE(s->op() == Op::Constant);
        CHECK(s->value().f == static_cast<double>(0.1f + 0.2f));
        CHECK(s->value().f != 0.1 + 0.2);
    }
    SUBCASE("integers wrap and divide like C++") {
        NodePtr w = binary(Op::Add, ci(std::numeric_limits<std::int32_t>::max()), ci(1));
        REQUIRE(w->op() == Op::Constant);
        CHECK(w->value().i == std::numeric_limits<std::int32_t>::min());
        NodePtr d = binary(Op::Div, ci(-7), ci(2));
        REQUIRE(d->op() == Op::Constant);
        CHECK(d->value().i == -3);
        NodePtr fd = binary(Op::FloorDiv, ci(-7), ci(2));
        REQUIRE(fd->op() == Op::Constant);
        CHECK(fd->value().i == -4);
    }
    SUBCASE("unary, cast and comparison") {
        NodePtr e = unary(Op::Neg, cf(1.5));
        REQUIRE(e->op() == Op::Constant);
        CHECK(e->value().f == -1.5);
        NodePtr c = cast(cf(2.75), int32);
        REQUIRE(c->op() == Op::Constant);
        CHECK(c->value().i == 2);  // float -> int truncates
        NodePtr lt = binary(Op::Lt, cf(1.0), ci(2));
        REQUIRE(lt->op() == Op::Constant);
        CHECK(lt->dtype() == bool_);
        CHECK(lt->value().i == 1);
    }
    SUBCASE("ternary: fma of constants, where with a constant condition") {
        NodePtr f = ternary(Op::Fma, cf(2.0), cf(3.0), cf(1.0));
        REQUIRE(f->op() == Op::Constant);
        CHECK(f->value().f == 7.0);
        NodePtr x = input(float32, {4}, "x"), y = input(float32, {4}, "y");
        CHECK(ternary(Op::Where, constant(ScalarValue::of_int(1), bool_), x, y).get() == x.get());
        CHECK(ternary(Op::Where, constant(ScalarValue::of_int(0), bool_), x, y).get() == y.get());
        NodePtr c = input(bool_, {4}, "c");
        CHECK(ternary(Op::Where, c, x, x).get() == x.get());
    }
    SUBCASE("a folded value broadcast against an array keeps the broadcast shape") {
        NodePtr x = input(float32, {3, 5}, "x");
        NodePtr r = binary(Op::Add, binary(Op::Mul, cf(2.0), cf(4.0)), x);
        CHECK(r->op() == Op::Add);
        const Node* c = folded_constant(r->operand_ptr(0));
        REQUIRE(c != nullptr);
        CHECK(c->value().f == 8.0);
    }
    SUBCASE("float16 folds in float32 and rounds once to float16") {
        // 2049 is not a float16 value: 2048 + 1 rounds to even (2048).
        NodePtr h = binary(Op::Add, cf(2048.0, float16), cf(1.0, float16));
        REQUIRE(h->op() == Op::Constant);
        CHECK(h->dtype() == float16);
        CHECK(h->value().f == 2048.0);
    }
}

TEST_CASE("folding: IEEE-754 identities that must NOT fold for floats") {
    for (DType t : {float16, bfloat16, float32, float64}) {
        CAPTURE(name(t));
        NodePtr x = input(t, {8}, "x");
        // x * 0 is NaN for Inf and NaN, -0 for negative x.
        NodePtr m = binary(Op::Mul, x, cf(0.0, t));
        CHECK(m->op() == Op::Mul);
        CHECK(binary(Op::Mul, cf(0.0, t), x)->op() == Op::Mul);
        // x - x is NaN for Inf and NaN.
        CHECK(binary(Op::Sub, x, x)->op() == Op::Sub);
        // x / x is NaN for 0, Inf, NaN.
        CHECK(binary(Op::Div, x, x)->op() == Op::Div);
        // x + 0.0 is +0 for x = -0.
        CHECK(binary(Op::Add, x, cf(0.0, t))->op() == Op::Add);
        CHECK(binary(Op::Add, cf(0.0, t), x)->op() == Op::Add);
        // x - (-0.0) is x + 0.0: +0 for x = -0.
        CHECK(binary(Op::Sub, x, cf(-0.0, t))->op() == Op::Sub);
        // x * -1 is not a fold (no rewrite to neg is needed), and 0 - x is not neg(x) (0 - 0 = +0).
        CHECK(binary(Op::Sub, cf(0.0, t), x)->op() == Op::Sub);
        // min/max of x with itself are not folded either way (NaN semantics live in the op).
        CHECK(binary(Op::Maximum, x, x)->op() == Op::Maximum);
    }
}

TEST_CASE("folding: identities that are exact for every float value do fold") {
    for (DType t : {float16, bfloat16, float32, float64}) {
        CAPTURE(name(t));
        NodePtr x = input(t, {8}, "x");
        CHECK(binary(Op::Mul, x, cf(1.0, t)).get() == x.get());
        CHECK(binary(Op::Mul, cf(1.0, t), x).get() == x.get());
        CHECK(binary(Op::Div, x, cf(1.0, t)).get() == x.get());
        CHECK(binary(Op::Sub, x, cf(0.0, t)).get() == x.get());
        CHECK(binary(Op::Add, x, cf(-0.0, t)).get() == x.get());
        CHECK(binary(Op::Add, cf(-0.0, t), x).get() == x.get());
        CHECK(unary(Op::Neg, unary(Op::Neg, x)).get() == x.get());
    }
    // Integer operands promoted to float32 by a float constant: x * 1.0 is the cast of x.
    NodePtr xi = input(int32, {8}, "xi");
    NodePtr m = binary(Op::Mul, xi, cf(1.0));
    CHECK(m->op() == Op::Cast);
    CHECK(m->dtype() == float32);
    CHECK(m->operand(0) == xi.get());
}

TEST_CASE("folding: integer identities fold, x*0 and x-x included") {
    for (DType t : {int8, uint8, int32, int64}) {
        CAPTURE(name(t));
        NodePtr x = input(t, {2, 3}, "x");
        NodePtr z = binary(Op::Mul, x, ci(0, t));
        const Node* c = folded_constant(z);
        REQUIRE(c != nullptr);
        CHECK(c->value().i == 0);
        CHECK(z->dtype() == t);
        CHECK(z->shape() == Shape{2, 3});
        CHECK(folded_constant(binary(Op::Mul, ci(0, t), x)) != nullptr);

        NodePtr d = binary(Op::Sub, x, x);
        REQUIRE(folded_constant(d) != nullptr);
        CHECK(folded_constant(d)->value().i == 0);
        CHECK(d->shape() == Shape{2, 3});
        CHECK(d->dtype() == t);

        CHECK(binary(Op::Add, x, ci(0, t)).get() == x.get());
        CHECK(binary(Op::Add, ci(0, t), x).get() == x.get());
        CHECK(binary(Op::Sub, x, ci(0, t)).get() == x.get());
        CHECK(binary(Op::Mul, x, ci(1, t)).get() == x.get());
        CHECK(binary(Op::Div, x, ci(1, t)).get() == x.get());
        // x / x is not 1 for x = 0 (the contract defines integer division by zero): no fold.
        CHECK(binary(Op::Div, x, x)->op() == Op::Div);
        // Bitwise: x ^ x = 0, x & x = x | x = x.
        CHECK(folded_constant(binary(Op::BitXor, x, x)) != nullptr);
        CHECK(binary(Op::BitAnd, x, x).get() == x.get());
        CHECK(binary(Op::BitOr, x, x).get() == x.get());
    }
}

TEST_CASE("folding: unary simplifications") {
    NodePtr x = input(float32, {4}, "x");
    CHECK(unary(Op::Exp, unary(Op::Neg, unary(Op::Neg, x)))->operand(0) == x.get());
    NodePtr b = input(bool_, {4}, "b");
    CHECK(unary(Op::LogicalNot, unary(Op::LogicalNot, b)).get() == b.get());
    // not(not(x)) of a float is a bool, not x: no fold.
    NodePtr nn = unary(Op::LogicalNot, unary(Op::LogicalNot, x));
    CHECK(nn->dtype() == bool_);
    CHECK(nn->op() == Op::LogicalNot);
    // Rounding an integer is the integer.
    NodePtr xi = input(int64, {4}, "xi");
    for (Op op : {Op::Floor, Op::Ceil, Op::Round, Op::Trunc}) CHECK(unary(op, xi).get() == xi.get());
    // A cast to the same dtype is no node.
    CHECK(cast(x, float32).get() == x.get());
}

TEST_CASE("folding: special float values fold with IEEE results") {
    const double inf = std::numeric_limits<double>::infinity();
    NodePtr nan = binary(Op::Mul, cf(inf), cf(0.0));
    REQUIRE(nan->op() == Op::Constant);
    CHECK(std::isnan(nan->value().f));
    NodePtr negzero = binary(Op::Mul, cf(-1.0), cf(0.0));
    REQUIRE(negzero->op() == Op::Constant);
    CHECK(negzero->value().f == 0.0);
    CHECK(std::signbit(negzero->value().f));
    NodePtr pz = binary(Op::Add, cf(-0.0), cf(0.0));
    REQUIRE(pz->op() == Op::Constant);
    CHECK(!std::signbit(pz->value().f));
}
