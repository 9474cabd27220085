// doctest entry point of the GPU tests. Without a GPU it prints "no CUDA device: GPU tests skipped" and
// returns 77 (CTest's SKIP_RETURN_CODE), also for each per-test-case process that ctest starts. Test
// cases whose names contain "sticky" poison the CUDA context on purpose: when the binary runs unfiltered,
// they are excluded from the main run and executed afterwards in a child process of their own.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "loom/runtime/device.hpp"

extern char** environ;

namespace {

bool starts_with_any(std::string_view a, std::initializer_list<std::string_view> prefixes) {
    for (auto p : prefixes)
        if (a.substr(0, p.size()) == p) return true;
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    bool listing = false, filtered = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a.find("list-") != std::string_view::npos ||
            starts_with_any(a, {"-ltc", "-lts", "-lr", "-h", "-?", "--help", "-v", "--version", "--dt-h",
                                "--dt-v", "--count", "--dt-count"}))
            listing = true;
        if (starts_with_any(a, {"--test-case=", "-tc=", "--dt-test-case=", "--dt-tc=", "--source-file=",
                                "-sf=", "--test-suite=", "-ts="}))
            filtered = true;
    }
    if (!listing && !loom::cuda_available()) {
        std::printf("no CUDA device: GPU tests skipped\n");
        return 77;
    }
    doctest::Context ctx;
    ctx.applyCommandLine(argc, argv);
    if (listing || filtered) return ctx.run();

    ctx.addFilter("test-case-exclude", "*sticky*");
    const int rc = ctx.run();
    if (ctx.shouldExit()) return rc;

    // The context-poisoning cases, in a fresh process (CUDA cannot be used across fork(); exec starts clean).
    std::vector<std::string> args{argv[0], "--test-case=*sticky*"};
    for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
    std::vector<char*> cargs;
    for (auto& s : args) cargs.push_back(s.data());
    cargs.push_back(nullptr);
    std::fflush(stdout);
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, cargs.data(), environ) != 0) {
        std::printf("could not start the child process for the sticky-error test cases\n");
        return rc != 0 ? rc : 1;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    const int child_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    return rc != 0 ? rc : child_rc;
}
