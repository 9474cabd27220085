// matmul_bias_gelu: a dense layer, y = gelu(A @ B + bias), with A and B 4096 x 4096 float32 and a bias of
// 4096 floats broadcast along the rows, written as a traced function (loom::function) as a model would.
//
// Loom plans the product as one CUDA-core kernel (docs/semantics.md, section 12) whose blocks each compute a
// tile of the result in registers and apply the bias and GELU to it before storing it: A and B are read
// through shared memory, y is written once, and nothing between the product and the activation goes to
// memory. loom::explain prints the plan that runs (with a GPU, the tile: rows x columns x K step).
//
// With a GPU: prints the plan and the number of kernels, evaluates y, and checks 16 sampled rows against
// the CPU reference, evaluated on those rows of A alone (each output's order of summation depends on K only,
// so a row of A @ B is the same sum either way): the pre-activation A @ B + bias bit for bit, y within the
// ulps the contract allows GELU; then prints TFLOP/s (2 n^3 flops; CUDA events, the median of 20 calls after
// warm-up). Without one: the host plan (the product and its epilogue on the LLVM back end), the GPU kernel
// compiled with NVRTC, the same checks for a small matrix on the host, and a note that no GPU was found.
// Arguments: [n] (default 4096 with a GPU, 256 without).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <loom/loom.hpp>
#include <vector>

using namespace loom;

namespace {

// Rows `rows` of the matrix `t` (any device), copied into one contiguous host tensor.
Tensor host_rows(const Tensor& t, const std::vector<std::int64_t>& rows) {
    const std::int64_t cols = t.shape()[1];
    Tensor out = Tensor::host({static_cast<std::int64_t>(rows.size()), cols}, t.dtype());
    const std::size_t bytes = static_cast<std::size_t>(cols) * itemsize(t.dtype());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Tensor row = t.slice({{rows[i], rows[i] + 1}}).to_host();
        std::memcpy(static_cast<char*>(out.data()) + i * bytes, row.data(), bytes);
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const bool gpu = cuda_available();
    const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : (gpu ? 4096 : 256);
    if (n < 1) {
        std::fprintf(stderr, "usage: matmul_bias_gelu [n >= 1]\n");
        return 2;
    }
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();
    const Tensor A = random_normal({n, n}, float32, next_seed(), dev);
    const Tensor B = random_normal({n, n}, float32, next_seed(), dev);
    const Tensor bias = random_normal({n}, float32, next_seed(), dev);
    auto layer =
        loom::function("matmul_bias_gelu", [](Array a, Array b, Array c) { return gelu(matmul(a, b) + c); });
    std::printf("matmul_bias_gelu: gelu(A @ B + bias), A and B %lld x %lld float32, bias [%lld]\n",
                static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(n));

    // The plan of the same expression: one kernel for the product, the bias and GELU.
    const Array pre = matmul(A, B) + bias;
    const Array y = gelu(pre);
    int kernels = 0;
    try {
        std::printf("%s", explain({y}, "matmul_bias_gelu").c_str());
        const CompileReport rep = compile({y}, "matmul_bias_gelu");
        kernels = rep.kernels;
        std::printf(
            "gelu(A @ B + bias) runs as %d kernel%s (%s for %s)\n", rep.kernels, rep.kernels == 1 ? "" : "s",
            rep.disk_hits > 0 ? "from the disk kernel cache" : "compiled with NVRTC", rep.arch.c_str());
    } catch (const Error& err) {
        std::printf("the GPU plan: %s\n", err.what());
    }

    Tensor out = Tensor::empty({n, n}, float32, dev);
    testing::poison(out);
    Tensor pre_out, y_out;
    try {
        layer(A, B, bias, out);      // first call: trace, plan, generate, compile, launch
        auto [p, q] = eval(pre, y);  // the pre-activation too, for the exact check (one kernel, two outputs)
        pre_out = p;
        y_out = q;
        if (gpu) synchronize();
    } catch (const Error& err) {
        std::printf("matmul_bias_gelu: evaluation failed: %s\n", err.what());
        return 1;
    }

    // 16 rows, the first and the last among them, against the reference of those rows of A.
    std::vector<std::int64_t> rows;
    const std::int64_t samples = std::min<std::int64_t>(16, n);
    for (std::int64_t i = 0; i < samples; ++i) rows.push_back(samples == 1 ? 0 : i * (n - 1) / (samples - 1));
    const Tensor a_rows = host_rows(A, rows), b_host = B.to_host(), bias_host = bias.to_host();
    const Array pre_ref = matmul(a_rows, b_host) + bias_host;
    const Array y_ref = gelu(pre_ref);
    const testing::Comparison exact =
        testing::check_against_reference({pre_ref.node()}, {host_rows(pre_out, rows)});
    const testing::Comparison act = testing::check_against_reference({y_ref.node()}, {host_rows(out, rows)});
    const testing::Comparison same =
        testing::compare(y_out, out, testing::Tolerance::exact(), "gelu beside the pre-activation");
    std::printf(
        "check of %lld rows against the CPU reference: A @ B + bias %s (%s), gelu %s (within %g ulp)\n",
        static_cast<long long>(rows.size()), exact.ok ? "PASS" : exact.message.c_str(),
        testing::tolerance_for(pre_ref.node()).is_exact() ? "bit for bit" : "within its tolerance",
        act.ok ? "PASS" : act.message.c_str(), testing::tolerance_for(y_ref.node()).ulps);
    std::printf("the traced call and eval(pre, y) give the same bits: %s\n",
                same.ok ? "PASS" : same.message.c_str());
    const bool ok = exact.ok && act.ok && same.ok;
    if (!gpu) {
        std::printf(
            "no CUDA GPU was found: evaluated on the host (the product on the host back end), not on a "
            "GPU\n");
        return ok ? 0 : 1;
    }
    if (kernels != 1) std::printf("matmul_bias_gelu: expected one kernel, the plan has %d\n", kernels);

    const double ms = median_ms([&] { layer(A, B, bias, out); }, 20, 3);
    const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    std::printf(
        "matmul_bias_gelu %lld x %lld x %lld float32: %.3f ms, %.1f TFLOP/s (2 n^3 flops; median of 20 calls "
        "after 3 warm-up calls, CUDA events)\n",
        static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(n), ms,
        flops / ms / 1e9);
    return ok && kernels == 1 ? 0 : 1;
}
