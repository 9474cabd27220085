// hoist_uniform: compute uniform subexpressions once, on rank-0 values.
//
// Why: `x * exp(s)` with a run-time scalar `s` would otherwise evaluate exp once per element. When every
// operand of an elementwise node is a broadcast of a rank-0 value, the node is rebuilt on the rank-0
// values and broadcast: the emitter computes it once per thread before the element loop, and the
// reference once per evaluation. Guarantees: the same value in every element as before (the op is
// applied to the same operand values; no reassociation), same dtype and shape.
#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"

namespace loom::ir {

std::vector<NodePtr> hoist_uniform(const std::vector<NodePtr>& roots) {
    return rewrite(roots, [](const Node& n, const std::vector<NodePtr>& ops) -> NodePtr {
        if (!is_elementwise(n.op()) || n.rank() == 0) return nullptr;
        std::vector<NodePtr> sources;
        for (const auto& o : ops) {
            if (o->op() != Op::BroadcastTo || o->operand(0)->rank() != 0) return nullptr;
            sources.push_back(o->operand_ptr(0));
        }
        return broadcast_to(rebuild(n, sources), n.shape(), n.loc());
    });
}

}  // namespace loom::ir
