// Faults injected on the host (loom/runtime/testing_faults.hpp; docs/reliability.md): every host allocation
// of an evaluation fails in turn, and every NVRTC compilation of compile(), and disk-cache writes fail as on
// a full disk or a read-only directory. After each fault: the error is the one a real failure raises
// (OutOfMemory, CompileError; for the disk cache one warning and the kernels kept in memory), nothing leaks
// (the live host blocks return to their count before), the user's tensors keep their bytes, and the next
// evaluation gives the right results. The device allocation sites are tests/gpu/test_faults.cpp.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "../common/needs_cuda.hpp"
#include "disk_cache_test_util.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/testing.hpp"
#include "loom/runtime/testing_faults.hpp"

using namespace loom;
using testing::FaultSite;

namespace {

std::vector<unsigned char> bytes_of(const Tensor& t) {
    REQUIRE(t.is_contiguous());
    const auto* p = static_cast<const unsigned char*>(t.data());
    return {p, p + t.nbytes()};
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

/// One evaluation under test: `run` evaluates into `outputs` (preallocated, poisoned before each faulty run)
/// or into tensors of its own, which it stores in `fresh`; `inputs` must keep their bytes.
struct Scenario {
    std::string name;
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
    std::function<std::vector<Tensor>()> run;  // returns what it computed (the outputs, or new tensors)
};

/// Totals over every scenario of this process (printed, for docs/reliability.md).
struct Totals {
    std::uint64_t injected = 0, survived = 0;
};
Totals g_host_totals;

std::vector<std::vector<unsigned char>> snapshot(const std::vector<Tensor>& ts) {
    std::vector<std::vector<unsigned char>> out;
    for (const Tensor& t : ts) out.push_back(bytes_of(t));
    return out;
}

/// Fails each host allocation of `s.run` in turn; returns the number of allocation sites found.
std::uint64_t fail_each_host_allocation(Scenario& s) {
    const std::vector<Tensor> reference = s.run();  // warm (traces, plans) and the expected bytes
    const auto expected = snapshot(reference);
    std::uint64_t sites = 0;
    {
        testing::FaultScope count(FaultSite::HostAllocation);
        (void)s.run();
        sites = testing::fault_events(FaultSite::HostAllocation);
    }
    CHECK_MESSAGE(sites > 0, s.name, ": no host allocation counted");
    const auto inputs_before = snapshot(s.inputs);
    for (std::uint64_t i = 0; i < sites; ++i) {
        for (Tensor& o : s.outputs) testing::poison(o);
        const auto outputs_before = snapshot(s.outputs);
        const std::int64_t live = testing::live_host_allocations();
        bool clean = false;
        std::string what;
        {
            testing::FaultScope fault(FaultSite::HostAllocation, i);
            try {
                (void)s.run();
                what = "no error";
            } catch (const OutOfMemory& e) {
                what = e.what();
                clean = contains(what, "out of memory: allocating ") &&
                        contains(what, "of host memory failed") &&
                        contains(what, "a fault injected by loom::testing::inject_fault") &&
                        testing::faults_injected(FaultSite::HostAllocation) == 1;
            } catch (const std::exception& e) {
                what = fmt::format("not an OutOfMemory: {}", e.what());
            }
        }
        ++g_host_totals.injected;
        CHECK_MESSAGE(clean, s.name, ": allocation ", i, " of ", sites, ": ", what);
        const bool no_leak = testing::live_host_allocations() == live;
        CHECK_MESSAGE(no_leak, s.name, ": allocation ", i, ": ", testing::live_host_allocations() - live,
                      " host blocks leaked");
        const bool inputs_kept = snapshot(s.inputs) == inputs_before;
        const bool outputs_kept = snapshot(s.outputs) == outputs_before;
        CHECK_MESSAGE(inputs_kept, s.name, ": allocation ", i, ": an input changed");
        CHECK_MESSAGE(outputs_kept, s.name, ": allocation ", i, ": an output was written before the error");
        const bool next_ok = snapshot(s.run()) == expected;
        CHECK_MESSAGE(next_ok, s.name, ": the evaluation after fault ", i, " is wrong");
        if (clean && no_leak && inputs_kept && outputs_kept && next_ok) ++g_host_totals.survived;
    }
    return sites;
}

}  // namespace

TEST_CASE("faults: unarmed sites count nothing, an armed site fails once, at its event") {
    testing::clear_faults();
    Tensor x = testing::random_tensor({64}, float32, 1);
    (void)Tensor(Array(x) + 1.0);
    CHECK(testing::fault_events(FaultSite::HostAllocation) == 0);
    {
        testing::FaultScope scope(FaultSite::HostAllocation, 1);
        (void)Tensor::host({4}, float32);                                // event 0
        CHECK_THROWS_AS((void)Tensor::host({4}, float32), OutOfMemory);  // event 1
        (void)Tensor::host({4}, float32);                                // event 2
        CHECK(testing::fault_events(FaultSite::HostAllocation) == 3);
        CHECK(testing::faults_injected(FaultSite::HostAllocation) == 1);
        CHECK(testing::fault_events(FaultSite::NvrtcCompile) == 0);  // other sites stay unarmed
    }
    CHECK(testing::fault_events(FaultSite::HostAllocation) == 0);
    CHECK_NOTHROW((void)Tensor::host({4}, float32));
}

TEST_CASE(
    "faults: every host allocation of an evaluation fails in turn: OutOfMemory, no leak, tensors kept") {
    Tensor x = testing::random_tensor({64, 48}, float32, 11);
    Tensor w = testing::random_tensor({48}, float32, 12);
    Tensor b = testing::random_tensor({48}, float32, 13);
    Tensor i32 = testing::random_tensor({64, 48}, int32, 14, testing::Random::uniform(-1000, 1000));
    auto traced =
        loom::function("faults_scale_bias", [](Array a, Array s, Array c) { return gelu(a * s + c); });

    std::vector<Scenario> scenarios;
    {
        Scenario s{"eval(relu(x * 1.5 + b))", {x, b}, {}, {}};
        s.run = [&] { return std::vector<Tensor>{eval(relu(Array(x) * 1.5 + b))}; };
        scenarios.push_back(s);
    }
    {
        Scenario s{"assign(out, sum(x * x, 1) + 1)", {x}, {Tensor::host({64}, float32)}, {}};
        s.run = [&, out = s.outputs[0]] {
            assign(out, sum(Array(x) * x, 1) + 1.0);
            return std::vector<Tensor>{out};
        };
        scenarios.push_back(s);
    }
    {
        Scenario s{
            "assign({softmax, layernorm, transposed mean})",
            {x, w, b},
            {Tensor::host({64, 48}, float32), Tensor::host({64, 48}, float32), Tensor::host({48}, float32)},
            {}};
        s.run = [&, outs = s.outputs] {
            assign(outs, {softmax(x), layernorm(x, w, b, 1e-5), mean(Array(x).transposed(), 1)});
            return outs;
        };
        scenarios.push_back(s);
    }
    {
        Scenario s{"views and integers: (i32 slice, reshape, permute) % 7, argmax",
                   {i32},
                   {Tensor::host({24, 32}, int32), Tensor::host({48}, int64)},
                   {}};
        s.run = [&, outs = s.outputs] {
            const Array v =
                Array(i32).slice({{0, 64, 2}}).reshape({4, 8, 48}).permute({2, 0, 1}).reshape({48, 32});
            assign(outs, {(v.slice({{0, 48, 2}}) % 7) * 3, argmax(i32, 0)});
            return outs;
        };
        scenarios.push_back(s);
    }
    {
        Scenario s{"var, std and item()", {x}, {Tensor::host({}, float64)}, {}};
        s.run = [&, out = s.outputs[0]] {
            const double v = (var(x, {}, 1) + mean(loom::std(x, 0))).item<double>();
            *static_cast<double*>(out.data()) = v;  // written only after item() returned
            return std::vector<Tensor>{out};
        };
        scenarios.push_back(s);
    }
    {
        Scenario s{"traced function, new and preallocated outputs",
                   {x, w, b},
                   {Tensor::host({64, 48}, float32)},
                   {}};
        s.run = [&, out = s.outputs[0]] {
            Tensor fresh = traced(x, w, b);
            traced(x, w, b, out);
            return std::vector<Tensor>{out, fresh};
        };
        scenarios.push_back(s);
    }
    std::uint64_t sites = 0;
    for (Scenario& s : scenarios) {
        const std::uint64_t n = fail_each_host_allocation(s);
        MESSAGE(s.name, ": ", n, " host allocations, each failed once");
        sites += n;
    }
    MESSAGE("host allocation faults: ", g_host_totals.injected, " injected, ", g_host_totals.survived,
            " survived (", sites, " sites)");
    CHECK(g_host_totals.injected == sites);
    CHECK(g_host_totals.survived == g_host_totals.injected);
}

TEST_CASE(
    "faults: every NVRTC compilation of compile() fails in turn: CompileError, nothing stored, next works" *
    loom_test::needs_cuda()) {
    test::TempDir dir;
    const char* saved = std::getenv("LOOM_CACHE_DIR");
    const std::string saved_value = saved ? saved : "";
    Tensor x = testing::random_tensor({256, 64}, float32, 21);
    Tensor v = testing::random_tensor({64}, float32, 22);
    // Three kernels: two pointwise of different iteration spaces and a reduction.
    const std::vector<Array> arrays{relu(Array(x) * 2.5 - v), exp(v) + 1.0, sum(Array(x) * x, 1)};
    int round = 0;
    auto fresh_cache = [&] {  // a new empty directory: every kernel misses and compiles
        const auto d = dir.path / fmt::format("round{}", round++);
        setenv("LOOM_CACHE_DIR", d.c_str(), 1);
        reset_disk_cache();
        return d;
    };
    fresh_cache();
    std::uint64_t sites = 0;
    {
        testing::FaultScope count(FaultSite::NvrtcCompile);
        const CompileReport r = compile(arrays, "faults_nvrtc");
        CHECK(r.kernels == 3);
        sites = testing::fault_events(FaultSite::NvrtcCompile);
    }
    CHECK(sites == 3);
    std::uint64_t survived = 0;
    for (std::uint64_t i = 0; i < sites; ++i) {
        const auto d = fresh_cache();
        bool clean = false;
        std::string what;
        {
            testing::FaultScope fault(FaultSite::NvrtcCompile, i);
            try {
                (void)compile(arrays, "faults_nvrtc");
                what = "no error";
            } catch (const CompileError& e) {
                what = e.what();
                clean = contains(what, "NVRTC failed for kernel faults_nvrtc") &&
                        contains(e.log(), "a fault injected by loom::testing::inject_fault") &&
                        !e.options().empty();
            } catch (const std::exception& e) {
                what = fmt::format("not a CompileError: {}", e.what());
            }
        }
        CHECK_MESSAGE(clean, "compile ", i, ": ", what);
        // The two kernels that compiled are stored; the failed one is not, and no temporary is left.
        std::size_t entries = 0, temporaries = 0;
        for (const auto& e : std::filesystem::directory_iterator(d)) {
            entries += e.path().extension() == ".lkc";
            temporaries += e.path().filename().string().starts_with(".tmp-");
        }
        CHECK(entries == 2);
        CHECK(temporaries == 0);
        const CompileReport again = compile(arrays, "faults_nvrtc");  // the failed kernel compiles now
        CHECK(again.kernels == 3);
        CHECK(again.disk_hits == 2);
        if (clean && entries == 2 && temporaries == 0 && again.kernels == 3 && again.disk_hits == 2)
            ++survived;
    }
    MESSAGE("NVRTC faults: ", sites, " injected, ", survived, " survived");
    CHECK(survived == sites);
    // Host tensors evaluate through the reference: an armed NVRTC site is never reached.
    {
        testing::FaultScope fault(FaultSite::NvrtcCompile, 0);
        const Tensor r = arrays[0];
        CHECK(r.numel() == 256 * 64);
        CHECK(testing::fault_events(FaultSite::NvrtcCompile) == 0);
    }
    if (saved)
        setenv("LOOM_CACHE_DIR", saved_value.c_str(), 1);
    else
        unsetenv("LOOM_CACHE_DIR");
    reset_disk_cache();
}

namespace {

/// A cache key and image of `n` (distinct per n), as compile_cached would store.
DiskCacheKey key_of(int n) {
    return make_disk_cache_key(fmt::format("// kernel {}\nint k{};\n", n, n), {"-arch=x"}, false, 0);
}
std::string image_of(int n) {
    return std::string(4096 + static_cast<std::size_t>(n), static_cast<char>('a' + n % 26));
}

std::size_t count_files(const std::filesystem::path& d, std::string_view prefix, std::string_view ext) {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(d)) {
        const std::string name = e.path().filename().string();
        if ((prefix.empty() || name.starts_with(prefix)) && (ext.empty() || e.path().extension() == ext)) ++n;
    }
    return n;
}

/// Stores three entries into a cache whose first write fails with `error` (injected); checks one warning
/// naming the error, no entry or temporary left, and every store after the first skipped.
void check_store_failure(int error, const char* text) {
    test::TempDir t;
    DiskCache c(t.path / "cache", 0);
    REQUIRE(c.enabled());
    std::string err;
    {
        testing::FaultScope fault(FaultSite::DiskCacheWrite, 0, error);
        test::StderrCapture cap;
        for (int n = 0; n < 3; ++n) CHECK_FALSE(c.store(key_of(n), image_of(n), false));  // none written
        err = cap.text();
    }
    CHECK(test::count(err, "loom: warning:") == 1);
    CHECK(contains(err, text));
    CHECK(contains(err, "kept in memory only from now on"));
    const DiskCacheStats s = c.stats();
    CHECK(s.stores == 0);
    CHECK(s.store_failures == 3);
    CHECK(count_files(t.path / "cache", "", "") == 0);  // neither an entry nor a temporary
    CHECK_FALSE(c.load(key_of(0)).has_value());
    // A new cache object on the same directory (a new process) writes again.
    DiskCache again(t.path / "cache", 0);
    CHECK(again.store(key_of(0), image_of(0), false));
    CHECK(again.load(key_of(0)).has_value());
}

}  // namespace

TEST_CASE(
    "faults: a disk cache write that fails (disk full, read-only) warns once, the cache stops storing") {
    check_store_failure(ENOSPC, "write failed: No space left on device");
    check_store_failure(EROFS, "open failed: Read-only file system");
    check_store_failure(EACCES, "open failed: Permission denied");
}

TEST_CASE(
    "faults: compile() on a full disk cache: one warning, every kernel still compiled and kept in memory" *
    loom_test::needs_cuda()) {
    test::TempDir t;
    const char* saved = std::getenv("LOOM_CACHE_DIR");
    const std::string saved_value = saved ? saved : "";
    setenv("LOOM_CACHE_DIR", (t.path / "cache").c_str(), 1);
    reset_disk_cache();
    Tensor x = testing::random_tensor({128}, float32, 31);
    std::string err;
    std::uint64_t kernels = 0;
    {
        testing::FaultScope fault(FaultSite::DiskCacheWrite, 0);  // ENOSPC
        test::StderrCapture cap;
        kernels += compile({relu(Array(x) * 3.0)}, "faults_full_a").kernels;
        kernels += compile({exp(Array(x)) - 1.0}, "faults_full_b").kernels;
        kernels += compile({sum(Array(x) * x)}, "faults_full_c").kernels;
        err = cap.text();
    }
    CHECK(kernels == 3);
    CHECK(test::count(err, "loom: warning:") == 1);
    CHECK(contains(err, "No space left on device"));
    const DiskCacheStats s = disk_cache_stats();
    CHECK(s.compiles == 3);
    CHECK(s.stores == 0);
    CHECK(s.store_failures == 3);
    CHECK(count_files(t.path / "cache", "", "") == 0);
    if (saved)
        setenv("LOOM_CACHE_DIR", saved_value.c_str(), 1);
    else
        unsetenv("LOOM_CACHE_DIR");
    reset_disk_cache();
}

namespace {

/// A private mount namespace with a tmpfs at `dir` (root only; false, with the reason, when the system
/// refuses): the mounts are this process's and go with it.
bool mount_tmpfs(const std::filesystem::path& dir, const std::string& options, std::string& why) {
    if (::geteuid() != 0) {
        why = "not root";
        return false;
    }
    static bool unshared = false;
    if (!unshared) {
        if (::unshare(CLONE_NEWNS) != 0) {
            why = fmt::format("unshare(CLONE_NEWNS) failed: {}", std::strerror(errno));
            return false;
        }
        // Private propagation: nothing mounted here reaches the system's namespace.
        if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
            why = fmt::format("making / private failed: {}", std::strerror(errno));
            return false;
        }
        unshared = true;
    }
    std::filesystem::create_directories(dir);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) != 0) {
        why = fmt::format("mount -t tmpfs -o {} failed: {}", options, std::strerror(errno));
        return false;
    }
    return true;
}

}  // namespace

TEST_CASE("faults: a real full and a real read-only cache directory (tmpfs in a private mount namespace)") {
    test::TempDir t;
    std::string why;
    if (!mount_tmpfs(t.path / "full", "size=16k,mode=0700", why)) {
        MESSAGE("skipped (the hook-based cases above cover the paths): ", why);
        return;
    }
    // Full: 16 KiB; the entries are larger, so the first write runs out of space.
    {
        DiskCache c(t.path / "full", 0);
        REQUIRE(c.enabled());
        test::StderrCapture cap;
        for (int n = 0; n < 4; ++n) c.store(key_of(n), image_of(n) + std::string(16384, 'z'), false);
        const std::string err = cap.text();
        CHECK(test::count(err, "loom: warning:") == 1);
        CHECK(contains(err, "No space left on device"));
        CHECK(c.stats().stores == 0);
        CHECK(c.stats().store_failures == 4);
        CHECK(count_files(t.path / "full", ".tmp-", "") == 0);  // the partial temporary was removed
    }
    ::umount((t.path / "full").c_str());
    // Read-only: written while writable, then remounted read-only: entries load, stores fail with one
    // warning.
    REQUIRE(mount_tmpfs(t.path / "ro", "size=1m,mode=0700", why));
    {
        DiskCache c(t.path / "ro", 0);
        c.store(key_of(1), image_of(1), false);
        REQUIRE(c.stats().stores == 1);
    }
    REQUIRE(::mount(nullptr, (t.path / "ro").c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) == 0);
    {
        DiskCache c(t.path / "ro", 0);
        REQUIRE(c.enabled());
        test::StderrCapture cap;
        const auto hit = c.load(key_of(1));
        c.store(key_of(2), image_of(2), false);
        c.store(key_of(3), image_of(3), false);
        const std::string err = cap.text();
        CHECK(hit.has_value());
        CHECK(test::count(err, "loom: warning:") == 1);
        CHECK(contains(err, "Read-only file system"));
        CHECK(c.stats().hits == 1);
        CHECK(c.stats().store_failures == 2);
    }
    ::umount((t.path / "ro").c_str());
}
