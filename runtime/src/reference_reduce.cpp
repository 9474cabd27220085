// Reductions of the CPU reference evaluator in the documented order (docs/semantics.md, "Reduction
// order"): chunks of 8192, 256 lanes of runs of 4, a butterfly over lanes, a pairwise tree over chunks.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vector>

#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/error.hpp"
#include "parallel.hpp"
#include "reference_internal.hpp"

namespace loom::reference::detail {
namespace {

using ir::Op;
namespace ew = ir::ew;

/// Accumulator of argmin/argmax: a value and its index in the reduced range (-1: no element yet).
template <class C>
struct Arg {
    C v{};
    std::int64_t idx = -1;
};

/// The accumulation of reduction `op` on input dtype In giving dtype Out: accumulator type A, its
/// identity, the conversion of one element, the combination of two partials and the final value.
template <Op op, DType In, DType Out>
struct Reducer {
    using C = ew::compute_t<In>;
    static constexpr bool float_in = is_float(In);
    static constexpr bool is_arg = op == Op::ArgMin || op == Op::ArgMax;
    using A = std::conditional_t<
        is_arg, Arg<C>,
        std::conditional_t<
            op == Op::Any || op == Op::All, std::uint8_t,
            std::conditional_t<(op == Op::Sum || op == Op::Prod || op == Op::Mean) && !float_in, std::int64_t,
                               C>>>;

    static A identity() {
        if constexpr (is_arg)
            return A{};
        else if constexpr (op == Op::Any)
            return 0;
        else if constexpr (op == Op::All)
            return 1;
        else if constexpr (op == Op::Sum || op == Op::Mean) {
            if constexpr (float_in)
                return C(-0.0);
            else
                return 0;
        } else if constexpr (op == Op::Prod)
            return A(1);
        else if constexpr (op == Op::Min) {
            if constexpr (float_in)
                return std::numeric_limits<C>::infinity();
            else
                return std::numeric_limits<C>::max();
        } else {
            if constexpr (float_in)
                return -std::numeric_limits<C>::infinity();
            else
                return std::numeric_limits<C>::lowest();
        }
    }

    static A element(C x, std::int64_t index) {
        if constexpr (is_arg)
            return A{x, index};
        else if constexpr (op == Op::Any || op == Op::All)
            return ew::truthy(x) ? 1 : 0;
        else
            return static_cast<A>(x);  // integers widen to int64 (exact); floats unchanged
    }

    static A combine(A a, A b) {
        if constexpr (is_arg) {
            if (a.idx < 0) return b;
            if (b.idx < 0) return a;
            const bool an = ew::is_float_v<C> && a.v != a.v, bn = ew::is_float_v<C> && b.v != b.v;
            if (an || bn) {
                if (an && bn) return a.idx <= b.idx ? a : b;
                return an ? a : b;  // NaN wins
            }
            const bool b_better = op == Op::ArgMin ? b.v < a.v : b.v > a.v;
            const bool a_better = op == Op::ArgMin ? a.v < b.v : a.v > b.v;
            if (b_better) return b;
            if (a_better) return a;
            return a.idx <= b.idx ? a : b;  // equal values (including -0 and +0): first index
        } else if constexpr (op == Op::Any) {
            return static_cast<A>(a | b);
        } else if constexpr (op == Op::All) {
            return static_cast<A>(a & b);
        } else if constexpr (op == Op::Sum || op == Op::Mean) {
            if constexpr (float_in)
                return a + b;
            else
                return ew::wrap_add(a, b);
        } else if constexpr (op == Op::Prod) {
            if constexpr (float_in)
                return a * b;
            else
                return ew::wrap_mul(a, b);
        } else if constexpr (op == Op::Min) {
            return ew::minimum(a, b);
        } else {
            return ew::maximum(a, b);
        }
    }

    static ew::storage_t<Out> finish(A acc, std::int64_t count) {
        if constexpr (is_arg) {
            return acc.idx;
        } else if constexpr (op == Op::Sum) {
            if constexpr (float_in) {
                if (count == 0) return ew::store<Out>(C(0));  // the empty sum is +0
            }
            return ew::store<Out>(static_cast<ew::compute_t<Out>>(acc));
        } else if constexpr (op == Op::Mean) {
            if constexpr (float_in) {
                // one division at the accumulation type, then one rounding to the dtype
                return ew::store<Out>(static_cast<ew::compute_t<Out>>(acc / static_cast<C>(count)));
            } else {
                // integer sum (exact, wrapping int64) / count in float64, rounded once to the result dtype
                const double q = static_cast<double>(acc) / static_cast<double>(count);
                return ew::store<Out>(static_cast<ew::compute_t<Out>>(q));
            }
        } else {
            return ew::store<Out>(static_cast<ew::compute_t<Out>>(acc));
        }
    }
};

template <Op op, DType In, DType Out>
constexpr bool valid_reduction() {
    switch (op) {
        case Op::Sum:
        case Op::Prod:
            return Out == (is_float(In) ? In : DType::Int64);
        case Op::Mean:
            return is_float(In) ? Out == In : (Out == DType::Float32 || Out == DType::Float64);
        case Op::Min:
        case Op::Max:
            return Out == In;
        case Op::ArgMin:
        case Op::ArgMax:
            return Out == DType::Int64;
        case Op::Any:
        case Op::All:
            return Out == DType::Bool;
        default:
            return false;
    }
}

/// The partial of one chunk: n elements x[0..n) whose reduced indices start at `first`.
template <class R, class S>
typename R::A reduce_chunk(const S* x, std::int64_t n, std::int64_t first) {
    using A = typename R::A;
    constexpr DType In = R::in_dtype;
    A lanes[kReduceLanes];
    std::int64_t active = std::min<std::int64_t>(kReduceLanes, (n + kReduceRun - 1) / kReduceRun);
    for (std::int64_t l = 0; l < active; ++l) lanes[l] = R::identity();
    for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t lane = (i / kReduceRun) % kReduceLanes;
        lanes[lane] = R::combine(lanes[lane], R::element(ew::load<In>(x[i]), first + i));
    }
    // Butterfly over lanes: l with l + 128, then l + 64, ..., l + 1. Lanes past `active` hold the
    // identity, and combining with the identity is exact for every op, so they are skipped.
    for (std::int64_t s = kReduceLanes / 2; s >= 1; s /= 2) {
        for (std::int64_t l = 0; l < s && l + s < active; ++l) lanes[l] = R::combine(lanes[l], lanes[l + s]);
        active = std::min(active, s);
    }
    return active > 0 ? lanes[0] : R::identity();
}

template <Op op, DType In, DType Out>
struct ReducerWithIn : Reducer<op, In, Out> {
    static constexpr DType in_dtype = In;
};

/// The partial of one chunk of the column order: the elements accumulated one after the other.
template <class R, class S>
typename R::A reduce_chunk_sequential(const S* x, std::int64_t n, std::int64_t first) {
    typename R::A acc = R::identity();
    for (std::int64_t i = 0; i < n; ++i)
        acc = R::combine(acc, R::element(ew::load<R::in_dtype>(x[i]), first + i));
    return acc;
}

template <Op op, DType In, DType Out>
void run_reduction(const Tensor& v, std::int64_t outputs, std::int64_t L, bool columns, Tensor& out) {
    using R = ReducerWithIn<op, In, Out>;
    using A = typename R::A;
    using S = ew::storage_t<In>;
    const std::int64_t C = columns ? kColumnChunk : kReduceChunk;
    const std::int64_t chunks = L == 0 ? 0 : (L + C - 1) / C;
    const Layout layout = Layout::of(v);
    std::vector<A> partials(static_cast<std::size_t>(outputs * chunks));
    const std::int64_t per_task = std::min(L, C);
    const std::int64_t grain = std::max<std::int64_t>(1, kBlock / std::max<std::int64_t>(per_task, 1));
    loom::detail::parallel_for(outputs * chunks, grain, [&](std::int64_t b, std::int64_t e) {
        thread_local std::vector<std::uint64_t> scratch;
        for (std::int64_t t = b; t < e; ++t) {
            const std::int64_t o = t / chunks, c = t % chunks;
            const std::int64_t first = c * C;
            const std::int64_t n = std::min(C, L - first);
            const std::int64_t begin = o * L + first;
            const S* x;
            if (layout.contiguous && layout.rank > 0) {
                x = reinterpret_cast<const S*>(layout.base) + begin;
            } else {
                scratch.resize(static_cast<std::size_t>(kReduceChunk));
                gather(layout, begin, n, scratch.data());
                x = reinterpret_cast<const S*>(scratch.data());
            }
            partials[static_cast<std::size_t>(t)] =
                columns ? reduce_chunk_sequential<R>(x, n, first) : reduce_chunk<R>(x, n, first);
        }
    });
    auto* dst = static_cast<ew::storage_t<Out>*>(out.data());
    loom::detail::parallel_for(
        outputs, std::max<std::int64_t>(1, kBlock / std::max<std::int64_t>(chunks, 1)),
        [&](std::int64_t b, std::int64_t e) {
            for (std::int64_t o = b; o < e; ++o) {  // each output's partials, combined in place (read once)
                const A acc =
                    chunks == 0
                        ? R::identity()
                        : pairwise_tree(std::span<A>(partials).subspan(static_cast<std::size_t>(o * chunks),
                                                                       static_cast<std::size_t>(chunks)),
                                        R::combine);
                dst[o] = R::finish(acc, L);
            }
        });
}

template <Op op>
void dispatch(const Tensor& v, std::int64_t outputs, std::int64_t L, bool columns, Tensor& out) {
    ew::visit_dtype(v.dtype(), [&]<DType In>() {
        ew::visit_dtype(out.dtype(), [&]<DType Out>() {
            if constexpr (valid_reduction<op, In, Out>()) {
                run_reduction<op, In, Out>(v, outputs, L, columns, out);
            } else {
                throw InternalError(fmt::format("reference: no reduction {} of {} giving {}", ir::op_name(op),
                                                name(In), name(Out)));
            }
        });
    });
}

}  // namespace

Tensor eval_reduction_node(const ir::Node& n, const Tensor& x, DType out) {
    const int r = x.rank();
    std::vector<bool> reduced(static_cast<std::size_t>(r), false);
    for (auto ax : n.ints()) reduced.at(static_cast<std::size_t>(ax)) = true;
    // A view with the kept axes first and the reduced axes last, each group in its original order: output o
    // then reads elements [o * L, (o + 1) * L) of it, in row-major order of the reduced axes.
    Shape shape;
    Strides strides;
    std::int64_t L = 1, outputs = 1;
    for (int pass = 0; pass < 2; ++pass)
        for (int k = 0; k < r; ++k) {
            if (reduced[static_cast<std::size_t>(k)] != (pass == 1)) continue;
            const auto e = x.shape()[static_cast<std::size_t>(k)];
            shape.push_back(e);
            strides.push_back(x.strides()[static_cast<std::size_t>(k)]);
            (pass == 1 ? L : outputs) *= e;
        }
    const Tensor v = x.as_strided(shape, strides, x.offset());
    // The column order when the innermost axis is kept (docs/semantics.md, "Reduction order").
    const bool columns = r > 0 && !reduced[static_cast<std::size_t>(r - 1)];
    Tensor result = Tensor::host(n.shape(), out);
    if (outputs == 0) return result;
    switch (n.op()) {
        case Op::Sum:
            dispatch<Op::Sum>(v, outputs, L, columns, result);
            break;
        case Op::Prod:
            dispatch<Op::Prod>(v, outputs, L, columns, result);
            break;
        case Op::Min:
            dispatch<Op::Min>(v, outputs, L, columns, result);
            break;
        case Op::Max:
            dispatch<Op::Max>(v, outputs, L, columns, result);
            break;
        case Op::Mean:
            dispatch<Op::Mean>(v, outputs, L, columns, result);
            break;
        case Op::ArgMin:
            dispatch<Op::ArgMin>(v, outputs, L, columns, result);
            break;
        case Op::ArgMax:
            dispatch<Op::ArgMax>(v, outputs, L, columns, result);
            break;
        case Op::Any:
            dispatch<Op::Any>(v, outputs, L, columns, result);
            break;
        case Op::All:
            dispatch<Op::All>(v, outputs, L, columns, result);
            break;
        default:
            throw InternalError(fmt::format("reference: {} is not a reduction", ir::op_name(n.op())));
    }
    return result;
}

}  // namespace loom::reference::detail
