// cross_entropy: the loss of a classifier's logits against int64 labels, and its gradient, as one traced
// function:
//     loss = cross_entropy(x, labels)                    (the mean over the rows not ignored)
//     dloss/dx = (softmax(x) - one_hot(labels)) / n      (0 in ignored rows; n = the rows not ignored)
// Every 7th label is the ignore index (-100), as padding tokens are.
//
// Checks both against the CPU reference, then the gradient formula itself against central differences of
// the loss in float64 at a few logits, prints the median time of one call (loss and gradient: the logits
// read, the gradient written), and shows the error an out-of-range label raises. Arguments: [rows] [classes].
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <loom/loom.hpp>
#include <tuple>

using namespace loom;

namespace {

constexpr std::int64_t kIgnore = -100;

// The loss and its gradient with respect to the logits.
std::tuple<Array, Array> loss_and_gradient(const Array& x, const Array& labels) {
    const std::int64_t classes = x.shape().back();
    const Array ignored = labels == kIgnore;
    const Array counted = sum(astype(!ignored, x.dtype()));
    const Array hot = one_hot(where(ignored, 0, labels), classes, x.dtype());
    const Array keep = astype(!ignored, x.dtype()).reshape({x.shape()[0], 1});
    return {cross_entropy(x, labels, {.ignore_index = kIgnore}), (softmax(x, -1) - hot) * keep / counted};
}

// Labels uniform in [0, classes), every 7th the ignore index.
Tensor labels_of(std::int64_t rows, std::int64_t classes, Device dev) {
    const Array uniform = random_uniform({rows}, int64, 0.0, static_cast<double>(classes), 2, dev);
    return where(arange(rows, int64, dev) % 7 == 0, kIgnore, uniform);
}

double loss_at(const Tensor& x, const Tensor& labels) {
    return Tensor(cross_entropy(x, labels, {.ignore_index = kIgnore})).to_host().item<double>();
}

// The largest error of the gradient formula against central differences of the loss, in float64 on the
// host, at `samples` logits spread over the matrix, as a fraction of what is allowed: 1e-5 of the gradient,
// plus the central difference's rounding error (about 100 ulp of the loss over h: the loss sums many rows,
// and on a large matrix a gradient element is far below the loss's rounding over h). Below 1 passes.
double check_formula(const Tensor& x32, const Tensor& labels32, int samples) {
    const Tensor x = Tensor(astype(x32, float64)).to_host(), labels = labels32.to_host();
    const Tensor grad = std::get<1>(loss_and_gradient(x, labels));
    const std::int64_t rows = x.shape()[0], classes = x.shape()[1];
    double worst = 0.0;
    for (int s = 0; s < samples; ++s) {
        const std::int64_t i = (s * 7919 + 1) % rows, c = (s * 104729 + 3) % classes, at = i * classes + c;
        Tensor up = x.clone(), down = x.clone();
        const double h = 1e-4;  // rounding error about 1e-16 / h of the loss, truncation about h^2
        static_cast<double*>(up.data())[at] += h;
        static_cast<double*>(down.data())[at] -= h;
        const double lu = loss_at(up, labels), ld = loss_at(down, labels);
        const double numeric = (lu - ld) / (2 * h);
        const double formula = static_cast<const double*>(grad.data())[at];
        const double allowed =
            1e-5 * std::abs(formula) + 100 * 0x1p-52 * std::max(std::abs(lu), std::abs(ld)) / h;
        worst = std::max(worst, std::abs(numeric - formula) / allowed);
    }
    return worst;
}

}  // namespace

int main(int argc, char** argv) {
    const bool gpu = cuda_available();
    const std::int64_t rows = argc > 1 ? std::atoll(argv[1]) : gpu ? 16384 : 256;
    const std::int64_t classes = argc > 2 ? std::atoll(argv[2]) : gpu ? 8192 : 1000;
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();

    const Tensor x = random_normal({rows, classes}, float32, 1, dev);
    const Tensor labels = labels_of(rows, classes, dev);
    std::printf("cross_entropy: [%lld, %lld] float32 logits, int64 labels (every 7th ignored), on the %s\n",
                static_cast<long long>(rows), static_cast<long long>(classes), gpu ? "GPU" : "host");
    auto step = function("cross_entropy_step", loss_and_gradient);
    try {
        std::array<Tensor, 2> result = step(x, labels);  // the loss and the gradient
        const auto [loss_expr, grad_expr] = loss_and_gradient(x, labels);
        std::printf("%s", explain({loss_expr, grad_expr}, "cross_entropy_step").c_str());
        const testing::Comparison c =
            testing::check_against_reference({loss_expr.node(), grad_expr.node()}, {result[0], result[1]});
        std::printf("loss %.6f; against the CPU reference: %s\n", result[0].to_host().item<float>(),
                    c.ok ? "equal within the contract's tolerance" : "DIFFERENT");
        if (!c.ok) {
            std::printf("%s\n", c.message.c_str());
            return 1;
        }
        const double formula = check_formula(x, labels, 8);
        std::printf(
            "gradient formula against central differences (float64): largest error %.2g of the allowed\n",
            formula);
        if (!(formula < 1.0)) return 1;

        const Timing t = time_calls([&] { result = step(x, labels); }, dev, gpu ? 50 : 3, 1);
        const double bytes = 4.0 * static_cast<double>(rows * classes) * 2 + 8.0 * static_cast<double>(rows);
        std::printf("loss and gradient: %s, %.0f GB/s (logits read, gradient written)\n",
                    t.to_string().c_str(), bytes / (t.median_ms * 1e6));
    } catch (const Error& err) {
        std::printf("cross_entropy: failed: %s\n", err.what());
        return 1;
    }

    // A label outside [0, classes) is never read: the error names cross_entropy, the label and the line.
    Tensor bad = labels.to_host();
    static_cast<std::int64_t*>(bad.data())[1] = classes;
    try {
        (void)Tensor(cross_entropy(x, bad.to(dev))).to_host();
        std::printf("an out-of-range label raised nothing\n");
        return 1;
    } catch (const Error& err) {
        std::printf("an out-of-range label: %s\n", err.what());
    }
    return 0;
}
