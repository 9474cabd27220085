// print_cuda: prints the CUDA that Loom generates for three expressions, for review, then runs them.
//
// With a GPU each kernel runs on random inputs and is checked against the CPU reference (verdict and
// GB/s printed). Without one the code is still generated and compiled with NVRTC, and the CPU reference
// evaluates the expressions on small inputs.
#include <cstdio>
#include <loom/loom.hpp>
#include <vector>

using namespace loom;

namespace {

bool show(const char* title, const char* name, const Array& a, double bytes_per_element, bool gpu) {
    std::printf("// ---- %s ----\n%s\n", title, cuda_source({a}, name).c_str());
    const auto check = testing::check_against_reference({a});
    std::printf("%s: check against the CPU reference: %s\n", name, check.ok ? "PASS" : check.message.c_str());
    if (gpu) {
        Tensor out = Tensor::empty(a.shape(), a.dtype(), Device::cuda(0));
        const double ms = median_ms([&] { assign(out, a); });
        std::printf("%s: %.4f ms, %.0f GB/s\n\n", name, ms,
                    bytes_per_element * static_cast<double>(a.numel()) / ms / 1e6);
    } else {
        const CompileReport rep = compile({a}, name);
        std::printf("%s: %s for %s; no CUDA GPU found, not run\n\n", name,
                    rep.disk_hits > 0 ? "loaded from the disk kernel cache" : "compiled with NVRTC",
                    rep.arch.c_str());
    }
    return check.ok;
}

}  // namespace

int main() {
    const bool gpu = cuda_available();
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();
    const std::int64_t rows = gpu ? 8192 : 256, cols = 4096, n = gpu ? (1 << 26) : (1 << 16);
    Tensor x = random_normal({rows, cols}, float32, next_seed(), dev);
    Tensor b = random_normal({cols}, float32, next_seed(), dev);
    Tensor h = random_normal({n}, bfloat16, next_seed(), dev);
    Tensor g = random_normal({n}, bfloat16, next_seed(), dev);

    bool ok = true;
    ok &= show("relu(x * 1.5 + 0.25)", "scale_bias_relu", relu(x * 1.5 + 0.25), 8, gpu);
    ok &= show("gelu_tanh(x + b) * 2 (row broadcast)", "bias_gelu", gelu_tanh(x + b) * 2.0, 8, gpu);
    ok &= show("silu(h) * g in bfloat16", "swiglu_bf16", silu(h) * g, 6, gpu);
    return ok ? 0 : 1;
}
