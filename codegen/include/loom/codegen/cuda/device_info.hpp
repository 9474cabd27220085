// Facts about the target GPU that planning needs, as plain data: the runtime fills it from the device, and
// tests fill it by hand, so plans are testable without a GPU.
#pragma once

#include <cstddef>
#include <string>

#include "loom/codegen/plan/target.hpp"

namespace loom::codegen {

struct DeviceInfo {
    int cc_major = 9;  // compute capability, e.g. 9.0 for H100/H200
    int cc_minor = 0;
    int sm_count = 132;  // multiprocessors (H200 SXM: 132)
    int max_threads_per_block = 1024;
    int max_threads_per_sm = 2048;
    int warp_size = 32;
    std::size_t shared_mem_per_block = 48 * 1024;         // bytes, without opting in
    std::size_t shared_mem_per_block_optin = 227 * 1024;  // bytes, after cudaFuncSetAttribute
    std::size_t shared_mem_per_sm = 228 * 1024;           // bytes
    int regs_per_sm = 65536;
    std::size_t l2_bytes = 60 * 1024 * 1024;
    /// Kernel parameter limit in bytes: 32,764 since CUDA 12.1 on Volta and newer (CUDA C++ Programming
    /// Guide, "Function Parameters"); 4,096 before.
    std::size_t param_limit_bytes = 32764;
    std::string name = "NVIDIA H200";

    /// "sm_90"
    std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
    /// What the neutral planners take of it: the multiprocessors and the parameter limit.
    PlanTarget plan_target() const { return {sm_count, param_limit_bytes}; }
    /// The H200 as measured for Loom's plans; tests use it when no GPU is present.
    static DeviceInfo h200() { return DeviceInfo{}; }
    bool operator==(const DeviceInfo&) const = default;
};

}  // namespace loom::codegen
