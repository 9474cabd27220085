// Bit-exact host conversions between float32/float64 and float16/bfloat16 (IEEE-754 round to nearest even).
#pragma once

#include <cstdint>

namespace loom {

/// float32 -> float16 bits, round to nearest even; overflow gives ±Inf, NaN stays NaN (quiet).
std::uint16_t float_to_half_bits(float f);
/// float64 -> float16 bits with a single rounding (not via float32, which could round twice).
std::uint16_t double_to_half_bits(double d);
/// float16 bits -> float32 (exact).
float half_bits_to_float(std::uint16_t h);
/// float32 -> bfloat16 bits, round to nearest even; NaN stays NaN (quiet).
std::uint16_t float_to_bf16_bits(float f);
/// float64 -> bfloat16 bits with a single rounding.
std::uint16_t double_to_bf16_bits(double d);
/// bfloat16 bits -> float32 (exact).
float bf16_bits_to_float(std::uint16_t b);

/// Rounds a float32 value to the nearest float16 value and returns it as float32 (exact).
inline float round_to_half(float f) {
    return half_bits_to_float(float_to_half_bits(f));
}
/// Rounds a float32 value to the nearest bfloat16 value and returns it as float32 (exact).
inline float round_to_bf16(float f) {
    return bf16_bits_to_float(float_to_bf16_bits(f));
}

/// Host storage type of a float16 element (2 bytes, the IEEE binary16 bits).
struct half {
    std::uint16_t bits = 0;
    half() = default;
    explicit half(float f) : bits(float_to_half_bits(f)) {}
    explicit operator float() const { return half_bits_to_float(bits); }
    static half from_bits(std::uint16_t b) {
        half h;
        h.bits = b;
        return h;
    }
};

/// Host storage type of a bfloat16 element (2 bytes, the upper half of a float32).
struct bfloat16_t {
    std::uint16_t bits = 0;
    bfloat16_t() = default;
    explicit bfloat16_t(float f) : bits(float_to_bf16_bits(f)) {}
    explicit operator float() const { return bf16_bits_to_float(bits); }
    static bfloat16_t from_bits(std::uint16_t b) {
        bfloat16_t h;
        h.bits = b;
        return h;
    }
};

}  // namespace loom
