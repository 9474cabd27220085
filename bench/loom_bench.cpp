// loom_bench: times Loom on the standard workloads (WORKLOADS.md ids) with CUDA events after warm-up and
// prints one row per workload and method, in the format of peer_baselines.py:
//     workload  method  median_ms  GB/s (minimum bytes moved)
// Usage: loom_bench [--only E1,E2,...] [--json FILE] [--reps N] [--no-check]
// Every Loom result is checked against the CPU reference once before it is timed, unless --no-check.
// Compile time is excluded from the timings (the first call compiles; see the C1 rows of a later issue).
#include <loom/loom.hpp>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

using namespace loom;

namespace {

struct Row {
    std::string workload, method;
    double ms = 0, gbs = 0;
};

struct Options {
    std::set<std::string> only;
    std::string json;
    int reps = 50;
    bool check = true;
    bool wants(const std::string& id) const { return only.empty() || only.count(id.substr(0, id.find('_'))) > 0; }
};

std::vector<Row> g_rows;

void report(const std::string& workload, const std::string& method, double ms, double bytes) {
    const double gbs = bytes / ms / 1e6;
    g_rows.push_back({workload, method, ms, gbs});
    fmt::print("{:16s} {:14s} {:9.4f} ms {:9.1f} GB/s\n", workload, method, ms, gbs);
    std::fflush(stdout);
}

void write_json(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw Error(fmt::format("loom_bench: cannot write {}", path));
    fmt::print(f, "[\n");
    for (std::size_t k = 0; k < g_rows.size(); ++k) {
        const Row& r = g_rows[k];
        fmt::print(f, " {{\"workload\": \"{}\", \"method\": \"{}\", \"ms\": {:.6f}, \"gbs\": {:.3f}}}{}\n", r.workload, r.method,
                r.ms, r.gbs, k + 1 < g_rows.size() ? "," : "");
    }
    fmt::print(f, "]\n");
    std::fclose(f);
}

bool g_check = true;
bool g_failed = false;

void check(const std::vector<Array>& arrays, const std::vector<Tensor>& outs, const char* what) {
    if (!g_check) return;
    std::vector<ir::NodePtr> roots;
    for (const auto& a : arrays) roots.push_back(a.node());
    const auto c = testing::check_against_reference(roots, outs);
    fmt::print("# {} checked against the CPU reference: {}\n", what, c.ok ? "PASS" : "FAIL");
    if (!c.ok) {
        fmt::print(stderr, "{}: RESULT MISMATCH: {}\n", what, c.message);
        g_failed = true;
    }
}

}  // namespace

int main(int argc, char** argv) {
    Options opt;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--only" && i + 1 < argc) {
            std::string s = argv[++i];
            std::size_t pos = 0;
            while (pos <= s.size()) {
                auto end = s.find(',', pos);
                if (end == std::string::npos) end = s.size();
                if (end > pos) opt.only.insert(s.substr(pos, end - pos));
                pos = end + 1;
            }
        } else if (a == "--json" && i + 1 < argc) {
            opt.json = argv[++i];
        } else if (a == "--no-check") {
            opt.check = false;
        } else if (a == "--reps" && i + 1 < argc) {
            opt.reps = std::atoi(argv[++i]);
        } else {
            fmt::print(stderr, "usage: loom_bench [--only E1,E2,...] [--json FILE] [--reps N] [--no-check]\n");
            return 2;
        }
    }
    g_check = opt.check;
    if (!cuda_available()) {
        fmt::print(stderr, "loom_bench: no CUDA device found; the benchmark needs a GPU\n");
        return 77;
    }
    const Device dev = Device::cuda(0);
    fmt::print("# loom_bench on {}\n", device_info(0).name);

    const std::int64_t N = std::int64_t{1} << 28;
    Tensor x = random_normal({N}, float32, 1, dev);
    {
        Tensor y = Tensor::empty({N}, float32, dev);
        const double ms = median_ms([&] {
            if (cudaMemcpyAsync(y.data(), x.data(), x.nbytes(), cudaMemcpyDeviceToDevice, current_stream()) != cudaSuccess)
                throw Error("cudaMemcpyAsync failed");
        }, opt.reps);
        report("COPY_ceiling", "cudaMemcpy", ms, 8.0 * N);
    }

    if (opt.wants("E1_scale_bias_relu")) {
        Tensor out = Tensor::empty({N}, float32, dev);
        Array e1 = relu(x * 1.5 + 0.25);
        assign(out, e1);
        check({e1}, {out}, "E1");
        report("E1_scale_bias_relu", "loom", median_ms([&] { assign(out, e1); }, opt.reps), 8.0 * N);
        // Unfused contrast: one kernel per op, intermediates through memory.
        Tensor t1 = Tensor::empty({N}, float32, dev), t2 = Tensor::empty({N}, float32, dev);
        report("E1_scale_bias_relu", "loom_unfused", median_ms([&] {
                   assign(t1, Array(x) * 1.5);
                   assign(t2, Array(t1) + 0.25);
                   assign(out, relu(t2));
               }, opt.reps), 8.0 * N);
    }

    if (opt.wants("E2_bias_gelu_scale")) {
        const std::int64_t M = 16384;
        Tensor x2 = random_normal({M, M}, float32, 2, dev);
        Tensor b = random_normal({M}, float32, 3, dev), s = random_normal({M}, float32, 4, dev);
        Tensor out = Tensor::empty({M, M}, float32, dev);
        Array e2 = gelu_tanh(x2 + b) * s;
        assign(out, e2);
        check({e2}, {out}, "E2");
        report("E2_bias_gelu_scale", "loom", median_ms([&] { assign(out, e2); }, opt.reps), 8.0 * M * M);
    }

    if (opt.wants("E3_black_scholes")) {
        const std::int64_t n3 = std::int64_t{1} << 26;
        Tensor S = random_uniform({n3}, float32, 10, 110, 5, dev), K = random_uniform({n3}, float32, 10, 110, 6, dev);
        Tensor T = random_uniform({n3}, float32, 0.1, 2.1, 7, dev);
        const double r = 0.02, v = 0.3;
        Array sq = sqrt(T);
        Array d1 = (log(Array(S) / K) + (r + 0.5 * v * v) * Array(T)) / (v * sq);
        Array d2 = d1 - v * sq;
        Array c1 = 0.5 * (1.0 + erf(d1 * 0.7071067811865476));
        Array c2 = 0.5 * (1.0 + erf(d2 * 0.7071067811865476));
        Array disc = K * exp(-r * Array(T));
        Array call = S * c1 - disc * c2;
        Array put = disc * (1.0 - c2) - S * (1.0 - c1);
        Tensor oc = Tensor::empty({n3}, float32, dev), op = Tensor::empty({n3}, float32, dev);
        assign({oc, op}, {call, put});
        check({call, put}, {oc, op}, "E3");
        report("E3_black_scholes", "loom", median_ms([&] { assign({oc, op}, {call, put}); }, opt.reps), 20.0 * n3);
    }

    if (opt.wants("E4_swiglu_bf16")) {
        Tensor a = random_normal({N}, bfloat16, 8, dev), b = random_normal({N}, bfloat16, 9, dev);
        Tensor out = Tensor::empty({N}, bfloat16, dev);
        Array e4 = silu(a) * b;
        assign(out, e4);
        check({e4}, {out}, "E4");
        report("E4_swiglu_bf16", "loom", median_ms([&] { assign(out, e4); }, opt.reps), 6.0 * N);
    }

    if (!opt.json.empty()) write_json(opt.json);
    return g_failed ? 1 : 0;
}
