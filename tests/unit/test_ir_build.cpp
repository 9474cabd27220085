// Node constructors: type promotion through explicit Cast nodes, NumPy broadcasting through BroadcastTo
// nodes, view attributes, and the user errors (message starts with the API name, ends with file:line).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>

#include "error_message.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"

using namespace loom;
using namespace loom::ir;

namespace {

std::string here(int line) {
    return fmt::format("(test_ir_build.cpp:{})", line);
}

bool starts_with(const std::string& s, std::string_view p) {
    return s.rfind(p, 0) == 0;
}
bool contains(const std::string& s, std::string_view p) {
    return s.find(p) != std::string::npos;
}

NodePtr cf(double v, DType t = float32) {
    return constant(make_scalar_value(v, t, "test", Loc::current()), t);
}

}  // namespace

TEST_CASE("promotion: binary ops insert Cast nodes to the promoted dtype") {
    SUBCASE("int32 array with a float32 constant computes in float32") {
        NodePtr x = input(int32, {4}, "x");
        NodePtr r = binary(Op::Add, x, cf(0.5));
        CHECK(r->dtype() == float32);
        REQUIRE(r->op() == Op::Add);
        CHECK(r->operand(0)->op() == Op::Cast);
        CHECK(r->operand(0)->dtype() == float32);
        CHECK(r->operand(0)->operand(0) == x.get());
        // The constant is rank 0, broadcast to the array's shape; no cast needed.
        CHECK(r->operand(1)->op() == Op::BroadcastTo);
        CHECK(r->operand(1)->operand(0)->op() == Op::Constant);
    }
    SUBCASE("int8 with uint8 gives int32, both cast") {
        NodePtr a = input(int8, {4}, "a"), b = input(uint8, {4}, "b");
        NodePtr r = binary(Op::Mul, a, b);
        CHECK(r->dtype() == int32);
        CHECK(r->operand(0)->op() == Op::Cast);
        CHECK(r->operand(1)->op() == Op::Cast);
        CHECK(r->operand(0)->dtype() == int32);
        CHECK(r->operand(1)->dtype() == int32);
    }
    SUBCASE("float16 with bfloat16 gives float32; float32 with float64 gives float64") {
        NodePtr h = input(float16, {4}, "h"), bf = input(bfloat16, {4}, "bf");
        CHECK(binary(Op::Sub, h, bf)->dtype() == float32);
        NodePtr s = input(float32, {4}, "s"), d = input(float64, {4}, "d");
        NodePtr r = binary(Op::Sub, s, d);
        CHECK(r->dtype() == float64);
        CHECK(r->operand(0)->op() == Op::Cast);
        CHECK(r->operand(1) == d.get());
    }
    SUBCASE("bool with int8 gives int8; the operand already of the result dtype is not cast") {
        NodePtr b = input(bool_, {4}, "b"), i = input(int8, {4}, "i");
        NodePtr r = binary(Op::Add, b, i);
        CHECK(r->dtype() == int8);
        CHECK(r->operand(0)->op() == Op::Cast);
        CHECK(r->operand(1) == i.get());
    }
    SUBCASE("comparisons promote the operands and give bool") {
        NodePtr i = input(int32, {4}, "i"), f = input(float32, {4}, "f");
        NodePtr r = binary(Op::Lt, i, f);
        CHECK(r->dtype() == bool_);
        CHECK(r->operand(0)->dtype() == float32);
        CHECK(r->operand(1)->dtype() == float32);
    }
    SUBCASE("logical ops cast to bool; shifts keep the left operand's dtype") {
        NodePtr i = input(int32, {4}, "i"), f = input(float32, {4}, "f");
        NodePtr l = binary(Op::LogicalAnd, i, f);
        CHECK(l->dtype() == bool_);
        CHECK(l->operand(0)->dtype() == bool_);
        CHECK(l->operand(1)->dtype() == bool_);
        NodePtr a = input(int8, {4}, "a"), b = input(int64, {4}, "b");
        NodePtr s = binary(Op::Shl, a, b);
        CHECK(s->dtype() == int8);
        CHECK(s->operand(0) == a.get());
        CHECK(s->operand(1)->dtype() == int8);
    }
    SUBCASE("float math on integers computes in float32") {
        NodePtr i = input(int32, {4}, "i");
        NodePtr e = unary(Op::Exp, i);
        CHECK(e->dtype() == float32);
        CHECK(e->operand(0)->op() == Op::Cast);
        NodePtr p = binary(Op::Pow, i, i);
        CHECK(p->dtype() == float32);
        NodePtr f = ternary(Op::Fma, i, i, i);
        CHECK(f->dtype() == float32);
        NodePtr h = input(float16, {4}, "h");
        CHECK(unary(Op::Sqrt, h)->dtype() == float16);  // floats keep their dtype
        CHECK(unary(Op::IsNan, h)->dtype() == bool_);
    }
    SUBCASE("where: a bool condition and two operands of the promoted dtype") {
        NodePtr c = input(int32, {4}, "c"), a = input(float16, {4}, "a"), b = input(float32, {4}, "b");
        NodePtr w = ternary(Op::Where, c, a, b);
        CHECK(w->dtype() == float32);
        CHECK(w->operand(0)->dtype() == bool_);
        CHECK(w->operand(1)->dtype() == float32);
        CHECK(w->operand(2) == b.get());
        NodePtr cl = ternary(Op::Clamp, input(int32, {4}, "x"), cf(0.0, int64), cf(6.0, int64));
        CHECK(cl->dtype() == int64);
    }
    SUBCASE("reductions: sum of integers is int64, mean float32, argmax int64, any bool") {
        NodePtr i = input(int8, {4, 5}, "i");
        CHECK(reduce(Op::Sum, i, {1}, false)->dtype() == int64);
        CHECK(reduce(Op::Prod, i, {1}, false)->dtype() == int64);
        CHECK(reduce(Op::Max, i, {1}, false)->dtype() == int8);
        CHECK(reduce(Op::Mean, i, {1}, false)->dtype() == float32);
        CHECK(reduce(Op::ArgMax, i, {1}, false)->dtype() == int64);
        CHECK(reduce(Op::Any, i, {1}, false)->dtype() == bool_);
        NodePtr h = input(bfloat16, {4, 5}, "h");
        CHECK(reduce(Op::Sum, h, {0}, false)->dtype() == bfloat16);
        CHECK(reduce(Op::Mean, h, {0}, false)->dtype() == bfloat16);
    }
}

TEST_CASE("promotion: the lattice") {
    CHECK(promote(int8, uint8) == int32);
    CHECK(promote(uint8, int64) == int64);
    CHECK(promote(bool_, float16) == float16);
    CHECK(promote(int64, float16) == float16);
    CHECK(promote(float16, bfloat16) == float32);
    CHECK(promote(bfloat16, float64) == float64);
    for (DType a : kAllDTypes)
        for (DType b : kAllDTypes) CHECK(promote(a, b) == promote(b, a));
    CHECK(promote_weak(int32, ScalarKind::Float) == float32);
    CHECK(promote_weak(float16, ScalarKind::Float) == float16);
    CHECK(promote_weak(bool_, ScalarKind::Int) == int32);
    CHECK(promote_weak(uint8, ScalarKind::Int) == uint8);
}

TEST_CASE("broadcasting: shapes and explicit BroadcastTo nodes") {
    NodePtr a = input(float32, {4, 1}, "a"), b = input(float32, {3}, "b");
    NodePtr r = binary(Op::Add, a, b);
    CHECK(r->shape() == Shape{4, 3});
    CHECK(r->operand(0)->op() == Op::BroadcastTo);
    CHECK(r->operand(1)->op() == Op::BroadcastTo);
    CHECK(r->operand(0)->shape() == Shape{4, 3});
    CHECK(r->operand(1)->shape() == Shape{4, 3});

    NodePtr m = input(float32, {2, 1, 5}, "m"), n = input(float32, {7, 1}, "n");
    CHECK(binary(Op::Mul, m, n)->shape() == Shape{2, 7, 5});
    NodePtr e = input(float32, {0, 3}, "e");
    CHECK(binary(Op::Mul, e, b)->shape() == Shape{0, 3});
    // A broadcast of a broadcast is one view of the source.
    NodePtr bb = broadcast_to(broadcast_to(b, {4, 3}), {2, 4, 3});
    CHECK(bb->operand(0) == b.get());
    CHECK(broadcast_to(b, {3}).get() == b.get());
    // Every elementwise operand has the node's shape.
    NodePtr t = ternary(Op::Where, input(bool_, {5, 1, 1}, "c"), a, b);
    CHECK(t->shape() == Shape{5, 4, 3});
    for (const auto& o : t->operands()) CHECK(o->shape() == t->shape());
    CHECK_NOTHROW(verify({r, t}));
}

TEST_CASE("broadcasting: the error names the API, both operands and the caller's file:line") {
    NodePtr x = input(float32, {4096, 512}, "x"), y = input(float32, {4096}, "y");
    const int line = __LINE__ + 1;
    const std::string msg = loom_test::error_message([&] { binary(Op::Add, x, y); });
    CHECK(msg == "add(): shapes [4096, 512] float32 and [4096] float32 do not broadcast " + here(line));
    CHECK(starts_with(msg, "add(): "));
    CHECK(contains(msg, here(line)));
    // Ternary ops list all three operands.
    NodePtr c = input(bool_, {3}, "c");
    const std::string m3 = loom_test::error_message([&] { ternary(Op::Where, c, x, y); });
    CHECK(starts_with(
        m3, "where(): shapes [3] bool and [4096, 512] float32 and [4096] float32 do not broadcast"));
    const std::string b = loom_test::error_message([&] { broadcast_to(x, {4096, 7}); });
    CHECK(starts_with(b, "broadcast_to(): operand [4096, 512] float32 does not broadcast to [4096, 7]"));
    CHECK(starts_with(loom_test::error_message([&] { broadcast_to(x, {512}); }),
                      "broadcast_to(): "));  // rank cannot shrink
}

TEST_CASE("errors: type errors name the op and the operands") {
    NodePtr f = input(float32, {4}, "f"), g = input(float32, {4}, "g");
    NodePtr b = input(bool_, {4}, "b");
    const int line = __LINE__ + 1;
    const std::string bw = loom_test::error_message([&] { binary(Op::BitAnd, f, g); });
    CHECK(bw == "bitwise_and(): operands [4] float32 and [4] float32: bitwise ops take integers or bool " +
                    here(line));
    CHECK(starts_with(loom_test::error_message([&] { binary(Op::BitXor, f, b); }), "bitwise_xor(): "));
    CHECK(starts_with(loom_test::error_message([&] { binary(Op::Shl, f, g); }), "shift_left(): "));
    CHECK(contains(loom_test::error_message([&] { binary(Op::Add, b, b); }), "arithmetic on bool"));
    CHECK(
        starts_with(loom_test::error_message([&] { unary(Op::Neg, b); }), "neg(): operand [4] bool is bool"));
    CHECK(starts_with(loom_test::error_message([&] { ternary(Op::Clamp, b, b, b); }), "clamp(): "));
    // Bitwise ops on integers and bool are fine.
    CHECK(binary(Op::BitAnd, b, b).get() == b.get());
    CHECK(binary(Op::BitOr, input(int32, {4}, "i"), b)->dtype() == int32);
}

TEST_CASE("reductions: shapes, axes and keepdims") {
    NodePtr x = input(float32, {2, 3, 4}, "x");
    NodePtr s = reduce(Op::Sum, x, {0, 2}, false);
    CHECK(s->shape() == Shape{3});
    CHECK(s->ints() == std::vector<std::int64_t>{0, 2});
    NodePtr k = reduce(Op::Max, x, {-1}, true);
    CHECK(k->shape() == Shape{2, 3, 1});
    CHECK(k->ints() == std::vector<std::int64_t>{2});
    CHECK(k->keepdims());
    NodePtr all = reduce(Op::Sum, x, {}, false);
    CHECK(all->shape() == Shape{});
    CHECK(all->ints() == std::vector<std::int64_t>{0, 1, 2});
    // Axes are stored sorted whatever order the caller gives.
    CHECK(reduce(Op::Sum, x, {2, 0}, false).get() == s.get());
}

TEST_CASE("reductions: bad and repeated axes, empty reductions without an identity") {
    NodePtr x = input(float32, {2, 3}, "x");
    const int line = __LINE__ + 1;
    const std::string bad = loom_test::error_message([&] { reduce(Op::Sum, x, {2}, false); });
    CHECK(bad == "sum(): axis 2 out of range for operand [2, 3] float32 " + here(line));
    CHECK(starts_with(loom_test::error_message([&] { reduce(Op::Max, x, {-3}, false); }),
                      "max(): axis -3 out of range"));
    const std::string rep = loom_test::error_message([&] { reduce(Op::Mean, x, {1, -1}, false); });
    CHECK(starts_with(rep, "mean(): axis -1 repeated in [1, -1] for operand [2, 3] float32"));
    NodePtr e = input(float32, {0, 3}, "e");
    CHECK(reduce(Op::Sum, e, {0}, false)->shape() == Shape{3});  // sum of nothing is 0
    CHECK(starts_with(
        loom_test::error_message([&] { reduce(Op::Max, e, {0}, false); }),
        "max(): reduction of operand [0, 3] float32 over axes [0]: axis 0 has length 0 and max has no "
        "identity (sum, prod, any and all have one)"));
    NodePtr e3 = input(float32, {2, 0, 4}, "e3");
    CHECK(starts_with(
        loom_test::error_message([&] {
            reduce(Op::ArgMin, e3, {-1, 1}, true);
        }),
        "argmin(): reduction of operand [2, 0, 4] float32 over axes [1, 2]: axis 1 has length 0"));
    CHECK(reduce(Op::Max, e, {1}, false)->shape() == Shape{0});  // no output elements: fine
}

TEST_CASE("reshape: sizes, -1 inference and errors") {
    NodePtr x = input(float32, {2, 3, 4}, "x");
    CHECK(reshape(x, {6, 4})->shape() == Shape{6, 4});
    CHECK(reshape(x, {-1, 12})->shape() == Shape{2, 12});
    CHECK(reshape(x, {2, 3, 4}).get() == x.get());
    NodePtr r = reshape(reshape(x, {24}), {4, 6});
    CHECK(r->operand(0) == x.get());  // reshape of a reshape is one view
    CHECK(reshape(reshape(x, {24}), {2, 3, 4}).get() == x.get());
    const int line = __LINE__ + 1;
    const std::string m = loom_test::error_message([&] { reshape(x, {5, 5}); });
    CHECK(m ==
          "reshape(): cannot reshape [2, 3, 4] float32 (24 elements) to [5, 5] (25 elements) " + here(line));
    CHECK(starts_with(loom_test::error_message([&] {
                          reshape(x, {-1, 5});
                      }),
                      "reshape(): cannot reshape [2, 3, 4] float32 to [-1, 5]"));
    CHECK(starts_with(loom_test::error_message([&] {
                          reshape(x, {-1, -1});
                      }),
                      "reshape(): more than one -1"));
    CHECK(starts_with(loom_test::error_message([&] {
                          reshape(x, {-2, -12});
                      }),
                      "reshape(): negative extent"));
}

TEST_CASE("permute and transpose") {
    NodePtr x = input(float32, {2, 3, 4}, "x");
    NodePtr p = permute(x, {2, 0, 1});
    CHECK(p->shape() == Shape{4, 2, 3});
    CHECK(p->ints() == std::vector<std::int64_t>{2, 0, 1});
    // Composition: permute(permute(x, a), b)[k] = x[a[b[k]]]; the inverse gives x back.
    CHECK(permute(p, {1, 2, 0}).get() == x.get());
    NodePtr q = permute(p, {0, 2, 1});
    CHECK(q->operand(0) == x.get());
    CHECK(q->ints() == std::vector<std::int64_t>{2, 1, 0});
    CHECK(q->shape() == Shape{4, 3, 2});
    CHECK(transpose(x)->shape() == Shape{2, 4, 3});
    CHECK(starts_with(loom_test::error_message([&] {
                          permute(x, {0, 0, 1});
                      }),
                      "permute(): [0, 0, 1] is not a permutation"));
    CHECK(starts_with(loom_test::error_message([&] {
                          permute(x, {0, 1});
                      }),
                      "permute(): permutation [0, 1] has 2 entries"));
    CHECK(starts_with(loom_test::error_message([&] { transpose(input(float32, {3}, "v")); }),
                      "transpose(): operand [3] float32"));
}

TEST_CASE("slice: Python semantics, out-of-range indices and step 0") {
    constexpr auto N = SliceSpec::kNone;
    NodePtr x = input(float32, {10, 6}, "x");
    NodePtr a = slice(x, {{2, 8, 3}});  // rows 2, 5; columns whole
    CHECK(a->shape() == Shape{2, 6});
    CHECK(a->ints() == std::vector<std::int64_t>{2, 3, 0, 1});
    NodePtr r = slice(x, {{N, N, -1}, {-2, N, 1}});  // reversed rows, last two columns
    CHECK(r->shape() == Shape{10, 2});
    CHECK(r->ints() == std::vector<std::int64_t>{9, -1, 4, 1});
    CHECK(slice(x, {{0, 10, 3}})->shape() == Shape{4, 6});   // 0, 3, 6, 9
    CHECK(slice(x, {{8, 1, -3}})->shape() == Shape{3, 6});   // 8, 5, 2
    CHECK(slice(x, {{10, N, -4}})->shape() == Shape{3, 6});  // start n clamps to 9: 9, 5, 1
    CHECK(slice(x, {{5, 5, 1}})->shape() == Shape{0, 6});
    CHECK(slice(x, {{-10, 10, 1}}).get() == x.get());  // the whole array: no node
    const int line = __LINE__ + 1;
    const std::string m = loom_test::error_message([&] { slice(x, {{11, N, 1}}); });
    CHECK(m == "slice(): start 11 out of range on axis 0 of [10, 6] float32 " + here(line));
    CHECK(starts_with(loom_test::error_message([&] {
                          slice(x, {{0, 1, 1}, {N, -7, 1}});
                      }),
                      "slice(): stop -7 out of range on axis 1"));
    CHECK(starts_with(loom_test::error_message([&] {
                          slice(x, {{0, 4, 0}});
                      }),
                      "slice(): step 0 on axis 0 of [10, 6] float32"));
    CHECK(starts_with(loom_test::error_message([&] {
                          slice(x, {{}, {}, {}});
                      }),
                      "slice(): 3 slice entries for operand [10, 6] float32"));
}

TEST_CASE("make_scalar_value: values of the dtype, errors out of an integer dtype's range") {
    const Loc loc = Loc::current();
    const std::string where = here(static_cast<int>(loc.line()));
    CHECK(make_scalar_value(std::int64_t{127}, int8, "full", loc).i == 127);
    CHECK(make_scalar_value(std::int64_t{-128}, int8, "full", loc).i == -128);
    CHECK(loom_test::error_message([&] { make_scalar_value(std::int64_t{128}, int8, "full", loc); }) ==
          "full(): scalar 128 is out of range for int8 [-128, 127] " + where);
    CHECK(
        starts_with(loom_test::error_message([&] { make_scalar_value(std::int64_t{-1}, uint8, "mul", loc); }),
                    "mul(): scalar -1 is out of range for uint8 [0, 255]"));
    CHECK(starts_with(
        loom_test::error_message([&] { make_scalar_value(std::int64_t{1} << 31, int32, "add", loc); }),
        "add(): "));
    const std::int64_t int32_min = -(std::int64_t{1} << 31);
    CHECK(make_scalar_value(int32_min, int32, "add", loc).i == int32_min);
    CHECK(make_scalar_value(std::numeric_limits<std::int64_t>::min(), int64, "add", loc).i ==
          std::numeric_limits<std::int64_t>::min());
    // Doubles for integer dtypes must be whole and in range.
    CHECK(make_scalar_value(3.0, int32, "add", loc).i == 3);
    CHECK(starts_with(loom_test::error_message([&] { make_scalar_value(1.5, int32, "add", loc); }),
                      "add(): scalar 1.5 is not a value of the integer dtype int32"));
    CHECK(starts_with(loom_test::error_message([&] { make_scalar_value(std::nan(""), int64, "add", loc); }),
                      "add(): "));
    CHECK(starts_with(loom_test::error_message([&] { make_scalar_value(1e19, int64, "add", loc); }),
                      "add(): "));
    CHECK(starts_with(loom_test::error_message([&] { make_scalar_value(300.0, uint8, "add", loc); }),
                      "add(): scalar 300 is out of range"));
    // Floats round to nearest even in the dtype; bool is truthiness.
    CHECK(make_scalar_value(0.1, float32, "add", loc).f == static_cast<double>(0.1f));
    CHECK(make_scalar_value(0.1, float64, "add", loc).f == 0.1);
    CHECK(make_scalar_value(65520.0, float16, "add", loc).f == std::numeric_limits<double>::infinity());
    CHECK(make_scalar_value(65504.0, float16, "add", loc).f == 65504.0);
    CHECK(make_scalar_value(1.0 + 1.0 / 256, bfloat16, "add", loc).f == 1.0);  // tie to even
    CHECK(make_scalar_value(std::int64_t{16777217}, float32, "add", loc).f == 16777216.0);
    CHECK(make_scalar_value(0.25, bool_, "add", loc).i == 1);
    CHECK(make_scalar_value(std::int64_t{0}, bool_, "add", loc).i == 0);
}

TEST_CASE("input: shape checks") {
    CHECK(starts_with(loom_test::error_message([&] {
                          input(float32, {2, -1}, "x");
                      }),
                      "input(): negative extent in shape [2, -1]"));
    CHECK(
        starts_with(loom_test::error_message([&] { input(float32, Shape(9, 1), "x"); }), "input(): rank 9"));
    CHECK(input(float32, Shape(8, 1), "x")->rank() == 8);
}
