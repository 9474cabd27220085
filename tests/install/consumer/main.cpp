// Uses the installed Loom: builds a lazy expression on host tensors, evaluates it (on the host: the CPU
// reference evaluator, no GPU needed), checks the values and the error paths (a GPU entry point without a
// GPU, as in a host-only Loom, among them), and prints "ok".
#include <cstdio>
#include <loom/loom.hpp>
#include <string>

int main() {
    using namespace loom;
    // x: 4 x 3 float32, values -5 .. 6; bias: a row of 3, broadcast over the rows.
    Tensor x = Tensor::host({4, 3}, float32);
    Tensor bias = Tensor::host({3}, float32);
    auto* px = static_cast<float*>(x.data());
    auto* pb = static_cast<float*>(bias.data());
    for (int k = 0; k < 12; ++k) px[k] = static_cast<float>(k - 5);
    for (int k = 0; k < 3; ++k) pb[k] = 0.25f * static_cast<float>(k);

    Array y = relu(x * 1.5 + bias);  // lazy; 1.5 is a weak scalar: y stays float32
    Tensor out = y;                  // evaluates here
    if (out.dtype() != float32 || out.shape() != Shape{4, 3}) {
        std::fprintf(stderr, "consumer: result is %s %s, expected [4, 3] float32\n",
                     to_string(out.shape()).c_str(), std::string(name(out.dtype())).c_str());
        return 1;
    }
    for (int k = 0; k < 12; ++k) {
        const double v = static_cast<double>(k - 5) * 1.5 + 0.25 * (k % 3);  // exact in float32
        const double want = v > 0 ? v : 0.0;
        if (out.get_double(k) != want) {
            std::fprintf(stderr, "consumer: element %d is %g, expected %g\n", k, out.get_double(k), want);
            return 1;
        }
    }
    // A reduction read back as a C++ value: sum of the row maxima (0, 0.5, 5, 9.5).
    const float total = sum(max(y, -1)).item<float>();
    if (total != 15.0f) {
        std::fprintf(stderr, "consumer: sum of row maxima is %g, expected 15\n", static_cast<double>(total));
        return 1;
    }
    // User errors arrive as loom::Error naming the API.
    try {
        Tensor bad = x + Tensor::host({4}, float32);
        std::fprintf(stderr, "consumer: a [4, 3] + [4] expression did not throw\n");
        return 1;
    } catch (const Error& e) {
        if (std::string(e.what()).rfind("add(): ", 0) != 0) {
            std::fprintf(stderr, "consumer: unexpected error message: %s\n", e.what());
            return 1;
        }
    }
    // Without a GPU (always, in a host-only Loom: LOOM_HAS_CUDA 0) a GPU entry point throws NoDeviceError.
    if (LOOM_HAS_CUDA == 0 && cuda_available()) {
        std::fprintf(stderr, "consumer: a host-only Loom reports a CUDA device\n");
        return 1;
    }
    if (!cuda_available()) {
        try {
            Stream s;
            std::fprintf(stderr, "consumer: a Stream was made without a GPU\n");
            return 1;
        } catch (const NoDeviceError& e) {
            if (std::string(e.what()).rfind("no CUDA device found: Stream", 0) != 0) {
                std::fprintf(stderr, "consumer: unexpected error message: %s\n", e.what());
                return 1;
            }
        }
    }
    std::printf("ok\n");
    return 0;
}
