// canonicalize_views: put views in a canonical form so that later passes and the planner see fewer shapes
// of the same thing.
//
// Why: the DSL builds views in whatever order the user wrote them. A reshape, permute or slice of a
// broadcast rank-0 value is itself just a broadcast of that value; a cast of a broadcast does the same
// work once per source element when it is moved under the broadcast. Guarantees: values and dtypes are
// unchanged (casts commute with index remapping), every result is built through the constructors.
#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"

namespace loom::ir {

std::vector<NodePtr> canonicalize_views(const std::vector<NodePtr>& roots) {
    return rewrite(roots, [](const Node& n, const std::vector<NodePtr>& ops) -> NodePtr {
        if (ops.empty()) return nullptr;
        const NodePtr& a = ops[0];
        const bool uniform_source = a->op() == Op::BroadcastTo && a->operand(0)->rank() == 0;
        if (is_view(n.op()) && n.op() != Op::BroadcastTo && uniform_source)
            return broadcast_to(a->operand_ptr(0), n.shape(), n.loc());
        if (n.op() == Op::Cast && a->op() == Op::BroadcastTo)
            return broadcast_to(cast(a->operand_ptr(0), n.dtype(), n.loc()), n.shape(), n.loc());
        return nullptr;
    });
}

}  // namespace loom::ir
