// The random number core (loom/ir/random_core.hpp), which every back end compiles: Philox4x32-10 against the
// known answers of Random123's kat_vectors, the uniform maps, and the log and cosine of the normal transform
// against higher-precision values on every float32 argument they take (2^24 each), and on 2^22 float64 ones,
// within the bounds docs/semantics.md ("Random numbers") states.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "loom/ir/random_core.hpp"

namespace rng = loom::ir::rng;

namespace {

// The error of `got` in units in the last place of the format with `p` significand bits at `exact`.
double ulps(long double got, long double exact, int p) {
    if (exact == 0.0L) return got == 0.0L ? 0.0 : 1e30;
    int e = 0;
    (void)std::frexp(exact, &e);
    return static_cast<double>(std::fabs(got - exact) / std::ldexp(1.0L, e - p));
}

// cos(2 pi j 2^-b) (quarter 0) or sin(2 pi j 2^-b) (quarter 3: sin x = cos(x - pi/2)), reduced to a quarter
// turn exactly and evaluated in long double.
long double turns(long double j, int b, int quarter) {
    const long double t = std::ldexp(j, -b);
    const long double q = std::nearbyint(t * 4.0L);
    const long double a = 2.0L * 3.141592653589793238462643383279502884L * (t - q / 4.0L);
    switch ((static_cast<long long>(q) + quarter) & 3) {
        case 0:
            return std::cos(a);
        case 1:
            return -std::sin(a);
        case 2:
            return -std::cos(a);
        default:
            return std::sin(a);
    }
}
long double cos_turns(long double j, int b) {
    return turns(j, b, 0);
}
long double sin_turns(long double j, int b) {
    return turns(j, b, 3);
}

std::uint64_t xorshift(std::uint64_t& s) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

}  // namespace

TEST_CASE("random core: Philox4x32-10 gives Random123's known answers") {
    // Random123 1.14, tests/kat_vectors, the three philox4x32 10 lines: counter, key, result.
    const unsigned int kat[3][10] = {
        {0u, 0u, 0u, 0u, 0u, 0u, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
        {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x408f276du,
         0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
        {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u, 0xd16cfe09u,
         0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
    for (const auto& k : kat) {
        const rng::Words r = rng::philox4x32_10(k[0], k[1], k[2], k[3], k[4], k[5]);
        for (int i = 0; i < 4; ++i) CHECK(r.w[i] == k[6 + i]);
    }
    // draw(): the counter is the index's two halves, the key the seed's.
    const rng::Words d = rng::draw(static_cast<long long>(0x85a308d3243f6a88ull), 0x299f31d0a4093822ll);
    const rng::Words e = rng::philox4x32_10(0x243f6a88u, 0x85a308d3u, 0u, 0u, 0xa4093822u, 0x299f31d0u);
    for (int i = 0; i < 4; ++i) CHECK(d.w[i] == e.w[i]);
}

TEST_CASE("random core: uniform values are k 2^-p, from 0 up to but excluding 1") {
    for (int p : {24, 11, 8}) {
        CHECK(rng::uniform_bits(0u, p) == 0.0f);
        CHECK(rng::uniform_bits(0xffffffffu, p) == 1.0f - std::ldexp(1.0f, -p));
        CHECK(rng::uniform_bits(0x80000000u, p) == 0.5f);
    }
    CHECK(rng::uniform_f64(0u, 0u) == 0.0);
    CHECK(rng::uniform_f64(0xffffffffu, 0xffffffffu) == 1.0 - 0x1p-53);
    CHECK(rng::uniform_f64(0u, 0x80000000u) == 0.5);
    CHECK(rng::uniform_f64(0x800u, 0u) == 0x1p-53);  // the lowest bit kept of the low word
}

TEST_CASE("random core: float32 log within 0.83 ulp on each of its 2^24 arguments") {
    double worst = 0.0;
    for (unsigned int k = 1; k <= (1u << 24); ++k) {
        const float u = static_cast<float>(k) * 0x1p-24f;
        const double err = ulps(rng::log_f32(u), std::log(static_cast<double>(u)), 24);
        worst = err > worst ? err : worst;
    }
    CHECK(rng::log_f32(1.0f) == 0.0f);
    MESSAGE("log_f32: worst " << worst << " ulp");
    CHECK(worst < 0.83);
}

TEST_CASE(
    "random core: float32 log within 0.83 ulp on every positive normal float (LOOM_TEST_EXHAUSTIVE=1)") {
    const char* all = std::getenv("LOOM_TEST_EXHAUSTIVE");
    if (!all || std::string_view(all) != "1") return;
    double worst = 0.0;
    for (unsigned int b = 0x00800000u; b < 0x7f800000u; ++b) {
        const float x = rng::float_of(b);
        const double err = ulps(rng::log_f32(x), std::log(static_cast<double>(x)), 24);
        worst = err > worst ? err : worst;
    }
    MESSAGE("log_f32 over every normal float: worst " << worst << " ulp");
    CHECK(worst < 0.83);
}

TEST_CASE("random core: float32 cosine and sine of turns within 1.02 ulp on each of their 2^24 arguments") {
    double worst_cos = 0.0, worst_sin = 0.0;
    int zeros = 0;
    for (unsigned int j = 0; j < (1u << 24); ++j) {
        const long double exact[2] = {cos_turns(j, 24), sin_turns(j, 24)};
        const float got[2] = {rng::cos_turns_f32(j), rng::sin_turns_f32(j)};
        for (int f = 0; f < 2; ++f) {
            if (exact[f] == 0.0L) {
                CHECK(got[f] == 0.0f);  // a multiple of a quarter turn: the sine of t = 0
                ++zeros;
                continue;
            }
            const double err = ulps(got[f], exact[f], 24);
            double& worst = f == 0 ? worst_cos : worst_sin;
            worst = err > worst ? err : worst;
        }
    }
    MESSAGE("cos_turns_f32: worst " << worst_cos << " ulp; sin_turns_f32: worst " << worst_sin << " ulp");
    CHECK(worst_cos < 1.02);
    CHECK(worst_sin < 1.02);
    CHECK(zeros == 4);  // cos at 1/4 and 3/4, sin at 0 and 1/2
}

TEST_CASE("random core: float64 log and cosine on 2^22 arguments each") {
    std::uint64_t s = 0x9E3779B97F4A7C15ull;
    double log_worst = 0.0, cos_worst = 0.0, sin_worst = 0.0;
    for (int i = 0; i < (1 << 22); ++i) {
        // Arguments of every binade the normal transform uses: (k + 1) 2^-53 with k of 53 bits shifted right.
        const std::uint64_t k = (xorshift(s) >> 11) >> (i % 53);
        const double u = static_cast<double>(k + 1) * 0x1p-53;
        const long double el = std::log(static_cast<long double>(u));
        if (el != 0.0L) {
            const double e = ulps(rng::log_f64(u), el, 53);
            log_worst = e > log_worst ? e : log_worst;
        }
        const std::uint64_t j = xorshift(s) >> 11;
        const long double ec = cos_turns(static_cast<long double>(j), 53);
        if (ec != 0.0L) {
            const double e = ulps(rng::cos_turns_f64(j), ec, 53);
            cos_worst = e > cos_worst ? e : cos_worst;
        }
        const long double es = sin_turns(static_cast<long double>(j), 53);
        if (es != 0.0L) {
            const double e = ulps(rng::sin_turns_f64(j), es, 53);
            sin_worst = e > sin_worst ? e : sin_worst;
        }
    }
    MESSAGE("log_f64: worst " << log_worst << " ulp; cos_turns_f64: worst " << cos_worst
                              << " ulp; sin_turns_f64: worst " << sin_worst << " ulp");
    CHECK(log_worst < 0.85);
    CHECK(cos_worst < 1.1);
    CHECK(sin_worst < 1.1);
}

TEST_CASE("random core: normal values within their bound of Box-Muller's exact value, both of each pair") {
    // z = sqrt(-2 ln u) cos(2 pi v) (even slots) and sqrt(-2 ln u) sin(2 pi v) (odd slots) of the same u and
    // v, in long double; the error relative to the radius (a cosine or sine near 0 makes z small, its error
    // the radius's times that).
    std::uint64_t s = 0x2545F4914F6CDD1Dull;
    double worst32 = 0.0, worst64 = 0.0;
    float largest = 0.0f;
    for (int i = 0; i < (1 << 20); ++i) {
        const std::uint64_t a = xorshift(s), b = xorshift(s);
        const rng::Words w{{static_cast<unsigned int>(a), static_cast<unsigned int>(a >> 32),
                            static_cast<unsigned int>(b), static_cast<unsigned int>(b >> 32)}};
        for (unsigned int k = 0; k < 4; ++k) {  // float32: pair (w0, w1) for slots 0, 1; (w2, w3) for 2, 3
            const unsigned int wu = w.w[k & 2u], wv = w.w[(k & 2u) + 1u];
            const long double r32 =
                std::sqrt(-2.0L * std::log(std::ldexp(static_cast<long double>((wu >> 8) + 1u), -24)));
            const long double exact = r32 * ((k & 1u) ? sin_turns(wv >> 8, 24) : cos_turns(wv >> 8, 24));
            const float z32 = rng::normal_f32(w, k);
            const long double rel32 = std::fabs(z32 - exact) / (r32 * 0x1p-24L);
            worst32 = static_cast<double>(rel32) > worst32 ? static_cast<double>(rel32) : worst32;
            largest = std::fabs(z32) > largest ? std::fabs(z32) : largest;
        }
        const long double u64 =
            std::ldexp(static_cast<long double>((rng::word64(w.w[0], w.w[1]) >> 11) + 1), -53);
        const long double r64 = std::sqrt(-2.0L * std::log(u64));
        const long double v64 = static_cast<long double>(rng::word64(w.w[2], w.w[3]) >> 11);
        for (unsigned int k = 0; k < 2; ++k) {
            const long double z = r64 * (k ? sin_turns(v64, 53) : cos_turns(v64, 53));
            const long double rel64 = std::fabs(rng::normal_f64(w, k) - z) / (r64 * 0x1p-53L);
            worst64 = static_cast<double>(rel64) > worst64 ? static_cast<double>(rel64) : worst64;
        }
    }
    MESSAGE("normal_f32: worst " << worst32 << " units of 2^-24 of the radius; normal_f64: " << worst64
                                 << " of 2^-53");
    CHECK(worst32 < 4.0);
    CHECK(worst64 < 4.0);
    CHECK(largest <= 5.8f);
    // The largest radius, at u = 2^-24: sqrt(48 ln 2); v = 0 gives it whole in the cosine, 0 in the sine.
    const rng::Words edge{{0u, 0u, 0u, 0u}};
    CHECK(std::fabs(rng::normal_f32(edge, 0) - 5.7680f) < 1e-3f);
    CHECK(rng::normal_f32(edge, 1) == 0.0f);
    CHECK(std::fabs(rng::normal_f32(edge, 2) - 5.7680f) < 1e-3f);
}

TEST_CASE("random core: element i reads slot i mod 4 of block i / 4 (i mod 2 of i / 2 in float64)") {
    CHECK(rng::block_of(0, false) == 0);
    CHECK(rng::block_of(7, false) == 1);
    CHECK(rng::slot_of(7, false) == 3u);
    CHECK(rng::block_of(7, true) == 3);
    CHECK(rng::slot_of(7, true) == 1u);
    // Index bits above 33 reach the counter's second word: 2^40 + 5 is slot 1 of block 2^38 + 1.
    const long long big = (1ll << 40) + 5;
    CHECK(rng::block_of(big, false) == (1ll << 38) + 1);
    CHECK(rng::slot_of(big, false) == 1u);
    const rng::Words w = rng::draw(3, 99);
    for (unsigned int k = 0; k < 4; ++k) CHECK(rng::word(w, k) == w.w[k]);
    CHECK(rng::uniform_f64_slot(w, 0) == rng::uniform_f64(w.w[0], w.w[1]));
    CHECK(rng::uniform_f64_slot(w, 1) == rng::uniform_f64(w.w[2], w.w[3]));
}
