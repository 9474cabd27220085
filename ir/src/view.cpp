// Chains of views composed into one strided view (view.hpp).
#include "loom/ir/view.hpp"

#include <vector>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/op.hpp"

namespace loom::ir {

std::optional<Strides> reshape_strides(const Shape& from, const Strides& strides, const Shape& to) {
    if (numel(from) == 0) return contiguous_strides(to);
    // The dimensions of more than one element: a unit dimension's stride is never used.
    Shape os;
    Strides ost;
    for (std::size_t k = 0; k < from.size(); ++k)
        if (from[k] != 1) {
            os.push_back(from[k]);
            ost.push_back(strides[k]);
        }
    Strides nst(to.size(), 0);
    std::size_t oi = 0, ni = 0;
    while (ni < to.size() || oi < os.size()) {
        if (ni < to.size() && to[ni] == 1) {  // a new unit dimension: any stride
            nst[ni++] = 1;
            continue;
        }
        if (oi >= os.size() || ni >= to.size()) return std::nullopt;
        std::size_t oj = oi + 1, nj = ni + 1;
        std::int64_t op = os[oi], np = to[ni];
        while (op != np) {
            if (op < np) {
                if (oj >= os.size()) return std::nullopt;
                op *= os[oj++];
            } else {
                if (nj >= to.size()) return std::nullopt;
                np *= to[nj++];
            }
        }
        for (std::size_t k = oi; k + 1 < oj; ++k)
            if (ost[k] != ost[k + 1] * os[k + 1]) return std::nullopt;
        nst[nj - 1] = ost[oj - 1];
        for (std::size_t k = nj - 1; k > ni; --k) nst[k - 1] = nst[k] * to[k];
        oi = oj;
        ni = nj;
    }
    return nst;
}

const Node& view_base(const Node& x) {
    const Node* n = &x;
    while (is_view(n->op())) n = n->operand(0);
    return *n;
}

std::optional<StridedView> compose_views(const Node& x, const Strides& base_strides, const Node* stop) {
    std::vector<const Node*> chain;
    const Node* n = &x;
    while (n != stop && is_view(n->op())) {
        chain.push_back(n);
        n = n->operand(0);
    }
    StridedView v{n, 0, base_strides};
    Shape shape = n->shape();
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        const Node& view = **it;
        const Shape& to = view.shape();
        Strides st(to.size(), 0);
        switch (view.op()) {
            case Op::BroadcastTo: {
                const std::size_t lead = to.size() - shape.size();
                for (std::size_t d = 0; d < shape.size(); ++d)
                    st[lead + d] = shape[d] == to[lead + d] ? v.strides[d] : 0;
                break;
            }
            case Op::Permute:
                for (std::size_t d = 0; d < to.size(); ++d)
                    st[d] = v.strides[static_cast<std::size_t>(view.ints()[d])];
                break;
            case Op::Slice:
                for (std::size_t d = 0; d < to.size(); ++d) {
                    v.offset += view.ints()[2 * d] * v.strides[d];
                    st[d] = v.strides[d] * view.ints()[2 * d + 1];
                }
                break;
            case Op::Reshape: {
                std::optional<Strides> r = reshape_strides(shape, v.strides, to);
                if (!r) return std::nullopt;
                st = std::move(*r);
                break;
            }
            default:
                throw InternalError(fmt::format("compose_views(): {} is not a view", describe(view)));
        }
        v.strides = std::move(st);
        shape = to;
    }
    return v;
}

std::optional<StridedView> view_of_input(const Node& x,
                                         const std::function<Strides(const Node&)>& strides_of) {
    const Node& base = view_base(x);
    if (base.op() != Op::Input) return std::nullopt;
    return compose_views(x, strides_of(base));
}

}  // namespace loom::ir
