// The CPU reference of attention (ir::Op::Attention; docs/semantics.md, "Attention"): for each query row, the
// keys in blocks of kAttentionKeyBlock, each block's scores, running maximum, probabilities, row sum (the
// reductions' row order) and output update in exactly the contract's order, in float32, with the one float32
// exp every back end shares; the result divided once at the end and rounded to the dtype.
//
// The query rows of one head are taken in tiles that share each key block, transposed once (d-major), so that
// the scores vectorize across keys (each lane one key's fma chain over d) and the output update across d;
// on x86-64 CPUs with AVX2 and FMA these loops, and the shared exp, run in a variant compiled for them. fma
// rounds once as a library call or as an instruction, so both variants give the same bits.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "cpu_features.hpp"
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

// The online state of one query row over some of its keys: the running maximum m, the row sum l, the
// unnormalized output o, and whether any key was visible (a state that saw none is absent).
struct RowState {
    float m = -std::numeric_limits<float>::infinity();
    float l = 0.0f;
    std::vector<float> o;
    bool seen = false;
    void reset(std::int64_t D) {
        m = -std::numeric_limits<float>::infinity();
        l = 0.0f;
        o.assign(static_cast<std::size_t>(D), 0.0f);
        seen = false;
    }
};

// The chunks' combination (docs/semantics.md, "Decoding"): an absent state leaves the other unchanged;
// otherwise m = max(a.m, b.m), c = m where finite else 0, each side scaled by exp(its m - c), products and
// sums rounded separately (no fma). The result is left in `a`.
void combine(RowState& a, const RowState& b) {
    if (!b.seen) return;
    if (!a.seen) {
        a.m = b.m, a.l = b.l, a.o = b.o, a.seen = true;
        return;
    }
    const float m = max_nan(a.m, b.m);
    const float c = std::isfinite(m) ? m : 0.0f;
    const float wa = exp32(a.m - c), wb = exp32(b.m - c);
    a.l = a.l * wa + b.l * wb;
    for (std::size_t d = 0; d < a.o.size(); ++d) a.o[d] = a.o[d] * wa + b.o[d] * wb;
    a.m = m;
}

// The pairwise tree over a row's chunk states as a binary counter: stack[i] holds a subtree of 2^i chunks
// where bit i of `pending` (the chunks pushed so far) is set. push_chunk combines chunk `st` (the state is
// consumed) with the subtrees of equal size below it; tree_result combines the odd subtrees left, from the
// smallest up, so that the last chunks are carried up unchanged until they meet a subtree of their own level
// or above, as the pairwise tree does.
void push_chunk(std::vector<RowState>& stack, std::int64_t pending, RowState& st) {
    int level = 0;
    for (; pending & (std::int64_t{1} << level); ++level) {
        combine(stack[static_cast<std::size_t>(level)], st);
        std::swap(stack[static_cast<std::size_t>(level)], st);
    }
    std::swap(stack[static_cast<std::size_t>(level)], st);
}
const RowState* tree_result(std::vector<RowState>& stack, std::int64_t pending) {
    RowState* acc = nullptr;
    for (int level = 0; level < static_cast<int>(stack.size()); ++level) {
        if (!(pending & (std::int64_t{1} << level))) continue;
        RowState& x = stack[static_cast<std::size_t>(level)];
        if (acc) combine(x, *acc);
        acc = &x;
    }
    return acc;
}

// The keys a causal mask lets query row t see are a prefix [0, end) of the S keys (each mask hides the keys
// past a diagonal; without a mask end = S): `end`, found with the mask's own test.
std::int64_t mask_end_of(ir::CausalMask causal, std::int64_t t, std::int64_t T, std::int64_t S) {
    std::int64_t lo = 0, hi = S;  // end lies in [lo, hi]
    while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (ir::attention_visible(causal, t, mid, T, S))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

constexpr std::int64_t kKeys = ir::kAttentionKeyBlock;

// The query rows of one head that share each transposed key block.
constexpr std::int64_t kTileRows = 16;

// The loops of a key block that carry nearly all the work, in two variants that give the same bits: a
// portable one, and one for x86-64 CPUs with AVX2 and FMA. Each output keeps its own chain in the contract's
// order, and fma rounds once whether it is a library call or an instruction, so vectorizing across the
// independent chains changes no bit.
struct BlockKernels {
    // kt[d * kKeys + jj] = k[jj * D + d] for the `present` keys of a block, 0 for the keys past them.
    void (*transpose)(const float* k, std::int64_t D, std::int64_t present, float* kt);
    // The shared exp of one value (a block's alpha).
    float (*exp)(float x);
    // s[jj] = the fma chain over d = 0 .. D-1 from +0 of q[d] and key jj, the block's keys transposed as
    // kt[d * kKeys + jj] (all kKeys of them: keys past S hold 0, and absent keys' scores are not used).
    void (*scores)(const float* q, const float* kt, std::int64_t D, float* s);
    // p[jj] = exp(s[jj] - c) for the visible keys, +0 for the absent ones.
    void (*probabilities)(const float* s, const bool* visible, float c, float* p);
    // o[d] = o[d] * alpha, then o[d] = fma(p[j], v[j * D + d], o[d]) for the n keys j of `keys`, ascending.
    void (*update)(float* o, std::int64_t D, float alpha, const float* p, const int* keys, int n,
                   const float* v);
};

float exp_portable(float x) {
    return exp32(x);
}

void transpose_portable(const float* k, std::int64_t D, std::int64_t present, float* kt) {
    for (std::int64_t d = 0; d < D; ++d) {
        float* row = kt + d * kKeys;
        for (std::int64_t jj = 0; jj < present; ++jj) row[jj] = k[jj * D + d];
        for (std::int64_t jj = present; jj < kKeys; ++jj) row[jj] = 0.0f;
    }
}

void scores_portable(const float* q, const float* kt, std::int64_t D, float* s) {
    for (std::int64_t jj = 0; jj < kKeys; ++jj) s[jj] = 0.0f;
    for (std::int64_t d = 0; d < D; ++d) {
        const float qd = q[d];
        const float* kd = kt + d * kKeys;
        for (std::int64_t jj = 0; jj < kKeys; ++jj) s[jj] = std::fma(qd, kd[jj], s[jj]);
    }
}

[[gnu::always_inline]] inline void probabilities_body(const float* s, const bool* visible, float c,
                                                      float* p) {
    for (std::int64_t jj = 0; jj < kKeys; ++jj) p[jj] = visible[jj] ? exp32(s[jj] - c) : 0.0f;
}

void probabilities_portable(const float* s, const bool* visible, float c, float* p) {
    probabilities_body(s, visible, c, p);
}

void update_portable(float* o, std::int64_t D, float alpha, const float* p, const int* keys, int n,
                     const float* v) {
    for (std::int64_t d = 0; d < D; ++d) o[d] = o[d] * alpha;
    for (int i = 0; i < n; ++i) {
        const float pj = p[keys[i]];
        const float* vj = v + keys[i] * D;
        for (std::int64_t d = 0; d < D; ++d) o[d] = std::fma(pj, vj[d], o[d]);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)

// The transposition in tiles of 8 keys x 8 columns, the rest one at a time (moves only: every bit kept).
[[gnu::target("avx2,fma")]] void transpose_avx2(const float* k, std::int64_t D, std::int64_t present,
                                                float* kt) {
    std::int64_t jj = 0;
    for (; jj + 8 <= present; jj += 8) {
        const float* k8 = k + jj * D;
        std::int64_t d = 0;
        for (; d + 8 <= D; d += 8) {
            __m256 r[8], t[8];
#pragma GCC unroll 8
            for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(k8 + i * D + d);
#pragma GCC unroll 4
            for (int i = 0; i < 8; i += 2) {
                t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
                t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
            }
#pragma GCC unroll 2
            for (int i = 0; i < 8; i += 4) {
                r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
                r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
                r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
                r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
            }
#pragma GCC unroll 4
            for (int i = 0; i < 4; ++i) {
                _mm256_storeu_ps(kt + (d + i) * kKeys + jj, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
                _mm256_storeu_ps(kt + (d + i + 4) * kKeys + jj, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
            }
        }
        for (; d < D; ++d)
            for (int i = 0; i < 8; ++i) kt[d * kKeys + jj + i] = k8[i * D + d];
    }
    for (std::int64_t d = 0; d < D; ++d) {
        float* row = kt + d * kKeys;
        for (std::int64_t j = jj; j < present; ++j) row[j] = k[j * D + d];
        for (std::int64_t j = present; j < kKeys; ++j) row[j] = 0.0f;
    }
}

// The scores: lane jj of the 8 vectors accumulates key jj's chain over d.
[[gnu::target("avx2,fma")]] void scores_avx2(const float* q, const float* kt, std::int64_t D, float* s) {
    constexpr int kVectors = static_cast<int>(kKeys / 8);
    __m256 acc[kVectors];
#pragma GCC unroll 8
    for (int i = 0; i < kVectors; ++i) acc[i] = _mm256_setzero_ps();
    for (std::int64_t d = 0; d < D; ++d) {
        const __m256 qd = _mm256_set1_ps(q[d]);
        const float* kd = kt + d * kKeys;
#pragma GCC unroll 8
        for (int i = 0; i < kVectors; ++i) acc[i] = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 8 * i), acc[i]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < kVectors; ++i) _mm256_storeu_ps(s + 8 * i, acc[i]);
}

// The shared exp inlined (flatten), so that its double fmas are instructions rather than library calls.
[[gnu::target("avx2,fma"), gnu::flatten]] void probabilities_avx2(const float* s, const bool* visible,
                                                                  float c, float* p) {
    probabilities_body(s, visible, c, p);
}

// The same for one value (a block's alpha).
[[gnu::target("avx2,fma"), gnu::flatten]] float exp_avx2(float x) {
    return exp32(x);
}

// Columns [0, 8 N) of the output update, held in N vectors over the block's keys.
template <int N>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void update_columns_avx2(float* o, std::int64_t D,
                                                                                __m256 alpha, const float* p,
                                                                                const int* keys, int n,
                                                                                const float* v) {
    __m256 acc[N];
#pragma GCC unroll 8
    for (int i = 0; i < N; ++i) acc[i] = _mm256_mul_ps(_mm256_loadu_ps(o + 8 * i), alpha);
    for (int k = 0; k < n; ++k) {
        const __m256 pj = _mm256_set1_ps(p[keys[k]]);
        const float* vj = v + keys[k] * D;
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) acc[i] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 8 * i), acc[i]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < N; ++i) _mm256_storeu_ps(o + 8 * i, acc[i]);
}

// The output update across d: 64 columns at a time, then 32, 16 and 8, the last D mod 8 one at a time.
[[gnu::target("avx2,fma")]] void update_avx2(float* o, std::int64_t D, float alpha, const float* p,
                                             const int* keys, int n, const float* v) {
    const __m256 a = _mm256_set1_ps(alpha);
    std::int64_t d = 0;
    for (; d + 64 <= D; d += 64) update_columns_avx2<8>(o + d, D, a, p, keys, n, v + d);
    if (d + 32 <= D) update_columns_avx2<4>(o + d, D, a, p, keys, n, v + d), d += 32;
    if (d + 16 <= D) update_columns_avx2<2>(o + d, D, a, p, keys, n, v + d), d += 16;
    if (d + 8 <= D) update_columns_avx2<1>(o + d, D, a, p, keys, n, v + d), d += 8;
    for (; d < D; ++d) {
        __m128 x = _mm_mul_ss(_mm_set_ss(o[d]), _mm_set_ss(alpha));
        for (int k = 0; k < n; ++k)
            x = _mm_fmadd_ss(_mm_set_ss(p[keys[k]]), _mm_set_ss(v[keys[k] * D + d]), x);
        o[d] = _mm_cvtss_f32(x);
    }
}

#endif

const BlockKernels& block_kernels() {
    static const BlockKernels k = [] {
#if defined(__x86_64__) && defined(__GNUC__)
        if (loom::detail::cpu_has_avx2_fma())
            return BlockKernels{&transpose_avx2, &exp_avx2, &scores_avx2, &probabilities_avx2, &update_avx2};
#endif
        return BlockKernels{&transpose_portable, &exp_portable, &scores_portable, &probabilities_portable,
                            &update_portable};
    }();
    return k;
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
    // q, k and v as contiguous float32 (exact for the halves; contiguous float32 operands read in place): row
    // t of head h of batch entry b is at ((b H + h) T + t) D, key j of kv head hk at ((b Hkv + hk) S + j) D.
    const auto as_float32 = [](const Tensor& t) {
        if (t.dtype() != DType::Float32) return cast_tensor(t, DType::Float32);
        return t.is_contiguous() ? t : materialize(t);
    };
    const Tensor qc = as_float32(q), kc = as_float32(k), vc = as_float32(v);
    const float* qd = static_cast<const float*>(qc.data());
    const float* kd = static_cast<const float*>(kc.data());
    const float* vd = static_cast<const float*>(vc.data());
    const std::int64_t chunks = ir::attention_key_chunks(T, S);
    const std::int64_t chunk_keys = chunks == 1 ? S : ir::kAttentionKeyChunk;
    Tensor result32 = Tensor::host(n.shape(), DType::Float32);
    auto* res = static_cast<float*>(result32.data());
    const BlockKernels& kernels = block_kernels();
    // The work: tiles of up to kTileRows query rows of one head, each key block transposed once for all of
    // them; every row still takes its keys in the contract's order. Within a head the tiles are taken last
    // first, the longest under a causal mask.
    const std::int64_t tiles = (T + kTileRows - 1) / kTileRows;
    loom::detail::parallel_for(batches * H * tiles, 1, [&](std::int64_t lo, std::int64_t hi) {
        const Tensor* const bias_t = bias;  // a local copy, which the loops need not read again
        const std::int64_t bias_stride = bias_t ? bias_t->strides().back() : 0;
        float s[kKeys], p[kKeys], bj[kKeys];
        bool visible[kKeys];
        int keys[kKeys];
        std::vector<float> kt(static_cast<std::size_t>(D * kKeys));
        // Per row of the tile: the bias row, the first key its causal mask hides, one chunk's state, and the
        // pairwise tree's pending states (push_chunk).
        std::int64_t bias_row[kTileRows], mask_end[kTileRows];
        RowState st[kTileRows];
        std::vector<RowState> stacks[kTileRows];
        for (auto& stack : stacks)
            stack.resize(static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(chunks))));
        for (std::int64_t item = lo; item < hi; ++item) {
            const std::int64_t bh = item / tiles, tile = tiles - 1 - item % tiles;
            const std::int64_t h = bh % H, b = bh / H, hk = h / group;
            const std::int64_t t0 = tile * kTileRows, rows = std::min(kTileRows, T - t0);
            const float* kh = kd + (b * Hkv + hk) * S * D;
            const float* vh = vd + (b * Hkv + hk) * S * D;
            for (std::int64_t i = 0; i < rows; ++i) {
                bias_row[i] = bias_t ? row_offset(*bias_t, b, h, t0 + i) : 0;
                mask_end[i] = mask_end_of(causal, t0 + i, T, S);
            }
            std::int64_t pending = 0;  // chunks pushed: bit i set when stack[i] holds a subtree
            for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
                for (std::int64_t i = 0; i < rows; ++i) st[i].reset(D);
                const std::int64_t chunk_end = std::min(S, (chunk + 1) * chunk_keys);
                for (std::int64_t j0 = chunk * chunk_keys; j0 < chunk_end; j0 += kKeys) {
                    bool transposed = false;
                    for (std::int64_t i = 0; i < rows; ++i) {
                        const std::int64_t row = bh * T + t0 + i;
                        RowState& state = st[i];
                        // The keys the mask lets the row see in this block: the first `shown`; a block with
                        // every key masked changes nothing.
                        const std::int64_t shown = std::clamp(mask_end[i] - j0, std::int64_t{0}, kKeys);
                        if (shown == 0) continue;
                        for (std::int64_t jj = 0; jj < kKeys; ++jj) visible[jj] = jj < shown;
                        if (bias_t) {
                            bool any = false;
                            for (std::int64_t jj = 0; jj < shown; ++jj) {
                                bj[jj] = load(*bias_t, bias_row[i] + (j0 + jj) * bias_stride);
                                visible[jj] = bj[jj] != -std::numeric_limits<float>::infinity();
                                any = any || visible[jj];
                            }
                            if (!any) continue;
                        }
                        if (!transposed) {
                            kernels.transpose(kh + j0 * D, D, std::min(kKeys, S - j0), kt.data());
                            transposed = true;
                        }
                        kernels.scores(qd + row * D, kt.data(), D, s);
                        float bm = -std::numeric_limits<float>::infinity();
                        int nvis = 0;
                        for (std::int64_t jj = 0; jj < kKeys; ++jj) {
                            if (!visible[jj]) continue;
                            float acc = s[jj] * scale;
                            if (bias_t) acc = acc + bj[jj];
                            s[jj] = acc;
                            bm = nvis > 0 ? max_nan(bm, acc) : acc;
                            keys[nvis++] = static_cast<int>(jj);
                        }
                        const float mn = max_nan(state.m, bm);
                        const float c = std::isfinite(mn) ? mn : 0.0f;
                        const float alpha = kernels.exp(state.m - c);
                        kernels.probabilities(s, visible, c, p);
                        state.l = state.l * alpha + block_sum(p);
                        kernels.update(state.o.data(), D, alpha, p, keys, nvis, vh + j0 * D);
                        state.m = mn;
                        state.seen = true;
                    }
                }
                for (std::int64_t i = 0; i < rows; ++i) push_chunk(stacks[i], pending, st[i]);
                ++pending;
            }
            for (std::int64_t i = 0; i < rows; ++i) {
                const RowState* acc = tree_result(stacks[i], pending);
                const std::int64_t row = bh * T + t0 + i;
                for (std::int64_t d = 0; d < D; ++d)
                    res[row * D + d] = acc->seen ? acc->o[static_cast<std::size_t>(d)] / acc->l : 0.0f;
            }
        }
    });
    return out == DType::Float32 ? result32 : cast(result32, out);
}

}  // namespace loom::reference::detail

namespace loom::reference {

namespace {

// The spacing of `t`'s values at magnitude y (its subnormal spacing below the normal range).
double ulp_of(DType t, double y) {
    const int p = t == DType::Float16 ? 11 : 8;         // significand bits
    const int emin = t == DType::Float16 ? -14 : -126;  // the smallest normal exponent
    int e = y > 0 && std::isfinite(y) ? std::ilogb(y) : emin;
    if (e < emin) e = emin;
    return std::ldexp(1.0, e - (p - 1));
}

}  // namespace

AttentionBound attention_bound(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                               const Tensor* bias_in, ir::CausalMask causal, float scale) {
    const int r = q_in.rank();
    const DType dt = q_in.dtype();
    if (r < 3 || k_in.rank() != r || v_in.rank() != r || (dt != DType::Float16 && dt != DType::BFloat16) ||
        k_in.shape() != v_in.shape() || q_in.shape().back() != k_in.shape().back())
        throw Error(
            fmt::format("reference::attention_bound(): q {} {}, k {} and v {}: float16 or bfloat16 "
                        "q [B..., H, T, D], k and v [B..., Hkv, S, D]",
                        to_string(q_in.shape()), name(dt), to_string(k_in.shape()), to_string(v_in.shape())));
    const Tensor q = cast(q_in, DType::Float64), k = cast(k_in, DType::Float64),
                 v = cast(v_in, DType::Float64);
    const auto at = [&](const Tensor& t, int from_end) {
        return t.shape()[static_cast<std::size_t>(r - from_end)];
    };
    const std::int64_t H = at(q, 3), T = at(q, 2), D = at(q, 1), Hkv = at(k, 3), S = at(k, 2);
    if (Hkv == 0 || H % Hkv != 0)
        throw Error(fmt::format("reference::attention_bound(): {} query heads over {} kv heads", H, Hkv));
    std::int64_t batches = 1;
    for (int d = 0; d + 3 < r; ++d) batches *= q.shape()[static_cast<std::size_t>(d)];
    // The bias as float64, broadcast to [B..., H, T, S] by strides (0 along its size-1 or absent axes).
    Tensor bias;
    std::vector<std::int64_t> bstride(static_cast<std::size_t>(r), 0);
    if (bias_in) {
        bias = cast(*bias_in, DType::Float64);
        const int br = bias.rank();
        std::int64_t st = 1;
        for (int d = br - 1; d >= 0; --d) {
            const int full = r - br + d;
            if (full >= 0 && bias.shape()[static_cast<std::size_t>(d)] != 1)
                bstride[static_cast<std::size_t>(full)] = st;
            st *= bias.shape()[static_cast<std::size_t>(d)];
        }
    }
    // Full-shape axes of the bias: batch axes (r - 3 of them), H, T, S.
    const auto bias_at = [&](std::int64_t b, std::int64_t h, std::int64_t t, std::int64_t j) {
        std::int64_t off = h * bstride[static_cast<std::size_t>(r - 3)] +
                           t * bstride[static_cast<std::size_t>(r - 2)] +
                           j * bstride[static_cast<std::size_t>(r - 1)];
        for (int d = r - 4; d >= 0; --d) {
            const std::int64_t e = q.shape()[static_cast<std::size_t>(d)];
            off += (b % e) * bstride[static_cast<std::size_t>(d)];
            b /= e;
        }
        return static_cast<const double*>(bias.data())[off];
    };
    const auto* qd = static_cast<const double*>(q.data());
    const auto* kd = static_cast<const double*>(k.data());
    const auto* vd = static_cast<const double*>(v.data());
    AttentionBound out{Tensor::host(q.shape(), DType::Float64), Tensor::host(q.shape(), DType::Float64)};
    auto* val = static_cast<double*>(out.value.data());
    auto* bnd = static_cast<double*>(out.bound.data());
    const double uT = dt == DType::Float16 ? 0x1p-11 : 0x1p-8;
    const double c2 = dt == DType::Float16 ? 0x1p-23 : 0x1p-125;
    const std::int64_t tiles = (S + 31) / 32;
    const double g = product_gamma(S + 2 * tiles + 16, kMmaUnit);
    const double gD = product_gamma(D, kMmaUnit);
    const std::int64_t group = H / Hkv;
    constexpr double kInf = std::numeric_limits<double>::infinity();
    loom::detail::parallel_for(batches * H * T, 4, [&](std::int64_t lo, std::int64_t hi) {
        std::vector<double> s(static_cast<std::size_t>(S)), mag(static_cast<std::size_t>(S)),
            sq(static_cast<std::size_t>(S)), num(static_cast<std::size_t>(D)),
            absn(static_cast<std::size_t>(D)), abs1(static_cast<std::size_t>(D));
        std::vector<std::int64_t> vis;
        for (std::int64_t row = lo; row < hi; ++row) {
            const std::int64_t t = row % T, h = (row / T) % H, b = row / (T * H), hk = h / group;
            const double* qr = qd + row * D;
            const double* kh = kd + (b * Hkv + hk) * S * D;
            const double* vh = vd + (b * Hkv + hk) * S * D;
            vis.clear();
            double smax = -kInf, sabs = 0.0;
            bool finite = true;
            for (std::int64_t j = 0; j < S; ++j) {
                if (!ir::attention_visible(causal, t, j, T, S)) continue;
                const double bj = bias_in ? bias_at(b, h, t, j) : 0.0;
                if (bj == -kInf) continue;
                double acc = 0.0, m = 0.0;
                for (std::int64_t d = 0; d < D; ++d) {
                    acc += qr[d] * kh[j * D + d];
                    m += std::fabs(qr[d] * kh[j * D + d]);
                }
                const std::size_t js = static_cast<std::size_t>(j);
                sq[js] = static_cast<double>(scale) * acc;
                s[js] = sq[js] + bj;
                mag[js] = m;
                finite = finite && std::isfinite(s[js]);
                smax = std::max(smax, s[js]);
                sabs = std::max(sabs, std::fabs(s[js]));
                vis.push_back(j);
            }
            double* vo = val + row * D;
            double* bo = bnd + row * D;
            if (vis.empty()) {
                for (std::int64_t d = 0; d < D; ++d) vo[d] = 0.0, bo[d] = 0.0;
                continue;
            }
            double l = 0.0, theta = 0.0;
            std::fill(num.begin(), num.end(), 0.0);
            std::fill(absn.begin(), absn.end(), 0.0);
            std::fill(abs1.begin(), abs1.end(), 0.0);
            // Per exp (one per key, one per tile's alpha): the roundings of s - c and of its product with
            // log2 e (and of log2 e itself) shift the argument by at most 2^-21 (max |s| + 1); ex2.approx is
            // within 2 ulp (2^-22, relative).
            const double shift = (static_cast<double>(tiles) + 1.0) * 0x1p-21 * (sabs + 1.0);
            const double rounds = std::pow(1.0 + 0x1p-22, static_cast<double>(tiles + 1));
            for (std::int64_t j : vis) {
                const std::size_t js = static_cast<std::size_t>(j);
                const double pj = finite ? std::exp(s[js] - smax) : 0.0;
                const double delta = static_cast<double>(scale) * gD * mag[js] +
                                     0x1p-23 * (std::fabs(sq[js]) + std::fabs(s[js])) + shift;
                theta = std::max(theta, (1.0 + uT) * rounds * std::exp(delta) - 1.0);
                l += pj;
                for (std::int64_t d = 0; d < D; ++d) {
                    const double x = vh[j * D + d];
                    num[static_cast<std::size_t>(d)] += pj * x;
                    absn[static_cast<std::size_t>(d)] += pj * std::fabs(x);
                    abs1[static_cast<std::size_t>(d)] += std::fabs(x);
                }
            }
            const double a = (1.0 + theta) * (1.0 + g) - 1.0;
            const double c1 = a < 1.0 ? 4.0 * a / (1.0 - a) + 0x1p-23 : kInf;
            for (std::int64_t d = 0; d < D; ++d) {
                const std::size_t ds = static_cast<std::size_t>(d);
                const double o = num[ds] / l;
                vo[d] = finite ? o : std::numeric_limits<double>::quiet_NaN();
                if (!finite || !std::isfinite(o)) {
                    bo[d] = kInf;
                    continue;
                }
                const double e = c1 * absn[ds] / l + c2 * abs1[ds] / l;
                bo[d] = e + ulp_of(dt, std::fabs(o) + e);
            }
        }
    });
    return out;
}

}  // namespace loom::reference
