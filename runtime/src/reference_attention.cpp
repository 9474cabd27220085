// The CPU reference of attention (ir::Op::Attention; docs/semantics.md, "Attention"): for each query row, the
// keys in blocks of kAttentionKeyBlock, each block's scores, running maximum, probabilities, row sum (the
// reductions' row order) and output update in exactly the contract's order, in float32, with the one float32
// exp every back end shares; the result divided once at the end and rounded to the dtype.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "loom/ir/build.hpp"
#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/half.hpp"
#include "parallel.hpp"
#include "reference_internal.hpp"

namespace loom::reference::detail {

namespace {

// Element `offset` (in elements) of a float tensor of any of attention's dtypes, as float32 (exact).
float load(const Tensor& t, std::int64_t offset) {
    const auto* p = static_cast<const char*>(t.data());
    switch (t.dtype()) {
        case DType::Float32: {
            float f;
            std::memcpy(&f, p + offset * 4, 4);
            return f;
        }
        case DType::Float16:
        case DType::BFloat16: {
            std::uint16_t h;
            std::memcpy(&h, p + offset * 2, 2);
            return t.dtype() == DType::Float16 ? loom::half_bits_to_float(h) : loom::bf16_bits_to_float(h);
        }
        default:
            throw InternalError(fmt::format("reference: attention operand of {}", name(t.dtype())));
    }
}

// The offset of element (batch index `b` over the leading axes, head, row) of `t`: its row, whose last axis
// is read at stride t.strides().back().
std::int64_t row_offset(const Tensor& t, std::int64_t b, std::int64_t head, std::int64_t row) {
    const int r = t.rank();
    std::int64_t off = head * t.strides()[static_cast<std::size_t>(r - 3)] +
                       row * t.strides()[static_cast<std::size_t>(r - 2)];
    for (int d = r - 4; d >= 0; --d) {
        const std::int64_t e = t.shape()[static_cast<std::size_t>(d)];
        off += (b % e) * t.strides()[static_cast<std::size_t>(d)];
        b /= e;
    }
    return off;
}

// NaN when either is NaN, else the larger: the running maximum of the contract.
float max_nan(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
    return a > b ? a : b;
}

float exp32(float x) {
    return ir::ew::unary<ir::Op::Exp>(x);
}

// The row sum of one block's probabilities in the reductions' row order (docs/semantics.md, "Reduction
// order"): runs of 4 consecutive keys accumulate in ascending order, then the 16 runs combine by the
// butterfly, run r with run r + 8, then r + 4, r + 2, r + 1. Absent keys hold +0.
float block_sum(const float* p) {
    float run[ir::kAttentionKeyRuns];
    for (int r = 0; r < ir::kAttentionKeyRuns; ++r)
        run[r] = ((p[4 * r] + p[4 * r + 1]) + p[4 * r + 2]) + p[4 * r + 3];
    for (int h = ir::kAttentionKeyRuns / 2; h >= 1; h /= 2)
        for (int r = 0; r < h; ++r) run[r] = run[r] + run[r + h];
    return run[0];
}

}  // namespace

Tensor eval_attention_node(const ir::Node& n, const std::vector<Tensor>& args, DType out) {
    const Tensor& q = args.at(0);
    const Tensor& k = args.at(1);
    const Tensor& v = args.at(2);
    const Tensor* bias = args.size() == 4 ? &args[3] : nullptr;
    const int r = n.rank();
    const std::int64_t H = q.shape()[static_cast<std::size_t>(r - 3)];
    const std::int64_t T = q.shape()[static_cast<std::size_t>(r - 2)];
    const std::int64_t D = q.shape()[static_cast<std::size_t>(r - 1)];
    const std::int64_t Hkv = k.shape()[static_cast<std::size_t>(r - 3)];
    const std::int64_t S = k.shape()[static_cast<std::size_t>(r - 2)];
    std::int64_t batches = 1;
    for (int d = 0; d + 3 < r; ++d) batches *= q.shape()[static_cast<std::size_t>(d)];
    const ir::CausalMask causal = ir::attention_causal(n);
    const float scale = ir::attention_scale(n);
    const std::int64_t group = Hkv == 0 ? 1 : H / Hkv;
    const std::int64_t sq = q.strides().back(), sk = k.strides().back(), sv = v.strides().back();
    Tensor result32 = Tensor::host(n.shape(), DType::Float32);
    auto* res = static_cast<float*>(result32.data());
    const std::int64_t rows = batches * H * T;
    constexpr std::int64_t B = ir::kAttentionKeyBlock;
    loom::detail::parallel_for(rows, 16, [&](std::int64_t lo, std::int64_t hi) {
        std::vector<float> qrow(static_cast<std::size_t>(D)), o(static_cast<std::size_t>(D));
        float s[B], p[B];
        bool visible[B];
        for (std::int64_t row = lo; row < hi; ++row) {
            const std::int64_t t = row % T, h = (row / T) % H, b = row / (T * H), hk = h / group;
            const std::int64_t qo = row_offset(q, b, h, t);
            for (std::int64_t d = 0; d < D; ++d) qrow[static_cast<std::size_t>(d)] = load(q, qo + d * sq);
            float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
            std::fill(o.begin(), o.end(), 0.0f);
            bool seen = false;
            for (std::int64_t j0 = 0; j0 < S; j0 += B) {
                bool any = false;
                float bm = -std::numeric_limits<float>::infinity();
                for (std::int64_t jj = 0; jj < B; ++jj) {
                    const std::int64_t j = j0 + jj;
                    visible[jj] = j < S && ir::attention_visible(causal, t, j, T, S);
                    float bj = 0.0f;
                    if (visible[jj] && bias) {
                        bj = load(*bias, row_offset(*bias, b, h, t) + j * bias->strides().back());
                        visible[jj] = bj != -std::numeric_limits<float>::infinity();
                    }
                    if (!visible[jj]) continue;
                    const std::int64_t ko = row_offset(k, b, hk, j);
                    float acc = 0.0f;
                    for (std::int64_t d = 0; d < D; ++d)
                        acc = std::fma(qrow[static_cast<std::size_t>(d)], load(k, ko + d * sk), acc);
                    acc = acc * scale;
                    if (bias) acc = acc + bj;
                    s[jj] = acc;
                    bm = any ? max_nan(bm, acc) : acc;
                    any = true;
                }
                if (!any) continue;  // a block with every key masked changes nothing
                const float mn = max_nan(m, bm);
                const float c = std::isfinite(mn) ? mn : 0.0f;
                const float alpha = exp32(m - c);
                for (std::int64_t jj = 0; jj < B; ++jj) p[jj] = visible[jj] ? exp32(s[jj] - c) : 0.0f;
                l = l * alpha + block_sum(p);
                for (float& x : o) x = x * alpha;
                for (std::int64_t jj = 0; jj < B; ++jj) {
                    if (!visible[jj]) continue;
                    const std::int64_t vo = row_offset(v, b, hk, j0 + jj);
                    for (std::int64_t d = 0; d < D; ++d)
                        o[static_cast<std::size_t>(d)] =
                            std::fma(p[jj], load(v, vo + d * sv), o[static_cast<std::size_t>(d)]);
                }
                m = mn;
                seen = true;
            }
            for (std::int64_t d = 0; d < D; ++d)
                res[row * D + d] = seen ? o[static_cast<std::size_t>(d)] / l : 0.0f;
        }
    });
    return out == DType::Float32 ? result32 : cast(result32, out);
}

}  // namespace loom::reference::detail
