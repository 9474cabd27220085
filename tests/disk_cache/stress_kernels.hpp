// Distinct small kernels for the disk cache's tests: kernel k applies three unary ops (each to a tanh of the
// step before) picked by k's base-7 digits, so kernels 0..342 all differ in structure (and hence in
// generated source).
#pragma once

#include <array>
#include <cstdint>
#include <loom/loom.hpp>

namespace loom::stress {

inline Array kernel_graph(const Tensor& x, int k) {
    using Fn = Array (*)(const Operand&, std::source_location);
    static constexpr std::array<Fn, 7> ops{
        [](const Operand& a, std::source_location l) { return sin(a, l); },
        [](const Operand& a, std::source_location l) { return cos(a, l); },
        [](const Operand& a, std::source_location l) { return exp(a, l); },
        [](const Operand& a, std::source_location l) { return tanh(a, l); },
        [](const Operand& a, std::source_location l) { return sigmoid(a, l); },
        [](const Operand& a, std::source_location l) { return silu(a, l); },
        [](const Operand& a, std::source_location l) { return erf(a, l); },
    };
    Array y(x);
    int code = k;
    for (int j = 0; j < 3; ++j) {
        // tanh first keeps every argument in (-1, 1), where these functions are well conditioned, so the
        // derived tolerance (which takes each function's condition number as 1) holds; sin(exp(exp(x)))
        // on a normal x would amplify an ulp of exp's argument into a wrong sine.
        y = ops[static_cast<std::size_t>(code % 7)](tanh(y), std::source_location::current()) +
            (j + 1) * 0.25;
        code /= 7;
    }
    return y;
}

/// nvrtc::Options for the current GPU, or an H200 (sm_90) without one, as loom::compile() uses.
inline nvrtc::Options options() {
    nvrtc::Options o;
    if (cuda_available()) {
        const auto& info = device_info(current_device());
        o.cc_major = info.cc_major;
        o.cc_minor = info.cc_minor;
    }
    return o;
}

}  // namespace loom::stress
