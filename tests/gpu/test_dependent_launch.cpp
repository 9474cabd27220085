// GPU tests of programmatic dependent launch (LaunchConfig::dependent_launch; docs/internals.md, "Launch"):
// on compute capability 9.0 every Loom kernel may begin while the previous kernel in its stream finishes,
// and waits (lm::await_prior_grids) before its first access to global memory. The tests chain kernels whose
// every block reads what the kernel before wrote last (a split reduction's result, written by its last
// block; a split-K product's columns), back to back with no synchronization, and check each link against
// the reference of its inputs as they ended up; they check that a captured graph joins the kernels by
// programmatic edges, that in-place updates in a loop give the bits of the same loop synchronized after
// every step, and that each family's kernel launched behind a kernel that releases it at once and writes
// its input a millisecond later reads what that kernel wrote.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nvrtc_util.hpp"
#include "test_graph_util.hpp"
#include "test_matmul_util.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;

namespace {

// Whether this process launches with the attribute: a device of compute capability 9.0 or newer, and
// LOOM_DEPENDENT_LAUNCH not 0 or off.
bool dependent_launch_expected() {
    const char* v = std::getenv("LOOM_DEPENDENT_LAUNCH");
    const bool off = v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0);
    return !off && device_info().cc_major >= 9;
}

// The chain of test 1: five kernels of four families, each reading the output of the one before.
struct Chain {
    Tensor x, m;                // inputs: [2^24] and [2048, 4096]
    Tensor o1, o2, o3, o4, o5;  // outputs
    std::vector<Array> links;   // link k computes o(k+1) from o(k) (and the inputs)
    Chain() {
        x = rand({1 << 24}, float32, 0xd1);
        m = rand({2048, 4096}, float32, 0xd2);
        o1 = Tensor::empty({}, float32, dev());
        o2 = Tensor::empty({1 << 24}, float32, dev());
        o3 = Tensor::empty({4096}, float32, dev());
        o4 = Tensor::empty({2048}, float32, dev());
        o5 = Tensor::empty({2048}, float32, dev());
        links = {
            sum(Array(x) * Array(x)),                 // split reduction: the last block writes o1
            Array(x) / sqrt(Array(o1)),               // every element reads o1
            max(Array(o2).reshape({4096, 4096}), 1),  // rows of o2, its last elements included
            matmul(Array(m), Array(o3)),              // a GEMV of o3 (split K when it pays)
            Array(o4) * 2.0 + 1.0,                    // reads the product's result
        };
    }
    std::vector<Tensor> outs() const { return {o1, o2, o3, o4, o5}; }
    void run() const {
        const std::vector<Tensor> o = outs();
        for (std::size_t k = 0; k < links.size(); ++k) assign(o[k], links[k]);
    }
};

}  // namespace

TEST_CASE("dependent launch: five kernels back to back, each reading what the one before wrote last") {
    Stream s;
    StreamGuard on(s);
    Chain c;
    c.run();  // warm-up: every kernel compiled
    s.synchronize();
    for (int rep = 0; rep < 3; ++rep) {
        testing::fill_random(c.x, 0xd100 + static_cast<std::uint64_t>(rep), default_dist(float32));
        for (Tensor o : c.outs()) testing::poison(o);
        s.synchronize();
        c.run();  // five launches, no synchronization between them
        s.synchronize();
        const std::vector<Tensor> o = c.outs();
        for (std::size_t k = 0; k < c.links.size(); ++k)
            require_reference({c.links[k]}, {o[k]},
                              "round " + std::to_string(rep) + ", link " + std::to_string(k + 1));
    }
}

TEST_CASE(
    "dependent launch: in-place updates in a loop give the bits of the loop synchronized after each step") {
    Stream s;
    StreamGuard on(s);
    const Tensor start =
        rand({(1 << 22) + 3}, float32, 0xd3);  // an odd length: the vector kernel's scalar tail
    Tensor a = Tensor::empty(start.shape(), float32, dev()), b = Tensor::empty(start.shape(), float32, dev());
    Tensor scale = Tensor::empty({}, float32, dev());
    auto steps = [&](Tensor& t, bool sync_each) {
        assign(t, Array(start));
        for (int k = 0; k < 40; ++k) {
            assign(scale, rsqrt(mean(Array(t) * Array(t)) + 1e-3));  // a reduction of t ...
            assign(t, Array(t) * Array(scale) + 0.25);               // ... read by every element, in place
            if (sync_each) s.synchronize();
        }
    };
    steps(a, true);  // warm-up and the synchronized loop
    s.synchronize();
    steps(b, false);
    s.synchronize();
    require_same_bits(b, a, "40 steps back to back against the same steps synchronized after each");
}

TEST_CASE("dependent launch: a captured graph joins Loom's kernels by programmatic edges, and replays") {
    Stream s;
    StreamGuard on(s);
    // Two pointwise kernels, the second reading the first's result: nothing between them in the stream (a
    // split reduction would put the free of its partials between, an ordinary edge).
    Tensor x = rand({(1 << 22) + 5}, float32, 0xd4);
    Tensor y = Tensor::empty(x.shape(), float32, dev()), z = Tensor::empty(x.shape(), float32, dev());
    const Array first = exp(Array(x) * 0.5), second = Array(y) * 2.0 - Array(x);
    assign(y, first);  // warm-up: both kernels compiled
    assign(z, second);
    s.synchronize();

    graphtest::Graph g;
    graphtest::capture(s, g, [&] {
        assign(y, first);
        assign(z, second);
    });
    std::size_t n = 64;
    std::vector<cudaGraphNode_t> from(n), to(n);
    std::vector<cudaGraphEdgeData> edges(n);
    CUDA_OK(cudaGraphGetEdges(g.graph, from.data(), to.data(), edges.data(), &n));
    REQUIRE(n < 64);
    int kernel_edges = 0, programmatic = 0;
    std::string seen;
    for (std::size_t e = 0; e < n; ++e) {
        cudaGraphNodeType a{}, b{};
        CUDA_OK(cudaGraphNodeGetType(from[e], &a));
        CUDA_OK(cudaGraphNodeGetType(to[e], &b));
        seen += fmt::format(" {}->{} (type {})", static_cast<int>(a), static_cast<int>(b),
                            static_cast<int>(edges[e].type));
        if (a != cudaGraphNodeTypeKernel || b != cudaGraphNodeTypeKernel) continue;
        ++kernel_edges;
        if (edges[e].type == cudaGraphDependencyTypeProgrammatic) ++programmatic;
    }
    MESSAGE(kernel_edges << " kernel-to-kernel edges, " << programmatic << " programmatic; edges:" << seen);
    CHECK(kernel_edges == 1);
    if (dependent_launch_expected())
        CHECK(programmatic == 1);
    else
        CHECK(programmatic == 0);

    for (int rep = 0; rep < 3; ++rep) {
        testing::fill_random(x, 0xd400 + static_cast<std::uint64_t>(rep), default_dist(float32));
        testing::poison(y);
        testing::poison(z);
        s.synchronize();
        CUDA_OK(cudaGraphLaunch(g.exec, s));
        s.synchronize();
        require_reference({first}, {y}, "replay " + std::to_string(rep) + ", the first kernel");
        require_reference({second}, {z},
                          "replay " + std::to_string(rep) + ", the second, reading the first's result");
    }
}

namespace {

// A kernel that lets the next kernel in its stream be scheduled at once (griddepcontrol.launch_dependents),
// then spins for about a millisecond and only then writes x[i] = pattern(i), in float32 or float16. A Loom
// kernel launched right after it begins under its run, so one that read x before its wait would read the
// stale values every time.
const char* kLateWriterSource = R"(
struct late_writer_args {
    void* x;
    long long n;
    long long spin_cycles;
    int half;  // 1: float16 elements, 0: float32
};
extern "C" __global__ void late_writer(const late_writer_args a) {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    if (threadIdx.x == 0) {
        const long long t0 = clock64();
        while (clock64() - t0 < a.spin_cycles) {
        }
    }
    __syncthreads();
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += (long long)gridDim.x * blockDim.x) {
        const float v = (float)((i * 7) % 23) * 0.125f - 1.25f;  // exact in float16
        if (a.half) {
            unsigned short h;
            asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
            static_cast<unsigned short*>(a.x)[i] = h;
        } else {
            static_cast<float*>(a.x)[i] = v;
        }
    }
}
// The same launch without the wait, as no Loom kernel is: how much of x it sees stale shows the window.
struct reader_args {
    late_writer_args a;
    float* out;
};
extern "C" __global__ void reader_without_wait(const reader_args r) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < r.a.n; i += (long long)gridDim.x * blockDim.x)
        r.out[i] = static_cast<const float*>(r.a.x)[i];
}
)";

struct LateWriterArgs {
    void* x;
    long long n;
    long long spin_cycles;
    int half;
};
struct ReaderArgs {
    LateWriterArgs a;
    float* out;
};

}  // namespace

TEST_CASE(
    "dependent launch: each family's first kernel waits for a kernel that writes its input a millisecond "
    "late") {
    const codegen::DeviceInfo& info = device_info();
    const Module module =
        Module::load(loom_test::nvrtc_compile(kLateWriterSource, info.arch()), "late_writer");
    const Kernel writer = module.kernel("late_writer", sizeof(LateWriterArgs));
    Stream s;
    StreamGuard on(s);
    // The writer on every SM at once (an ordinary launch: it waits for nothing), spinning 2e6 cycles (about
    // a millisecond) before it writes `in`.
    auto launch_writer = [&](const Tensor& in) {
        const LateWriterArgs a{const_cast<void*>(in.data()), in.numel(), 2'000'000,
                               in.dtype() == float16 ? 1 : 0};
        LaunchConfig cfg;
        cfg.grid.x = static_cast<unsigned>(info.sm_count);
        cfg.block.x = 256;
        writer.launch(cfg, &a, sizeof a, "test_dependent_launch.cpp:late_writer");
        return cfg;
    };
    const Tensor flat = rand({1 << 22}, float32, 0xd5), square = rand({2048, 2048}, float32, 0xd6);
    const Tensor lhs = rand({512, 1024}, float32, 0xd7), w = rand({1024, 256}, float32, 0xd8);
    // On tensor cores the product is exact (so the reference's bits) with the writer's multiples of 1/8 times
    // integers in [-8, 8]: every partial sum fits float32's mantissa.
    const Tensor lhs16 = rand({1024, 1024}, float16, 0xd9),
                 w16 = mmtest::integer_valued({1024, 512}, float16, 0xda);
    struct Case {
        const char* family;
        Tensor input;  // what the late writer writes
        Array y;
        Options options;
    };
    const std::vector<Case> cases{
        {"pointwise", flat, Array(flat) * 2.0 + 1.0, {}},
        {"split reduction", flat, sum(Array(flat) * Array(flat)), {}},
        {"row reduction", square, sum(Array(square), 1), {}},
        {"column reduction", square, sum(Array(square), 0), {}},
        {"tiled transpose", square, Array(square).transposed() + 0.0, {}},
        {"float32 product (CUDA cores)", lhs, matmul(Array(lhs), Array(w)), {}},
        {"float16 product (tensor cores)", lhs16, matmul(Array(lhs16), Array(w16)),
         Options{.product_path = ProductPath::TensorCores}},
    };
    {
        // The window these cases test: a reader launched the same way but without the wait sees stale data
        // (a message only: under compute-sanitizer, which serializes launches, there is no window).
        const Kernel reader = module.kernel("reader_without_wait", sizeof(ReaderArgs));
        Tensor x = flat, copy = Tensor::empty(flat.shape(), float32, dev());
        testing::fill_random(x, 0xd5ff, default_dist(float32));
        s.synchronize();
        const ReaderArgs r{{x.data(), x.numel(), 2'000'000, 0}, static_cast<float*>(copy.data())};
        LaunchConfig rcfg = launch_writer(x);
        rcfg.dependent_launch = true;
        reader.launch(rcfg, &r, sizeof r, "test_dependent_launch.cpp:reader_without_wait");
        s.synchronize();
        const std::vector<float> got = copy.to_vector<float>(), now = x.to_vector<float>();
        std::size_t stale = 0;
        for (std::size_t i = 0; i < got.size(); ++i) stale += got[i] != now[i];
        MESSAGE("a reader without the wait saw "
                << stale << " of " << got.size() << " elements stale"
                << (dependent_launch_expected() ? "" : " (no dependent launch here)"));
    }
    for (const Case& c : cases) {
        CAPTURE(c.family);
        const OptionsScope scope(c.options);
        Tensor out = Tensor::empty(c.y.shape(), c.y.dtype(), dev());
        assign(out, c.y);  // warm-up: compiled, so the timed launch below follows the writer at once
        for (int rep = 0; rep < 2; ++rep) {
            Tensor in = c.input;
            testing::fill_random(in, 0xd600 + static_cast<std::uint64_t>(rep),
                                 default_dist(in.dtype()));  // stale values
            testing::poison(out);
            s.synchronize();
            launch_writer(in);
            assign(out, c.y);  // no synchronization: launched while the writer spins
            s.synchronize();
            require_reference({c.y}, {out},
                              fmt::format("{}, round {}: against the values the writer left", c.family, rep));
        }
    }
}
