// rmsnorm: RMS normalization of every row of a 16384 x 8192 float32 matrix with a weight (eps 1e-6),
// written with mean as one would by hand:
//     y = x * rsqrt(mean(x * x, -1, keepdims) + eps) * w
// This is the graph loom::rmsnorm(x, w, eps) builds (docs/semantics.md, "Softmax and normalizations").
//
// With a GPU: prints the fusion plan (loom::explain), evaluates y on the device, checks it against the CPU
// reference and prints GB/s (x read once, y written once, w read once; CUDA events after warm-up).
// Without one: evaluates a small matrix on the host (the LLVM back end, or the CPU reference), compares it
// with an rmsnorm computed here in double precision and compiles the kernel with NVRTC.
// Arguments: [rows] [cols].
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <loom/loom.hpp>

using namespace loom;

int main(int argc, char** argv) {
    const bool gpu = cuda_available();
    const std::int64_t rows = argc > 1 ? std::atoll(argv[1]) : (gpu ? 16384 : 256);
    const std::int64_t cols = argc > 2 ? std::atoll(argv[2]) : (gpu ? 8192 : 1024);
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();
    const double eps = 1e-6;

    Tensor x = random_normal({rows, cols}, float32, next_seed(), dev);
    Tensor w = random_normal({cols}, float32, next_seed(), dev);
    const Array y = x * rsqrt(mean(x * x, -1, /*keepdims=*/true) + eps) * w;
    std::printf("rmsnorm: %lld x %lld float32, eps %g; the same graph as loom::rmsnorm(x, w, eps): %s\n",
                static_cast<long long>(rows), static_cast<long long>(cols), eps,
                y.node() == rmsnorm(x, w, eps).node() ? "yes" : "no");

    try {
        std::printf("%s", explain({y}, "rmsnorm").c_str());
    } catch (const Error& err) {
        std::printf("explain: %s\n", err.what());
    }

    Tensor out = Tensor::empty({rows, cols}, float32, dev);
    testing::poison(out);
    try {
        assign(out, y);
        if (gpu) synchronize();
    } catch (const Error& err) {
        std::printf("rmsnorm: evaluation failed: %s\n", err.what());
        return 1;
    }

    if (!gpu) {
        double worst = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
            double ms = 0;
            for (std::int64_t c = 0; c < cols; ++c)
                ms += x.get_double(r * cols + c) * x.get_double(r * cols + c);
            const double rs = 1.0 / std::sqrt(ms / static_cast<double>(cols) +
                                              static_cast<double>(static_cast<float>(eps)));
            for (std::int64_t c = 0; c < cols; ++c) {
                const double want = x.get_double(r * cols + c) * rs * w.get_double(c);
                worst = std::max(
                    worst, std::fabs(out.get_double(r * cols + c) - want) / std::max(1.0, std::fabs(want)));
            }
        }
        const bool ok = worst < 1e-5;
        std::printf("host: y[0] = %.9g; largest difference from a double-precision rmsnorm %.2e: %s\n",
                    out.get_double(0), worst, ok ? "PASS" : "FAIL");
        try {
            const CompileReport rep = compile({y}, "rmsnorm");
            std::printf("the kernel (%d for y) compiled with NVRTC for %s in %.0f ms\n", rep.kernels,
                        rep.arch.c_str(), rep.compile_ms);
        } catch (const Error& err) {
            std::printf("compile: %s\n", err.what());
        }
        std::printf("no CUDA GPU was found: evaluated on the host, not on a GPU\n");
        return ok ? 0 : 1;
    }

    const auto check = testing::check_against_reference({y.node()}, {out});
    std::printf("check against the CPU reference: %s\n", check.ok ? "PASS" : check.message.c_str());
    const double ms = median_ms([&] { assign(out, y); });
    const double bytes =
        8.0 * static_cast<double>(rows) * static_cast<double>(cols) + 4.0 * static_cast<double>(cols);
    std::printf(
        "rmsnorm %lld x %lld float32: %.4f ms, %.0f GB/s (x read once, y written once, w; median of 50)\n",
        static_cast<long long>(rows), static_cast<long long>(cols), ms, bytes / ms / 1e6);
    return check.ok ? 0 : 1;
}
