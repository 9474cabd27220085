// The prelude's half types and conversions (codegen/src/cuda/prelude.cuh) on the host, for the tests that run
// a family's device code on host threads (test_scan_kernel.cpp, test_scatter_kernel.cpp,
// test_attention_kernel.cpp): the same storage (the bits) and Loom's own correctly rounded conversions, so
// the simulated kernels round as the device does.
#pragma once

#include "loom/ir/half.hpp"

namespace lm {
struct f16 {
    unsigned short bits;
};
struct bf16 {
    unsigned short bits;
};
inline float to_reg(f16 x) {
    return loom::half_bits_to_float(x.bits);
}
inline float to_reg(bf16 x) {
    return loom::bf16_bits_to_float(x.bits);
}
inline unsigned short float_to_f16(float f) {
    return loom::float_to_half_bits(f);
}
inline unsigned short float_to_bf16(float f) {
    return loom::float_to_bf16_bits(f);
}
}  // namespace lm
