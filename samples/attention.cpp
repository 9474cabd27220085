// attention: causal attention over GPT-2 small's heads, as one kernel, against the written-out form:
//     y = attention(q, k, v, {.causal = CausalMask::TopLeft})
//     written = matmul(softmax(where(col <= row, q kᵀ / sqrt(D), -inf)), v)
// with q, k and v sliced from one fused [B, T, 3, H, D] projection and permuted to [B, H, T, D] (read in
// place, no copy). The op's order is fixed by the shapes (docs/semantics.md, "Attention"); the written-out
// form runs as three kernels over a materialized [B, H, T, T] score tensor, in its own order, so the two
// agree within float32 rounding, not bit for bit.
//
// Prints both plans, evaluates both on the GPU when there is one (else on the host), checks the op against
// the CPU reference (bit for bit in float32) and against the written-out form, and prints the median time of
// each. Arguments: [B] [T] [dtype: f32 | bf16] (default 8 1024 f32 on a GPU, 1 64 f32 on the host).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <loom/loom.hpp>
#include <string>

using namespace loom;

int main(int argc, char** argv) {
    const bool gpu = cuda_available();
    const std::int64_t B = argc > 1 ? std::atoll(argv[1]) : gpu ? 8 : 1;
    const std::int64_t T = argc > 2 ? std::atoll(argv[2]) : gpu ? 1024 : 64;
    const DType dt = argc > 3 && std::strcmp(argv[3], "bf16") == 0 ? bfloat16 : float32;
    const std::int64_t H = 12, D = 64;
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();

    const Tensor qkv = random_normal({B, T, 3, H, D}, dt, 1, dev);
    const Array x(qkv);
    const auto head = [&](std::int64_t j) {
        return x.slice({{}, {}, {j, j + 1}}).reshape({B, T, H, D}).permute({0, 2, 1, 3});
    };
    const Array q = head(0), k = head(1), v = head(2);
    const Array y = attention(q, k, v, {.causal = CausalMask::TopLeft});
    const Array row = arange(T, int64, dev).reshape({T, 1}), col = arange(T, int64, dev).reshape({1, T});
    const Array scores = matmul(q, k.transposed()) * (1.0 / std::sqrt(static_cast<double>(D)));
    const Array written = matmul(softmax(where(col <= row, scores, -INFINITY), -1).astype(dt), v);
    std::printf("attention: causal, q, k, v [%lld, %lld, %lld, %lld] %s (heads of one qkv), on the %s\n",
                static_cast<long long>(B), static_cast<long long>(H), static_cast<long long>(T),
                static_cast<long long>(D), name(dt).data(), gpu ? "GPU" : "host");
    std::printf("%s", explain({y}, "attention").c_str());
    std::printf("%s", explain({written}, "written_out").c_str());

    Tensor out = Tensor::empty(y.shape(), dt, dev), out_written = Tensor::empty(y.shape(), dt, dev);
    try {
        assign(out, y);
        assign(out_written, written);
        const testing::Comparison c = testing::check_against_reference({y});
        std::printf("attention() against the CPU reference: %s\n",
                    c.ok ? "equal within the contract" : "DIFFERENT");
        if (!c.ok) {
            std::printf("%s\n", c.message.c_str());
            return 1;
        }
        // The written-out form, in its own order: the largest difference relative to max |v|.
        const Tensor a = out.to_host(), w = out_written.to_host();
        const Tensor a32 = Array(a).astype(float32), w32 = Array(w).astype(float32);  // on the host
        const float* pa = static_cast<const float*>(a32.data());
        const float* pw = static_cast<const float*>(w32.data());
        double worst = 0;
        for (std::int64_t i = 0; i < a32.numel(); ++i)
            worst = std::max(worst, std::abs(double(pa[i]) - pw[i]));
        const double tol = dt == float32 ? 1e-4 : 5e-2;
        std::printf("against the written-out form: largest difference %.3g (%s %.0e)\n", worst,
                    worst <= tol ? "within" : "BEYOND", tol);
        if (!(worst <= tol)) return 1;
    } catch (const Error& err) {
        std::printf("attention: evaluation failed: %s\n", err.what());
        return 1;
    }

    const int reps = gpu ? 50 : 3;
    const Timing t = time_calls([&] { assign(out, y); }, dev, reps, gpu ? 5 : 1);
    const Timing tw = time_calls([&] { assign(out_written, written); }, dev, reps, gpu ? 5 : 1);
    const double flops = 4.0 * B * H * D * T * (T + 1) / 2;
    std::printf("attention(): %s; %.1f TFLOP/s of the causal products\n", t.to_string().c_str(),
                flops / (t.median_ms * 1e9));
    std::printf("written out: %s\n", tw.to_string().c_str());
    return 0;
}
