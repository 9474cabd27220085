// Keys of the in-memory kernel cache: graph structure plus specialization, never source text.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen {

/// Hash of the structure of the graph of `outputs`: per node in ir::topo_order its op, dtype, rank and
/// operands (by position in that order); Inputs by their canonical number (first appearance), Scalars by
/// dtype only (values are kernel parameters), Constants by dtype and value bits (they are baked); then
/// the outputs. Extents and view attributes (slice starts and steps, permutations, reshape shapes) are
/// left out: they reach the kernel as parameters, and their effect on the code is in the plan. So
/// `x * 1.5` and `x * 2.5` share a key; `a * a` and `a * b` do not, nor do `(a + b) * (a - b)` and
/// `(a + b) * (b - a)`. Because inputs are numbered by first appearance, `a - b` and `b - a` on their own
/// are the same kernel `in0 - in1`: bind the inputs in pointwise_inputs() order and both are right.
std::uint64_t structural_key(const std::vector<ir::NodePtr>& outputs);

/// The in-memory cache key of one pointwise kernel: structural_key combined with the plan's
/// specialization (dtypes, rank, access pattern, vector width and alignment class, index width).
std::uint64_t kernel_key(const std::vector<ir::NodePtr>& outputs, const PointwisePlan& plan);

}  // namespace loom::codegen
