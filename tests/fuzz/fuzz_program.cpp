// Random programs for the differential fuzzer: generation (pointwise and reduction programs), building into
// IR over filled tensors, approximation levels that keep every comparison sound, and dead-code collection.
#include "fuzz_program.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "loom/ir/build.hpp"
#include "loom/ir/elementwise_impl.hpp"
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

DType random_reduce_dtype(Rng& g) {
    // Every dtype: float32 and the half dtypes (whose values fused kernels hold in float registers) twice as
    // often as the others.
    static const std::vector<DType> w{DType::Float32, DType::Float32, DType::Float16, DType::Float16,
                                      DType::BFloat16, DType::BFloat16, DType::Float64, DType::Int8,
                                      DType::UInt8,   DType::Int32,   DType::Int64,   DType::Bool};
    return pick(g, w);
}

/// Host tensor of special values of a dtype (NaN, infinities, signed zeros, subnormals, extremes). `tame`
/// (reduction programs): no float value near the overflow threshold, where an approximate factor of 1
/// could round to infinity on one side only.
Tensor specials(DType d, bool tame) {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> v;
    if (d == DType::Int64) {
        const std::vector<std::int64_t> raw{INT64_MIN, INT64_MAX, -1, 0, 1, INT64_MIN + 1, (std::int64_t{1} << 53) + 1, 64};
        Tensor t = Tensor::host({static_cast<std::int64_t>(raw.size())}, d);
        std::memcpy(t.data(), raw.data(), raw.size() * sizeof(std::int64_t));
        return t;
    }
    if (is_float(d) && tame) v = {nan, inf, -inf, -0.0, 0.0, 1.0, -1.0, 0.5, 2.5, 1e-40, 6e-8};
    else if (is_float(d)) v = {nan, inf, -inf, -0.0, 0.0, 1.0, -1.0, 0.5, 2.5, 65504.0, 1e-40, 6e-8, 3e38, 1e300, -1e10};
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

std::uint64_t mix64(std::uint64_t x) {  // splitmix64
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// Fills the contiguous host tensor `t` from `seed` as testing::fill_random does (the same distributions, the
/// same conversion to the dtype), from a counter-based generator instead of mt19937_64 streams: a hash of the
/// seed and the element's index, normal values made in pairs by Box-Muller. Three times cheaper, and filling
/// inputs of up to a million elements was a tenth of the fuzzer's time.
void fill_values(Tensor& t, std::uint64_t seed, const testing::Random& dist) {
    namespace ew = ir::ew;
    const std::int64_t n = t.numel();
    const std::uint64_t base = mix64(seed);
    auto unit = [](std::uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; };  // [0, 1)
    ew::visit_dtype(t.dtype(), [&]<DType D>() {
        using S = ew::storage_t<D>;
        auto* p = static_cast<S*>(t.data());
        if constexpr (D == DType::Bool) {
            for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<S>(mix64(base + static_cast<std::uint64_t>(i)) >> 63);
        } else if constexpr (is_float(D)) {
            auto put = [&](std::int64_t i, double v) { p[i] = ew::store<D>(ew::cast<D, DType::Float64>(v)); };
            for (std::int64_t i = 0; i < n; i += 2) {
                const std::uint64_t h = mix64(base + static_cast<std::uint64_t>(i));
                const double u = unit(h), w = unit(mix64(h));
                if (dist.kind == testing::Random::Kind::Uniform) {
                    put(i, dist.a + (dist.b - dist.a) * u);
                    if (i + 1 < n) put(i + 1, dist.a + (dist.b - dist.a) * w);
                } else {
                    const double r = dist.b * std::sqrt(-2.0 * std::log(1.0 - u)), a = 6.283185307179586 * w;
                    put(i, dist.a + r * std::cos(a));
                    if (i + 1 < n) put(i + 1, dist.a + r * std::sin(a));
                }
            }
        } else {
            using C = ew::compute_t<D>;
            const double lo_d = std::max(std::ceil(dist.a), static_cast<double>(std::numeric_limits<C>::lowest()));
            const double hi_d = std::min(std::floor(dist.b), static_cast<double>(std::numeric_limits<C>::max()));
            const auto lo = ew::float_to_int<std::int64_t>(lo_d);
            const auto hi = std::max(lo, ew::float_to_int<std::int64_t>(hi_d));
            const std::uint64_t range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1u;
            for (std::int64_t i = 0; i < n; ++i)
                p[i] = static_cast<S>(static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) +
                                                                mix64(base + static_cast<std::uint64_t>(i)) % range));
        }
    });
}

/// A host tensor of `numel` random values of `d` with about one element in eight a special value. `tame`
/// (reduction programs, whose rows would otherwise nearly all hold a NaN): the tame specials, one element
/// in 8, 256 or 8192 or none, by the seed.
Tensor random_storage(std::int64_t numel, DType d, std::uint64_t seed, bool tame) {
    Tensor t = Tensor::host({numel}, d);
    if (numel == 0) return t;
    fill_values(t, seed, distribution(d));
    const Tensor s = specials(d, tame);
    const auto w = static_cast<std::int64_t>(itemsize(d));
    Rng g(seed ^ 0x5eed5eedULL);
    static const std::uint64_t rates[] = {0, 8, 256, 8192};
    const std::uint64_t one_in = tame ? rates[g() % 4] : 8;
    if (one_in == 0) return t;
    auto* dst = static_cast<unsigned char*>(t.data());
    const auto* src = static_cast<const unsigned char*>(s.data());
    // Each element is special with probability 1 / one_in, independently: the gaps between special elements are
    // geometric, so they are drawn instead of a coin per element (the inputs of the largest graphs have a million
    // elements, and the generator was a tenth of the fuzzer's time).
    const double log_keep = std::log1p(-1.0 / static_cast<double>(one_in));
    auto gap = [&] {
        const double u = 1.0 - static_cast<double>(g() >> 11) * 0x1.0p-53;  // (0, 1]
        const double k = std::floor(std::log(u) / log_keep);
        return k < static_cast<double>(numel) ? static_cast<std::int64_t>(k) : numel;
    };
    for (std::int64_t i = gap(); i < numel; i += 1 + gap())
        std::memcpy(dst + i * w, src + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(s.numel())) * w,
                    static_cast<std::size_t>(w));
    return t;
}

/// A tensor of `shape` laid out as `layout` over freshly filled storage on `device`.
Tensor make_tensor(const Shape& shape, DType d, Layout layout, std::uint64_t key, std::uint64_t seed, bool tame,
                   Device device, Layout* used) {
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
    Tensor store = random_storage(storage, d, seed, tame);
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
/// Facts (below) carry the signs and bounds these rules need; they are derived from the instructions, so
/// that a shrunk program that breaks a pattern is rejected rather than compared unsoundly.
int level_of(const Instr& ins, const std::vector<int>& lv, const std::vector<DType>& arg_dtypes, DType to) {
    const int mx = lv.empty() ? 0 : *std::max_element(lv.begin(), lv.end());
    switch (ins.kind) {
        case Instr::Kind::Input: case Instr::Kind::Scalar: case Instr::Kind::Constant: return 0;
        case Instr::Kind::View: return ins.view == ViewKind::Slice && mx > 1 ? -1 : mx;
        case Instr::Kind::Cast: return is_float(to) && is_float(arg_dtypes[0]) ? mx : (mx == 0 ? 0 : -1);
        case Instr::Kind::Reduce: return mx == 0 ? 0 : -1;  // reduction programs: see State::wide_level
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

/// What the rules for approximate values of reduction programs know about a float node's values (NaN is
/// allowed in each).
struct Facts {
    bool nonneg = false;  // every value >= 0
    bool nonpos = false;  // every value <= 0
    bool unit = false;    // every value in [-1, 1]
    bool norm = false;    // a * rsqrt(mean(a * a, keepdims) + s) with s > 0, possibly times level-0 values
    bool steady = false;  // approximate, but never 0 on one side only (rsqrt and products of such values)
};

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

/// Incremental build state (generation adds instructions one by one; build() adds them all).
struct State {
    std::vector<ir::NodePtr> nodes;
    std::vector<int> level;
    std::vector<Facts> facts;
    std::vector<bool> has_input;
    std::vector<bool> has_reduce;  // a reduction on some path from the inputs
    std::vector<std::string> input_lines;
    int inputs = 0;

    /// Adds instruction `i` of `p`; false when it is not valid. `bind`: make tensors on `device`.
    bool add(const Program& p, std::size_t i, bool bind, Device device) {
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
                    for (std::size_t d = static_cast<std::size_t>(std::max(ins.drop, 0)); d < p.base.size(); ++d)
                        t.push_back(ins.ones >> d & 1u ? 1 : p.base[d]);
                    const PreImage pi = pre_image(ins, t);
                    const std::string label = fmt::format("in{}", inputs++);
                    std::shared_ptr<const void> payload;
                    if (bind) {
                        Layout used = Layout::Contiguous;
                        const std::uint64_t seed = p.data_seed + 7919 * static_cast<std::uint64_t>(i);
                        const Tensor tensor =
                            make_tensor(pi.shape, ins.dtype, ins.layout, ins.key, seed, p.reductions, device, &used);
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
                        case ir::OpKind::Leaf: case ir::OpKind::View: case ir::OpKind::Reduce:
                        case ir::OpKind::Product: return false;
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

    /// Forgets instructions from `n` on (generation backs out of a pattern that did not build).
    void truncate(const Program& p, std::size_t n) {
        nodes.resize(n);
        level.resize(n);
        facts.resize(n);
        has_input.resize(n);
        has_reduce.resize(n);
        inputs = 0;
        for (std::size_t i = 0; i < n; ++i) inputs += p.code[i].kind == Instr::Kind::Input;
    }

private:
    static bool is(const Program& p, int i, Instr::Kind k, Op op) {
        if (i < 0 || static_cast<std::size_t>(i) >= p.code.size()) return false;
        const Instr& x = p.code[static_cast<std::size_t>(i)];
        return x.kind == k && x.op == op;
    }
    static bool is_ew(const Program& p, int i, Op op) { return is(p, i, Instr::Kind::Elementwise, op); }
    static bool is_red(const Program& p, int i, Op op) {
        return is(p, i, Instr::Kind::Reduce, op) && p.code[static_cast<std::size_t>(i)].keepdims;
    }
    /// A scalar or constant of value > 0.
    static bool is_positive_leaf(const Program& p, int i) {
        if (i < 0 || static_cast<std::size_t>(i) >= p.code.size()) return false;
        const Instr& x = p.code[static_cast<std::size_t>(i)];
        return (x.kind == Instr::Kind::Scalar || x.kind == Instr::Kind::Constant) && x.value.as_double() > 0.0;
    }
    const Instr& at(const Program& p, int i) const { return p.code[static_cast<std::size_t>(i)]; }
    const Facts& f(int i) const { return facts[static_cast<std::size_t>(i)]; }
    bool exact(int i) const { return level[static_cast<std::size_t>(i)] == 0; }
    const ir::Node& node(int i) const { return *nodes[static_cast<std::size_t>(i)]; }

    /// `s` is sum(exp(x - max(x, A, keepdims)), A, keepdims) for float x: every row holds exp(0) = 1, so
    /// s >= 1 (or NaN).
    bool softmax_sum(const Program& p, int s) const {
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
    bool normalized(const Program& p, std::size_t i) const {
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

    Facts facts_of(const Program& p, std::size_t i) const {
        const Instr& ins = p.code[i];
        Facts r;
        auto arg = [&](std::size_t k) -> const Facts& { return f(ins.args[k]); };
        switch (ins.kind) {
            case Instr::Kind::Input: return r;
            case Instr::Kind::Scalar: case Instr::Kind::Constant: {
                const double v = ins.value.as_double();
                r.nonneg = v >= 0.0 || std::isnan(v);
                r.nonpos = v <= 0.0 || std::isnan(v);
                r.unit = std::fabs(v) <= 1.0 || std::isnan(v);
                return r;
            }
            case Instr::Kind::View: return arg(0);
            case Instr::Kind::Cast:
                if (!is_float(node(ins.args[0]).dtype())) return r;
                r = arg(0);
                return r;
            case Instr::Kind::Reduce: {
                const Facts& a = arg(0);
                switch (ins.op) {
                    case Op::Sum: r.nonneg = a.nonneg; r.nonpos = a.nonpos; r.steady = a.steady && a.nonneg; break;
                    case Op::Prod: r.nonneg = a.nonneg; break;
                    case Op::Mean:
                        r.nonneg = a.nonneg;
                        r.nonpos = a.nonpos;
                        r.unit = a.unit;
                        r.steady = a.steady && a.nonneg;
                        break;
                    case Op::Min: case Op::Max: r = a; r.norm = false; break;
                    default: break;
                }
                return r;
            }
            case Instr::Kind::Elementwise: break;
        }
        switch (ins.op) {
            case Op::Exp: case Op::Exp2: r.nonneg = true; r.unit = arg(0).nonpos; break;
            case Op::Sigmoid: r.nonneg = r.unit = true; break;
            case Op::Tanh: case Op::Sin: case Op::Cos: case Op::Erf: r.unit = true; break;
            case Op::Cosh: case Op::Sqrt: r.nonneg = true; break;
            case Op::Rsqrt: r.nonneg = r.steady = true; break;
            case Op::Abs: r.nonneg = true; r.unit = arg(0).unit; r.steady = arg(0).steady; break;
            case Op::Relu: r.nonneg = true; r.unit = arg(0).unit; break;
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
                r.unit = arg(0).nonneg && softmax_sum(p, ins.args[1]) &&
                         at(p, ins.args[1]).args[0] == ins.args[0];
                r.steady = (arg(0).steady || exact(ins.args[0])) && (exact(ins.args[1]) || softmax_sum(p, ins.args[1]));
                break;
            case Op::Add: r.nonneg = arg(0).nonneg && arg(1).nonneg; r.nonpos = arg(0).nonpos && arg(1).nonpos; break;
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
            default: break;
        }
        return r;
    }

    /// The approximation level of instruction `i` of a reduction program (see "approximation levels").
    int wide_level(const Program& p, std::size_t i, const std::vector<int>& lv, const std::vector<DType>& dts) const {
        const Instr& ins = p.code[i];
        const int mx = lv.empty() ? 0 : *std::max_element(lv.begin(), lv.end());
        if (ins.kind == Instr::Kind::Reduce) {
            switch (ins.op) {
                case Op::Sum: case Op::Mean: return mx == 0 ? 0 : (mx == 1 && f(ins.args[0]).nonneg ? 1 : -1);
                case Op::Min: case Op::Max: return mx <= 1 ? mx : -1;
                default: return mx == 0 ? 0 : -1;
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
            case Op::Add: case Op::Sub:
                for (std::size_t k = 0; k < 2; ++k)
                    if (lv[k] > 0 && !f(ins.args[k]).unit && !f(ins.args[k]).norm) return -1;
                return 1;
            default: return -1;
        }
    }
};

/// A random value of `t`; `tame` (reduction programs): floats rarely special and never near the overflow
/// threshold.
ir::ScalarValue random_value(Rng& g, DType t, bool tame = false) {
    const ir::Loc loc = ir::Loc::current();
    if (t == DType::Bool) return ir::make_scalar_value(static_cast<std::int64_t>(g() % 2), t, "fuzz", loc);
    if (is_float(t)) {
        if (tame) {
            if (chance(g, 0.05)) {
                static const std::vector<double> sp{std::numeric_limits<double>::quiet_NaN(), -0.0, 0.0, 1e-40,
                                                    std::numeric_limits<double>::infinity()};
                return ir::make_scalar_value(pick(g, sp), t, "fuzz", loc);
            }
            return ir::make_scalar_value(static_cast<double>(uniform(g, -300, 300)) / 64.0, t, "fuzz", loc);
        }
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

/// The reduction generator: moves that append patterns of instructions (a reduction with a prologue, an
/// epilogue on reduced values, several reductions of one operand and axis set, a reduced value broadcast
/// back over its operand, normalizations), each backed out whole when a constructor, the approximation
/// rules or the size cap rejects one of its instructions.
class ReduceGen {
public:
    ReduceGen(std::uint64_t seed, const GenOptions& opt)
        : g_(seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL), opt_(opt) {}

    Program run() {
        p_.reductions = true;
        p_.data_seed = g_();
        choose_base();
        const int n_inputs = uniform(g_, 1, 3);
        for (int k = 0; k < n_inputs; ++k) add_input(k == 0 || chance(g_, 0.7));
        for (int attempt = 0; attempt < 20 && size() == 0; ++attempt) add_input(true);  // every move needs one
        if (size() == 0) throw std::logic_error(fmt::format("no input of base shape {} builds", to_string(p_.base)));
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
    Program p_;
    State st_;
    std::int64_t cap_ = 0;  // the largest node a move may make

    int size() const { return static_cast<int>(p_.code.size()); }
    const ir::Node& node(int i) const { return *st_.nodes[static_cast<std::size_t>(i)]; }
    int rank(int i) const { return node(i).rank(); }
    DType float_dtype(int i) const { return is_float(node(i).dtype()) ? node(i).dtype() : DType::Float32; }
    bool any_reduction() const {
        return std::find(st_.has_reduce.begin(), st_.has_reduce.end(), true) != st_.has_reduce.end();
    }

    /// Appends `ins`: its index, or -1 (nothing appended) when it does not build or is larger than the cap.
    int emit(Instr ins) {
        p_.code.push_back(std::move(ins));
        const std::size_t i = p_.code.size() - 1;
        if (st_.add(p_, i, false, Device::cpu()) && st_.nodes.back()->numel() <= cap_) return static_cast<int>(i);
        st_.truncate(p_, i);
        p_.code.pop_back();
        return -1;
    }
    void back_to(int n) {
        p_.code.resize(static_cast<std::size_t>(n));
        st_.truncate(p_, static_cast<std::size_t>(n));
    }
    int ew(Op op, std::vector<int> args) {
        for (int a : args)
            if (a < 0) return -1;
        Instr x;
        x.kind = Instr::Kind::Elementwise;
        x.op = op;
        x.args = std::move(args);
        return emit(x);
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
        static const std::vector<std::int64_t> extents{0,  1,  2,   3,   4,   5,    7,    8,   16, 31,
                                                       32, 33, 64, 100, 128, 257, 1025, 4097, 8193};
        const int r = uniform(g_, 1, 4);
        const std::int64_t limit = chance(g_, 1.0 / 16) ? opt_.max_numel * 64 : opt_.max_numel;
        cap_ = std::max(limit, 4 * opt_.max_numel);
        for (int d = 0; d < r; ++d) {
            std::int64_t e = pick(g_, extents);
            while (e == 0 && !chance(g_, 0.25)) e = pick(g_, extents);  // zero-size: about one graph in 20
            p_.base.push_back(e);
        }
        while (numel(p_.base) > limit) {  // shrink the largest extent, or another, to a smaller one of the list
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
        static const std::vector<Layout> lay{Layout::Contiguous, Layout::Contiguous, Layout::Contiguous, Layout::Offset1,
                                             Layout::ColMajor,   Layout::Padded,     Layout::Stride0};
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
        static const std::vector<PreView> pre{PreView::None, PreView::None, PreView::None, PreView::Permute,
                                              PreView::Slice, PreView::Reshape};
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
            const auto e = t[static_cast<std::size_t>(k)], be = p_.base[static_cast<std::size_t>(in.drop + k)];
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
        if (chance(g_, 0.5)) x = choose([&](int i) { return data(i) && is_half(node(i).dtype()) && st_.level[static_cast<std::size_t>(i)] == 0; });
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

    /// A comparison against a reduction broadcast back (`x == max(x, axes, true)`, `x >= mean(x, axes, true)`,
    /// with keepdims or over leading axes, which broadcast back as well), then often a count or another
    /// reduction of the comparison, a `where` on it, or a cast of it.
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
                return red(pick(g_, counts), c, chance(g_, 0.5) ? axes : random_axes(rank(c)), chance(g_, 0.4)) >= 0;
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
            default: return true;
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
        static const std::vector<Op> common{Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Maximum, Op::Minimum, Op::Abs,
                                            Op::Neg, Op::Exp, Op::Sqrt, Op::Relu, Op::Where, Op::Gt, Op::Fma,
                                            Op::Sin, Op::Tanh, Op::Sigmoid, Op::Eq};
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
        static const std::vector<Op> unary{Op::Sqrt, Op::Exp, Op::Abs, Op::Neg, Op::Log, Op::Rsqrt, Op::Sigmoid,
                                           Op::Tanh, Op::Relu, Op::Floor, Op::Sign, Op::IsNan, Op::Log1p};
        static const std::vector<Op> binary{Op::Add,     Op::Sub,     Op::Mul, Op::Div,
                                            Op::Maximum, Op::Minimum, Op::Gt,  Op::Pow};
        int y = -1;
        switch (g_() % 5) {
            case 0: y = ew(pick(g_, unary), {r}); break;
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
            case 2: y = ew(pick(g_, binary), {r, input_like(node(r).shape())}); break;
            case 3: {
                Instr c;
                c.kind = Instr::Kind::Cast;
                c.dtype = random_reduce_dtype(g_);
                c.args = {r};
                y = emit(c);
                break;
            }
            default: y = ew(pick(g_, binary), {r, operand(g_, p_.code.size())}); break;
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
                    const double n1 = static_cast<double>(std::max<std::int64_t>(reduced_count(x, axes) - 1, 0));
                    v = ew(Op::Div, {red(Op::Sum, ew(Op::Mul, {d, d}), axes, keep), scalar(n1, fd)});  // correction 1
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
            if (!used[static_cast<std::size_t>(i)] && p_.code[static_cast<std::size_t>(i)].kind != Instr::Kind::Input)
                sinks.push_back(i);
        }
        if (any.empty()) return;  // cannot happen (the first input always builds); build() rejects it
        p_.outputs.push_back(last_reduced >= 0 ? last_reduced : any.back());
        for (int k = 0; k < 2; ++k) {
            const std::vector<int>& from = !sinks.empty() && chance(g_, 0.8) ? sinks : any;
            if (!chance(g_, 0.5)) continue;
            const int o = from[g_() % from.size()];
            if (std::find(p_.outputs.begin(), p_.outputs.end(), o) == p_.outputs.end()) p_.outputs.push_back(o);
        }
        // An array together with reductions of it in one evaluation (`eval(q, sum(q == max(q)))`): the operand
        // of a reduction on the path to an output, itself an output.
        if (chance(g_, 0.4)) {
            std::vector<int> operands;
            for (const Instr& ins : p_.code)
                if (ins.kind == Instr::Kind::Reduce && st_.has_input[static_cast<std::size_t>(ins.args[0])])
                    operands.push_back(ins.args[0]);
            if (!operands.empty()) {
                const int o = pick(g_, operands);
                if (std::find(p_.outputs.begin(), p_.outputs.end(), o) == p_.outputs.end()) p_.outputs.push_back(o);
            }
        }
    }
};

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
        case ViewKind::Shift: return "shift";
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

bool is_reduction_seed(std::uint64_t seed, const GenOptions& opt) {
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL;  // splitmix64: independent of the generators' streams
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53 < opt.reduce_share;
}

Program generate(std::uint64_t seed, const GenOptions& opt) {
    if (is_reduction_seed(seed, opt)) return ReduceGen(seed, opt).run();
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
            static const std::vector<Layout> lay{Layout::Contiguous, Layout::Contiguous, Layout::Offset1, Layout::ColMajor,
                                                 Layout::Padded};
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
                tap.key = k > 0 && chance(g, 0.1) ? p.code.back().key : g();  // now and then the same tap twice
                tap.args = {source};
                p.code.push_back(tap);
                if (st.add(p, p.code.size() - 1, false, Device::cpu())) taps.push_back(static_cast<int>(p.code.size() - 1));
                else p.code.pop_back();
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
    q.reductions = p.reductions;
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
            case Instr::Kind::Reduce:
                what = fmt::format("{} axes mask {:#x}{}{}", ir::op_name(ins.op), ins.axes, ins.negative ? " (negative)" : "",
                                   ins.keepdims ? " keepdims" : "");
                break;
        }
        s += fmt::format("  #{} = {} ({})\n", i, what, fmt::join(ins.args, ", "));
    }
    s += fmt::format("  outputs ({})\n", fmt::join(p.outputs, ", "));
    return s;
}

}  // namespace loom::fuzz
