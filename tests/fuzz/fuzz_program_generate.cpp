// Generation of the fuzzer's random programs: the random values, ops and operands the generators draw,
// the pointwise generator (elementwise ops, casts, views, stencils over inputs of every dtype and layout),
// and generate(), which picks it, the reduction generator (fuzz_program_reduce.cpp) or the product
// generator (fuzz_program_matmul.cpp) by the seed.
#include <algorithm>
#include <limits>

#include "fuzz_program_internal.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/op.hpp"

namespace loom::fuzz {

namespace {

using ir::Op;

DType random_dtype(Rng& g) {
    // float32 twice as often as the others: most user code is float32.
    static const std::vector<DType> w{DType::Bool,    DType::Int8,    DType::UInt8,    DType::Int32,
                                      DType::Int64,   DType::Float16, DType::BFloat16, DType::Float32,
                                      DType::Float32, DType::Float64};
    return pick(g, w);
}

}  // namespace

ir::ScalarValue random_value(Rng& g, DType t, bool tame) {
    const ir::Loc loc = ir::Loc::current();
    if (t == DType::Bool) return ir::make_scalar_value(static_cast<std::int64_t>(g() % 2), t, "fuzz", loc);
    if (is_float(t)) {
        if (tame) {
            if (chance(g, 0.05)) {
                static const std::vector<double> sp{std::numeric_limits<double>::quiet_NaN(), -0.0, 0.0,
                                                    1e-40, std::numeric_limits<double>::infinity()};
                return ir::make_scalar_value(pick(g, sp), t, "fuzz", loc);
            }
            return ir::make_scalar_value(static_cast<double>(uniform(g, -300, 300)) / 64.0, t, "fuzz", loc);
        }
        if (chance(g, 0.3)) {
            const double inf = std::numeric_limits<double>::infinity();
            static const std::vector<double> sp{std::numeric_limits<double>::quiet_NaN(),
                                                inf,
                                                -inf,
                                                -0.0,
                                                0.0,
                                                1e-40,
                                                65504.0,
                                                0.5,
                                                -1.0,
                                                1e30};
            return ir::make_scalar_value(pick(g, sp), t, "fuzz", loc);
        }
        return ir::make_scalar_value(static_cast<double>(uniform(g, -300, 300)) / 37.0, t, "fuzz", loc);
    }
    if (chance(g, 0.25)) {
        switch (t) {
            case DType::Int8:
                return ir::ScalarValue::of_int(chance(g, 0.5) ? -128 : 127);
            case DType::UInt8:
                return ir::ScalarValue::of_int(255);
            case DType::Int32:
                return ir::ScalarValue::of_int(chance(g, 0.5) ? INT32_MIN : INT32_MAX);
            case DType::Int64:
                return ir::ScalarValue::of_int(chance(g, 0.5) ? INT64_MIN : INT64_MAX);
            default:
                break;
        }
    }
    const int lo = t == DType::UInt8 ? 0 : -5;
    return ir::make_scalar_value(static_cast<std::int64_t>(uniform(g, lo, 9)), t, "fuzz", loc);
}

std::vector<Op> elementwise_ops() {
    std::vector<Op> ops;
    for (int k = 0; k < ir::num_ops(); ++k) {
        const auto op = static_cast<Op>(k);
        if (ir::is_elementwise(op) && op != Op::Cast) ops.push_back(op);
    }
    return ops;
}

int operand(Rng& g, std::size_t n) {
    const auto a = static_cast<int>(g() % n), b = static_cast<int>(g() % n);
    return chance(g, 0.75) ? std::max(a, b) : a;
}

bool is_reduction_seed(std::uint64_t seed, const GenOptions& opt) {
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL;  // splitmix64: independent of the generators' streams
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53 < opt.reduce_share;
}

bool is_product_seed(std::uint64_t seed, const GenOptions& opt) {
    // Another splitmix64 stream, so that which seeds make products is independent of reduce_share. Its
    // constant keeps the seeds that CTest replays (15777, 777642) the programs they were chosen for.
    std::uint64_t z = seed * 0xD1B54A32D192ED03ULL + 0x6A09E667F3BCC909ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53 < opt.product_share;
}

bool is_attention_seed(std::uint64_t seed, const GenOptions& opt) {
    std::uint64_t z = seed * 0x9E6C63D0676A9A99ULL + 0xBB67AE8584CAA73BULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53 < opt.attention_share;
}

Program generate(std::uint64_t seed, const GenOptions& opt) {
    if (is_product_seed(seed, opt))
        return is_attention_seed(seed, opt) ? generate_attention(seed, opt) : generate_products(seed, opt);
    if (is_reduction_seed(seed, opt)) return generate_reductions(seed, opt);
    Rng g(seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL);
    Program p;
    p.data_seed = g();
    static const std::vector<std::int64_t> extents{1,  2,  3,  4,  5,  7,   8,   13,
                                                   16, 31, 32, 33, 64, 100, 128, 257};
    const int rank = uniform(g, 1, 4);
    const std::int64_t limit = chance(g, 1.0 / 32) ? opt.max_numel * 64 : opt.max_numel;
    for (int d = 0; d < rank; ++d) p.base.push_back(pick(g, extents));
    while (numel(p.base) > limit) {
        auto it = std::max_element(p.base.begin(), p.base.end());
        *it = (*it + 1) / 2;
    }
    State st;
    const int n_inputs = uniform(g, 1, 4);
    for (int k = 0; k < n_inputs; ++k) {
        Instr in;
        in.kind = Instr::Kind::Input;
        in.dtype = random_dtype(g);
        for (int d = 0; d < rank; ++d)
            if (rank > 1 && chance(g, 0.15)) in.ones |= 1u << d;
        // A few inputs of lower rank (broadcast over the leading dimensions), rarely rank 0.
        in.drop = rank > 1 && chance(g, 0.12) ? uniform(g, 1, rank - 1) : (chance(g, 0.03) ? rank : 0);
        static const std::vector<PreView> pre{PreView::None,    PreView::None,  PreView::None,
                                              PreView::Permute, PreView::Slice, PreView::Reshape};
        in.pre = pick(g, pre);
        static const std::vector<Layout> lay{Layout::Contiguous, Layout::Contiguous, Layout::Contiguous,
                                             Layout::Offset1,    Layout::ColMajor,   Layout::Padded,
                                             Layout::Stride0};
        in.layout = pick(g, lay);
        in.key = g();
        static const std::vector<int> steps{2, 3, -1, -2};
        in.step = pick(g, steps);
        in.start1 = chance(g, 0.5);
        p.code.push_back(in);
        if (!st.add(p, p.code.size() - 1, false, Device::cpu())) p.code.pop_back();
    }
    if (p.code.empty()) {  // cannot happen (an Input always builds), but keep the program valid
        p.code.push_back(Instr{});
        st.add(p, 0, false, Device::cpu());
    }
    const int n_leaves = uniform(g, 0, 2);
    for (int k = 0; k < n_leaves; ++k) {
        Instr s;
        s.kind = chance(g, 0.5) ? Instr::Kind::Scalar : Instr::Kind::Constant;
        s.dtype = random_dtype(g);
        s.value = random_value(g, s.dtype);
        p.code.push_back(s);
        if (!st.add(p, p.code.size() - 1, false, Device::cpu())) p.code.pop_back();
    }
    // A third of the programs hold a stencil: taps (Shift views) of an input with a halo, combined with +, -
    // and *, sometimes with taps of a second halo input or repeated taps (which are not one stencil).
    if (chance(g, 1.0 / 3)) {
        const int halos = chance(g, 0.25) ? 2 : 1;
        std::vector<int> taps;
        for (int h = 0; h < halos; ++h) {
            Instr in;
            in.kind = Instr::Kind::Input;
            in.dtype = chance(g, 0.6) ? DType::Float32 : random_dtype(g);
            in.pre = PreView::Halo;
            static const std::vector<Layout> lay{Layout::Contiguous, Layout::Contiguous, Layout::Offset1,
                                                 Layout::ColMajor, Layout::Padded};
            in.layout = pick(g, lay);
            in.key = g();
            p.code.push_back(in);
            if (!st.add(p, p.code.size() - 1, false, Device::cpu())) {
                p.code.pop_back();
                continue;
            }
            const int source = static_cast<int>(p.code.size() - 1);
            const int n_taps = uniform(g, 2, 5);
            for (int k = 0; k < n_taps; ++k) {
                Instr tap;
                tap.kind = Instr::Kind::View;
                tap.view = ViewKind::Shift;
                tap.key =
                    k > 0 && chance(g, 0.1) ? p.code.back().key : g();  // now and then the same tap twice
                tap.args = {source};
                p.code.push_back(tap);
                if (st.add(p, p.code.size() - 1, false, Device::cpu()))
                    taps.push_back(static_cast<int>(p.code.size() - 1));
                else
                    p.code.pop_back();
            }
        }
        static const std::vector<Op> combine{Op::Add, Op::Add, Op::Sub, Op::Mul};
        for (std::size_t k = 1; k < taps.size(); ++k) {
            Instr ins;
            ins.kind = Instr::Kind::Elementwise;
            ins.op = pick(g, combine);
            ins.args = {k == 1 ? taps[0] : static_cast<int>(p.code.size() - 1), taps[k]};
            p.code.push_back(ins);
            if (!st.add(p, p.code.size() - 1, false, Device::cpu())) p.code.pop_back();
        }
    }
    static const std::vector<Op> ops = elementwise_ops();
    const int n_ops = uniform(g, 2, opt.max_ops);
    for (int k = 0; k < n_ops; ++k) {
        for (int attempt = 0; attempt < 40; ++attempt) {
            Instr ins;
            const double r = static_cast<double>(g() >> 11) * 0x1.0p-53;
            if (r < 0.12) {
                ins.kind = Instr::Kind::View;
                ins.view = static_cast<ViewKind>(g() % 8);
                ins.key = g();
                static const std::vector<int> steps{1, 2, 3, -1, -2};
                ins.step = pick(g, steps);
                ins.start1 = chance(g, 0.5);
                ins.extent = uniform(g, 2, 3);
                ins.args = {operand(g, p.code.size())};
            } else if (r < 0.22) {
                ins.kind = Instr::Kind::Cast;
                ins.dtype = random_dtype(g);
                ins.args = {operand(g, p.code.size())};
            } else {
                ins.kind = Instr::Kind::Elementwise;
                ins.op = pick(g, ops);
                for (int a = 0; a < ir::info(ins.op).arity; ++a)
                    ins.args.push_back(operand(g, p.code.size()));
                // Chains: the first operand is often the previous result, so that graphs grow deep.
                if (chance(g, 0.5))
                    ins.args[static_cast<std::size_t>(g() % ins.args.size())] =
                        static_cast<int>(p.code.size() - 1);
                // A random op takes an element index and a seed, both integers: drawn among the integer
                // results where there are some (else it seldom builds, and random ops inside fused kernels
                // would go untested).
                if (ir::info(ins.op).rule == ir::Rule::Random) {
                    std::vector<int> integers;
                    for (std::size_t i = 0; i < p.code.size(); ++i)
                        if (is_integer(st.nodes[i]->dtype())) integers.push_back(static_cast<int>(i));
                    if (!integers.empty())
                        for (int& a : ins.args) a = integers[g() % integers.size()];
                    // The dtype drawn too: float64 draws from 53-bit words, the halves round float32 once.
                    static const std::vector<DType> floats{DType::Float32, DType::Float32, DType::Float64,
                                                           DType::Float16, DType::BFloat16};
                    ins.dtype = pick(g, floats);
                }
            }
            p.code.push_back(ins);
            if (st.add(p, p.code.size() - 1, false, Device::cpu())) break;
            p.code.pop_back();
        }
    }
    // Now and then a rank-0 result of a rank-0 input beside the others (an optimizer's step counter, possibly
    // written over its input): a kernel of its own iteration space, fused and unfused.
    int rank0 = -1;
    if (chance(g, 0.2)) {
        Instr in;
        in.kind = Instr::Kind::Input;
        in.dtype = random_dtype(g);
        in.drop = rank;
        in.key = g();
        p.code.push_back(in);
        if (st.add(p, p.code.size() - 1, false, Device::cpu())) {
            static const std::vector<Op> ops = elementwise_ops();
            Instr ins;
            ins.kind = Instr::Kind::Elementwise;
            ins.op = pick(g, ops);
            for (int a = 0; a < ir::info(ins.op).arity; ++a)
                ins.args.push_back(static_cast<int>(p.code.size() - 1));
            p.code.push_back(ins);
            if (st.add(p, p.code.size() - 1, false, Device::cpu()))
                rank0 = static_cast<int>(p.code.size() - 1);
            else
                p.code.pop_back();
        } else {
            p.code.pop_back();
        }
    }
    // Outputs: the last instruction that reads an input, then up to two more, preferring results that
    // nothing else uses (so that little of the graph is dead).
    std::vector<bool> used(p.code.size(), false);
    for (const Instr& ins : p.code)
        for (int a : ins.args) used[static_cast<std::size_t>(a)] = true;
    std::vector<int> sinks, any;
    for (std::size_t i = 0; i < p.code.size(); ++i) {
        if (!st.has_input[i] || (rank0 >= 0 && static_cast<int>(i) >= rank0 - 1))
            continue;  // the rank-0 pair: added last
        any.push_back(static_cast<int>(i));
        if (!used[i] && p.code[i].kind != Instr::Kind::Input) sinks.push_back(static_cast<int>(i));
    }
    p.outputs.push_back(any.back());
    for (int k = 0; k < 2; ++k) {
        const std::vector<int>& from = !sinks.empty() && chance(g, 0.8) ? sinks : any;
        if (!chance(g, 0.45)) continue;
        const int o = from[g() % from.size()];
        if (std::find(p.outputs.begin(), p.outputs.end(), o) == p.outputs.end()) p.outputs.push_back(o);
    }
    if (rank0 >= 0 && std::find(p.outputs.begin(), p.outputs.end(), rank0) == p.outputs.end())
        p.outputs.push_back(rank0);
    // Extra outputs of their own, each from a generator of its own so that the rest of every program is what
    // the seed made before they were drawn: up to 8 draws of `make` until one builds and reads an input.
    const auto append_output = [&](Rng& r, const auto& make) {
        for (int attempt = 0; attempt < 8; ++attempt) {
            p.code.push_back(make(r));
            if (st.add(p, p.code.size() - 1, false, Device::cpu()) && st.has_input[p.code.size() - 1]) {
                p.outputs.push_back(static_cast<int>(p.code.size() - 1));
                return;
            }
            st.truncate(p, p.code.size() - 1);
            p.code.pop_back();
        }
    };
    // A quarter of the programs gather too: take_along_axis of two earlier results (clamped).
    Rng gg(seed * 0xD1B54A32D192ED03ULL + 0x8CB92BA72F3D8DD7ULL);
    if (chance(gg, 0.25))
        append_output(gg, [&](Rng& r) {
            Instr ins;
            ins.kind = Instr::Kind::Gather;
            ins.key = r();
            ins.args = {operand(r, p.code.size()), operand(r, p.code.size())};
            return ins;
        });
    // A small share scans: cumsum, cumprod, cummax, cummin or logcumsumexp of an earlier result along one of
    // its axes, inclusive or exclusive. Half of them scan the result flattened (a view): rows of up to
    // max_numel elements, most longer than a tile (2048), which the GPU scans in chunks.
    Rng sg(seed * 0x9E6C63D0676A9A99ULL + 0x5851F42D4C957F2DULL);
    if (chance(sg, 0.08)) {
        Rng fg(seed * 0x2545F4914F6CDD1DULL + 0x9FB21C651E98DF25ULL);
        int flat = -1;
        if (chance(fg, 0.5)) {
            Instr view;
            view.kind = Instr::Kind::View;
            view.view = ViewKind::Flatten;
            view.args = {operand(fg, p.code.size())};
            p.code.push_back(view);
            if (st.add(p, p.code.size() - 1, false, Device::cpu()))
                flat = static_cast<int>(p.code.size() - 1);
            else
                p.code.pop_back();
        }
        append_output(sg, [&](Rng& r) {
            constexpr Op kScans[] = {Op::CumSum, Op::CumProd, Op::CumMax, Op::CumMin, Op::LogCumSumExp};
            Instr ins;
            ins.kind = Instr::Kind::Scan;
            ins.op = kScans[r() % 5];
            ins.key = r();
            ins.keepdims = chance(r, 0.3);
            ins.args = {flat >= 0 ? flat : operand(r, p.code.size())};
            return ins;
        });
        // Half of those scans are then reduced over their last axis instead of written (a sum or a mean):
        // the GPU reduces rows of up to 256 in the scan kernel (docs/semantics.md, "Where scans run").
        Rng qg(seed * 0xBF58476D1CE4E5B9ULL + 0x94D049BB133111EBULL);
        const int scanned = p.outputs.empty() ? -1 : p.outputs.back();
        if (scanned >= 0 && p.code[static_cast<std::size_t>(scanned)].kind == Instr::Kind::Scan &&
            chance(qg, 0.5)) {
            const int rank = st.nodes[static_cast<std::size_t>(scanned)]->rank();
            p.outputs.pop_back();
            const std::size_t before = p.outputs.size();
            append_output(qg, [&](Rng& r) {
                Instr ins;
                ins.kind = Instr::Kind::Reduce;
                ins.op = chance(r, 0.5) ? Op::Sum : Op::Mean;
                ins.axes = 1u << (rank - 1);
                ins.keepdims = chance(r, 0.3);
                ins.args = {scanned};
                return ins;
            });
            if (p.outputs.size() == before)
                p.outputs.push_back(scanned);  // no reduction built: the scan stays a result
        }
    }
    // A small share scatters: scatter or scatter_add (clamped) of values into an earlier result along one of
    // its axes (a draw builds only where the shapes fit: values of x's extents off the axis, an index that
    // broadcasts to them).
    Rng rg(seed * 0xA0761D6478BD642FULL + 0xE7037ED1A0B428DBULL);
    if (chance(rg, 0.08))
        append_output(rg, [&](Rng& r) {
            Instr ins;
            ins.kind = Instr::Kind::Scatter;
            ins.op = chance(r, 0.5) ? Op::ScatterAdd : Op::Scatter;
            ins.key = r();
            const int x = operand(r, p.code.size());
            ins.args = {x, operand(r, p.code.size()), chance(r, 0.5) ? x : operand(r, p.code.size())};
            return ins;
        });
    return collect(p);
}

}  // namespace loom::fuzz
