// monte_carlo: option prices by simulation under geometric Brownian motion, with their standard errors:
//   - a European call, against the Black-Scholes price (the simulation must land within 4 standard errors);
//   - an arithmetic-average Asian call over `steps` monitoring dates, which has no closed form.
// Each path's log price is a cumulative sum over its steps of normals drawn inside the kernel:
//     z = random_normal([paths, steps], seed)            (lazy: never in memory)
//     log S = log S0 + cumsum((r - v^2 / 2) dt + v sqrt(dt) z, axis 1)
//     payoff = max(mean(exp(log S), axis 1) - K, 0) exp(-r T)
// The price is the mean payoff and its standard error std(payoff) / sqrt(paths). The numbers are the same
// bits on the GPU, the host and the CPU reference (random numbers keyed by seed and element index; the
// cumulative sum's order fixed by the shape), which the sample checks at a small size.
// Arguments: [paths] [steps].
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <loom/loom.hpp>
#include <tuple>

using namespace loom;

namespace {

constexpr double S0 = 100.0, K = 100.0, r = 0.05, v = 0.2, T = 1.0;  // WORKLOADS.md's MC1

// Price and standard error of the mean of `payoff` over its paths (float64 statistics of float32 payoffs).
std::tuple<Array, Array> estimate(const Array& payoff) {
    const double paths = static_cast<double>(payoff.shape()[0]);
    const Array p = payoff.astype(float64);
    return {mean(p), stddev(p, {0}, 1.0) / std::sqrt(paths)};
}

// The discounted payoffs of both calls for `paths` x `steps` simulated log prices.
std::tuple<Array, Array> payoffs(std::int64_t paths, std::int64_t steps, std::uint64_t seed, Device dev) {
    const double dt = T / static_cast<double>(steps);
    const Array z = random_normal({paths, steps}, seed, float32, dev);
    const Array log_s = std::log(S0) + cumsum((r - 0.5 * v * v) * dt + v * std::sqrt(dt) * z, 1);
    const double discount = std::exp(-r * T);
    const Array last = log_s.slice({{}, {steps - 1, steps}}).reshape({paths});
    const Array european = maximum(exp(last) - K, 0.0) * discount;
    const Array asian = maximum(mean(exp(log_s), {1}) - K, 0.0) * discount;
    return {european, asian};
}

double black_scholes_call() {
    const double d1 = (std::log(S0 / K) + (r + 0.5 * v * v) * T) / (v * std::sqrt(T));
    const double d2 = d1 - v * std::sqrt(T);
    const auto n = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
    return S0 * n(d1) - K * std::exp(-r * T) * n(d2);
}

double value(const Array& a) {
    return Tensor(a).to_host().item<double>();
}

}  // namespace

int main(int argc, char** argv) {
    const bool gpu = cuda_available();
    const std::int64_t paths = argc > 1 ? std::atoll(argv[1]) : gpu ? std::int64_t{1} << 20 : 1 << 14;
    const std::int64_t steps = argc > 2 ? std::atoll(argv[2]) : 252;
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();
    std::printf(
        "monte_carlo: %lld paths x %lld steps, S0 %.0f, K %.0f, r %.2f, vol %.2f, T %.0f year, on the %s\n",
        static_cast<long long>(paths), static_cast<long long>(steps), S0, K, r, v, T, gpu ? "GPU" : "host");
    try {
        // The same graph at a small size on the CPU reference: the same bits.
        const auto [e_small, a_small] = payoffs(64, steps, 7, dev);
        const testing::Comparison c = testing::check_against_reference({e_small, a_small});
        std::printf("64 paths against the CPU reference: %s\n",
                    c.ok ? "equal within the contract" : "DIFFERENT");
        if (!c.ok) {
            std::printf("%s\n", c.message.c_str());
            return 1;
        }

        const auto [european, asian] = payoffs(paths, steps, 1, dev);
        std::printf("%s", explain({european, asian}, "monte_carlo").c_str());
        const auto [e_price, e_error] = estimate(european);
        const auto [a_price, a_error] = estimate(asian);
        const double ep = value(e_price), ee = value(e_error), exact = black_scholes_call();
        std::printf("European call: %.4f +- %.4f (Black-Scholes %.4f, %.1f standard errors away)\n", ep, ee,
                    exact, std::abs(ep - exact) / ee);
        std::printf("Asian call (arithmetic average of %lld dates): %.4f +- %.4f\n",
                    static_cast<long long>(steps), value(a_price), value(a_error));
        if (!(std::abs(ep - exact) <= 4 * ee)) return 1;

        auto price = function("asian_call", [=](Array seed_offset) {
            const auto [e, a] = payoffs(paths, steps, 1, dev);
            return std::get<0>(estimate(a)) + seed_offset;
        });
        const Tensor zero = Tensor(full({}, 0.0, float64, dev));
        Tensor out = price(zero);
        const Timing t = time_calls([&] { out = price(zero); }, dev, gpu ? 20 : 3, 1);
        std::printf("Asian price per call: %s, %.2f G path steps/s\n", t.to_string().c_str(),
                    static_cast<double>(paths * steps) / (t.median_ms * 1e6));
    } catch (const Error& err) {
        std::printf("monte_carlo: failed: %s\n", err.what());
        return 1;
    }
    return 0;
}
