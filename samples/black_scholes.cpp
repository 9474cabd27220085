// black_scholes: European call and put prices (Black and Scholes 1973) for a book of options, as ONE
// kernel with two outputs: spot S, strike K and expiry T are read once, call and put written once.
//
// The standard normal CDF is N(d) = 0.5 (1 + erf(d / sqrt 2)). Inputs have realistic ranges: S and K
// uniform in [10, 110) (currency units), T uniform in [0.1, 2.1) years; rate r = 2%, volatility v = 30%.
// With a GPU: checks both outputs against the CPU reference and prints GB/s (20 bytes per option).
// Without one: prices a small book on the CPU reference and compiles the kernel with NVRTC.
#include <cstdio>
#include <loom/loom.hpp>

using namespace loom;

int main(int argc, char** argv) {
    const bool gpu = cuda_available();
    const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : (gpu ? std::int64_t{1} << 26 : 1 << 12);
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();
    const double r = 0.02, v = 0.3;

    auto price = loom::function("black_scholes", [r, v](Array S, Array K, Array T) {
        Array sq = sqrt(T);
        Array d1 = (log(S / K) + (r + 0.5 * v * v) * T) / (v * sq);
        Array d2 = d1 - v * sq;
        Array n1 = 0.5 * (1.0 + erf(d1 * 0.7071067811865476));
        Array n2 = 0.5 * (1.0 + erf(d2 * 0.7071067811865476));
        Array disc = K * exp(-r * T);
        return std::tuple{S * n1 - disc * n2, disc * (1.0 - n2) - S * (1.0 - n1)};
    });

    Tensor S = random_uniform({n}, float32, 10, 110, next_seed(), dev);
    Tensor K = random_uniform({n}, float32, 10, 110, next_seed(), dev);
    Tensor T = random_uniform({n}, float32, 0.1, 2.1, next_seed(), dev);
    Tensor call = Tensor::empty({n}, float32, dev), put = Tensor::empty({n}, float32, dev);
    testing::poison(call);
    testing::poison(put);
    price(S, K, T, call, put);
    if (gpu) synchronize();

    // The same formula as lazy Arrays, evaluated by the CPU reference, is the check.
    Array sq = sqrt(T);
    Array d1 = (log(Array(S) / K) + (r + 0.5 * v * v) * Array(T)) / (v * sq);
    Array d2 = d1 - v * sq;
    Array n1 = 0.5 * (1.0 + erf(d1 * 0.7071067811865476));
    Array n2 = 0.5 * (1.0 + erf(d2 * 0.7071067811865476));
    Array disc = K * exp(-r * Array(T));
    const auto check = testing::check_against_reference(
        {(S * n1 - disc * n2).node(), (disc * (1.0 - n2) - S * (1.0 - n1)).node()}, {call, put});
    std::printf(
        "black_scholes: %lld options, call[0] = %.6f, put[0] = %.6f; check against the CPU reference: %s\n",
        static_cast<long long>(n), call.to_host().get_double(0), put.to_host().get_double(0),
        check.ok ? "PASS" : check.message.c_str());
    if (gpu) {
        const double ms = median_ms([&] { price(S, K, T, call, put); });
        std::printf("black_scholes: %.4f ms, %.0f GB/s (20 bytes per option)\n", ms,
                    20.0 * static_cast<double>(n) / ms / 1e6);
    } else {
        const CompileReport rep =
            compile({S * n1 - disc * n2, disc * (1.0 - n2) - S * (1.0 - n1)}, "black_scholes");
        std::printf(
            "no CUDA GPU was found: priced on the CPU reference; the kernel (%d for both outputs) compiled "
            "with NVRTC for %s in %.0f ms\n",
            rep.kernels, rep.arch.c_str(), rep.compile_ms);
    }
    return check.ok ? 0 : 1;
}
