// The error model of docs/semantics.md, section 11 ("Errors"), on the GPU: a device output keeps its bytes
// after every error raised at the call, out of memory and CUDA errors that are not sticky leave the runtime
// usable, an asynchronous fault surfaces at a later call (the next synchronization), poisons the runtime and
// leaves host evaluation working, and LOOM_SYNC=1 reports the fault at the launching call, naming the kernel
// and the user's line, without synchronizing launches into a stream being captured.
//
// The fault cases poison the CUDA context, and LOOM_SYNC is read once per process, so each runs in a child
// process of its own: a parent case starts this binary again on one "error model child" case, with the
// environment it needs, and checks that the child passed and ran to its end. Without that environment a
// child case does nothing, so it passes wherever else it runs (ctest's per-case processes, the unfiltered
// run). No name here contains "sticky": main.cpp runs those cases together in one process after the others.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "../unit/error_message.hpp"
#include "loom/loom.hpp"
#include "loom/runtime/capture.hpp"
#include "loom/runtime/module.hpp"
#include "loom/runtime/testing.hpp"
#include "nvrtc_util.hpp"

extern char** environ;

using namespace loom;

namespace {

Device dev() {
    return Device::cuda(0);
}

/// " (test_error_model.cpp:<line>)": the location suffix of a message raised for that line.
std::string at(int line) {
    return fmt::format(" (test_error_model.cpp:{})", line);
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}
bool starts_with(const std::string& s, const std::string& p) {
    return s.rfind(p, 0) == 0;
}
bool ends_with(const std::string& s, const std::string& p) {
    return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

/// The bytes of a contiguous tensor on any device (a synchronous copy: everything issued before is done).
std::vector<unsigned char> bytes_of(const Tensor& t) {
    REQUIRE(t.is_contiguous());
    const Tensor h = t.to_host();
    const auto* p = static_cast<const unsigned char*>(h.data());
    return {p, p + h.nbytes()};
}

/// A tensor filled with testing::poison()'s pattern and a copy of its bytes to compare with later.
struct Poisoned {
    Tensor t;
    std::vector<unsigned char> before;
    Poisoned(const Shape& shape, DType dtype, Device device = dev())
        : t(Tensor::empty(shape, dtype, device)) {
        testing::poison(t);
        before = bytes_of(t);
    }
    bool untouched() const { return bytes_of(t) == before; }
};

Tensor random_device(const Shape& shape, DType dtype, std::uint64_t seed) {
    Tensor t = Tensor::empty(shape, dtype, dev());
    testing::fill_random(t, seed);
    return t;
}

void check_matches_reference(const Array& y, const Tensor& out, const char* what) {
    const testing::Comparison c = testing::check_against_reference({y.node()}, {out});
    CHECK_MESSAGE(c.ok, what, ": ", c.message);
}

// ---- child processes ----

/// Names the report file of a child process; set only in the children that run_child() starts.
constexpr std::string_view kChildVar = "LOOM_ERROR_MODEL_CHILD";
constexpr std::string_view kRan = "ran to the end";

/// The report file when this process is a child started for a case, else null (the case then does nothing).
const char* child_report() {
    const char* r = std::getenv(std::string(kChildVar).c_str());
    if (!r || !*r) MESSAGE("runs only in the child process that its parent case starts");
    return r && *r ? r : nullptr;
}

/// The child's last word: it reached the end of its case.
void report_ran(const char* report) {
    std::ofstream(report) << kRan << '\n';
}

/// Runs this binary again on the test case `name` alone, in a new process whose environment is this one's
/// without LOOM_SYNC, plus `extra` ("NAME=value" entries), and checks that the case passed and ran to its
/// end.
void run_child(const std::string& name, const std::vector<std::string>& extra) {
    std::error_code ec;
    const std::filesystem::path report =
        std::filesystem::temp_directory_path() /
        fmt::format("loom_error_model_{}_{:016x}.txt", getpid(), std::hash<std::string>{}(name));
    std::filesystem::remove(report, ec);
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string_view v(*e);
        if (v.starts_with("LOOM_SYNC=") ||
            (v.starts_with(kChildVar) && v.substr(kChildVar.size()).starts_with("=")))
            continue;
        env.emplace_back(v);
    }
    env.insert(env.end(), extra.begin(), extra.end());
    env.push_back(fmt::format("{}={}", kChildVar, report.string()));
    // --minimal: the child prints only failures, so a passing child adds no second summary to the log.
    std::vector<std::string> args{"loom_gpu_tests", "--test-case=" + name, "--minimal"};
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::fflush(stdout);
    pid_t pid = 0;
    REQUIRE(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()) == 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK_MESSAGE(WIFEXITED(status), "the child process for '", name, "' did not exit normally");
    CHECK_MESSAGE(WEXITSTATUS(status) == 0, "the child process for '", name,
                  "' failed (its output is above)");
    std::ifstream in(report);
    std::string line;
    std::getline(in, line);
    CHECK_MESSAGE(line == kRan, "the case '", name, "' did not run to its end in the child process");
    std::filesystem::remove(report, ec);
}

}  // namespace

TEST_CASE("error model: an error raised at the call leaves a poisoned device output's bytes unchanged") {
    Tensor x = random_device({4096}, float32, 0xe401);
    Tensor h = testing::random_tensor({4096}, float32, 0xe402);
    const Array y = Array(x) * 2.0;
    Poisoned out({4096}, float32);

    // Building the expression fails: nothing is evaluated.
    Tensor three = random_device({3}, float32, 0xe403);
    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { assign(out.t, x + three); });
    CHECK(msg == "add(): shapes [4096] float32 and [3] float32 do not broadcast" + at(line));
    CHECK(out.untouched());

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(out.t, Array(x).reshape({64, 64}) * 2.0); });
    CHECK(msg == "assign(): output [4096] float32 does not match the array [64, 64] float32" + at(line));
    CHECK(out.untouched());

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(out.t, astype(x, float64) * 2.0); });
    CHECK(msg == "assign(): output [4096] float32 does not match the array [4096] float64" + at(line));
    CHECK(out.untouched());

    // Outputs of two shapes (two kernels): the second output's mismatch is found before the first kernel
    // runs.
    Poisoned wrong({64, 64}, float64);
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign({out.t, wrong.t}, {y, Array(x).reshape({64, 64})}); });
    CHECK(msg == "assign(): output [64, 64] float64 does not match the array [64, 64] float32" + at(line));
    CHECK(out.untouched());
    CHECK(wrong.untouched());

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign({out.t, out.t}, {y, y + 1.0}); });
    CHECK(msg == "assign(): outputs 0 and 1 share memory; each result needs its own" + at(line));
    CHECK(out.untouched());

    const Array mixed = x + h;
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(out.t, mixed); });
    CHECK(starts_with(msg, "assign(): inputs on different devices: "));  // the API called
    CHECK(ends_with(msg, at(line)));
    CHECK(out.untouched());

    Poisoned host_out({4096}, float32, Device::cpu());
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(host_out.t, y); });
    CHECK(msg == "assign(): output on cpu but the inputs are on cuda:0" + at(line));
    CHECK(host_out.untouched());

    const Array p(ir::input(float32, {4096}, "p"));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(out.t, p * 2.0 + x); });
    CHECK(msg == "assign(): input p ([4096] float32) is a placeholder with no tensor bound" + at(line));
    CHECK(out.untouched());

    // Overlapping itself: a broadcast view of device memory (a transposed view is a valid output).
    Poisoned storage({1, 64}, float32);
    const Tensor broadcast = storage.t.as_strided({64, 64}, {0, 1}, 0);
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(broadcast, Array(x).reshape({64, 64}) + 1.0); });
    CHECK(starts_with(
        msg, "assign(): output [64, 64] float32 with strides [0, 1] overlaps itself (a broadcast view)"));
    CHECK(ends_with(msg, at(line)));
    CHECK(storage.untouched());

    // A traced function checks every output before it launches.
    auto f = loom::function("error_model_plus", [](Array a) { return a + 0.5; });
    const int def_line = __LINE__ - 1;
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { f(x, wrong.t); });
    CHECK(starts_with(
        msg, "error_model_plus(): output 0 is [64, 64] float64 on cuda:0 but the result is [4096] float32"));
    CHECK(contains(
        msg, fmt::format("(test_error_model.cpp:{}; the function is defined at test_error_model.cpp:{})",
                         line, def_line)));
    CHECK(wrong.untouched());

    // Nothing was left half done: the runtime is usable and the same output takes a correct result.
    CHECK_FALSE(runtime_poisoned());
    assign(out.t, y);
    synchronize();
    check_matches_reference(y, out.t, "after the errors");
    f(x, out.t);
    synchronize();
    check_matches_reference(Array(x) + 0.5, out.t, "traced function after the error");
}

TEST_CASE(
    "error model: a kernel not compiled yet inside stream capture is an error at the call, and the output "
    "keeps its bytes") {
    Stream s;
    StreamGuard on(s);
    Tensor x = random_device({333}, float64, 0xe411);
    const Array y = atanh(tanh(x) * 0.25) + sinh(x) * 0.125;  // a kernel no other test compiles
    Poisoned out({333}, float64);
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    std::string msg;
    try {
        assign(out.t, y);
    } catch (const Error& e) {
        msg = e.what();
    }
    cudaGraph_t graph = nullptr;
    CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess);  // the capture was left valid
    if (graph) CHECK(cudaGraphDestroy(graph) == cudaSuccess);
    MESSAGE(msg);
    CHECK(starts_with(msg, "eval(): kernel "));
    CHECK(contains(msg, "is not compiled yet"));
    CHECK(contains(msg, "test_error_model.cpp:"));  // the user's line (of the expression or of the call)
    CHECK(out.untouched());
    assign(out.t, y);  // outside the capture: compiles and runs
    s.synchronize();
    check_matches_reference(y, out.t, "after the capture");
}

TEST_CASE("error model: out of memory at a device allocation is an OutOfMemory raised at the call") {
    const std::int64_t n = std::int64_t{1} << 40;  // 4 TiB of float32: more than the device has
    try {
        (void)Tensor::empty({n}, float32, dev());
        FAIL("no OutOfMemory");
    } catch (const OutOfMemory& e) {
        CHECK(e.requested() == static_cast<std::size_t>(4 * n));
        CHECK(starts_with(
            e.what(), fmt::format("out of memory: allocating {} bytes (4.0 TiB) on cuda:0 failed", 4 * n)));
    }
    // The result of an evaluation: one element broadcast to 2^40 by a zero stride.
    Tensor one = random_device({1}, float32, 0xe421);
    const Tensor wide = Tensor::view(one.data(), {n}, float32, {0}, dev());
    std::string msg;
    try {
        Tensor r = Array(wide) * 2.0;
        FAIL("no OutOfMemory");
    } catch (const OutOfMemory& e) {
        msg = e.what();
        CHECK(e.requested() == static_cast<std::size_t>(4 * n));
    }
    MESSAGE(msg);
    CHECK(contains(msg, "(more than the device's memory)"));
    CHECK(contains(msg, "Loom's pool has "));
    CHECK_FALSE(runtime_poisoned());
    Tensor r = Array(one) * 2.0;  // usable afterwards
    check_matches_reference(Array(one) * 2.0, r, "after out of memory");
}

TEST_CASE(
    "error model: a CUDA error that is not sticky is raised at the call and leaves the runtime usable") {
    const char* src = R"(
struct FillArgs { float* p; float v; };
extern "C" __global__ void error_model_fill(FillArgs a) { a.p[threadIdx.x] = a.v; }
)";
    Module m = Module::load(loom_test::nvrtc_compile(src, device_info().arch()), "error_model_fill");
    Kernel k = m.kernel("error_model_fill");
    Tensor out = Tensor::empty({32}, float32, dev());
    struct FillArgs {
        float* p;
        float v;
    } a{static_cast<float*>(out.data()), 2.5f};
    LaunchConfig bad;
    bad.block.x = 4096;  // above every GPU's 1024 threads per block
    try {
        k.launch(bad, &a, sizeof a, "user_app.cpp:12");
        FAIL("no CudaError for 4096 threads per block");
    } catch (const CudaError& e) {
        const std::string msg = e.what();
        MESSAGE(msg);
        CHECK_FALSE(is_sticky(e.code()));
        CHECK(contains(msg, "cudaLaunchKernelExC(error_model_fill, grid (1, 1, 1), block (4096, 1, 1)"));
        CHECK(contains(msg, "at user_app.cpp:12"));
        CHECK_FALSE(contains(msg, "sticky"));
    }
    CHECK_FALSE(runtime_poisoned());
    CHECK(cudaGetLastError() == cudaSuccess);  // cleared: the next check does not report it again
    LaunchConfig good;
    good.block.x = 32;
    k.launch(good, &a, sizeof a, "user_app.cpp:13");
    const Tensor h = out.to_host();
    for (std::int64_t i = 0; i < 32; ++i) CHECK(h.get_double(i) == 2.5);
}

// ---- in processes of their own ----

TEST_CASE(
    "error model: an asynchronous fault is raised at a later call and poisons the process (own process)") {
    run_child("error model child: an asynchronous fault", {});
}

TEST_CASE("error model child: an asynchronous fault") {
    const char* report = child_report();
    if (!report) return;
    REQUIRE_FALSE(sync_after_launch());
    const std::int64_t n = 1 << 20;
    // Memory the caller "owns" at an address that is not mapped on the device: the kernel faults reading it.
    const Tensor bad = Tensor::view(reinterpret_cast<void*>(std::uintptr_t{0x10}), {n}, float32, {}, dev());
    Tensor out = Tensor::empty({n}, float32, dev());
    const Array y = Array(bad) * 2.0;
    int line = 0;
    bool raised_by_call = false;
    try {
        line = __LINE__ + 1;
        evaluate_into({y.node()}, {out}, std::source_location::current(), "error_model_fault");
    } catch (const CudaError& e) {
        // CUDA reports a fault asynchronously; only a fault already detected by the launch's own check shows
        // here.
        raised_by_call = true;
        MESSAGE("the launching call itself reported the fault: ", e.what());
        CHECK(is_sticky(e.code()));
    }
    std::string msg;
    cudaError_t code = cudaSuccess;
    try {
        synchronize();
        FAIL("no error at the synchronization after an illegal address");
    } catch (const CudaError& e) {
        msg = e.what();
        code = e.code();
    }
    MESSAGE(msg);
    CHECK(is_sticky(code));
    CHECK(runtime_poisoned());
    if (!raised_by_call) {
        CHECK(starts_with(msg, "CUDA error: "));
        CHECK(contains(msg, "last launched kernel: error_model_fault_"));
        CHECK(contains(msg, fmt::format("(test_error_model.cpp:{})", line)));
        CHECK(contains(msg, "This error is sticky"));
        CHECK(contains(msg, "run with LOOM_SYNC=1"));
    }
    // Every later GPU use fails at once with the first error's code and story; the context is not touched.
    const std::string later = loom_test::error_message([&] { (void)Tensor::empty({16}, float32, dev()); });
    CHECK(starts_with(later, "CUDA runtime unusable after an earlier sticky error: "));
    CHECK(contains(later, "error_model_fault_"));
    try {
        assign(out, Array(out) + 1.0);
        FAIL("no error for an evaluation after a sticky error");
    } catch (const CudaError& e) {
        CHECK(e.code() == code);
    }
    CHECK_THROWS_AS(synchronize(), CudaError);
    CHECK_THROWS_AS((void)out.to_host(), CudaError);
    // Host tensors never touch CUDA: the CPU reference still evaluates.
    Tensor hx = testing::random_tensor({64}, float32, 0xe431);
    Tensor hy = Array(hx) * 2.0;
    for (std::int64_t i = 0; i < 64; ++i) CHECK(hy.get_double(i) == 2.0 * hx.get_double(i));
    report_ran(report);
}

TEST_CASE(
    "error model: LOOM_SYNC=1 reports a fault at the launching call and skips captured launches (own "
    "process)") {
    run_child("error model child: LOOM_SYNC set", {"LOOM_SYNC=1"});
}

TEST_CASE("error model child: LOOM_SYNC set") {
    const char* report = child_report();
    if (!report) return;
    REQUIRE(sync_after_launch());
    const std::int64_t n = 1 << 22;
    Tensor x = random_device({n}, float32, 0xe441);
    Tensor out = Tensor::empty({n}, float32, dev());
    const Array y = Array(x) * 3.0 + 1.0;
    // A launch is followed by a synchronization: when assign() returns, the stream has nothing left to run.
    assign(out, y);
    CHECK(cudaStreamQuery(current_stream()) == cudaSuccess);
    check_matches_reference(y, out, "LOOM_SYNC=1");
    {
        // Inside stream capture the launch is recorded, not synchronized (which would invalidate the
        // capture).
        Stream s;
        StreamGuard on(s);
        assign(out, y);  // the kernel is cached already; warm on this stream too
        s.synchronize();
        REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
        CHECK_NOTHROW(assign(out, y));
        cudaGraph_t graph = nullptr;
        CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess);
        REQUIRE(graph != nullptr);
        cudaGraphExec_t exec = nullptr;
        CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
        testing::poison(out);
        CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);
        s.synchronize();
        check_matches_reference(y, out, "graph captured with LOOM_SYNC=1");
        CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
        CHECK(cudaGraphDestroy(graph) == cudaSuccess);
    }
    // A fault is reported by the call that launched the faulting kernel, naming it and the user's line.
    const Tensor bad = Tensor::view(reinterpret_cast<void*>(std::uintptr_t{0x10}), {n}, float32, {}, dev());
    const Array z = Array(bad) * 2.0;
    int line = 0;
    std::string msg;
    try {
        line = __LINE__ + 1;
        evaluate_into({z.node()}, {out}, std::source_location::current(), "error_model_sync_fault");
        FAIL("with LOOM_SYNC=1 the launching call did not report the fault");
    } catch (const CudaError& e) {
        msg = e.what();
        CHECK(is_sticky(e.code()));
    }
    MESSAGE(msg);
    CHECK(runtime_poisoned());
    const std::string where = fmt::format("test_error_model.cpp:{}", line);
    // The synchronization after the launch, or (if the fault was seen that soon) the launch's own check.
    CHECK((contains(msg, "cudaStreamSynchronize after kernel error_model_sync_fault_") ||
           contains(msg, "cudaLaunchKernelExC(error_model_sync_fault_")));
    CHECK(contains(msg, " at " + where));
    CHECK(contains(msg, "last launched kernel: error_model_sync_fault_"));
    CHECK(contains(msg, "(" + where + ")"));
    CHECK_FALSE(contains(msg, "run with LOOM_SYNC=1"));
    report_ran(report);
}
