// The device code of attention kernels (Family::Attention; docs/semantics.md, "Attention"), pasted after the
// prelude into every attention kernel's source by codegen/embed_text.cmake (never into other kernels). The
// emitted entry point (codegen/src/cuda/emit_attention.cpp) instantiates one of these templates with its
// plan's constants.
//
// attention_simt: CUDA cores, float32 arithmetic, the reference's order bit for bit (float32, and float16 or
// bfloat16 read as float32). A block takes 64 queries; 128 threads as 8 row groups of 16 lanes, each thread 8
// queries x 4 consecutive keys of a 64-key block (kAttentionKeyBlock) and 8 queries x the columns
// 4 * lane + 64 j of the output. Per key block: the keys (transposed) and values go to shared memory; each
// score is the fma chain over d from +0, then scaled (and biased); the 16 lanes of a row group hold whole
// rows, so the block's row maximum is a butterfly over them and the row sum the reductions' row order
// exactly (each lane's run of 4 keys, then the butterfly over runs 8, 4, 2, 1); the probabilities go to
// shared memory row by row and the output is scaled by alpha, then updated with fma over the block's keys in
// ascending order. Masked keys are stored as -0 (exp never gives -0) and skipped: absent, not 0 * v.
// Blocks above a causal diagonal are not visited; query blocks are ordered longest first.
//
// attention_mma: float16 and bfloat16 on tensor cores (mma.sync.m16n8k16, float32 accumulators), the
// schedule of FlashAttention-2; within the bound of docs/semantics.md, "Attention in float16 and bfloat16 on
// tensor cores", not the reference's bits. See the comment above attention_mma.

namespace lm {

// LOOM_ATTENTION_PARAMS

namespace att {

constexpr int kKeys = 64;                  // keys per block: kAttentionKeyBlock, the order's block
constexpr int kThreads = 128;              // 8 row groups x 16 lanes
constexpr unsigned kAbsent = 0x80000000u;  // the bits of -0: a masked key's probability in shared memory

__device__ __forceinline__ float max_nan(float a, float b) {
    return (a != a || b != b) ? __int_as_float(0x7fc00000) : (a > b ? a : b);
}
// The result rounded once to the output's dtype (to nearest even).
__device__ __forceinline__ void store_value(float* dst, float r) {
    *dst = r;
}
__device__ __forceinline__ void store_value(f16* dst, float r) {
    dst->bits = float_to_f16(r);
}
__device__ __forceinline__ void store_value(bf16* dst, float r) {
    dst->bits = float_to_bf16(r);
}
__device__ __forceinline__ bool finite(float x) {
    return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u;
}

template <class T>
__device__ __forceinline__ float load(const void* base, long long i) {
    return to_reg(static_cast<const T*>(base)[i]);
}

// The offset of (batch index b over the batch axes, head h) of an operand with batch strides `bs` and head
// stride `hs`.
__device__ __forceinline__ long long head_offset(const AttentionParams& p, const long long* bs, long long hs,
                                                 long long b, long long h) {
    long long off = h * hs;
    for (int a = 3; a >= 0; --a) {
        off += (b % p.batch[a]) * bs[a];
        b /= p.batch[a];
    }
    return off;
}

// Rows [row0, row0 + kRows) of an operand's head at `base` into shared memory as float32: transposed
// (dst[d * kRows + r], the queries and keys: a thread's 4 or 8 consecutive rows are one 16-byte read) or row
// by row (dst[r * pitch + d], the values). Rows at or past `rows` are zero. Consecutive threads take
// consecutive rows for the transposed copy (conflict-free stores) and consecutive pieces of a row otherwise
// (coalesced).
template <class T, int D, bool kTransposed, int kRows = kKeys>
__device__ __forceinline__ void load_rows(float* dst, int pitch, const void* base, long long row_stride,
                                          long long col_stride, long long row0, long long rows, bool pieces) {
    constexpr int W = 16 / (int)sizeof(T);  // elements of a 16-byte piece
    if (pieces && D % W == 0) {
        constexpr int P = D / W;  // pieces per row
        for (int idx = threadIdx.x; idx < kRows * P; idx += kThreads) {
            const int r = kTransposed ? idx % kRows : idx / P;
            const int c = kTransposed ? idx / kRows : idx % P;
            float x[W];
            if (row0 + r < rows) {
                const vec<T, W> v =
                    load_vec<T, W>(static_cast<const T*>(base) + (row0 + r) * row_stride + c * W);
#pragma unroll
                for (int e = 0; e < W; ++e) x[e] = to_reg(v.v[e]);
            } else {
#pragma unroll
                for (int e = 0; e < W; ++e) x[e] = 0.0f;
            }
#pragma unroll
            for (int e = 0; e < W; ++e) {
                if (kTransposed)
                    dst[(c * W + e) * kRows + r] = x[e];
                else
                    dst[r * pitch + c * W + e] = x[e];
            }
        }
    } else {
        for (int idx = threadIdx.x; idx < kRows * D; idx += kThreads) {
            const int r = kTransposed ? idx % kRows : idx / D;
            const int d = kTransposed ? idx / kRows : idx % D;
            const float x = row0 + r < rows ? load<T>(base, (row0 + r) * row_stride + d * col_stride) : 0.0f;
            if (kTransposed)
                dst[d * kRows + r] = x;
            else
                dst[r * pitch + d] = x;
        }
    }
}

// The shared memory of attention_simt with R queries per thread (8 R per block), in floats: queries and keys
// transposed (D x 8 R and D x 64), values row by row (64 x the pitch), probabilities row by row (8 R x 64).
template <int D, int R>
struct SimtShape {
    static constexpr int kQueries = 8 * R;             // 8 row groups of R queries
    static constexpr int kPitch = (D + 63) / 64 * 64;  // a value row: the output columns 4 lane + 64 j
    static constexpr int kColumns = kPitch / 64;       // 16-byte column groups of the output per thread
    static constexpr int kFloats = D * kQueries + D * kKeys + kKeys * kPitch + kQueries * kKeys;
};

// The state one split block leaves for a row (docs/semantics.md, "Decoding"): m, l, whether the chunk saw a
// visible key, then o[0 .. D), at p.partials[((bh * T + t) * chunks + chunk) * (D + 3)].
template <int D>
__device__ __forceinline__ float* chunk_state(const AttentionParams& p, long long bh, long long t,
                                              long long chunk) {
    return p.partials + ((bh * p.queries + t) * p.chunks + chunk) * (D + 3);
}

// The combination of two chunk states (a before b), the reductions' pairwise tree's step: an absent state
// leaves the other; otherwise m = max (NaN propagating), c = m where finite else 0, each side scaled by
// exp(its m - c), products and sums rounded separately. One output column `o`; the result in a.
struct ChunkState {
    float m, l, o;
    bool seen;
};
__device__ __forceinline__ void combine(ChunkState& a, const ChunkState& b) {
    if (!b.seen) return;
    if (!a.seen) {
        a = b;
        return;
    }
    const float m = max_nan(a.m, b.m);
    const float c = finite(m) ? m : 0.0f;
    const float wa = expc::exp_f32(__fsub_rn(a.m, c)), wb = expc::exp_f32(__fsub_rn(b.m, c));
    a.l = __fadd_rn(__fmul_rn(a.l, wa), __fmul_rn(b.l, wb));
    a.o = __fadd_rn(__fmul_rn(a.o, wa), __fmul_rn(b.o, wb));
    a.m = m;
}

// The last block of a split row block: each thread takes (row, column) pairs and combines the chunks' states
// in the pairwise tree (a binary counter: stack[i] holds a subtree of 2^i chunks, combined as chunks arrive,
// the odd subtrees left combined from the smallest up at the end), then stores o / l, or 0 for a row that saw
// no visible key.
template <class T, int D, int kQueries>
__device__ void combine_chunks(const AttentionParams& p, long long bh, long long q0, char* obase) {
    for (int idx = threadIdx.x; idx < kQueries * D; idx += kThreads) {
        const int i = idx / D, d = idx % D;
        const long long t = q0 + i;
        if (t >= p.queries) continue;
        ChunkState stack[40];  // chunks < 2^40
        long long pending = 0;
        for (long long chunk = 0; chunk < p.chunks; ++chunk) {
            const float* st = chunk_state<D>(p, bh, t, chunk);
            ChunkState x{__ldcg(st), __ldcg(st + 1), __ldcg(st + 3 + d), __ldcg(st + 2) != 0.0f};
            int level = 0;
            for (; pending & (1ll << level); ++level) {
                combine(stack[level], x);
                x = stack[level];
            }
            stack[level] = x;
            ++pending;
        }
        int top = -1;
        for (int level = 0; level < 40; ++level) {
            if (!(pending & (1ll << level))) continue;
            if (top >= 0) combine(stack[level], stack[top]);
            top = level;
        }
        const ChunkState& r = stack[top];
        T* dst = reinterpret_cast<T*>(obase) + t * p.out_row + d * p.out_col;
        store_value(dst, r.seen ? __fdiv_rn(r.o, r.l) : 0.0f);
    }
}

template <class T, int D, bool kCausal, bool kBias, int R, bool kSplit>
__device__ void attention_simt(const AttentionParams& p, float* smem) {
    typedef SimtShape<D, R> Shape;
    constexpr int kQueries = Shape::kQueries;
    float* qs = smem;                        // [D][8 R]
    float* ks = qs + D * kQueries;           // [D][64]
    float* vs = ks + D * kKeys;              // [64][pitch]
    float* ps = vs + kKeys * Shape::kPitch;  // [8 R queries][64 keys]
    const int lane = threadIdx.x % 16;       // the keys 4 lane .. 4 lane + 3; the columns 4 lane + 64 j
    const int group = threadIdx.x / 16;      // the queries R group .. R group + R - 1
    // Split keys: consecutive blocks take the chunks of one row block. Longest query blocks first (a causal
    // block's work grows with its position).
    const long long chunk = kSplit ? blockIdx.x % p.chunks : 0;
    const long long linear = kSplit ? blockIdx.x / p.chunks : blockIdx.x;
    const long long qblock = p.query_blocks - 1 - linear / p.batch_heads;
    const long long bh = linear % p.batch_heads;
    const long long b = bh / p.heads, h = bh % p.heads, hk = h / p.group;
    const long long q0 = qblock * kQueries;
    const char* qbase =
        static_cast<const char*>(p.q) + head_offset(p, p.q_batch, p.q_head, b, h) * (long long)sizeof(T);
    const char* kbase =
        static_cast<const char*>(p.k) + head_offset(p, p.k_batch, p.k_head, b, hk) * (long long)sizeof(T);
    const char* vbase =
        static_cast<const char*>(p.v) + head_offset(p, p.v_batch, p.v_head, b, hk) * (long long)sizeof(T);
    const long long bias_off = kBias ? head_offset(p, p.bias_batch, p.bias_head, b, h) : 0;
    const bool pieces = p.vector_loads != 0;
    // Value rows past D are read by the column groups but never stored: zero them once.
    for (int i = threadIdx.x; i < kKeys * Shape::kPitch; i += kThreads) vs[i] = 0.0f;
    load_rows<T, D, true, kQueries>(qs, 0, qbase, p.q_row, p.q_col, q0, p.queries, pieces);

    float m[R], l[R], o[R][Shape::kColumns][4];
    bool seen[R];
#pragma unroll
    for (int i = 0; i < R; ++i) {
        m[i] = __int_as_float(0xff800000);  // -inf
        l[i] = 0.0f;
        seen[i] = false;
#pragma unroll
        for (int j = 0; j < Shape::kColumns; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) o[i][j][e] = 0.0f;
    }
    // The key blocks to visit: this block's chunk, and causal rows see keys up to t + diagonal.
    const long long key_begin = chunk * p.chunk_keys;
    long long key_end = kSplit ? min(p.keys, key_begin + p.chunk_keys) : p.keys;
    if (kCausal) {
        const long long last = min(q0 + kQueries, p.queries) - 1 + p.diagonal + 1;
        key_end = max(0ll, min(key_end, last));
    }
    for (long long k0 = key_begin; k0 < key_end; k0 += kKeys) {
        __syncthreads();  // the previous block's values are read
        load_rows<T, D, true>(ks, 0, kbase, p.k_row, p.k_col, k0, p.keys, pieces);
        load_rows<T, D, false>(vs, Shape::kPitch, vbase, p.v_row, p.v_col, k0, p.keys, pieces);
        __syncthreads();
        // Scores: the fma chain over d from +0 (the contract's s), R queries x 4 keys per thread.
        float s[R][4];
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[i][e] = 0.0f;
#pragma unroll 4
        for (int d = 0; d < D; ++d) {
            float qr[R];
            if constexpr (R % 4 == 0) {
#pragma unroll
                for (int i = 0; i < R; i += 4) {
                    const float4 qa = *reinterpret_cast<const float4*>(qs + d * kQueries + R * group + i);
                    qr[i] = qa.x, qr[i + 1] = qa.y, qr[i + 2] = qa.z, qr[i + 3] = qa.w;
                }
            } else {
#pragma unroll
                for (int i = 0; i < R; ++i) qr[i] = qs[d * kQueries + R * group + i];
            }
            const float4 kv = *reinterpret_cast<const float4*>(ks + d * kKeys + 4 * lane);
            const float kr[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
            for (int i = 0; i < R; ++i)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[i][e] = __fmaf_rn(qr[i], kr[e], s[i][e]);
        }
        // Whether every key of the block is visible to every query of the block: the update needs no test.
        const bool full = !kBias && k0 + kKeys <= p.keys && (!kCausal || k0 + kKeys - 1 <= q0 + p.diagonal);
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const long long t = q0 + R * group + i;
            bool vis[4];
            float bm = __int_as_float(0xff800000);
            int any = 0;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const long long j = k0 + 4 * lane + e;
                vis[e] = j < p.keys && (!kCausal || j <= t + p.diagonal);
                float x = __fmul_rn(s[i][e], p.scale);
                if (kBias && vis[e] && t < p.queries) {
                    const float bj = load<T>(p.bias, bias_off + t * p.bias_row + j * p.bias_col);
                    vis[e] = bj != __int_as_float(0xff800000);
                    x = __fadd_rn(x, bj);
                }
                s[i][e] = x;
                if (vis[e]) {
                    bm = max_nan(bm, x);
                    any = 1;
                }
            }
#pragma unroll
            for (int h = 8; h >= 1; h /= 2) {
                bm = max_nan(bm, __shfl_xor_sync(0xffffffffu, bm, h));
                any |= __shfl_xor_sync(0xffffffffu, any, h);
            }
            // Every lane of the warp takes part in the shuffles below (`any` differs between the warp's two
            // row groups), so the probabilities are 0 and the update is skipped for a row without a visible
            // key.
            float prob[4], alpha = 1.0f;
            const float mn = max_nan(m[i], bm);
            const float c = finite(mn) ? mn : 0.0f;
#pragma unroll
            for (int e = 0; e < 4; ++e) prob[e] = any && vis[e] ? expc::exp_f32(__fsub_rn(s[i][e], c)) : 0.0f;
            // The row sum in the reductions' row order: this lane's run, then the butterfly over runs.
            float run = __fadd_rn(__fadd_rn(__fadd_rn(prob[0], prob[1]), prob[2]), prob[3]);
#pragma unroll
            for (int w = 8; w >= 1; w /= 2) run = __fadd_rn(run, __shfl_xor_sync(0xffffffffu, run, w));
            if (any) {
                alpha = expc::exp_f32(__fsub_rn(m[i], c));
                l[i] = __fadd_rn(__fmul_rn(l[i], alpha), run);
                m[i] = mn;
                seen[i] = true;
            }
            float4 w;
            w.x = vis[0] ? prob[0] : __uint_as_float(kAbsent);
            w.y = vis[1] ? prob[1] : __uint_as_float(kAbsent);
            w.z = vis[2] ? prob[2] : __uint_as_float(kAbsent);
            w.w = vis[3] ? prob[3] : __uint_as_float(kAbsent);
            *reinterpret_cast<float4*>(ps + (R * group + i) * kKeys + 4 * lane) = w;
            if (any)
#pragma unroll
                for (int j = 0; j < Shape::kColumns; ++j)
#pragma unroll
                    for (int e = 0; e < 4; ++e) o[i][j][e] = __fmul_rn(o[i][j][e], alpha);
        }
        __syncwarp();  // a row group's probabilities are read by its own 16 lanes only
        // The output: fma over the block's keys in ascending order, absent keys skipped.
        const int nkeys = (int)min((long long)kKeys, p.keys - k0);
        for (int j4 = 0; j4 < nkeys; j4 += 4) {
            float pr[R][4];
#pragma unroll
            for (int i = 0; i < R; ++i) {
                const float4 x = *reinterpret_cast<const float4*>(ps + (R * group + i) * kKeys + j4);
                pr[i][0] = x.x;
                pr[i][1] = x.y;
                pr[i][2] = x.z;
                pr[i][3] = x.w;
            }
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                if (j4 + e >= nkeys) break;
#pragma unroll
                for (int j = 0; j < Shape::kColumns; ++j) {
                    const float4 x =
                        *reinterpret_cast<const float4*>(vs + (j4 + e) * Shape::kPitch + 64 * j + 4 * lane);
                    const float vr[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
                    for (int i = 0; i < R; ++i)
#pragma unroll
                        for (int c = 0; c < 4; ++c) {
                            if (full) {
                                o[i][j][c] = __fmaf_rn(pr[i][e], vr[c], o[i][j][c]);
                            } else {
                                const float f = __fmaf_rn(pr[i][e], vr[c], o[i][j][c]);
                                o[i][j][c] = __float_as_uint(pr[i][e]) == kAbsent ? o[i][j][c] : f;
                            }
                        }
                }
            }
        }
    }
    char* obase =
        static_cast<char*>(p.out) + head_offset(p, p.out_batch, p.out_head, b, h) * (long long)sizeof(T);
    if constexpr (kSplit) {
        // This chunk's state for each of the block's rows; the last block of the row block to finish
        // combines them all.
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const long long t = q0 + R * group + i;
            if (t >= p.queries) continue;
            float* st = chunk_state<D>(p, bh, t, chunk);
            if (lane == 0) {
                st[0] = m[i];
                st[1] = l[i];
                st[2] = seen[i] ? 1.0f : 0.0f;
            }
#pragma unroll
            for (int j = 0; j < Shape::kColumns; ++j)
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const int d = 64 * j + 4 * lane + c;
                    if (d < D) st[3 + d] = o[i][j][c];
                }
        }
        __shared__ int is_last;
        __threadfence();  // the states before the count
        __syncthreads();
        if (threadIdx.x == 0) is_last = arrive(p.counters + linear, 1u, (unsigned int)p.chunks) ? 1 : 0;
        __syncthreads();
        if (!is_last) return;
        __threadfence();  // the other blocks' states after the count
        combine_chunks<T, D, kQueries>(p, bh, q0, obase);
        return;
    }
    // The result, divided once: o / l; a row that saw no key gives 0.
#pragma unroll
    for (int i = 0; i < R; ++i) {
        const long long t = q0 + R * group + i;
        if (t >= p.queries) continue;
#pragma unroll
        for (int j = 0; j < Shape::kColumns; ++j)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int d = 64 * j + 4 * lane + c;
                if (d >= D) continue;
                const float r = seen[i] ? __fdiv_rn(o[i][j][c], l[i]) : 0.0f;
                T* dst = reinterpret_cast<T*>(obase) + t * p.out_row + d * p.out_col;
                store_value(dst, r);
            }
    }
}

// Left out of tests/unit/test_attention_kernel.cpp, which runs attention_simt on the host: inline PTX below.
#ifndef LOOM_ATTENTION_HOST_SIMULATION
// ---------------------------------------------------------------------------------------------------------
// attention_mma: float16 and bfloat16 on tensor cores, FlashAttention-2's schedule on mma.sync.m16n8k16.
//
// A block takes MmaShape<D>::kQueries queries (128 for D <= 128, else 64) of one head; each of its warps owns
// 16 query rows. The block's queries are copied to shared memory once and, for D <= 128, held in registers as
// MMA A fragments (ldmatrix); for larger D they are read from shared memory at every step (registers). Keys
// and values stream through shared memory in tiles of kKeys (64, or 32 for D > 128), double buffered with
// cp.async: the copy of tile i + 1 runs while tile i is computed. Rows are padded to D + 8 elements: a row is
// then an odd number of 16-byte units (D is a multiple of 16), so the 8 rows an ldmatrix phase reads fall in
// 8 different bank groups (conflict-free) without a swizzle.
//
// Per tile and warp: S = Q Kᵀ in float32 accumulators (K tiles read with ldmatrix as the col-major B
// operand); scaled, biased and masked (a masked key's score is -inf and its probability exactly 0); the
// online softmax per row with the contract's rules in this kernel's order (the row maximum across the quad
// of 4 lanes that holds a row, NaN propagating; c = the running maximum where finite, else 0; a row with no
// visible key in a tile leaves its state alone; a row that saw no key gives 0); the probabilities rounded to
// T, summed into l (so l is the sum of exactly the weights the product uses) and packed in registers as the A
// operand of P V; V read with ldmatrix.trans as the B operand; O rescaled by alpha before each update. The
// result is O / l rounded to T (to nearest even) and stored with the output's strides.
//
// Masked keys are absent, also when their value row holds Inf or NaN. The MMA computes 0 * v for a masked
// key (probability 0), which is NaN for a non-finite v; so:
//  - keys at or past S: their K and V rows are zero-filled by the copy, so 0 * 0 = 0;
//  - a tile that may hold a masked key inside S (kBias, or a causal tile that reaches past some row's
//    diagonal) is scanned for non-finite values: each thread checks the V pieces it copied itself (its
//    cp.async writes are visible to it after the wait), and __syncthreads_or, which is also the barrier that
//    publishes the tile, votes. If no V element is non-finite, 0 * v = 0 exactly for every masked key and the
//    tensor-core product is exact in what it adds for them. Otherwise (rare: Inf or NaN values next to a
//    mask) that tile's P V runs on CUDA cores: each lane takes its rows' probabilities from its quad with
//    shuffles and adds p * v with fma for the visible keys only (a masked key's probability is held as -0,
//    which exp never gives), so a masked key's value is never read into the output;
//  - tiles with every key visible to every row need no scan: an Inf or NaN value there belongs in the output.
// A visible key's non-finite value propagates as the reference's does (p * Inf, 0 * Inf = NaN).

// The block shape of attention_mma; AttentionPlan (attention_plan.cpp, mma_shape) mirrors it and the entry
// point asserts that both agree.
template <int D>
struct MmaShape {
    static_assert(D % 16 == 0 && D >= 16 && D <= 256, "attention_mma: D a multiple of 16, at most 256");
    static constexpr int kQueries = D <= 128 ? 128 : 64;  // queries per block: 16 per warp
    static constexpr int kWarps = kQueries / 16;
    static constexpr int kThreads = 32 * kWarps;
    static constexpr int kKeys = D <= 128 ? 64 : 32;  // keys per tile (fewer for large D: registers)
    static constexpr int kPitch = D + 8;              // elements per shared row: an odd count of 16 bytes
    static constexpr int kPieces = D / 8;             // 16-byte pieces per row
    static constexpr bool kQInRegisters = D <= 128;
    static constexpr int kQElems = kQueries * kPitch;
    static constexpr int kTileElems = kKeys * kPitch;
    static constexpr int kBytes = (kQElems + 4 * kTileElems) * 2;  // Q, then K and V twice
};

// e^y on the multifunction unit, for the tensor-core kernel's probabilities and rescalings (which keep a
// bound, not the reference's bits): 2^(y log2 e) by ex2.approx.f32 without .ftz, so subnormal results stay.
// One multiply and one MUFU instruction where the correctly rounded exp_f32 takes some 40 double-precision
// and integer instructions; docs/semantics.md's bound counts the multiply's rounding and ex2's 2 ulp.
__device__ __forceinline__ float exp_mufu(float y) {
    float r;
    asm("ex2.approx.f32 %0, %1;\n" : "=f"(r) : "f"(__fmul_rn(y, 1.44269504088896340736f)));
    return r;
}

template <class T>
struct MmaType;
template <>
struct MmaType<f16> {
    static __device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4],
                                               const unsigned (&b)[2]) {
        mma_m16n8k16_f16(c, a, b);
    }
    static __device__ __forceinline__ unsigned short bits(float x) { return float_to_f16(x); }
    static __device__ __forceinline__ float value(unsigned short h) { return f16_to_float(h); }
    static __device__ __forceinline__ bool finite(unsigned short h) { return (h & 0x7c00u) != 0x7c00u; }
};
template <>
struct MmaType<bf16> {
    static __device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4],
                                               const unsigned (&b)[2]) {
        mma_m16n8k16_bf16(c, a, b);
    }
    static __device__ __forceinline__ unsigned short bits(float x) { return float_to_bf16(x); }
    static __device__ __forceinline__ float value(unsigned short h) { return bf16_to_float(h); }
    static __device__ __forceinline__ bool finite(unsigned short h) { return (h & 0x7f80u) != 0x7f80u; }
};

// ldmatrix: four 8 x 8 matrices of 16-bit elements from shared memory; lane l gives the address of row l % 8
// of matrix l / 8. Without .trans lane l receives row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 of each
// matrix (the A and col-major B fragments of mma.sync); with .trans the same of the transposed matrix.
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const unsigned short* p) {
#if __CUDA_ARCH__ >= 800
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
#endif
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], const unsigned short* p) {
#if __CUDA_ARCH__ >= 800
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
#endif
}

// Two 16-bit values in one register, the first in the low half (the order along k of an MMA fragment).
__device__ __forceinline__ unsigned pack_halves(unsigned short lo, unsigned short hi) {
    return (unsigned)lo | ((unsigned)hi << 16);
}

// Rows [row0, row0 + R) of an operand's head at `base` (elements of 16 bits) into shared memory `dst` with
// row pitch `pitch`; rows at or past `rows` are zero. Thread i takes the pieces i, i + threads, ... (piece
// idx is row idx / P, 16-byte column idx % P): cp.async when `pieces` (d stride 1, rows and pointer 16-byte
// aligned), element loads otherwise. When `scan` is set, returns whether a piece this thread copied holds a
// non-finite value (after the thread's own copies completed: the caller waits first; see mma_scan).
template <class T, int D, int R, int kThreadCount>
__device__ __forceinline__ void mma_copy(unsigned short* dst, int pitch, const void* base,
                                         long long row_stride, long long col_stride, long long row0,
                                         long long rows, bool pieces) {
    constexpr int P = D / 8;
    const unsigned short* src = static_cast<const unsigned short*>(base);
    for (int idx = threadIdx.x; idx < R * P; idx += kThreadCount) {
        const int r = idx / P, c = idx % P;
        unsigned short* d = dst + r * pitch + c * 8;
        const bool in = row0 + r < rows;
        if (pieces) {
            cp_async16(d, in ? src + (row0 + r) * row_stride + c * 8 : src, in ? 16 : 0);
        } else {
            unsigned short h[8];
#pragma unroll
            for (int e = 0; e < 8; ++e)
                h[e] = in ? src[(row0 + r) * row_stride + (c * 8 + e) * col_stride] : 0;
            uint4 w;
            w.x = pack_halves(h[0], h[1]);
            w.y = pack_halves(h[2], h[3]);
            w.z = pack_halves(h[4], h[5]);
            w.w = pack_halves(h[6], h[7]);
            *reinterpret_cast<uint4*>(d) = w;
        }
    }
}

// Whether a piece of `tile` that this thread copied (mma_copy's assignment) holds a non-finite element.
template <class T, int D, int R, int kThreadCount>
__device__ __forceinline__ int mma_scan(const unsigned short* tile, int pitch) {
    constexpr int P = D / 8;
    int bad = 0;
    for (int idx = threadIdx.x; idx < R * P; idx += kThreadCount) {
        const uint4 w = *reinterpret_cast<const uint4*>(tile + (idx / P) * pitch + (idx % P) * 8);
        const unsigned u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int e = 0; e < 4; ++e)
            bad |= !MmaType<T>::finite((unsigned short)(u[e] & 0xffffu)) |
                   !MmaType<T>::finite((unsigned short)(u[e] >> 16));
    }
    return bad;
}

template <class T, int D, bool kCausal, bool kBias>
__device__ void attention_mma(const AttentionParams& p, float* smem_f) {
    typedef MmaShape<D> Shape;
    typedef MmaType<T> Type;
    constexpr int kQ = Shape::kQueries, kK = Shape::kKeys, kPitch = Shape::kPitch, kN = Shape::kThreads;
    constexpr int kKeyTiles = kK / 8;  // 8-key column tiles of S per warp
    constexpr int kDTiles = D / 8;     // 8-column tiles of O per warp
    constexpr int kQRegs = Shape::kQInRegisters ? D / 16 : 1;
    unsigned short* qs = reinterpret_cast<unsigned short*>(smem_f);  // [kQ][kPitch]
    unsigned short* ks = qs + Shape::kQElems;                        // [2][kK][kPitch]
    unsigned short* vs = ks + 2 * Shape::kTileElems;                 // [2][kK][kPitch]
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, tq = lane % 4;  // the fragment's row group and the lane within the quad

    // Longest query blocks first (a causal block's work grows with its position).
    const long long linear = blockIdx.x;
    const long long qblock = p.query_blocks - 1 - linear / p.batch_heads;
    const long long bh = linear % p.batch_heads;
    const long long b = bh / p.heads, h = bh % p.heads, hk = h / p.group;
    const long long q0 = qblock * kQ;
    const unsigned short* qbase =
        static_cast<const unsigned short*>(p.q) + head_offset(p, p.q_batch, p.q_head, b, h);
    const unsigned short* kbase =
        static_cast<const unsigned short*>(p.k) + head_offset(p, p.k_batch, p.k_head, b, hk);
    const unsigned short* vbase =
        static_cast<const unsigned short*>(p.v) + head_offset(p, p.v_batch, p.v_head, b, hk);
    const long long bias_off = kBias ? head_offset(p, p.bias_batch, p.bias_head, b, h) : 0;
    const bool pieces = p.vector_loads != 0;

    // The key tiles to visit: causal rows see keys up to t + diagonal.
    long long key_end = p.keys;
    if (kCausal) {
        const long long last = min(q0 + kQ, p.queries) - 1 + p.diagonal + 1;
        key_end = max(0ll, min(key_end, last));
    }
    const int tiles = (int)((key_end + kK - 1) / kK);

    // The queries and the first key tile: one group of copies.
    mma_copy<T, D, kQ, kN>(qs, kPitch, qbase, p.q_row, p.q_col, q0, p.queries, pieces);
    if (tiles > 0) {
        mma_copy<T, D, kK, kN>(ks, kPitch, kbase, p.k_row, p.k_col, 0, p.keys, pieces);
        mma_copy<T, D, kK, kN>(vs, kPitch, vbase, p.v_row, p.v_col, 0, p.keys, pieces);
    }
    cp_async_commit();

    // This warp's 16 query rows as A fragments (row r of the block: 16 warp + lane % 16; columns 16 kk and
    // 16 kk + 8 by lane / 16).
    const unsigned short* qrow = qs + (16 * warp + lane % 16) * kPitch + (lane / 16) * 8;
    unsigned qf[kQRegs][4];

    // The rows this lane holds: r0 = q0 + 16 warp + g (accumulators 0, 1) and r0 + 8 (accumulators 2, 3).
    const long long r0 = q0 + 16 * warp + g;
    float m[2], l[2], o[kDTiles][4];
    bool seen[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        m[i] = __int_as_float(0xff800000);  // -inf
        l[i] = 0.0f;
        seen[i] = false;
    }
#pragma unroll
    for (int j = 0; j < kDTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[j][e] = 0.0f;

    for (int it = 0; it < tiles; ++it) {
        const long long k0 = (long long)it * kK;
        const unsigned short* kt = ks + (it & 1) * Shape::kTileElems;
        const unsigned short* vt = vs + (it & 1) * Shape::kTileElems;
        // Whether a key of this tile inside S may be masked for some row of the block (keys past S are
        // zero-filled and need nothing).
        const bool maybe_masked = kBias || (kCausal && k0 + kK - 1 > q0 + p.diagonal);
        // Whether every key of the tile is visible to every row: no mask to compute.
        const bool full = !maybe_masked && k0 + kK <= p.keys;
        cp_async_wait<0>();
        // The barrier that publishes tile `it` (and frees the other buffer, read in the previous step), and
        // the vote: does a value of this tile, next to a mask, hold Inf or NaN?
        const int bad_values = __syncthreads_or(maybe_masked ? mma_scan<T, D, kK, kN>(vt, kPitch) : 0);
        if (it == 0 && Shape::kQInRegisters) {
#pragma unroll
            for (int kk = 0; kk < kQRegs; ++kk) ldsm_x4(qf[kk], qrow + 16 * kk);
        }
        // The copy of the next tile runs while this one is computed.
        if (it + 1 < tiles) {
            const int nb = (it + 1) & 1;
            mma_copy<T, D, kK, kN>(ks + nb * Shape::kTileElems, kPitch, kbase, p.k_row, p.k_col, k0 + kK,
                                   p.keys, pieces);
            mma_copy<T, D, kK, kN>(vs + nb * Shape::kTileElems, kPitch, vbase, p.v_row, p.v_col, k0 + kK,
                                   p.keys, pieces);
        }
        cp_async_commit();

        // S = Q Kᵀ: 16 rows x kK keys per warp; ldmatrix x4 gives the B fragments of two 8-key tiles (lanes
        // 0-15 the first 8 keys, 16-31 the next 8; lanes 8-15 and 24-31 the columns 8-15 of the 16-step).
        float s[kKeyTiles][4];
#pragma unroll
        for (int j = 0; j < kKeyTiles; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[j][e] = 0.0f;
        const unsigned short* krow = kt + ((lane / 16) * 8 + lane % 8) * kPitch + ((lane / 8) % 2) * 8;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const int qi = Shape::kQInRegisters ? kk : 0;
            if (!Shape::kQInRegisters) ldsm_x4(qf[0], qrow + 16 * kk);
#pragma unroll
            for (int nn = 0; nn < kK / 16; ++nn) {
                unsigned bk[4];
                ldsm_x4(bk, krow + 16 * nn * kPitch + 16 * kk);
                const unsigned b0[2] = {bk[0], bk[1]}, b1[2] = {bk[2], bk[3]};
                Type::mma(s[2 * nn], qf[qi], b0);
                Type::mma(s[2 * nn + 1], qf[qi], b1);
            }
        }

        // The online softmax of the lane's two rows. Accumulator e of key tile j is key k0 + 8 j + 2 tq + e %
        // 2 of row r0 + 8 (e / 2). The probabilities overwrite s, rounded to T (as float32 values); a masked
        // key's is -0 (exp never gives -0).
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const long long t = r0 + 8 * i;
            float bm = __int_as_float(0xff800000);
            int any = 0;
            unsigned vis = 0;  // bit 2 j + e: key 8 j + 2 tq + e visible
#pragma unroll
            for (int j = 0; j < kKeyTiles; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const long long key = k0 + 8 * j + 2 * tq + e;
                    bool v = full || (key < p.keys && (!kCausal || key <= t + p.diagonal));
                    float x = __fmul_rn(s[j][2 * i + e], p.scale);
                    if (kBias && v && t < p.queries) {
                        const float bj = to_reg(
                            static_cast<const T*>(p.bias)[bias_off + t * p.bias_row + key * p.bias_col]);
                        v = bj != __int_as_float(0xff800000);
                        x = __fadd_rn(x, bj);
                    }
                    s[j][2 * i + e] = x;
                    if (v) {
                        vis |= 1u << (2 * j + e);
                        bm = max_nan(bm, x);
                        any = 1;
                    }
                }
                // The quad's 4 lanes hold the row's kK keys.
#pragma unroll
            for (int hop = 1; hop <= 2; hop *= 2) {
                bm = max_nan(bm, __shfl_xor_sync(0xffffffffu, bm, hop));
                any |= __shfl_xor_sync(0xffffffffu, any, hop);
            }
            float alpha = 1.0f, sum = 0.0f;
            float c = 0.0f;
            if (any) {
                const float mn = max_nan(m[i], bm);
                c = finite(mn) ? mn : 0.0f;
                alpha = exp_mufu(__fsub_rn(m[i], c));
                m[i] = mn;
                seen[i] = true;
            }
#pragma unroll
            for (int j = 0; j < kKeyTiles; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    float pr = __uint_as_float(kAbsent);
                    if (vis >> (2 * j + e) & 1u) {
                        pr = Type::value(Type::bits(exp_mufu(__fsub_rn(s[j][2 * i + e], c))));
                        sum = __fadd_rn(sum, pr);
                    }
                    s[j][2 * i + e] = pr;
                }
                // Every lane takes part in the shuffle (rows differ in `any` across the warp's quads).
#pragma unroll
            for (int hop = 1; hop <= 2; hop *= 2)
                sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, hop));
            if (any) {
                l[i] = __fadd_rn(__fmul_rn(l[i], alpha), sum);
#pragma unroll
                for (int j = 0; j < kDTiles; ++j) {
                    o[j][2 * i] = __fmul_rn(o[j][2 * i], alpha);
                    o[j][2 * i + 1] = __fmul_rn(o[j][2 * i + 1], alpha);
                }
            }
        }

        if (!bad_values) {
            // O += P V on tensor cores: P's accumulators are the A fragments of the 16-key steps; V's B
            // fragments by ldmatrix.trans (lanes 0-7 and 16-23 keys 0-7 of the step, 8-15 and 24-31 keys
            // 8-15; lanes 16-31 the columns 8-15 of the 16-column pair).
            const unsigned short* vrow = vt + (((lane / 8) % 2) * 8 + lane % 8) * kPitch + (lane / 16) * 8;
#pragma unroll
            for (int kk = 0; kk < kK / 16; ++kk) {
                unsigned a[4];
                a[0] = pack_halves(Type::bits(s[2 * kk][0]), Type::bits(s[2 * kk][1]));
                a[1] = pack_halves(Type::bits(s[2 * kk][2]), Type::bits(s[2 * kk][3]));
                a[2] = pack_halves(Type::bits(s[2 * kk + 1][0]), Type::bits(s[2 * kk + 1][1]));
                a[3] = pack_halves(Type::bits(s[2 * kk + 1][2]), Type::bits(s[2 * kk + 1][3]));
#pragma unroll
                for (int nd = 0; nd < D / 16; ++nd) {
                    unsigned bv[4];
                    ldsm_x4_trans(bv, vrow + 16 * kk * kPitch + 16 * nd);
                    const unsigned b0[2] = {bv[0], bv[1]}, b1[2] = {bv[2], bv[3]};
                    Type::mma(o[2 * nd], a, b0);
                    Type::mma(o[2 * nd + 1], a, b1);
                }
            }
        } else {
            // The rare case: a value of this tile is Inf or NaN and a key of it may be masked. P V on CUDA
            // cores, the visible keys only: key 8 j + 2 q + e's probabilities come from quad lane q.
#pragma unroll
            for (int j = 0; j < kKeyTiles; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e)
#pragma unroll 1
                    for (int q = 0; q < 4; ++q) {
                        const int src = (lane & ~3) | q;
                        const float p0 = __shfl_sync(0xffffffffu, s[j][e], src);
                        const float p1 = __shfl_sync(0xffffffffu, s[j][2 + e], src);
                        const bool use0 = __float_as_uint(p0) != kAbsent,
                                   use1 = __float_as_uint(p1) != kAbsent;
                        const unsigned short* vr = vt + (8 * j + 2 * q + e) * kPitch + 2 * tq;
#pragma unroll
                        for (int nd = 0; nd < kDTiles; ++nd)
#pragma unroll
                            for (int c2 = 0; c2 < 2; ++c2) {
                                const float x = Type::value(vr[8 * nd + c2]);
                                if (use0) o[nd][c2] = __fmaf_rn(p0, x, o[nd][c2]);
                                if (use1) o[nd][2 + c2] = __fmaf_rn(p1, x, o[nd][2 + c2]);
                            }
                    }
        }
    }
    cp_async_wait<0>();

    // The result, divided once: O / l rounded to T; a row that saw no key gives 0.
    T* obase = static_cast<T*>(p.out) + head_offset(p, p.out_batch, p.out_head, b, h);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const long long t = r0 + 8 * i;
        if (t >= p.queries) continue;
#pragma unroll
        for (int nd = 0; nd < kDTiles; ++nd)
#pragma unroll
            for (int c2 = 0; c2 < 2; ++c2) {
                const int d = 8 * nd + 2 * tq + c2;
                const float r = seen[i] ? __fdiv_rn(o[nd][2 * i + c2], l[i]) : 0.0f;
                obase[t * p.out_row + d * p.out_col].bits = Type::bits(r);
            }
    }
}
#endif  // LOOM_ATTENTION_HOST_SIMULATION

}  // namespace att
}  // namespace lm
