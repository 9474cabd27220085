// adam: Adam steps (Kingma and Ba; torch.optim.Adam without weight decay) over float32 parameters, one
// traced function per step that updates the parameters p and the moments m and v in place and advances
// the step counter t:
//     t1 = t + 1
//     m  = b1 m + (1 - b1) g
//     v  = b2 v + ((1 - b2) g) g
//     p  = p - lr (m / (1 - b1^t1)) / (sqrt(v / (1 - b2^t1)) + eps)
// t is a 0-d float32 tensor on the device, so the bias corrections 1 - b^t1 change every step while the
// kernels stay the same: nothing is recompiled and nothing is copied from the host per step (PyTorch's
// "capturable" Adam keeps its step on the device for the same reason). lr, b1, b2 and eps are C++ values
// captured when the function is traced; a learning-rate schedule would pass lr as a 0-d tensor too.
//
// The plan (printed by the first call with LOOM_EXPLAIN=fusion) is one pointwise kernel that reads p, g, m,
// v and t and writes p, m and v (28 bytes per parameter), and one single-thread kernel for t1; the step's
// outputs alias its inputs element by element, so nothing goes through a temporary.
//
// With a GPU: runs one step into fresh outputs and checks it against the CPU reference, then times steps in
// place and prints GB/s (28 bytes per parameter; CUDA events after warm-up). Without one: the same on the
// CPU reference for a small vector, and the kernels compiled with NVRTC. Arguments: [parameters] [steps].
#include <cstdio>
#include <cstdlib>
#include <loom/loom.hpp>
#include <tuple>

using namespace loom;

namespace {

constexpr double kLr = 1e-3, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

// One Adam step as Arrays: (p, m, v, t) after the step.
std::tuple<Array, Array, Array, Array> adam(const Array& p, const Array& g, const Array& m, const Array& v,
                                            const Array& t) {
    const Array t1 = t + 1.0;
    const Array m1 = kBeta1 * m + (1.0 - kBeta1) * g;
    const Array v1 = kBeta2 * v + (1.0 - kBeta2) * g * g;
    const Array p1 = p - kLr * (m1 / (1.0 - pow(kBeta1, t1))) / (sqrt(v1 / (1.0 - pow(kBeta2, t1))) + kEps);
    return {p1, m1, v1, t1};
}

}  // namespace

int main(int argc, char** argv) {
    const bool gpu = cuda_available();
    const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : (gpu ? std::int64_t{1} << 26 : 4096);
    const int steps = argc > 2 ? std::atoi(argv[2]) : 100;
    if (n < 1 || steps < 1) {
        std::fprintf(stderr, "usage: adam [parameters >= 1] [steps >= 1]\n");
        return 2;
    }
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();
    auto step = loom::function(
        "adam_step", [](Array p, Array g, Array m, Array v, Array t) { return adam(p, g, m, v, t); });

    Tensor p = random_normal({n}, float32, next_seed(), dev),
           g = random_normal({n}, float32, next_seed(), dev);
    Tensor m = (Array(random_normal({n}, float32, next_seed(), dev)) * 0.1).eval();
    Tensor v = random_uniform({n}, float32, 0.0, 0.01, next_seed(), dev);
    Tensor t = full({}, 9.0, float32, dev).eval();  // nine steps taken: this one is step 10
    std::printf("adam: %lld float32 parameters, lr %g, betas (%g, %g), eps %g, on %s\n",
                static_cast<long long>(n), kLr, kBeta1, kBeta2, kEps,
                gpu ? device_info(0).name.c_str() : "the CPU reference");

    // One step into fresh outputs, checked against the CPU reference of the same graph.
    Tensor p1 = Tensor::empty({n}, float32, dev), m1 = Tensor::empty({n}, float32, dev);
    Tensor v1 = Tensor::empty({n}, float32, dev), t1 = Tensor::empty({}, float32, dev);
    for (Tensor* o : {&p1, &m1, &v1, &t1}) testing::poison(*o);
    step(p, g, m, v, t, p1, m1, v1, t1);
    const auto [pr, mr, vr, tr] = adam(p, g, m, v, t);
    const auto check =
        testing::check_against_reference({pr.node(), mr.node(), vr.node(), tr.node()}, {p1, m1, v1, t1});
    std::printf("one step against the CPU reference: %s (t = %g after it)\n",
                check.ok ? "PASS" : check.message.c_str(), t1.to(Device::cpu()).get_double(0));

    // Steps in place: the traced function's outputs are its inputs.
    step(p, g, m, v, t, p, m, v, t);
    if (!gpu) {
        const CompileReport rep = compile({pr, mr, vr, tr}, "adam_step");
        std::printf(
            "no CUDA GPU was found: ran on the CPU reference; the %d kernels compiled with NVRTC for %s\n",
            rep.kernels, rep.arch.c_str());
        return check.ok ? 0 : 1;
    }
    const double ms = median_ms([&] { step(p, g, m, v, t, p, m, v, t); }, steps);
    std::printf(
        "adam step in place: %.4f ms, %.0f GB/s (p, g, m, v read, p, m, v written: 28 bytes per parameter; "
        "median of %d); t = %g after %llu steps of the traced function (%llu specialization(s), %llu "
        "trace(s))\n",
        ms, 28.0 * static_cast<double>(n) / ms / 1e6, steps, t.to(Device::cpu()).get_double(0),
        static_cast<unsigned long long>(step.stats().calls),
        static_cast<unsigned long long>(step.stats().specializations),
        static_cast<unsigned long long>(step.stats().traces));
    return check.ok ? 0 : 1;
}
