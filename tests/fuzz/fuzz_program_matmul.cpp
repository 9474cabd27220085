// The product generator of the fuzzer's random programs: small matrix products (M, N and K up to 40, K
// sometimes 64 to 260, of a base shape [M, K, N], or [B, M, K, N] with batches that broadcast (now and then
// 300 entries), vectors now
// and then, K = 0 and empty results rarely) of inputs in every layout, of inputs stored transposed under a
// Transpose view, or of computed values (exact elementwise prologues), each cast to the product's dtype
// (float16, bfloat16, float32, float64 or int8, docs/semantics.md section 12) when its own differs; then
// elementwise epilogues over the product's shape (a row bias [N], a column bias [M, 1], a residual,
// activations, scalars, casts), several outputs of one product, and consumers that end the product's kernel
// (a transposed view of the result, a reduction of it, another product of it). A share of the product seeds
// (is_attention_seed) make attention instead: q [B, H, T, D], k and v [B, Hkv, S, D] (no batch axis now and
// then; H 1, 2 or 4, Hkv dividing it; T and S up to 150, mostly not multiples of the key block; D of 8, 16,
// 24, 64 or 80) drawn as the products' operands are (every layout, permuted, sliced and reshaped views,
// transposed storage, prologues, casts), of float32 mostly and float16 or bfloat16 now and then, with a
// causal mask of either alignment or none, a random scale and now and then a bias (of [B, H, T, S], [T, S],
// [B, 1, 1, S] or [S]), whose values below a threshold are -inf (masked keys, whole rows of them at times),
// then elementwise epilogues (a residual, `y * c + x`, activations, casts, a reduction, a permuted view).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "fuzz_program_internal.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/op.hpp"

namespace loom::fuzz {

namespace {

using ir::Op;

bool is_product_dtype(DType d) {
    return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64 ||
           d == DType::Int8;
}

/// The generator: the base shape and the product dtype first, the two operands, the product, then epilogue
/// moves, each backed out whole when a constructor or the approximation rules reject one of its
/// instructions.
class ProductGen : GenBase {
  public:
    explicit ProductGen(std::uint64_t seed) : g_(seed * 0x9E3779B97F4A7C15ULL + 0x3C6EF372FE94F82BULL) {}
    struct ForAttention {};
    ProductGen(std::uint64_t seed, ForAttention) : g_(seed * 0x9E3779B97F4A7C15ULL + 0xA54FF53A5F1D36F1ULL) {}

    /// An attention program (is_attention_seed()): base [B,] H, Hkv, T, S, D; the attention of q, k, v and
    /// perhaps a bias, each backed out and drawn again (plain at last) when it does not build, then up to 3
    /// epilogue moves.
    Program run_attention() {
        p_.products = true;  // the products' tame data: a row of keys that nearly all held a special value
        p_.data_seed = g_();
        choose_attention_base();
        const double u = unit();
        pd_ = u < 0.7 ? DType::Float32 : (u < 0.85 ? DType::Float16 : DType::BFloat16);
        int att = -1;
        for (int attempt = 0; attempt < 10 && att < 0; ++attempt) {
            back_to(0);
            att = attention(attempt >= 5);
        }
        if (att < 0)
            throw std::logic_error(fmt::format("no attention of base shape {} builds", to_string(p_.base)));
        int v = att;
        const int moves = uniform(g_, 0, 3);
        for (int k = 0; k < moves; ++k) {
            for (int attempt = 0; attempt < 10; ++attempt) {
                const int before = size();
                const int y = attention_move(v);
                if (y >= 0) {
                    v = y;
                    break;
                }
                back_to(before);
            }
        }
        p_.outputs.push_back(v);
        if (v != att && chance(g_, 0.35)) p_.outputs.push_back(att);
        return collect(p_);
    }

    Program run() {
        p_.products = true;
        p_.data_seed = g_();
        choose_base();
        static const std::vector<DType> dtypes{DType::Float32,  DType::Float32, DType::Float16,
                                               DType::BFloat16, DType::Float64, DType::Int8};
        pd_ = pick(g_, dtypes);
        int prod = -1;
        for (int attempt = 0; attempt < 10 && prod < 0; ++attempt) {
            back_to(0);
            const bool plain = attempt >= 5;  // then contiguous inputs of the product dtype
            const int a = operand(true, plain), b = a >= 0 ? operand(false, plain) : -1;
            if (b >= 0) prod = product(a, b);
        }
        if (prod < 0)
            throw std::logic_error(fmt::format("no product of base shape {} builds", to_string(p_.base)));
        std::vector<int> ends{prod};  // results of moves, candidates for outputs
        int v = prod;
        const int moves = uniform(g_, 1, 4);
        for (int k = 0; k < moves; ++k) {
            for (int attempt = 0; attempt < 10; ++attempt) {
                const int before = size();
                const int from = chance(g_, 0.75) ? v : prod;  // mostly a chain, sometimes a second epilogue
                const int y = move(from);
                if (y >= 0) {
                    v = y;
                    ends.push_back(y);
                    break;
                }
                back_to(before);
            }
        }
        // Outputs: the last result, sometimes the product itself and another result beside it (several
        // outputs of one product's kernel, or of kernels on both sides of a boundary).
        p_.outputs.push_back(v);
        if (v != prod && chance(g_, 0.35)) p_.outputs.push_back(prod);
        if (ends.size() > 2 && chance(g_, 0.35)) {
            const int o = ends[static_cast<std::size_t>(uniform(g_, 1, static_cast<int>(ends.size()) - 2))];
            if (std::find(p_.outputs.begin(), p_.outputs.end(), o) == p_.outputs.end())
                p_.outputs.push_back(o);
        }
        return collect(p_);
    }

  private:
    Rng g_;
    bool batched_ = false;
    DType pd_ = DType::Float32;

    // Base dims: [B,] M, K, N.
    int md() const { return batched_ ? 1 : 0; }
    // Attention's base dims: [B,] H, Hkv, T, S, D.
    int hd() const { return batched_ ? 1 : 0; }
    int hkvd() const { return hd() + 1; }
    int td() const { return hd() + 2; }
    int sd() const { return hd() + 3; }
    int dd() const { return hd() + 4; }
    int kd() const { return md() + 1; }
    int nd() const { return md() + 2; }
    static std::uint32_t bit(int d) { return 1u << d; }
    double unit() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }

    int cast(int a, DType d) {
        if (a < 0) return -1;
        Instr c;
        c.kind = Instr::Kind::Cast;
        c.dtype = d;
        c.args = {a};
        return emit(c);
    }
    int transpose(int a) {
        if (a < 0) return -1;
        Instr v;
        v.kind = Instr::Kind::View;
        v.view = ViewKind::Transpose;
        v.args = {a};
        return emit(v);
    }
    int product(int a, int b) {
        if (a < 0 || b < 0) return -1;
        Instr m;
        m.kind = Instr::Kind::MatMul;
        m.args = {a, b};
        return emit(m);
    }
    int scalar(DType d) {
        Instr s;
        s.kind = chance(g_, 0.5) ? Instr::Kind::Scalar : Instr::Kind::Constant;
        s.dtype = d;
        s.value = random_value(g_, d, true);
        return emit(s);
    }

    void choose_base() {
        static const std::vector<std::int64_t> extents{1,  2,  3,  4,  5,  7,  8,  9,
                                                       13, 16, 17, 24, 31, 32, 33, 40};
        static const std::vector<std::int64_t> batches{1, 2, 3, 5};
        batched_ = chance(g_, 0.35);
        // Now and then more batch entries than a GPU holds blocks at once, so that a block walks several
        // (a batch whose K is one step copies the next entry's tiles while it multiplies this one's).
        if (batched_) p_.base.push_back(chance(g_, 1.0 / 8) ? 300 : pick(g_, batches));
        for (int d = 0; d < 3; ++d) p_.base.push_back(pick(g_, extents));
        // Now and then a K of a full step and more (the matrix-vector tile steps 128 along K, reading A's
        // rows and the vector 16 bytes at a time only in whole steps; K = 64 is one step of a small product).
        static const std::vector<std::int64_t> long_k{64, 65, 72, 100, 132, 260};
        if (chance(g_, 1.0 / 6)) p_.base[static_cast<std::size_t>(kd())] = pick(g_, long_k);
        if (chance(g_, 1.0 / 24))
            p_.base[static_cast<std::size_t>(kd())] = 0;  // K = 0: every element +0
        else if (chance(g_, 1.0 / 48))
            p_.base[static_cast<std::size_t>(chance(g_, 0.5) ? md() : nd())] = 0;  // empty
    }

    void choose_attention_base() {
        static const std::vector<std::int64_t> lengths{1,  2,  3,  5,  7,  13,  17,  31,  33,  50,
                                                       63, 64, 65, 77, 99, 100, 127, 128, 129, 150};
        static const std::vector<std::int64_t> heads{1, 2, 4}, batches{1, 2, 3}, dims{8, 16, 24, 64, 80};
        batched_ = chance(g_, 0.75);
        if (batched_) p_.base.push_back(pick(g_, batches));
        const std::int64_t h = pick(g_, heads);
        std::vector<std::int64_t> divisors;
        for (std::int64_t d = 1; d <= h; ++d)
            if (h % d == 0) divisors.push_back(d);
        p_.base.push_back(h);
        p_.base.push_back(pick(g_, divisors));
        // Now and then decoding: at most 16 queries over more than 512 keys, whose keys the order cuts into
        // chunks of 512 combined in a tree (and the GPU shares among blocks); small D keeps the work small.
        static const std::vector<std::int64_t> few{1, 1, 2, 3, 16}, many{513, 700, 1030, 1600, 2100},
            small_dims{8, 16, 24};
        const bool decoding = chance(g_, 0.2);
        if (decoding) {
            p_.base.push_back(pick(g_, few));
            p_.base.push_back(pick(g_, many));
            p_.base.push_back(pick(g_, small_dims));
        } else {
            p_.base.push_back(pick(g_, lengths));
            p_.base.push_back(chance(g_, 0.25) ? p_.base.back() : pick(g_, lengths));  // S = T now and then
            p_.base.push_back(pick(g_, dims));
        }
        // The reference's work (B H T S D) kept below 2^18 (2^20 for decoding, whose S must stay long): the
        // fuzzer checks many small attentions.
        auto at = [&](int d) -> std::int64_t& { return p_.base[static_cast<std::size_t>(d)]; };
        while (numel(p_.base) / std::max<std::int64_t>(at(hkvd()), 1) > (decoding ? (1 << 20) : (1 << 18))) {
            std::int64_t& e = at(td()) >= at(sd()) ? at(td()) : at(sd());
            e = (e + 1) / 2;
        }
    }

    /// q (`which` 0: [B, H, T, D]), k or v (1, 2: [B, Hkv, S, D]) of attention: an input of the attention's
    /// dtype most of the time (any pre-view and layout unless `plain`), sometimes stored transposed under a
    /// Transpose view, or an exact elementwise op of one, cast to the attention's dtype when its own differs.
    int attention_operand(int which, bool plain) {
        std::uint32_t dims = (which == 0 ? bit(hd()) | bit(td()) : bit(hkvd()) | bit(sd())) | bit(dd());
        if (batched_) dims |= bit(0);
        const bool swap = !plain && chance(g_, 0.2);
        int x = input(dims, 0, swap, pd_, plain, true);
        if (swap) x = transpose(x);
        if (x >= 0 && !plain && chance(g_, 0.2)) {
            const int y = prologue(x, dims, 0);
            if (y >= 0) x = y;
        }
        if (x >= 0 && node(x).dtype() != pd_) x = cast(x, pd_);
        return x;
    }

    /// A bias of [B, H, T, S], [T, S], [B, 1, 1, S] or [S], its values below a threshold made -inf now and
    /// then (masked keys: a threshold of -3 masks few of the data's normal values, 2 most of them).
    int attention_bias(bool plain) {
        const double u = unit();
        std::uint32_t dims = bit(td()) | bit(sd()), ones = 0;
        if (u < 0.3) {
            dims |= bit(hd()) | (batched_ ? bit(0) : 0u);
        } else if (u < 0.5) {
            dims |= bit(hd()) | (batched_ ? bit(0) : 0u);
            ones = bit(hd()) | bit(td());
        } else if (u < 0.65) {
            dims = bit(sd());
        }
        int b = input(dims, ones, false, pd_, plain, true);
        if (b >= 0 && node(b).dtype() != pd_) b = cast(b, pd_);
        if (b < 0 || plain || !chance(g_, 0.5)) return b;
        static const std::vector<double> thresholds{-3.0, -1.5, 0.0, 2.0};
        const ir::Loc loc = ir::Loc::current();
        Instr t;
        t.kind = Instr::Kind::Constant;
        t.dtype = pd_;
        t.value = ir::make_scalar_value(pick(g_, thresholds), pd_, "fuzz", loc);
        const int th = emit(t);
        t.value = ir::make_scalar_value(-std::numeric_limits<double>::infinity(), pd_, "fuzz", loc);
        const int minf = emit(t);
        const int keep = ew(Op::Lt, {th, b});
        return keep < 0 || minf < 0 ? -1 : ew(Op::Where, {keep, b, minf});
    }

    /// The attention of q, k, v and perhaps a bias: its index, or -1.
    int attention(bool plain) {
        const int q = attention_operand(0, plain);
        const int k = q >= 0 ? attention_operand(1, plain) : -1;
        const int v = k >= 0 ? attention_operand(2, plain) : -1;
        if (v < 0) return -1;
        Instr a;
        a.kind = Instr::Kind::Attention;
        a.args = {q, k, v};
        if (chance(g_, 0.4)) {
            const int b = attention_bias(plain);
            if (b < 0) return -1;
            a.args.push_back(b);
        }
        static const std::vector<ir::CausalMask> masks{ir::CausalMask::None, ir::CausalMask::None,
                                                       ir::CausalMask::TopLeft, ir::CausalMask::BottomRight};
        a.causal = pick(g_, masks);
        const double d = static_cast<double>(p_.base[static_cast<std::size_t>(dd())]);
        static const std::vector<double> scales{1.0, 0.125, 0.3, 2.0, -0.5, 1e-3};
        a.scale = chance(g_, 0.5) ? 1.0 / std::sqrt(d) : pick(g_, scales);
        return emit(a);
    }

    /// One consumer of attention's result `v` (or an epilogue value of it): a residual `v * c + x` or
    /// `v + x` (x of [B, H, T, D] or a row [D]), an activation, a scalar, a cast, a reduction over D, or a
    /// permuted view (heads back to [B, T, H, D]) plus an input.
    int attention_move(int v) {
        const DType rd = node(v).dtype();
        switch (g_() % 7) {
            case 0:
            case 1: {
                std::uint32_t dims = chance(g_, 0.6) ? bit(hd()) | bit(td()) | bit(dd()) : bit(dd());
                if (batched_ && dims != bit(dd())) dims |= bit(0);
                const int x = input(dims, 0, false, rd);
                const int y = chance(g_, 0.5) ? ew(Op::Mul, {v, scalar(rd)}) : v;
                return ew(Op::Add, {y, x});
            }
            case 2: {
                static const std::vector<Op> ops{Op::Relu, Op::GeluErf, Op::Sigmoid, Op::Tanh,
                                                 Op::Exp,  Op::Abs,     Op::Neg};
                return ew(pick(g_, ops), {v});
            }
            case 3: {
                static const std::vector<Op> ops{Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Maximum};
                return ew(pick(g_, ops), {v, scalar(rd)});
            }
            case 4: {
                static const std::vector<DType> to{DType::Float16, DType::BFloat16, DType::Float32,
                                                   DType::Float64, DType::Int32};
                return cast(v, pick(g_, to));
            }
            case 5: {
                static const std::vector<Op> ops{Op::Sum, Op::Max, Op::ArgMax};
                Instr r;
                r.kind = Instr::Kind::Reduce;
                r.op = pick(g_, ops);
                r.args = {v};
                r.axes = bit(node(v).rank() - 1);
                r.keepdims = chance(g_, 0.5);
                return emit(r);
            }
            default: {
                Instr t;
                t.kind = Instr::Kind::View;
                t.view = ViewKind::Permute;
                t.key = g_();
                t.args = {v};
                const int y = emit(t);
                return y >= 0 && chance(g_, 0.5) ? ew(Op::Add, {y, y}) : y;
            }
        }
    }

    /// An input of the base dims `dims` (the last two swapped when `swap`), those of `ones` set to 1: dtype
    /// `d` most of the time, else any (the operands are cast to the product dtype after); any layout and
    /// pre-view unless `plain`.
    /// `in_place`: an operand attention reads in place, whose reshaped pre-view is of a row-major input only
    /// (the CUDA planner takes a reshape of other strides for a strided view and throws, InternalError
    /// "plan_attention(): operand N of attention ... is not a strided view of an input": such operands are
    /// not drawn until it computes them first).
    int input(std::uint32_t dims, std::uint32_t ones, bool swap, DType d, bool plain = false,
              bool in_place = false) {
        static const std::vector<DType> any{DType::Float32, DType::Float16, DType::BFloat16,
                                            DType::Float64, DType::Int8,    DType::Int32,
                                            DType::UInt8,   DType::Int64,   DType::Bool};
        static const std::vector<PreView> pre{PreView::None,    PreView::None,  PreView::None,
                                              PreView::Permute, PreView::Slice, PreView::Reshape};
        static const std::vector<Layout> lay{Layout::Contiguous, Layout::Contiguous, Layout::Contiguous,
                                             Layout::Offset1,    Layout::ColMajor,   Layout::Padded,
                                             Layout::Stride0};
        static const std::vector<int> steps{2, 3, -1, -2};
        Instr in;
        in.kind = Instr::Kind::Input;
        in.dtype = plain || chance(g_, 0.75) ? d : pick(g_, any);
        in.pick = dims;
        in.ones = ones;
        in.swap = swap;
        in.pre = plain ? PreView::None : pick(g_, pre);
        in.layout = plain ? Layout::Contiguous : pick(g_, lay);
        if (in_place && in.pre == PreView::Reshape && in.layout != Layout::Offset1)
            in.layout = Layout::Contiguous;
        in.key = g_();
        in.step = pick(g_, steps);
        in.start1 = chance(g_, 0.5);
        return emit(in);
    }

    /// The left (`left`: [B, M, K], [M, K] or [K]) or right ([B, K, N], [K, N] or [K]) operand of the
    /// product: an input, an input stored transposed under a Transpose view, or an exact elementwise op of
    /// one, cast to the product dtype when its dtype differs. Batched bases: the operand has the batch axis,
    /// a batch axis of 1, or none (both broadcast).
    int operand(bool left, bool plain) {
        std::uint32_t dims = 0, ones = 0;
        const bool vector = !plain && chance(g_, 0.1);
        if (vector) {
            dims = bit(kd());
        } else {
            if (batched_) {
                const double u = unit();
                if (plain || u < 0.7) {
                    dims |= bit(0);
                } else if (u < 0.85) {
                    dims |= bit(0);
                    ones |= bit(0);
                }
            }
            dims |= left ? bit(md()) | bit(kd()) : bit(kd()) | bit(nd());
        }
        const bool swap = !vector && !plain && chance(g_, 0.25);
        int x = input(dims, ones, swap, pd_, plain);
        if (swap) x = transpose(x);
        if (x >= 0 && !plain && chance(g_, 0.3)) {
            const int y = prologue(x, dims, ones);
            if (y >= 0) x = y;
        }
        if (x >= 0 && node(x).dtype() != pd_) x = cast(x, pd_);
        return x;
    }

    /// An exact elementwise op of operand `x` (whose shape is the base dims `dims` with `ones` set to 1):
    /// cheap ones the product's kernel computes as its tiles load, a division it reads from a temporary.
    int prologue(int x, std::uint32_t dims, std::uint32_t ones) {
        const DType d = node(x).dtype();
        switch (g_() % 5) {
            case 0:
                return ew(Op::Neg, {x});
            case 1:
                return ew(Op::Abs, {x});
            case 2:
                return ew(chance(g_, 0.6) ? Op::Mul : Op::Div,
                          {x, scalar(d)});  // a division is not cheap: materialized
            case 3: {
                static const std::vector<Op> ops{Op::Add, Op::Sub, Op::Mul, Op::Maximum};
                return ew(pick(g_, ops), {x, input(dims, ones, false, d)});
            }
            default:
                return ew(Op::Relu, {x});
        }
    }

    /// One consumer of `v` (the product or an epilogue value of it); its result, or -1.
    int move(int v) {
        const DType rd = node(v).dtype();
        const int rank = node(v).rank();
        switch (g_() % 10) {
            case 0:
            case 1:
            case 2: {  // a bias: a row [N], a column [M, 1] or a residual [B, M, N]
                const double u = unit();
                std::uint32_t dims = bit(md()) | bit(nd()), ones = 0;
                if (u < 0.4)
                    dims = bit(nd());
                else if (u < 0.65)
                    ones = bit(nd());
                else if (batched_ && chance(g_, 0.6))
                    dims |= bit(0);
                const int c = input(dims, ones, false, rd);
                static const std::vector<Op> ops{Op::Add, Op::Add,     Op::Add,    Op::Sub,
                                                 Op::Mul, Op::Maximum, Op::Minimum};
                const Op op = pick(g_, ops);
                return chance(g_, 0.8) ? ew(op, {v, c}) : ew(op, {c, v});
            }
            case 3:
            case 4: {  // an activation or another function
                static const std::vector<Op> ops{Op::Relu, Op::GeluErf, Op::GeluTanh, Op::Sigmoid,
                                                 Op::Tanh, Op::Exp,     Op::Abs,      Op::Neg,
                                                 Op::Sqrt, Op::Sin,     Op::Relu,     Op::GeluErf};
                return ew(pick(g_, ops), {v});
            }
            case 5: {  // a scalar or a constant
                static const std::vector<Op> ops{Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Maximum};
                const int c = scalar(chance(g_, 0.8) ? rd : DType::Float32);
                const Op op = pick(g_, ops);
                return chance(g_, 0.7) ? ew(op, {v, c}) : ew(op, {c, v});
            }
            case 6: {  // a cast, to a narrower dtype most of the time
                static const std::vector<DType> to{DType::Float16,  DType::BFloat16, DType::Float16,
                                                   DType::BFloat16, DType::Float32,  DType::Float64,
                                                   DType::Int8,     DType::Int32};
                return cast(v, pick(g_, to));
            }
            case 7: {  // a reduction of it (over the last axis, or all), sometimes broadcast back
                static const std::vector<Op> ops{Op::Sum, Op::Max, Op::Min, Op::Sum, Op::ArgMax};
                Instr r;
                r.kind = Instr::Kind::Reduce;
                r.op = pick(g_, ops);
                r.args = {v};
                r.axes = rank > 0 && chance(g_, 0.7) ? bit(rank - 1) : 0;
                r.keepdims = chance(g_, 0.5);
                const int y = emit(r);
                if (y >= 0 && r.keepdims && r.op != Op::ArgMax && chance(g_, 0.5)) return ew(Op::Sub, {v, y});
                return y;
            }
            case 8: {  // a transposed view of it, perhaps plus an input of the transposed shape
                if (rank < 2) return -1;
                const int t = transpose(v);
                if (t < 0 || !chance(g_, 0.6)) return t;
                std::uint32_t dims = bit(md()) | bit(nd());
                if (batched_ && rank >= 3 && chance(g_, 0.5)) dims |= bit(0);
                return ew(Op::Add, {t, input(dims, 0, true, rd)});
            }
            default: {  // another product of it: v @ v.T, or v.T @ an input [M, K]
                if (rank < 2 || !is_product_dtype(rd)) return -1;
                const int t = transpose(v);
                if (chance(g_, 0.5)) return product(v, t);
                return product(t, input(bit(md()) | bit(kd()), 0, false, rd));
            }
        }
    }
};

}  // namespace

// The options' sizes are for the other generators: products keep their own small shapes.
Program generate_products(std::uint64_t seed, const GenOptions&) {
    return ProductGen(seed).run();
}

Program generate_attention(std::uint64_t seed, const GenOptions&) {
    return ProductGen(seed, ProductGen::ForAttention{}).run_attention();
}

}  // namespace loom::fuzz
