// GPU tests of pointwise numerics per dtype against the CPU reference: every dtype through arithmetic,
// comparisons, casts, where and logic; integer division edge cases; shifts; NaN-propagating min/max;
// NaN, Inf and -0 as inputs, kernel parameters and baked constants; the float functions; documented casts.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "test_pointwise_util.hpp"

using namespace pwtest;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Every elementwise op family that accepts dtype `t`, on a, b, c of that dtype (one kernel).
std::vector<Array> ops_for(DType t, const Tensor& a, const Tensor& b, const Tensor& c) {
    std::vector<Array> v{a == b,
                         a != b,
                         a<b, a <= b, a>
                             b,
                         a >= b,
                         where(a > b, a, b),
                         where(a, b, c),
                         logical_and(a, b),
                         logical_or(a, c),
                         logical_xor(a, b),
                         logical_not(a),
                         isnan(a),
                         isinf(a),
                         isfinite(a)};
    for (DType to : kAllDTypes) v.push_back(Array(a).astype(to));
    if (t == DType::Bool) {
        v.insert(v.end(), {a & b, a | b, a ^ b, where(a, 1, 2), where(b, a, false)});
        return v;
    }
    v.insert(v.end(),
             {a + b, a - b, a * b, minimum(a, b), maximum(a, b), clamp(a, b, c), -a, abs(a), sign(a), relu(a),
              floor(a), round(a), ceil(a), trunc(a), a * 3, a + constant(std::int64_t{2}), maximum(a, 1)});
    if (is_integer(t)) {
        v.insert(v.end(), {a / b, a % b, floor_div(a, b), mod(a, b), a & b, a | b, a ^ b, a << 2, a >> 1,
                           exp(a), Array(a).astype(float32) / b});
    } else {
        v.insert(v.end(), {a / b, floor_div(a, b), mod(a, b), rem(a, b), sqrt(a), exp(a), log(a), tanh(a),
                           fma(a, b, c), atan2(a, b), pow(a, b), a * 0.5, a / constant(3.0), sigmoid(a)});
    }
    return v;
}

}  // namespace

TEST_CASE("pointwise dtypes: every dtype through arithmetic, comparisons, casts, where and logic") {
    const std::int64_t n = 4097;
    for (DType t : kAllDTypes) {
        CAPTURE(name(t));
        const auto s = static_cast<std::uint64_t>(t) * 10;
        Tensor a = with_specials(n, t, s + 1, 0), b = with_specials(n, t, s + 2, 3),
               c = with_specials(n, t, s + 3, 5);
        run_checked(ops_for(t, a, b, c));
        if (t == DType::Bool) CHECK_THROWS_AS(a + b, Error);  // arithmetic on bool is a user error
        // The same graph on row- and column-broadcast operands of another shape.
        Tensor m = with_specials(33 * 31, t, s + 4, 1).as_strided({33, 31}, {31, 1}, 0);
        Tensor row = with_specials(31, t, s + 5, 2),
               col = with_specials(33, t, s + 6, 4).as_strided({33, 1}, {1, 1}, 0);
        const Array mixed = t == DType::Bool ? Array(m) & col : minimum(Array(m), col);
        run_checked({where(Array(m) > row, col, m), mixed, Array(row) == col});
    }
}

TEST_CASE("pointwise dtypes: integer division and remainder by zero, by -1 and of the minimum") {
    struct Case {
        DType t;
        std::vector<double> dividends, divisors;
    };
    const std::vector<Case> cases{
        {int8, {-128, -127, -7, -1, 0, 1, 7, 127, 100, -100}, {0, -1, 1, -3, 3, -128, 127, 2, -2}},
        {uint8, {0, 1, 7, 128, 200, 255}, {0, 1, 2, 3, 128, 255}},
        {int32,
         {-2147483648.0, -2147483647.0, -7, -1, 0, 1, 7, 2147483647.0},
         {0, -1, 1, -3, 3, -2147483648.0, 2147483647.0}},
    };
    auto check_case = [](DType t, const Tensor& a, const Tensor& b) {
        std::vector<Array> v{a / b,
                             a % b,
                             floor_div(a, b),
                             mod(a, b),
                             a / 0,
                             a % 0,
                             floor_div(a, 0),
                             mod(a, 0),
                             a / constant(std::int64_t{0}),
                             rem(a, constant(std::int64_t{0})),
                             (a / b) * b + a % b == a,
                             floor_div(a, b) * b + mod(a, b) == a};
        if (is_signed_integer(t))
            v.insert(v.end(), {a / -1, a % -1, floor_div(a, -1), mod(a, -1),
                               floor_div(a, constant(std::int64_t{-1}))});
        const auto r = run_checked(v);
        // (a / b) * b + a % b == a and the same for floor_div and mod hold everywhere, zero divisors
        // included.
        for (std::size_t k : {std::size_t{10}, std::size_t{11}}) {
            const Tensor h = r[k].to_host();
            std::int64_t bad = 0;
            for (std::int64_t i = 0; i < h.numel(); ++i) bad += h.get_int(i) != 1;
            CHECK_MESSAGE(bad == 0, "identity " << k << " fails at " << bad << " elements");
        }
    };
    for (const Case& c : cases) {
        CAPTURE(name(c.t));
        std::vector<double> a, b;
        for (double y : c.divisors)
            for (double x : c.dividends) {
                a.push_back(x);
                b.push_back(y);
            }
        check_case(c.t, host_from(a, c.t).to(dev()), host_from(b, c.t).to(dev()));
        // Random operands, zero divisors included.
        check_case(
            c.t, rand({4097}, c.t, 1000 + static_cast<std::uint64_t>(c.t)),
            rand({4097}, c.t, 2000 + static_cast<std::uint64_t>(c.t), testing::Random::uniform(-3, 3)));
    }
    // int64: the extremes are not doubles, so they are written raw.
    const std::vector<std::int64_t> x64{INT64_MIN, INT64_MIN + 1, -7, -1, 0, 1, 7, INT64_MAX};
    const std::vector<std::int64_t> y64{0, -1, 1, -3, 3, INT64_MIN, INT64_MAX};
    std::vector<std::int64_t> a, b;
    for (auto y : y64)
        for (auto x : x64) {
            a.push_back(x);
            b.push_back(y);
        }
    check_case(int64, host_raw(a, int64).to(dev()), host_raw(b, int64).to(dev()));
    // Known values (docs/semantics.md, "Integer ops"): INT_MIN / -1 wraps, x / 0 = 0, x % 0 = x.
    const Tensor q =
        run_one(Array(host_raw(a, int64).to(dev())) / Array(host_raw(b, int64).to(dev()))).to_host();
    const Tensor m =
        run_one(Array(host_raw(a, int64).to(dev())) % Array(host_raw(b, int64).to(dev()))).to_host();
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto k = static_cast<std::int64_t>(i);
        if (b[i] == 0) {
            CHECK(q.get_int(k) == 0);
            CHECK(m.get_int(k) == a[i]);
        } else if (b[i] == -1 && a[i] == INT64_MIN) {
            CHECK(q.get_int(k) == INT64_MIN);
            CHECK(m.get_int(k) == 0);
        } else {
            CHECK(q.get_int(k) == a[i] / b[i]);
            CHECK(m.get_int(k) == a[i] % b[i]);
        }
    }
}

TEST_CASE("pointwise dtypes: float division by signed zeros") {
    for (DType t : {float16, bfloat16, float32, float64}) {
        CAPTURE(name(t));
        Tensor a = host_from({1, 1, 0, -1, kInf, kNaN, -0.0}, t).to(dev());
        Tensor b = host_from({0, -0.0, 0, 0, 0, 0, 5}, t).to(dev());
        const Tensor q = run_one(Array(a) / b).to_host();
        CHECK(q.get_double(0) == kInf);
        CHECK(q.get_double(1) == -kInf);
        CHECK(std::isnan(q.get_double(2)));
        CHECK(q.get_double(3) == -kInf);
        CHECK(q.get_double(4) == kInf);
        CHECK(std::isnan(q.get_double(5)));
        CHECK(std::signbit(q.get_double(6)));
        run_checked({rem(a, b), mod(a, b), floor_div(a, b)});
    }
}

TEST_CASE("pointwise dtypes: shifts by amounts in and out of range, of other dtypes") {
    for (DType t : {int8, uint8, int32, int64}) {
        CAPTURE(name(t));
        Tensor a = with_specials(4097, t, 3000 + static_cast<std::uint64_t>(t));
        Tensor amt = rand({4097}, int32, 3100, testing::Random::uniform(-3, 70));
        Tensor huge = rand({4097}, int64, 3200, testing::Random::uniform(-1e12, 1e12));
        Tensor small = rand({4097}, t, 3300, testing::Random::uniform(-2, 9));
        Tensor s256 = host_from(std::vector<double>(4097, 256.0), int32).to(dev());
        run_checked({a << amt, a >> amt, a << huge, a >> huge, a << small, a >> small, a << s256, a >> s256,
                     a << 3, a >> 7, shift_left(a, constant(std::int64_t{1})), shift_right(a, 0)});
        // int8 x << int32 256 is 0: the amount is clamped before it is narrowed (docs/semantics.md).
        const Tensor z = run_one(Array(a) << s256).to_host();
        for (std::int64_t i = 0; i < 4097; i += 97) CHECK(z.get_int(i) == 0);
    }
}

TEST_CASE("pointwise dtypes: minimum, maximum, clamp and relu propagate NaN and order signed zeros") {
    const std::vector<double> vals{kNaN, -0.0, 0.0, 1.0, -1.0, kInf, -kInf, 2.5};
    std::vector<double> av, bv, cv;
    for (double x : vals)
        for (double y : vals)
            for (double z : {-1.0, 0.0, kNaN, 3.0}) {
                av.push_back(x);
                bv.push_back(y);
                cv.push_back(z);
            }
    for (DType t : {float16, bfloat16, float32, float64}) {
        CAPTURE(name(t));
        Tensor a = host_from(av, t).to(dev()), b = host_from(bv, t).to(dev()), c = host_from(cv, t).to(dev());
        const auto r =
            run_checked({minimum(a, b), maximum(a, b), clamp(a, b, c), relu(a), minimum(a, constant(kNaN)),
                         maximum(a, constant(-0.0)), maximum(a, constant(0.0)), minimum(a, 0.0),
                         clamp(a, -1.0, 1.0), clamp(a, 1.0, -1.0), maximum(b, a), minimum(b, a)});
        const Tensor mn = r[0].to_host(), mx = r[1].to_host(), rl = r[3].to_host(), hi = r[9].to_host();
        for (std::int64_t i = 0; i < mn.numel(); ++i) {
            const double x = av[static_cast<std::size_t>(i)], y = bv[static_cast<std::size_t>(i)];
            if (std::isnan(x) || std::isnan(y)) {
                CHECK(std::isnan(mn.get_double(i)));
                CHECK(std::isnan(mx.get_double(i)));
            } else if (x == 0 && y == 0) {
                CHECK(std::signbit(mn.get_double(i)) == (std::signbit(x) || std::signbit(y)));
                CHECK(std::signbit(mx.get_double(i)) == (std::signbit(x) && std::signbit(y)));
            }
            if (x == 0) CHECK(!std::signbit(rl.get_double(i)));   // relu(-0) = +0
            if (!std::isnan(x)) CHECK(hi.get_double(i) == -1.0);  // lo > hi gives hi
        }
    }
}

TEST_CASE("pointwise dtypes: NaN, Inf and -0 as inputs, kernel parameters and baked constants") {
    for (DType t : {float16, bfloat16, float32, float64}) {
        CAPTURE(name(t));
        Tensor x = with_specials(4097, t, 4000 + static_cast<std::uint64_t>(t));
        run_checked({x + constant(kNaN),
                     x * constant(kInf),
                     x * constant(-0.0),
                     x + -0.0,
                     x + 0.0,
                     where(isnan(x), constant(-0.0), x),
                     x / constant(-0.0),
                     sign(x),
                     x == constant(kInf),
                     x != constant(kNaN),
                     x < kNaN,
                     x * kNaN,
                     x - kInf,
                     maximum(x, constant(-kInf)),
                     round(x),
                     floor(x),
                     ceil(x),
                     trunc(x),
                     Array(x).astype(int32),
                     Array(x).astype(uint8),
                     Array(x).astype(int64),
                     Array(x).astype(bool_),
                     abs(x),
                     -x,
                     logical_not(x)});
        // Known values on a small input.
        Tensor s = host_from({kNaN, -0.0, kInf, -kInf, 0.5, 1.5, 2.5, -0.5}, t).to(dev());
        const auto r = run_checked({s * constant(-0.0), sign(s), round(s), Array(s).astype(int32), s + -0.0});
        const Tensor mz = r[0].to_host(), sg = r[1].to_host(), rd = r[2].to_host(), ci = r[3].to_host(),
                     pz = r[4].to_host();
        CHECK(std::isnan(mz.get_double(0)));
        CHECK((mz.get_double(1) == 0.0 && !std::signbit(mz.get_double(1))));  // -0 * -0 = +0
        CHECK(std::isnan(mz.get_double(2)));                                  // Inf * -0 = NaN
        CHECK(std::signbit(mz.get_double(4)));                                // 0.5 * -0 = -0
        CHECK(std::isnan(sg.get_double(0)));
        CHECK(std::signbit(sg.get_double(1)));  // sign(-0) = -0
        CHECK(sg.get_double(3) == -1.0);
        CHECK(rd.get_double(4) == 0.0);  // half to even
        CHECK(rd.get_double(5) == 2.0);
        CHECK(rd.get_double(6) == 2.0);
        CHECK(std::signbit(rd.get_double(7)));  // round(-0.5) = -0
        CHECK(ci.get_int(0) == 0);              // NaN -> 0
        CHECK(ci.get_int(2) == std::numeric_limits<std::int32_t>::max());
        CHECK(ci.get_int(3) == std::numeric_limits<std::int32_t>::min());
        CHECK(std::signbit(pz.get_double(1)));  // -0 + -0 = -0
    }
    // Integer inputs with constants and parameters at their extremes.
    Tensor k = with_specials(4097, int32, 4100);
    run_checked({k + constant(std::int64_t{2147483647}), k * -1, k - std::int64_t{-2147483647 - 1},
                 Array(k).astype(float16), Array(k).astype(bfloat16),
                 where(k > 0, k, constant(std::int64_t{-7}))});
}

TEST_CASE("pointwise dtypes: the float functions within the contract's tolerances") {
    for (DType t : {float16, bfloat16, float32, float64}) {
        CAPTURE(name(t));
        Tensor x = rand({4099}, t, 5000 + static_cast<std::uint64_t>(t), testing::Random::uniform(-3, 3));
        Tensor y = rand({4099}, t, 5100 + static_cast<std::uint64_t>(t), testing::Random::uniform(-3, 3));
        // A few special values at the front.
        Tensor sp = host_from({kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 0.5}, t);
        Tensor xh = x.to_host();
        std::memcpy(xh.data(), sp.data(), sp.nbytes());
        x = xh.to(dev());
        const Array ax = abs(x);
        run_checked({exp(x),        exp2(x),         expm1(x),       log(x),      log(ax),    log2(ax),
                     log1p(x),      sqrt(ax),        rsqrt(ax),      sin(x),      cos(x),     tan(x),
                     asin(x / 3.0), acos(x / 3.0),   atan(x),        sinh(x),     cosh(x),    tanh(x),
                     asinh(x),      acosh(ax + 1.0), atanh(x / 3.0), erf(x),      sigmoid(x), gelu(x),
                     gelu_tanh(x),  silu(x),         pow(ax, y),     pow(x, 2.0), atan2(x, y)});
        // Functions of functions and arithmetic around them.
        run_checked({exp(x) * y + 1.0, tanh(x) - sin(y), sqrt(ax) * cos(y)});
    }
    // Integer and bool operands of a function compute in float32.
    Tensor k = rand({4097}, int32, 5200, testing::Random::uniform(-20, 20));
    Tensor bl = rand({4097}, bool_, 5201);
    run_checked({exp(k), sin(k), sigmoid(bl), log(k)});
}

TEST_CASE("pointwise dtypes: the documented cast examples") {
    auto one = [](const Tensor& src, DType to) { return run_one(Array(src.to(dev())).astype(to)).to_host(); };
    CHECK(one(host_from({300}, int32), uint8).get_int(0) == 44);
    CHECK(one(host_from({-1}, int64), uint8).get_int(0) == 255);
    const Tensor u8 = one(host_from({-0.9, 300.7, kNaN, kInf, -kInf}, float32), uint8);
    CHECK(u8.get_int(0) == 0);
    CHECK(u8.get_int(1) == 255);
    CHECK(u8.get_int(2) == 0);
    CHECK(u8.get_int(3) == 255);
    CHECK(u8.get_int(4) == 0);
    const Tensor i32 = one(host_from({1e10, -1e10, kNaN, -2.9}, float32), int32);
    CHECK(i32.get_int(0) == 2147483647);
    CHECK(i32.get_int(1) == -2147483647 - 1);
    CHECK(i32.get_int(2) == 0);
    CHECK(i32.get_int(3) == -2);
    const Tensor i64 = one(host_from({1e30, -1e30, kNaN}, float64), int64);
    CHECK(i64.get_int(0) == INT64_MAX);
    CHECK(i64.get_int(1) == INT64_MIN);
    CHECK(i64.get_int(2) == 0);
    const Tensor h = one(host_from({65520, 65519, -65520, 1e-8}, float32), float16);
    CHECK(h.get_double(0) == kInf);
    CHECK(h.get_double(1) == 65504.0);
    CHECK(h.get_double(2) == -kInf);
    CHECK(h.get_double(3) == 0.0);  // below half the smallest float16 subnormal (2^-25)
    const std::int64_t big = (std::int64_t{1} << 60) + (std::int64_t{1} << 52) + 1;
    const Tensor bf = one(host_raw<std::int64_t>({big}, int64), bfloat16);
    CHECK(bf.get_double(0) == std::ldexp(1.0, 60) + std::ldexp(1.0, 53));
    const Tensor b = one(host_from({kNaN, -0.0, 0.5, 0.0}, float32), bool_);
    CHECK(b.get_int(0) == 1);
    CHECK(b.get_int(1) == 0);
    CHECK(b.get_int(2) == 1);
    CHECK(b.get_int(3) == 0);
    // double -> float16 rounds once (no double rounding through float32): 1 + 2^-11 + 2^-40 rounds up.
    const Tensor d = one(host_from({1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)}, float64), float16);
    CHECK(d.get_double(0) == 1.0 + std::ldexp(1.0, -10));
}

TEST_CASE(
    "pointwise dtypes: 8-bit integers widened after an op in every lane of a 16-byte vector (a zero next to "
    "nonzero lanes)") {
    // Every lane position of a 16-byte vector holds 0 next to nonzero neighbours, and the edge values: the
    // kernels widen each lane after neg, abs and a multiply to every float dtype and to bool through it.
    std::vector<std::int32_t> v(4096);
    for (std::size_t i = 0; i < v.size(); ++i) {
        const std::size_t lane = i % 16, vec = i / 16;
        v[i] = lane == vec % 16 ? 0
                                : (lane % 3 == 0   ? -128
                                   : lane % 3 == 1 ? 127
                                                   : static_cast<std::int32_t>(lane) - 8);
    }
    for (DType src : {int8, uint8}) {
        CAPTURE(name(src));
        std::vector<std::int32_t> w = v;
        if (src == uint8)
            for (auto& e : w) e = e < 0 ? e + 256 : e;
        const Tensor x = from_host(w, {4096}, src, dev());
        for (DType d : {float16, bfloat16, float32, float64}) {
            CAPTURE(name(d));
            const Array X(x);
            const std::vector<Array> arrays{(-X).astype(d), ((-X).astype(d)).astype(bool_),
                                            abs(X).astype(d) != 0.0, (X * 3).astype(d),
                                            ((-X).astype(d) == 0.0) ^ (X == 0)};
            std::vector<Tensor> out;
            for (const Array& a : arrays) {
                out.push_back(Tensor::empty(a.shape(), a.dtype(), dev()));
                testing::poison(out.back());
            }
            for (std::size_t k = 0; k < arrays.size(); ++k) assign(out[k], arrays[k]);  // each its own kernel
            wait_device();
            require_reference(arrays, out, "widened 8-bit lanes");
        }
    }
}
