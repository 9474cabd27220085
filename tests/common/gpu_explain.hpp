// The GPU planner's explain text for arrays on any device, for the tests that check GPU plans without a GPU:
// explain() follows the arrays' device (host arrays get the host plan), so tests of the GPU plan of host
// arrays ask the GPU planner directly. This is the text explain() gives arrays placed on a GPU.
#pragma once

#include <loom/loom.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"

namespace loom_test {

/// What LOOM_EXPLAIN=fusion prints for `roots` evaluated on the GPU (the current one, or the H200 without
/// one), whatever device their inputs are on.
inline std::string gpu_explain(const std::vector<loom::ir::NodePtr>& roots, std::string_view name = {}) {
    return loom::gpu::explain(loom::ir::run_pipeline(roots, loom::ir::standard_passes()), name);
}

inline std::string gpu_explain(const std::vector<loom::Array>& arrays, std::string_view name = {}) {
    std::vector<loom::ir::NodePtr> roots;
    for (const loom::Array& a : arrays) roots.push_back(a.node());
    return gpu_explain(roots, name);
}

}  // namespace loom_test
