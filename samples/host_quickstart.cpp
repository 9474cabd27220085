// host_quickstart: Loom on a machine without a GPU. Host tensors (Device::cpu()) evaluate through the LLVM
// back end (the same fusion plans as on the GPU, JIT-compiled, vectorized, on all cores) or, where it is
// not built, through the CPU reference, with the same bits either way. No CUDA device is needed at run time.
// Prints a fused result, a reduction, a traced function's call into existing memory and a timing, and
// checks each against the CPU reference. Exit code 0 when every check passes.
#include <cstdio>
#include <loom/loom.hpp>

using namespace loom;

int main() {
    // [readme quickstart]
    const Device cpu = Device::cpu();
    Tensor x = random_normal({1 << 20}, float32, /*seed=*/1, cpu);  // host memory
    Array y = relu(x * 1.5 + 0.25);                                 // lazy: nothing has run
    Tensor out = y;                 // one fused host kernel: x read once, out written once
    Array energy = sum(out * out);  // a reduction fused with its producer
    Tensor total = energy;          // rank 0
    std::printf("sum(relu(x * 1.5 + 0.25)^2) over 2^20 elements: %.6g\n", total.item<double>());

    Tensor x2 = random_normal({1024, 512}, float32, 2, cpu), scale = random_normal({512}, float32, 3, cpu);
    Tensor bias = random_normal({512}, float32, 4, cpu), y2 = Tensor::empty({1024, 512}, float32, cpu);
    auto scale_bias_act = loom::function("scale_bias_act",  // traced once per kind of arguments
                                         [](Array v, Array s, Array b) { return gelu(v * s + b); });
    scale_bias_act(x2, scale, bias, y2);  // into y2: no allocation

    const Timing t = time_calls([&] { scale_bias_act(x2, scale, bias, y2); }, cpu);
    std::printf("scale_bias_act on [1024, 512] float32: %s\n", t.to_string().c_str());
    // [/readme quickstart]

    const testing::Comparison a = testing::check_against_reference({y, energy});
    const testing::Comparison b = testing::compare(y2, Tensor(gelu(Array(x2) * scale + bias)),
                                                   testing::Tolerance::exact(), "scale_bias_act");
    std::printf("against the CPU reference: %s; the traced call against assign(): %s\n",
                a.ok ? "PASS" : a.message.c_str(), b.ok ? "PASS (bit for bit)" : b.message.c_str());
    return a.ok && b.ok ? 0 : 1;
}
