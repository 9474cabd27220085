// loom_fuzz_views: a differential fuzzer of writes into strided views. Each seed makes a random program
// with the generator of loom_fuzz (tests/fuzz/fuzz_program.hpp: pointwise graphs and graphs with
// reductions, every dtype, several outputs) and evaluates it twice on one device: into fresh contiguous
// outputs, and with assign() into views of larger tensors filled with random values: per axis a random
// step (1, 2, 3, -1 or -2) and start, padding, then the axes permuted, so that outputs are columns, strided
// and reversed slices, transposed views, at every alignment. It checks that
//   - every element of each view equals the contiguous result bit for bit (any NaN equals any NaN): the
//     layout of an output never changes its values;
//   - the views hold what the CPU reference computes, within the contract's tolerance
//     (testing::check_against_reference);
//   - every element of the larger tensors outside the views kept its value: no store lands outside a view.
//
//   loom_fuzz_views [--seed S] [--count N] [--seconds T] [--host] [--max-numel N] [--verbose]
//
// It runs on the GPU when there is one, else (and with --host) on host tensors (the host back end). Graph
// k uses seed S + k; `--seed S+k --count 1` replays it. Exit status 0 when every graph passed, 1 on any
// failure, 2 on bad arguments. The last line is "fuzz: N graphs, M failures".
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "fuzz_program.hpp"
#include "loom/ir/graph.hpp"
#include "loom/loom.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;
using namespace loom::fuzz;

namespace {

using Clock = std::chrono::steady_clock;

/// A contiguous host copy of `t` (never the same memory).
Tensor host_copy(const Tensor& t) {
    Tensor h = t.to(Device::cpu());
    if (h.data() != t.data() || h.numel() == 0) return h;
    Tensor out = Tensor::host(t.shape(), t.dtype());
    std::memcpy(out.data(), h.data(), h.nbytes());
    return out;
}

bool same_value(double a, double b) {
    return a == b || (std::isnan(a) && std::isnan(b));
}

/// A view of shape `s` inside a new random tensor of dtype `d` on `dev`: per axis a step and a start in a
/// padded extent, the larger tensor's axes in a random order. Returns the larger tensor and the view.
std::pair<Tensor, Tensor> make_view(const Shape& s, DType d, Device dev, std::mt19937_64& rng,
                                    std::string& how) {
    const int r = static_cast<int>(s.size());
    std::vector<std::int64_t> perm(static_cast<std::size_t>(r));
    for (int a = 0; a < r; ++a) perm[static_cast<std::size_t>(a)] = a;
    std::shuffle(perm.begin(), perm.end(), rng);
    // Axis a of the view is axis perm[a] of the larger tensor (which has its own extents).
    Shape big(static_cast<std::size_t>(r));
    std::vector<ir::SliceSpec> spec(static_cast<std::size_t>(r));
    static constexpr int kSteps[] = {1, 1, 2, 3, -1, -2};
    for (int a = 0; a < r; ++a) {
        const std::int64_t n = s[static_cast<std::size_t>(a)];
        const int step = kSteps[rng() % 6];
        // An empty axis stays empty (no padding): the larger tensor then has no elements either.
        const std::int64_t start_pad = n == 0 ? 0 : static_cast<std::int64_t>(rng() % 4);
        const std::int64_t end_pad = n == 0 ? 0 : static_cast<std::int64_t>(rng() % 3);
        const std::int64_t span = n == 0 ? 0 : (n - 1) * std::abs(step) + 1;
        const std::int64_t extent = start_pad + span + end_pad;
        const auto b = static_cast<std::size_t>(perm[static_cast<std::size_t>(a)]);
        big[b] = extent;
        if (n == 0)
            spec[b] = {start_pad, start_pad, step};
        else if (step > 0)
            spec[b] = {start_pad, start_pad + span, step};
        else
            spec[b] = {start_pad + span - 1, start_pad == 0 ? ir::SliceSpec::kNone : start_pad - 1, step};
        how += fmt::format("{}axis {}: extent {} step {} start pad {}", a ? ", " : "", a, extent, step,
                           start_pad);
    }
    const Tensor base = testing::random_tensor(big, d, rng()).to(dev);
    // The view: slice the larger tensor, then order its axes as the view's: view axis a = big axis perm[a].
    const Tensor v = base.slice(spec).permute(perm);
    return {base, v};
}

struct Outcome {
    bool ok = true;
    bool skipped = false;
    std::string message;
};

Outcome run(const fuzz::Program& p, Device dev, std::uint64_t seed) {
    std::optional<Built> b = build(p, dev);
    if (!b) return {true, true, "did not build"};
    std::vector<Array> arrays;
    for (const ir::NodePtr& r : b->roots) arrays.emplace_back(r);
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + 7);
    try {
        const std::vector<Tensor> plain = eval(arrays);
        std::vector<Tensor> bases, views;
        std::vector<std::string> hows;
        for (const Tensor& t : plain) {
            std::string how;
            auto [base, view] = make_view(t.shape(), t.dtype(), dev, rng, how);
            if (t.rank() == 0) how = "a 0-d view";
            bases.push_back(base);
            views.push_back(view);
            hows.push_back(how);
        }
        std::vector<Tensor> before;
        for (const Tensor& base : bases) before.push_back(host_copy(base));
        assign(views, arrays);
        if (dev.is_cuda()) synchronize();
        for (std::size_t k = 0; k < views.size(); ++k) {
            const Tensor got = host_copy(views[k]), want = host_copy(plain[k]), after = host_copy(bases[k]);
            std::int64_t differ = 0, first = -1;
            for (std::int64_t i = 0; i < got.numel(); ++i) {
                if (!same_value(got.get_double(i), want.get_double(i))) {
                    if (first < 0) first = i;
                    ++differ;
                }
            }
            if (differ > 0) {
                return {
                    false, false,
                    fmt::format(
                        "output {} ({} {}, view {} strides {}; {}): {} elements differ from the contiguous "
                        "result, first at {}: {} against {}",
                        k, name(plain[k].dtype()), to_string(plain[k].shape()), to_string(views[k].shape()),
                        to_string(views[k].strides()), hows[k], differ, first, got.get_double(first),
                        want.get_double(first))};
            }
            // Outside the view: mark the view's elements in the larger tensor, compare the rest with before.
            std::vector<char> inside(static_cast<std::size_t>(after.numel()), 0);
            const Shape& s = views[k].shape();
            const Strides& st = views[k].strides();
            std::vector<std::int64_t> idx(s.size(), 0);
            const std::int64_t start = views[k].offset() - bases[k].offset();
            for (std::int64_t i = 0; i < views[k].numel(); ++i) {
                std::int64_t o = start;
                for (std::size_t a = 0; a < s.size(); ++a) o += idx[a] * st[a];
                inside[static_cast<std::size_t>(o)] = 1;
                for (std::size_t a = s.size(); a-- > 0;) {
                    if (++idx[a] < s[a]) break;
                    idx[a] = 0;
                }
            }
            for (std::int64_t o = 0; o < after.numel(); ++o) {
                if (!inside[static_cast<std::size_t>(o)] &&
                    !same_value(after.get_double(o), before[k].get_double(o))) {
                    return {false, false,
                            fmt::format("output {} (view {} strides {}; {}): element {} of the larger "
                                        "tensor, outside the "
                                        "view, changed from {} to {}",
                                        k, to_string(views[k].shape()), to_string(views[k].strides()),
                                        hows[k], o, before[k].get_double(o), after.get_double(o))};
                }
            }
        }
        const testing::Comparison c = testing::check_against_reference(b->roots, views);
        if (!c.ok) return {false, false, "against the reference: " + c.message};
    } catch (const std::exception& e) {
        return {false, false, fmt::format("evaluation threw: {}", e.what())};
    }
    return {};
}

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t seed = 1;
    long long count = -1;
    double seconds = -1;
    bool host = false, verbose = false;
    GenOptions gen;
    gen.max_numel = 1 << 12;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--seed" && has_value)
            seed = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--count" && has_value)
            count = std::atoll(argv[++i]);
        else if (a == "--seconds" && has_value)
            seconds = std::atof(argv[++i]);
        else if (a == "--max-numel" && has_value)
            gen.max_numel = std::max(1LL, std::atoll(argv[++i]));
        else if (a == "--host")
            host = true;
        else if (a == "--verbose")
            verbose = true;
        else {
            std::fprintf(stderr,
                         "usage: loom_fuzz_views [--seed S] [--count N] [--seconds T] [--host] [--max-numel "
                         "N] [--verbose]\n");
            return 2;
        }
    }
    if (count < 0 && seconds < 0) count = 100;
    const Device dev = !host && cuda_available() ? Device::cuda(current_device()) : Device::cpu();
    // Float16 and bfloat16 products run on tensor cores by default, within a bound and not with the
    // reference's bits (docs/semantics.md, section 12): this fuzzer checks the writes into views bit for bit,
    // so its products run on CUDA cores (loom_fuzz checks the tensor-core paths against their bound).
    Options pinned = current_options();
    if (pinned.product_path == ProductPath::Auto) pinned.product_path = ProductPath::CudaCores;
    const OptionsScope pin(pinned);
    std::printf("loom_fuzz_views: seed %llu, writes into strided views on %s, %s\n",
                static_cast<unsigned long long>(seed), dev.is_cuda() ? "the GPU" : "the host",
                count >= 0 ? fmt::format("{} graphs", count).c_str() : fmt::format("{} s", seconds).c_str());
    std::fflush(stdout);
    const auto t0 = Clock::now();
    long long graphs = 0, failures = 0, skipped = 0;
    for (std::uint64_t k = 0;; ++k) {
        if (count >= 0 && graphs >= count) break;
        if (seconds >= 0 && std::chrono::duration<double>(Clock::now() - t0).count() >= seconds) break;
        const std::uint64_t s = seed + k;
        const fuzz::Program p = generate(s, gen);
        const Outcome o = run(p, dev, s);
        if (o.skipped) {
            ++skipped;
            continue;
        }
        ++graphs;
        if (verbose)
            std::printf("graph seed %llu: %s\n", static_cast<unsigned long long>(s), o.ok ? "pass" : "FAIL");
        if (!o.ok) {
            ++failures;
            std::printf("loom_fuzz_views: FAILURE, seed %llu (replay: --seed %llu --count 1%s)\n%s\n%s\n",
                        static_cast<unsigned long long>(s), static_cast<unsigned long long>(s),
                        host ? " --host" : "", o.message.c_str(), describe(p).c_str());
            std::fflush(stdout);
            if (dev.is_cuda() && runtime_poisoned()) break;
        }
        if (dev.is_cuda() && graphs % 500 == 0) clear_kernel_cache();
    }
    const double minutes = std::chrono::duration<double>(Clock::now() - t0).count() / 60.0;
    if (skipped > 0) std::printf("loom_fuzz_views: %lld programs did not build\n", skipped);
    std::printf("loom_fuzz_views: %.0f graphs per minute\n",
                minutes > 0 ? static_cast<double>(graphs) / minutes : 0.0);
    std::printf("fuzz: %lld graphs, %lld failures\n", graphs, failures);
    return failures == 0 ? 0 : 1;
}
