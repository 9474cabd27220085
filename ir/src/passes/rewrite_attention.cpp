// rewrite_attention: attention written out as matmul(softmax(q kᵀ · scale, masked), v), recognized and, under
// Options::attention_rewrite, rebuilt as one attention node (docs/semantics.md, "Attention", "The written-out
// form").
//
// Why: written out, the scores are a [..., T, S] tensor that a product writes, a softmax reads and writes,
// and a second product reads; attention() never materializes them. The rewrite changes the order of the
// sums (attention's online softmax instead of the written softmax), so it is opt-in, and it is refused where
// the two forms can differ in more than rounding: a row whose every key is masked gives NaN through softmax
// and 0 through attention. Only unmasked scores and causal masks built from index comparisons whose every row
// keeps at least one key qualify; an additive bias could mask a whole row, so it is reported, not rewritten.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"

namespace loom::ir {

namespace {

const Node* strip_broadcast(const Node* n) {
    return n->op() == Op::BroadcastTo ? n->operand(0) : n;
}

// The value of a scalar, or of a broadcast of one.
std::optional<double> constant_of(const Node* n) {
    n = strip_broadcast(n);
    if (n->op() != Op::Scalar) return std::nullopt;
    return n->value().as_double();
}

// A reduction of `op` over the last axis of `of`, with keepdims (as softmax builds it), seen through the
// broadcast back to `of`'s shape.
bool is_row_reduction(const Node* n, Op op, const Node* of) {
    n = strip_broadcast(n);
    return n->op() == op && n->keepdims() && n->operand(0) == of && n->ints().size() == 1 &&
           n->ints()[0] == of->rank() - 1;
}

// An integer index that varies along one axis only: value = coord[axis] + offset, the axis counted from the
// end (-1 the last), as arange(n).reshape(...) broadcast against another arange builds it.
struct AxisIndex {
    int axis = 0;
    std::int64_t offset = 0;
};

// The non-unit extents of a shape with their axes counted from the end.
std::vector<std::pair<std::int64_t, int>> non_unit_axes(const Shape& s) {
    std::vector<std::pair<std::int64_t, int>> out;
    const int r = static_cast<int>(s.size());
    for (int k = 0; k < r; ++k)
        if (s[static_cast<std::size_t>(k)] != 1) out.emplace_back(s[static_cast<std::size_t>(k)], k - r);
    return out;
}

std::optional<AxisIndex> axis_index(const Node* n);

// x + c, c + x, x - c: the offset moves by c.
std::optional<AxisIndex> shifted(const Node* n) {
    const Node* a = n->operand(0);
    const Node* b = n->operand(1);
    if (n->op() == Op::Add && constant_of(a)) std::swap(a, b);
    const std::optional<double> c = constant_of(b);
    std::optional<AxisIndex> x = axis_index(a);
    if (!c || !x || *c != std::trunc(*c)) return std::nullopt;
    x->offset += static_cast<std::int64_t>(n->op() == Op::Add ? *c : -*c);
    return x;
}

std::optional<AxisIndex> axis_index(const Node* n) {
    switch (n->op()) {
        case Op::Iota:
            return AxisIndex{static_cast<int>(n->ints().at(0)) - n->rank(), 0};
        case Op::Add:
        case Op::Sub:
            return shifted(n);
        case Op::Mul: {  // arange's index times a step of 1
            const Node* a = n->operand(0);
            const Node* b = n->operand(1);
            if (constant_of(a)) std::swap(a, b);
            if (constant_of(b) != 1.0) return std::nullopt;
            return axis_index(a);
        }
        case Op::Cast:
            if (!is_integer(n->dtype()) || !is_integer(n->operand(0)->dtype())) return std::nullopt;
            return axis_index(n->operand(0));
        case Op::BroadcastTo: {  // right-aligned: the varying axis keeps its place from the end and its
                                 // extent
            std::optional<AxisIndex> x = axis_index(n->operand(0));
            const Node* src = n->operand(0);
            if (!x || src->shape()[static_cast<std::size_t>(src->rank() + x->axis)] !=
                          n->shape()[static_cast<std::size_t>(n->rank() + x->axis)])
                return std::nullopt;
            return x;
        }
        case Op::Reshape: {  // only unit axes inserted or removed: the varying axis maps to its new place
            std::optional<AxisIndex> x = axis_index(n->operand(0));
            const auto from = non_unit_axes(n->operand(0)->shape());
            const auto to = non_unit_axes(n->shape());
            if (!x || from.size() != to.size()) return std::nullopt;
            for (std::size_t k = 0; k < from.size(); ++k) {
                if (from[k].first != to[k].first) return std::nullopt;
                if (from[k].second == x->axis) return AxisIndex{to[k].second, x->offset};
            }
            return std::nullopt;
        }
        default:
            return std::nullopt;
    }
}

// A causal mask: the comparison of a key (column, axis -1) index with a query (row, axis -2) index, as
// `col <= row + delta`; returns delta.
std::optional<std::int64_t> causal_delta(const Node* mask) {
    mask = strip_broadcast(mask);
    if (mask->rank() < 2) return std::nullopt;
    Op op = mask->op();
    const Node* lhs = mask->operand(0);
    const Node* rhs = mask->operand(1);
    if (op == Op::Ge || op == Op::Gt) {  // row >= col is col <= row
        std::swap(lhs, rhs);
        op = op == Op::Ge ? Op::Le : Op::Lt;
    }
    if (op != Op::Le && op != Op::Lt) return std::nullopt;
    const std::optional<AxisIndex> col = axis_index(lhs);
    const std::optional<AxisIndex> row = axis_index(rhs);
    if (!col || !row || col->axis != -1 || row->axis != -2) return std::nullopt;
    // col + a <= row + b, or col + a < row + b (that is, col <= row + b - a - 1).
    return row->offset - col->offset - (op == Op::Lt ? 1 : 0);
}

// What the matcher found of a written-out attention so far, and why it stopped.
struct Match {
    AttentionPattern p;
    const Node* scores = nullptr;  // the softmax's input, in the scores' dtype
};

// p = softmax(x) as the DSL's softmax builds it: div(e, sum(e)) with e = exp(x - max(x)) over the last
// axis, halves computed in float32 (casts around). Returns x in the scores' dtype, or null.
const Node* softmax_input(const Node* p) {
    if (p->op() == Op::Cast && is_half(p->dtype()) && p->operand(0)->dtype() == DType::Float32)
        p = p->operand(0);
    if (p->op() != Op::Div) return nullptr;
    const Node* e = p->operand(0);
    if (e->op() != Op::Exp || !is_row_reduction(p->operand(1), Op::Sum, e)) return nullptr;
    const Node* shifted_scores = e->operand(0);
    if (shifted_scores->op() != Op::Sub) return nullptr;
    const Node* x = shifted_scores->operand(0);
    if (!is_row_reduction(shifted_scores->operand(1), Op::Max, x)) return nullptr;
    if (x->op() == Op::Cast && x->dtype() == DType::Float32 && is_half(x->operand(0)->dtype()))
        x = x->operand(0);
    return x;
}

// Fills q, k, scale and the mask from the scores, or says why the scores are not q·kᵀ · scale, masked.
bool match_scores(const Node* x, AttentionPattern& p) {
    const std::int64_t T = x->shape()[static_cast<std::size_t>(x->rank() - 2)];
    const std::int64_t S = x->shape()[static_cast<std::size_t>(x->rank() - 1)];
    if (x->op() == Op::Where && constant_of(x->operand(2)) == -INFINITY) {
        const std::optional<std::int64_t> delta = causal_delta(x->operand(0));
        if (!delta) {
            p.reason = "its mask is not a comparison of key and query indices (col <= row + d)";
            return false;
        }
        if (*delta < 0 || (*delta > 0 && *delta != S - T)) {
            p.reason = *delta < 0 ? fmt::format(
                                        "its causal mask (col <= row - {}) hides every key of the "
                                        "first rows, where softmax gives NaN and attention 0",
                                        -*delta)
                                  : fmt::format(
                                        "its causal offset {} is neither 0 (top-left) nor S - T = {} "
                                        "(bottom-right)",
                                        *delta, S - T);
            return false;
        }
        p.causal = *delta == 0 ? CausalMask::TopLeft : CausalMask::BottomRight;
        x = x->operand(1);
    } else if (x->op() == Op::Add || x->op() == Op::Where) {
        p.reason =
            "its scores carry a bias or a mask other than a causal comparison, which could hide a whole "
            "row (softmax gives NaN there, attention 0): call attention() with .bias";
        return false;
    }
    p.scale = 1.0;
    if (x->op() == Op::Mul || x->op() == Op::Div) {
        const Node* a = x->operand(0);
        const Node* b = x->operand(1);
        if (x->op() == Op::Mul && constant_of(a)) std::swap(a, b);
        const std::optional<double> c = constant_of(b);
        if (c && std::isfinite(*c) && *c != 0.0) {
            p.scale = x->op() == Op::Mul ? *c : 1.0 / *c;
            x = a;
        }
    }
    if (x->op() != Op::MatMul) {
        p.reason = "its scores are not matmul(q, kᵀ) times a constant";
        return false;
    }
    p.q = x->operand_ptr(0);
    p.k = transpose(x->operand_ptr(1), x->loc());
    return true;
}

// The shapes and dtypes attention() takes: [..., T, D] queries, [..., S, D] keys and values of one float
// dtype, the same batch axes.
bool fits_attention(AttentionPattern& p, const Node& product) {
    const Shape& q = p.q->shape();
    const Shape& k = p.k->shape();
    const Shape& v = p.v->shape();
    const DType dt = p.q->dtype();
    if (!(dt == DType::Float32 || is_half(dt)) || p.k->dtype() != dt || p.v->dtype() != dt ||
        product.dtype() != dt) {
        p.reason = "q, k, v and the result are not all of one float32, float16 or bfloat16 dtype";
        return false;
    }
    if (q.size() < 3 || k.size() != q.size() || v.size() != q.size() ||
        !std::equal(q.begin(), q.end() - 2, k.begin()) || !std::equal(q.begin(), q.end() - 2, v.begin())) {
        p.reason = "attention() needs q, k and v of rank 3 or more with the same batch and head axes";
        return false;
    }
    if (v.back() != q.back() || q.back() > kAttentionMaxHeadDim) {
        p.reason = fmt::format("v's head dimension {} is not q's {} (at most {})", v.back(), q.back(),
                               kAttentionMaxHeadDim);
        return false;
    }
    return true;
}

std::optional<AttentionPattern> match(const Node& product) {
    if (product.op() != Op::MatMul) return std::nullopt;
    const Node* scores = softmax_input(product.operand(0));
    if (!scores || scores->rank() < 2) return std::nullopt;
    AttentionPattern p;
    p.product = &product;
    p.v = product.operand_ptr(1);
    p.rewritable = match_scores(scores, p) && fits_attention(p, product);
    return p;
}

}  // namespace

std::vector<AttentionPattern> find_attention_patterns(const std::vector<NodePtr>& roots) {
    std::vector<AttentionPattern> out;
    for (const Node* n : topo_order(roots))
        if (std::optional<AttentionPattern> p = match(*n)) out.push_back(std::move(*p));
    return out;
}

std::vector<NodePtr> rewrite_attention(const std::vector<NodePtr>& roots) {
    std::unordered_map<const Node*, AttentionPattern> rewritable;
    for (AttentionPattern& p : find_attention_patterns(roots))
        if (p.rewritable) rewritable.emplace(p.product, std::move(p));
    if (rewritable.empty()) return roots;
    return rewrite(roots, [&](const Node& n, const std::vector<NodePtr>&) -> NodePtr {
        const auto it = rewritable.find(&n);
        if (it == rewritable.end()) return nullptr;
        const AttentionPattern& p = it->second;
        return attention(p.q, p.k, p.v, nullptr, p.causal, p.scale, n.loc());
    });
}

std::string explain_attention_patterns(const std::vector<NodePtr>& roots, bool rewriting) {
    std::string out;
    for (const AttentionPattern& p : find_attention_patterns(roots)) {
        const std::string where = short_location(p.product->loc());
        if (!p.rewritable)
            out += fmt::format(
                "attention matmul(softmax(...), v) ({}) is written-out attention, run as written: "
                "{}\n",
                where, p.reason);
        else if (rewriting)
            out += fmt::format(
                "attention matmul(softmax(...), v) ({}) rewritten as one attention() kernel "
                "(Options::attention_rewrite; scale={} causal={})\n",
                where, static_cast<float>(p.scale), causal_mask_name(p.causal));
        else
            out += fmt::format(
                "attention matmul(softmax(...), v) ({}) could run as one attention() kernel "
                "(scale={} causal={}), its scores never in memory: Options::attention_rewrite "
                "rewrites it, in attention()'s order of sums\n",
                where, static_cast<float>(p.scale), causal_mask_name(p.causal));
    }
    return out;
}

}  // namespace loom::ir
