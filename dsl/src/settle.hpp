// The lazy graph size limit (docs/semantics.md, section 8, "Lazy graph size limit"): where a new Array's
// graph is evaluated at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <source_location>

#include "loom/ir/node.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::detail {

/// The limit (LOOM_LAZY_MAX_NODES, set_lazy_node_limit; 0: none).
std::atomic<std::uint32_t>& lazy_limit();

/// The node a new Array holds for `node`: `node` with operands that an earlier settle evaluated read as
/// their values; and, when its graph passes the limit and every input is a tensor of one device, the input
/// (made by `input_of`) bound to its value, evaluated now together with every value of the graph that
/// something else holds, which later ops then read as tensors.
ir::NodePtr settle(ir::NodePtr node,
                   const std::function<ir::NodePtr(const Tensor&, const std::source_location&)>& input_of);

}  // namespace loom::detail
