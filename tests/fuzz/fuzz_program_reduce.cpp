// The reduction generator of the fuzzer's random programs: reductions over random axis sets with prologues
// and epilogues, several reductions of one operand, comparisons against reductions broadcast back,
// normalizations (softmax, layernorm, rmsnorm and variants), casts and views, with the outputs they feed.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "fuzz_program_internal.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/op.hpp"

namespace loom::fuzz {

namespace {

using ir::Op;

DType random_reduce_dtype(Rng& g) {
    // Every dtype: float32 and the half dtypes (whose values fused kernels hold in float registers) twice as
    // often as the others.
    static const std::vector<DType> w{DType::Float32,  DType::Float32,  DType::Float16, DType::Float16,
                                      DType::BFloat16, DType::BFloat16, DType::Float64, DType::Int8,
                                      DType::UInt8,    DType::Int32,    DType::Int64,   DType::Bool};
    return pick(g, w);
}

/// The reduction generator: moves that append patterns of instructions (a reduction with a prologue, an
/// epilogue on reduced values, several reductions of one operand and axis set, a reduced value broadcast
/// back over its operand, normalizations), each backed out whole when a constructor, the approximation
/// rules or the size cap rejects one of its instructions.
class ReduceGen : GenBase {
  public:
    ReduceGen(std::uint64_t seed, const GenOptions& opt)
        : g_(seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL), opt_(opt) {}

    Program run() {
        p_.reductions = true;
        p_.data_seed = g_();
        choose_base();
        const int n_inputs = uniform(g_, 1, 3);
        for (int k = 0; k < n_inputs; ++k) add_input(k == 0 || chance(g_, 0.7));
        for (int attempt = 0; attempt < 20 && size() == 0; ++attempt)
            add_input(true);  // every move needs one
        if (size() == 0)
            throw std::logic_error(fmt::format("no input of base shape {} builds", to_string(p_.base)));
        if (chance(g_, 0.4)) {
            Instr s;
            s.kind = chance(g_, 0.5) ? Instr::Kind::Scalar : Instr::Kind::Constant;
            s.dtype = random_reduce_dtype(g_);
            s.value = random_value(g_, s.dtype, true);
            emit(s);
        }
        const int moves = uniform(g_, 1, 5);
        for (int k = 0; k < moves && size() < 3 * opt_.max_ops; ++k) {
            for (int attempt = 0; attempt < 10; ++attempt) {
                const int before = size();
                if (move()) break;
                back_to(before);
            }
        }
        for (int attempt = 0; attempt < 20 && !any_reduction(); ++attempt) {
            const int before = size();
            if (!reduce_move()) back_to(before);
        }
        pick_outputs();
        return collect(p_);
    }

  private:
    Rng g_;
    const GenOptions& opt_;

    int rank(int i) const { return node(i).rank(); }
    DType float_dtype(int i) const { return is_float(node(i).dtype()) ? node(i).dtype() : DType::Float32; }
    bool any_reduction() const {
        return std::find(st_.has_reduce.begin(), st_.has_reduce.end(), true) != st_.has_reduce.end();
    }

    int red(Op op, int a, std::uint32_t axes, bool keepdims) {
        if (a < 0) return -1;
        Instr x;
        x.kind = Instr::Kind::Reduce;
        x.op = op;
        x.args = {a};
        x.axes = axes;
        x.negative = chance(g_, 0.3);
        x.keepdims = keepdims;
        return emit(x);
    }
    int scalar(double v, DType d) {
        Instr x;
        x.kind = chance(g_, 0.5) ? Instr::Kind::Scalar : Instr::Kind::Constant;
        x.dtype = d;
        try {
            x.value = ir::make_scalar_value(v, d, "fuzz", ir::Loc::current());
        } catch (const Error&) {
            return -1;
        }
        return emit(x);
    }

    void choose_base() {
        static const std::vector<std::int64_t> extents{0,  1,  2,  3,   4,   5,   7,    8,    16,  31,
                                                       32, 33, 64, 100, 128, 257, 1025, 4097, 8193};
        const int r = uniform(g_, 1, 4);
        const std::int64_t limit = chance(g_, 1.0 / 16) ? opt_.max_numel * 64 : opt_.max_numel;
        cap_ = std::max(limit, 4 * opt_.max_numel);
        for (int d = 0; d < r; ++d) {
            std::int64_t e = pick(g_, extents);
            while (e == 0 && !chance(g_, 0.25)) e = pick(g_, extents);  // zero-size: about one graph in 20
            p_.base.push_back(e);
        }
        while (numel(p_.base) >
               limit) {  // shrink the largest extent, or another, to a smaller one of the list
            auto it = std::max_element(p_.base.begin(), p_.base.end());
            if (chance(g_, 0.5)) {
                const auto other = p_.base.begin() + uniform(g_, 0, static_cast<int>(p_.base.size()) - 1);
                if (*other > 1) it = other;
            }
            std::vector<std::int64_t> smaller;
            for (auto e : extents)
                if (e > 0 && e < *it) smaller.push_back(e);
            *it = smaller.empty() ? 1 : pick(g_, smaller);
        }
    }

    Instr random_layout(Instr in) {
        static const std::vector<Layout> lay{Layout::Contiguous, Layout::Contiguous, Layout::Contiguous,
                                             Layout::Offset1,    Layout::ColMajor,   Layout::Padded,
                                             Layout::Stride0};
        in.layout = pick(g_, lay);
        in.key = g_();
        static const std::vector<int> steps{2, 3, -1, -2};
        in.step = pick(g_, steps);
        in.start1 = chance(g_, 0.5);
        return in;
    }

    /// An input of the base shape (`full`) or with some dimensions 1 or dropped; transposed and sliced
    /// pre-views and strided layouts at random.
    int add_input(bool full) {
        const int r = static_cast<int>(p_.base.size());
        Instr in;
        in.kind = Instr::Kind::Input;
        in.dtype = random_reduce_dtype(g_);
        if (!full) {
            for (int d = 0; d < r; ++d)
                if (r > 1 && chance(g_, 0.25)) in.ones |= 1u << d;
            in.drop = r > 1 && chance(g_, 0.3) ? uniform(g_, 1, r - 1) : 0;
        }
        static const std::vector<PreView> pre{PreView::None,    PreView::None,  PreView::None,
                                              PreView::Permute, PreView::Slice, PreView::Reshape};
        in.pre = pick(g_, pre);
        return emit(random_layout(in));
    }

    /// An input whose shape is `t` (broadcastable in the base shape: each extent the base's or 1).
    int input_like(const Shape& t) {
        const int b = static_cast<int>(p_.base.size()), r = static_cast<int>(t.size());
        if (r > b) return -1;
        Instr in;
        in.kind = Instr::Kind::Input;
        in.dtype = random_reduce_dtype(g_);
        in.drop = b - r;
        for (int k = 0; k < r; ++k) {
            const auto e = t[static_cast<std::size_t>(k)],
                       be = p_.base[static_cast<std::size_t>(in.drop + k)];
            if (e == be) continue;
            if (e != 1) return -1;
            in.ones |= 1u << (in.drop + k);
        }
        in.pre = chance(g_, 0.2) ? PreView::Permute : PreView::None;
        return emit(random_layout(in));
    }

    /// A node index satisfying `ok`, recent ones preferred; -1 when there is none.
    template <class F>
    int choose(F&& ok) {
        std::vector<int> c;
        for (int i = 0; i < size(); ++i)
            if (ok(i)) c.push_back(i);
        if (c.empty()) return -1;
        const auto a = g_() % c.size(), b = g_() % c.size();
        return c[chance(g_, 0.7) ? std::max(a, b) : a];
    }
    bool computed(int i) const { return st_.has_input[static_cast<std::size_t>(i)]; }
    bool reduced(int i) const { return st_.has_reduce[static_cast<std::size_t>(i)]; }
    /// A node computed from the inputs with at least one dimension.
    bool data(int i) const { return computed(i) && rank(i) >= 1; }
    int operand_node() {
        if (chance(g_, 0.5)) {  // float values most of the time: normalizations and exact float sums
            const int x = choose([&](int i) { return data(i) && is_float(node(i).dtype()); });
            if (x >= 0) return x;
        }
        return choose([&](int i) { return data(i); });
    }

    /// Axes over a rank: all (as an empty list), one (often the last), or a random set.
    std::uint32_t random_axes(int r) {
        const double u = static_cast<double>(g_() >> 11) * 0x1.0p-53;
        if (u < 0.15 || r == 0) return 0;
        if (u < 0.55) return 1u << (chance(g_, 0.5) ? r - 1 : uniform(g_, 0, r - 1));
        const std::uint32_t m = static_cast<std::uint32_t>(g_()) & ((1u << r) - 1u);
        return m == 0 ? 1u << (r - 1) : m;
    }
    std::int64_t reduced_count(int x, std::uint32_t axes) const {
        std::int64_t c = 1;
        const Shape& s = node(x).shape();
        for (std::size_t d = 0; d < s.size(); ++d)
            if (axes == 0 || (axes >> d & 1u)) c *= s[d];
        return c;
    }
    /// The shape of a normalization parameter over axes `axes` of `x`: x's extents there, 1 elsewhere
    /// (leading 1s dropped at random).
    Shape param_shape(int x, std::uint32_t axes) {
        Shape s = node(x).shape();
        for (std::size_t d = 0; d < s.size(); ++d)
            if (!(axes == 0 || (axes >> d & 1u))) s[d] = 1;
        if (chance(g_, 0.5))
            while (!s.empty() && s.front() == 1) s.erase(s.begin());
        return s;
    }

    /// A new input of param_shape(x, axes) (a normalization's weight or bias).
    int param(int x, std::uint32_t axes) { return input_like(param_shape(x, axes)); }

    /// prod over many elements overflows or vanishes: x / 64 + 1 for floats (factors near 1), sign(x) for
    /// integers.
    int near_one(int x, std::int64_t count) {
        if (count <= 16 || node(x).dtype() == DType::Bool) return x;
        const DType d = node(x).dtype();
        if (!is_float(d)) return ew(Op::Sign, {x});
        return ew(Op::Add, {ew(Op::Mul, {x, scalar(1.0 / 64, d)}), scalar(1.0, d)});
    }

    bool move() {
        const double u = static_cast<double>(g_() >> 11) * 0x1.0p-53;
        if (u < 0.11) return elementwise_move();
        if (u < 0.26) return reduce_move();
        if (u < 0.35) return epilogue_move();
        if (u < 0.43) return multi_reduce_move();
        if (u < 0.51) return broadcast_back_move();
        if (u < 0.68) return compare_back_move();
        if (u < 0.75) return cast_move();
        if (u < 0.94) return normalize_move();
        return view_move();
    }

    /// A node to compare with a reduction of it: float16 and bfloat16 ones half of the time (the values a
    /// fused kernel holds in float registers and must round to their dtype wherever they are compared,
    /// reduced or broadcast back), often cast first.
    int compare_operand() {
        int x = -1;
        if (chance(g_, 0.5))
            x = choose([&](int i) {
                return data(i) && is_half(node(i).dtype()) && st_.level[static_cast<std::size_t>(i)] == 0;
            });
        if (x < 0) x = choose([&](int i) { return data(i) && st_.level[static_cast<std::size_t>(i)] == 0; });
        if (x >= 0 && chance(g_, 0.3)) {
            Instr c;
            c.kind = Instr::Kind::Cast;
            c.dtype = random_reduce_dtype(g_);
            c.args = {x};
            const int y = emit(c);
            if (y >= 0) x = y;
        }
        return x;
    }

    /// A comparison against a reduction broadcast back (`x == max(x, axes, true)`, `x >= mean(x, axes,
    /// true)`, with keepdims or over leading axes, which broadcast back as well), then often a count or
    /// another reduction of the comparison, a `where` on it, or a cast of it.
    bool compare_back_move() {
        const int x = compare_operand();
        if (x < 0) return false;
        static const std::vector<Op> reds{Op::Max, Op::Min, Op::Mean, Op::Max, Op::Sum, Op::Min};
        static const std::vector<Op> cmps{Op::Eq, Op::Eq, Op::Ne, Op::Ge, Op::Gt, Op::Le, Op::Lt};
        const std::uint32_t axes = random_axes(rank(x));
        const int r = red(pick(g_, reds), x, axes, chance(g_, 0.8));
        const Op cmp = pick(g_, cmps);
        const int c = chance(g_, 0.8) ? ew(cmp, {x, r}) : ew(cmp, {r, x});
        if (c < 0) return false;
        switch (g_() % 5) {
            case 0: {  // how many elements equal the maximum (a count, or any / all / a mean of the flags)
                static const std::vector<Op> counts{Op::Sum, Op::Sum, Op::Any, Op::All, Op::Mean, Op::ArgMax};
                return red(pick(g_, counts), c, chance(g_, 0.5) ? axes : random_axes(rank(c)),
                           chance(g_, 0.4)) >= 0;
            }
            case 1: {  // where on the comparison: the element, the reduced value, or a scalar
                int other = r;
                if (chance(g_, 0.4)) {
                    Instr s;
                    s.kind = chance(g_, 0.5) ? Instr::Kind::Scalar : Instr::Kind::Constant;
                    s.dtype = chance(g_, 0.7) ? node(x).dtype() : random_reduce_dtype(g_);
                    s.value = random_value(g_, s.dtype, true);
                    other = emit(s);
                }
                const int w = chance(g_, 0.5) ? ew(Op::Where, {c, x, other}) : ew(Op::Where, {c, other, x});
                if (w >= 0 && chance(g_, 0.4)) red(pick(g_, reds), w, axes, chance(g_, 0.5));
                return w >= 0;
            }
            case 2: {  // a cast of the flags to any dtype, perhaps reduced
                Instr k;
                k.kind = Instr::Kind::Cast;
                k.dtype = random_reduce_dtype(g_);
                k.args = {c};
                const int y = emit(k);
                if (y >= 0 && chance(g_, 0.5)) red(Op::Sum, y, axes, chance(g_, 0.5));
                return y >= 0;
            }
            default:
                return true;
        }
    }

    /// A cast of a node to any dtype (every pair of dtypes over a run), sometimes reduced or compared after.
    bool cast_move() {
        const int x = choose([&](int i) { return computed(i); });
        if (x < 0) return false;
        Instr c;
        c.kind = Instr::Kind::Cast;
        c.dtype = random_reduce_dtype(g_);
        c.args = {x};
        const int y = emit(c);
        if (y < 0) return false;
        if (rank(y) >= 1 && chance(g_, 0.4)) {
            static const std::vector<Op> ops{Op::Sum, Op::Max, Op::Min, Op::Mean, Op::ArgMin, Op::Any};
            red(pick(g_, ops), y, random_axes(rank(y)), chance(g_, 0.5));
        }
        return true;
    }

    /// A random elementwise op (a prologue of later reductions, or an epilogue of earlier ones).
    bool elementwise_move() {
        static const std::vector<Op> all = elementwise_ops();
        static const std::vector<Op> common{Op::Add, Op::Sub, Op::Mul, Op::Div,  Op::Maximum, Op::Minimum,
                                            Op::Abs, Op::Neg, Op::Exp, Op::Sqrt, Op::Relu,    Op::Where,
                                            Op::Gt,  Op::Fma, Op::Sin, Op::Tanh, Op::Sigmoid, Op::Eq};
        const Op op = chance(g_, 0.5) ? pick(g_, common) : pick(g_, all);
        std::vector<int> args;
        for (int a = 0; a < ir::info(op).arity; ++a) args.push_back(operand(g_, p_.code.size()));
        if (chance(g_, 0.5)) args[static_cast<std::size_t>(g_() % args.size())] = size() - 1;
        return ew(op, args) >= 0;
    }

    /// One reduction of a random node (30%: of a node computed from a reduction; rarely of a rank-0 one).
    bool reduce_move() {
        int x = chance(g_, 0.3) ? choose([&](int i) { return data(i) && reduced(i); }) : -1;
        if (x < 0 && chance(g_, 0.05)) x = choose([&](int i) { return computed(i) && rank(i) == 0; });
        if (x < 0) x = operand_node();
        if (x < 0) return false;
        static const std::vector<Op> ops{Op::Sum,    Op::Prod,   Op::Min, Op::Max, Op::Mean,
                                         Op::ArgMin, Op::ArgMax, Op::Any, Op::All};
        const Op op = pick(g_, ops);
        const std::uint32_t axes = random_axes(rank(x));
        if (op == Op::Prod) x = near_one(x, reduced_count(x, axes));
        return red(op, x, axes, chance(g_, 0.5)) >= 0;
    }

    /// An elementwise op on a reduced value: a function, a scalar, an input of the reduced shape (`+ b`),
    /// a cast, or another node.
    bool epilogue_move() {
        const int r = choose([&](int i) { return reduced(i) && computed(i); });
        if (r < 0) return false;
        static const std::vector<Op> unary{Op::Sqrt,  Op::Exp,     Op::Abs,  Op::Neg,  Op::Log,
                                           Op::Rsqrt, Op::Sigmoid, Op::Tanh, Op::Relu, Op::Floor,
                                           Op::Sign,  Op::IsNan,   Op::Log1p};
        static const std::vector<Op> binary{Op::Add,     Op::Sub,     Op::Mul, Op::Div,
                                            Op::Maximum, Op::Minimum, Op::Gt,  Op::Pow};
        int y = -1;
        switch (g_() % 5) {
            case 0:
                y = ew(pick(g_, unary), {r});
                break;
            case 1: {
                const DType d = chance(g_, 0.7) ? node(r).dtype() : random_reduce_dtype(g_);
                Instr s;
                s.kind = chance(g_, 0.5) ? Instr::Kind::Scalar : Instr::Kind::Constant;
                s.dtype = d;
                s.value = random_value(g_, d, true);
                const int c = emit(s);
                y = chance(g_, 0.7) ? ew(pick(g_, binary), {r, c}) : ew(pick(g_, binary), {c, r});
                break;
            }
            case 2:
                y = ew(pick(g_, binary), {r, input_like(node(r).shape())});
                break;
            case 3: {
                Instr c;
                c.kind = Instr::Kind::Cast;
                c.dtype = random_reduce_dtype(g_);
                c.args = {r};
                y = emit(c);
                break;
            }
            default:
                y = ew(pick(g_, binary), {r, operand(g_, p_.code.size())});
                break;
        }
        if (y >= 0 && chance(g_, 0.3)) ew(pick(g_, unary), {y});
        return y >= 0;
    }

    /// Two or three reductions of one operand over one axis set (fused into one kernel), often combined.
    bool multi_reduce_move() {
        const int x = operand_node();
        if (x < 0) return false;
        const std::uint32_t axes = random_axes(rank(x));
        const bool keep = chance(g_, 0.5);
        std::vector<Op> ops{Op::Sum,    Op::Max, Op::Min, Op::Mean, Op::ArgMax,
                            Op::ArgMin, Op::Any, Op::All, Op::Sum,  Op::Max};
        if (reduced_count(x, axes) <= 16) ops.push_back(Op::Prod);
        std::shuffle(ops.begin(), ops.end(), g_);
        const int want = uniform(g_, 2, 3);
        std::vector<int> rs;
        for (Op op : ops) {
            if (static_cast<int>(rs.size()) == want) break;
            const auto same_op = [&](int r) { return p_.code[static_cast<std::size_t>(r)].op == op; };
            if (std::find_if(rs.begin(), rs.end(), same_op) != rs.end()) continue;
            const int r = red(op, x, axes, keep);
            if (r >= 0) rs.push_back(r);
        }
        if (rs.size() < 2) return false;
        if (chance(g_, 0.6)) {
            static const std::vector<Op> combine{Op::Sub, Op::Add, Op::Mul, Op::Div, Op::Maximum};
            ew(pick(g_, combine), {rs[0], rs[1]});
        }
        return true;
    }

    /// A reduced value broadcast back over its operand: x - mean(x, axes, keepdims = true) and variants.
    bool broadcast_back_move() {
        const int x = operand_node();
        if (x < 0) return false;
        static const std::vector<Op> reds{Op::Mean, Op::Max, Op::Min, Op::Sum, Op::Mean};
        static const std::vector<Op> ops{Op::Sub, Op::Sub, Op::Div,     Op::Mul,    Op::Add,
                                         Op::Gt,  Op::Eq,  Op::Maximum, Op::Minimum};
        const int r = red(pick(g_, reds), x, random_axes(rank(x)), chance(g_, 0.8));
        const Op op = pick(g_, ops);
        return (chance(g_, 0.8) ? ew(op, {x, r}) : ew(op, {r, x})) >= 0;
    }

    /// softmax, layernorm, rmsnorm, centering, variance and standard deviation, min-max and max-abs
    /// scaling, written from reductions and elementwise ops over a random axis set (often the last axis).
    bool normalize_move() {
        const int x = operand_node();
        if (x < 0) return false;
        const int r = rank(x);
        const std::uint32_t axes = chance(g_, 0.6) ? 1u << (r - 1) : random_axes(r);
        const DType fd = float_dtype(x);
        switch (g_() % 7) {
            case 0: {  // softmax
                const int e = ew(Op::Exp, {ew(Op::Sub, {x, red(Op::Max, x, axes, true)})});
                return ew(Op::Div, {e, red(Op::Sum, e, axes, true)}) >= 0;
            }
            case 1: {  // layernorm
                const int d = ew(Op::Sub, {x, red(Op::Mean, x, axes, true)});
                const int v = red(Op::Mean, ew(Op::Mul, {d, d}), axes, true);
                if (v < 0) return false;
                int y = ew(Op::Mul, {d, ew(Op::Rsqrt, {ew(Op::Add, {v, scalar(1e-5, float_dtype(v))})})});
                if (y >= 0 && chance(g_, 0.7)) y = std::max(y, ew(Op::Mul, {y, param(x, axes)}));  // weight
                if (y >= 0 && chance(g_, 0.7)) y = std::max(y, ew(Op::Add, {y, param(x, axes)}));  // bias
                return y >= 0;
            }
            case 2: {  // rmsnorm
                const int ms = red(Op::Mean, ew(Op::Mul, {x, x}), axes, true);
                if (ms < 0) return false;
                int y = ew(Op::Mul, {x, ew(Op::Rsqrt, {ew(Op::Add, {ms, scalar(1e-6, float_dtype(ms))})})});
                if (y >= 0 && chance(g_, 0.7)) y = std::max(y, ew(Op::Mul, {y, param(x, axes)}));
                return y >= 0;
            }
            case 3:  // centering (keepdims, or leading axes without, which broadcast back as well)
                return ew(Op::Sub, {x, red(Op::Mean, x, axes, chance(g_, 0.8))}) >= 0;
            case 4: {  // variance (with a correction) and standard deviation
                const int d = ew(Op::Sub, {x, red(Op::Mean, x, axes, true)});
                const bool keep = chance(g_, 0.5);
                int v;
                if (chance(g_, 0.5)) {
                    v = red(Op::Mean, ew(Op::Mul, {d, d}), axes, keep);
                } else {
                    const double n1 =
                        static_cast<double>(std::max<std::int64_t>(reduced_count(x, axes) - 1, 0));
                    v = ew(Op::Div,
                           {red(Op::Sum, ew(Op::Mul, {d, d}), axes, keep), scalar(n1, fd)});  // correction 1
                }
                if (v >= 0 && chance(g_, 0.5)) v = ew(Op::Sqrt, {v});
                return v >= 0;
            }
            case 5: {  // min-max scaling
                const int mn = red(Op::Min, x, axes, true), mx = red(Op::Max, x, axes, true);
                return ew(Op::Div, {ew(Op::Sub, {x, mn}), ew(Op::Sub, {mx, mn})}) >= 0;
            }
            default:  // max-abs scaling
                return ew(Op::Div, {x, red(Op::Max, ew(Op::Abs, {x}), axes, true)}) >= 0;
        }
    }

    /// A view (transpose, slice, permute, reshape, broadcast) of a node: reduced values, or operands of
    /// later reductions.
    bool view_move() {
        const int a = choose([&](int i) { return computed(i); });
        if (a < 0) return false;
        Instr v;
        v.kind = Instr::Kind::View;
        v.view = static_cast<ViewKind>(g_() % 8);
        v.key = g_();
        static const std::vector<int> steps{1, 2, 3, -1, -2};
        v.step = pick(g_, steps);
        v.start1 = chance(g_, 0.5);
        v.extent = uniform(g_, 2, 3);
        v.args = {a};
        return emit(v) >= 0;
    }

    /// Outputs: the last node computed from a reduction, then up to two more, preferring results nothing
    /// else uses (several outputs of one reduction kernel, or of different iteration spaces).
    void pick_outputs() {
        std::vector<bool> used(p_.code.size(), false);
        for (const Instr& ins : p_.code)
            for (int a : ins.args) used[static_cast<std::size_t>(a)] = true;
        std::vector<int> sinks, any;
        int last_reduced = -1;
        for (int i = 0; i < size(); ++i) {
            if (!st_.has_input[static_cast<std::size_t>(i)]) continue;
            any.push_back(i);
            if (st_.has_reduce[static_cast<std::size_t>(i)]) last_reduced = i;
            if (!used[static_cast<std::size_t>(i)] &&
                p_.code[static_cast<std::size_t>(i)].kind != Instr::Kind::Input)
                sinks.push_back(i);
        }
        if (any.empty()) return;  // cannot happen (the first input always builds); build() rejects it
        p_.outputs.push_back(last_reduced >= 0 ? last_reduced : any.back());
        for (int k = 0; k < 2; ++k) {
            const std::vector<int>& from = !sinks.empty() && chance(g_, 0.8) ? sinks : any;
            if (!chance(g_, 0.5)) continue;
            const int o = from[g_() % from.size()];
            if (std::find(p_.outputs.begin(), p_.outputs.end(), o) == p_.outputs.end())
                p_.outputs.push_back(o);
        }
        // An array together with reductions of it in one evaluation (`eval(q, sum(q == max(q)))`): the
        // operand of a reduction on the path to an output, itself an output.
        if (chance(g_, 0.4)) {
            std::vector<int> operands;
            for (const Instr& ins : p_.code)
                if (ins.kind == Instr::Kind::Reduce && st_.has_input[static_cast<std::size_t>(ins.args[0])])
                    operands.push_back(ins.args[0]);
            if (!operands.empty()) {
                const int o = pick(g_, operands);
                if (std::find(p_.outputs.begin(), p_.outputs.end(), o) == p_.outputs.end())
                    p_.outputs.push_back(o);
            }
        }
    }
};

}  // namespace

Program generate_reductions(std::uint64_t seed, const GenOptions& opt) {
    return ReduceGen(seed, opt).run();
}

}  // namespace loom::fuzz
