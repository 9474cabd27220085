// Random elementwise programs for the differential fuzzer: generation, building into IR over filled
// tensors, approximation levels that keep every comparison sound, and dead-code collection.
#include "fuzz_program.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/op.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

namespace loom::fuzz {

namespace {

using ir::Op;
using Rng = std::mt19937_64;
constexpr std::int64_t kNone = ir::SliceSpec::kNone;

int uniform(Rng& g, int lo, int hi) { return lo + static_cast<int>(g() % static_cast<std::uint64_t>(hi - lo + 1)); }
bool chance(Rng& g, double p) { return static_cast<double>(g() >> 11) * 0x1.0p-53 < p; }
template <class T>
const T& pick(Rng& g, const std::vector<T>& v) {
    return v[static_cast<std::size_t>(g() % v.size())];
}

DType random_dtype(Rng& g) {
    // float32 twice as often as the others: most user code is float32.
    static const std::vector<DType> w{DType::Bool,    DType::Int8,    DType::UInt8,   DType::Int32,  DType::Int64,
                                      DType::Float16, DType::BFloat16, DType::Float32, DType::Float32, DType::Float64};
    return pick(g, w);
}

/// A permutation of `rank` dimensions chosen by `key`.
std::vector<std::int64_t> permutation(std::uint64_t key, int rank) {
    std::vector<std::int64_t> p(static_cast<std::size_t>(rank));
    for (int k = 0; k < rank; ++k) p[static_cast<std::size_t>(k)] = k;
    Rng g(key);
    for (int k = rank - 1; k > 0; --k) std::swap(p[static_cast<std::size_t>(k)], p[g() % static_cast<std::uint64_t>(k + 1)]);
    return p;
}

/// Host tensor of special values of a dtype (NaN, infinities, signed zeros, subnormals, extremes).
Tensor specials(DType d) {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> v;
    if (d == DType::Int64) {
        const std::vector<std::int64_t> raw{INT64_MIN, INT64_MAX, -1, 0, 1, INT64_MIN + 1, (std::int64_t{1} << 53) + 1, 64};
        Tensor t = Tensor::host({static_cast<std::int64_t>(raw.size())}, d);
        std::memcpy(t.data(), raw.data(), raw.size() * sizeof(std::int64_t));
        return t;
    }
    if (is_float(d)) v = {nan, inf, -inf, -0.0, 0.0, 1.0, -1.0, 0.5, 2.5, 65504.0, 1e-40, 6e-8, 3e38, 1e300, -1e10};
    else if (d == DType::Bool) v = {0, 1};
    else v = {-2147483648.0, 2147483647.0, -128, 127, 255, -1, 0, 1, 8, 31, 33, 64};  // saturate to the dtype
    Tensor f = Tensor::host({static_cast<std::int64_t>(v.size())}, DType::Float64);
    std::memcpy(f.data(), v.data(), v.size() * sizeof(double));
    return reference::cast(f, d);
}

testing::Random distribution(DType d) {
    switch (d) {
        case DType::Bool: return testing::Random::normal();
        case DType::Int8: return testing::Random::uniform(-128, 127);
        case DType::UInt8: return testing::Random::uniform(0, 255);
        case DType::Int32: return testing::Random::uniform(-1000, 1000);
        case DType::Int64: return testing::Random::uniform(-1e6, 1e6);
        case DType::Float16: case DType::BFloat16: case DType::Float32: case DType::Float64:
            return testing::Random::normal(0.0, 2.0);
    }
    return {};
}

/// A host tensor of `numel` random values of `d` with about one element in eight a special value.
Tensor random_storage(std::int64_t numel, DType d, std::uint64_t seed) {
    Tensor t = Tensor::host({numel}, d);
    if (numel == 0) return t;
    testing::fill_random(t, seed, distribution(d));
    const Tensor s = specials(d);
    const auto w = static_cast<std::int64_t>(itemsize(d));
    Rng g(seed ^ 0x5eed5eedULL);
    auto* dst = static_cast<unsigned char*>(t.data());
    const auto* src = static_cast<const unsigned char*>(s.data());
    for (std::int64_t i = 0; i < numel; ++i)
        if (g() % 8 == 0)
            std::memcpy(dst + i * w, src + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(s.numel())) * w,
                        static_cast<std::size_t>(w));
    return t;
}

/// A tensor of `shape` laid out as `layout` over freshly filled storage on `device`.
Tensor make_tensor(const Shape& shape, DType d, Layout layout, std::uint64_t key, std::uint64_t seed, Device device,
                   Layout* used) {
    const int r = static_cast<int>(shape.size());
    const std::int64_t n = numel(shape);
    Strides strides = contiguous_strides(shape);
    std::int64_t offset = 0, storage = n;
    if (layout == Layout::Offset1) {
        offset = 1;
        storage = n + 1;
    } else if (layout == Layout::ColMajor && r >= 2) {
        std::int64_t s = 1;
        for (int k = 0; k < r; ++k) {
            strides[static_cast<std::size_t>(k)] = s;
            s *= shape[static_cast<std::size_t>(k)];
        }
    } else if (layout == Layout::Padded && r >= 2 && n > 0) {
        strides[static_cast<std::size_t>(r - 1)] = 1;
        strides[static_cast<std::size_t>(r - 2)] = shape[static_cast<std::size_t>(r - 1)] + 3;
        for (int k = r - 3; k >= 0; --k)
            strides[static_cast<std::size_t>(k)] = strides[static_cast<std::size_t>(k + 1)] * shape[static_cast<std::size_t>(k + 1)];
        storage = strides[0] * shape[0];
    } else if (layout == Layout::Stride0 && n > 1) {
        std::vector<int> wide;
        for (int k = 0; k < r; ++k)
            if (shape[static_cast<std::size_t>(k)] > 1) wide.push_back(k);
        const int dim = wide[key % wide.size()];
        Shape small = shape;
        small[static_cast<std::size_t>(dim)] = 1;
        strides = contiguous_strides(small);
        strides[static_cast<std::size_t>(dim)] = 0;
        storage = numel(small);
    } else {
        layout = Layout::Contiguous;
    }
    *used = layout;
    Tensor store = random_storage(storage, d, seed);
    if (device.is_cuda()) store = store.to(device);
    return store.as_strided(shape, strides, offset);
}

/// Approximation levels. 0: the GPU must match the reference bit for bit (every op exact or correctly
/// rounded). 1: a function (rule FloatMath other than sqrt) of level-0 operands, or a view, float cast,
/// neg/abs/relu/min/max/clamp/where of level-1 values: the error is relative, within the ulps that
/// testing::tolerance_for derives. 2: gelu and gelu_tanh, whose error after the cancellation in
/// `1 + erf` is only bounded absolutely: they pass only through views that keep every element (no
/// slices), neg, abs and float casts. Everything else (arithmetic that adds errors or cancels, functions
/// of approximate values, discrete results such as compares, rounding and integer casts) takes level-0
/// operands only, so no comparison depends on the first-order ulp model being tight.
int level_of(const Instr& ins, const std::vector<int>& lv, const std::vector<DType>& arg_dtypes, DType to) {
    const int mx = lv.empty() ? 0 : *std::max_element(lv.begin(), lv.end());
    switch (ins.kind) {
        case Instr::Kind::Input: case Instr::Kind::Scalar: case Instr::Kind::Constant: return 0;
        case Instr::Kind::View: return ins.view == ViewKind::Slice && mx > 1 ? -1 : mx;
        case Instr::Kind::Cast: return is_float(to) && is_float(arg_dtypes[0]) ? mx : (mx == 0 ? 0 : -1);
        case Instr::Kind::Elementwise: break;
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
        case PreView::None: break;
        case PreView::Permute:
            pi.perm = permutation(ins.key, r);
            for (int k = 0; k < r; ++k) pi.shape[static_cast<std::size_t>(pi.perm[static_cast<std::size_t>(k)])] = t[static_cast<std::size_t>(k)];
            break;
        case PreView::Slice: {
            const int d = static_cast<int>(ins.key % static_cast<std::uint64_t>(r));
            const std::int64_t o = ins.start1 ? 1 : 0, s = ins.step == 0 ? 2 : ins.step;
            pi.shape[static_cast<std::size_t>(d)] = t[static_cast<std::size_t>(d)] * std::abs(s) + o;
            pi.spec.assign(static_cast<std::size_t>(d + 1), ir::SliceSpec{});
            pi.spec[static_cast<std::size_t>(d)] =
                s > 0 ? ir::SliceSpec{o, kNone, s} : ir::SliceSpec{pi.shape[static_cast<std::size_t>(d)] - 1 - o, kNone, s};
            break;
        }
        case PreView::Reshape:
            if (ins.key % 2 == 0 || r == 1) pi.shape = {numel(t)};
            else pi.shape = {t.back(), numel(t) / std::max<std::int64_t>(t.back(), 1)};
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
        case ViewKind::Transpose: return ir::transpose(a);
        case ViewKind::Slice: {
            if (r == 0) return nullptr;
            const int d = static_cast<int>(ins.key % static_cast<std::uint64_t>(r));
            const std::int64_t step = ins.step == 0 ? 1 : ins.step;
            std::vector<ir::SliceSpec> spec(static_cast<std::size_t>(d + 1));
            spec[static_cast<std::size_t>(d)] = {ins.start1 ? (step > 0 ? 1 : -2) : kNone, kNone, step};
            return ir::slice(a, spec);
        }
        case ViewKind::Flatten: return ir::reshape(a, {-1});
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
    }
    return nullptr;
}

/// Incremental build state (generation adds instructions one by one; build() adds them all).
struct State {
    std::vector<ir::NodePtr> nodes;
    std::vector<int> level;
    std::vector<bool> has_input;
    std::vector<std::string> input_lines;
    int inputs = 0;

    /// Adds instruction `i` of `p`; false when it is not valid. `bind`: make tensors on `device`.
    bool add(const Program& p, std::size_t i, bool bind, Device device) {
        const Instr& ins = p.code[i];
        std::vector<ir::NodePtr> args;
        std::vector<int> lv;
        std::vector<DType> dts;
        bool in = false;
        for (int a : ins.args) {
            if (a < 0 || static_cast<std::size_t>(a) >= nodes.size()) return false;
            args.push_back(nodes[static_cast<std::size_t>(a)]);
            lv.push_back(level[static_cast<std::size_t>(a)]);
            dts.push_back(args.back()->dtype());
            in = in || has_input[static_cast<std::size_t>(a)];
        }
        ir::NodePtr n;
        try {
            switch (ins.kind) {
                case Instr::Kind::Input: {
                    Shape t;
                    for (std::size_t d = static_cast<std::size_t>(std::max(ins.drop, 0)); d < p.base.size(); ++d)
                        t.push_back(ins.ones >> d & 1u ? 1 : p.base[d]);
                    const PreImage pi = pre_image(ins, t);
                    const std::string label = fmt::format("in{}", inputs++);
                    std::shared_ptr<const void> payload;
                    if (bind) {
                        Layout used = Layout::Contiguous;
                        const Tensor tensor = make_tensor(pi.shape, ins.dtype, ins.layout, ins.key,
                                                          p.data_seed + 7919 * static_cast<std::uint64_t>(i), device, &used);
                        input_lines.push_back(fmt::format("{}: {} {} strides [{}] offset {} ({}{})", label,
                                                          name(ins.dtype), to_string(pi.shape), fmt::join(tensor.strides(), ", "),
                                                          tensor.offset(), layout_name(used),
                                                          ins.pre == PreView::None || t.empty() ? "" : ", viewed"));
                        payload = std::static_pointer_cast<const void>(tensor.impl());
                    }
                    n = ir::input(ins.dtype, pi.shape, label, payload);
                    if (!t.empty() && ins.pre == PreView::Permute) n = ir::permute(n, pi.perm);
                    if (!t.empty() && ins.pre == PreView::Slice) n = ir::slice(n, pi.spec);
                    if (!t.empty() && ins.pre == PreView::Reshape) n = ir::reshape(n, t);
                    in = true;
                    break;
                }
                case Instr::Kind::Scalar: n = ir::scalar(ins.value, ins.dtype); break;
                case Instr::Kind::Constant: n = ir::constant(ins.value, ins.dtype); break;
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
                        case ir::OpKind::Unary: n = ir::unary(ins.op, args[0]); break;
                        case ir::OpKind::Binary: n = ir::binary(ins.op, args[0], args[1]); break;
                        case ir::OpKind::Ternary: n = ir::ternary(ins.op, args[0], args[1], args[2]); break;
                        case ir::OpKind::Leaf: case ir::OpKind::View: case ir::OpKind::Reduce: return false;
                    }
                    break;
                }
            }
        } catch (const Error&) {
            return false;  // the constructors reject this combination: not a valid graph
        }
        if (!n) return false;
        const int l = level_of(ins, lv, dts, ins.dtype);
        if (l < 0) return false;
        nodes.push_back(n);
        level.push_back(l);
        has_input.push_back(in);
        return true;
    }
};

ir::ScalarValue random_value(Rng& g, DType t) {
    const ir::Loc loc = ir::Loc::current();
    if (t == DType::Bool) return ir::make_scalar_value(static_cast<std::int64_t>(g() % 2), t, "fuzz", loc);
    if (is_float(t)) {
        if (chance(g, 0.3)) {
            const double inf = std::numeric_limits<double>::infinity();
            static const std::vector<double> sp{std::numeric_limits<double>::quiet_NaN(), inf, -inf, -0.0, 0.0, 1e-40,
                                                65504.0, 0.5, -1.0, 1e30};
            return ir::make_scalar_value(pick(g, sp), t, "fuzz", loc);
        }
        return ir::make_scalar_value(static_cast<double>(uniform(g, -300, 300)) / 37.0, t, "fuzz", loc);
    }
    if (chance(g, 0.25)) {
        switch (t) {
            case DType::Int8: return ir::ScalarValue::of_int(chance(g, 0.5) ? -128 : 127);
            case DType::UInt8: return ir::ScalarValue::of_int(255);
            case DType::Int32: return ir::ScalarValue::of_int(chance(g, 0.5) ? INT32_MIN : INT32_MAX);
            case DType::Int64: return ir::ScalarValue::of_int(chance(g, 0.5) ? INT64_MIN : INT64_MAX);
            default: break;
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

/// An operand index among the first `n` instructions, biased towards recent ones.
int operand(Rng& g, std::size_t n) {
    const auto a = static_cast<int>(g() % n), b = static_cast<int>(g() % n);
    return chance(g, 0.75) ? std::max(a, b) : a;
}

}  // namespace

std::string_view view_name(ViewKind v) {
    switch (v) {
        case ViewKind::Permute: return "permute";
        case ViewKind::Transpose: return "transpose";
        case ViewKind::Slice: return "slice";
        case ViewKind::Flatten: return "flatten";
        case ViewKind::MergeLast: return "merge last two";
        case ViewKind::SplitFirst: return "split first";
        case ViewKind::InsertUnit: return "insert unit";
        case ViewKind::Broadcast: return "broadcast";
    }
    return "?";
}

std::string_view layout_name(Layout l) {
    switch (l) {
        case Layout::Contiguous: return "contiguous";
        case Layout::Offset1: return "offset 1, misaligned";
        case Layout::ColMajor: return "column-major";
        case Layout::Padded: return "padded rows";
        case Layout::Stride0: return "a stride-0 dimension";
    }
    return "?";
}

Program generate(std::uint64_t seed, const GenOptions& opt) {
    Rng g(seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL);
    Program p;
    p.data_seed = g();
    static const std::vector<std::int64_t> extents{1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 32, 33, 64, 100, 128, 257};
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
        static const std::vector<PreView> pre{PreView::None, PreView::None, PreView::None, PreView::Permute, PreView::Slice,
                                              PreView::Reshape};
        in.pre = pick(g, pre);
        static const std::vector<Layout> lay{Layout::Contiguous, Layout::Contiguous, Layout::Contiguous, Layout::Offset1,
                                             Layout::ColMajor,   Layout::Padded,     Layout::Stride0};
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
                for (int a = 0; a < ir::info(ins.op).arity; ++a) ins.args.push_back(operand(g, p.code.size()));
                // Chains: the first operand is often the previous result, so that graphs grow deep.
                if (chance(g, 0.5)) ins.args[static_cast<std::size_t>(g() % ins.args.size())] = static_cast<int>(p.code.size() - 1);
            }
            p.code.push_back(ins);
            if (st.add(p, p.code.size() - 1, false, Device::cpu())) break;
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
        if (!st.has_input[i]) continue;
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
    return collect(p);
}

std::optional<Built> build(const Program& p, Device device) {
    State st;
    for (std::size_t i = 0; i < p.code.size(); ++i)
        if (!st.add(p, i, true, device)) return std::nullopt;
    Built b;
    for (int o : p.outputs) {
        if (o < 0 || static_cast<std::size_t>(o) >= p.code.size() || !st.has_input[static_cast<std::size_t>(o)])
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
    for (std::size_t i = 0; i < p.code.size(); ++i) {
        if (!live[i]) continue;
        index[i] = static_cast<int>(q.code.size());
        Instr ins = p.code[i];
        for (int& a : ins.args) a = a >= 0 && static_cast<std::size_t>(a) < i ? index[static_cast<std::size_t>(a)] : -1;
        q.code.push_back(std::move(ins));
    }
    for (int o : p.outputs) {
        const int k = o >= 0 && static_cast<std::size_t>(o) < p.code.size() ? index[static_cast<std::size_t>(o)] : -1;
        if (k >= 0 && std::find(q.outputs.begin(), q.outputs.end(), k) == q.outputs.end()) q.outputs.push_back(k);
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
                what = fmt::format("input {} ones {:#x} drop {} pre-view {} layout {}", name(ins.dtype), ins.ones, ins.drop,
                                   static_cast<int>(ins.pre), layout_name(ins.layout));
                break;
            case Instr::Kind::Scalar: what = fmt::format("scalar {} {}", name(ins.dtype), ins.value.as_double()); break;
            case Instr::Kind::Constant: what = fmt::format("constant {} {}", name(ins.dtype), ins.value.as_double()); break;
            case Instr::Kind::Elementwise: what = std::string(ir::op_name(ins.op)); break;
            case Instr::Kind::Cast: what = fmt::format("cast to {}", name(ins.dtype)); break;
            case Instr::Kind::View: what = fmt::format("view {} (key {}, step {})", view_name(ins.view), ins.key % 1000, ins.step); break;
        }
        s += fmt::format("  #{} = {} ({})\n", i, what, fmt::join(ins.args, ", "));
    }
    s += fmt::format("  outputs ({})\n", fmt::join(p.outputs, ", "));
    return s;
}

}  // namespace loom::fuzz
