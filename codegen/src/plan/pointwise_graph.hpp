// Internal: the (node, view context) graph of a pointwise kernel, shared by the planner and the emitter.
//
// A view node is not a value: it maps the index space of its consumer to its operand's. Walking down from
// the outputs, every view applied on the way defines a context (parent context + view node); a node is
// computed once per context in which it is reached, an Input read in a context is a load site (so is an
// Iota: its "load" is the coordinate its index map gives, computed instead of read). Rank-0
// nodes have one element, so they live in the uniform context whatever the path. The walk is iterative
// (deep chains are normal) and deterministic: values come out operands first, in operand order.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ir/node.hpp"

namespace loom::codegen::detail {

inline constexpr int kRootContext = 0;     // the iteration space of the outputs
inline constexpr int kUniformContext = 1;  // rank-0 values

struct PwContext {
    int parent = -1;                 // -1 for the root and uniform contexts
    const ir::Node* view = nullptr;  // the view whose operand lives in this context
};

struct PwValue {
    const ir::Node* node = nullptr;  // Input, Scalar, Constant or elementwise
    int ctx = kRootContext;
    int site = -1;          // Input: its load site
    std::vector<int> args;  // elementwise: operand values
};

struct PwSite {
    int input = 0;  // canonical input number
    int ctx = 0;
    int value = 0;
};

struct PwGraph {
    std::vector<PwValue> values;  // operands before users
    std::vector<PwContext> contexts;
    std::vector<PwSite> sites;
    std::vector<int> outputs;              // value per output
    std::vector<const ir::Node*> inputs;   // canonical order (first appearance in ir::topo_order)
    std::vector<const ir::Node*> scalars;  // canonical order
    std::unordered_map<const ir::Node*, int> input_number, scalar_number;
};

/// Builds the graph; throws loom::Error when a node is not elementwise, view or leaf (a reduction).
PwGraph build_pw_graph(const std::vector<ir::NodePtr>& outputs);

}  // namespace loom::codegen::detail
