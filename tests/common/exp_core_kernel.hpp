// The kernel of the exp core's GPU test (tests/gpu/test_exp_core.cpp) and of its NVRTC compile test
// (tests/golden/test_exp_core_golden.cpp): Loom's device prelude, which carries lm::expc::exp_f32
// (ir/include/loom/ir/exp_core.hpp), and one kernel writing the bits of exp_f32 of n consecutive float32 bit
// patterns.
#pragma once

#include <string>

#include "loom/codegen/cuda/prelude.hpp"

namespace loom_test {

/// The kernel's one parameter, by value: out[i] = the bits of exp_f32 of the float32 whose bits are first +
/// i, i < n.
struct ExpCoreArgs {
    unsigned int* out;
    unsigned int first;
    unsigned int n;
};

inline constexpr const char* kExpCoreKernel = "exp_core_bits";

/// The prelude and the kernel (grid-stride), a complete source for NVRTC.
inline std::string exp_core_source() {
    return std::string(loom::codegen::prelude_source()) + R"(
struct ExpCoreArgs { unsigned int* out; unsigned int first; unsigned int n; };
extern "C" __global__ void exp_core_bits(ExpCoreArgs a) {
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += gridDim.x * blockDim.x)
        a.out[i] = __float_as_uint(lm::expc::exp_f32(__uint_as_float(a.first + i)));
}
)";
}

}  // namespace loom_test
