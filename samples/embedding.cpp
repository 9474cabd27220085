// embedding: an embedding lookup followed by a layernorm, the first layer of a language model:
//     rows = take(table, ids, 0);   y = layernorm(rows, w, b, 1e-5)
// with 8192 int64 ids into a [50000, 256] float32 table. One kernel: the normalization reads each gathered
// row itself, at the position its id names (docs/semantics.md, "Gathers"); an id outside [-50000, 50000) is
// never read and raises loom::Error naming take() and this file's line.
//
// Prints the fusion plan, evaluates y on the GPU when there is one (else on the host), checks it against the
// CPU reference, prints the median time of one evaluation (loom::time_calls) and the bytes moved per second
// (the gathered rows read once, y written once, the ids, w and b read once), then shows the error an
// out-of-range id raises. Arguments: [ids] [table rows] [columns].
#include <cstdio>
#include <cstdlib>
#include <loom/loom.hpp>
#include <span>
#include <vector>

using namespace loom;

int main(int argc, char** argv) {
    const bool gpu = cuda_available();
    const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 8192;
    const std::int64_t rows = argc > 2 ? std::atoll(argv[2]) : 50000;
    const std::int64_t cols = argc > 3 ? std::atoll(argv[3]) : 256;
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();

    const Tensor table = random_normal({rows, cols}, float32, 1, dev);
    const Tensor w = random_normal({cols}, float32, 2, dev), b = random_normal({cols}, float32, 3, dev);
    // Ids uniform in [0, rows): the floor of a uniform draw in [0, rows), as int64.
    const Tensor ids = random_uniform({n}, int64, 0.0, static_cast<double>(rows), 4, dev);
    const Array y = layernorm(take(table, ids, 0), w, b, 1e-5);
    std::printf("embedding: %lld int64 ids into a [%lld, %lld] float32 table, then layernorm, on the %s\n",
                static_cast<long long>(n), static_cast<long long>(rows), static_cast<long long>(cols),
                gpu ? "GPU" : "host");
    std::printf("%s", explain({y}, "embedding").c_str());

    Tensor out = Tensor::empty({n, cols}, float32, dev);
    try {
        assign(out, y);
        if (gpu) synchronize();
        const testing::Comparison c = testing::check_against_reference({y});
        std::printf("against the CPU reference: %s\n",
                    c.ok ? "equal within the contract's tolerance" : "DIFFERENT");
        if (!c.ok) {
            std::printf("%s\n", c.message.c_str());
            return 1;
        }
    } catch (const Error& err) {
        std::printf("embedding: evaluation failed: %s\n", err.what());
        return 1;
    }

    const Timing t = time_calls([&] { assign(out, y); }, dev, gpu ? 50 : 10, gpu ? 5 : 2);
    const double bytes = static_cast<double>(2 * n * cols * 4 + n * 8 + 2 * cols * 4);
    std::printf("one evaluation: %s; %.1f GB/s\n", t.to_string().c_str(), bytes / (t.median_ms * 1e6));

    // An id out of range: never read; raised with the line of take() above.
    const std::vector<std::int64_t> bad{0, rows, 1};
    const Tensor bad_ids = from_host(std::span<const std::int64_t>(bad), {3}, int64, dev);
    try {
        const Tensor r = layernorm(take(table, bad_ids, 0), w, b, 1e-5);
        (void)r.to_host();
        std::printf("an out-of-range id raised nothing\n");
        return 1;
    } catch (const Error& err) {
        std::printf("an out-of-range id: %s\n", err.what());
    }
    return 0;
}
