// The float32 exp core (loom/ir/exp_core.hpp), which the reference, the host back end and GPU kernels
// compile: exp_f32(x) is the correctly rounded float32 of e^x. Checked against the C library's double exp
// rounded once to float32 (the same value wherever the C library's double is within its usual half ulp and
// e^x is not within a double's rounding of a float32 rounding boundary) on every float16 and bfloat16
// argument, millions of float32 arguments over every exponent and every argument with a subnormal or nearly
// overflowing result; against values computed with exact decimal arithmetic where e^x comes nearest a
// rounding boundary; and on all 2^32 float32 arguments with LOOM_TEST_EXHAUSTIVE=1.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "loom/ir/elementwise.hpp"
#include "loom/ir/exp_core.hpp"
#include "loom/ir/half.hpp"

namespace expc = loom::ir::expc;

namespace {

std::uint32_t bits(float x) {
    return std::bit_cast<std::uint32_t>(x);
}
float from_bits(std::uint32_t b) {
    return std::bit_cast<float>(b);
}

/// The C library's value: the double exp of the widened argument, rounded once to float32.
float libm_exp(float x) {
    return static_cast<float>(std::exp(static_cast<double>(x)));
}

/// Compares exp_f32 with the C library's value at the argument with bits `b`: the same bits, or for a NaN
/// argument a NaN from both, exp_f32's being the argument quieted (sign and payload kept).
bool agrees(std::uint32_t b) {
    const float x = from_bits(b);
    const float got = expc::exp_f32(x);
    if (std::isnan(x)) return std::isnan(libm_exp(x)) && bits(got) == (b | 0x00400000u);
    return bits(got) == bits(libm_exp(x));
}

/// Checks the arguments with bits in [first, last] (inclusive) in steps of `step`; counts and reports the
/// first disagreements.
void check_range(std::uint64_t first, std::uint64_t last, std::uint64_t step, const char* what) {
    int bad = 0;
    for (std::uint64_t u = first; u <= last; u += step) {
        const auto b = static_cast<std::uint32_t>(u);
        if (agrees(b)) continue;
        if (++bad <= 5)
            FAIL_CHECK(what << ": exp_f32 of 0x" << std::hex << b << " (" << from_bits(b) << ") gives 0x"
                            << bits(expc::exp_f32(from_bits(b))) << ", the C library 0x"
                            << bits(libm_exp(from_bits(b))));
    }
    CHECK_MESSAGE(bad == 0, what << ": " << bad << " arguments differ");
}

}  // namespace

TEST_CASE("exp core: every float16 and bfloat16 argument gives the C library's exp rounded to float32") {
    for (std::uint32_t h = 0; h < (1u << 16); ++h) {
        const float a = loom::half_bits_to_float(static_cast<std::uint16_t>(h));
        const float b = loom::bf16_bits_to_float(static_cast<std::uint16_t>(h));
        if (!agrees(bits(a))) FAIL_CHECK("float16 0x" << std::hex << h << " (" << a << ")");
        if (!agrees(bits(b))) FAIL_CHECK("bfloat16 0x" << std::hex << h << " (" << b << ")");
    }
}

TEST_CASE("exp core: float32 arguments over every exponent, and every one with a subnormal or large result") {
    check_range(0, 0xffffffffu, 1021, "every 1021st float32");  // about 4.2 million, every exponent
    // Every argument whose result is subnormal or rounds to 0 or to the smallest normal: x in [-104, -87.3].
    check_range(bits(-87.0f), bits(-104.0f), 1, "subnormal results");
    // Every argument from 88 to 89: the largest results and overflow to +inf (from 88.7228394).
    check_range(bits(88.0f), bits(89.0f), 1, "overflow");
    // The neighbourhoods of 0 (results next to 1), of the reduction's switch points ((k + 1/2) ln 2 / 16) and
    // of the fast path's range ends.
    check_range(0, 0x00100000u, 1, "small positive");
    check_range(0x80000000u, 0x80100000u, 1, "small negative");
    check_range(bits(0x1p-26f), bits(0x1p-22f), 7, "x near 2^-24");
    check_range(bits(-0x1p-26f), bits(-0x1p-22f), 7, "x near -2^-24");
    for (int k = -2402; k <= 2055; ++k) {
        const std::uint32_t c = bits(static_cast<float>((k + 0.5) * 0.043321698784996581838));
        check_range(c - 64, c + 64, 1, "switch points of K");
    }
    check_range(bits(-104.0f) - 4096, bits(-104.0f) + 4096, 1, "-104");
    check_range(bits(89.0f) - 4096, bits(89.0f) + 4096, 1, "89");
}

TEST_CASE("exp core: special values, the ends of the range and subnormal results") {
    const float inf = std::numeric_limits<float>::infinity();
    CHECK(bits(expc::exp_f32(0.0f)) == bits(1.0f));
    CHECK(bits(expc::exp_f32(-0.0f)) == bits(1.0f));
    CHECK(bits(expc::exp_f32(inf)) == bits(inf));
    CHECK(bits(expc::exp_f32(-inf)) == bits(0.0f));  // +0
    CHECK(bits(expc::exp_f32(std::numeric_limits<float>::max())) == bits(inf));
    CHECK(bits(expc::exp_f32(-std::numeric_limits<float>::max())) == bits(0.0f));
    CHECK(bits(expc::exp_f32(std::numeric_limits<float>::denorm_min())) == bits(1.0f));
    CHECK(bits(expc::exp_f32(-std::numeric_limits<float>::denorm_min())) == bits(1.0f));
    // NaN: quiet, with the argument's sign and payload (a signalling NaN's too).
    for (std::uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fa5a5a5u, 0x7fffffffu})
        CHECK(bits(expc::exp_f32(from_bits(nan))) == (nan | 0x00400000u));
    // The largest argument with a finite result, 88.7228317 (e^x = 3.40279e38, just below the largest float),
    // and the next float, whose e^x lies beyond the largest float by more than half its spacing.
    CHECK(bits(expc::exp_f32(from_bits(0x42b17217u))) == 0x7f7fff84u);
    CHECK(std::isinf(expc::exp_f32(from_bits(0x42b17218u))));
    // Subnormal results, exactly rounded (values from 80-digit decimal arithmetic): the smallest subnormal
    // 2^-149 down to x = -103.97, where e^x passes 2^-150 (half of it) and results become 0, and both sides
    // of the smallest normal 2^-126.
    CHECK(bits(expc::exp_f32(-103.0f)) == 1u);
    CHECK(bits(expc::exp_f32(-103.96f)) == 1u);
    CHECK(bits(expc::exp_f32(-103.98f)) == 0u);
    CHECK(bits(expc::exp_f32(from_bits(0xc2aeac4fu))) == 0x00800026u);  // normal
    CHECK(bits(expc::exp_f32(from_bits(0xc2aeac50u))) == 0x007fffe6u);  // subnormal
    CHECK(bits(expc::exp_f32(from_bits(0xc2aeac51u))) == 0x007fffa6u);
}

TEST_CASE("exp core: the arguments whose e^x comes nearest a rounding boundary round correctly") {
    // The float32 arguments whose e^x lies nearest, relative to itself, to a float32 rounding boundary (the
    // nearest at 2^-52.6 of e^x; with subnormal results, at 2^-47.6), found by checking every argument, and
    // the correctly rounded results, computed with 80-digit decimal arithmetic.
    const std::uint32_t cases[][2] = {
        {0xc16912cdu, 0x34fd331bu},
        {0xbbf0edf1u, 0x3f7e1fe9u},
        {0xbae0e25cu, 0x3f7f8fa7u},
        {0xb3000000u, 0x3f800000u},
        {0x377eff81u, 0x3f800080u},
        {0x40315b33u, 0x417fa47du},
        {0x4001b249u, 0x40f2cd14u},
        {0x39c6be5bu, 0x3f800c6du},
        {0x38e69cc1u, 0x3f80039au},
        {0x383a3ef1u, 0x3f800175u},
        {0xbc2a461au, 0x3f7d5a6eu},
        {0x3d1a274eu, 0x3f84e8bau},
        {0x4288942bu, 0x70b7a4c5u},
        {0xbbb70ee8u, 0x3f7e92e8u},
        {0x3fe67199u, 0x40c1a7a6u},
        {0xc13d6631u, 0x36f28e33u},
        {0x39e5bb1du, 0x3f800e5du},
        {0x41cbf87bu, 0x51dc50beu},
        {0x36fdffc1u, 0x3f800040u},
        {0x367bffe1u, 0x3f800020u},
        {0x35f7fff1u, 0x3f800010u},
        {0x356ffff9u, 0x3f800008u},
        {0x34dffffdu, 0x3f800004u},
        {0x343fffffu, 0x3f800002u},
        // subnormal results
        {0xc2b2e798u, 0x000f6dceu},
        {0xc2b27dd9u, 0x0012f7efu},
        {0xc2b43fb7u, 0x0007e0e3u},
        {0xc2af8231u, 0x00544aecu},
        {0xc2b1c033u, 0x001b78f7u},
        {0xc2b79f85u, 0x0001753au},
    };
    for (const auto& c : cases) {
        CAPTURE(c[0]);
        CHECK(bits(expc::exp_f32(from_bits(c[0]))) == c[1]);
    }
}

TEST_CASE("exp core: the fast path's error is within its window, and both paths agree where it is certain") {
    // The fast path's double y against the slow path's double-double (within 2^-94): at most 1450 units in
    // the last place of y, well inside kWindow; where the fast path's rounding is certain, the slow path's
    // rounding is the same.
    double worst = 0;
    long slow = 0, n = 0;
    for (std::uint64_t u = 0; u <= 0xffffffffu; u += 257) {
        const float x = from_bits(static_cast<std::uint32_t>(u));
        if (!(x >= -104.0f && x <= 89.0f) || std::fabs(x) <= 0x1p-25f) continue;  // exp_fast's domain
        ++n;
        const expc::Fast f = expc::exp_fast(x);
        const expc::DD z = expc::exp_dd(f.xd, f.k, f.j);
        const double hi = z.hi * f.s, lo = z.lo * f.s;
        int e = 0;
        (void)std::frexp(f.y, &e);
        worst = std::max(worst, std::fabs(((f.y - hi) - lo) / std::ldexp(1.0, e - 53)));
        const expc::Rounded fast = expc::round_to_f32(f.y, 0.0, expc::kWindow);
        if (fast.near) {
            ++slow;
            continue;
        }
        if (fast.bits != expc::round_to_f32(hi, lo, 0).bits) FAIL_CHECK("paths disagree at " << x);
    }
    MESSAGE("fast path: at most " << worst << " units in the last place of the double; " << slow << " of "
                                  << n << " arguments take the slow path");
    CHECK(worst <= 1450.0);
    CHECK(slow * 4000 < n);
}

TEST_CASE(
    "exp core: the reference's exp is exp_f32 at float32, float16 and bfloat16, the C library's at float64") {
    using loom::ir::ScalarValue;
    auto ref = [](loom::DType t, double x) {
        ScalarValue a = ScalarValue::of_float(x);
        return loom::ir::eval_elementwise(loom::ir::Op::Exp, t, t, &a).f;
    };
    for (float x : {-100.0f, -87.5f, -1.5f, -0.001f, 0.25f, 1.0f, 10.0f, 88.5f}) {
        CAPTURE(x);
        CHECK(ref(loom::DType::Float32, x) == static_cast<double>(expc::exp_f32(x)));
        const float h = loom::round_to_half(x), b = loom::round_to_bf16(x);
        CHECK(ref(loom::DType::Float16, h) == static_cast<double>(loom::round_to_half(expc::exp_f32(h))));
        CHECK(ref(loom::DType::BFloat16, b) == static_cast<double>(loom::round_to_bf16(expc::exp_f32(b))));
        CHECK(ref(loom::DType::Float64, 0.1 + x) == std::exp(0.1 + x));
    }
}

// All 2^32 float32 arguments, on every core (a few minutes of CPU, mostly the C library's exp).
TEST_CASE(
    "exp core: every float32 argument gives the C library's exp rounded to float32 "
    "(LOOM_TEST_EXHAUSTIVE=1)") {
    const char* all = std::getenv("LOOM_TEST_EXHAUSTIVE");
    if (!all || std::string_view(all) != "1") return;
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    constexpr std::uint64_t kBlock = std::uint64_t{1} << 20;
    std::atomic<std::uint64_t> next{0};
    std::mutex m;
    std::vector<std::uint32_t> bad;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            for (std::uint64_t s = next.fetch_add(kBlock); s < (std::uint64_t{1} << 32);
                 s = next.fetch_add(kBlock))
                for (std::uint64_t u = s; u < s + kBlock; ++u)
                    if (!agrees(static_cast<std::uint32_t>(u))) {
                        const std::lock_guard<std::mutex> lock(m);
                        bad.push_back(static_cast<std::uint32_t>(u));
                    }
        });
    for (std::thread& t : pool) t.join();
    std::sort(bad.begin(), bad.end());
    // exp_f32 is the correctly rounded value: a disagreement is the C library's rounding (its double within
    // a few units of a float32 rounding boundary), to be confirmed with a higher-precision evaluation.
    for (std::size_t i = 0; i < std::min<std::size_t>(bad.size(), 20); ++i)
        MESSAGE("0x" << std::hex << bad[i] << ": exp_f32 0x" << bits(expc::exp_f32(from_bits(bad[i])))
                     << ", the C library 0x" << bits(libm_exp(from_bits(bad[i]))));
    CHECK(bad.empty());
}
