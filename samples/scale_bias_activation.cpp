// scale_bias_activation: gelu(x * scale + bias) with row-broadcast scale and bias, as ONE fused kernel.
//
// With a GPU: runs the kernel, checks it against the CPU reference, prints the verdict and GB/s (minimum
// bytes: x read once, out written once, the row vectors once). Without one: prints the IR and the
// generated CUDA, compiles it with NVRTC, evaluates the CPU reference and says that no GPU was found.
#include <algorithm>
#include <cstdio>
#include <loom/loom.hpp>
#include <vector>

using namespace loom;

int main(int argc, char** argv) {
    const std::int64_t rows = argc > 1 ? std::atoll(argv[1]) : 8192;
    const std::int64_t cols = argc > 2 ? std::atoll(argv[2]) : 8192;
    const bool gpu = cuda_available();
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();
    const std::int64_t host_rows = gpu ? rows : std::min<std::int64_t>(rows, 512);  // keep the CPU run short

    Tensor x = random_normal({host_rows, cols}, float32, next_seed(), dev);
    Tensor scale = random_uniform({cols}, float32, 0.5, 1.5, next_seed(), dev);
    Tensor bias = random_normal({cols}, float32, next_seed(), dev);

    Array y = gelu(x * scale + bias);  // lazy: nothing has run yet

    if (!gpu) {
        std::printf("// ---- the IR of gelu(x * scale + bias) ----\n%s\n", y.ir_text().c_str());
        std::printf("%s\n", cuda_source({y}, "scale_bias_activation").c_str());
        const CompileReport rep = compile({y}, "scale_bias_activation");
        if (rep.disk_hits > 0)
            std::printf("%s for %s: loaded from the disk kernel cache (%zu bytes of %s)\n",
                        rep.kernel.c_str(), rep.arch.c_str(), rep.image_bytes, rep.image_kind.c_str());
        else
            std::printf("NVRTC compiled %s for %s in %.1f ms (%zu bytes of %s)\n", rep.kernel.c_str(),
                        rep.arch.c_str(), rep.compile_ms, rep.image_bytes, rep.image_kind.c_str());
        Tensor ref = y;  // host tensors: the CPU reference evaluates the same graph
        std::printf("CPU reference: out[0] = %.9g, out[last] = %.9g over %lld x %lld elements\n",
                    ref.get_double(0), ref.get_double(ref.numel() - 1), static_cast<long long>(host_rows),
                    static_cast<long long>(cols));
        std::printf("no CUDA GPU was found: the kernel was generated and compiled, not run\n");
        return 0;
    }

    Tensor out = Tensor::empty({rows, cols}, float32, dev);
    assign(out, y);  // first call: trace, plan, generate, compile, launch
    synchronize();
    const auto check = testing::check_against_reference({y.node()}, {out});
    std::printf("check against the CPU reference: %s\n", check.ok ? "PASS" : check.message.c_str());

    const double med = median_ms([&] { assign(out, y); }, 25);
    const double bytes = 8.0 * static_cast<double>(rows * cols) + 8.0 * static_cast<double>(cols);
    std::printf("scale_bias_activation %lld x %lld float32: %.4f ms, %.0f GB/s (median of 25 launches)\n",
                static_cast<long long>(rows), static_cast<long long>(cols), med, bytes / med / 1e6);
    return check.ok ? 0 : 1;
}
