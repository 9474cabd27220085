// Faults injected on the GPU path (loom/runtime/testing_faults.hpp; docs/reliability.md): every device
// allocation of an evaluation fails in turn (results, copy-back temporaries, the block of materialized
// values, split workspaces and counters, parameter buffers, traced functions' results), and every NVRTC
// compilation of an evaluation's kernels. After each fault: the error is an OutOfMemory (a CompileError),
// nothing was launched and nothing leaks (the pool's bytes in use return to their value before), the user's
// tensors keep their bytes, and the next evaluation gives the same bits as before the fault. The host half
// (host allocations, compile(), the disk cache) is tests/unit/test_faults.cpp. LOOM_TEST_SMALL=1 (the
// compute-sanitizer step of scripts/device_run.sh) shrinks the shapes.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/memory.hpp"
#include "loom/runtime/testing_faults.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;
using testing::FaultSite;

namespace {

bool small_shapes() {
    const char* v = std::getenv("LOOM_TEST_SMALL");
    return v && *v && std::string_view(v) != "0";
}

std::vector<unsigned char> bytes_of(const Tensor& t) {
    const Tensor h = t.to_host();
    const auto* p = static_cast<const unsigned char*>(h.data());
    return {p, p + h.nbytes()};
}
std::vector<std::vector<unsigned char>> snapshot(const std::vector<Tensor>& ts) {
    std::vector<std::vector<unsigned char>> out;
    for (const Tensor& t : ts) out.push_back(bytes_of(t));
    return out;
}

std::uint64_t pool_used() {
    synchronize();  // stream-ordered frees are done
    return pool_stats(0).used_bytes;
}

/// One evaluation under test. `run` writes `outputs` (preallocated) or returns tensors of its own; `watched`
/// must keep their bytes after a failure; `reset` (optional) restores inputs that an evaluation overwrites.
struct Scenario {
    std::string name;
    std::vector<Tensor> watched;
    std::vector<Tensor> outputs;
    std::function<std::vector<Tensor>()> run;
    std::function<void()> reset;
};

struct Totals {
    std::uint64_t sites = 0, injected = 0, survived = 0;
};

/// Fails each event of `site` during `s.run` in turn and checks what the error model promises.
void fail_each(Scenario& s, FaultSite site, Totals& totals, const std::function<void()>& before_each = {}) {
    auto run = [&] {
        if (s.reset) s.reset();
        if (before_each) before_each();
        return s.run();
    };
    (void)run();  // warm: kernels built, split counters and the upload kernel made for this stream
    const auto expected = snapshot(run());
    std::uint64_t sites = 0;
    {
        if (s.reset) s.reset();
        if (before_each) before_each();
        testing::FaultScope count(site);
        (void)s.run();
        synchronize();
        sites = testing::fault_events(site);
    }
    CHECK_MESSAGE(sites > 0, s.name, ": no event counted");
    totals.sites += sites;
    for (std::uint64_t i = 0; i < sites; ++i) {
        if (s.reset) s.reset();
        if (before_each) before_each();
        for (Tensor& o : s.outputs) testing::poison(o);
        const auto outputs_before = snapshot(s.outputs);
        const auto watched_before = snapshot(s.watched);
        const std::uint64_t used = pool_used();
        bool clean = false;
        std::string what;
        {
            testing::FaultScope fault(site, i);
            try {
                (void)s.run();
                what = "no error";
            } catch (const OutOfMemory& e) {
                what = e.what();
                clean = site == FaultSite::DeviceAllocation &&
                        what.find("a fault injected by loom::testing::inject_fault") != std::string::npos;
            } catch (const CompileError& e) {
                what = e.what();
                clean = site == FaultSite::NvrtcCompile &&
                        e.log().find("a fault injected by loom::testing::inject_fault") != std::string::npos;
            } catch (const std::exception& e) {
                what = fmt::format("another exception: {}", e.what());
            }
        }
        ++totals.injected;
        CHECK_MESSAGE(clean, s.name, ": event ", i, " of ", sites, ": ", what);
        const std::uint64_t after = pool_used();
        CHECK_MESSAGE(after == used, s.name, ": event ", i, ": the pool holds ", after, " bytes, ", used,
                      " before");
        const bool outputs_kept = snapshot(s.outputs) == outputs_before;
        const bool watched_kept = snapshot(s.watched) == watched_before;
        CHECK_MESSAGE(outputs_kept, s.name, ": event ", i, ": an output was written");
        CHECK_MESSAGE(watched_kept, s.name, ": event ", i, ": an input changed");
        if (s.reset) s.reset();
        if (before_each) before_each();
        const bool next_ok = snapshot(s.run()) == expected;
        CHECK_MESSAGE(next_ok, s.name, ": the evaluation after event ", i, " differs");
        CHECK_FALSE(runtime_poisoned());
        if (clean && after == used && outputs_kept && watched_kept && next_ok) ++totals.survived;
    }
    MESSAGE(s.name, ": ", sites, " events, each failed once");
}

constexpr int kPairs =
    415;  // 830 inputs: the parameters exceed the kernel parameter limit (test_whole_programs.cpp)

std::vector<Scenario> scenarios() {
    const bool small = small_shapes();
    const std::int64_t n = small ? 4096 : 1 << 20;
    const std::int64_t rows = small ? 64 : 1024, cols = small ? 256 : 4096;
    Tensor x = rand({n}, float32, 0xfa01);
    Tensor b = rand({n}, float32, 0xfa02);
    Tensor m = rand({rows, cols}, float32, 0xfa03);
    Tensor w = rand({cols}, float32, 0xfa04);
    Tensor big =
        rand({small ? std::int64_t{1} << 20 : std::int64_t{1} << 22}, float32, 0xfa05);  // split full sum
    std::vector<Scenario> out;

    out.push_back({"eval() of a pointwise graph (the result)",
                   {x, b},
                   {},
                   [=] { return std::vector<Tensor>{eval(relu(Array(x) * 1.5 + b))}; },
                   {}});
    {
        Tensor y = rand({n}, float32, 0xfa06);
        const Tensor y0 = y.to_host();
        // The output is an input read reversed: written through a temporary, copied back.
        out.push_back({"assign() into an output that aliases a reversed input (copy-back temporary)",
                       {x, y},
                       {},
                       [=] {
                           assign(y, Array(y).slice({{kNone, kNone, -1}}) * 2.0 + x);
                           return std::vector<Tensor>{y};
                       },
                       [=] { memory::copy(y.data(), y.device(), y0.data(), Device::cpu(), y0.nbytes()); }});
    }
    {
        Tensor o1 = Tensor::empty({rows, cols}, float32, dev()),
               o2 = Tensor::empty({rows, cols}, float32, dev());
        Tensor o3 = Tensor::empty({cols}, float32, dev());
        out.push_back({"softmax, layernorm and column means (several kernels, materialized values)",
                       {m, w},
                       {o1, o2, o3},
                       [=] {
                           const Array centered = Array(m) - mean(m, 0, true);
                           assign({o1, o2, o3}, {softmax(m), layernorm(m, w, 0.0, 1e-5) + centered,
                                                 mean(centered * centered, 0)});
                           return std::vector<Tensor>{o1, o2, o3};
                       },
                       {}});
    }
    {
        Tensor s = Tensor::empty({}, float32, dev()), c = Tensor::empty({cols}, float32, dev());
        out.push_back({"split reductions: a full sum and column sums",
                       {big, m},
                       {s, c},
                       [=] {
                           assign({s, c}, {sum(big), sum(m, 0)});
                           return std::vector<Tensor>{s, c};
                       },
                       {}});
        // On a new stream each time: the split counters of that stream are allocated by the call.
        Tensor s2 = Tensor::empty({}, float32, dev());
        out.push_back({"a split full sum on a new stream (its split counters)",
                       {big},
                       {s2},
                       [=] {
                           Stream stream;
                           with_stream(stream, [&] { assign(s2, sum(big)); });
                           stream.synchronize();
                           return std::vector<Tensor>{s2};
                       },
                       {}});
    }
    {
        auto f = loom::function("faults_gpu_scale_bias",
                                [](Array a, Array c) { return std::make_tuple(a * c + 1.0, max(a - c)); });
        out.push_back({"a traced function's results",
                       {x, b},
                       {},
                       [=] {
                           auto [r, mx] = f(x, b);
                           return std::vector<Tensor>{r, mx};
                       },
                       {}});
    }
    out.push_back({"item() of a reduction",
                   {x},
                   {},
                   [=] {
                       const double v = mean(Array(x) * x).item<double>();
                       Tensor h = Tensor::host({}, float64);
                       *static_cast<double*>(h.data()) = v;
                       return std::vector<Tensor>{h};
                   },
                   {}});
    if (!small) {
        std::vector<Tensor> a, c;
        for (int k = 0; k < kPairs; ++k) {
            a.push_back(rand({2, 3, 2, 3, 2, 3, 2, 3}, float32, 0xfb00 + static_cast<std::uint64_t>(k)));
            c.push_back(rand({2, 3, 2, 3, 2, 3, 2, 3}, float32, 0xfc00 + static_cast<std::uint64_t>(k)));
        }
        Tensor o = Tensor::empty({3, 2, 3, 2, 3, 2, 3, 2}, float32, dev());
        out.push_back({"830 inputs (parameters in device memory)",
                       {a[0], c[0]},
                       {o},
                       [=] {
                           const std::uint32_t old = set_lazy_node_limit(0);
                           const std::vector<std::int64_t> reversed{7, 6, 5, 4, 3, 2, 1, 0};
                           Array acc;
                           for (std::size_t k = 0; k < a.size(); ++k) {
                               Array p = Array(a[k]).permute(reversed) * Array(c[k]).permute(reversed);
                               acc = k == 0 ? p : acc + p;
                           }
                           set_lazy_node_limit(old);
                           assign(o, acc);
                           return std::vector<Tensor>{o};
                       },
                       {}});
    }
    return out;
}

}  // namespace

TEST_CASE(
    "faults on the GPU: every device allocation of an evaluation fails in turn, nothing leaks or launches") {
    Totals totals;
    for (Scenario& s : scenarios()) fail_each(s, FaultSite::DeviceAllocation, totals);
    MESSAGE("device allocation faults: ", totals.injected, " injected, ", totals.survived, " survived (",
            totals.sites, " sites)");
    CHECK(totals.survived == totals.injected);
}

TEST_CASE(
    "faults on the GPU: every NVRTC compilation of an evaluation fails in turn, the next one compiles") {
    // Without the disk cache every build runs NVRTC; the in-memory cache is cleared before each run, so each
    // run builds its kernels (the kernels that compiled are cached again, the failed one is not).
    const char* saved = std::getenv("LOOM_DISK_CACHE");
    const std::string saved_value = saved ? saved : "";
    setenv("LOOM_DISK_CACHE", "off", 1);
    reset_disk_cache();
    Totals totals;
    std::vector<Scenario> all = scenarios();
    for (std::size_t k : {std::size_t{0}, std::size_t{2}, std::size_t{3}})
        fail_each(all[k], FaultSite::NvrtcCompile, totals, [] { clear_kernel_cache(); });
    MESSAGE("NVRTC faults on the GPU path: ", totals.injected, " injected, ", totals.survived, " survived");
    CHECK(totals.survived == totals.injected);
    if (saved)
        setenv("LOOM_DISK_CACHE", saved_value.c_str(), 1);
    else
        unsetenv("LOOM_DISK_CACHE");
    reset_disk_cache();
}
