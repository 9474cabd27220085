// first_gpu: the README's first GPU program. Fused elementwise work, two outputs of one kernel, a traced
// function called into existing memory, the generated CUDA and a check against the CPU reference. Needs a
// CUDA GPU (the arrays are made on the current device); without one it says so and exits 0.
#include <iostream>
#include <loom/loom.hpp>

using namespace loom;

int main() {
    if (!cuda_available()) {
        std::cout << "first_gpu: no CUDA GPU found; samples/host_quickstart runs on the host\n";
        return 0;
    }
    // clang-format off
    // [readme intro]
    Tensor x = random_normal({1 << 28}, float32);   // device memory
    Array  y = relu(x * 1.5 + 0.25);                // lazy: nothing has run; 1.5 stays float32 (weak scalar)
    Tensor out = y;                                 // one fused kernel runs here: read x once, write out once
    // [/readme intro]
    // [readme program]
    assign(out, gelu(x) * 2.0);                     // into existing memory: no allocation

    Tensor S = random_uniform({1 << 26}, float32, 10, 110), K = random_uniform({1 << 26}, float32, 10, 110);
    auto [ratio, spread] = eval(log(S / K), S - K); // two outputs of one shape: one kernel, S and K read once

    Tensor x2 = random_normal({4096, 512}, float32), scale = random_normal({512}, float32);
    Tensor bias = random_normal({512}, float32), y2 = Tensor::empty({4096, 512}, float32, Device::cuda());
    auto scale_bias_act = loom::function("scale_bias_act",  // traced once per kind of arguments
        [](Array x, Array scale, Array bias) { return gelu(x * scale + bias); });
    scale_bias_act(x2, scale, bias, y2);                   // cached call into y2: about one kernel launch of host time

    std::cout << scale_bias_act.cuda_source(x2, scale, bias);  // the generated CUDA, for review
    auto check = testing::check_against_reference({y});    // the same graph on the CPU reference
    // [/readme program]
    // clang-format on
    std::cout << "ratio " << to_string(ratio.shape()) << ", spread " << to_string(spread.shape())
              << "; against the CPU reference: " << (check.ok ? "PASS" : check.message) << "\n";
    return check.ok ? 0 : 1;
}
