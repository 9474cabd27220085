// transpose: a materialized transpose of a 16384 x 16384 float32 matrix, `Tensor t = transpose(x)` as a user
// writes it, with a per-column bias fused on the output side: y = transpose(x) + b[j].
//
// Loom plans it as a tiled kernel: each block reads a 64 x 64 tile of x along x's rows (coalesced) into
// shared memory, whose rows are padded to an odd number of 4-byte words (no bank conflicts), and writes the
// tile of y along y's rows (coalesced). loom::explain prints the plan that runs (with a GPU, the tile);
// LOOM_DUMP=cuda writes the kernel.
//
// With a GPU: evaluates both on the device, checks them against the CPU reference (a move and an exact
// add: bit for bit) and prints GB/s (8 bytes per element: x read once, y written once; CUDA events after
// warm-up). Without one: a small matrix on the host, checked against the reference, and the tiled kernel
// compiled with NVRTC.
// Arguments: [rows] [cols].
#include <cstdio>
#include <cstdlib>
#include <loom/loom.hpp>

using namespace loom;

int main(int argc, char** argv) {
    const bool gpu = cuda_available();
    const std::int64_t rows = argc > 1 ? std::atoll(argv[1]) : (gpu ? 16384 : 300);
    const std::int64_t cols = argc > 2 ? std::atoll(argv[2]) : (gpu ? 16384 : 257);
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();

    const Tensor x = random_normal({rows, cols}, float32, next_seed(), dev);
    const Tensor b = random_normal({rows}, float32, next_seed(), dev);
    const Array t = transpose(x);
    const Array y = transpose(x) + b;
    std::printf("transpose: %lld x %lld float32\n", static_cast<long long>(rows),
                static_cast<long long>(cols));
    try {
        std::printf("%s", explain({y}, "transpose_bias").c_str());
    } catch (const Error& err) {
        std::printf("explain: %s\n", err.what());
    }

    Tensor out_t = Tensor::empty({cols, rows}, float32, dev);
    Tensor out_y = Tensor::empty({cols, rows}, float32, dev);
    testing::poison(out_t);
    testing::poison(out_y);
    try {
        assign(out_t, t);
        assign(out_y, y);
        if (gpu) synchronize();
    } catch (const Error& err) {
        std::printf("transpose: evaluation failed: %s\n", err.what());
        return 1;
    }
    const auto check_t = testing::check_against_reference({t.node()}, {out_t});
    const auto check_y = testing::check_against_reference({y.node()}, {out_y});
    std::printf("check against the CPU reference: transpose %s, transpose + bias %s\n",
                check_t.ok ? "PASS" : check_t.message.c_str(), check_y.ok ? "PASS" : check_y.message.c_str());
    const bool ok = check_t.ok && check_y.ok;
    if (!gpu) {
        try {
            const CompileReport rep = compile({y}, "transpose_bias");
            std::printf("the tiled kernel compiled with NVRTC for %s in %.0f ms\n", rep.arch.c_str(),
                        rep.compile_ms);
        } catch (const Error& err) {
            std::printf("compile: %s\n", err.what());
        }
        std::printf("no CUDA GPU was found: evaluated on the host, not on a GPU\n");
        return ok ? 0 : 1;
    }
    const double bytes = 8.0 * static_cast<double>(rows) * static_cast<double>(cols);
    const double ms_t = median_ms([&] { assign(out_t, t); });
    const double ms_y = median_ms([&] { assign(out_y, y); });
    std::printf("transpose         %.4f ms, %.0f GB/s (x read once, the result written once; median of 50)\n",
                ms_t, bytes / ms_t / 1e6);
    std::printf("transpose + b[j]  %.4f ms, %.0f GB/s (b's %lld floats not counted)\n", ms_y,
                bytes / ms_y / 1e6, static_cast<long long>(rows));
    return ok ? 0 : 1;
}
