// The NVRTC wrapper (see nvrtc.hpp): checked calls, arch resolution, dumps, CompileError.
#include "loom/runtime/nvrtc.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nvrtc.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "faults_internal.hpp"
#include "loom/ir/env.hpp"
#include "loom/ir/hash.hpp"
#include "loom/runtime/dump.hpp"
#include "nvtx.hpp"

namespace loom::nvrtc {

namespace {

void check(nvrtcResult r, const char* call) {
    if (r != NVRTC_SUCCESS)
        throw Error(fmt::format("NVRTC error: {} failed with {} ({})", call, nvrtcGetErrorString(r),
                                static_cast<int>(r)));
}
#define LOOM_NVRTC_CHECK(call) check((call), #call)

std::string program_log(nvrtcProgram prog) {
    std::size_t n = 0;
    LOOM_NVRTC_CHECK(nvrtcGetProgramLogSize(prog, &n));
    std::string log(n, '\0');
    if (n) LOOM_NVRTC_CHECK(nvrtcGetProgramLog(prog, log.data()));
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
}

struct Program {
    nvrtcProgram p = nullptr;
    Program(std::string_view source, const std::string& name) {
        const std::string src(source);
        LOOM_NVRTC_CHECK(nvrtcCreateProgram(&p, src.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr));
    }
    ~Program() {
        if (p) nvrtcDestroyProgram(&p);
    }
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;
    // Returns NVRTC's result of the compilation (the caller decides whether it is a CompileError).
    nvrtcResult compile(const std::vector<std::string>& opts) {
        std::vector<const char*> argv;
        for (const auto& o : opts) argv.push_back(o.c_str());
        return nvrtcCompileProgram(p, static_cast<int>(argv.size()), argv.data());
    }
    std::vector<char> ptx() {
        std::size_t n = 0;
        LOOM_NVRTC_CHECK(nvrtcGetPTXSize(p, &n));
        std::vector<char> out(n);
        LOOM_NVRTC_CHECK(nvrtcGetPTX(p, out.data()));
        return out;
    }
    std::vector<char> cubin() {
        std::size_t n = 0;
        LOOM_NVRTC_CHECK(nvrtcGetCUBINSize(p, &n));
        std::vector<char> out(n);
        LOOM_NVRTC_CHECK(nvrtcGetCUBIN(p, out.data()));
        return out;
    }
};

std::atomic<std::uint64_t> g_compile_count{0};

}  // namespace

std::uint64_t compile_count() {
    return g_compile_count.load();
}

int version() {
    int major = 0, minor = 0;
    LOOM_NVRTC_CHECK(nvrtcVersion(&major, &minor));
    return major * 1000 + minor * 10;
}

const std::vector<int>& supported_archs() {
    static const std::vector<int> archs = [] {
        int n = 0;
        LOOM_NVRTC_CHECK(nvrtcGetNumSupportedArchs(&n));
        std::vector<int> a(static_cast<std::size_t>(n));
        if (n) LOOM_NVRTC_CHECK(nvrtcGetSupportedArchs(a.data()));
        return a;
    }();
    return archs;
}

std::string resolve_arch(int cc_major, int cc_minor) {
    const int want = cc_major * 10 + cc_minor;
    const auto& archs = supported_archs();
    int best = 0;
    for (int a : archs) {
        if (a == want) return fmt::format("sm_{}", want);
        if (a < want && a > best) best = a;
    }
    if (best == 0)
        throw Error(
            fmt::format("nvrtc: no architecture supported by NVRTC {} fits compute capability {}.{} "
                        "(supported: {})",
                        version(), cc_major, cc_minor, fmt::join(archs, ", ")));
    return fmt::format("compute_{}", best);
}

std::vector<std::string> option_list(const Options& o) {
    std::string arch = o.arch.empty() ? resolve_arch(o.cc_major, o.cc_minor) : o.arch;
    if (o.arch_specific) {
        if (!arch.starts_with("sm_"))
            throw Error(fmt::format(
                "nvrtc: a kernel using arch-specific features needs a cubin target, and NVRTC {} compiles "
                "compute capability {}.{} only to PTX ({})",
                version(), o.cc_major, o.cc_minor, arch));
        if (!arch.ends_with('a')) arch += 'a';
    }
    std::vector<std::string> opts{fmt::format("--gpu-architecture={}", arch), "-std=c++17", "--fmad=true"};
    if (o.fast_math) opts.emplace_back("--use_fast_math");
    if (o.line_info) opts.emplace_back("-lineinfo");
    if (o.debug) opts.emplace_back("-G");
    if (o.max_registers > 0) opts.push_back(fmt::format("--maxrregcount={}", o.max_registers));
    opts.insert(opts.end(), o.extra.begin(), o.extra.end());
    return opts;
}

Result compile(std::string_view name, std::string_view source, const Options& options) {
    Result r;
    r.options = option_list(options);
    r.arch = r.options.front().substr(std::string_view("--gpu-architecture=").size());
    r.is_ptx = r.arch.rfind("compute_", 0) == 0;
    const std::string nm(name);
    if (env_list_contains("LOOM_DUMP", "cuda")) dump::write(nm + ".cu", source);

    if (detail::should_fail(testing::FaultSite::NvrtcCompile)) {
        const std::string log = "a fault injected by loom::testing::inject_fault (NVRTC was not called)";
        throw CompileError(fmt::format("NVRTC failed for kernel {} (source not saved; options: {}):\n{}", nm,
                                       fmt::join(r.options, " "), log),
                           log, r.options, std::string());
    }
    const detail::NvtxRange range([&] { return fmt::format("NVRTC {}", nm); });
    const auto t0 = std::chrono::steady_clock::now();
    Program prog(source, nm);
    ++g_compile_count;
    const nvrtcResult res = prog.compile(r.options);
    r.log = program_log(prog.p);
    if (res == NVRTC_ERROR_COMPILATION) {
        Hasher h;
        h.add(source);
        const std::string file = fmt::format("{}_{:08x}.cu", nm, static_cast<std::uint32_t>(h.digest()));
        const char* d = std::getenv("LOOM_DUMP_DIR");
        std::string path = (d && *d) ? dump::write_to(d, file, source) : std::string();
        if (path.empty()) {
            std::error_code ec;
            auto tmp = std::filesystem::temp_directory_path(ec);
            if (!ec) path = dump::write_to(tmp / "loom", file, source);
        }
        throw CompileError(
            fmt::format("NVRTC failed for kernel {} (source saved to {}; options: {}):\n{}", nm,
                        path.empty() ? "<not saved>" : path, fmt::join(r.options, " "), r.log),
            r.log, r.options, path);
    }
    check(res, "nvrtcCompileProgram(prog, options)");
    r.binary = r.is_ptx ? prog.ptx() : prog.cubin();
    r.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    if (env_list_contains("LOOM_DUMP", "ptx")) {  // a cubin compile holds no PTX: ptx() compiles again
        const std::string text = r.is_ptx
                                     ? std::string(r.binary.data(), r.binary.size() ? r.binary.size() - 1 : 0)
                                     : ptx(name, source, options);
        dump::write(nm + ".ptx", text);
    }
    return r;
}

std::string ptx(std::string_view name, std::string_view source, const Options& options) {
    // compile()'s target, as its virtual arch: a cubin compile holds no PTX (sm_90a -> compute_90a).
    std::vector<std::string> opts = option_list(options);
    const std::string_view flag = "--gpu-architecture=";
    const std::string arch = opts.front().substr(flag.size());
    if (arch.starts_with("sm_")) opts.front() = fmt::format("{}compute_{}", flag, arch.substr(3));
    const std::string nm(name);
    const detail::NvtxRange range([&] { return fmt::format("NVRTC PTX {}", nm); });
    Program prog(source, nm);
    const nvrtcResult res = prog.compile(opts);
    if (res == NVRTC_ERROR_COMPILATION) {
        std::string log = program_log(prog.p);
        throw CompileError(fmt::format("NVRTC failed for kernel {} (PTX; source not saved; options: {}):\n{}",
                                       nm, fmt::join(opts, " "), log),
                           std::move(log), opts, std::string());
    }
    check(res, "nvrtcCompileProgram(prog, ptx options)");
    const std::vector<char> text = prog.ptx();
    return std::string(text.data(), text.size() && text.back() == '\0' ? text.size() - 1 : text.size());
}

}  // namespace loom::nvrtc
