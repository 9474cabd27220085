// The (node, view context) walk of a pointwise kernel's graph; see pointwise_graph.hpp.
#include "pointwise_graph.hpp"

#include <fmt/format.h>

#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"

namespace loom::codegen::detail {

PwGraph build_pw_graph(const std::vector<ir::NodePtr>& outputs) {
    using ir::Op;
    PwGraph g;
    for (const ir::Node* n : ir::topo_order(outputs)) {
        if (n->op() == Op::Input ||
            n->op() == Op::Iota) {  // an iota is read like an input: at its coordinates
            g.input_number.emplace(n, static_cast<int>(g.inputs.size()));
            g.inputs.push_back(n);
        } else if (n->op() == Op::Scalar) {
            g.scalar_number.emplace(n, static_cast<int>(g.scalars.size()));
            g.scalars.push_back(n);
        } else if (ir::is_reduction(n->op())) {
            throw Error(
                fmt::format("pointwise(): {} ({}) is a reduction; a pointwise kernel holds only "
                            "elementwise ops, views and leaves",
                            ir::op_name(n->op()), short_location(n->loc())));
        }
    }
    g.contexts.push_back({});  // root
    g.contexts.push_back({});  // uniform

    std::map<std::pair<const ir::Node*, int>, int> memo;  // (node, ctx) -> value
    std::map<std::pair<int, const ir::Node*>, int> child_ctx;
    auto norm = [](const ir::Node* n, int ctx) { return n->rank() == 0 ? kUniformContext : ctx; };
    auto child_of = [&](int ctx, const ir::Node* view) {
        auto [it, fresh] = child_ctx.try_emplace({ctx, view}, static_cast<int>(g.contexts.size()));
        if (fresh) g.contexts.push_back({ctx, view});
        return it->second;
    };

    struct Frame {
        const ir::Node* node;
        int ctx;
        std::size_t next;
    };
    for (const auto& out : outputs) {
        std::vector<Frame> stack;
        stack.push_back({out.get(), norm(out.get(), kRootContext), 0});
        while (!stack.empty()) {
            Frame& f = stack.back();
            if (f.next == 0 && memo.count({f.node, f.ctx})) {
                stack.pop_back();
                continue;
            }
            if (ir::is_gather(f.node->op())) {  // the index, the position, then x in the gather's context
                const ir::Node* gn = f.node;
                const int ctx = f.ctx;
                const ir::Node* ix = gn->operand(1);
                const ir::Node* x = gn->operand(0);
                if (f.next == 0) {
                    f.next = 1;
                    if (!memo.count({ix, norm(ix, ctx)})) stack.push_back({ix, norm(ix, ctx), 0});
                    continue;
                }
                const auto key = std::make_pair(ctx, gn);
                const bool fresh = !child_ctx.count(key);
                const int inner = child_of(ctx, gn);
                if (fresh) {
                    PwValue pos;
                    pos.node = gn;
                    pos.ctx = ctx;
                    pos.args = {memo.at({ix, norm(ix, ctx)})};
                    pos.gather = static_cast<int>(g.gathers.size());
                    g.contexts[static_cast<std::size_t>(inner)].gather = pos.gather;
                    g.gathers.push_back({gn, static_cast<int>(g.values.size()), inner});
                    g.values.push_back(std::move(pos));
                }
                if (f.next == 1) {
                    f.next = 2;
                    if (!memo.count({x, norm(x, inner)})) stack.push_back({x, norm(x, inner), 0});
                    continue;
                }
                memo[{gn, ctx}] = memo.at({x, norm(x, inner)});
                stack.pop_back();
                continue;
            }
            const bool view = ir::is_view(f.node->op());
            const int op_ctx = view ? child_of(f.ctx, f.node) : f.ctx;
            if (f.next < f.node->operands().size()) {
                const ir::Node* child = f.node->operand(static_cast<int>(f.next++));
                const int cctx = norm(child, op_ctx);
                if (!memo.count({child, cctx})) stack.push_back({child, cctx, 0});
                continue;
            }
            const ir::Node* n = f.node;
            const int ctx = f.ctx;
            stack.pop_back();
            if (view) {
                const ir::Node* a = n->operand(0);
                memo[{n, ctx}] = memo.at({a, norm(a, op_ctx)});
                continue;
            }
            PwValue v;
            v.node = n;
            v.ctx = ctx;
            if (n->op() == Op::Input || n->op() == Op::Iota) {
                v.site = static_cast<int>(g.sites.size());
                g.sites.push_back({g.input_number.at(n), ctx, static_cast<int>(g.values.size())});
            } else if (ir::is_elementwise(n->op())) {
                for (const auto& o : n->operands()) v.args.push_back(memo.at({o.get(), norm(o.get(), ctx)}));
            } else if (n->op() != Op::Scalar && n->op() != Op::Constant) {
                throw InternalError(fmt::format("build_pw_graph: unexpected op {}", ir::op_name(n->op())));
            }
            memo[{n, ctx}] = static_cast<int>(g.values.size());
            g.values.push_back(std::move(v));
        }
        g.outputs.push_back(memo.at({out.get(), norm(out.get(), kRootContext)}));
    }
    return g;
}

}  // namespace loom::codegen::detail
