// Gathers inside kernels (docs/semantics.md, "Gathers"): the kernel of an embedding lookup followed by a
// layernorm (G1's graph at a small size) is one normalization kernel whose body loads each gathered element
// at its computed position, checked against the error word; every gather kernel below compiles with NVRTC for
// sm_90 (no GPU needed): each operand dtype, int32 and int64 indices, clamp mode, views, take_along_axis and
// one_hot, elementwise producers and consumers, and the LLVM IR of the same lookup on the host.
#include <loom/loom.hpp>

#include "golden_util.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

/// The kernels of evaluating `arrays` on the H200, each compiled with NVRTC, in launch order.
std::vector<codegen::KernelSource> compile_plan(const std::vector<Array>& arrays) {
    std::vector<ir::NodePtr> roots;
    for (const Array& a : arrays) roots.push_back(a.node());
    const codegen::FusionPlan plan = gpu::plan_bound(ir::run_pipeline(roots, ir::standard_passes()),
                                                     codegen::DeviceInfo::h200(), Options{}, "", nullptr, {});
    std::vector<codegen::KernelSource> sources = gpu::emit_kernels(plan);
    REQUIRE(!sources.empty());
    for (const codegen::KernelSource& ks : sources) golden::compile_sm90(ks);
    return sources;
}

Tensor ids_of(const Shape& s, DType t, std::int64_t extent, std::uint64_t seed) {
    return testing::random_tensor(s, t, seed, testing::Random::uniform(0.0, static_cast<double>(extent - 1)));
}

}  // namespace

TEST_CASE("golden: an embedding lookup and its layernorm, one kernel, the rows gathered in it") {
    const Tensor table = testing::random_tensor({500, 256}, float32, 1);
    const Tensor w = testing::random_tensor({256}, float32, 2), b = testing::random_tensor({256}, float32, 3);
    const Tensor ids = ids_of({64}, int64, 500, 4);
    const auto ks = compile_plan({layernorm(take(table, ids, 0), w, b, 1e-5)});
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].kernel.find("lm::gather_checked(") != std::string::npos);
    golden::check_text("g1_embedding_layernorm", ks[0].kernel);
    // The host's LLVM IR of the same graph: the position checked, an out-of-range index recorded.
    const std::string ir = llvm_source({layernorm(take(table, ids, 0), w, b, 1e-5)}, "g1");
    CHECK(ir.find("@loom_gather_error") != std::string::npos);
    CHECK(ir.find("take position g0") != std::string::npos);
    // The lookup alone (a pointwise kernel): the row id does not move along the row, so the lanes read a run
    // of the table's row (one vector load), not one address per lane; an index that moves along the row
    // (take_along_axis) still gathers.
    const std::string lookup = llvm_source({take(table, ids, 0)}, "g1_lookup");
    CHECK(lookup.find("llvm.masked.gather") == std::string::npos);
    CHECK(lookup.find("load <") != std::string::npos);
    const Tensor cols = ids_of({500, 256}, int64, 256, 5);
    CHECK(llvm_source({take_along_axis(table, cols, 1)}, "g1_along").find("llvm.masked.gather") !=
          std::string::npos);
}

TEST_CASE("golden: a pointwise gather kernel of every operand dtype and index dtype compiles") {
    for (DType t : kAllDTypes) {
        CAPTURE(name(t));
        const Tensor x = testing::random_tensor({40, 6}, t, 5);
        for (DType it : {int32, int64}) {
            const Tensor ids = ids_of({33}, it, 40, 6);
            const auto ks = compile_plan({take(x, ids, 0)});
            REQUIRE(ks.size() == 1);
            CHECK(ks[0].kernel.find("(indirect)") != std::string::npos);
            compile_plan({take(x, ids, 0, IndexMode::Clamp)});
        }
    }
    const Tensor x = testing::random_tensor({40, 6}, float16, 7);
    compile_plan({take(Tensor(x).transposed(), ids_of({9}, int32, 40, 8), 1) * 2 + 1});
    compile_plan({take_along_axis(x, ids_of({40, 1}, int64, 6, 9), 1)});
    compile_plan({one_hot(ids_of({17}, int32, 10, 10), 10, float32)});
    compile_plan({sum(take(Array(x) * 3, ids_of({12}, int64, 40, 11), 0), -1)});  // in a reduction's space
}
