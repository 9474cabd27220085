// loom_disk_cache_stress: several processes started together on one empty cache directory, each compiling
// the same distinct kernels through the disk cache and checking every image (and, with --run, every result
// on the GPU), over several rounds with the directory wiped between rounds; then one more process that must
// find every kernel without calling NVRTC.
//
// Usage: loom_disk_cache_stress --dir DIR [--processes 8] [--rounds 3] [--kernels 10] [--run]
// Exit status 0 when every process in every round succeeded. (--child is the per-process mode it spawns.)
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <loom/loom.hpp>
#include <loom/runtime/disk_cache.hpp>
#include <loom/runtime/kernel_cache.hpp>
#include <loom/runtime/testing.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "stress_kernels.hpp"

extern char** environ;

using namespace loom;
namespace fs = std::filesystem;

namespace {

struct Args {
    fs::path dir;
    int processes = 8, rounds = 3, kernels = 10, child = -1;
    bool run = false;
    bool expect_no_nvrtc = false;
};

std::string read_file(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string kernel_source(int k) {
    Tensor x = Tensor::host({1000}, float32);
    return cuda_source({stress::kernel_graph(x, k)}, fmt::format("stress_{}", k));
}

// One process: every kernel in a shuffled order through the disk cache; each image must equal the reference
// NVRTC output; with --run each kernel also runs on the GPU against the CPU reference.
int child_main(const Args& a) {
    const fs::path cache = a.dir / "cache", go = a.dir / "go";
    ::setenv("LOOM_CACHE_DIR", cache.c_str(), 1);
    reset_disk_cache();
    while (!fs::exists(go)) std::this_thread::sleep_for(std::chrono::microseconds(200));  // start together
    std::vector<int> order(static_cast<std::size_t>(a.kernels));
    for (int k = 0; k < a.kernels; ++k) order[static_cast<std::size_t>(k)] = k;
    std::shuffle(order.begin(), order.end(),
                 std::mt19937(static_cast<unsigned>(a.child * 7919 + ::getpid())));
    const std::uint64_t nvrtc_before = nvrtc::compile_count();
    int failures = 0;
    for (int k : order) {
        if (a.run) {
            Tensor x =
                random_uniform({4097}, float32, -2, 2, static_cast<std::uint64_t>(k + 1), Device::cuda(0));
            const Array y = stress::kernel_graph(x, k);
            Tensor out = Tensor::empty({4097}, float32, Device::cuda(0));
            assign(out, y);
            const auto c = testing::check_against_reference({y.node()}, {out});
            if (!c.ok) {
                fmt::print(stderr, "process {}: kernel {} result differs from the CPU reference: {}\n",
                           a.child, k, c.message);
                ++failures;
            }
        } else {
            const std::string src = kernel_source(k);
            const CachedCompile cc = compile_cached(fmt::format("stress_{}", k), src, stress::options());
            const std::string ref = read_file(a.dir / "ref" / fmt::format("{}.bin", k));
            if (std::string_view(cc.result.binary.data(), cc.result.binary.size()) != ref) {
                fmt::print(
                    stderr, "process {}: kernel {} image ({} bytes, {}) differs from NVRTC's ({} bytes)\n",
                    a.child, k, cc.result.binary.size(), cc.from_disk ? "from disk" : "compiled", ref.size());
                ++failures;
            }
        }
    }
    const DiskCacheStats s = disk_cache_stats();
    if (s.rejected != 0 || s.store_failures != 0) {
        fmt::print(stderr,
                   "process {}: {} entries rejected, {} stores failed (a reader saw a partial entry?)\n",
                   a.child, s.rejected, s.store_failures);
        ++failures;
    }
    // --run draws its inputs with random_uniform: Loom's own Philox kernel, one more entry beside the stress
    // kernels.
    const std::uint64_t expected = static_cast<std::uint64_t>(a.kernels) + (a.run ? 1 : 0);
    if (a.expect_no_nvrtc && (nvrtc::compile_count() != nvrtc_before || s.hits != expected)) {
        fmt::print(stderr,
                   "process {}: expected every kernel from the disk cache: {} hits of {}, {} NVRTC calls\n",
                   a.child, s.hits, expected, nvrtc::compile_count() - nvrtc_before);
        ++failures;
    }
    return failures == 0 ? 0 : 1;
}

pid_t spawn_child(const Args& a, int index, bool expect_no_nvrtc) {
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    std::vector<std::string> argv{self,           "--child",   std::to_string(index),    "--dir",
                                  a.dir.string(), "--kernels", std::to_string(a.kernels)};
    if (a.run) argv.emplace_back("--run");
    if (expect_no_nvrtc) argv.emplace_back("--expect-no-nvrtc");
    std::vector<char*> cargv;
    for (auto& s : argv) cargv.push_back(s.data());
    cargv.push_back(nullptr);
    pid_t pid = -1;
    if (::posix_spawn(&pid, self.c_str(), nullptr, nullptr, cargv.data(), environ) != 0) return -1;
    return pid;
}

// Starts processes [first, first + n), releases them together, returns how many failed.
int run_processes(const Args& a, int n, bool expect_no_nvrtc) {
    fs::remove(a.dir / "go");
    std::vector<pid_t> pids;
    for (int p = 0; p < n; ++p) pids.push_back(spawn_child(a, p, expect_no_nvrtc));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let them reach the start line
    std::ofstream(a.dir / "go") << "go\n";
    int failed = 0;
    for (pid_t pid : pids) {
        int status = 0;
        if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            ++failed;
    }
    return failed;
}

int driver_main(const Args& a) {
    if (a.run && !cuda_available()) {
        fmt::print("loom_disk_cache_stress: --run needs a GPU; none found\n");
        return 77;
    }
    fs::create_directories(a.dir / "ref");
    fs::permissions(a.dir, fs::perms::owner_all);
    if (!a.run) {  // the reference images: NVRTC's own output, compiled once here
        for (int k = 0; k < a.kernels; ++k) {
            const nvrtc::Result r =
                nvrtc::compile(fmt::format("stress_{}", k), kernel_source(k), stress::options());
            std::ofstream(a.dir / "ref" / fmt::format("{}.bin", k), std::ios::binary)
                .write(r.binary.data(), static_cast<std::streamsize>(r.binary.size()));
        }
    }
    int failed = 0;
    for (int r = 0; r < a.rounds; ++r) {
        fs::remove_all(a.dir / "cache");
        const int f = run_processes(a, a.processes, false);
        const auto entries = std::distance(fs::directory_iterator(a.dir / "cache"), fs::directory_iterator());
        fmt::print("round {}: {} processes, {} kernels each: {} failed; {} files in the cache\n", r + 1,
                   a.processes, a.kernels, f, entries);
        failed += f;
    }
    const int f = run_processes(a, 1, true);
    fmt::print("a further process found every kernel without NVRTC: {}\n", f == 0 ? "yes" : "NO");
    failed += f;
    return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string s = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) throw Error(fmt::format("loom_disk_cache_stress: {} needs a value", s));
            return argv[++i];
        };
        if (s == "--dir")
            a.dir = next();
        else if (s == "--processes")
            a.processes = std::stoi(next());
        else if (s == "--rounds")
            a.rounds = std::stoi(next());
        else if (s == "--kernels")
            a.kernels = std::stoi(next());
        else if (s == "--child")
            a.child = std::stoi(next());
        else if (s == "--run")
            a.run = true;
        else if (s == "--expect-no-nvrtc")
            a.expect_no_nvrtc = true;
        else {
            fmt::print(stderr,
                       "usage: loom_disk_cache_stress --dir DIR [--processes 8] [--rounds 3] [--kernels 10] "
                       "[--run]\n");
            return 2;
        }
    }
    if (a.dir.empty()) {
        fmt::print(stderr, "loom_disk_cache_stress: --dir is required\n");
        return 2;
    }
    try {
        return a.child >= 0 ? child_main(a) : driver_main(a);
    } catch (const std::exception& e) {
        fmt::print(stderr, "loom_disk_cache_stress: {}\n", e.what());
        return 1;
    }
}
