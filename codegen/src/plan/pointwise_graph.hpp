// Internal: the (node, view context) graph of a pointwise kernel, shared by the planner and the emitter.
//
// A view node is not a value: it maps the index space of its consumer to its operand's. Walking down from
// the outputs, every view applied on the way defines a context (parent context + view node); a node is
// computed once per context in which it is reached, an Input read in a context is a load site (so is an
// Iota: its "load" is the coordinate its index map gives, computed instead of read). Rank-0
// nodes have one element, so they live in the uniform context whatever the path. The walk is iterative
// (deep chains are normal) and deterministic: values come out operands first, in operand order.
//
// A gather is a view whose index map along its axis is a value: its index operand is computed in the
// gather's context first, then the gather's position (a value of its own, checked or clamped), then its
// operand x in a child context whose map along the axis is that position. Loads in such a context are
// indirect: their offset holds the position times a stride.
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
    const ir::Node* view = nullptr;  // the view (or gather) whose operand lives in this context
    int gather = -1;                 // a gather's operand x: the gather's number (PwGraph::gathers)
};

struct PwValue {
    const ir::Node* node = nullptr;  // Input, Scalar, Constant, elementwise, or Gather: its position
    int ctx = kRootContext;
    int site = -1;          // Input: its load site
    std::vector<int> args;  // elementwise: operand values; Gather: the index's value
    int gather = -1;        // Gather: its number (PwGraph::gathers)
};

/// A gather in one context: its position along the axis (value `value`, an int64 in [0, extent)) is computed
/// from the index (an operand value of that value) before any value of the operand's context `inner`.
struct PwGather {
    const ir::Node* node = nullptr;
    int value = 0;
    int inner = 0;  // the context of the operand x
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
    std::vector<PwGather> gathers;
    std::vector<int> outputs;              // value per output
    std::vector<const ir::Node*> inputs;   // canonical order (first appearance in ir::topo_order)
    std::vector<const ir::Node*> scalars;  // canonical order
    std::unordered_map<const ir::Node*, int> input_number, scalar_number;
};

/// Builds the graph; throws loom::Error when a node is not elementwise, view or leaf (a reduction).
PwGraph build_pw_graph(const std::vector<ir::NodePtr>& outputs);

}  // namespace loom::codegen::detail
