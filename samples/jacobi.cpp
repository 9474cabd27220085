// jacobi: a few sweeps of the Jacobi iteration for the Laplace equation on a 16384 x 16384 float32 grid,
//     u'[i, j] = 0.25 * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1])   on the interior,
// written from shifted slices in a traced function, called with the interior of the other grid as its
// output (two grids, swapped every sweep; the boundary values stay as they were set).
//
// On a GPU, Loom recognizes the four shifted slices of one input as a stencil (loom::explain says so, with
// its tile and halo) and runs each sweep as one tiled kernel that reads every element from global memory
// about once, neighbours coming again from L1; on the host, explain prints the host plan that runs instead.
// The taps are summed in the order written, so the result equals the CPU reference bit for bit.
//
// With a GPU: runs the sweeps on the device, then the same sweeps on the host, compares the grids bit for
// bit and prints GB/s per sweep (8 bytes per interior element: read once, written once). Without one: a
// small grid, the traced sweeps on the host against the same sweeps written with assign(), each on grids
// of its own, and the time of a sweep by the host's clock.
// Arguments: [n] [sweeps].
#include <cstdio>
#include <cstdlib>
#include <loom/loom.hpp>

using namespace loom;

namespace {

Array five_point(const Array& u) {
    using ir::SliceSpec;
    const std::int64_t end = SliceSpec::kNone;
    const Array up = u.slice({{0, -2, 1}, {1, -1, 1}}), down = u.slice({{2, end, 1}, {1, -1, 1}});
    const Array left = u.slice({{1, -1, 1}, {0, -2, 1}}), right = u.slice({{1, -1, 1}, {2, end, 1}});
    return 0.25 * (up + down + left + right);
}

}  // namespace

int main(int argc, char** argv) {
    const bool gpu = cuda_available();
    const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : (gpu ? 16384 : 258);
    const int sweeps = argc > 2 ? std::atoi(argv[2]) : 4;
    const Device dev = gpu ? Device::cuda(0) : Device::cpu();
    const std::vector<ir::SliceSpec> interior = {{1, -1, 1}, {1, -1, 1}};

    const Tensor start = random_uniform({n, n}, float32, 0.0, 1.0, next_seed(), Device::cpu());
    // Copies (to(dev, true)): without a GPU, to() of a host tensor to the host would share its memory.
    Tensor u = start.to(dev, true), v = start.to(dev, true);
    auto sweep = loom::function("jacobi_sweep", [](Array a) { return five_point(a); });
    std::printf("jacobi: %lld x %lld float32, %d sweeps\n", static_cast<long long>(n),
                static_cast<long long>(n), sweeps);
    std::printf("%s", explain({five_point(Array(u))}, "jacobi_sweep").c_str());
    try {
        for (int k = 0; k < sweeps; ++k) {
            if (k % 2 == 0)
                sweep(u, v.slice(interior));
            else
                sweep(v, u.slice(interior));
        }
        if (gpu) synchronize();
    } catch (const Error& err) {
        std::printf("jacobi: the sweeps failed: %s\n", err.what());
        return 1;
    }
    const Tensor result = (sweeps % 2 == 1 ? v : u).to(Device::cpu());

    // The same sweeps on the host (compiled, or the CPU reference), element by element the same arithmetic.
    Tensor hu = start.clone(), hv = start.clone();
    for (int k = 0; k < sweeps; ++k) {
        if (k % 2 == 0)
            assign(hv.slice(interior), five_point(Array(hu)));
        else
            assign(hu.slice(interior), five_point(Array(hv)));
    }
    const Tensor expected = sweeps % 2 == 1 ? hv : hu;
    const auto same = testing::compare(result, expected, testing::Tolerance::exact(), "grid");
    std::printf("%d sweeps against the host: %s\n", sweeps,
                same.ok ? "PASS (bit for bit)" : same.message.c_str());
    if (!gpu) {
        const Timing t = time_calls([&] { sweep(u, v.slice(interior)); }, Device::cpu(), 20, 2);
        std::printf("one sweep on the host: %s\n", t.to_string().c_str());
        std::printf("no CUDA GPU was found: evaluated on the host, not on a GPU\n");
        return same.ok ? 0 : 1;
    }
    const double ms = median_ms([&] { sweep(u, v.slice(interior)); });
    const double bytes = 8.0 * static_cast<double>(n - 2) * static_cast<double>(n - 2);
    std::printf("one sweep: %.4f ms, %.0f GB/s (interior read once, written once; median of 50)\n", ms,
                bytes / ms / 1e6);
    return same.ok ? 0 : 1;
}
