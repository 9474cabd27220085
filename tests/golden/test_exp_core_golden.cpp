// lm::expc::exp_f32 in the device prelude (ir/include/loom/ir/exp_core.hpp pasted by
// codegen/embed_prelude.cmake) compiles with NVRTC for sm_90, and compiles to the same PTX with and without
// fast math: it uses no float32 arithmetic (which -ftz would flush) and no CUDA Math API function (which fast
// math would replace), so the options that Loom's kernels take cannot change its bits.
#include <doctest/doctest.h>

#include <string>

#include "../common/exp_core_kernel.hpp"
#include "golden_util.hpp"
#include "loom/runtime/nvrtc.hpp"

namespace {

/// The PTX of the kernel's entry point alone (from its .entry line to the end of its body).
std::string entry_ptx(const loom::nvrtc::Result& r) {
    const std::string ptx(r.binary.data());
    const std::size_t at = ptx.find(".entry exp_core_bits");
    REQUIRE(at != std::string::npos);
    const std::size_t end = ptx.find("\n}", at);
    REQUIRE(end != std::string::npos);
    return ptx.substr(at, end - at);
}

}  // namespace

TEST_CASE("golden: lm::expc::exp_f32 compiles for sm_90, to the same code with and without fast math" *
          loom_test::needs_cuda()) {
    loom::codegen::KernelSource ks;
    ks.name = loom_test::kExpCoreKernel;
    ks.source = loom_test::exp_core_source();
    golden::compile_sm90(ks);

    loom::nvrtc::Options o;
    o.arch = "compute_90";
    const loom::nvrtc::Result plain = loom::nvrtc::compile(ks.name, ks.source, o);
    o.fast_math = true;
    const loom::nvrtc::Result fast = loom::nvrtc::compile(ks.name, ks.source, o);
    REQUIRE(plain.is_ptx);
    const std::string code = entry_ptx(fast);
    CHECK(code == entry_ptx(plain));
    CHECK(code.find(".ftz") == std::string::npos);  // no instruction that flushes subnormals
    CHECK(code.find("ex2.") == std::string::npos);  // no hardware exp2 approximation
    CHECK(code.find("fma.rn.f64") != std::string::npos);
}
