// gpt2_block: the forward pass of one GPT-2 small transformer block, written from its layer list as one
// traced function (B sequences of T tokens, C = 768 channels, 12 heads of 64):
//     h   = layernorm(x, ln1)                    qkv = h · Wqkv + bqkv           (one projection, [B, T, 3C])
//     q, k, v = heads of qkv (views: sliced, reshaped and permuted, never copied)
//     y   = attention(q, k, v, causal)           (or written out: softmax(mask(q kᵀ / 8)) · v)
//     x2  = x + (y as [B, T, C]) · Wproj + bproj
//     out = x2 + gelu_tanh(layernorm(x2, ln2) · Wfc + bfc) · Wfp + bfp
// Weights are drawn ~ N(0, 0.02) (the layernorm gains 1 + N(0, 0.1)), the input ~ N(0, 1).
//
// Prints the plan's kernels (explain), checks the block against the CPU reference at a small size (B = 1,
// T = 64) and against a float64 evaluation of the same block at the size run, and prints the time per call.
// Arguments: [B] [T] [f32|bf16] [attention|written|rewrite]: `written` evaluates the written-out attention as
// written, `rewrite` the same under Options::attention_rewrite (one attention kernel again).
#include "gpt2_block.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <loom/loom.hpp>
#include <string>
#include <vector>

using namespace loom;
using namespace gpt2;

namespace {

std::vector<Array> arrays(const std::vector<Tensor>& t) {
    return {t.begin(), t.end()};
}

// The largest |a - b| over the largest |b|, both evaluated and brought to the host in float64.
double relative_difference(const Array& a, const Array& b) {
    const Tensor x = Tensor(astype(a, float64)).to_host(), y = Tensor(astype(b, float64)).to_host();
    const auto* px = static_cast<const double*>(x.data());
    const auto* py = static_cast<const double*>(y.data());
    double worst = 0.0, scale = 0.0;
    for (std::int64_t i = 0; i < y.numel(); ++i) {
        worst = std::max(worst, std::abs(px[i] - py[i]));
        scale = std::max(scale, std::abs(py[i]));
    }
    return std::isfinite(worst) ? worst / scale : INFINITY;
}

}  // namespace

int main(int argc, char** argv) {
    const bool gpu = cuda_available();
    const std::int64_t B = argc > 1 ? std::atoll(argv[1]) : gpu ? 8 : 1;
    const std::int64_t T = argc > 2 ? std::atoll(argv[2]) : gpu ? 1024 : 64;
    const DType dt = argc > 3 && std::strcmp(argv[3], "bf16") == 0 ? bfloat16 : float32;
    const std::string form_name = argc > 4 ? argv[4] : "attention";
    const Form form = form_name == "written"   ? Form::Written
                      : form_name == "rewrite" ? Form::Rewrite
                                               : Form::Attention;
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();
    std::printf("gpt2_block: B %lld, T %lld, C %lld, %lld heads, %s, attention %s, on the %s\n",
                static_cast<long long>(B), static_cast<long long>(T), static_cast<long long>(C),
                static_cast<long long>(NH), name(dt).data(), form_name.c_str(), gpu ? "GPU" : "host");

    const Weights w = weights(dt, dev);
    const Tensor x = Tensor(astype(random_normal({B, T, C}, float32, 1, dev), dt));
    const OptionsScope scope(options_for(form));
    auto step = traced_block(form, dev);
    const auto call = [&](const Tensor& in) { return gpt2::call(step, in, w); };
    try {
        const Array expr = block(x, arrays(w.all), form, dev);
        std::printf("%s", explain({expr}, "gpt2_block").c_str());
        Tensor out = call(x);

        // The same block at B = 1, T = 64 against the CPU reference (within the contract's tolerance).
        const Tensor small = x.slice({{0, 1}, {0, std::min<std::int64_t>(T, 64)}}).clone();
        // Under the rewrite the kernels compute attention()'s order, so the reference evaluates that form.
        const Array small_expr =
            block(small, arrays(w.all), form == Form::Rewrite ? Form::Attention : form, dev);
        const testing::Comparison c = testing::check_against_reference({small_expr.node()}, {call(small)});
        std::printf("B = 1, T = %lld against the CPU reference: %s\n",
                    static_cast<long long>(small.shape()[1]),
                    c.ok ? "equal within the contract's tolerance" : "DIFFERENT");
        if (!c.ok) {
            std::printf("%s\n", c.message.c_str());
            return 1;
        }

        // The whole block in float64 (weights and input widened exactly; attention written out, since the
        // attention op takes float32 and halves), against this run.
        std::vector<Tensor> w64;
        for (const Tensor& t : w.all) w64.push_back(Tensor(astype(t, float64)));
        const double diff =
            relative_difference(out, block(Tensor(astype(x, float64)), arrays(w64), Form::Written, dev));
        std::printf("against a float64 evaluation: largest difference %.2g of the largest output\n", diff);
        if (dt == float32 && !(diff < 1e-4)) return 1;

        const Timing t = time_calls([&] { out = call(x); }, dev, gpu ? 20 : 3, 1);
        const double flops = 2.0 * static_cast<double>(B * T) * C * 12 * C +
                             4.0 * static_cast<double>(B * NH * HS) * static_cast<double>(T * (T + 1)) / 2;
        std::printf("per call: %s, %.1f TFLOP/s of the projections and causal attention\n",
                    t.to_string().c_str(), flops / (t.median_ms * 1e9));
    } catch (const Error& err) {
        std::printf("gpt2_block: failed: %s\n", err.what());
        return 1;
    }
    return 0;
}
