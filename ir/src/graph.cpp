// Iterative traversal, printing, verification and rewriting of IR graphs.
#include "loom/ir/graph.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cmath>
#include <unordered_map>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"

namespace loom::ir {

std::vector<const Node*> topo_order(const std::vector<NodePtr>& roots) {
    std::vector<const Node*> order;
    std::unordered_map<const Node*, bool> state;  // false: on stack (expanding), true: emitted
    std::vector<std::pair<const Node*, std::size_t>> stack;
    for (const auto& r : roots) {
        if (!r || state.count(r.get())) continue;
        stack.emplace_back(r.get(), 0);
        state[r.get()] = false;
        while (!stack.empty()) {
            auto& [n, next] = stack.back();
            if (next < n->operands().size()) {
                const Node* child = n->operands()[next++].get();
                if (!state.count(child)) {
                    state[child] = false;
                    stack.emplace_back(child, 0);
                }
            } else {
                state[n] = true;
                order.push_back(n);
                stack.pop_back();
            }
        }
    }
    return order;
}

std::vector<int> use_counts(const std::vector<const Node*>& order) {
    std::unordered_map<const Node*, std::size_t> pos;
    for (std::size_t k = 0; k < order.size(); ++k) pos[order[k]] = k;
    std::vector<int> uses(order.size(), 0);
    for (const Node* n : order)
        for (const auto& o : n->operands()) ++uses[pos.at(o.get())];
    return uses;
}

namespace {

std::string value_text(const Node& n) {
    const ScalarValue& v = n.value();
    if (!v.is_float) return fmt::format("{}", v.i);
    if (std::isnan(v.f)) return std::signbit(v.f) ? "-nan" : "nan";
    return fmt::format("{}", v.f);  // shortest round-trip form
}

std::string attr_text(const Node& n) {
    switch (info(n.op()).kind) {
        case OpKind::Leaf:
            if (n.op() == Op::Input) return fmt::format("\"{}\"", n.label());
            if (n.op() == Op::Iota) return fmt::format("axis={}", n.ints().at(0));
            return value_text(n);
        case OpKind::View:
            switch (n.op()) {
                case Op::Permute:
                    return fmt::format("perm=[{}]", fmt::join(n.ints(), ", "));
                case Op::Slice: {
                    std::string s;
                    for (std::size_t k = 0; k + 1 < n.ints().size(); k += 2)
                        s += fmt::format("{}{}::{}", k ? ", " : "", n.ints()[k], n.ints()[k + 1]);
                    return fmt::format("start::step=[{}]", s);
                }
                default:
                    return "";
            }
        case OpKind::Reduce:
            return fmt::format("axes=[{}]{}", fmt::join(n.ints(), ", "), n.keepdims() ? " keepdims" : "");
        case OpKind::Product:
            return n.ints().empty()
                       ? fmt::format("k={}", n.operand(0)->shape().back())  // the contraction's length
                       : fmt::format("k={} tile={}x{}x{}", n.operand(0)->shape().back(), n.ints()[0],
                                     n.ints()[1], n.ints()[2]);
        case OpKind::Gather:
            return fmt::format("axis={}{} ({})", n.ints().at(0),
                               static_cast<IndexMode>(n.ints().at(1)) == IndexMode::Clamp ? " clamp" : "",
                               gather_api_name(static_cast<GatherApi>(n.ints().at(2))));
        case OpKind::Attention:
            return attention_attributes(n);
        case OpKind::Scan:
            return scan_attributes(n);
        case OpKind::Scatter:
            return scatter_attributes(n);
        default:
            return "";
    }
}

}  // namespace

std::string print(const std::vector<NodePtr>& roots) {
    const auto order = topo_order(roots);
    std::unordered_map<const Node*, std::size_t> name;
    std::string out;
    for (std::size_t k = 0; k < order.size(); ++k) {
        const Node* n = order[k];
        name[n] = k;
        std::string ops;
        for (const auto& o : n->operands())
            ops += fmt::format("{}%{}", ops.empty() ? "" : ", ", name.at(o.get()));
        std::string attrs = attr_text(*n);
        std::string args = ops;
        if (!attrs.empty()) args += (args.empty() ? "" : ", ") + attrs;
        out += fmt::format("%{} = {}{}{} : {}   # {}\n", k, op_name(n->op()), args.empty() ? "" : " ", args,
                           describe(*n), short_location(n->loc()));
    }
    std::string rets;
    for (const auto& r : roots) rets += fmt::format("{}%{}", rets.empty() ? "" : ", ", name.at(r.get()));
    out += fmt::format("return {}\n", rets);
    return out;
}

void verify(const std::vector<NodePtr>& roots) {
    for (const Node* n : topo_order(roots)) {
        const OpInfo& oi = info(n->op());
        auto bad = [&](const std::string& why) {
            throw InternalError(fmt::format("verify: {} node ({}) at {}: {}", oi.name, describe(*n),
                                            short_location(n->loc()), why));
        };
        if (n->rank() > kMaxRank) bad("rank exceeds kMaxRank");
        if (oi.arity >= 0 && static_cast<int>(n->operands().size()) != oi.arity)
            bad(fmt::format("{} operands, expected {}", n->operands().size(), oi.arity));
        switch (oi.kind) {
            case OpKind::Leaf:
                if ((n->op() == Op::Scalar || n->op() == Op::Constant) && n->rank() != 0)
                    bad("scalar leaf with nonzero rank");
                if (n->op() == Op::Iota && (n->dtype() != DType::Int64 || n->ints().size() != 2 ||
                                            n->ints()[0] < 0 || n->ints()[0] >= n->rank()))
                    bad("iota must be int64 with an axis of its shape and a device");
                if (n->op() == Op::Fill && n->ints().size() != 1) bad("fill without its device");
                break;
            case OpKind::Unary:
            case OpKind::Binary:
            case OpKind::Ternary:
                for (const auto& o : n->operands())
                    if (o->shape() != n->shape())
                        bad(fmt::format("operand shape {} differs", to_string(o->shape())));
                if (oi.rule == Rule::Arith || oi.rule == Rule::Clamp || oi.rule == Rule::FloatArith ||
                    (oi.rule == Rule::FloatMath && oi.kind != OpKind::Unary) || oi.rule == Rule::Bitwise) {
                    for (const auto& o : n->operands())
                        if (o->dtype() != n->dtype()) bad("operand dtype differs from the result's");
                }
                if (oi.rule == Rule::FloatMath && !is_float(n->dtype()))
                    bad("float op with a non-float result");
                if (oi.rule == Rule::Compare && n->operand(0)->dtype() != n->operand(1)->dtype())
                    bad("compared operands of different dtypes");
                if (oi.rule == Rule::Random &&
                    (n->operand(0)->dtype() != DType::Int64 || n->operand(1)->dtype() != DType::Int64 ||
                     !is_float(n->dtype())))
                    bad("random op operands not (int64, int64) or its result not a float");
                if (oi.rule == Rule::Select &&
                    (n->operand(0)->dtype() != DType::Bool || n->operand(1)->dtype() != n->dtype() ||
                     n->operand(2)->dtype() != n->dtype()))
                    bad("where operands not (bool, T, T)");
                break;
            case OpKind::View:
                if (n->operand(0)->dtype() != n->dtype()) bad("view changes dtype");
                if (n->op() == Op::Reshape && n->operand(0)->numel() != n->numel())
                    bad("reshape changes numel");
                if (n->op() == Op::Permute && n->ints().size() != static_cast<std::size_t>(n->rank()))
                    bad("permutation length differs from rank");
                if (n->op() == Op::Slice && n->ints().size() != 2 * static_cast<std::size_t>(n->rank()))
                    bad("slice attributes not 2 per axis");
                break;
            case OpKind::Reduce:
                for (auto ax : n->ints())
                    if (ax < 0 || ax >= n->operand(0)->rank()) bad("reduction axis out of range");
                break;
            case OpKind::Product: {
                // [B..., M, K] x [B..., K, N] -> [B..., M, N]: the constructor made every broadcast explicit.
                const Node& x = *n->operand(0);
                const Node& y = *n->operand(1);
                const auto r = static_cast<std::size_t>(n->rank());
                if (r < 2 || x.shape().size() != r || y.shape().size() != r)
                    bad("operands and result of unequal rank, or below 2");
                const Shape& s = n->shape();
                for (std::size_t k = 0; k + 2 < r; ++k)
                    if (x.shape()[k] != s[k] || y.shape()[k] != s[k])
                        bad("batch axes differ from the result's");
                if (x.shape()[r - 2] != s[r - 2] || y.shape()[r - 1] != s[r - 1] ||
                    x.shape()[r - 1] != y.shape()[r - 2])
                    bad(fmt::format("operands {} and {} do not multiply to the result", describe(x),
                                    describe(y)));
                if (x.dtype() != y.dtype()) bad("operands of different dtypes");
                if (!n->ints().empty() &&
                    (n->ints().size() != 3 || n->ints()[0] < 0 || n->ints()[1] < 0 || n->ints()[2] < 0))
                    bad("a tile hint that is not three extents of 0 or more");
                if (!(is_float(x.dtype()) && n->dtype() == x.dtype()) &&
                    !(x.dtype() == DType::Int8 && n->dtype() == DType::Int32))
                    bad(fmt::format("a product of {} operands cannot give {}", name(x.dtype()),
                                    name(n->dtype())));
                break;
            }
            case OpKind::Attention: {
                const auto m = static_cast<std::size_t>(n->operands().size());
                if (m != 3 && m != 4)
                    bad("attention takes q, k, v and an optional bias");
                else if (n->ints().size() != 1 || n->ints()[0] < 0 || n->ints()[0] > 2)
                    bad("attention attributes not {causal mask}");
                else if (n->rank() < 3 || n->shape() != n->operand(0)->shape())
                    bad("attention result not of q's shape");
                else {
                    Shape scores = n->shape();
                    scores.back() = n->operand(1)->shape()[static_cast<std::size_t>(n->rank() - 2)];
                    if (m == 4 && n->operand(3)->shape() != scores)
                        bad("attention bias not of the scores' shape");
                }
                for (const auto& o : n->operands())
                    if (o->dtype() != n->dtype()) bad("attention operands of another dtype");
                break;
            }
            case OpKind::Scan: {
                const Node& x = *n->operand(0);
                if (n->ints().size() != 2 || n->ints()[0] < 0 || n->ints()[0] >= x.rank() ||
                    (n->ints()[1] != 0 && n->ints()[1] != 1))
                    bad("scan attributes not {axis, exclusive}");
                if (n->shape() != x.shape()) bad("scan result not of its operand's shape");
                if (n->dtype() != scan_result_dtype(n->op(), x.dtype()))
                    bad(fmt::format("a scan of {} cannot give {}", name(x.dtype()), name(n->dtype())));
                break;
            }
            case OpKind::Scatter: {
                const Node& x = *n->operand(0);
                const Node& idx = *n->operand(1);
                const Node& v = *n->operand(2);
                if (n->ints().size() != 4 || n->ints()[0] < 0 || n->ints()[0] >= n->rank() ||
                    n->ints()[1] < 0 || n->ints()[1] > 1 ||
                    n->ints()[2] < static_cast<std::int64_t>(GatherApi::Scatter) ||
                    n->ints()[2] > static_cast<std::int64_t>(GatherApi::IndexAdd) || n->ints()[3] < 0 ||
                    n->ints()[3] > 1 || (n->ints()[3] == 1 && n->op() != Op::ScatterAdd))
                    bad("scatter attributes not {axis, mode, api, atomic}");
                else if (x.shape() != n->shape() || idx.shape() != v.shape() || v.rank() != n->rank())
                    bad("scatter result not of x's shape, or index not of the values' shape");
                else
                    for (int d = 0; d < n->rank(); ++d)
                        if (d != n->ints()[0] &&
                            v.shape()[static_cast<std::size_t>(d)] != n->shape()[static_cast<std::size_t>(d)])
                            bad("scatter values differ from x off the axis");
                if (x.dtype() != n->dtype() || v.dtype() != n->dtype()) bad("scatter changes dtype");
                if (idx.dtype() != DType::Int32 && idx.dtype() != DType::Int64)
                    bad("scatter index not int32 or int64");
                break;
            }
            case OpKind::Gather: {
                const Node& x = *n->operand(0);
                const Node& idx = *n->operand(1);
                if (n->ints().size() != 3 || n->ints()[0] < 0 || n->ints()[0] >= n->rank() ||
                    n->ints()[1] < 0 || n->ints()[1] > 1 || n->ints()[2] < 0 ||
                    n->ints()[2] > static_cast<std::int64_t>(GatherApi::CrossEntropy))
                    bad("gather attributes not {axis, mode, api}");
                else if (x.rank() != n->rank() || idx.shape() != n->shape())
                    bad("gather result not of the index's shape and the operand's rank");
                else
                    for (int d = 0; d < n->rank(); ++d)
                        if (d != n->ints()[0] &&
                            x.shape()[static_cast<std::size_t>(d)] != n->shape()[static_cast<std::size_t>(d)])
                            bad("gather operand differs from the result off the axis");
                if (x.dtype() != n->dtype()) bad("gather changes dtype");
                if (idx.dtype() != DType::Int32 && idx.dtype() != DType::Int64)
                    bad("gather index not int32 or int64");
                if (n->numel() > 0 && x.shape()[static_cast<std::size_t>(n->ints()[0])] == 0)
                    bad("gather from an axis of extent 0");
                break;
            }
        }
    }
}

NodePtr rebuild(const Node& n, const std::vector<NodePtr>& ops) {
    const OpInfo& oi = info(n.op());
    switch (oi.kind) {
        case OpKind::Leaf:
            throw InternalError("rebuild: leaves are not rebuilt");
        case OpKind::Unary:
            if (n.op() == Op::Cast) return cast(ops[0], n.dtype(), n.loc());
            return unary(n.op(), ops[0], n.loc());
        case OpKind::Binary:
            // A random op's dtype is its own (binary() would give float32).
            if (oi.rule == Rule::Random) return random(n.op(), ops[0], ops[1], n.dtype(), n.loc());
            return binary(n.op(), ops[0], ops[1], n.loc());
        case OpKind::Ternary:
            return ternary(n.op(), ops[0], ops[1], ops[2], n.loc());
        case OpKind::View:
            switch (n.op()) {
                case Op::BroadcastTo:
                    return broadcast_to(ops[0], n.shape(), n.loc());
                case Op::Reshape:
                    return reshape(ops[0], n.shape(), n.loc());
                case Op::Permute:
                    return permute(ops[0], n.ints(), n.loc());
                case Op::Slice: {
                    std::vector<SliceSpec> spec;
                    for (std::size_t k = 0; k < n.ints().size(); k += 2) {
                        const std::int64_t start = n.ints()[k], step = n.ints()[k + 1];
                        const std::int64_t count = n.shape()[k / 2];
                        SliceSpec s;
                        s.start = start;
                        s.step = step;
                        // One past the last element taken: within [0, extent] for a positive step (start +
                        // count * step can pass the extent); below 0 means "to the front" for a negative one.
                        s.stop = step > 0 ? start + (count - 1) * step + 1 : start + count * step;
                        if (step < 0 && s.stop < 0) s.stop = SliceSpec::kNone;
                        if (count == 0) s.stop = start;
                        spec.push_back(s);
                    }
                    return slice(ops[0], spec, n.loc());
                }
                default:
                    break;
            }
            break;
        case OpKind::Reduce:
            return reduce(n.op(), ops[0], n.ints(), n.keepdims(), n.loc());
        case OpKind::Product:
            return matmul(ops[0], ops[1], n.loc(), product_tile(n));
        case OpKind::Gather:
            return gather(ops[0], ops[1], static_cast<int>(n.ints()[0]), static_cast<IndexMode>(n.ints()[1]),
                          static_cast<GatherApi>(n.ints()[2]), n.loc());
        case OpKind::Attention:
            return attention(ops[0], ops[1], ops[2], ops.size() == 4 ? ops[3] : nullptr, attention_causal(n),
                             n.value().f, n.loc());
        case OpKind::Scan:
            return scan(n.op(), ops[0], scan_axis(n), scan_exclusive(n), n.loc());
        case OpKind::Scatter:
            return scatter_node(n.op(), ops[0], ops[1], ops[2], scatter_axis(n), scatter_mode(n),
                                scatter_api(n), scatter_atomic(n), n.loc());
    }
    throw InternalError(fmt::format("rebuild: unhandled op {}", oi.name));
}

std::vector<NodePtr> rewrite(const std::vector<NodePtr>& roots, const Rewriter& fn) {
    const auto order = topo_order(roots);
    // An owning pointer for every node: from the roots and the operand lists (the graph owns them all).
    std::unordered_map<const Node*, NodePtr> owner;
    for (const auto& r : roots) owner.emplace(r.get(), r);
    for (const Node* n : order)
        for (const auto& o : n->operands()) owner.emplace(o.get(), o);
    std::unordered_map<const Node*, NodePtr> done;
    for (const Node* n : order) {
        std::vector<NodePtr> ops;
        ops.reserve(n->operands().size());
        bool same = true;
        for (const auto& o : n->operands()) {
            ops.push_back(done.at(o.get()));
            same = same && ops.back() == o;
        }
        NodePtr repl = fn(*n, ops);
        if (!repl) repl = same ? owner.at(n) : rebuild(*n, ops);
        done[n] = std::move(repl);
    }
    std::vector<NodePtr> out;
    for (const auto& r : roots) out.push_back(done.at(r.get()));
    return out;
}

}  // namespace loom::ir
