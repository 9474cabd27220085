// The CPU reference evaluator: elementwise loops against eval_elementwise, views, reductions and their
// order, Oracle mode, inputs and overrides, and a large evaluation.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "loom/ir/build.hpp"
#include "loom/ir/elementwise.hpp"
#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/error.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;
using namespace loom::ir;
namespace ew = loom::ir::ew;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// A host tensor of `dtype` holding `values` (each rounded to the dtype like a cast).
Tensor host_of(const Shape& shape, DType dtype, const std::vector<double>& values) {
    Tensor t = Tensor::host(shape, dtype);
    REQUIRE(static_cast<std::int64_t>(values.size()) == t.numel());
    ew::visit_dtype(dtype, [&]<DType D>() {
        auto* p = static_cast<ew::storage_t<D>*>(t.data());
        for (std::size_t i = 0; i < values.size(); ++i)
            p[i] = ew::store<D>(ew::cast<D, DType::Float64>(values[i]));
    });
    return t;
}

NodePtr in(const Tensor& t, const char* label = "x") {
    return input(t.dtype(), t.shape(), label, t.impl());
}

std::vector<double> values(const Tensor& t) {
    std::vector<double> v;
    for (std::int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_double(i));
    return v;
}

bool same_bits(double a, double b) {
    return std::signbit(a) == std::signbit(b) && (a == b || (a != a && b != b));
}

}  // namespace

TEST_CASE("reference elementwise loops agree bit for bit with eval_elementwise") {
    const Tensor xs = testing::random_tensor({1000}, float32, 7, testing::Random::normal(0.0, 3.0));
    const Tensor ys = testing::random_tensor({1000}, float32, 8, testing::Random::uniform(-2.0, 2.0));
    const Op unary_ops[] = {Op::Exp,      Op::Log,   Op::Sin,     Op::Tanh,  Op::Erf,  Op::GeluErf,
                            Op::GeluTanh, Op::Silu,  Op::Sigmoid, Op::Round, Op::Sqrt, Op::Rsqrt,
                            Op::Expm1,    Op::Atanh, Op::Neg,     Op::Relu};
    for (DType dt : {float32, float16, bfloat16, float64}) {
        auto x = cast(in(xs), dt);
        auto y = cast(in(ys, "y"), dt);
        for (Op op : unary_ops) {
            auto r = unary(op, x);
            const Tensor xv = reference::evaluate(x);
            const Tensor got = reference::evaluate(r);
            CHECK(got.dtype() == dt);
            for (std::int64_t i = 0; i < 1000; ++i) {
                ScalarValue a = ScalarValue::of_float(xv.get_double(i));
                const double want = eval_elementwise(op, dt, dt, &a).f;
                if (!same_bits(got.get_double(i), want)) {
                    FAIL_CHECK(op_name(op) << " " << name(dt) << " at " << i);
                    break;
                }
            }
        }
        for (Op op : {Op::Add, Op::Mul, Op::Div, Op::Mod, Op::Pow, Op::Atan2, Op::Minimum, Op::FloorDiv}) {
            auto r = binary(op, x, y);
            const auto vals = reference::evaluate({x, y, r});
            for (std::int64_t i = 0; i < 1000; ++i) {
                ScalarValue a[3] = {ScalarValue::of_float(vals[0].get_double(i)),
                                    ScalarValue::of_float(vals[1].get_double(i)),
                                    {}};
                if (!same_bits(vals[2].get_double(i), eval_elementwise(op, dt, dt, a).f)) {
                    FAIL_CHECK(op_name(op) << " " << name(dt) << " at " << i);
                    break;
                }
            }
        }
    }
}

TEST_CASE("integer ops, casts and where in whole-array loops") {
    const Tensor a = host_of({6}, int32, {7, -7, INT32_MIN, 5, 0, 100});
    const Tensor b = host_of({6}, int32, {-2, 2, -1, 0, 0, 3});
    auto x = in(a), y = in(b, "y");
    auto r = reference::evaluate({binary(Op::Div, x, y), binary(Op::Rem, x, y), binary(Op::FloorDiv, x, y),
                                  binary(Op::Mod, x, y), cast(x, int8), cast(x, float16)});
    CHECK(values(r[0]) == std::vector<double>{-3, -3, INT32_MIN, 0, 0, 33});
    CHECK(values(r[1]) == std::vector<double>{1, -1, 0, 5, 0, 1});
    CHECK(values(r[2]) == std::vector<double>{-4, -4, INT32_MIN, 0, 0, 33});
    CHECK(values(r[3]) == std::vector<double>{-1, 1, 0, 5, 0, 1});
    CHECK(values(r[4]) == std::vector<double>{7, -7, 0, 5, 0, 100});
    CHECK(r[5].get_double(2) == -kInf);
    const Tensor f = host_of({4}, float32, {kNaN, 1e10, -3.7, 2.5});
    auto c = reference::evaluate({cast(in(f), int32), cast(in(f), uint8), cast(in(f), bool_)});
    CHECK(values(c[0]) == std::vector<double>{0, INT32_MAX, -3, 2});
    CHECK(values(c[1]) == std::vector<double>{0, 255, 0, 2});
    CHECK(values(c[2]) == std::vector<double>{1, 1, 1, 1});
    auto w = ternary(Op::Where, binary(Op::Gt, in(f), constant(ScalarValue::of_float(0.0), float32)), in(f),
                     constant(ScalarValue::of_float(-1.0), float32));
    CHECK(values(reference::evaluate(w))[0] == -1.0);
}

TEST_CASE("views: broadcast, permute, reshape of a permuted view, slices with negative steps") {
    const Tensor a = host_of({3, 1}, float32, {1, 2, 3});
    const Tensor b = host_of({4}, float32, {10, 20, 30, 40});
    auto s = binary(Op::Add, in(a), in(b, "b"));
    CHECK(s->shape() == Shape{3, 4});
    CHECK(values(reference::evaluate(s)) ==
          std::vector<double>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});

    const Tensor m = host_of({2, 3}, float32, {0, 1, 2, 3, 4, 5});
    auto t = transpose(in(m));
    CHECK(values(reference::evaluate(t)) == std::vector<double>{0, 3, 1, 4, 2, 5});
    auto flat = reshape(t, {6});
    CHECK(values(reference::evaluate(flat)) == std::vector<double>{0, 3, 1, 4, 2, 5});
    auto p3 = permute(reshape(in(m), {1, 2, 3}), {2, 0, 1});
    CHECK(p3->shape() == Shape{3, 1, 2});
    CHECK(values(reference::evaluate(p3)) == std::vector<double>{0, 3, 1, 4, 2, 5});

    auto sl = slice(in(m), {SliceSpec{}, SliceSpec{SliceSpec::kNone, SliceSpec::kNone, -2}});
    CHECK(sl->shape() == Shape{2, 2});
    CHECK(values(reference::evaluate(sl)) == std::vector<double>{2, 0, 5, 3});
    auto sl2 = slice(in(m), {SliceSpec{1, 2, 1}, SliceSpec{1, SliceSpec::kNone, 1}});
    CHECK(values(reference::evaluate(sl2)) == std::vector<double>{4, 5});
    // a root that is a view of an input is a copy, never the input's memory
    const Tensor r = reference::evaluate(in(m));
    CHECK(r.data() != m.data());
}

TEST_CASE("reductions: identities, dtypes, NaN, ties, logical index of transposed inputs") {
    const Tensor e = Tensor::host({0, 3}, float32);
    auto ee = in(e);
    auto er = reference::evaluate({reduce(Op::Sum, ee, {0}, false), reduce(Op::Prod, ee, {0}, false),
                                   reduce(Op::Any, ee, {0}, false), reduce(Op::All, ee, {0}, false)});
    CHECK(same_bits(er[0].get_double(0), 0.0));
    CHECK(er[1].get_double(2) == 1.0);
    CHECK(er[2].get_int(0) == 0);
    CHECK(er[3].get_int(1) == 1);

    std::vector<double> v(1000, 127.0);
    const Tensor i8 = host_of({1000}, int8, v);
    auto s8 = reduce(Op::Sum, in(i8), {}, false);
    CHECK(s8->dtype() == int64);
    CHECK(reference::evaluate(s8).get_int(0) == 127000);
    auto m8 = reduce(Op::Mean, in(i8), {}, false);
    CHECK(m8->dtype() == float32);
    CHECK(reference::evaluate(m8).get_double(0) == 127.0);

    const Tensor h = host_of({4096}, float16, std::vector<double>(4096, 1.0));
    CHECK(reference::evaluate(reduce(Op::Sum, in(h), {}, false)).get_double(0) ==
          4096.0);  // f32 accumulation

    const Tensor x = host_of({2, 4}, float32, {1, 5, 5, 2, -kInf, -kInf, -kInf, -kInf});
    auto am = reference::evaluate({reduce(Op::ArgMax, in(x), {1}, false), reduce(Op::Max, in(x), {1}, true)});
    CHECK(values(am[0]) == std::vector<double>{1, 0});
    CHECK(am[1].shape() == Shape{2, 1});
    CHECK(values(am[1]) == std::vector<double>{5, -kInf});

    const Tensor n = host_of({5}, float32, {1, kNaN, 3, kNaN, -1});
    auto nn = reference::evaluate({reduce(Op::ArgMax, in(n), {}, false), reduce(Op::ArgMin, in(n), {}, false),
                                   reduce(Op::Min, in(n), {}, false), reduce(Op::Sum, in(n), {}, false)});
    CHECK(nn[0].get_int(0) == 1);
    CHECK(nn[1].get_int(0) == 1);
    CHECK(std::isnan(nn[2].get_double(0)));
    CHECK(std::isnan(nn[3].get_double(0)));

    const Tensor z = host_of({2}, float32, {0.0, -0.0});
    CHECK(std::signbit(reference::evaluate(reduce(Op::Min, in(z), {}, false)).get_double(0)));
    CHECK(!std::signbit(reference::evaluate(reduce(Op::Max, in(z), {}, false)).get_double(0)));
    const Tensor nz = host_of({3}, float32, {-0.0, -0.0, -0.0});
    CHECK(same_bits(reference::evaluate(reduce(Op::Sum, in(nz), {}, false)).get_double(0), -0.0));

    // argmin over axis 0 of a transposed [3, 2] -> the index along the transposed (logical) axis
    const Tensor m = host_of({2, 3}, float32, {4, 0, 9, 1, 7, 8});
    auto t = transpose(in(m));  // [[4, 1], [0, 7], [9, 8]]
    CHECK(values(reference::evaluate(reduce(Op::ArgMin, t, {0}, false))) == std::vector<double>{1, 0});
    CHECK(values(reference::evaluate(reduce(Op::Sum, t, {1}, false))) == std::vector<double>{5, 7, 17});
    // argmax over two axes: index in row-major order of the reduced axes
    const Tensor c = host_of({2, 2, 2}, float32, {0, 1, 2, 3, 9, 5, 6, 7});
    CHECK(reference::evaluate(reduce(Op::ArgMax, in(c), {0, 2}, false)).get_int(0) == 2);
    CHECK(reference::evaluate(reduce(Op::ArgMax, in(c), {0, 2}, false)).get_int(1) == 3);
}

namespace {

/// The documented reduction order, written out literally (all 256 lanes, the full butterfly).
float ordered_sum(const std::vector<float>& x) {
    std::vector<float> chunks;
    for (std::size_t c = 0; c < x.size(); c += 8192) {
        float lane[256];
        for (float& l : lane) l = -0.0f;
        for (std::size_t i = 0; i < 8192 && c + i < x.size(); ++i) lane[(i / 4) % 256] += x[c + i];
        for (int s = 128; s >= 1; s /= 2)
            for (int l = 0; l < s; ++l) lane[l] += lane[l + s];
        chunks.push_back(lane[0]);
    }
    while (chunks.size() > 1) {
        std::vector<float> next;
        for (std::size_t k = 0; k < chunks.size(); k += 2)
            next.push_back(k + 1 < chunks.size() ? chunks[k] + chunks[k + 1] : chunks[k]);
        chunks = next;
    }
    return chunks.empty() ? 0.0f : chunks[0];
}

/// The column order (innermost axis kept), written out literally: chunks of 256 in sequence, then pairwise.
float column_ordered_sum(const std::vector<float>& x) {
    std::vector<float> chunks;
    for (std::size_t c = 0; c < x.size(); c += 256) {
        float acc = -0.0f;
        for (std::size_t i = c; i < c + 256 && i < x.size(); ++i) acc += x[i];
        chunks.push_back(acc);
    }
    while (chunks.size() > 1) {
        std::vector<float> next;
        for (std::size_t k = 0; k < chunks.size(); k += 2)
            next.push_back(k + 1 < chunks.size() ? chunks[k] + chunks[k + 1] : chunks[k]);
        chunks = next;
    }
    return chunks.empty() ? 0.0f : chunks[0];
}

}  // namespace

TEST_CASE("reductions follow the documented order exactly") {
    for (std::int64_t L : {1, 5, 1000, 8192, 3 * 8192 + 100, 5 * 8192 + 4093}) {
        Tensor t = testing::random_tensor({L}, float32, static_cast<std::uint64_t>(L),
                                          testing::Random::normal(0.0, 1.0));
        auto* p = static_cast<float*>(t.data());
        for (std::int64_t i = 0; i < L; i += 7) p[i] *= 1e6f;  // wide dynamic range: order changes the bits
        std::vector<float> xs(p, p + L);
        const float want = ordered_sum(xs);
        const Tensor got = reference::evaluate(reduce(Op::Sum, in(t), {}, false));
        CHECK(std::bit_cast<std::uint32_t>(static_cast<float>(got.get_double(0))) ==
              std::bit_cast<std::uint32_t>(want));
        if (L == 5 * 8192 + 4093) {
            float seq = 0.0f;
            for (float v : xs) seq += v;
            CHECK(seq != want);  // a sequential sum gives other bits: the test can tell orders apart
        }
    }
    // the same order per output row of a 2-D reduction; the column order when the innermost axis is kept
    // (a transposed view reduced over axis 0), whatever the memory layout
    Tensor m = testing::random_tensor({3, 9000}, float32, 99, testing::Random::normal(0.0, 1e3));
    auto rows = reference::evaluate(reduce(Op::Sum, in(m), {1}, false));
    auto cols = reference::evaluate(reduce(Op::Sum, transpose(in(m)), {0}, false));
    for (int r = 0; r < 3; ++r) {
        const auto* p = static_cast<const float*>(m.data()) + r * 9000;
        const std::vector<float> row(p, p + 9000);
        CHECK(std::bit_cast<std::uint32_t>(static_cast<float>(rows.get_double(r))) ==
              std::bit_cast<std::uint32_t>(ordered_sum(row)));
        CHECK(std::bit_cast<std::uint32_t>(static_cast<float>(cols.get_double(r))) ==
              std::bit_cast<std::uint32_t>(column_ordered_sum(row)));
        CHECK(column_ordered_sum(row) != ordered_sum(row));  // the two orders are told apart
    }
}

TEST_CASE("Oracle mode computes in float64") {
    const Tensor x = host_of({3}, float32, {1e8, 1, 1});
    auto s = reduce(Op::Sum, in(x), {}, false);
    CHECK(reference::evaluate(s).get_double(0) == 1e8);
    const Tensor o = reference::evaluate(s, {}, reference::Mode::Oracle);
    CHECK(o.dtype() == float64);
    CHECK(o.get_double(0) == 100000002.0);
    auto h = cast(in(x), float16);
    const Tensor ho = reference::evaluate(h, {}, reference::Mode::Oracle);
    CHECK(ho.dtype() == float64);
    CHECK(ho.get_double(0) == 1e8);  // no float16 overflow in the oracle
    CHECK(reference::evaluate(h).get_double(0) == kInf);
    auto i = cast(in(x), int32);
    CHECK(reference::evaluate(i, {}, reference::Mode::Oracle).dtype() == int32);
}

TEST_CASE("inputs: payloads, overrides, memory read at evaluation, errors") {
    Tensor a = host_of({2}, float32, {1, 2});
    auto x = in(a);
    auto y = binary(Op::Mul, x, x);
    static_cast<float*>(a.data())[0] = 3.0f;  // written after the graph was built
    CHECK(values(reference::evaluate(y)) == std::vector<double>{9, 4});
    const Tensor b = host_of({2}, float32, {5, 6});
    CHECK(values(reference::evaluate(y, {{x->input_id(), b}})) == std::vector<double>{25, 36});
    // a strided host tensor is read in place
    const Tensor wide = host_of({4}, float32, {7, 0, 8, 0});
    const Tensor strided = wide.as_strided({2}, {2}, 0);
    CHECK(values(reference::evaluate(y, {{x->input_id(), strided}})) == std::vector<double>{49, 64});
    auto unbound = input(float32, {2}, "unbound");
    CHECK_THROWS_AS(reference::evaluate(unbound), loom::Error);
    CHECK_THROWS_AS(reference::evaluate(y, {{x->input_id(), host_of({3}, float32, {1, 2, 3})}}), loom::Error);
    // multi-output: a shared sub-graph, outputs in order
    auto z = unary(Op::Exp, y);
    auto r = reference::evaluate({z, y, z});
    CHECK(r.size() == 3);
    CHECK(r[1].get_double(1) == 4.0);
    CHECK(r[0].get_double(0) == r[2].get_double(0));
}

TEST_CASE("a 2^27-element graph evaluates quickly") {
    const std::int64_t n = std::int64_t{1} << 27;
    Tensor t = Tensor::host({n}, int8);
    std::memset(t.data(), 1, static_cast<std::size_t>(n));
    auto x = in(t);
    auto y = binary(Op::Add, binary(Op::Mul, x, scalar(ScalarValue::of_int(3), int8)), x);
    auto s = reduce(Op::Sum, y, {}, false);
    const auto start = std::chrono::steady_clock::now();
    const Tensor r = reference::evaluate(s);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(r.get_int(0) == 4 * n);
    MESSAGE("2^27 int8 elements, mul + add + sum: " << seconds << " s");
    CHECK(seconds < 5.0);
}
