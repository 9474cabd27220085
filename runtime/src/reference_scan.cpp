// The CPU reference of the scans (cumsum, cumprod, cummax, cummin, logcumsumexp; docs/semantics.md, "Scans"):
// each row along the axis in tiles of kScanTile elements, each tile as 256 threads of 8 elements (thread
// totals, the Kogge-Stone scans over lanes and over warps, the thread prefixes, the outputs), the tiles'
// carries from the fixed pairwise tree over tile aggregates, in exactly the contract's order, with the
// combines every back end shares (loom/ir/scan_core.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/scan_core.hpp"
#include "parallel.hpp"
#include "reference_internal.hpp"

namespace loom::reference::detail {

namespace {

namespace scanc = ir::scanc;

constexpr int kThreads = ir::kScanThreads;
constexpr int kPerThread = ir::kScanThreadElements;
constexpr int kWarps = kThreads / 32;

// A value of the order that may not exist: a term that does not exist is omitted, never an identity.
template <class C>
using Maybe = std::optional<C>;

template <class C, class F>
Maybe<C> combine(const Maybe<C>& a, const Maybe<C>& b, F op) {
    if (!a) return b;
    if (!b) return a;
    return op(*a, *b);
}

// The parts of one tile that do not depend on its carry: each thread's inclusive lane scan value X_t and
// each warp's inclusive warp scan value W_w (steps 1 to 3 of the contract), for the tile's `len` elements.
template <class C>
struct TileScan {
    int threads = 0;  // present threads: ceil(len / 8)
    int warps = 0;    // present warps: ceil(threads / 32)
    C lane[kThreads];
    C warp[kWarps];
    C aggregate() const { return warp[warps - 1]; }
};

// Kogge-Stone over x[0, n): x_t <- x_{t-d} op x_t for d = 1, 2, 4, ... below `width`, where t % width >= d.
template <class C, class F>
void kogge_stone(C* x, int n, int width, F op) {
    for (int d = 1; d < width; d *= 2)
        for (int t = n - 1; t >= 0; --t)  // descending: x_{t-d} is still the previous step's value
            if (t % width >= d) x[t] = op(x[t - d], x[t]);
}

template <class C, class F>
void scan_tile_parts(const C* v, int len, F op, TileScan<C>& s) {
    s.threads = (len + kPerThread - 1) / kPerThread;
    s.warps = (s.threads + 31) / 32;
    for (int t = 0; t < s.threads; ++t) {
        const int end = std::min(len, (t + 1) * kPerThread);
        C acc = v[t * kPerThread];
        for (int e = t * kPerThread + 1; e < end; ++e) acc = op(acc, v[e]);
        s.lane[t] = acc;
    }
    kogge_stone(s.lane, s.threads, 32, op);
    for (int w = 0; w < s.warps; ++w) s.warp[w] = s.lane[std::min(s.threads, (w + 1) * 32) - 1];
    kogge_stone(s.warp, s.warps, kWarps, op);
}

// Steps 4 and 5: the tile's outputs from its parts and its carry.
template <class C, class F>
void scan_tile_outputs(const C* v, int len, const TileScan<C>& s, const Maybe<C>& carry, F op, C* out) {
    for (int t = 0; t < s.threads; ++t) {
        const int w = t / 32, lane = t % 32;
        Maybe<C> prefix = carry;
        if (w > 0) prefix = combine(prefix, Maybe<C>(s.warp[w - 1]), op);
        if (lane > 0) prefix = combine(prefix, Maybe<C>(s.lane[t - 1]), op);
        const int begin = t * kPerThread, end = std::min(len, begin + kPerThread);
        C r = prefix ? op(*prefix, v[begin]) : v[begin];
        out[begin] = r;
        for (int e = begin + 1; e < end; ++e) out[e] = r = op(r, v[e]);
    }
}

// Steps 6 and 7: the carry of every tile from the tile aggregates: node (k, i) combines the aggregates of
// tiles [i 2^k, (i + 1) 2^k); tile j's carry folds the nodes of j's binary digits from the highest.
template <class C, class F>
std::vector<Maybe<C>> tile_carries(const std::vector<C>& aggregates, F op) {
    const std::size_t tiles = aggregates.size();
    std::vector<std::vector<C>> nodes{aggregates};
    while (nodes.back().size() >= 2) {
        const std::vector<C>& below = nodes.back();
        std::vector<C> level;
        for (std::size_t i = 0; i + 1 < below.size(); i += 2) level.push_back(op(below[i], below[i + 1]));
        nodes.push_back(std::move(level));
    }
    std::vector<Maybe<C>> carries(tiles);
    for (std::size_t j = 0; j < tiles; ++j) {
        Maybe<C> carry;
        std::size_t start = 0;
        for (int k = static_cast<int>(nodes.size()) - 1; k >= 0; --k)
            if ((j >> k) & 1u) {
                carry = combine(carry, Maybe<C>(nodes[static_cast<std::size_t>(k)][start >> k]), op);
                start += std::size_t{1} << k;
            }
        carries[j] = carry;
    }
    return carries;
}

// The inclusive scan of one row of n elements in the contract's order. The tiles' parts and outputs are
// independent given the carries: `parallel` shares them among the reference's threads (a long row that is
// one of few), else the row runs on the calling thread.
template <class C, class F>
void scan_row(const C* v, std::int64_t n, F op, C* out, bool parallel) {
    if (n == 0) return;
    const std::int64_t tiles = (n + ir::kScanTile - 1) / ir::kScanTile;
    const auto len_of = [&](std::int64_t j) {
        return static_cast<int>(std::min(ir::kScanTile, n - j * ir::kScanTile));
    };
    const auto over_tiles = [&](const std::function<void(std::int64_t, std::int64_t)>& body) {
        if (parallel && tiles > 1)
            loom::detail::parallel_for(tiles, 32, body);
        else
            body(0, tiles);
    };
    std::vector<C> aggregates(static_cast<std::size_t>(tiles));
    over_tiles([&](std::int64_t lo, std::int64_t hi) {
        auto s = std::make_unique<TileScan<C>>();
        for (std::int64_t j = lo; j < hi; ++j) {
            scan_tile_parts(v + j * ir::kScanTile, len_of(j), op, *s);
            aggregates[static_cast<std::size_t>(j)] = s->aggregate();
        }
    });
    const std::vector<Maybe<C>> carries = tile_carries(aggregates, op);
    over_tiles([&](std::int64_t lo, std::int64_t hi) {
        auto s = std::make_unique<TileScan<C>>();
        for (std::int64_t j = lo; j < hi; ++j) {
            scan_tile_parts(v + j * ir::kScanTile, len_of(j), op, *s);
            scan_tile_outputs(v + j * ir::kScanTile, len_of(j), *s, carries[static_cast<std::size_t>(j)], op,
                              out + j * ir::kScanTile);
        }
    });
}

// A scan's identity (ir::scan_identity) in the accumulator type C.
template <class C>
C identity_of(const ir::ScalarValue& v) {
    if constexpr (std::is_integral_v<C>)
        return static_cast<C>(v.i);
    else
        return static_cast<C>(v.f);
}

// Scans every row of `x` (contiguous, of the accumulator type C) along `axis` into `out` (contiguous, C).
template <class C, class F>
void scan_rows(const ir::Node& n, const C* x, C* out, DType out_dtype, F op) {
    const Shape& shape = n.shape();
    const auto axis = static_cast<std::size_t>(ir::scan_axis(n));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= shape[d];
    for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
    const std::int64_t len = shape[axis];
    const bool exclusive = ir::scan_exclusive(n);
    const C identity = len > 0 && exclusive ? identity_of<C>(ir::scan_identity(n.op(), out_dtype)) : C{};
    // Row r: contiguous rows (inner 1) are scanned in place of the output, others gathered into `row` first.
    const auto scan_one = [&](std::int64_t r, bool parallel, std::vector<C>& row, std::vector<C>& result) {
        const std::int64_t base = (r / inner) * len * inner + r % inner;
        if (inner == 1) {
            C* dst = out + base;
            scan_row(x + base, len, op, dst, parallel);
            if (exclusive && len > 0) {
                std::memmove(dst + 1, dst, static_cast<std::size_t>(len - 1) * sizeof(C));
                dst[0] = identity;
            }
            return;
        }
        row.resize(static_cast<std::size_t>(len));
        result.resize(static_cast<std::size_t>(len));
        for (std::int64_t i = 0; i < len; ++i) row[static_cast<std::size_t>(i)] = x[base + i * inner];
        scan_row(row.data(), len, op, result.data(), parallel);
        for (std::int64_t i = 0; i < len; ++i)
            out[base + i * inner] = !exclusive ? result[static_cast<std::size_t>(i)]
                                    : i == 0   ? identity
                                               : result[static_cast<std::size_t>(i - 1)];
    };
    const std::int64_t rows = outer * inner;
    if (rows < loom::detail::reference_threads() && len > 64 * ir::kScanTile) {
        // Fewer rows than threads, and long: one row at a time, its tiles shared among the threads.
        std::vector<C> row, result;
        for (std::int64_t r = 0; r < rows; ++r) scan_one(r, true, row, result);
        return;
    }
    loom::detail::parallel_for(rows, 16, [&](std::int64_t begin, std::int64_t end) {
        std::vector<C> row, result;
        for (std::int64_t r = begin; r < end; ++r) scan_one(r, false, row, result);
    });
}

// The combines of scan_core.hpp, whose integer accumulator is long long (std::int64_t may be long).
template <class C>
void scan_typed(const ir::Node& n, const C* x, C* out, DType out_dtype) {
    using K = std::conditional_t<std::is_integral_v<C>, long long, C>;
    switch (n.op()) {
        case ir::Op::CumSum:
            return scan_rows(n, x, out, out_dtype, [](C a, C b) { return C(scanc::add(K(a), K(b))); });
        case ir::Op::CumProd:
            return scan_rows(n, x, out, out_dtype, [](C a, C b) { return C(scanc::mul(K(a), K(b))); });
        case ir::Op::CumMax:
            return scan_rows(n, x, out, out_dtype, [](C a, C b) { return C(scanc::max_of(K(a), K(b))); });
        case ir::Op::CumMin:
            return scan_rows(n, x, out, out_dtype, [](C a, C b) { return C(scanc::min_of(K(a), K(b))); });
        case ir::Op::LogCumSumExp:
            if constexpr (!std::is_integral_v<C>)
                return scan_rows(n, x, out, out_dtype, [](C a, C b) { return scanc::log_add_exp(a, b); });
            break;
        default:
            break;
    }
    throw InternalError(fmt::format("reference: no scan {} of {}", ir::op_name(n.op()), name(out_dtype)));
}

}  // namespace

Tensor eval_scan_node(const ir::Node& n, const Tensor& x, DType out) {
    // The accumulator: float32 for float32 and the halves, float64 for float64, int64 for bool and integers.
    const DType acc = !is_float(out) ? DType::Int64 : out == DType::Float64 ? DType::Float64 : DType::Float32;
    const Tensor xa = x.dtype() == acc ? materialize(x) : cast_tensor(x, acc);
    Tensor result = Tensor::host(n.shape(), acc);
    switch (acc) {
        case DType::Float32:
            scan_typed(n, static_cast<const float*>(xa.data()), static_cast<float*>(result.data()), out);
            break;
        case DType::Float64:
            scan_typed(n, static_cast<const double*>(xa.data()), static_cast<double*>(result.data()), out);
            break;
        default:
            scan_typed(n, static_cast<const std::int64_t*>(xa.data()),
                       static_cast<std::int64_t*>(result.data()), out);
            break;
    }
    return acc == out ? result : cast_tensor(result, out);
}

}  // namespace loom::reference::detail
