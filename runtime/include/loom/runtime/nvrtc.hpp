// The NVRTC wrapper: CUDA C++ source -> cubin (or PTX when the device is newer than NVRTC), with the
// options Loom allows, every NVRTC call checked, and failures reported as loom::CompileError.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/ir/error.hpp"

namespace loom {

/// NVRTC could not compile a kernel. The message names the kernel, the path of the saved source, the
/// options and NVRTC's log; each is also available on its own.
class CompileError : public Error {
  public:
    CompileError(const std::string& what, std::string log, std::vector<std::string> options,
                 std::string source_path)
        : Error(what),
          log_(std::move(log)),
          options_(std::move(options)),
          source_path_(std::move(source_path)) {}
    const std::string& log() const { return log_; }
    const std::vector<std::string>& options() const { return options_; }
    /// Where the failing source was saved (LOOM_DUMP_DIR, else a temporary directory); empty if it could
    /// not be written.
    const std::string& source_path() const { return source_path_; }

  private:
    std::string log_;
    std::vector<std::string> options_;
    std::string source_path_;
};

namespace nvrtc {

/// What to compile for and how.
struct Options {
    /// Target: "sm_90" (cubin) or "compute_90" (PTX). Empty: the device's cc_major/cc_minor below.
    std::string arch;
    int cc_major = 9;
    int cc_minor = 0;
    bool fast_math = false;  // --use_fast_math (off by default: Loom's numerics contract)
    bool line_info = false;  // -lineinfo
    bool debug = false;      // -G
    int max_registers = 0;   // --maxrregcount when > 0
    /// The kernel uses the arch's own features (Hopper's wgmma, setmaxnreg): sm_XY becomes sm_XYa. A device
    /// newer than NVRTC (PTX for an older arch) cannot run them: an Error.
    bool arch_specific = false;
    std::vector<std::string> extra;  // appended as given
};

/// Output of one compilation.
struct Result {
    std::vector<char> binary;  // cubin, or PTX text (NUL-terminated) when is_ptx
    bool is_ptx = false;
    std::string arch;  // the arch actually compiled for ("sm_90", "compute_120")
    std::string log;   // NVRTC's log (warnings), possibly empty
    std::vector<std::string> options;
    double compile_ms = 0;  // wall time of nvrtcCompileProgram and the result queries, milliseconds
};

/// Compiles `source` (a complete translation unit; `name` is the kernel's base name, used for the
/// program name and dump files). Straight to cubin for sm_XY when NVRTC supports that arch; when the
/// device is newer than every arch NVRTC knows (nvrtcGetSupportedArchs), PTX for the newest supported
/// compute_XY, which the driver finishes. LOOM_DUMP=cuda,ptx writes <name>.cu / <name>.ptx under
/// LOOM_DUMP_DIR (default ./dump). Throws loom::CompileError when NVRTC rejects the source (the source is
/// saved first), loom::Error when an NVRTC call fails otherwise (the message names the call).
Result compile(std::string_view name, std::string_view source, const Options& options);

/// The PTX of `source` for the virtual arch of compile()'s target (`sm_90` -> `compute_90`, `sm_90a` ->
/// `compute_90a`; a `compute_XY` target as it is), as text: what the driver or ptxas would assemble into the
/// cubin that compile() returns. Always runs NVRTC (no cache; not counted by compile_count()). Throws
/// loom::CompileError when NVRTC rejects the source (nothing is saved), loom::Error when an NVRTC call fails.
std::string ptx(std::string_view name, std::string_view source, const Options& options);

/// The options compile() passes to NVRTC for `options` (arch resolved): always -std=c++17 and
/// --fmad=true (user arithmetic is spelled with rounded intrinsics, so contraction cannot change it).
std::vector<std::string> option_list(const Options& options);

/// The arch compile() targets for a device of compute capability major.minor: "sm_XY" when NVRTC supports
/// it, else "compute_XY" of the newest supported arch not above it.
std::string resolve_arch(int cc_major, int cc_minor);

/// Archs NVRTC supports (e.g. 75, 80, ..., 120). Cached after the first call.
const std::vector<int>& supported_archs();

/// NVRTC version as major * 1000 + minor * 10 (e.g. 13000); 0 in a host-only build (LOOM_CUDA=OFF), which has
/// no NVRTC: there compile(), ptx(), option_list(), resolve_arch() and supported_archs() throw
/// loom::NoDeviceError naming themselves.
int version();

/// Number of compile() calls that ran nvrtcCompileProgram since the process started (all threads). A
/// process whose kernels all come from the disk cache reports 0.
std::uint64_t compile_count();

}  // namespace nvrtc
}  // namespace loom
