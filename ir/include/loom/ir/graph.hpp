// Graph traversal without recursion: topological order of the nodes reachable from a set of roots.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loom/ir/node.hpp"

namespace loom::ir {

/// Every node reachable from `roots`, each once, operands before their users (post-order, operands in
/// order). Iterative: chains of any depth are fine. Shared sub-graphs are visited once.
std::vector<const Node*> topo_order(const std::vector<NodePtr>& roots);

/// Number of uses of each node within the graph of `roots` (by position in `order`).
std::vector<int> use_counts(const std::vector<const Node*>& order);

/// Prints a graph with stable dense names (%0, %1, ... in topological order), one node per line:
///   %3 = add %1, %2 : [4096, 512] float32   # app.cpp:12
/// Outputs are listed last as `return %5, %7`.
std::string print(const std::vector<NodePtr>& roots);

/// Checks the invariants the constructors establish (operand shapes and dtypes per rule, ranks, view
/// attributes). Throws InternalError naming the node on the first violation.
void verify(const std::vector<NodePtr>& roots);

/// Rebuilds a graph bottom-up: `rewrite(node, new_operands)` returns the replacement of a node given its
/// operands' replacements (return nullptr to rebuild the node unchanged through `rebuild`). Iterative.
using Rewriter = std::function<NodePtr(const Node& n, const std::vector<NodePtr>& operands)>;
std::vector<NodePtr> rewrite(const std::vector<NodePtr>& roots, const Rewriter& fn);

/// Builds the node `n` again on new operands, through the constructors (so folding applies again).
NodePtr rebuild(const Node& n, const std::vector<NodePtr>& operands);

}  // namespace loom::ir
