// Helpers of the golden tests: compare generated text with tests/golden/expected/<name>.cu (rewritten
// when LOOM_UPDATE_GOLDEN=1), compile with NVRTC for sm_90 (not in a host-only build), contiguous layouts.
#pragma once

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../common/needs_cuda.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/config.hpp"
#include "loom/runtime/nvrtc.hpp"

namespace golden {

inline std::vector<loom::codegen::InputLayout> contiguous_layouts(
    const std::vector<loom::ir::NodePtr>& outs) {
    std::vector<loom::codegen::InputLayout> l;
    for (const auto* in : loom::codegen::pointwise_inputs(outs))
        l.push_back({in->dtype(), loom::contiguous_strides(in->shape()), true});
    return l;
}

/// The GPU plan of `graph_roots` (after the standard passes) on `device` (the H200), every input contiguous
/// and, unless `aligned` is false, 16-byte aligned.
inline loom::codegen::FusionPlan plan_gpu(
    const std::vector<loom::ir::NodePtr>& graph_roots, const loom::Options& options = {}, bool aligned = true,
    const loom::codegen::DeviceInfo& device = loom::codegen::DeviceInfo::h200()) {
    const std::vector<loom::ir::NodePtr> roots =
        loom::ir::run_pipeline(graph_roots, loom::ir::standard_passes());
    std::vector<const loom::ir::Node*> sources;
    std::vector<loom::codegen::InputLayout> layouts;
    for (const loom::ir::Node* n : loom::ir::topo_order(roots))
        if (n->op() == loom::ir::Op::Input) {
            sources.push_back(n);
            layouts.push_back({n->dtype(), loom::contiguous_strides(n->shape()), aligned});
        }
    return loom::codegen::plan_fusion(roots, sources, layouts, device, options, "");
}

/// The matmul kernel of `plan` (its first; FAIL when it has none). The reference lives as long as `plan`.
inline const loom::codegen::PlannedMatmul& matmul_of(const loom::codegen::FusionPlan& plan) {
    for (std::size_t k = 0; k < plan.kernels.size(); ++k)
        if (plan.partition.kernels[k].family == loom::codegen::Family::MatMul)
            return plan.kernels[k].as<loom::codegen::PlannedMatmul>();
    FAIL("no matmul kernel in the plan");
    return plan.kernels.at(0).as<loom::codegen::PlannedMatmul>();
}

/// Every kernel Loom emits is launched with programmatic dependent launch (LaunchConfig::dependent_launch),
/// so its first statement must wait for the stream's previous kernel: checked for each `__global__` of
/// `text`.
inline void check_kernels_wait_first(const std::string& name, const std::string& text) {
    int kernels = 0;
    for (std::size_t at = text.find("__global__"); at != std::string::npos;
         at = text.find("__global__", at + 1)) {
        ++kernels;
        const std::size_t body = text.find('\n', text.find(") {", at));
        const std::size_t first = text.find_first_not_of(" \n", body);
        CHECK_MESSAGE(text.compare(first, 24, "lm::await_prior_grids();") == 0,
                      name << ": kernel " << kernels << " does not begin with lm::await_prior_grids()");
    }
}

/// Compares `text` with expected/<name><extension> (`.cu`: CUDA, `.ll`: LLVM IR); LOOM_UPDATE_GOLDEN=1
/// rewrites the file instead.
inline void check_text(const std::string& name, const std::string& text,
                       const std::string& extension = ".cu") {
    const std::string path = fmt::format("{}/{}{}", LOOM_GOLDEN_DIR, name, extension);
    const std::string what = extension == ".ll" ? "LLVM IR" : "CUDA";
    if (extension == ".cu") check_kernels_wait_first(name, text);
    const char* upd = std::getenv("LOOM_UPDATE_GOLDEN");
    if (upd && std::string(upd) == "1") {
        std::ofstream(path, std::ios::binary) << text;
        MESSAGE("rewrote " << path);
        return;
    }
    std::ifstream f(path, std::ios::binary);
    REQUIRE_MESSAGE(f.good(), "missing expected file " << path << " (run with LOOM_UPDATE_GOLDEN=1)");
    std::stringstream ss;
    ss << f.rdbuf();
    CHECK_MESSAGE(ss.str() == text, "generated " << what << " differs from " << path
                                                 << " (LOOM_UPDATE_GOLDEN=1 rewrites it); generated:\n"
                                                 << text);
}

/// Compiles a complete source with NVRTC for sm_90 and checks that a cubin came back. A host-only build
/// (LOOM_CUDA=OFF) has no NVRTC: there the text comparisons run and this returns an empty result, which test
/// cases read only when LOOM_HAS_CUDA is 1 (or skip with loom_test::needs_cuda()).
inline loom::nvrtc::Result compile_sm90(const loom::codegen::KernelSource& ks) {
    if constexpr (LOOM_HAS_CUDA == 0) return {};
    loom::nvrtc::Options o;
    o.arch = "sm_90";
    o.arch_specific = ks.arch_specific;  // Hopper wgmma kernels: sm_90a
    loom::nvrtc::Result r;
    try {
        r = loom::nvrtc::compile(ks.name, ks.source, o);
    } catch (const loom::CompileError& e) {
        FAIL_CHECK("NVRTC rejected " << ks.name << ": " << std::string(e.what()));
        return r;
    }
    CHECK(!r.binary.empty());
    CHECK(!r.is_ptx);
    return r;
}

/// Generates with contiguous layouts on the H200, compares with the golden file and compiles.
inline loom::codegen::KernelSource run(const std::string& name, const std::vector<loom::ir::NodePtr>& outs) {
    auto ks = loom::codegen::generate_pointwise(name, outs, contiguous_layouts(outs),
                                                loom::codegen::DeviceInfo::h200());
    check_text(name, ks.kernel);
    compile_sm90(ks);
    return ks;
}

}  // namespace golden
