// Bit-exact float16/bfloat16 conversions. Rounding follows IEEE-754 roundTiesToEven; the double paths
// round once from the exact binary64 value.
#include "loom/ir/half.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace loom {
namespace {

// Rounds the magnitude `m` (a finite non-negative double) to a format with `mant` explicit mantissa bits,
// minimum normal exponent `emin`, maximum finite exponent `emax`; returns the encoded bits without sign.
std::uint32_t encode_small_float(double m, int mant, int emin, int emax) {
    const int bias = -emin + 1;
    if (m == 0.0) return 0;
    int e = std::ilogb(m);
    if (e < emin) e = emin;  // subnormal range: fixed quantum 2^(emin - mant)
    // quantum = 2^(e - mant); scaled = m / quantum is exact in double for our formats (mant <= 10).
    double scaled = std::ldexp(m, mant - e);
    double r = std::nearbyint(scaled);     // default rounding mode: ties to even
    if (r >= std::ldexp(1.0, mant + 1)) {  // rounded up into the next binade
        r = std::ldexp(r, -1);
        ++e;
    }
    if (e > emax) return static_cast<std::uint32_t>((emax + bias + 1) << mant);  // Inf
    auto q = static_cast<std::uint32_t>(r);
    if (q < (1u << mant)) return q;  // subnormal (e == emin and no implicit bit)
    return (static_cast<std::uint32_t>(e + bias) << mant) | (q & ((1u << mant) - 1));
}

std::uint16_t double_to_small(double d, int mant, int emin, int emax, std::uint16_t qnan) {
    std::uint16_t sign = std::signbit(d) ? 0x8000 : 0;
    if (std::isnan(d)) return static_cast<std::uint16_t>(sign | qnan);
    double m = std::fabs(d);
    const int bias = -emin + 1;
    if (std::isinf(m)) return static_cast<std::uint16_t>(sign | ((emax + bias + 1) << mant));
    return static_cast<std::uint16_t>(sign | encode_small_float(m, mant, emin, emax));
}

}  // namespace

// A float32 value is exactly a double, so rounding the double once is rounding the float once.
std::uint16_t float_to_half_bits(float f) {
    return double_to_half_bits(static_cast<double>(f));
}
std::uint16_t double_to_half_bits(double d) {
    return double_to_small(d, 10, -14, 15, 0x7e00);
}

float half_bits_to_float(std::uint16_t h) {
    const std::uint32_t sign = (h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1f;
    const std::uint32_t man = h & 0x3ffu;
    float mag;
    if (exp == 0) {
        mag = std::ldexp(static_cast<float>(man), -24);
    } else if (exp == 31) {
        mag = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
        if (man) {  // keep the payload's top bits, like the hardware conversion
            std::uint32_t bits = 0x7f800000u | (man << 13) | 0x00400000u;
            return std::bit_cast<float>(sign | bits);
        }
    } else {
        mag = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
    }
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(mag));
}

std::uint16_t float_to_bf16_bits(float f) {
    std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    std::uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;  // round to nearest even; overflow to Inf falls out of the carry
    return static_cast<std::uint16_t>(u >> 16);
}

std::uint16_t double_to_bf16_bits(double d) {
    return double_to_small(d, 7, -126, 127, 0x7fc0);
}

float bf16_bits_to_float(std::uint16_t b) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace loom
