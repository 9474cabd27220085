// The pass pipeline: a readable list of graph-to-graph passes, verified between passes in debug and test
// builds, with the IR dumped after each pass that changed it when LOOM_DUMP contains "ir".
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loom/ir/node.hpp"

namespace loom::ir {

struct Pass {
    std::string name;
    std::function<std::vector<NodePtr>(const std::vector<NodePtr>&)> run;
};

/// What the standard pipeline may do beyond its fixed passes (the runtime sets it from loom::Options).
struct PassOptions {
    /// Options::attention_rewrite: run rewrite_attention first.
    bool rewrite_attention = false;
};

/// Passes of the standard pipeline, in order. Each is a free function in a file of its own under
/// ir/src/passes.
std::vector<Pass> standard_passes(const PassOptions& options = {});

/// Runs `passes` over `roots`. Verifies the input and the output of each pass when `verify_each` (on by
/// default in debug and test builds, LOOM_VERIFY=1 forces it). Because nodes are interned, a pass changed
/// the graph exactly when a root pointer changed; then, with LOOM_DUMP=ir, the IR after it goes to stderr
/// (or to LOOM_DUMP_DIR/ir_<n>_<pass>.txt).
std::vector<NodePtr> run_pipeline(const std::vector<NodePtr>& roots, const std::vector<Pass>& passes);

/// Pass (passes/lower_factories.cpp): a fill (full, zeros, ones) becomes a broadcast run-time scalar.
std::vector<NodePtr> lower_factories(const std::vector<NodePtr>& roots);
/// Pass (passes/canonicalize_views.cpp): a view of a broadcast rank-0 value becomes one broadcast of it,
/// and a cast of a broadcast becomes a broadcast of the cast, so that the work happens on the small source.
std::vector<NodePtr> canonicalize_views(const std::vector<NodePtr>& roots);
/// Pass (passes/hoist_uniform.cpp): an elementwise op whose operands are all broadcasts of rank-0 values
/// (uniform over the iteration space) is computed once on the rank-0 values and broadcast.
std::vector<NodePtr> hoist_uniform(const std::vector<NodePtr>& roots);

/// A written-out attention, matmul(softmax(scores), v) with the DSL's softmax over the last axis, that
/// find_attention_patterns recognized (docs/semantics.md, "Attention", "The written-out form").
struct AttentionPattern {
    const Node* product = nullptr;  // the matmul(p, v)
    /// Whether attention(q, k, v) computes it: scores of matmul(q, kᵀ) times a constant, unmasked or under a
    /// causal mask of index comparisons that keeps a key in every row, and shapes and dtypes attention()
    /// takes. Else `reason` says what stops it.
    bool rewritable = false;
    std::string reason;
    NodePtr q, k, v;
    CausalMask causal = CausalMask::None;
    double scale = 1.0;
};
/// Every matmul(softmax(...), v) in the graph of `roots`, in topological order, rewritable or not.
std::vector<AttentionPattern> find_attention_patterns(const std::vector<NodePtr>& roots);
/// Pass (passes/rewrite_attention.cpp; Options::attention_rewrite, off by default): each rewritable
/// pattern's product becomes one attention node (in attention()'s order of sums, not the written one).
std::vector<NodePtr> rewrite_attention(const std::vector<NodePtr>& roots);
/// Lines for the explain log, one per pattern: rewritten (when `rewriting`), could be rewritten, or why not.
std::string explain_attention_patterns(const std::vector<NodePtr>& roots, bool rewriting);

}  // namespace loom::ir
