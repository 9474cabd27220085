// Test helpers: ULP-aware tolerances derived from a graph, comparisons, reference checks, random fills.
#include "loom/runtime/testing.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <unordered_map>

#include "loom/codegen/options.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/runtime/memory.hpp"
#include "parallel.hpp"

namespace loom::testing {
namespace {

using ir::Op;
namespace ew = ir::ew;

/// Significand bits including the implicit one, and the smallest normal exponent.
int precision(DType d) {
    switch (d) {
        case DType::Float16:
            return 11;
        case DType::BFloat16:
            return 8;
        case DType::Float32:
            return 24;
        case DType::Float64:
            return 53;
        case DType::Bool:
        case DType::Int8:
        case DType::UInt8:
        case DType::Int32:
        case DType::Int64:
            return 0;
    }
    return 0;
}
int min_exponent(DType d) {
    switch (d) {
        case DType::Float16:
            return -14;
        case DType::BFloat16:
        case DType::Float32:
            return -126;
        case DType::Float64:
            return -1022;
        default:
            return 0;
    }
}

/// Spacing of dtype d's values at |x|.
double ulp_of(double x, DType d) {
    const int e = x == 0.0 || !std::isfinite(x) ? min_exponent(d) : std::max(std::ilogb(x), min_exponent(d));
    return std::ldexp(1.0, e - (precision(d) - 1));
}

}  // namespace

double gpu_max_ulp(Op op, DType dtype) {
    if (!is_float(dtype)) return 0.0;
    // Every row of ops.def states its float32 and float64 bound (CUDA C++ Programming Guide, "Mathematical
    // Functions": single / double precision maximum ulp error; composites: the part's bound + 2; 0 for exact
    // and correctly rounded ops, sqrt included: -prec-sqrt=true).
    const ir::UlpBound& b = ir::info(op).gpu_ulp;
    // float32 evaluation, one rounding to the half dtype: 1 ulp where the float32 result is approximate. A
    // float32 result with a 0-ulp bound is the reference's float32 value, and rounds to the same half.
    if (is_half(dtype)) return b.f32 > 0.0 ? 1.0 : 0.0;
    return dtype == DType::Float32 ? b.f32 : b.f64;
}

double host_max_ulp(Op op, DType dtype) {
    // An op with a 0-ulp GPU bound is exact or correctly rounded (+ - * / sqrt fma, conversions, rounding,
    // selections): the reference computes the same correctly rounded value. Every other op is a function
    // the reference takes from the C library (docs/semantics.md, section 5).
    const ir::UlpBound& b = ir::info(op).gpu_ulp;
    if (!is_float(dtype) || (b.f32 == 0.0 && b.f64 == 0.0)) return 0.0;
    if (is_half(dtype)) return 0.0;              // included in gpu_max_ulp's one ulp of the half dtype
    return dtype == DType::Float32 ? 1.0 : 2.0;  // a double function rounded once; glibc's maxima for double
}

Tolerance tolerance_for(const ir::NodePtr& root, double scale, bool fast_math) {
    const auto order = ir::topo_order({root});
    std::unordered_map<const ir::Node*, double> err;  // in ulps of the node's dtype
    std::map<std::string, double> parts;
    bool unstable = false;
    for (const ir::Node* n : order) {
        double in_sum = 0.0, in_max = 0.0;
        for (const auto& o : n->operands()) {
            in_sum += err.at(o.get());
            in_max = std::max(in_max, err.at(o.get()));
        }
        const DType dt = n->dtype();
        double e = 0.0;
        const Op op = n->op();
        switch (ir::info(op).kind) {
            case ir::OpKind::Leaf:
                e = 0.0;
                break;
            case ir::OpKind::View:
            case ir::OpKind::Gather:  // moves values (its index operand is compared exactly as an integer)
                e = in_max;
                break;
            case ir::OpKind::Attention:
                // float32: the reference's order and functions on CUDA cores (docs/semantics.md,
                // "Attention"); halves: tensor-core products and probabilities rounded to the dtype, within a
                // few units of the dtype at the largest |v| (attention_bound gives the componentwise bound).
                e = dt == DType::Float32 ? (in_sum > 0.0 ? 4.0 * in_sum + 2.0 : 0.0) : 4.0 + 2.0 * in_sum;
                if (e > 0.0) parts["attention"] += e;
                break;
            case ir::OpKind::Scan:
                // Every back end computes the reference's bits from the same operands (docs/semantics.md,
                // "Scans"); cummax and cummin select operands, the others round like a sum of approximate
                // operands.
                if (!is_float(dt))
                    unstable = unstable || in_max > 0.0;
                else if (op == Op::CumMax || op == Op::CumMin)
                    e = in_max;
                else
                    e = in_sum > 0.0 ? 2.0 * in_sum + 1.0 : 0.0;
                break;
            case ir::OpKind::Scatter:
                // scatter moves values; scatter_add sums in the reference's order on every back end
                // (docs/semantics.md, "Scatters") but in its opt-in atomic mode, whose order is the GPU's.
                if (op == Op::Scatter)
                    e = in_max;
                else if (!is_float(dt))
                    unstable = unstable || in_max > 0.0;
                else if (ir::scatter_atomic(*n)) {
                    e = 2.0 * in_sum + 64.0;
                    parts["atomic scatter_add"] += e;
                } else
                    e = in_sum > 0.0 ? 2.0 * in_sum + 1.0 : 0.0;
                break;
            case ir::OpKind::Unary:
            case ir::OpKind::Binary:
            case ir::OpKind::Ternary:
            case ir::OpKind::Reduce:
            case ir::OpKind::Product: {
                const ir::Rule rule = ir::info(op).rule;
                if (!is_float(dt)) {
                    // A discrete result (compare, floor of an int, cast to int, argmax...) of approximate
                    // values can flip near a threshold; it is still compared exactly.
                    if (in_max > 0.0) unstable = true;
                    e = 0.0;
                } else if (op == Op::Cast) {
                    const DType from = n->operand(0)->dtype();
                    if (is_float(from) && in_max > 0.0) {
                        e = std::ldexp(in_max, precision(dt) - precision(from));
                        if (precision(dt) < precision(from)) e = std::ceil(e) + 1.0;
                    }
                } else if (rule == ir::Rule::FloatMath) {
                    double g = gpu_max_ulp(op, dt);
                    const double h = host_max_ulp(op, dt);
                    // Fast math replaces the float32 functions with the hardware intrinsics; float64 is
                    // unchanged.
                    if (fast_math && dt != DType::Float64 && g > 0.0)
                        g = is_half(dt) ? 1.0 + kFastMathUlp : kFastMathUlp;
                    e = g + h + in_sum;  // first order: the argument's error with condition number 1
                    if (g + h > 0.0) parts[std::string(ir::op_name(op))] += g + h;
                } else if (op == Op::Floor || op == Op::Ceil || op == Op::Round || op == Op::Trunc ||
                           op == Op::Sign || op == Op::FloorDiv || op == Op::Mod || op == Op::Rem) {
                    if (in_max > 0.0) unstable = true;  // discontinuous: may jump by a whole step
                    e = in_max;
                } else if (op == Op::Neg || op == Op::Abs || op == Op::Relu || op == Op::Minimum ||
                           op == Op::Maximum || op == Op::Clamp || op == Op::Min || op == Op::Max) {
                    e = in_max;  // exact selections of an operand
                } else if (op == Op::Where) {
                    if (err.at(n->operand(0)) > 0.0) unstable = true;
                    e = std::max(err.at(n->operand(1)), err.at(n->operand(2)));
                } else if (op == Op::Sqrt) {
                    e = in_sum > 0.0 ? in_sum / 2.0 + 1.0 : 0.0;
                } else {
                    // + - * / fma, sum, prod, mean: relative operand errors add (first order); an error of
                    // u ulps is at most 2u ulps of a result elsewhere in its binade (ulp/value varies by 2
                    // across a binade), and the rounding of a different exact value may differ by one ulp.
                    e = in_sum > 0.0 ? 2.0 * in_sum + 1.0 : 0.0;
                    if (e > 0.0) parts["rounding after approximate operands"] += 1.0;
                }
                break;
            }
        }
        err[n] = e;
    }
    const double e = std::ceil(err.at(root.get()));
    if (e == 0.0 && fast_math && is_float(root->dtype()) && root->dtype() != DType::Float64) {
        // Exact but for flush to zero: a subnormal operand or result of any float32 op may become +-0.
        return Tolerance{0.0, 0x1p-126, "exact but for subnormals, which fast math flushes to zero"};
    }
    if (e == 0.0) {
        Tolerance t = Tolerance::exact();
        if (unstable) t.derivation = "exact; discrete values computed from approximate floats may flip";
        return t;
    }
    Tolerance t;
    t.ulps = e;
    t.abs = e * std::ldexp(1.0, 1 - precision(root->dtype())) * std::max(1.0, scale);
    const bool widened = fast_math && root->dtype() != DType::Float64;
    if (widened)
        t.abs = std::max({t.abs, kFastMathAbs * std::max(1.0, scale), 0x1p-126});  // flushed subnormals
    std::string list;
    for (const auto& [name, u] : parts) list += fmt::format("{}{} {}", list.empty() ? "" : ", ", name, u);
    t.derivation = fmt::format(
        "{} ulp ({}), absolute floor {:g} = {} * eps({}) * {:g}{}{}", e, list, t.abs, e, name(root->dtype()),
        std::max(1.0, scale), unstable ? "; discrete values computed from approximate floats may flip" : "",
        widened ? fmt::format("; widened for fast math: {} ulp per float32 function, absolute "
                              "floor at least {:g} * {:g}, subnormals may flush to zero",
                              kFastMathUlp, kFastMathAbs, std::max(1.0, scale))
                : std::string());
    return t;
}

namespace {

/// Reads element i of a contiguous host tensor as double (floats, exact) or as its raw integer (integers;
/// bool as its stored byte, so that a byte other than 0 or 1 is seen).
using ReadF = double (*)(const void*, std::int64_t);
using ReadI = std::int64_t (*)(const void*, std::int64_t);

ReadF float_reader(DType d) {
    return ew::visit_dtype(d, [&]<DType D>() -> ReadF {
        if constexpr (is_float(D))
            return [](const void* p, std::int64_t i) {
                return static_cast<double>(ew::load<D>(static_cast<const ew::storage_t<D>*>(p)[i]));
            };
        else
            return nullptr;
    });
}
ReadI int_reader(DType d) {
    return ew::visit_dtype(d, [&]<DType D>() -> ReadI {
        if constexpr (!is_float(D))
            return [](const void* p, std::int64_t i) {
                return static_cast<std::int64_t>(static_cast<const ew::storage_t<D>*>(p)[i]);
            };
        else
            return nullptr;
    });
}

struct Worst {
    bool mismatch = false;
    double badness = -1.0;
    std::int64_t index = -1;
    double got = 0.0, expected = 0.0;
    bool worse_than(const Worst& o) const {
        if (mismatch != o.mismatch) return mismatch;
        if (badness != o.badness) return badness > o.badness;
        return index >= 0 && (o.index < 0 || index < o.index);
    }
};

// The worst element's index, multi-index (row-major over `shape`) and values into `c`.
void set_worst(Comparison& c, const Worst& worst, const Shape& shape) {
    if (worst.index < 0) return;
    c.worst_index = worst.index;
    c.worst_multi_index.assign(shape.size(), 0);
    std::int64_t rem = worst.index;
    for (std::size_t k = shape.size(); k-- > 0;) {
        c.worst_multi_index[k] = rem % shape[k];
        rem /= shape[k];
    }
    c.worst_got = worst.got;
    c.worst_expected = worst.expected;
}

std::string value_text(double v, bool is_int) {
    if (is_int) return fmt::format("{}", static_cast<std::int64_t>(v));
    return fmt::format("{}", v);
}

}  // namespace

bool same_bits(const Tensor& a, const Tensor& b) {
    if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
    const Tensor x = a.to_host().clone(), y = b.to_host().clone();  // contiguous host copies
    return std::memcmp(x.data(), y.data(), x.nbytes()) == 0;
}

Comparison compare(const Tensor& got_in, const Tensor& expected_in, const Tolerance& tol,
                   const std::string& what) {
    Comparison c;
    if (got_in.shape() != expected_in.shape()) {
        c.ok = false;
        c.message = fmt::format("{}: shape {} differs from the expected shape {}", what,
                                to_string(got_in.shape()), to_string(expected_in.shape()));
        return c;
    }
    const Tensor got = got_in.to_host();
    const Tensor expected = expected_in.to_host();
    const bool fl = is_float(got.dtype());
    if (fl != is_float(expected.dtype())) {
        c.ok = false;
        c.message = fmt::format("{}: dtype {} cannot be compared with expected dtype {}", what,
                                name(got.dtype()), name(expected.dtype()));
        return c;
    }
    const std::int64_t n = got.numel();
    c.count = n;
    const DType gd = got.dtype();
    const ReadF gf = fl ? float_reader(gd) : nullptr, ef = fl ? float_reader(expected.dtype()) : nullptr;
    const ReadI gi = fl ? nullptr : int_reader(gd), ei = fl ? nullptr : int_reader(expected.dtype());
    const void* gp = got.data();
    const void* ep = expected.data();
    std::mutex m;
    Worst worst;
    std::int64_t mismatches = 0;
    loom::detail::parallel_for(n, 1 << 16, [&](std::int64_t b, std::int64_t e) {
        Worst w;
        std::int64_t bad = 0;
        for (std::int64_t i = b; i < e; ++i) {
            Worst x;
            x.index = i;
            if (!fl) {
                const std::int64_t g = gi(gp, i), r = ei(ep, i);
                x.got = static_cast<double>(g);
                x.expected = static_cast<double>(r);
                x.mismatch = g != r;
                x.badness = std::fabs(x.got - x.expected);
            } else {
                const double g = gf(gp, i), r = ef(ep, i);
                x.got = g;
                x.expected = r;
                if (std::isnan(g) || std::isnan(r)) {
                    x.mismatch = std::isnan(g) != std::isnan(r);
                    x.badness = x.mismatch ? std::numeric_limits<double>::infinity() : 0.0;
                } else if (std::isinf(g) || std::isinf(r)) {
                    x.mismatch = g != r;
                    x.badness = x.mismatch ? std::numeric_limits<double>::infinity() : 0.0;
                } else {
                    const double diff = std::fabs(g - r);
                    x.badness = diff / ulp_of(r, gd);
                    if (tol.is_exact())
                        x.mismatch = g != r || std::signbit(g) != std::signbit(r);
                    else
                        x.mismatch = !(diff <= tol.abs || x.badness <= tol.ulps);
                }
            }
            if (x.mismatch) ++bad;
            if (x.worse_than(w)) w = x;
        }
        std::lock_guard<std::mutex> lock(m);
        mismatches += bad;
        if (w.worse_than(worst)) worst = w;
    });
    c.mismatches = mismatches;
    c.ok = mismatches == 0;
    const std::string tol_text =
        tol.is_exact() ? std::string("exact")
                       : fmt::format("{} ulp or {:g} absolute: {}", tol.ulps, tol.abs, tol.derivation);
    set_worst(c, worst, got.shape());
    c.worst_ulps = fl && worst.index >= 0 ? worst.badness : 0.0;
    if (c.ok) {
        c.message = fmt::format("{}: all {} elements match (tolerance {}; largest error {:g} ulp)", what, n,
                                tol_text, c.worst_ulps > 0 ? c.worst_ulps : 0.0);
    } else {
        c.message = fmt::format(
            "{}: {} of {} elements differ (tolerance {}); worst at [{}] (linear index {}): got {} expected "
            "{}{}",
            what, c.mismatches, n, tol_text, fmt::join(c.worst_multi_index, ", "), c.worst_index,
            value_text(c.worst_got, !fl), value_text(c.worst_expected, !fl),
            fl ? fmt::format(" ({:g} ulp of {})", c.worst_ulps, name(gd)) : std::string());
    }
    return c;
}

Comparison compare_product_bound(const Tensor& got_in, const Tensor& a, const Tensor& b,
                                 const std::string& what, ProductPrecision product_precision) {
    const reference::ProductBound pb = reference::product_bound(a, b, product_precision);
    Comparison c;
    if (got_in.shape() != pb.value.shape()) {
        c.ok = false;
        c.message = fmt::format("{}: shape {} differs from the product's {}", what, to_string(got_in.shape()),
                                to_string(pb.value.shape()));
        return c;
    }
    // The product's dtype rounds the accumulator once (a result cast to a wider dtype keeps that rounding);
    // int8 products are exact: their int32 sums must equal the exact sum modulo 2^32.
    const DType pd = a.dtype();
    const bool exact = !is_float(pd);
    const int p = precision(pd), emax = 1 - min_exponent(pd);
    const double u = exact ? 0.0 : std::ldexp(1.0, -p);                          // unit roundoff
    const double s = exact ? 0.0 : std::ldexp(1.0, min_exponent(pd) - (p - 1));  // smallest subnormal
    const double overflow =
        std::ldexp(1.0, emax + 1) - std::ldexp(1.0, emax - p);  // the largest value + half an ulp
    const std::int64_t K = a.shape().back();
    if (!exact && !std::isfinite(reference::product_bound_factor(K, product_precision))) {
        c.ok = false;
        c.message = fmt::format(
            "{}: K = {} makes the tensor-core bound vacuous ({} 2^-22 >= 1): nothing can be checked against "
            "it",
            what, K, product_precision == ProductPrecision::TF32x3 ? "3K" : "K");
        return c;
    }
    const std::string factor =
        product_precision == ProductPrecision::TF32
            ? fmt::format("(2^-10 + 2^-22 + gamma(K = {}, 2^-22) (1 + 2^-10 + 2^-22))", K)
        : product_precision == ProductPrecision::TF32x3
            ? fmt::format("(3 2^-22 + gamma(3K = {}, 2^-22)) (1 + 2^-9)", 3 * K)
            : fmt::format("gamma(K = {}, 2^-22)", K);
    const Tensor got = reference::cast(got_in, DType::Float64);
    const auto* g = static_cast<const double*>(got.data());
    const auto* v = static_cast<const double*>(pb.value.data());
    const auto* bd = static_cast<const double*>(pb.bound.data());
    auto limit_of = [&](std::int64_t i) { return bd[i] * (1.0 + u) + u * std::fabs(v[i]) + s; };
    const std::int64_t n = got.numel();
    c.count = n;
    constexpr double kInf = std::numeric_limits<double>::infinity();
    std::mutex m;
    Worst worst;  // badness: the error as a fraction of the element's bound
    loom::detail::parallel_for(n, 1 << 14, [&](std::int64_t begin, std::int64_t end) {
        Worst w;
        std::int64_t bad = 0;
        for (std::int64_t i = begin; i < end; ++i) {
            Worst x;
            x.index = i;
            x.got = g[i];
            x.expected = v[i];
            if (exact) {
                // The exact sum (|C| < 2^53 for any int8 product a tensor holds) modulo 2^32, as int32.
                x.mismatch = g[i] != static_cast<double>(static_cast<std::int32_t>(
                                         static_cast<std::uint32_t>(static_cast<std::int64_t>(v[i]))));
            } else if (!std::isfinite(v[i])) {
                // An Inf or NaN operand: IEEE's result (Inf of C's sign, or NaN), whatever the bound says.
                x.mismatch = std::isnan(v[i]) ? !std::isnan(g[i]) : g[i] != v[i];
            } else if (std::isinf(g[i])) {
                // Overflow only where the bound reaches the dtype's overflow threshold, with C's sign.
                x.mismatch =
                    std::fabs(v[i]) + limit_of(i) < overflow || std::signbit(g[i]) != std::signbit(v[i]);
            } else {
                const double err = std::fabs(g[i] - v[i]),
                             limit = limit_of(i);  // err is NaN for a NaN result
                x.mismatch = !(err <= limit);
                x.badness = x.mismatch  ? (std::isnan(err) ? kInf : err / limit)
                            : limit > 0 ? err / limit
                                        : 0.0;
            }
            if (x.mismatch && x.badness < 0) x.badness = kInf;
            if (x.mismatch) ++bad;
            if (x.worse_than(w)) w = x;
        }
        const std::lock_guard<std::mutex> lock(m);
        c.mismatches += bad;
        if (w.worse_than(worst)) worst = w;
    });
    c.ok = c.mismatches == 0;
    set_worst(c, worst, got.shape());
    if (c.worst_index >= 0 && std::isfinite(c.worst_got) && std::isfinite(c.worst_expected))
        c.worst_ulps =
            std::fabs(c.worst_got - c.worst_expected) / ulp_of(c.worst_expected, exact ? DType::Float64 : pd);
    c.message = fmt::format(
        "{}: {} of {} elements outside the tensor-core bound {} |A||B| (1 + u) + u |C| + {} (u = {}, {} "
        "product{}); "
        "worst at [{}]: got {}, exact {}, bound {} (error {:.3g} of the bound)",
        what, c.mismatches, n, factor, s, u, name(pd), exact ? ": exact, modulo 2^32" : "",
        fmt::join(c.worst_multi_index, ", "), c.worst_got, c.worst_expected,
        c.worst_index >= 0 ? limit_of(c.worst_index) : 0.0, worst.badness);
    return c;
}

Comparison check_against_reference(const std::vector<ir::NodePtr>& roots, const std::vector<Tensor>& results,
                                   const reference::Overrides& overrides) {
    if (roots.size() != results.size())
        throw Error(
            fmt::format("check_against_reference(): {} results for {} roots", results.size(), roots.size()));
    const std::vector<Tensor> expected = reference::evaluate(roots, overrides);
    Comparison summary;
    for (std::size_t k = 0; k < roots.size(); ++k) {
        double scale = 1.0;
        if (is_float(expected[k].dtype())) {
            const ReadF rf = float_reader(expected[k].dtype());
            for (std::int64_t i = 0; i < expected[k].numel(); ++i) {
                const double v = std::fabs(rf(expected[k].data(), i));
                if (std::isfinite(v)) scale = std::max(scale, v);
            }
        }
        const Tolerance tol = tolerance_for(roots[k], scale, current_options().fast_math);
        Comparison c = compare(
            results[k], expected[k], tol,
            fmt::format("result {} ({}, {})", k, ir::describe(*roots[k]), short_location(roots[k]->loc())));
        if (!c.ok) return c;
        summary.count += c.count;
        summary.message += (summary.message.empty() ? "" : "\n") + c.message;
    }
    return summary;
}

void require_matches_reference(const std::vector<ir::NodePtr>& roots, const std::vector<Tensor>& results,
                               const reference::Overrides& overrides) {
    const Comparison c = check_against_reference(roots, results, overrides);
    if (!c.ok) throw Error("require_matches_reference(): " + c.message);
}

}  // namespace loom::testing
