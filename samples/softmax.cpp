// softmax: the softmax of every row of a 16384 x 8192 float32 matrix, written with max, exp and sum as
// one would by hand (the row maximum is subtracted so that exp stays in range):
//     m = max(x, -1, keepdims);  e = exp(x - m);  y = e / sum(e, -1, keepdims)
// This is the graph loom::softmax(x) builds (docs/semantics.md, "Softmax and normalizations").
//
// With a GPU: prints the fusion plan (loom::explain), evaluates y on the device, checks it against the CPU
// reference and prints GB/s (8 bytes per element: x read once, y written once; CUDA events after warm-up).
// Without one: evaluates a small matrix on the host (the LLVM back end, or the CPU reference), checks that
// every row sums to 1 and compiles the kernel with NVRTC.
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

    Tensor x = random_normal({rows, cols}, float32, next_seed(), dev);
    const Array m = max(x, -1, /*keepdims=*/true);
    const Array e = exp(x - m);
    const Array y = e / sum(e, -1, /*keepdims=*/true);
    std::printf("softmax: %lld x %lld float32; the same graph as loom::softmax(x): %s\n",
                static_cast<long long>(rows), static_cast<long long>(cols),
                y.node() == softmax(x).node() ? "yes" : "no");

    try {
        std::printf("%s", explain({y}, "softmax").c_str());
    } catch (const Error& err) {
        std::printf("explain: %s\n", err.what());
    }

    Tensor out = Tensor::empty({rows, cols}, float32, dev);
    testing::poison(out);
    try {
        assign(out, y);
        if (gpu) synchronize();
    } catch (const Error& err) {
        std::printf("softmax: evaluation failed: %s\n", err.what());
        return 1;
    }

    if (!gpu) {
        double worst = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
            double s = 0;
            for (std::int64_t c = 0; c < cols; ++c) s += out.get_double(r * cols + c);
            worst = std::max(worst, std::fabs(s - 1.0));
        }
        const bool ok = worst < 1e-5;
        std::printf("host: y[0] = %.9g; rows sum to 1 within %.2e: %s\n", out.get_double(0), worst,
                    ok ? "PASS" : "FAIL");
        try {
            const CompileReport rep = compile({y}, "softmax");
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
    const double bytes = 8.0 * static_cast<double>(rows) * static_cast<double>(cols);
    std::printf(
        "softmax %lld x %lld float32: %.4f ms, %.0f GB/s (x read once, y written once; median of 50)\n",
        static_cast<long long>(rows), static_cast<long long>(cols), ms, bytes / ms / 1e6);
    return check.ok ? 0 : 1;
}
