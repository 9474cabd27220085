// Test helper: compiles a small CUDA C++ source to a cubin or PTX with the NVRTC C API (no GPU needed).
#pragma once

#include <nvrtc.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace loom_test {

/// Compiles `source` for `arch` ("sm_90" gives a cubin, "compute_90" gives PTX). Throws
/// std::runtime_error with NVRTC's log on failure.
inline std::string nvrtc_compile(const std::string& source, const std::string& arch, bool ptx = false) {
    nvrtcProgram prog = nullptr;
    if (nvrtcCreateProgram(&prog, source.c_str(), "loom_test.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
        throw std::runtime_error("nvrtcCreateProgram failed");
    const std::string arch_opt = "--gpu-architecture=" + arch;
    const char* opts[] = {arch_opt.c_str(), "-std=c++17"};
    const nvrtcResult r = nvrtcCompileProgram(prog, 2, opts);
    if (r != NVRTC_SUCCESS) {
        std::size_t n = 0;
        nvrtcGetProgramLogSize(prog, &n);
        std::string log(n, '\0');
        nvrtcGetProgramLog(prog, log.data());
        nvrtcDestroyProgram(&prog);
        throw std::runtime_error(std::string("nvrtcCompileProgram failed: ") + nvrtcGetErrorString(r) + "\n" +
                                 log);
    }
    std::size_t n = 0;
    std::string out;
    if (ptx) {
        nvrtcGetPTXSize(prog, &n);
        out.resize(n);
        nvrtcGetPTX(prog, out.data());
    } else {
        nvrtcGetCUBINSize(prog, &n);
        out.resize(n);
        nvrtcGetCUBIN(prog, out.data());
    }
    nvrtcDestroyProgram(&prog);
    return out;
}

}  // namespace loom_test
