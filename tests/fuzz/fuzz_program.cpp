// Random programs for the differential fuzzer: building into IR over filled tensors (the incremental State
// that the generators share), approximation levels that keep every comparison sound, dead-code collection
// and descriptions. The generators are in fuzz_program_generate.cpp (pointwise), fuzz_program_reduce.cpp
// and fuzz_program_matmul.cpp.
#include "fuzz_program.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "fuzz_program_internal.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/op.hpp"

namespace loom::fuzz {

namespace {

using ir::Op;
constexpr std::int64_t kNone = ir::SliceSpec::kNone;

/// A gather's mode, from its key: half are checked (the default mode, its indices brought into range),
/// half clamped (indices of any value).
ir::IndexMode gather_mode(const Instr& ins) {
    return ins.key >> 40 & 1u ? ir::IndexMode::Checked : ir::IndexMode::Clamp;
}

/// A permutation of `rank` dimensions chosen by `key`.
std::vector<std::int64_t> permutation(std::uint64_t key, int rank) {
    std::vector<std::int64_t> p(static_cast<std::size_t>(rank));
    for (int k = 0; k < rank; ++k) p[static_cast<std::size_t>(k)] = k;
    Rng g(key);
    for (int k = rank - 1; k > 0; --k)
        std::swap(p[static_cast<std::size_t>(k)], p[g() % static_cast<std::uint64_t>(k + 1)]);
    return p;
}

/// Approximation levels. 0: the GPU must match the reference bit for bit (every op exact or correctly
/// rounded). 1: a function (rule FloatMath other than sqrt) of level-0 operands, or a view, float cast,
/// neg/abs/relu/min/max/clamp/where of level-1 values: the error is relative, within the ulps that
/// testing::tolerance_for derives. 2: gelu and gelu_tanh, whose error after the cancellation in
/// `1 + erf` is only bounded absolutely: they pass only through views that keep every element (no
/// slices), neg, abs and float casts. Everything else (arithmetic that adds errors or cancels, functions
/// of approximate values, discrete results such as compares, rounding and integer casts) takes level-0
/// operands only, so no comparison depends on the first-order ulp model being tight. A matrix product is
/// level 0 of level-0 operands (the GPU and the reference sum in one order, docs/semantics.md section 12)
/// and takes nothing else: one approximate element would reach a whole row of the result. So is attention
/// (float32, and halves on CUDA cores, give the reference's bits: docs/semantics.md, section 13).
///
/// Reduction programs (tame data) add rules for approximate values, within the tolerance that
/// testing::tolerance_for derives (docs/semantics.md, section 9):
/// - a reduction of level-0 values is level 0 (both sides combine in the one reduction order);
/// - min and max reductions select one of their level-1 operands: level 1;
/// - sum and mean of level-1 values that are all >= 0 (softmax's sum of exp) are level 1: without
///   cancellation the relative error of the terms bounds that of the sum; prod, the arg reductions, any and
///   all take level-0 operands only (errors multiply over the row; discrete results may flip);
/// - `*` of level-1 values is level 1 when each is steady: never 0 on one side only (rsqrt, and products
///   and quotients of steady values), so that 0 * Inf or x / 0 cannot give NaN on one side and Inf on the
///   other, as exp and sigmoid can near underflow; relative errors add and the tame data keeps products away
///   from the overflow threshold. `/` by a level-0 value is level 1 for a steady numerator, and `/` by
///   softmax's sum(exp(x - max(x))), which is at least 1 (the row's maximum contributes exp(0) = 1), for
///   any level-1 numerator;
/// - `+` and `-` with level-1 operands are level 1 when each level-1 operand is bounded by 1 in magnitude
///   (exp of a value <= 0, sigmoid, tanh, sin, cos, erf, softmax): its absolute error is within the
///   absolute floor of the tolerance, whatever cancels. Also when it is a normalized value
///   a * rsqrt(mean(a * a) + eps) (layernorm's and rmsnorm's, possibly times exact weights, before the
///   bias): not a bound but an expectation on random data, that the largest normalized elements are of
///   the order of the largest results, to which the absolute floor scales.
/// Facts (State::facts_of) carry the signs and bounds these rules need; they are derived from the
/// instructions, so that a shrunk program that breaks a pattern is rejected rather than compared unsoundly.
int level_of(const Instr& ins, const std::vector<int>& lv, const std::vector<DType>& arg_dtypes, DType to) {
    const int mx = lv.empty() ? 0 : *std::max_element(lv.begin(), lv.end());
    switch (ins.kind) {
        case Instr::Kind::Input:
        case Instr::Kind::Scalar:
        case Instr::Kind::Constant:
            return 0;
        case Instr::Kind::View:
            return ins.view == ViewKind::Slice && mx > 1 ? -1 : mx;
        case Instr::Kind::Cast:
            return is_float(to) && is_float(arg_dtypes[0]) ? mx : (mx == 0 ? 0 : -1);
        case Instr::Kind::Reduce:
            return mx == 0 ? 0 : -1;  // reduction programs: see State::wide_level
        case Instr::Kind::MatMul:
        case Instr::Kind::Attention:
        case Instr::Kind::Scan:  // the reference's order and combines on every back end: exact operands only
            return mx == 0 ? 0 : -1;
        case Instr::Kind::Gather:  // moves values of its operand; an approximate index could pick another one
            return lv.size() == 2 && lv[1] == 0 ? lv[0] : -1;
        case Instr::Kind::Scatter:  // scatter moves values; scatter_add sums in the reference's order: exact
                                    // only
            if (lv.size() != 3 || lv[1] != 0) return -1;
            return ins.op == Op::Scatter ? std::max(lv[0], lv[2]) : (mx == 0 ? 0 : -1);
        case Instr::Kind::Elementwise:
            break;
    }
    const Op op = ins.op;
    if (op == Op::Neg || op == Op::Abs) return mx;
    if (op == Op::Relu || op == Op::Minimum || op == Op::Maximum || op == Op::Clamp) return mx <= 1 ? mx : -1;
    if (op == Op::Where) return lv[0] == 0 && mx <= 1 ? mx : -1;
    if (op == Op::Sqrt) return mx <= 1 ? mx : -1;
    if (mx > 0) return -1;
    if (ir::info(op).rule == ir::Rule::FloatMath) return op == Op::GeluErf || op == Op::GeluTanh ? 2 : 1;
    return 0;
}

/// Shape of an Input before its pre-view.
struct PreImage {
    Shape shape;
    std::vector<std::int64_t> perm;
    std::vector<ir::SliceSpec> spec;
};
PreImage pre_image(const Instr& ins, const Shape& t) {
    PreImage pi{t, {}, {}};
    const int r = static_cast<int>(t.size());
    if (r == 0) return pi;
    switch (ins.pre) {
        case PreView::None:
            break;
        case PreView::Permute:
            pi.perm = permutation(ins.key, r);
            for (int k = 0; k < r; ++k)
                pi.shape[static_cast<std::size_t>(pi.perm[static_cast<std::size_t>(k)])] =
                    t[static_cast<std::size_t>(k)];
            break;
        case PreView::Slice: {
            const int d = static_cast<int>(ins.key % static_cast<std::uint64_t>(r));
            const std::int64_t o = ins.start1 ? 1 : 0, s = ins.step == 0 ? 2 : ins.step;
            pi.shape[static_cast<std::size_t>(d)] = t[static_cast<std::size_t>(d)] * std::abs(s) + o;
            pi.spec.assign(static_cast<std::size_t>(d + 1), ir::SliceSpec{});
            // A zero extent: a slice starting at the pre-image's end (a negative step would start at -1).
            pi.spec[static_cast<std::size_t>(d)] =
                s > 0 || t[static_cast<std::size_t>(d)] == 0
                    ? ir::SliceSpec{o, kNone, std::abs(s)}
                    : ir::SliceSpec{pi.shape[static_cast<std::size_t>(d)] - 1 - o, kNone, s};
            break;
        }
        case PreView::Halo:
            for (auto& e : pi.shape) e += 2;
            break;
        case PreView::Reshape:
            if (ins.key % 2 == 0 || r == 1)
                pi.shape = {numel(t)};
            else
                pi.shape = {t.back(), numel(t) / std::max<std::int64_t>(t.back(), 1)};
            break;
    }
    return pi;
}

ir::NodePtr apply_view(const Instr& ins, const ir::NodePtr& a) {
    const Shape& s = a->shape();
    const int r = a->rank();
    switch (ins.view) {
        case ViewKind::Permute:
            if (r == 0) return nullptr;
            return ir::permute(a, permutation(ins.key, r));
        case ViewKind::Transpose:
            return ir::transpose(a);
        case ViewKind::Slice: {
            if (r == 0) return nullptr;
            const int d = static_cast<int>(ins.key % static_cast<std::uint64_t>(r));
            const std::int64_t step = ins.step == 0 ? 1 : ins.step;
            std::vector<ir::SliceSpec> spec(static_cast<std::size_t>(d + 1));
            spec[static_cast<std::size_t>(d)] = {ins.start1 ? (step > 0 ? 1 : -2) : kNone, kNone, step};
            return ir::slice(a, spec);
        }
        case ViewKind::Flatten:
            return ir::reshape(a, {-1});
        case ViewKind::MergeLast: {
            if (r < 2) return nullptr;
            Shape t(s.begin(), s.end() - 1);
            t.back() *= s.back();
            return ir::reshape(a, t);
        }
        case ViewKind::SplitFirst: {
            if (r == 0) return nullptr;
            const std::int64_t e = s[0];
            std::int64_t f = 2;
            while (f < e && e % f != 0) ++f;
            if (f >= e) return nullptr;
            Shape t{f, e / f};
            t.insert(t.end(), s.begin() + 1, s.end());
            return ir::reshape(a, t);
        }
        case ViewKind::InsertUnit: {
            Shape t = s;
            t.insert(t.begin() + static_cast<std::ptrdiff_t>(ins.key % static_cast<std::uint64_t>(r + 1)), 1);
            return ir::reshape(a, t);
        }
        case ViewKind::Broadcast: {
            Shape t{ins.extent};
            for (auto e : s) t.push_back(e == 1 ? 3 : e);
            return ir::broadcast_to(a, t);
        }
        case ViewKind::Shift: {  // of a Halo input only: each extent is the base's plus 2
            if (a->op() != ir::Op::Input || r == 0) return nullptr;
            std::vector<ir::SliceSpec> spec;
            for (int d = 0; d < r; ++d) {
                const std::int64_t o = static_cast<std::int64_t>((ins.key >> (2 * d)) % 3);
                spec.push_back({o, o - 2 == 0 ? kNone : o - 2, 1});
            }
            return ir::slice(a, spec);
        }
    }
    return nullptr;
}

}  // namespace

bool State::add(const Program& p, std::size_t i, bool bind, Device device) {
    const Instr& ins = p.code[i];
    std::vector<ir::NodePtr> args;
    std::vector<int> lv;
    std::vector<DType> dts;
    bool in = false, red = ins.kind == Instr::Kind::Reduce;
    for (int a : ins.args) {
        if (a < 0 || static_cast<std::size_t>(a) >= nodes.size()) return false;
        args.push_back(nodes[static_cast<std::size_t>(a)]);
        lv.push_back(level[static_cast<std::size_t>(a)]);
        dts.push_back(args.back()->dtype());
        in = in || has_input[static_cast<std::size_t>(a)];
        red = red || has_reduce[static_cast<std::size_t>(a)];
    }
    ir::NodePtr n;
    try {
        switch (ins.kind) {
            case Instr::Kind::Input: {
                Shape t;
                if (ins.pick != 0) {
                    for (std::size_t d = 0; d < p.base.size() && d < 32; ++d)
                        if (ins.pick >> d & 1u) t.push_back(ins.ones >> d & 1u ? 1 : p.base[d]);
                    if (ins.swap && t.size() >= 2) std::swap(t[t.size() - 2], t[t.size() - 1]);
                } else {
                    for (std::size_t d = static_cast<std::size_t>(std::max(ins.drop, 0)); d < p.base.size();
                         ++d)
                        t.push_back(ins.ones >> d & 1u ? 1 : p.base[d]);
                }
                const PreImage pi = pre_image(ins, t);
                const std::string label = fmt::format("in{}", inputs++);
                std::shared_ptr<const void> payload;
                if (bind) {
                    Layout used = Layout::Contiguous;
                    const std::uint64_t seed = p.data_seed + 7919 * static_cast<std::uint64_t>(i);
                    const Tensor tensor = make_tensor(pi.shape, ins.dtype, ins.layout, ins.key, seed,
                                                      p.reductions || p.products, device, &used);
                    input_lines.push_back(fmt::format(
                        "{}: {} {} strides [{}] offset {} ({}{})", label, name(ins.dtype),
                        to_string(pi.shape), fmt::join(tensor.strides(), ", "), tensor.offset(),
                        layout_name(used), ins.pre == PreView::None || t.empty() ? "" : ", viewed"));
                    payload = std::static_pointer_cast<const void>(tensor.impl());
                }
                n = ir::input(ins.dtype, pi.shape, label, payload);
                if (!t.empty() && ins.pre == PreView::Permute) n = ir::permute(n, pi.perm);
                if (!t.empty() && ins.pre == PreView::Slice) n = ir::slice(n, pi.spec);
                if (!t.empty() && ins.pre == PreView::Reshape) n = ir::reshape(n, t);
                in = true;
                break;
            }
            case Instr::Kind::Scalar:
                n = ir::scalar(ins.value, ins.dtype);
                break;
            case Instr::Kind::Constant:
                n = ir::constant(ins.value, ins.dtype);
                break;
            case Instr::Kind::Cast:
                if (args.size() != 1) return false;
                n = ir::cast(args[0], ins.dtype);
                break;
            case Instr::Kind::View:
                if (args.size() != 1) return false;
                n = apply_view(ins, args[0]);
                break;
            case Instr::Kind::Elementwise: {
                if (static_cast<int>(args.size()) != ir::info(ins.op).arity) return false;
                switch (ir::info(ins.op).kind) {
                    case ir::OpKind::Unary:
                        n = ir::unary(ins.op, args[0]);
                        break;
                    case ir::OpKind::Binary:
                        n = ir::info(ins.op).rule == ir::Rule::Random
                                ? ir::random(ins.op, args[0], args[1], ins.dtype)
                                : ir::binary(ins.op, args[0], args[1]);
                        break;
                    case ir::OpKind::Ternary:
                        n = ir::ternary(ins.op, args[0], args[1], args[2]);
                        break;
                    case ir::OpKind::Leaf:
                    case ir::OpKind::View:
                    case ir::OpKind::Reduce:
                    case ir::OpKind::Product:
                    case ir::OpKind::Gather:
                    case ir::OpKind::Attention:
                    case ir::OpKind::Scan:
                    case ir::OpKind::Scatter:
                        return false;
                }
                break;
            }
            case Instr::Kind::Reduce: {
                if (args.size() != 1 || !ir::is_reduction(ins.op)) return false;
                const int r = args[0]->rank();
                std::vector<std::int64_t> axes;
                for (int d = 0; d < r && d < 32; ++d)
                    if (ins.axes >> d & 1u) axes.push_back(ins.negative ? d - r : d);
                n = ir::reduce(ins.op, args[0], std::move(axes), ins.keepdims);
                break;
            }
            case Instr::Kind::MatMul:
                if (args.size() != 2) return false;
                n = ir::matmul(args[0], args[1]);
                break;
            case Instr::Kind::Gather: {
                if (args.size() != 2 || args[0]->rank() == 0 || args[0]->rank() != args[1]->rank())
                    return false;
                // A reshape beneath the gather may be one the planner refuses (no strided view of what it
                // reads; docs/semantics.md, "Gathers"): such a graph is not drawn.
                for (const ir::Node* m : ir::topo_order({args[0]}))
                    if (m->op() == Op::Reshape) return false;
                const DType it = args[1]->dtype();
                ir::NodePtr idx =
                    it == DType::Int32 || it == DType::Int64 ? args[1] : ir::cast(args[1], DType::Int32);
                const std::int64_t axis =
                    static_cast<std::int64_t>(ins.key % static_cast<std::uint64_t>(args[0]->rank()));
                const ir::IndexMode mode = gather_mode(ins);
                if (mode == ir::IndexMode::Checked) {
                    // Indices brought into range, so that the checked gather (the default mode, with its
                    // device-side check) raises nothing: mod n gives [0, n); half of them minus n, [-n, 0),
                    // the positions counted from the end.
                    const std::int64_t extent = args[0]->shape()[static_cast<std::size_t>(axis)];
                    const ir::NodePtr nn = ir::scalar(ir::ScalarValue::of_int(extent), idx->dtype());
                    idx = ir::binary(Op::Mod, idx, nn);
                    if (ins.key >> 41 & 1u) idx = ir::binary(Op::Sub, idx, nn);
                }
                n = ir::take_along_axis(args[0], idx, axis, mode);
                break;
            }
            case Instr::Kind::Scan:
                if (args.size() != 1 || args[0]->rank() == 0 || !ir::is_scan(ins.op)) return false;
                n = ir::scan(ins.op, args[0],
                             static_cast<std::int64_t>(ins.key % static_cast<std::uint64_t>(args[0]->rank())),
                             ins.keepdims);
                break;
            case Instr::Kind::Scatter: {
                if (args.size() != 3 || !ir::is_scatter(ins.op)) return false;
                const ir::NodePtr& x = args[0];
                const int r = x->rank();
                if (r == 0 || args[2]->rank() != r) return false;
                const auto axis = static_cast<int>(ins.key % static_cast<std::uint64_t>(r));
                for (int d = 0; d < r; ++d)
                    if (d != axis && args[2]->shape()[static_cast<std::size_t>(d)] !=
                                         x->shape()[static_cast<std::size_t>(d)])
                        return false;
                const DType it = args[1]->dtype();
                const ir::NodePtr idx =
                    it == DType::Int32 || it == DType::Int64 ? args[1] : ir::cast(args[1], DType::Int32);
                const ir::NodePtr v =
                    args[2]->dtype() == x->dtype() ? args[2] : ir::cast(args[2], x->dtype());
                n = ins.op == Op::Scatter ? ir::scatter(x, idx, v, axis, ir::IndexMode::Clamp)
                                          : ir::scatter_add(x, idx, v, axis, ir::IndexMode::Clamp);
                break;
            }
            case Instr::Kind::Attention:
                if (args.size() != 3 && args.size() != 4) return false;
                n = ir::attention(args[0], args[1], args[2], args.size() == 4 ? args[3] : nullptr, ins.causal,
                                  ins.scale);
                break;
        }
    } catch (const Error&) {
        return false;  // the constructors reject this combination: not a valid graph
    }
    if (!n) return false;
    const int l = p.reductions ? wide_level(p, i, lv, dts) : level_of(ins, lv, dts, ins.dtype);
    if (l < 0) return false;
    facts.push_back(is_float(n->dtype()) ? facts_of(p, i) : Facts{});
    nodes.push_back(n);
    level.push_back(l);
    has_input.push_back(in);
    has_reduce.push_back(red);
    return true;
}

void State::truncate(const Program& p, std::size_t n) {
    nodes.resize(n);
    level.resize(n);
    facts.resize(n);
    has_input.resize(n);
    has_reduce.resize(n);
    inputs = 0;
    for (std::size_t i = 0; i < n; ++i) inputs += p.code[i].kind == Instr::Kind::Input;
}

bool State::is(const Program& p, int i, Instr::Kind k, Op op) {
    if (i < 0 || static_cast<std::size_t>(i) >= p.code.size()) return false;
    const Instr& x = p.code[static_cast<std::size_t>(i)];
    return x.kind == k && x.op == op;
}

bool State::is_red(const Program& p, int i, Op op) {
    return is(p, i, Instr::Kind::Reduce, op) && p.code[static_cast<std::size_t>(i)].keepdims;
}

/// A scalar or constant of value > 0.
bool State::is_positive_leaf(const Program& p, int i) {
    if (i < 0 || static_cast<std::size_t>(i) >= p.code.size()) return false;
    const Instr& x = p.code[static_cast<std::size_t>(i)];
    return (x.kind == Instr::Kind::Scalar || x.kind == Instr::Kind::Constant) && x.value.as_double() > 0.0;
}

/// `s` is sum(exp(x - max(x, A, keepdims)), A, keepdims) for float x: every row holds exp(0) = 1, so
/// s >= 1 (or NaN).
bool State::softmax_sum(const Program& p, int s) const {
    if (!is_red(p, s, Op::Sum)) return false;
    const int e = at(p, s).args[0];
    if (!is_ew(p, e, Op::Exp)) return false;
    const int t = at(p, e).args[0];
    if (!is_ew(p, t, Op::Sub) || !is_float(node(t).dtype())) return false;
    const int x = at(p, t).args[0], m = at(p, t).args[1];
    return is_red(p, m, Op::Max) && at(p, m).args[0] == x && node(m).ints() == node(s).ints();
}

/// Instruction `i` is a * rsqrt(mean(a * a, A, keepdims) + s) (either operand order) with a scalar or
/// constant s > 0.
bool State::normalized(const Program& p, std::size_t i) const {
    const Instr& ins = p.code[i];
    if (ins.kind != Instr::Kind::Elementwise || ins.op != Op::Mul) return false;
    for (int k = 0; k < 2; ++k) {
        const int a = ins.args[static_cast<std::size_t>(k)], r = ins.args[static_cast<std::size_t>(1 - k)];
        if (!is_ew(p, r, Op::Rsqrt)) continue;
        const int q = at(p, r).args[0];
        if (!is_ew(p, q, Op::Add)) continue;
        for (int j = 0; j < 2; ++j) {
            const int ms = at(p, q).args[static_cast<std::size_t>(j)];
            const int c = at(p, q).args[static_cast<std::size_t>(1 - j)];
            if (!is_positive_leaf(p, c) || !is_red(p, ms, Op::Mean)) continue;
            const int sq = at(p, ms).args[0];
            if (is_ew(p, sq, Op::Mul) && at(p, sq).args[0] == a && at(p, sq).args[1] == a) return true;
        }
    }
    return false;
}

Facts State::facts_of(const Program& p, std::size_t i) const {
    const Instr& ins = p.code[i];
    Facts r;
    auto arg = [&](std::size_t k) -> const Facts& { return f(ins.args[k]); };
    switch (ins.kind) {
        case Instr::Kind::Input:
        case Instr::Kind::MatMul:
        case Instr::Kind::Attention:
        case Instr::Kind::Scan:
        case Instr::Kind::Scatter:
            return r;
        case Instr::Kind::Scalar:
        case Instr::Kind::Constant: {
            const double v = ins.value.as_double();
            r.nonneg = v >= 0.0 || std::isnan(v);
            r.nonpos = v <= 0.0 || std::isnan(v);
            r.unit = std::fabs(v) <= 1.0 || std::isnan(v);
            return r;
        }
        case Instr::Kind::View:
        case Instr::Kind::Gather:
            return arg(0);
        case Instr::Kind::Cast:
            if (!is_float(node(ins.args[0]).dtype())) return r;
            r = arg(0);
            return r;
        case Instr::Kind::Reduce: {
            const Facts& a = arg(0);
            switch (ins.op) {
                case Op::Sum:
                    r.nonneg = a.nonneg;
                    r.nonpos = a.nonpos;
                    r.steady = a.steady && a.nonneg;
                    break;
                case Op::Prod:
                    r.nonneg = a.nonneg;
                    break;
                case Op::Mean:
                    r.nonneg = a.nonneg;
                    r.nonpos = a.nonpos;
                    r.unit = a.unit;
                    r.steady = a.steady && a.nonneg;
                    break;
                case Op::Min:
                case Op::Max:
                    r = a;
                    r.norm = false;
                    break;
                default:
                    break;
            }
            return r;
        }
        case Instr::Kind::Elementwise:
            break;
    }
    switch (ins.op) {
        case Op::Exp:
        case Op::Exp2:
            r.nonneg = true;
            r.unit = arg(0).nonpos;
            break;
        case Op::Sigmoid:
            r.nonneg = r.unit = true;
            break;
        case Op::Tanh:
        case Op::Sin:
        case Op::Cos:
        case Op::Erf:
            r.unit = true;
            break;
        case Op::Cosh:
        case Op::Sqrt:
            r.nonneg = true;
            break;
        case Op::Rsqrt:
            r.nonneg = r.steady = true;
            break;
        case Op::Abs:
            r.nonneg = true;
            r.unit = arg(0).unit;
            r.steady = arg(0).steady;
            break;
        case Op::Relu:
            r.nonneg = true;
            r.unit = arg(0).unit;
            break;
        case Op::Neg:
            r.nonneg = arg(0).nonpos;
            r.nonpos = arg(0).nonneg;
            r.unit = arg(0).unit;
            r.norm = arg(0).norm;
            r.steady = arg(0).steady;
            break;
        case Op::Mul: {
            const Facts &a = arg(0), &b = arg(1);
            r.nonneg = ins.args[0] == ins.args[1] || (a.nonneg && b.nonneg) || (a.nonpos && b.nonpos);
            r.nonpos = (a.nonneg && b.nonpos) || (a.nonpos && b.nonneg);
            r.unit = a.unit && b.unit;
            r.norm = normalized(p, i) || (a.norm && exact(ins.args[1])) || (b.norm && exact(ins.args[0]));
            r.steady = (a.steady || exact(ins.args[0])) && (b.steady || exact(ins.args[1]));
            break;
        }
        case Op::Div:
            r.nonneg = arg(0).nonneg && arg(1).nonneg;
            r.unit =
                arg(0).nonneg && softmax_sum(p, ins.args[1]) && at(p, ins.args[1]).args[0] == ins.args[0];
            r.steady =
                (arg(0).steady || exact(ins.args[0])) && (exact(ins.args[1]) || softmax_sum(p, ins.args[1]));
            break;
        case Op::Add:
            r.nonneg = arg(0).nonneg && arg(1).nonneg;
            r.nonpos = arg(0).nonpos && arg(1).nonpos;
            break;
        case Op::Sub: {
            const int x = ins.args[0], m = ins.args[1];
            const bool same = (is_red(p, m, Op::Max) || is_red(p, m, Op::Min)) && at(p, m).args[0] == x;
            r.nonpos = (same && is_red(p, m, Op::Max)) || (arg(0).nonpos && arg(1).nonneg);
            r.nonneg = (same && is_red(p, m, Op::Min)) || (arg(0).nonneg && arg(1).nonpos);
            break;
        }
        case Op::Maximum:
            r.nonneg = arg(0).nonneg || arg(1).nonneg;
            r.nonpos = arg(0).nonpos && arg(1).nonpos;
            r.unit = arg(0).unit && arg(1).unit;
            r.steady = (arg(0).steady || exact(ins.args[0])) && (arg(1).steady || exact(ins.args[1]));
            break;
        case Op::Minimum:
            r.nonneg = arg(0).nonneg && arg(1).nonneg;
            r.nonpos = arg(0).nonpos || arg(1).nonpos;
            r.unit = arg(0).unit && arg(1).unit;
            r.steady = (arg(0).steady || exact(ins.args[0])) && (arg(1).steady || exact(ins.args[1]));
            break;
        case Op::Where: {
            const Facts &a = arg(1), &b = arg(2);
            r.nonneg = a.nonneg && b.nonneg;
            r.nonpos = a.nonpos && b.nonpos;
            r.unit = a.unit && b.unit;
            r.steady = (a.steady || exact(ins.args[1])) && (b.steady || exact(ins.args[2]));
            break;
        }
        default:
            break;
    }
    return r;
}

/// The approximation level of instruction `i` of a reduction program (see "approximation levels").
int State::wide_level(const Program& p, std::size_t i, const std::vector<int>& lv,
                      const std::vector<DType>& dts) const {
    const Instr& ins = p.code[i];
    const int mx = lv.empty() ? 0 : *std::max_element(lv.begin(), lv.end());
    if (ins.kind == Instr::Kind::Reduce) {
        switch (ins.op) {
            case Op::Sum:
            case Op::Mean:
                return mx == 0 ? 0 : (mx == 1 && f(ins.args[0]).nonneg ? 1 : -1);
            case Op::Min:
            case Op::Max:
                return mx <= 1 ? mx : -1;
            default:
                return mx == 0 ? 0 : -1;
        }
    }
    const int base = level_of(ins, lv, dts, ins.dtype);
    if (base >= 0 || ins.kind != Instr::Kind::Elementwise || mx > 1) return base;
    switch (ins.op) {
        case Op::Mul:
            for (std::size_t k = 0; k < 2; ++k)
                if (lv[k] > 0 && !f(ins.args[k]).steady) return -1;
            return 1;
        case Op::Div:
            if (softmax_sum(p, ins.args[1])) return 1;
            return lv[1] == 0 && f(ins.args[0]).steady ? 1 : -1;
        case Op::Add:
        case Op::Sub:
            for (std::size_t k = 0; k < 2; ++k)
                if (lv[k] > 0 && !f(ins.args[k]).unit && !f(ins.args[k]).norm) return -1;
            return 1;
        default:
            return -1;
    }
}

std::string_view view_name(ViewKind v) {
    switch (v) {
        case ViewKind::Permute:
            return "permute";
        case ViewKind::Transpose:
            return "transpose";
        case ViewKind::Slice:
            return "slice";
        case ViewKind::Flatten:
            return "flatten";
        case ViewKind::MergeLast:
            return "merge last two";
        case ViewKind::SplitFirst:
            return "split first";
        case ViewKind::InsertUnit:
            return "insert unit";
        case ViewKind::Broadcast:
            return "broadcast";
        case ViewKind::Shift:
            return "shift";
    }
    return "?";
}

std::string_view layout_name(Layout l) {
    switch (l) {
        case Layout::Contiguous:
            return "contiguous";
        case Layout::Offset1:
            return "offset 1, misaligned";
        case Layout::ColMajor:
            return "column-major";
        case Layout::Padded:
            return "padded rows";
        case Layout::Stride0:
            return "a stride-0 dimension";
    }
    return "?";
}

std::optional<Built> build(const Program& p, Device device) {
    State st;
    for (std::size_t i = 0; i < p.code.size(); ++i)
        if (!st.add(p, i, true, device)) return std::nullopt;
    Built b;
    for (int o : p.outputs) {
        if (o < 0 || static_cast<std::size_t>(o) >= p.code.size() ||
            !st.has_input[static_cast<std::size_t>(o)])
            return std::nullopt;
        b.roots.push_back(st.nodes[static_cast<std::size_t>(o)]);
    }
    if (b.roots.empty()) return std::nullopt;
    b.nodes = std::move(st.nodes);
    b.input_lines = std::move(st.input_lines);
    return b;
}

Program collect(const Program& p) {
    std::vector<bool> live(p.code.size(), false);
    for (int o : p.outputs)
        if (o >= 0 && static_cast<std::size_t>(o) < p.code.size()) live[static_cast<std::size_t>(o)] = true;
    for (std::size_t i = p.code.size(); i-- > 0;)
        if (live[i])
            for (int a : p.code[i].args)
                if (a >= 0 && static_cast<std::size_t>(a) < i) live[static_cast<std::size_t>(a)] = true;
    std::vector<int> index(p.code.size(), -1);
    Program q;
    q.base = p.base;
    q.data_seed = p.data_seed;
    q.reductions = p.reductions;
    q.products = p.products;
    for (std::size_t i = 0; i < p.code.size(); ++i) {
        if (!live[i]) continue;
        index[i] = static_cast<int>(q.code.size());
        Instr ins = p.code[i];
        for (int& a : ins.args)
            a = a >= 0 && static_cast<std::size_t>(a) < i ? index[static_cast<std::size_t>(a)] : -1;
        q.code.push_back(std::move(ins));
    }
    for (int o : p.outputs) {
        const int k =
            o >= 0 && static_cast<std::size_t>(o) < p.code.size() ? index[static_cast<std::size_t>(o)] : -1;
        if (k >= 0 && std::find(q.outputs.begin(), q.outputs.end(), k) == q.outputs.end())
            q.outputs.push_back(k);
    }
    return q;
}

std::string describe(const Program& p) {
    std::string s = fmt::format("base shape {}, data seed {}\n", to_string(p.base), p.data_seed);
    for (std::size_t i = 0; i < p.code.size(); ++i) {
        const Instr& ins = p.code[i];
        std::string what;
        switch (ins.kind) {
            case Instr::Kind::Input:
                what = fmt::format("input {} ones {:#x} drop {} pre-view {} layout {}", name(ins.dtype),
                                   ins.ones, ins.drop, static_cast<int>(ins.pre), layout_name(ins.layout));
                if (ins.pick != 0) what += fmt::format(" pick {:#x}{}", ins.pick, ins.swap ? " swapped" : "");
                break;
            case Instr::Kind::Scalar:
                what = fmt::format("scalar {} {}", name(ins.dtype), ins.value.as_double());
                break;
            case Instr::Kind::Constant:
                what = fmt::format("constant {} {}", name(ins.dtype), ins.value.as_double());
                break;
            case Instr::Kind::Elementwise:
                what = ir::info(ins.op).rule == ir::Rule::Random
                           ? fmt::format("{} {}", ir::op_name(ins.op), name(ins.dtype))
                           : std::string(ir::op_name(ins.op));
                break;
            case Instr::Kind::Cast:
                what = fmt::format("cast to {}", name(ins.dtype));
                break;
            case Instr::Kind::View:
                what =
                    fmt::format("view {} (key {}, step {})", view_name(ins.view), ins.key % 1000, ins.step);
                break;
            case Instr::Kind::Reduce:
                what = fmt::format("{} axes mask {:#x}{}{}", ir::op_name(ins.op), ins.axes,
                                   ins.negative ? " (negative)" : "", ins.keepdims ? " keepdims" : "");
                break;
            case Instr::Kind::MatMul:
                what = "matmul";
                break;
            case Instr::Kind::Gather:
                what = fmt::format(
                    "take_along_axis {} (key {})",
                    gather_mode(ins) == ir::IndexMode::Checked
                        ? (ins.key >> 41 & 1u ? "checked, indices mod n minus n" : "checked, indices mod n")
                        : "clamped",
                    ins.key % 1000);
                break;
            case Instr::Kind::Scan:
                what = fmt::format("{} (key {}){}", ir::op_name(ins.op), ins.key % 1000,
                                   ins.keepdims ? " exclusive" : "");
                break;
            case Instr::Kind::Scatter:
                what = fmt::format("{} clamped (key {})", ir::op_name(ins.op), ins.key % 1000);
                break;
            case Instr::Kind::Attention:
                what = fmt::format("attention causal {} scale {}{}", ir::causal_mask_name(ins.causal),
                                   static_cast<float>(ins.scale), ins.args.size() == 4 ? " with a bias" : "");
                break;
        }
        s += fmt::format("  #{} = {} ({})\n", i, what, fmt::join(ins.args, ", "));
    }
    s += fmt::format("  outputs ({})\n", fmt::join(p.outputs, ", "));
    return s;
}

}  // namespace loom::fuzz
