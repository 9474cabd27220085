// lower_factories: a fill becomes a broadcast run-time scalar.
//
// Why: full(shape, v) is a lazy factory so that it can name a device and print as what the user wrote; for
// planning it is exactly a broadcast of one value, which every kernel family already reads as a kernel
// parameter (a new value never recompiles). Iota leaves stay: they are computed in the kernel from the
// element's coordinates. Guarantees: the same value in every element, same dtype and shape.
#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"

namespace loom::ir {

std::vector<NodePtr> lower_factories(const std::vector<NodePtr>& roots) {
    return rewrite(roots, [](const Node& n, const std::vector<NodePtr>&) -> NodePtr {
        if (n.op() != Op::Fill) return nullptr;
        return broadcast_to(scalar(n.value(), n.dtype(), n.loc()), n.shape(), n.loc());
    });
}

}  // namespace loom::ir
