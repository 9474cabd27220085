// print_cuda: prints the CUDA that Loom generates for a few expressions, for review. Needs no GPU.
#include <loom/loom.hpp>

#include <cstdio>

using namespace loom;

int main() {
    // Placeholders on the host are enough to generate code: shapes and dtypes are what matter.
    Tensor x = Tensor::host({4096, 512}, float32);
    Tensor b = Tensor::host({512}, float32);
    Tensor h = Tensor::host({1 << 20}, bfloat16);
    Tensor g = Tensor::host({1 << 20}, bfloat16);

    std::printf("// ---- relu(x * 1.5 + 0.25) ----\n%s\n", cuda_source({relu(x * 1.5 + 0.25)}, "scale_bias_relu").c_str());
    std::printf("// ---- gelu_tanh(x + b) * 2 (row broadcast) ----\n%s\n",
                cuda_source({gelu_tanh(x + b) * 2.0}, "bias_gelu").c_str());
    std::printf("// ---- silu(h) * g in bfloat16 ----\n%s\n", cuda_source({silu(h) * g}, "swiglu_bf16").c_str());
    return 0;
}
