// The CPU reference evaluator: walks a graph in topological order, holds each node's value as a host
// tensor (views as strided views without copying, computed nodes as contiguous buffers), and frees every
// intermediate after its last use.
#include "loom/runtime/reference.hpp"

#include <fmt/format.h>

#include <unordered_map>

#include "loom/ir/build.hpp"
#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "reference_internal.hpp"

namespace loom::reference {
namespace {

using ir::Node;
using ir::Op;
using namespace detail;

Tensor bound_tensor(const Node& n, const Overrides& overrides) {
    Tensor t;
    if (auto it = overrides.find(n.input_id()); it != overrides.end()) {
        t = it->second;
    } else if (n.payload()) {
        auto impl = std::static_pointer_cast<const Tensor::Impl>(n.payload());
        t = Tensor(std::const_pointer_cast<Tensor::Impl>(std::move(impl)));
    }
    if (!t.defined())
        throw Error(fmt::format("reference::evaluate(): input '{}' ({}) has no tensor bound ({})", n.label(),
                                ir::describe(n), short_location(n.loc())));
    if (t.dtype() != n.dtype() || t.shape() != n.shape())
        throw Error(fmt::format("reference::evaluate(): input '{}' is {} but its tensor is {} {} ({})",
                                n.label(), ir::describe(n), to_string(t.shape()), name(t.dtype()),
                                short_location(n.loc())));
    if (t.device().is_cuda()) t = t.to_host();
    return t;
}

Tensor scalar_tensor(const Node& n, DType dt) {
    Tensor t = Tensor::host({}, dt);
    const ir::ScalarValue v = n.value();
    ir::ew::visit_dtype(dt, [&]<DType D>() {
        using C = ir::ew::compute_t<D>;
        C c;
        if constexpr (D == DType::Bool)
            c = (v.is_float ? v.f != 0.0 : v.i != 0) ? 1 : 0;
        else if constexpr (is_float(D))
            c = static_cast<C>(v.as_double());
        else
            c = static_cast<C>(v.i);
        *static_cast<ir::ew::storage_t<D>*>(t.data()) = ir::ew::store<D>(c);
    });
    return t;
}

Tensor broadcast_view(const Tensor& t, const Shape& shape) {
    const std::size_t R = shape.size(), r = static_cast<std::size_t>(t.rank());
    Strides strides(R, 0);
    for (std::size_t k = 0; k < r; ++k) {
        const std::size_t o = R - r + k;
        strides[o] = (t.shape()[k] == 1 && shape[o] != 1) ? 0 : t.strides()[k];
    }
    return t.as_strided(shape, strides, t.offset());
}

Tensor reshape_view(const Tensor& t, const Shape& shape) {
    const Tensor c = t.is_contiguous() ? t : materialize(t);
    return c.as_strided(shape, contiguous_strides(shape), c.offset());
}

Tensor permute_view(const Tensor& t, const std::vector<std::int64_t>& perm) {
    Shape shape;
    Strides strides;
    for (auto p : perm) {
        shape.push_back(t.shape().at(static_cast<std::size_t>(p)));
        strides.push_back(t.strides().at(static_cast<std::size_t>(p)));
    }
    return t.as_strided(shape, strides, t.offset());
}

Tensor slice_view(const Tensor& t, const std::vector<std::int64_t>& ints, const Shape& shape) {
    std::int64_t offset = t.offset();
    Strides strides(shape.size());
    for (std::size_t k = 0; k < shape.size(); ++k) {
        const std::int64_t start = ints.at(2 * k), step = ints.at(2 * k + 1);
        if (shape[k] > 0) offset += start * t.strides()[k];
        strides[k] = t.strides()[k] * step;
    }
    return t.as_strided(shape, strides, offset);
}

Tensor eval_node(const Node& n, const std::vector<Tensor>& args, const Overrides& overrides, Mode mode) {
    const DType dt = effective(n.dtype(), mode);
    switch (ir::info(n.op()).kind) {
        case ir::OpKind::Leaf:
            if (n.op() == Op::Input) {
                Tensor t = bound_tensor(n, overrides);
                return dt != t.dtype() ? cast_tensor(t, dt) : t;
            }
            if (n.op() == Op::Fill) return broadcast_view(scalar_tensor(n, dt), n.shape());
            if (n.op() ==
                Op::Iota) {  // the coordinates along the axis, viewed with stride 0 on every other axis
                const auto axis = static_cast<std::size_t>(n.ints().at(0));
                const std::int64_t extent = n.shape()[axis];
                Tensor line = Tensor::host({extent}, DType::Int64);
                auto* p = static_cast<std::int64_t*>(line.data());
                for (std::int64_t i = 0; i < extent; ++i) p[i] = i;
                Strides strides(n.shape().size(), 0);
                strides[axis] = 1;
                return line.as_strided(n.shape(), strides, 0);
            }
            return scalar_tensor(n, dt);
        case ir::OpKind::View:
            switch (n.op()) {
                case Op::BroadcastTo:
                    return broadcast_view(args.at(0), n.shape());
                case Op::Reshape:
                    return reshape_view(args.at(0), n.shape());
                case Op::Permute:
                    return permute_view(args.at(0), n.ints());
                case Op::Slice:
                    return slice_view(args.at(0), n.ints(), n.shape());
                default:
                    break;
            }
            break;
        case ir::OpKind::Unary:
        case ir::OpKind::Binary:
        case ir::OpKind::Ternary:
            if (n.op() == Op::Cast && args.at(0).dtype() == dt) return args[0];  // Oracle: float -> float
            return eval_elementwise_node(n, args, dt);
        case ir::OpKind::Reduce:
            return eval_reduction_node(n, args.at(0), dt);
        case ir::OpKind::Product:
            return eval_product_node(n, args.at(0), args.at(1), dt);
        case ir::OpKind::Gather:
            return eval_gather_node(n, args.at(0), args.at(1), dt);
        case ir::OpKind::Attention:
            return eval_attention_node(n, args, dt);
        case ir::OpKind::Scan:
            return eval_scan_node(n, args.at(0), dt);
        case ir::OpKind::Scatter:
            return eval_scatter_node(n, args.at(0), args.at(1), args.at(2), dt);
    }
    throw InternalError(fmt::format("reference: cannot evaluate {}", ir::op_name(n.op())));
}

}  // namespace

std::vector<Tensor> evaluate(const std::vector<ir::NodePtr>& roots, const Overrides& overrides, Mode mode) {
    const std::vector<const Node*> order = ir::topo_order(roots);
    std::unordered_map<const Node*, std::size_t> pos;
    for (std::size_t k = 0; k < order.size(); ++k) pos[order[k]] = k;
    std::vector<int> remaining(order.size(), 0);
    std::vector<bool> is_root(order.size(), false);
    for (const Node* n : order)
        for (const auto& o : n->operands()) ++remaining[pos.at(o.get())];
    for (const auto& r : roots) is_root[pos.at(r.get())] = true;

    std::vector<Tensor> values(order.size());
    std::vector<Tensor> args;
    for (std::size_t k = 0; k < order.size(); ++k) {
        const Node& n = *order[k];
        args.clear();
        for (const auto& o : n.operands()) args.push_back(values[pos.at(o.get())]);
        values[k] = eval_node(n, args, overrides, mode);
        args.clear();
        for (const auto& o : n.operands()) {
            const std::size_t p = pos.at(o.get());
            if (--remaining[p] == 0 && !is_root[p]) values[p] = Tensor();  // last use: free
        }
    }

    std::vector<Tensor> results;
    results.reserve(roots.size());
    for (const auto& r : roots) {
        const Tensor& v = values[pos.at(r.get())];
        const ir::OpKind kind = ir::info(r->op()).kind;
        const bool fresh = kind == ir::OpKind::Unary || kind == ir::OpKind::Binary ||
                           kind == ir::OpKind::Ternary || kind == ir::OpKind::Reduce ||
                           kind == ir::OpKind::Product || kind == ir::OpKind::Gather ||
                           kind == ir::OpKind::Attention || kind == ir::OpKind::Scan ||
                           kind == ir::OpKind::Scatter || r->op() == Op::Scalar || r->op() == Op::Constant;
        // Fresh contiguous buffers are returned as they are; inputs and views are copied, so no result
        // aliases a user's tensor. (An Oracle-mode Cast between float dtypes passes its operand through.)
        const bool passed_through = r->op() == Op::Cast && mode == Mode::Oracle;
        if (fresh && !passed_through && v.is_contiguous() && v.offset() == 0)
            results.push_back(v);
        else
            results.push_back(materialize(v));
    }
    return results;
}

Tensor evaluate(const ir::NodePtr& root, const Overrides& overrides, Mode mode) {
    return evaluate(std::vector<ir::NodePtr>{root}, overrides, mode).at(0);
}

Tensor cast(const Tensor& t, DType to) {
    const Tensor h = t.device().is_cuda() ? t.to_host() : t;
    return detail::cast_tensor(h, to);
}

}  // namespace loom::reference
