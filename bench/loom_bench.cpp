// loom_bench: times Loom on the standard workloads (WORKLOADS.md ids) with CUDA events after warm-up and
// prints one row per workload and method, in the format of peer_baselines.py:
//     workload  method  median_ms  GB/s (minimum bytes moved)
// Usage: loom_bench [--only E1,E2,...] [--json FILE] [--reps N] [--no-check] [--batch]
// --only takes row ids, the part of a row's name before '_' (A2nc of A2nc_attention_f32); an id also names
// the rows of its variants, the ids that add lower-case letters after its number (A2 runs A2 and A2nc).
// An id of --only that no workload has, like a workload that throws, is reported NOT RUN and fails the run
// (exit 1); without a GPU the exit is 77 (skipped) unless something failed.
// The host workloads (CE1, CR1, CR3, CF1, CM1) run first and need no GPU: `--only CE1,CR1,CR3,CF1,CM1` runs
// them alone, through the LLVM back end with the CPU reference interpreter's figures beside, and READ_cpu, a
// hand-written read-only stream (the ceiling of the reductions, which only read) beside them; CN1, CG1, CX2,
// CSC1 and CMC1 are the host rows of the gathers, scans and random numbers (bench/cpu_peers_ops.py runs
// NumPy on them); CC1 (with the
// LLVM back end) measures its compile time: a cold JIT of a small kernel and a warm load from the disk cache.
// T1, T2, S1 and S2 (transposes and stencils) run as tiled kernels (docs/performance.md). M1, M3, M5 and M6
// (float32 matrix products) run on the CUDA-core matmul kernel and print TFLOP/s (M5: GB/s of the matrix); M2
// and M4 (bfloat16) on the tensor-core path (mma.sync), checked against the bound of docs/semantics.md,
// section 12. Every Loom result is checked against the CPU reference once before it is timed, unless
// --no-check. Compile time is excluded from the E, R and F timings (the first call compiles); C1 measures it:
// cold codegen + NVRTC, the first compile of the process, and a warm load from the disk cache. R1-R3 and
// F1-F2 (sums, softmax, layernorm) are written with the public reductions and loom::softmax /
// loom::layernorm; X1 with loom::logsumexp; SC1 with loom::cumsum (the single-pass scan, docs/semantics.md
// section 14); SR1 with loom::index_add (the deterministic scatter, section 15); X2 with loom::cross_entropy,
// traced (row `loom`) and lazily assigned (row `loom_lazy`, whose host work each call shows). A1 is one Adam
// step in place (a traced function, samples/adam.cpp); P1 the pinned pipeline through loom::Pipeline, wall
// time on the host clock beside the same copies with no kernel; O2 the host microseconds per call of a traced
// function of three kernels as an automatic CUDA graph, kernel by kernel, and against one launch of the same
// graph captured by hand; L1 the microseconds per call, host and device, of a chain of 100 elementwise ops on
// 4096 values. A2 and A3 are causal attention, A2nc and A3nc the same shapes without a mask, A4 decoding (one
// query over a KV cache of 8192 keys: GB/s, checked bit for bit).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <loom/loom.hpp>
#include <loom/runtime/disk_cache.hpp>
#include <loom/runtime/host_backend.hpp>
#include <loom/runtime/kernel_cache.hpp>
#include <loom/runtime/reference.hpp>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gpt2_block.hpp"

using namespace loom;

namespace {

struct Row {
    std::string workload, method;
    double ms = 0, gbs = 0;
    double us = -1;  // O1 rows: host microseconds per call
    std::vector<std::pair<std::string, double>>
        extra;          // further JSON fields (C1: cold_ms, first_ms, warm_ms)
    double tflops = 0;  // M rows: the product's FLOP per second, 1e12
};

// --batch: each Loom figure is the median over 5 batches of `reps` calls enqueued back to back between two
// events (no event between calls, as peer_baselines.py times jax.jit), instead of loom::median_ms's
// per-call event pairs. An event between two kernels is a stream operation of its own, which keeps the
// second kernel from starting under the first's tail (programmatic dependent launch).
bool g_batch = false;

double timed_ms(const std::function<void()>& fn, int reps = 50) {
    if (!g_batch) return loom::median_ms(fn, reps);
    for (int i = 0; i < 5; ++i) fn();
    std::vector<double> ms;
    for (int b = 0; b < 5; ++b) {
        Event start, stop;
        start.record();
        for (int i = 0; i < reps; ++i) fn();
        stop.record();
        stop.synchronize();
        ms.push_back(Event::elapsed_ms(start, stop) / reps);
    }
    std::sort(ms.begin(), ms.end());
    return ms[2];
}

struct BenchOptions {
    std::set<std::string> only;
    std::string json;
    int reps = 50;
    bool check = true;
    // A row's name (or an id) selected by --only: its id, or the id of its family.
    bool wants(const std::string& name) const;
};

// The id of a row's name, as --only names it: the part before '_' (A2nc of A2nc_attention_f32).
std::string row_id(const std::string& name) {
    return name.substr(0, name.find('_'));
}

// The family of an id: the id less the lower-case letters after its number (A2 of A2nc, A2's rows without
// the causal mask); an id without such letters is its own family.
std::string family_id(const std::string& id) {
    std::size_t n = id.size();
    while (n > 0 && std::islower(static_cast<unsigned char>(id[n - 1]))) --n;
    if (n == id.size() || n == 0 || !std::isdigit(static_cast<unsigned char>(id[n - 1]))) return id;
    return id.substr(0, n);
}

bool BenchOptions::wants(const std::string& name) const {
    if (only.empty()) return true;
    const std::string id = row_id(name);
    return only.count(id) > 0 || only.count(family_id(id)) > 0;
}

std::vector<Row> g_rows;

void report(const std::string& workload, const std::string& method, double ms, double bytes) {
    const double gbs = bytes / ms / 1e6;
    g_rows.push_back({workload, method, ms, gbs});
    fmt::print("{:16s} {:14s} {:9.4f} ms {:9.1f} GB/s\n", workload, method, ms, gbs);
    std::fflush(stdout);
}

// A row measured in milliseconds alone (no bytes or FLOP counted, as WORKLOADS.md's MC1).
void report_ms(const std::string& workload, const std::string& method, double ms) {
    g_rows.push_back({workload, method, ms, 0});
    fmt::print("{:16s} {:14s} {:9.4f} ms\n", workload, method, ms);
    std::fflush(stdout);
}

// A matrix product's row: GB/s of `bytes` (0: not shown) and TFLOP/s of `flops`.
void report_flops(const std::string& workload, const std::string& method, double ms, double bytes,
                  double flops) {
    const double gbs = bytes > 0 ? bytes / ms / 1e6 : 0, tf = flops / ms / 1e9;
    g_rows.push_back({workload, method, ms, gbs, -1, {}, tf});
    fmt::print("{:16s} {:14s} {:9.4f} ms {}{:9.1f} TFLOP/s\n", workload, method, ms,
               bytes > 0 ? fmt::format("{:9.1f} GB/s", gbs) : std::string(), tf);
    std::fflush(stdout);
}

// A host matrix product's row: GFLOP/s of `flops`, as cpu_peers.py prints its peers' (the JSON keeps
// TFLOP/s).
void report_gflops(const std::string& workload, const std::string& method, double ms, double flops) {
    const double gf = flops / ms / 1e6;
    g_rows.push_back({workload, method, ms, 0, -1, {}, gf / 1e3});
    fmt::print("{:16s} {:14s} {:9.4f} ms {:9.1f} GFLOP/s\n", workload, method, ms, gf);
    std::fflush(stdout);
}

void report_us(const std::string& workload, const std::string& method, double us) {
    g_rows.push_back({workload, method, 0, 0, us});
    fmt::print("{:16s} {:14s} {:9.2f} us/call\n", workload, method, us);
    std::fflush(stdout);
}

// Which work a per-call time counts: the host's alone (the clock stops when the n calls are enqueued; the GPU
// queue absorbs the launches), or the device's too (the closing synchronization inside the clock:
// WORKLOADS.md's L1).
enum class Clock { Host, HostAndDevice };

// Microseconds per call of `fn`, called `n` times back to back without synchronizing, after 100 warm-up
// calls; one synchronization closes each batch. Median of 5 batches.
double us_per_call(const std::function<void()>& fn, int n, Clock clock) {
    for (int i = 0; i < 100; ++i) fn();
    synchronize();
    std::vector<double> us;
    for (int b = 0; b < 5; ++b) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) fn();
        auto t1 = std::chrono::steady_clock::now();
        synchronize();
        if (clock == Clock::HostAndDevice) t1 = std::chrono::steady_clock::now();
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
}
double host_us_per_call(const std::function<void()>& fn, int n = 10000) {
    return us_per_call(fn, n, Clock::Host);
}

// Host microseconds per call of `count` bare cudaLaunchKernel calls of an empty kernel (compiled here with
// NVRTC) on the current stream: the floor of O1 and O2.
double bare_launches_us(int count) {
    const std::string src = "extern \"C\" __global__ void empty_kernel() {}\n";
    nvrtc::Options nopt;
    nopt.cc_major = device_info(0).cc_major;
    nopt.cc_minor = device_info(0).cc_minor;
    const nvrtc::Result img = nvrtc::compile("empty_kernel", src, nopt);
    const Module m = Module::load(std::string_view(img.binary.data(), img.binary.size()), "empty_kernel");
    const Kernel empty = m.kernel("empty_kernel");
    const cudaStream_t stream = current_stream();
    return host_us_per_call([&] {
        for (int k = 0; k < count; ++k)
            if (cudaLaunchKernel(reinterpret_cast<const void*>(empty.handle()), dim3(1), dim3(32), nullptr, 0,
                                 stream) != cudaSuccess)
                throw Error("cudaLaunchKernel failed");
    });
}

void write_json(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw Error(fmt::format("loom_bench: cannot write {}", path));
    fmt::print(f, "[\n");
    for (std::size_t k = 0; k < g_rows.size(); ++k) {
        const Row& r = g_rows[k];
        if (r.us >= 0)
            fmt::print(f, " {{\"workload\": \"{}\", \"method\": \"{}\", \"us\": {:.3f}}}{}\n", r.workload,
                       r.method, r.us, k + 1 < g_rows.size() ? "," : "");
        else {
            std::string extra;  // e.g. C1's cold_ms, first_ms, warm_ms
            for (const auto& [field, v] : r.extra) extra += fmt::format(", \"{}\": {:.6f}", field, v);
            if (r.tflops > 0) extra += fmt::format(", \"tflops\": {:.3f}", r.tflops);
            fmt::print(f,
                       " {{\"workload\": \"{}\", \"method\": \"{}\", \"ms\": {:.6f}, \"gbs\": {:.3f}{}}}{}\n",
                       r.workload, r.method, r.ms, r.gbs, extra, k + 1 < g_rows.size() ? "," : "");
        }
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

// Like check(), to the reference's bits (testing::Tolerance::exact()): for a result whose order is the
// reference's in its dtype (attention on CUDA cores, decoding included).
void check_bits(const Array& y, const Tensor& out, const char* what) {
    if (!g_check) return;
    const auto c = testing::compare(out, reference::evaluate(y.node()), testing::Tolerance::exact(), what);
    fmt::print("# {} checked against the CPU reference bit for bit: {}\n", what, c.ok ? "PASS" : "FAIL");
    if (!c.ok) {
        fmt::print(stderr, "{}: RESULT MISMATCH: {}\n", what, c.message);
        g_failed = true;
    }
}

// A tensor-core product against the bound of docs/semantics.md, section 12, over its first `rows` rows
// (the bound's float64 product of a whole 8192^3 GEMM would take the host minutes).
void check_bound(const Tensor& out, const Tensor& a, const Tensor& b, std::int64_t rows, const char* what,
                 ProductPrecision precision = ProductPrecision::Float32) {
    if (!g_check) return;
    // Batched operands: the first `rows` batch entries of both; a matrix B: all of it.
    const std::vector<ir::SliceSpec> first{{0, rows, 1}};
    const auto c = testing::compare_product_bound(out.slice(first), a.slice(first),
                                                  b.shape().size() > 2 ? b.slice(first) : b, what, precision);
    fmt::print("# {} (first {} rows) checked against the tensor-core bound: {}\n", what, rows,
               c.ok ? "PASS" : "FAIL");
    if (!c.ok) {
        fmt::print(stderr, "{}: RESULT MISMATCH: {}\n", what, c.message);
        g_failed = true;
    }
}

// The current options (LOOM_TILE and the others from the environment) with the product path set; `no_tile`
// drops the tile hint (the mma.sync rows keep their own default tile when LOOM_TILE sweeps the wgmma tiles).
Options with_path(ProductPath path, bool no_tile = false) {
    Options o = current_options();
    o.product_path = path;
    if (no_tile) o.tile = {};
    return o;
}

// Runs one workload; a loom::Error (e.g. a graph the GPU path cannot run yet) is reported, fails the
// benchmark and lets the next workload run.
void guarded(const char* workload, const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        fmt::print("# {} not run: {}\n", workload, e.what());
        fmt::print(stderr, "{}: NOT RUN: {}\n", workload, e.what());
        std::fflush(stdout);
        g_failed = true;
    }
}

double wall_ms(const std::function<void()>& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A small kernel that no other workload builds: three unary ops picked by k (distinct for k < 125).
Array c1_graph(const Tensor& x, int k) {
    Array y(x);
    for (int j = 0, code = k; j < 3; ++j, code /= 5) {
        switch (code % 5) {
            case 0:
                y = sin(y) + 0.5;
                break;
            case 1:
                y = exp(y) * 0.25;
                break;
            case 2:
                y = tanh(y) - 1.0;
                break;
            case 3:
                y = sigmoid(y) * 3.0;
                break;
            default:
                y = erf(y) + 2.0;
                break;
        }
    }
    return y;
}

// C1: compile time. first = the first compile of the process (NVRTC start-up included); cold = median
// codegen + NVRTC of a new small kernel once NVRTC is started; warm = median time of the first evaluation
// of an already compiled kernel with an empty in-memory cache: codegen, disk-cache lookup and verification,
// module load and the launch. Uses a fresh private cache directory, so nothing is found before it is made.
void bench_c1(const Device& dev) {
    char tmpl[] = "/tmp/loom-bench-cache-XXXXXX";
    if (!::mkdtemp(tmpl)) throw Error("loom_bench: mkdtemp failed");
    ::setenv("LOOM_CACHE_DIR", tmpl, 1);
    reset_disk_cache();
    Tensor x = random_normal({1 << 20}, float32, 11, dev);
    Tensor out = Tensor::empty({1 << 20}, float32, dev);
    constexpr int kNew = 9;
    std::vector<Array> graphs;
    for (int k = 0; k < kNew + 1; ++k) graphs.push_back(c1_graph(x, k + 7));
    CompileReport rep;
    const double first = wall_ms([&] { rep = compile({graphs[0]}); });
    fmt::print("# C1 first compile: {:.1f} ms (codegen {:.2f} ms, NVRTC {:.1f} ms)\n", first, rep.codegen_ms,
               rep.compile_ms);
    std::vector<double> cold, codegen, nvrtc_ms;
    for (int k = 1; k <= kNew; ++k) {
        cold.push_back(wall_ms([&] { rep = compile({graphs[k]}); }));
        codegen.push_back(rep.codegen_ms);
        nvrtc_ms.push_back(rep.compile_ms);
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    std::vector<double> warm;
    for (int k = 1; k <= kNew; ++k) {
        clear_kernel_cache();
        synchronize();
        warm.push_back(wall_ms([&] {
            assign(out, graphs[k]);
            synchronize();
        }));
    }
    const DiskCacheStats st = disk_cache_stats();
    if (st.hits < static_cast<std::uint64_t>(kNew)) {
        fmt::print(stderr, "C1: expected {} disk-cache hits, got {}\n", kNew, st.hits);
        g_failed = true;
    }
    check({graphs[kNew]}, {out}, "C1");
    Row r;
    r.workload = "C1_compile";
    r.method = "loom";
    r.ms = median(cold);
    r.extra = {{"cold_ms", median(cold)},
               {"first_ms", first},
               {"warm_ms", median(warm)},
               {"codegen_ms", median(codegen)},
               {"nvrtc_ms", median(nvrtc_ms)}};
    g_rows.push_back(r);
    fmt::print(
        "{:16s} {:14s} cold {:8.2f} ms (codegen {:.2f} + NVRTC {:.2f}; first of the process {:.1f}); warm "
        "{:.3f} ms\n",
        r.workload, r.method, median(cold), median(codegen), median(nvrtc_ms), first, median(warm));
    std::fflush(stdout);
    std::error_code ec;
    std::filesystem::remove_all(tmpl, ec);
    ::unsetenv("LOOM_CACHE_DIR");
    reset_disk_cache();
}

// Median wall time of `fn` in milliseconds after one warm-up call (host work: no CUDA events).
double host_median_ms(const std::function<void()>& fn, int reps) {
    fn();
    std::vector<double> ms;
    for (int r = 0; r < std::max(reps, 1); ++r) ms.push_back(wall_ms(fn));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

// CC1: the LLVM back end's compile time for small host kernels (C1's graphs on host tensors of 2^16
// elements). first = the first evaluation of the process that builds a kernel (the module's and LLVM's
// start-up included); cold = median LLVM time (parse, optimize, code generation, link) of a new kernel, from
// the host cache's counters; warm = median wall time of the first evaluation of a kernel found in the disk
// cache with an empty in-memory cache: codegen, lookup, load and the run. A fresh private cache directory.
void bench_host_compile() {
    char tmpl[] = "/tmp/loom-bench-host-cache-XXXXXX";
    if (!::mkdtemp(tmpl)) throw Error("loom_bench: mkdtemp failed");
    ::setenv("LOOM_CACHE_DIR", tmpl, 1);
    reset_disk_cache();
    clear_host_kernel_cache();
    Tensor x = random_normal({1 << 16}, float32, 11, Device::cpu());
    Tensor out = Tensor::host({1 << 16}, float32);
    constexpr int kNew = 9;
    std::vector<Array> graphs;
    for (int k = 0; k < kNew + 1; ++k) graphs.push_back(c1_graph(x, k + 7));
    const double first = wall_ms([&] { assign(out, graphs[0]); });
    std::vector<double> cold, cold_wall;
    for (int k = 1; k <= kNew; ++k) {
        const HostKernelCacheStats before = host_kernel_cache_stats();
        cold_wall.push_back(wall_ms([&] { assign(out, graphs[k]); }));
        const HostKernelCacheStats after = host_kernel_cache_stats();
        cold.push_back((after.compile_ms - before.compile_ms) + (after.load_ms - before.load_ms));
    }
    std::vector<double> warm, warm_load;
    std::uint64_t disk_hits = 0;
    for (int k = 1; k <= kNew; ++k) {
        clear_host_kernel_cache();
        warm.push_back(wall_ms([&] { assign(out, graphs[k]); }));
        disk_hits += host_kernel_cache_stats().disk_hits;
        warm_load.push_back(host_kernel_cache_stats().load_ms);  // the counters restart at each clear
    }
    // The run itself (the kernel cached in memory), to tell the load from the work.
    const double run = host_median_ms([&] { assign(out, graphs[kNew]); }, 9);
    if (disk_hits < static_cast<std::uint64_t>(kNew)) {
        fmt::print(stderr, "CC1: expected {} disk-cache loads, got {}\n", kNew, disk_hits);
        g_failed = true;
    }
    check({graphs[kNew]}, {out}, "CC1");
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    Row r;
    r.workload = "CC1_host_compile";
    r.method = "loom_llvm";
    r.ms = median(cold);
    r.extra = {{"cold_ms", median(cold)}, {"cold_wall_ms", median(cold_wall)}, {"first_ms", first},
               {"warm_ms", median(warm)}, {"warm_load_ms", median(warm_load)}, {"run_ms", run}};
    g_rows.push_back(r);
    fmt::print(
        "{:16s} {:14s} cold {:8.2f} ms (LLVM; the evaluation {:.2f}; first of the process {:.1f}); warm "
        "{:.3f} ms "
        "(linking into the JIT {:.3f}; the run alone, cached in memory, {:.3f})\n",
        r.workload, r.method, median(cold), median(cold_wall), first, median(warm), median(warm_load), run);
    std::fflush(stdout);
    std::error_code ec;
    std::filesystem::remove_all(tmpl, ec);
    ::unsetenv("LOOM_CACHE_DIR");
    reset_disk_cache();
    clear_host_kernel_cache();
}

// The host rows of the gathers, scans and random numbers (the GPU's N1, G1, X2, SC1 and MC1 at host sizes),
// beside bench/cpu_peers_ops.py's NumPy: CN1 x + 0.1 * normal noise (2^26 float32, 8 bytes per element), CG1
// an embedding lookup (2^14 int64 ids into a [2^18, 256] float32 table), CX2 cross-entropy of [4096, 8192]
// logits, CSC1 the cumsum of 2^26 float32 in one row, CMC1 the Asian call of MC1 over 2^16 paths (ms per
// price). `both` runs a row through the host's back end and the reference.
template <class Both>
void bench_host_ops(const BenchOptions& opt, Both&& both) {
    const std::int64_t N = std::int64_t{1} << 26;
    const Device cpu = Device::cpu();
    if (opt.wants("CN1")) {
        Tensor x = random_normal({N}, float32, 31, cpu);
        both("CN1_add_normal_noise", Array(x) + 0.1 * random_normal({N}, 7, float32, cpu),
             Tensor::host({N}, float32), 8.0 * static_cast<double>(N));
    }
    if (opt.wants("CG1")) {
        const std::int64_t rows = std::int64_t{1} << 18, cols = 256, n = std::int64_t{1} << 14;
        const Tensor table = random_normal({rows, cols}, float32, 32, cpu);
        const Tensor ids = random_uniform({n}, int64, 0.0, static_cast<double>(rows), 33, cpu);
        both("CG1_embedding_gather", take(table, ids, 0), Tensor::host({n, cols}, float32),
             2.0 * 4.0 * static_cast<double>(n * cols) + 8.0 * static_cast<double>(n));
    }
    if (opt.wants("CX2")) {
        const std::int64_t rows = 4096, classes = 8192;
        const Tensor logits = random_normal({rows, classes}, float32, 34, cpu);
        const Tensor labels = random_uniform({rows}, int64, 0.0, static_cast<double>(classes), 35, cpu);
        both("CX2_cross_entropy", cross_entropy(logits, labels), Tensor::host({}, float32),
             4.0 * static_cast<double>(rows * classes) + 8.0 * static_cast<double>(rows));
    }
    if (opt.wants("CSC1")) {
        Tensor x = random_normal({N}, float32, 36, cpu);
        both("CSC1_cumsum", cumsum(x, 0), Tensor::host({N}, float32), 8.0 * static_cast<double>(N));
    }
    if (opt.wants("CMC1")) {
        const std::int64_t paths = std::int64_t{1} << 16, steps = 252;
        const double dt = 1.0 / static_cast<double>(steps), r = 0.05, sigma = 0.2;
        const Array z = random_normal({paths, steps}, 5, float32, cpu);
        const Array log_s =
            std::log(100.0) + cumsum((r - 0.5 * sigma * sigma) * dt + sigma * std::sqrt(dt) * z, 1);
        const Array price = mean(maximum(mean(exp(log_s), {1}) - 100.0, 0.0)) * std::exp(-r);
        Tensor out = Tensor::host({}, float32);
        assign(out, price);
        check({price}, {out}, "CMC1");
        const double ms = host_median_ms([&] { assign(out, price); }, 3);
        report_ms("CMC1_asian_mc", host_backend_info().llvm ? "loom_llvm" : "loom_reference", ms);
        const std::vector<ir::NodePtr> roots{price.node()};
        report_ms("CMC1_asian_mc", "reference", host_median_ms([&] { (void)reference::evaluate(roots); }, 1));
    }
}

// The host workloads (CE1, CR1, CR3, CF1, CM1, and bench_host_ops's): host tensors through the back end that
// host tensors use (the LLVM back end, or the reference when LOOM_CPU_BACKEND=reference or its module is
// missing; the method says which), and the CPU reference interpreter beside it (method "reference", fewer
// repetitions: it is slow). No GPU needed; cpu_peers.py measures the peers and COPY_cpu.
void bench_host(const BenchOptions& opt) {
    const HostBackendInfo& hb = host_backend_info();
    const std::string method = hb.llvm ? "loom_llvm" : "loom_reference";
    fmt::print("# host: {} ({} threads){}\n",
               hb.llvm ? fmt::format("LLVM back end, {} {}", hb.cpu, hb.triple) : "the CPU reference",
               hb.threads, hb.llvm ? "" : fmt::format(": {}", hb.reason));
    const int reps = std::max(3, opt.reps / 5), ref_reps = 3;
    auto both = [&](const char* workload, const Array& y, const Tensor& out, double bytes) {
        assign(out, y);
        check({y}, {out}, workload);
        report(workload, method, host_median_ms([&] { assign(out, y); }, reps), bytes);
        const std::vector<ir::NodePtr> roots{y.node()};
        report(workload, "reference", host_median_ms([&] { (void)reference::evaluate(roots); }, ref_reps),
               bytes);
    };
    const std::int64_t N = std::int64_t{1} << 26;
    const Device cpu = Device::cpu();
    if (opt.wants("READ_cpu") || opt.wants("CR1") || opt.wants("CR3")) {
        // The host's read-only ceiling, beside COPY_cpu (cpu_peers.py): CR1 and CR3 only read, and a read
        // stream's bytes per second need not equal a copy's. A hand-written unordered sum of 2^26 float32 (8
        // independent accumulators per thread, no fixed order) on the back end's thread count, one
        // std::thread each.
        Tensor x = random_normal({N}, float32, 5, cpu);
        const auto* data = static_cast<const float*>(x.data());
        const int threads = std::max(1, hb.threads);
        volatile float sink = 0;
        auto read_all = [&] {
            std::vector<float> part(static_cast<std::size_t>(threads));
            std::vector<std::thread> pool;
            const std::int64_t per = N / threads;
            for (int t = 0; t < threads; ++t)
                pool.emplace_back([&, t] {
                    const float* p = data + per * t;
                    const std::int64_t n = t + 1 == threads ? N - per * t : per;
                    float acc[8] = {};
                    std::int64_t i = 0;
                    for (; i + 8 <= n; i += 8)
                        for (int l = 0; l < 8; ++l) acc[l] += p[i + l];
                    for (; i < n; ++i) acc[0] += p[i];
                    part[static_cast<std::size_t>(t)] =
                        ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
                });
            for (auto& th : pool) th.join();
            sink = sink + part[0];
        };
        report("READ_cpu", "hand_written", host_median_ms(read_all, std::max(reps, 15)),
               4.0 * static_cast<double>(N));
    }
    if (opt.wants("CE1")) {
        Tensor x = random_normal({N}, float32, 1, cpu);
        both("CE1", relu(Array(x) * 1.5 + 0.25), Tensor::host({N}, float32), 8.0 * static_cast<double>(N));
    }
    if (opt.wants("CR1")) {
        Tensor x = random_normal({8192, 8192}, float32, 2, cpu);
        both("CR1", sum(Array(x), 1), Tensor::host({8192}, float32), 4.0 * static_cast<double>(N));
    }
    if (opt.wants("CR3")) {
        Tensor x = random_normal({N}, float32, 3, cpu);
        both("CR3", sum(Array(x) * x), Tensor::host({}, float32), 4.0 * static_cast<double>(N));
    }
    if (opt.wants("CF1")) {
        Tensor x = random_normal({4096, 4096}, float32, 4, cpu);
        both("CF1", softmax(x), Tensor::host({4096, 4096}, float32), 8.0 * static_cast<double>(N / 4));
    }
    if (opt.wants("CM1")) {
        // A 2048^3 float32 product (2 n^3 FLOP) with the contract's bits, beside cpu_peers.py's NumPy (BLAS)
        // and Dr.Jit; the reference once.
        const std::int64_t n = 2048;
        const double flops = 2.0 * static_cast<double>(n * n * n);
        Tensor a = random_normal({n, n}, float32, 6, cpu), b = random_normal({n, n}, float32, 7, cpu);
        const Array y = matmul(Array(a), Array(b));
        Tensor out = Tensor::host({n, n}, float32);
        assign(out, y);
        check({y}, {out}, "CM1");
        report_gflops("CM1_matmul_f32", method, host_median_ms([&] { assign(out, y); }, reps), flops);
        const std::vector<ir::NodePtr> roots{y.node()};
        report_gflops("CM1_matmul_f32", "reference",
                      host_median_ms([&] { (void)reference::evaluate(roots); }, 1), flops);
    }
    bench_host_ops(opt, both);
    if (opt.wants("CC1") && hb.llvm) bench_host_compile();
}

// What the GPU workloads share: the options, the device and x, the elementwise workloads' input (N float32
// values; COPY_ceiling, E1 and R3 read it).
struct Gpu {
    static constexpr std::int64_t N = std::int64_t{1} << 28;
    const BenchOptions& opt;
    const Device& dev;
    const Tensor& x;
};

// COPY_ceiling: a device-to-device cudaMemcpy of x, the bandwidth the elementwise rows compare with. It runs
// whatever --only names.
void bench_copy_ceiling(const Gpu& gpu) {
    Tensor y = Tensor::empty({Gpu::N}, float32, gpu.dev);
    const double ms = timed_ms(
        [&] {
            if (cudaMemcpyAsync(y.data(), gpu.x.data(), gpu.x.nbytes(), cudaMemcpyDeviceToDevice,
                                current_stream()) != cudaSuccess)
                throw Error("cudaMemcpyAsync failed");
        },
        gpu.opt.reps);
    report("COPY_ceiling", "cudaMemcpy", ms, 8.0 * Gpu::N);
}

// Elementwise workloads (E1-E4). Compile time is excluded: the checked first call compiles.
void bench_e1(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const Tensor& x = gpu.x;
    const std::int64_t N = Gpu::N;
    const int reps = gpu.opt.reps;
    Tensor out = Tensor::empty({N}, float32, dev);
    Array e1 = relu(x * 1.5 + 0.25);
    assign(out, e1);
    check({e1}, {out}, "E1");
    report("E1_scale_bias_relu", "loom", timed_ms([&] { assign(out, e1); }, reps), 8.0 * N);
    // Unfused contrast: one kernel per op, intermediates through memory.
    Tensor t1 = Tensor::empty({N}, float32, dev), t2 = Tensor::empty({N}, float32, dev);
    report("E1_scale_bias_relu", "loom_unfused",
           timed_ms(
               [&] {
                   assign(t1, Array(x) * 1.5);
                   assign(t2, Array(t1) + 0.25);
                   assign(out, relu(t2));
               },
               reps),
           8.0 * N);
}

// N1: x + 0.1 * normal noise, the normals drawn in the kernel from each element's index (never in memory):
// read x, write the sum, 8 bytes per element.
void bench_n1(const Gpu& gpu) {
    const std::int64_t N = Gpu::N;
    Tensor out = Tensor::empty({N}, float32, gpu.dev);
    Array n1 = gpu.x + 0.1 * random_normal({N}, 7, float32, gpu.dev);
    assign(out, n1);
    check({n1}, {out}, "N1");
    report("N1_add_normal_noise", "loom", timed_ms([&] { assign(out, n1); }, gpu.opt.reps), 8.0 * N);
}

// G1: an embedding lookup, 65,536 int64 ids into a [2^20, 256] float32 table (1 GiB): each gathered row read
// once, the result written once, the ids read once (2 * 4 * 2^16 * 256 + 8 * 2^16 bytes). Checked indices.
void bench_g1(const Gpu& gpu) {
    const std::int64_t rows = std::int64_t{1} << 20, cols = 256, n = std::int64_t{1} << 16;
    const Tensor table = random_normal({rows, cols}, float32, 11, gpu.dev);
    const Tensor ids = random_uniform({n}, int64, 0.0, static_cast<double>(rows), 12, gpu.dev);
    Tensor out = Tensor::empty({n, cols}, float32, gpu.dev);
    const Array g1 = take(table, ids, 0);
    assign(out, g1);
    synchronize();  // an out-of-range id would be raised here
    check({g1}, {out}, "G1");
    report("G1_embedding_gather", "loom", timed_ms([&] { assign(out, g1); }, gpu.opt.reps),
           2.0 * 4.0 * static_cast<double>(n * cols) + 8.0 * static_cast<double>(n));
}

// SR1 (not in WORKLOADS.md yet): the embedding gradient, index_add of 2^16 rows of 256 float32 at int64 ids
// into a [2^14, 256] table (4 rows per id on average), deterministic (docs/semantics.md, section 15); GB/s of
// the table read and written, the rows and the ids read once.
void bench_sr1(const Gpu& gpu) {
    const std::int64_t rows = std::int64_t{1} << 14, cols = 256, n = std::int64_t{1} << 16;
    const Tensor table = random_normal({rows, cols}, float32, 21, gpu.dev);
    const Tensor grads = random_normal({n, cols}, float32, 22, gpu.dev);
    const Tensor ids = random_uniform({n}, int64, 0.0, static_cast<double>(rows), 23, gpu.dev);
    Tensor out = Tensor::empty({rows, cols}, float32, gpu.dev);
    const Array sr1 = index_add(table, ids, grads, 0);
    testing::poison(out);  // unwritten elements fail the check
    assign(out, sr1);
    synchronize();  // an out-of-range id would be raised here
    check({sr1}, {out}, "SR1");
    report("SR1_index_add", "loom", timed_ms([&] { assign(out, sr1); }, gpu.opt.reps),
           2.0 * 4.0 * static_cast<double>(rows * cols) + 4.0 * static_cast<double>(n * cols) +
               8.0 * static_cast<double>(n));
}

// The (query, key) pairs that `mask` leaves visible to T queries over S keys (docs/semantics.md,
// "Attention"): T S without a mask, T (T + 1) / 2 for TopLeft at T = S. Attention's products count 4 D FLOP
// per pair and head.
double attention_pairs(CausalMask mask, std::int64_t T, std::int64_t S) {
    if (mask == CausalMask::None) return static_cast<double>(T) * static_cast<double>(S);
    double pairs = 0;
    for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t last = mask == CausalMask::TopLeft ? t : t + S - T;  // the last key query t sees
        pairs += static_cast<double>(std::clamp<std::int64_t>(last + 1, 0, S));
    }
    return pairs;
}

// A2 and A3 (causal: mask TopLeft), A2nc and A3nc (no mask): attention of q of `shape` [B, H, T, D] over k
// and v [B, H, S, D]; TFLOP/s of the products over the visible pairs, 4 B H D T (T + 1) / 2 causal at T = S
// and 4 B H D T S without a mask, as peer_baselines.py and bench/peers_attention.py count them. Checked on
// the first head of the first batch (the same kernel, reading the views in place) against the reference: bit
// for bit in float32, within reference::attention_bound in bfloat16 (tensor cores).
void bench_attention(const Gpu& gpu, const std::string& id, const Shape& shape, std::int64_t S, DType dt,
                     std::uint64_t seed, CausalMask mask) {
    const Shape kv_shape{shape[0], shape[1], S, shape[3]};
    const Tensor q = random_normal(shape, dt, seed, gpu.dev),
                 k = random_normal(kv_shape, dt, seed + 1, gpu.dev),
                 v = random_normal(kv_shape, dt, seed + 2, gpu.dev);
    Tensor out = Tensor::empty(shape, dt, gpu.dev);
    const Array y = attention(q, k, v, {.causal = mask});
    assign(out, y);
    const std::vector<ir::SliceSpec> one{{0, 1, 1}, {0, 1, 1}};
    const Array y1 = attention(q.slice(one), k.slice(one), v.slice(one), {.causal = mask});
    Tensor out1 = Tensor::empty(y1.shape(), dt, gpu.dev);
    assign(out1, y1);
    if (dt == float32) {
        check({y1}, {out1}, id.c_str());
    } else if (g_check) {  // tensor cores: within reference::attention_bound (docs/semantics.md, section 13)
        const reference::AttentionBound b = reference::attention_bound(
            q.slice(one), k.slice(one), v.slice(one), nullptr, mask, ir::attention_scale(*y1.node()));
        const Tensor got = reference::cast(out1, float64);
        const auto* g = static_cast<const double*>(got.data());
        const auto* r = static_cast<const double*>(b.value.data());
        const auto* bd = static_cast<const double*>(b.bound.data());
        std::int64_t bad = 0;
        for (std::int64_t i = 0; i < got.numel(); ++i)
            if (!(std::fabs(g[i] - r[i]) <= bd[i])) ++bad;
        fmt::print("# {} (first head) checked against the tensor-core bound: {}\n", id,
                   bad == 0 ? "PASS" : "FAIL");
        if (bad) {
            fmt::print(stderr, "{}: RESULT MISMATCH: {} of {} outside the bound\n", id, bad, got.numel());
            g_failed = true;
        }
    }
    const double B = static_cast<double>(shape[0]), H = static_cast<double>(shape[1]),
                 D = static_cast<double>(shape[3]);
    report_flops(id, "loom", timed_ms([&] { assign(out, y); }, gpu.opt.reps), 0.0,
                 4.0 * B * H * D * attention_pairs(mask, shape[2], S));
}

// A4: decoding against a KV cache, q of `shape` [B, H, T, D] (T = 1) over k and v [B, H, S, D], no mask (the
// one query sees every key): CUDA cores in every dtype, the keys cut in chunks of 512 that blocks share
// (docs/semantics.md, "Decoding"), the reference's order. Memory-bound: GB/s of q, k, v and the output, each
// moved once (k and v dominate), as bench/peers_attention.py counts them. The whole result is checked against
// the reference bit for bit (the reference is cheap at T = 1).
void bench_decode(const Gpu& gpu, const std::string& id, const Shape& shape, std::int64_t S, DType dt,
                  std::uint64_t seed) {
    const Shape kv_shape{shape[0], shape[1], S, shape[3]};
    const Tensor q = random_normal(shape, dt, seed, gpu.dev),
                 k = random_normal(kv_shape, dt, seed + 1, gpu.dev),
                 v = random_normal(kv_shape, dt, seed + 2, gpu.dev);
    Tensor out = Tensor::empty(shape, dt, gpu.dev);
    const Array y = attention(q, k, v);
    testing::poison(out);  // unwritten elements fail the check
    assign(out, y);
    check_bits(y, out, id.c_str());
    const double bytes = static_cast<double>(q.nbytes() + k.nbytes() + v.nbytes() + out.nbytes());
    report(id, "loom", timed_ms([&] { assign(out, y); }, gpu.opt.reps), bytes);
}

// B1 and B2: one GPT-2 small block forward (samples/gpt2_block.hpp; B = 8, T = 1024, C = 768, 12 heads) as a
// traced function, with attention() (`written`: the written-out attention under Options::attention_rewrite);
// TFLOP/s of the projections and the causal attention products, as peer_baselines.py counts them. The
// block's bits are checked by samples/gpt2_block (the reference at B = 1, T = 64; float64 at full size).
void bench_gpt2_block(const Gpu& gpu, const std::string& id, DType dt, gpt2::Form form) {
    const std::int64_t B = 8, T = 1024;
    const gpt2::Weights w = gpt2::weights(dt, gpu.dev);
    const Tensor x = Tensor(astype(random_normal({B, T, gpt2::C}, float32, 1, gpu.dev), dt));
    const OptionsScope scope(gpt2::options_for(form));
    auto f = gpt2::traced_block(form, gpu.dev);
    Tensor out = gpt2::call(f, x, w);
    const double flops = 2.0 * B * T * gpt2::C * 12 * gpt2::C +
                         4.0 * B * gpt2::NH * gpt2::HS * static_cast<double>(T) * (T + 1) / 2;
    report_flops(id, "loom", timed_ms([&] { out = gpt2::call(f, x, w); }, gpu.opt.reps), 0.0, flops);
}

// MC1: the arithmetic-average Asian call of WORKLOADS.md, 2^20 paths x 252 steps (S0 = K = 100, r = 0.05,
// sigma = 0.2, T = 1): normals drawn in the kernel, the log path by cumsum, the average, the discounted mean
// payoff; ms per price, as one traced function (samples/monte_carlo.cpp prices the same option).
void bench_mc1(const Gpu& gpu) {
    const std::int64_t paths = std::int64_t{1} << 20, steps = 252;
    const double dt = 1.0 / static_cast<double>(steps), r = 0.05, sigma = 0.2;
    auto price = function("asian_call", [=](Array shift) {
        const Array z = random_normal({paths, steps}, 5, float32, gpu.dev);
        const Array log_s =
            std::log(100.0) + cumsum((r - 0.5 * sigma * sigma) * dt + sigma * std::sqrt(dt) * z, 1);
        return mean(maximum(mean(exp(log_s), {1}) - 100.0, 0.0)) * std::exp(-r) + shift;
    });
    const Tensor zero = Tensor(full({}, 0.0, float32, gpu.dev));
    Tensor out = price(zero);
    const double p = out.to_host().item<float>();
    fmt::print("# MC1 price {:.4f}\n", p);
    if (!(p > 5.0 && p < 7.0)) {  // the Asian call of these parameters is worth about 5.8
        fmt::print(stderr, "MC1: RESULT MISMATCH: price {} outside [5, 7]\n", p);
        g_failed = true;
    }
    report_ms("MC1_asian_mc", "loom", timed_ms([&] { out = price(zero); }, gpu.opt.reps));
}

void bench_e2(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const std::int64_t M = 16384;
    Tensor x2 = random_normal({M, M}, float32, 2, dev);
    Tensor b = random_normal({M}, float32, 3, dev), s = random_normal({M}, float32, 4, dev);
    Tensor out = Tensor::empty({M, M}, float32, dev);
    Array e2 = gelu_tanh(x2 + b) * s;
    assign(out, e2);
    check({e2}, {out}, "E2");
    report("E2_bias_gelu_scale", "loom", timed_ms([&] { assign(out, e2); }, gpu.opt.reps), 8.0 * M * M);
}

void bench_e3(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const std::int64_t n3 = std::int64_t{1} << 26;
    Tensor S = random_uniform({n3}, float32, 10, 110, 5, dev),
           K = random_uniform({n3}, float32, 10, 110, 6, dev);
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
    report("E3_black_scholes", "loom",
           timed_ms(
               [&] {
                   assign({oc, op}, {call, put});
               },
               gpu.opt.reps),
           20.0 * n3);
}

void bench_e4(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const std::int64_t N = Gpu::N;
    Tensor a = random_normal({N}, bfloat16, 8, dev), b = random_normal({N}, bfloat16, 9, dev);
    Tensor out = Tensor::empty({N}, bfloat16, dev);
    Array e4 = silu(a) * b;
    assign(out, e4);
    check({e4}, {out}, "E4");
    report("E4_swiglu_bf16", "loom", timed_ms([&] { assign(out, e4); }, gpu.opt.reps), 6.0 * N);
}

// Reductions and normalizations (R, F, X1), outputs poisoned before the checked first call, and A1. A
// workload whose evaluation throws loom::Error (a graph the GPU path does not run) is reported as not run and
// fails the benchmark; the other workloads still run.

// R1 and R2: the sums along the rows and along the columns of one matrix.
void bench_r1_r2(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const int reps = gpu.opt.reps;
    const std::int64_t M = 16384;
    Tensor xr = random_normal({M, M}, float32, 12, dev);
    if (gpu.opt.wants("R1_row_sum"))
        guarded("R1_row_sum", [&] {
            Tensor out = Tensor::empty({M}, float32, dev);
            Array r1 = sum(xr, 1);
            testing::poison(out);  // unwritten elements fail the check
            assign(out, r1);
            check({r1}, {out}, "R1");
            report("R1_row_sum", "loom", timed_ms([&] { assign(out, r1); }, reps), 4.0 * M * M);
        });
    if (gpu.opt.wants("R2_col_sum"))
        guarded("R2_col_sum", [&] {
            Tensor out = Tensor::empty({M}, float32, dev);
            Array r2 = sum(xr, 0);
            testing::poison(out);  // unwritten elements fail the check
            assign(out, r2);
            check({r2}, {out}, "R2");
            report("R2_col_sum", "loom", timed_ms([&] { assign(out, r2); }, reps), 4.0 * M * M);
        });
}

void bench_r3(const Gpu& gpu) {
    const Tensor& x = gpu.x;
    Tensor out = Tensor::empty({}, float32, gpu.dev);
    Array r3 = sum(x * x);
    testing::poison(out);  // unwritten elements fail the check
    assign(out, r3);
    check({r3}, {out}, "R3");
    report("R3_sum_squares", "loom", timed_ms([&] { assign(out, r3); }, gpu.opt.reps), 4.0 * Gpu::N);
}

// SC1: the inclusive cumsum of x (2^28 float32 in one row: 131072 tiles of the single-pass tree); GB/s of the
// 8 bytes each element moves (read once, written once).
void bench_sc1(const Gpu& gpu) {
    Tensor out = Tensor::empty({Gpu::N}, float32, gpu.dev);
    Array sc1 = cumsum(gpu.x, 0);
    testing::poison(out);  // unwritten elements fail the check
    assign(out, sc1);
    check({sc1}, {out}, "SC1");
    report("SC1_cumsum", "loom", timed_ms([&] { assign(out, sc1); }, gpu.opt.reps), 8.0 * Gpu::N);
}

// F1 and F2: softmax and layernorm along the rows of one matrix, into one output.
void bench_f1_f2(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const int reps = gpu.opt.reps;
    const std::int64_t Ms = 16384, Ns = 8192;
    Tensor xs = random_normal({Ms, Ns}, float32, 13, dev);
    Tensor out = Tensor::empty({Ms, Ns}, float32, dev);
    if (gpu.opt.wants("F1_softmax"))
        guarded("F1_softmax", [&] {
            Array f1 = softmax(xs, -1);
            testing::poison(out);  // unwritten elements fail the check
            assign(out, f1);
            check({f1}, {out}, "F1");
            report("F1_softmax", "loom", timed_ms([&] { assign(out, f1); }, reps), 8.0 * Ms * Ns);
        });
    if (gpu.opt.wants("F2_layernorm"))
        guarded("F2_layernorm", [&] {
            Tensor w = random_normal({Ns}, float32, 14, dev), b = random_normal({Ns}, float32, 15, dev);
            Array f2 = layernorm(xs, w, b, 1e-5, -1);
            testing::poison(out);  // unwritten elements fail the check
            assign(out, f2);
            check({f2}, {out}, "F2");
            report("F2_layernorm", "loom", timed_ms([&] { assign(out, f2); }, reps), 8.0 * Ms * Ns);
        });
}

void bench_x1(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const std::int64_t Ms = 16384, Ns = 8192;
    Tensor xl = random_normal({Ms, Ns}, float32, 17, dev);
    Tensor out = Tensor::empty({Ms}, float32, dev);
    Array x1 = logsumexp(xl, 1);
    testing::poison(out);  // unwritten elements fail the check
    assign(out, x1);
    check({x1}, {out}, "X1");
    report("X1_logsumexp", "loom", timed_ms([&] { assign(out, x1); }, gpu.opt.reps), 4.0 * Ms * Ns);
}

// X2: cross-entropy of [16384, 8192] float32 logits against 16384 int64 labels, the mean over the rows
// (PyTorch's F.cross_entropy): the logits read once, the labels once (4 * 2^27 + 8 * 2^14 bytes).
void bench_x2(const Gpu& gpu) {
    const std::int64_t rows = 16384, classes = 8192;
    const Tensor logits = random_normal({rows, classes}, float32, 21, gpu.dev);
    const Tensor labels = random_uniform({rows}, int64, 0.0, static_cast<double>(classes), 22, gpu.dev);
    Tensor out = Tensor::empty({}, float32, gpu.dev);
    const Array x2 = cross_entropy(logits, labels);
    const double bytes = 4.0 * static_cast<double>(rows * classes) + 8.0 * static_cast<double>(rows);
    // Traced (as a repeated call is written, and as torch.compile runs it): the call replays its kernels.
    // Lazily, each `assign` records, lowers and plans the composite's 36 nodes again on the host.
    auto traced = loom::function("x2_cross_entropy", [](Array l, Array y) { return cross_entropy(l, y); });
    testing::poison(out);
    traced(logits, labels, out);
    synchronize();  // an out-of-range label would be raised here
    check({x2}, {out}, "X2");
    report("X2_cross_entropy", "loom", timed_ms([&] { traced(logits, labels, out); }, gpu.opt.reps), bytes);
    testing::poison(out);
    assign(out, x2);
    synchronize();
    check({x2}, {out}, "X2 (lazy)");
    report("X2_cross_entropy", "loom_lazy", timed_ms([&] { assign(out, x2); }, gpu.opt.reps), bytes);
}

// A1: one traced function updates p, m, v and the step counter t (a 0-d tensor on the device) in place: the
// bias corrections change every step without a recompile (samples/adam.cpp).
void bench_a1(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const std::int64_t n = std::int64_t{1} << 26;
    const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    auto adam = [=](Array p, Array g, Array m, Array v, Array t) {
        const Array t1 = t + 1.0;
        const Array m1 = b1 * m + (1.0 - b1) * g, v1 = b2 * v + (1.0 - b2) * g * g;
        return std::tuple{p - lr * (m1 / (1.0 - pow(b1, t1))) / (sqrt(v1 / (1.0 - pow(b2, t1))) + eps), m1,
                          v1, t1};
    };
    auto step = loom::function("adam_step", adam);
    Tensor p = random_normal({n}, float32, 35, dev), g = random_normal({n}, float32, 36, dev);
    Tensor m = (Array(random_normal({n}, float32, 37, dev)) * 0.1).eval();
    Tensor v = random_uniform({n}, float32, 0.0, 0.01, 38, dev);
    Tensor t = full({}, 9.0, float32, dev).eval();  // this is step 10, as the peers' step
    Tensor p1 = Tensor::empty({n}, float32, dev), m1 = Tensor::empty({n}, float32, dev);
    Tensor v1 = Tensor::empty({n}, float32, dev), t1 = Tensor::empty({}, float32, dev);
    for (Tensor* o : {&p1, &m1, &v1, &t1}) testing::poison(*o);
    step(p, g, m, v, t, p1, m1, v1, t1);
    const auto [pr, mr, vr, tr] = adam(p, g, m, v, t);
    check({pr, mr, vr, tr}, {p1, m1, v1, t1}, "A1");
    report("A1_adam_step", "loom", timed_ms([&] { step(p, g, m, v, t, p, m, v, t); }, gpu.opt.reps),
           28.0 * n);
}

// Tiled kernels: transposes and stencils, written with the public API as a user writes them.

// T1 and S1: the transpose and the 5-point stencil of one matrix.
void bench_t1_s1(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const int reps = gpu.opt.reps;
    const std::int64_t M = 16384;
    Tensor xr = random_normal({M, M}, float32, 16, dev);
    if (gpu.opt.wants("T1_transpose"))
        guarded("T1_transpose", [&] {
            Tensor out = Tensor::empty({M, M}, float32, dev);
            Array t1 = transpose(xr);
            testing::poison(out);  // unwritten elements fail the check
            assign(out, t1);
            check({t1}, {out}, "T1");
            report("T1_transpose", "loom", timed_ms([&] { assign(out, t1); }, reps), 8.0 * M * M);
        });
    if (gpu.opt.wants("S1_stencil5"))
        guarded("S1_stencil5", [&] {
            const std::int64_t E = ir::SliceSpec::kNone;
            Tensor out = Tensor::empty({M - 2, M - 2}, float32, dev);
            const Array x(xr);
            Array s1 = 0.25 * (x.slice({{0, -2, 1}, {1, -1, 1}}) + x.slice({{2, E, 1}, {1, -1, 1}}) +
                               x.slice({{1, -1, 1}, {0, -2, 1}}) + x.slice({{1, -1, 1}, {2, E, 1}}));
            testing::poison(out);
            assign(out, s1);
            check({s1}, {out}, "S1");
            report("S1_stencil5", "loom", timed_ms([&] { assign(out, s1); }, reps), 8.0 * M * M);
        });
}

// T1 at 2-byte and 1-byte elements (Loom only; no peer row in WORKLOADS.md): the vector variant's 16-byte
// accesses of 8 bfloat16 or 16 int8 elements. `id` is the row's.
void bench_t1_narrow(const Gpu& gpu, const std::string& id, DType dt) {
    const std::int64_t M = 16384;
    Tensor x = random_normal({M, M}, dt == int8 ? float32 : dt, 19, gpu.dev);
    if (dt == int8) x = (x * 40.0).astype(int8);  // spread over the int8 range
    Tensor out = Tensor::empty({M, M}, dt, gpu.dev);
    Array t = transpose(x);
    testing::poison(out);
    assign(out, t);
    const std::string short_id = id.substr(0, id.find('_'));
    check({t}, {out}, short_id.c_str());
    report(id, "loom", timed_ms([&] { assign(out, t); }, gpu.opt.reps),
           2.0 * static_cast<double>(itemsize(dt)) * M * M);
}

void bench_t2(const Gpu& gpu) {
    Tensor xt = random_normal({32, 2048, 16, 128}, bfloat16, 17, gpu.dev);
    Tensor out = Tensor::empty({32, 16, 2048, 128}, bfloat16, gpu.dev);
    Array t2 = permute(xt, {0, 2, 1, 3});
    testing::poison(out);
    assign(out, t2);
    check({t2}, {out}, "T2");
    report("T2_permute_bf16", "loom", timed_ms([&] { assign(out, t2); }, gpu.opt.reps),
           4.0 * static_cast<double>(xt.numel()));
}

void bench_s2(const Gpu& gpu) {
    const std::int64_t n = 512, E = ir::SliceSpec::kNone;
    Tensor x3 = random_normal({n, n, n}, float32, 18, gpu.dev);
    Tensor out = Tensor::empty({n - 2, n - 2, n - 2}, float32, gpu.dev);
    const Array x(x3);
    auto at = [&](std::int64_t a, std::int64_t b,
                  std::int64_t c) {  // the shift (a, b, c) in -1..1 per axis
        auto range = [&](std::int64_t d) { return ir::SliceSpec{1 + d, d == 1 ? E : -1 + d, 1}; };
        return x.slice({range(a), range(b), range(c)});
    };
    Array s2 =
        (at(0, 0, 0) + at(-1, 0, 0) + at(1, 0, 0) + at(0, -1, 0) + at(0, 1, 0) + at(0, 0, -1) + at(0, 0, 1)) *
        (1.0 / 7.0);
    testing::poison(out);
    assign(out, s2);
    check({s2}, {out}, "S2");
    report("S2_stencil7_3d", "loom", timed_ms([&] { assign(out, s2); }, gpu.opt.reps),
           8.0 * static_cast<double>(x3.numel()));
}

// Matrix products on CUDA cores (float32), and the bfloat16 workloads M2 and M4 on tensor cores
// (Options::product_path = TensorCores: Hopper's wgmma; and mma.sync forced, the fallback;
// docs/performance.md).
void bench_m1(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const int reps = gpu.opt.reps;
    const std::int64_t n = 4096;
    Tensor a = random_normal({n, n}, float32, 21, dev), b = random_normal({n, n}, float32, 22, dev);
    Tensor out = Tensor::empty({n, n}, float32, dev);
    Array m1 = matmul(a, b);
    testing::poison(out);
    assign(out, m1);
    check({m1}, {out}, "M1");
    report_flops("M1_gemm_f32", "loom", timed_ms([&] { assign(out, m1); }, reps), 0, 2.0 * n * n * n);
    // The opt-in precisions on tensor cores (Options::product_precision), each checked against its bound.
    for (ProductPrecision p : {ProductPrecision::TF32, ProductPrecision::TF32x3}) {
        Options o = current_options();
        o.product_precision = p;
        const OptionsScope scope(o);
        const Array mp = matmul(a, b);
        testing::poison(out);
        assign(out, mp);
        synchronize();
        check_bound(out, a, b, 64, p == ProductPrecision::TF32 ? "M1 TF32" : "M1 3xTF32", p);
        report_flops("M1_gemm_f32", p == ProductPrecision::TF32 ? "loom_tf32" : "loom_3xtf32",
                     timed_ms([&] { assign(out, mp); }, reps), 0, 2.0 * n * n * n);
    }
    // TF32 with B a transposed view (x @ w.T, both operands K-major: the layout TF32's MMAs read directly).
    Options o = current_options();
    o.product_precision = ProductPrecision::TF32;
    const OptionsScope scope(o);
    const Array nt = matmul(a, b.transposed());
    testing::poison(out);
    assign(out, nt);
    synchronize();
    check_bound(out, a, b.transposed(), 64, "M1 TF32 (B transposed)", ProductPrecision::TF32);
    report_flops("M1_gemm_f32", "loom_tf32_nt", timed_ms([&] { assign(out, nt); }, reps), 0, 2.0 * n * n * n);
}

// The product, then its epilogue as a pointwise kernel of its own: what the fused kernel must beat.
double unfused_ms(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& product, Tensor& out,
                  int reps) {
    return timed_ms(
        [&] {
            assign(product, matmul(a, b));
            assign(out, gelu(Array(product) + bias));
        },
        reps);
}

void bench_m3(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const int reps = gpu.opt.reps;
    const std::int64_t m = 4096, k = 256, n = 4096;
    Tensor a = random_normal({m, k}, float32, 23, dev), b = random_normal({k, n}, float32, 24, dev);
    Tensor bias = random_normal({n}, float32, 25, dev), out = Tensor::empty({m, n}, float32, dev);
    Array m3 = gelu(matmul(a, b) + bias);
    testing::poison(out);
    assign(out, m3);
    check({m3}, {out}, "M3");
    report_flops("M3_gemm_bias_gelu_f32", "loom", timed_ms([&] { assign(out, m3); }, reps), 0,
                 2.0 * m * n * k);
    report_flops("M3_gemm_bias_gelu_f32", "loom_product", timed_ms([&] { assign(out, matmul(a, b)); }, reps),
                 0, 2.0 * m * n * k);
    Tensor product = Tensor::empty({m, n}, float32, dev);
    report_flops("M3_gemm_bias_gelu_f32", "loom_unfused", unfused_ms(a, b, bias, product, out, reps), 0,
                 2.0 * m * n * k);
}

void bench_m2(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const int reps = gpu.opt.reps;
    const OptionsScope tc(with_path(ProductPath::TensorCores));
    const std::int64_t n = 8192;
    Tensor a = random_normal({n, n}, bfloat16, 30, dev), b = random_normal({n, n}, bfloat16, 31, dev);
    Tensor out = Tensor::empty({n, n}, bfloat16, dev);
    Array m2 = matmul(a, b);
    testing::poison(out);
    assign(out, m2);
    check_bound(out, a, b, 32, "M2");
    report_flops("M2_gemm_bf16", "loom", timed_ms([&] { assign(out, m2); }, reps), 0, 2.0 * n * n * n);
    const OptionsScope mma(with_path(ProductPath::MmaSync, true));
    testing::poison(out);
    assign(out, m2);
    check_bound(out, a, b, 32, "M2 (mma.sync)");
    report_flops("M2_gemm_bf16", "loom_mma_sync", timed_ms([&] { assign(out, m2); }, reps), 0,
                 2.0 * n * n * n);
}

void bench_m4(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const int reps = gpu.opt.reps;
    const OptionsScope tc(with_path(ProductPath::TensorCores));
    const std::int64_t m = 8192, k = 1024, n = 8192;
    Tensor a = random_normal({m, k}, bfloat16, 32, dev), b = random_normal({k, n}, bfloat16, 33, dev);
    Tensor bias = random_normal({n}, bfloat16, 34, dev), out = Tensor::empty({m, n}, bfloat16, dev);
    Array m4 = gelu(matmul(a, b) + bias);
    testing::poison(out);
    assign(out, matmul(a, b));
    check_bound(out, a, b, 64, "M4 (its product)");
    report_flops("M4_gemm_bias_gelu_bf16", "loom", timed_ms([&] { assign(out, m4); }, reps), 0,
                 2.0 * m * n * k);
    report_flops("M4_gemm_bias_gelu_bf16", "loom_product", timed_ms([&] { assign(out, matmul(a, b)); }, reps),
                 0, 2.0 * m * n * k);
    Tensor product = Tensor::empty({m, n}, bfloat16, dev);
    report_flops("M4_gemm_bias_gelu_bf16", "loom_unfused", unfused_ms(a, b, bias, product, out, reps), 0,
                 2.0 * m * n * k);
    const OptionsScope mma(with_path(ProductPath::MmaSync, true));
    report_flops("M4_gemm_bias_gelu_bf16", "loom_mma_sync", timed_ms([&] { assign(out, m4); }, reps), 0,
                 2.0 * m * n * k);
    report_flops("M4_gemm_bias_gelu_bf16", "loom_mma_sync_product",
                 timed_ms([&] { assign(out, matmul(a, b)); }, reps), 0, 2.0 * m * n * k);
}

void bench_m5(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const std::int64_t n = 16384;
    Tensor a = random_normal({n, n}, float32, 26, dev), x = random_normal({n}, float32, 27, dev);
    Tensor out = Tensor::empty({n}, float32, dev);
    Array m5 = matmul(a, x);
    testing::poison(out);
    assign(out, m5);
    check({m5}, {out}, "M5");
    report("M5_gemv_f32", "loom", timed_ms([&] { assign(out, m5); }, gpu.opt.reps), 4.0 * n * n);
}

void bench_m6(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    Tensor a = random_normal({4096, 64, 64}, float32, 28, dev),
           b = random_normal({4096, 64, 64}, float32, 29, dev);
    Tensor out = Tensor::empty({4096, 64, 64}, float32, dev);
    Array m6 = matmul(a, b);
    testing::poison(out);
    assign(out, m6);
    check({m6}, {out}, "M6");
    report_flops("M6_bmm_small_f32", "loom", timed_ms([&] { assign(out, m6); }, gpu.opt.reps), 0,
                 2.0 * 4096 * 64 * 64 * 64);
}

// M7: the operand layouts (T: a transposed view of a row-major matrix) at 4096^3 float32 (CUDA cores) and
// 8192^3 bfloat16 (tensor cores, the default), and attention's head products q k^T and p v on heads sliced
// from one qkv tensor [8, 1024, 2304] (GPT-2 small: 12 heads of 64), in float32 and bfloat16, all on the
// default path. Each checked against the product's bound on its first rows or batch entry.
void bench_m7(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const int reps = gpu.opt.reps;
    for (DType dt : {float32, bfloat16}) {
        const std::string tag = dt == float32 ? "f32" : "bf16";
        const std::int64_t n = dt == float32 ? 4096 : 8192;
        guarded(fmt::format("M7 layouts {}", tag).c_str(), [&] {
            Tensor a = random_normal({n, n}, dt, 60, dev), b = random_normal({n, n}, dt, 61, dev);
            Tensor out = Tensor::empty({n, n}, dt, dev);
            for (int l = 0; l < 4; ++l) {
                const char* layout[] = {"NN", "NT", "TN", "TT"};
                const Tensor x = l & 2 ? a.transposed() : a, y = l & 1 ? b.transposed() : b;
                const Array c = matmul(x, y);
                testing::poison(out);
                assign(out, c);
                synchronize();
                const std::string id = fmt::format("M7_{}_{}", layout[l], tag);
                check_bound(out, x, y, 16, id.c_str());
                report_flops(id, "loom", timed_ms([&] { assign(out, c); }, reps), 0, 2.0 * n * n * n);
            }
        });
        guarded(fmt::format("M7 heads {}", tag).c_str(), [&] {
            constexpr std::int64_t B = 8, T = 1024, C = 768, H = 12, D = 64;
            const Tensor qkv = random_normal({B, T, 3 * C}, dt, 62, dev),
                         p = random_normal({B, H, T, T}, dt, 63, dev);
            auto head = [&](std::int64_t which) {  // [B, H, T, D], rows 3C apart
                return qkv.slice({{}, {}, {which * C, (which + 1) * C, 1}})
                    .reshape({B, T, H, D})
                    .permute({0, 2, 1, 3});
            };
            const Tensor q = head(0), kt = head(1).permute({0, 1, 3, 2}), v = head(2);
            const double flops = 2.0 * B * H * T * T * D;
            Tensor scores = Tensor::empty({B, H, T, T}, dt, dev), out = Tensor::empty({B, H, T, D}, dt, dev);
            const Array qk = matmul(q, kt), pv = matmul(p, v);
            testing::poison(scores);
            assign(scores, qk);
            testing::poison(out);
            assign(out, pv);
            synchronize();
            const std::string qk_id = "M7_heads_qk_" + tag, pv_id = "M7_heads_pv_" + tag;
            check_bound(scores, q, kt, 1, qk_id.c_str());
            check_bound(out, p, v, 1, pv_id.c_str());
            report_flops(qk_id, "loom", timed_ms([&] { assign(scores, qk); }, reps), 0, flops);
            report_flops(pv_id, "loom", timed_ms([&] { assign(out, pv); }, reps), 0, flops);
        });
    }
}

// P1: 16 batches of 64 MiB in pinned memory through E1 with loom::Pipeline (three streams, two buffers per
// side); wall time on the host clock from the first enqueue to the last download, median of 5, as
// peer_baselines.py times its pipelines. Beside it the same two-stream copies with no kernel (the peers'
// pipeline_copies_only), measured by this process.
void bench_p1(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    const std::int64_t nb = 16, per = std::int64_t{1} << 24;
    const double total = 2.0 * static_cast<double>(nb * per) * 4.0;
    Tensor hin = pinned_empty({nb, per}, float32), hout = pinned_empty({nb, per}, float32);
    copy_async(hin, random_normal({nb, per}, float32, 39, dev));
    synchronize();
    auto e1f = loom::function("p1_e1", [](Array v) { return relu(v * 1.5 + 0.25); });
    auto batch = [&](const Tensor& all, std::int64_t i) { return all.as_strided({per}, {1}, i * per); };
    auto wall_ms = [](const std::function<void()>& fn) {
        std::vector<double> ts;
        for (int r = 0; r < 5; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            fn();
            ts.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(ts.begin(), ts.end());
        return ts[2];
    };
    {
        Pipeline pipe({hin}, {hout});
        auto run = [&] {
            pipe.run(
                [&](std::int64_t, std::span<const Tensor> x, std::span<const Tensor> y) { e1f(x[0], y[0]); });
            pipe.synchronize();
        };
        std::memset(hout.data(), 0xff, hout.nbytes());  // NaN: a batch not written fails the check
        run();                                          // compiles the kernel, warms the copy engines
        for (std::int64_t i : {std::int64_t{0}, nb / 2, nb - 1})
            check({relu(Array(batch(hin, i)) * 1.5 + 0.25)}, {batch(hout, i)},
                  fmt::format("P1 batch {}", i).c_str());
        report("P1_pipeline", "loom_pipeline", wall_ms(run), total);
    }
    Stream s[2];
    Tensor d[2] = {Tensor::empty({per}, float32, dev), Tensor::empty({per}, float32, dev)};
    synchronize();
    auto copies = [&] {
        for (std::int64_t i = 0; i < nb; ++i) {
            copy_async(d[i % 2], batch(hin, i), s[i % 2]);
            copy_async(batch(hout, i), d[i % 2], s[i % 2]);
        }
        s[0].synchronize();
        s[1].synchronize();
    };
    copies();
    report("P1_pipeline", "loom_copies_only", wall_ms(copies), total);
}

// O1: a bare cudaLaunchKernel of an empty kernel, and Loom's paths for E1 on 1024 elements.
void bench_o1(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    report_us("O1_overhead", "bare_launch", bare_launches_us(1));
    Tensor small = random_normal({1024}, float32, 11, dev), out = Tensor::empty({1024}, float32, dev);
    auto e1f = loom::function("e1", [](Array v) { return relu(v * 1.5 + 0.25); });
    report_us("O1_overhead", "loom", host_us_per_call([&] { e1f(small, out); }));
    report_us("O1_overhead", "loom_alloc", host_us_per_call([&] { (void)e1f(small); }));
    report_us("O1_overhead", "loom_lazy", host_us_per_call([&] { assign(out, relu(small * 1.5 + 0.25)); }));
    check({relu(small * 1.5 + 0.25)}, {out}, "O1");
    // A traced bfloat16 product on tensor cores (on Hopper, wgmma with its two tensor maps, cached by buffer
    // and shape: a call encodes none).
    Tensor x = random_normal({128, 64}, bfloat16, 12, dev), w = random_normal({64, 128}, bfloat16, 13, dev);
    Tensor y = Tensor::empty({128, 128}, bfloat16, dev);
    auto mmf = loom::function(
        "o1_product", [](Array p, Array q) { return matmul(p, q); },
        Options{.product_path = ProductPath::TensorCores});
    report_us("O1_overhead", "loom_product", host_us_per_call([&] { mmf(x, w, y); }));
}

// L1: 100 dependent elementwise ops (tanh, then y * 0.999 + 0.001, alternating) on 4096 float32, host and
// device time per call: 2000 calls, then one synchronization (WORKLOADS.md). Traced, the chain is one fused
// kernel and a call one launch; lazily (`assign`), each call records and looks up the 100 ops again.
Array chain100(Array y) {
    for (int k = 0; k < 100; ++k) y = k % 2 ? y * 0.999 + 0.001 : tanh(y);
    return y;
}

void bench_l1(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    Tensor x = random_normal({4096}, float32, 61, dev), out = Tensor::empty({4096}, float32, dev);
    auto f = loom::function("l1_chain100", chain100);
    f(x, out);
    check({chain100(Array(x))}, {out}, "L1");
    report_us("L1_chain100", "loom", us_per_call([&] { f(x, out); }, 2000, Clock::HostAndDevice));
    report_us("L1_chain100", "loom_lazy",
              us_per_call([&] { assign(out, chain100(Array(x))); }, 2000, Clock::HostAndDevice));
}

// O2: host microseconds per call of a traced function of three kernels (two reductions of different shapes
// and an elementwise result) on a small input: as one automatic CUDA graph (capture = Auto, the default),
// kernel by kernel (capture = Never), against one cudaGraphLaunch of the same three kernels captured by hand
// and three bare launches of an empty kernel.
void bench_o2(const Gpu& gpu) {
    const Device& dev = gpu.dev;
    auto three = [](Array v) { return std::tuple{sum(v, 0), max(v, 1), exp(v * 0.5) - v}; };
    auto f = loom::function("o2_auto", three);
    auto g = loom::function("o2_never", three, Options{.capture = CapturePolicy::Never});
    Tensor small = random_normal({64, 256}, float32, 40, dev);
    Tensor o1 = Tensor::empty({256}, float32, dev), o2 = Tensor::empty({64}, float32, dev);
    Tensor o3 = Tensor::empty({64, 256}, float32, dev);
    f(small, o1, o2, o3);
    g(small, o1, o2, o3);
    synchronize();
    const auto [r1, r2, r3] = three(Array(small));
    check({r1, r2, r3}, {o1, o2, o3}, "O2");
    report_us("O2_graphs", "bare_3_launches", bare_launches_us(3));
    const cudaStream_t stream = current_stream();
    // The same three kernels captured by hand on a stream of its own: one cudaGraphLaunch per call.
    Stream cs;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    with_stream(cs, [&] {
        if (cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
            throw Error("cudaStreamBeginCapture failed");
        g(small, o1, o2, o3);
        if (cudaStreamEndCapture(cs, &graph) != cudaSuccess) throw Error("cudaStreamEndCapture failed");
    });
    if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) throw Error("cudaGraphInstantiate failed");
    report_us("O2_graphs", "one_graph_launch", host_us_per_call([&] {
                  if (cudaGraphLaunch(exec, stream) != cudaSuccess) throw Error("cudaGraphLaunch failed");
              }));
    report_us("O2_graphs", "loom_auto_graph", host_us_per_call([&] { f(small, o1, o2, o3); }));
    report_us("O2_graphs", "loom_kernel_by_kernel", host_us_per_call([&] { g(small, o1, o2, o3); }));
    synchronize();
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
    check({r1, r2, r3}, {o1, o2, o3}, "O2 after the replays");
    fmt::print("# O2: {} graph replays, {} captures of the automatic graph\n", f.stats().graph_replays,
               f.stats().graph_captures);
}

// A GPU workload: the ids of the rows it prints (it runs when --only names one of them, or names none), the
// function that runs it, and `guarded`: a loom::Error it throws is reported as its row's NOT RUN and the next
// workload runs (guarded()); else the error ends the benchmark. Workloads of several rows share their inputs
// and guard each row themselves.
struct GpuWorkload {
    std::vector<std::string> ids;
    bool guarded;
    void (*run)(const Gpu&);
};

// The GPU workloads in the order they run (after C1 and COPY_ceiling).
const std::vector<GpuWorkload>& gpu_workloads() {
    static const std::vector<GpuWorkload> table = {
        {{"E1_scale_bias_relu"}, false, bench_e1},
        {{"E2_bias_gelu_scale"}, false, bench_e2},
        {{"N1_add_normal_noise"}, true, bench_n1},
        {{"G1_embedding_gather"}, true, bench_g1},
        {{"E3_black_scholes"}, false, bench_e3},
        {{"E4_swiglu_bf16"}, false, bench_e4},
        {{"R1_row_sum", "R2_col_sum"}, false, bench_r1_r2},
        {{"R3_sum_squares"}, true, bench_r3},
        {{"SC1_cumsum"}, true, bench_sc1},
        {{"SR1_index_add"}, true, bench_sr1},
        {{"F1_softmax", "F2_layernorm"}, false, bench_f1_f2},
        {{"X1_logsumexp"}, true, bench_x1},
        {{"X2_cross_entropy"}, true, bench_x2},
        {{"A1_adam_step"}, true, bench_a1},
        {{"T1_transpose", "S1_stencil5"}, false, bench_t1_s1},
        {{"T1H_transpose_bf16"},
         true,
         [](const Gpu& gpu) { bench_t1_narrow(gpu, "T1H_transpose_bf16", bfloat16); }},
        {{"T1B_transpose_int8"},
         true,
         [](const Gpu& gpu) { bench_t1_narrow(gpu, "T1B_transpose_int8", int8); }},
        {{"T2_permute_bf16"}, true, bench_t2},
        {{"S2_stencil7_3d"}, true, bench_s2},
        {{"M1_gemm_f32"}, true, bench_m1},
        {{"M3_gemm_bias_gelu_f32"}, true, bench_m3},
        {{"M2_gemm_bf16"}, true, bench_m2},
        {{"M4_gemm_bias_gelu_bf16"}, true, bench_m4},
        {{"M5_gemv_f32"}, true, bench_m5},
        {{"M6_bmm_small_f32"}, true, bench_m6},
        {{"M7_NN_f32", "M7_NT_f32", "M7_TN_f32", "M7_TT_f32", "M7_heads_qk_f32", "M7_heads_pv_f32",
          "M7_NN_bf16", "M7_NT_bf16", "M7_TN_bf16", "M7_TT_bf16", "M7_heads_qk_bf16", "M7_heads_pv_bf16"},
         false,
         bench_m7},
        {{"MC1_asian_mc"}, true, bench_mc1},
        {{"B1_gpt2_block_f32"},
         true,
         [](const Gpu& gpu) { bench_gpt2_block(gpu, "B1_gpt2_block_f32", float32, gpt2::Form::Attention); }},
        {{"B1_gpt2_block_f32_written"},
         true,
         [](const Gpu& gpu) {
             bench_gpt2_block(gpu, "B1_gpt2_block_f32_written", float32, gpt2::Form::Rewrite);
         }},
        {{"B2_gpt2_block_bf16"},
         true,
         [](const Gpu& gpu) {
             bench_gpt2_block(gpu, "B2_gpt2_block_bf16", bfloat16, gpt2::Form::Attention);
         }},
        {{"B2_gpt2_block_bf16_written"},
         true,
         [](const Gpu& gpu) {
             bench_gpt2_block(gpu, "B2_gpt2_block_bf16_written", bfloat16, gpt2::Form::Rewrite);
         }},
        {{"A2_attention_f32"},
         true,
         [](const Gpu& gpu) {
             bench_attention(gpu, "A2_attention_f32", {8, 12, 1024, 64}, 1024, float32, 31,
                             CausalMask::TopLeft);
         }},
        {{"A2_attention_bf16"},
         true,
         [](const Gpu& gpu) {
             bench_attention(gpu, "A2_attention_bf16", {8, 12, 1024, 64}, 1024, bfloat16, 34,
                             CausalMask::TopLeft);
         }},
        {{"A3_attention_bf16"},
         true,
         [](const Gpu& gpu) {
             bench_attention(gpu, "A3_attention_bf16", {2, 16, 4096, 128}, 4096, bfloat16, 37,
                             CausalMask::TopLeft);
         }},
        {{"A2nc_attention_f32"},
         true,
         [](const Gpu& gpu) {
             bench_attention(gpu, "A2nc_attention_f32", {8, 12, 1024, 64}, 1024, float32, 41,
                             CausalMask::None);
         }},
        {{"A2nc_attention_bf16"},
         true,
         [](const Gpu& gpu) {
             bench_attention(gpu, "A2nc_attention_bf16", {8, 12, 1024, 64}, 1024, bfloat16, 44,
                             CausalMask::None);
         }},
        {{"A3nc_attention_bf16"},
         true,
         [](const Gpu& gpu) {
             bench_attention(gpu, "A3nc_attention_bf16", {2, 16, 4096, 128}, 4096, bfloat16, 47,
                             CausalMask::None);
         }},
        {{"A4_decode_f32"},
         true,
         [](const Gpu& gpu) {
             bench_decode(gpu, "A4_decode_f32", {8, 12, 1, 64}, 8192, float32, 51);
         }},
        {{"A4_decode_bf16"},
         true,
         [](const Gpu& gpu) {
             bench_decode(gpu, "A4_decode_bf16", {8, 12, 1, 64}, 8192, bfloat16, 54);
         }},
        {{"P1_pipeline"}, true, bench_p1},
        {{"O1_overhead"}, false, bench_o1},
        {{"L1_chain100"}, true, bench_l1},
        {{"O2_graphs"}, true, bench_o2},
    };
    return table;
}

// The command line into `opt` (--batch sets g_batch); false for arguments it does not take.
bool parse_args(int argc, char** argv, BenchOptions& opt) {
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
        } else if (a == "--batch") {
            g_batch = true;
        } else if (a == "--reps" && i + 1 < argc) {
            opt.reps = std::atoi(argv[++i]);
        } else {
            return false;
        }
    }
    return true;
}

// The ids `--only` may name: the host workloads', C1 and COPY, and every GPU workload's (the part before
// '_', and its family: A2 for A2nc).
std::set<std::string> known_ids() {
    std::set<std::string> ids = {"CE1", "CR1",  "CR3",  "CF1", "CM1",  "CN1", "CG1",
                                 "CX2", "CSC1", "CMC1", "CC1", "READ", "C1",  "COPY"};
    for (const GpuWorkload& w : gpu_workloads())
        for (const std::string& name : w.ids) {
            ids.insert(row_id(name));
            ids.insert(family_id(row_id(name)));
        }
    return ids;
}

// Each id of `--only` that no workload has is reported NOT RUN (stdout and stderr, as a failed workload is);
// true when every id is known. A misspelt id must not pass as a run that measured nothing.
bool check_ids(const BenchOptions& opt) {
    const std::set<std::string> ids = known_ids();
    bool ok = true;
    for (const std::string& id : opt.only) {
        if (ids.count(id)) continue;
        fmt::print("# {} not run: loom_bench has no workload {}\n", id, id);
        fmt::print(stderr, "{}: NOT RUN: loom_bench has no workload {} (known: {})\n", id, id,
                   fmt::join(ids, ", "));
        ok = false;
    }
    return ok;
}

}  // namespace

int main(int argc, char** argv) {
    BenchOptions opt;
    if (!parse_args(argc, argv, opt)) {
        fmt::print(stderr,
                   "usage: loom_bench [--only E1,E2,...] [--json FILE] [--reps N] [--no-check] [--batch]\n");
        return 2;
    }
    g_check = opt.check;
    if (!check_ids(opt)) g_failed = true;
    // The host workloads first: they need no GPU (--only CE1,CR1,CR3,CF1,CM1 or CN1,CG1,CX2,CSC1,CMC1 runs
    // them alone).
    bool host_only = !opt.only.empty();
    for (const std::string& id : opt.only)
        host_only = host_only && id.size() > 1 && id[0] == 'C' && id != "C1";
    guarded("host workloads", [&] { bench_host(opt); });
    if (host_only) {
        if (!opt.json.empty()) write_json(opt.json);
        return g_failed ? 1 : 0;
    }
    if (!cuda_available()) {
        fmt::print(stderr, "loom_bench: no CUDA device found; the benchmark needs a GPU\n");
        return g_failed ? 1 : 77;
    }
    const Device dev = Device::cuda(0);
    fmt::print("# loom_bench on {}\n", device_info(0).name);

    // First: C1 measures the process's first compile.
    if (opt.wants("C1_compile")) bench_c1(dev);

    const Tensor x = random_normal({Gpu::N}, float32, 1, dev);
    const Gpu gpu{opt, dev, x};
    bench_copy_ceiling(gpu);
    for (const GpuWorkload& w : gpu_workloads()) {
        if (std::none_of(w.ids.begin(), w.ids.end(), [&](const std::string& id) { return opt.wants(id); }))
            continue;
        if (w.guarded)
            guarded(w.ids[0].c_str(), [&] { w.run(gpu); });
        else
            w.run(gpu);
    }

    if (!opt.json.empty()) write_json(opt.json);
    return g_failed ? 1 : 0;
}
