// The product generator of the fuzzer's random programs: small matrix products (M, N and K up to 40, K
// sometimes 64 to 260, of a base shape [M, K, N], or [B, M, K, N] with batches that broadcast (now and then
// 300 entries), vectors now
// and then, K = 0 and empty results rarely) of inputs in every layout, of inputs stored transposed under a
// Transpose view, or of computed values (exact elementwise prologues), each cast to the product's dtype
// (float16, bfloat16, float32, float64 or int8, docs/semantics.md section 12) when its own differs; then
// elementwise epilogues over the product's shape (a row bias [N], a column bias [M, 1], a residual,
// activations, scalars, casts), several outputs of one product, and consumers that end the product's kernel
// (a transposed view of the result, a reduction of it, another product of it).
#include <fmt/format.h>

#include <algorithm>
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

    /// An input of the base dims `dims` (the last two swapped when `swap`), those of `ones` set to 1: dtype
    /// `d` most of the time, else any (the operands are cast to the product dtype after); any layout and
    /// pre-view unless `plain`.
    int input(std::uint32_t dims, std::uint32_t ones, bool swap, DType d, bool plain = false) {
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

}  // namespace loom::fuzz
