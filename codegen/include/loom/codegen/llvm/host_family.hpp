// The host side of each kernel family: one object per alternative of HostKernelSchedule (host_plan.hpp) that
// emits, explains and binds its kernels, and says how they run: the passes of tasks the runtime hands to its
// thread pool (runtime/src/host_run.cpp), or the CPU reference for a family without an LLVM emitter. The
// runtime reaches a family only through these, by std::visit over HostKernel::schedule.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "loom/codegen/llvm/emit.hpp"
#include "loom/codegen/llvm/host_plan.hpp"

namespace loom::codegen {

/// One parallel pass of a host kernel: `tasks` calls of one entry point, call t over the work
/// [t * task, min(total, (t + 1) * task)) (LlvmKernelSource's entry signature).
struct HostPass {
    enum class Entry : std::uint8_t { Main, Partials, Finish };  // entry, partials_entry, finish_entry
    Entry entry = Entry::Main;
    std::int64_t tasks = 0, task = 0, total = 0;
};

/// How one host kernel runs: its parameters, its workspaces and its passes, or the CPU reference.
struct HostLaunch {
    std::size_t param_bytes = 0;          // the packed parameter struct (0: nothing to run)
    std::vector<std::size_t> workspaces;  // bytes each, written before they are read
    std::array<HostPass, 2> passes{};     // in order
    int pass_count = 0;
    /// No code: the runtime evaluates the kernel's graph (FusedKernel::outputs over its Input nodes, bound
    /// in place to `reads`) on the CPU reference into its outputs.
    bool on_reference = false;
    /// The kernel has checked gathers: it takes the run's error word (KernelPointers::error_word), which the
    /// runtime reads after the last kernel.
    bool error_word = false;
};

/// The family object of HostKernelSchedule alternative `S`. Each specialization provides:
///   static constexpr bool has_code;   // false: the kernel runs on the CPU reference (nothing is built)
///   static std::optional<LlvmKernelSource> emit(const FusedKernel& k, const S& s, const HostTarget& t);
///   static std::string explain(const HostPlan& plan, std::size_t i, const S& s);   // LOOM_EXPLAIN=fusion
///   static HostLaunch launch(const S& s);
///   static void pack(const S& s, KernelPointers p, std::span<void* const> workspaces,
///                    std::span<std::byte> params);   // params: launch().param_bytes
template <class S>
struct HostFamily;

template <>
struct HostFamily<HostPointwise> {
    static constexpr bool has_code = true;
    static std::optional<LlvmKernelSource> emit(const FusedKernel& k, const HostPointwise& s,
                                                const HostTarget& t);
    static std::string explain(const HostPlan& plan, std::size_t i, const HostPointwise& s);
    static HostLaunch launch(const HostPointwise& s);
    static void pack(const HostPointwise& s, KernelPointers p, std::span<void* const> workspaces,
                     std::span<std::byte> params);
};

template <>
struct HostFamily<HostReduction> {
    static constexpr bool has_code = true;
    static std::optional<LlvmKernelSource> emit(const FusedKernel& k, const HostReduction& s,
                                                const HostTarget& t);
    static std::string explain(const HostPlan& plan, std::size_t i, const HostReduction& s);
    /// A split schedule: a workspace per reduction (16 bytes per (row, chunk) pair: the value, then
    /// argmin's and argmax's index), the partials pass, then the finishing pass.
    static HostLaunch launch(const HostReduction& s);
    static void pack(const HostReduction& s, KernelPointers p, std::span<void* const> workspaces,
                     std::span<std::byte> params);
};

template <>
struct HostFamily<HostProduct> {
    static constexpr bool has_code = true;
    static std::optional<LlvmKernelSource> emit(const FusedKernel& k, const HostProduct& s,
                                                const HostTarget& t);
    static std::string explain(const HostPlan& plan, std::size_t i, const HostProduct& s);
    /// The packing pass (Entry::Partials, tasks of panels), then the blocks of outputs (Entry::Main); the
    /// workspaces of host_product_workspaces().
    static HostLaunch launch(const HostProduct& s);
    static void pack(const HostProduct& s, KernelPointers p, std::span<void* const> workspaces,
                     std::span<std::byte> params);
};

template <>
struct HostFamily<HostReference> {
    static constexpr bool has_code = false;  // runs on the CPU reference
    static std::optional<LlvmKernelSource> emit(const FusedKernel& k, const HostReference& s,
                                                const HostTarget& t);
    static std::string explain(const HostPlan& plan, std::size_t i, const HostReference& s);
    static HostLaunch launch(const HostReference& s);
    static void pack(const HostReference& s, KernelPointers p, std::span<void* const> workspaces,
                     std::span<std::byte> params);
};

/// The IR of kernel `i` of `plan` through its family object; none for a kernel that runs on the reference.
std::optional<LlvmKernelSource> emit_host_kernel(const HostPlan& plan, std::size_t i);
/// Whether kernel `k` has code to build (HostFamily<S>::has_code of its family).
bool has_code(const HostKernel& k);

}  // namespace loom::codegen
