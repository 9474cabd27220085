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

namespace lm {

// LOOM_ATTENTION_PARAMS

namespace att {

constexpr int kQueries = 64;   // queries per block
constexpr int kKeys = 64;      // keys per block: kAttentionKeyBlock, the order's block
constexpr int kThreads = 128;  // 8 row groups x 16 lanes
constexpr unsigned kAbsent = 0x80000000u;  // the bits of -0: a masked key's probability in shared memory

__device__ __forceinline__ float max_nan(float a, float b) {
    return (a != a || b != b) ? __int_as_float(0x7fc00000) : (a > b ? a : b);
}
__device__ __forceinline__ bool finite(float x) { return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u; }

template <class T> __device__ __forceinline__ float load(const void* base, long long i) {
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

// Rows [row0, row0 + 64) of an operand's head at `base` into shared memory as float32: transposed
// (dst[d * 64 + r], the queries and keys: a thread's 4 or 8 consecutive rows are one 16-byte read) or row by
// row (dst[r * pitch + d], the values). Rows at or past `rows` are zero. Consecutive threads take consecutive
// rows for the transposed copy (conflict-free stores) and consecutive pieces of a row otherwise (coalesced).
template <class T, int D, bool kTransposed>
__device__ __forceinline__ void load_rows(float* dst, int pitch, const void* base, long long row_stride,
                                          long long col_stride, long long row0, long long rows, bool pieces) {
    constexpr int W = 16 / (int)sizeof(T);  // elements of a 16-byte piece
    if (pieces && D % W == 0) {
        constexpr int P = D / W;  // pieces per row
        for (int idx = threadIdx.x; idx < kKeys * P; idx += kThreads) {
            const int r = kTransposed ? idx % kKeys : idx / P;
            const int c = kTransposed ? idx / kKeys : idx % P;
            float x[W];
            if (row0 + r < rows) {
                const vec<T, W> v = load_vec<T, W>(static_cast<const T*>(base) + (row0 + r) * row_stride + c * W);
#pragma unroll
                for (int e = 0; e < W; ++e) x[e] = to_reg(v.v[e]);
            } else {
#pragma unroll
                for (int e = 0; e < W; ++e) x[e] = 0.0f;
            }
#pragma unroll
            for (int e = 0; e < W; ++e) {
                if (kTransposed) dst[(c * W + e) * kKeys + r] = x[e];
                else dst[r * pitch + c * W + e] = x[e];
            }
        }
    } else {
        for (int idx = threadIdx.x; idx < kKeys * D; idx += kThreads) {
            const int r = kTransposed ? idx % kKeys : idx / D;
            const int d = kTransposed ? idx / kKeys : idx % D;
            const float x = row0 + r < rows ? load<T>(base, (row0 + r) * row_stride + d * col_stride) : 0.0f;
            if (kTransposed) dst[d * kKeys + r] = x;
            else dst[r * pitch + d] = x;
        }
    }
}

// The shared memory of attention_simt, in floats: queries and keys transposed (D x 64 each), values row by
// row (64 x the pitch), probabilities row by row (64 x 64).
template <int D> struct SimtShape {
    static constexpr int kPitch = (D + 63) / 64 * 64;  // a value row: the output columns 4 lane + 64 j
    static constexpr int kColumns = kPitch / 64;       // 16-byte column groups of the output per thread
    static constexpr int kFloats = 2 * D * 64 + 64 * kPitch + 64 * 64;
};

template <class T, int D, bool kCausal, bool kBias>
__device__ void attention_simt(const AttentionParams& p, float* smem) {
    typedef SimtShape<D> Shape;
    float* qs = smem;                      // [D][64]
    float* ks = qs + D * kQueries;         // [D][64]
    float* vs = ks + D * kKeys;            // [64][pitch]
    float* ps = vs + kKeys * Shape::kPitch;  // [64 queries][64 keys]
    const int lane = threadIdx.x % 16;     // the keys 4 lane .. 4 lane + 3; the columns 4 lane + 64 j
    const int group = threadIdx.x / 16;    // the queries 8 group .. 8 group + 7
    // Longest query blocks first (a causal block's work grows with its position).
    const long long linear = blockIdx.x;
    const long long qblock = p.query_blocks - 1 - linear / p.batch_heads;
    const long long bh = linear % p.batch_heads;
    const long long b = bh / p.heads, h = bh % p.heads, hk = h / p.group;
    const long long q0 = qblock * kQueries;
    const char* qbase = static_cast<const char*>(p.q) + head_offset(p, p.q_batch, p.q_head, b, h) * (long long)sizeof(T);
    const char* kbase = static_cast<const char*>(p.k) + head_offset(p, p.k_batch, p.k_head, b, hk) * (long long)sizeof(T);
    const char* vbase = static_cast<const char*>(p.v) + head_offset(p, p.v_batch, p.v_head, b, hk) * (long long)sizeof(T);
    const long long bias_off = kBias ? head_offset(p, p.bias_batch, p.bias_head, b, h) : 0;
    const bool pieces = p.vector_loads != 0;
    // Value rows past D are read by the column groups but never stored: zero them once.
    for (int i = threadIdx.x; i < kKeys * Shape::kPitch; i += kThreads) vs[i] = 0.0f;
    load_rows<T, D, true>(qs, 0, qbase, p.q_row, p.q_col, q0, p.queries, pieces);

    float m[8], l[8], o[8][Shape::kColumns][4];
    bool seen[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        m[i] = __int_as_float(0xff800000);  // -inf
        l[i] = 0.0f;
        seen[i] = false;
#pragma unroll
        for (int j = 0; j < Shape::kColumns; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) o[i][j][e] = 0.0f;
    }
    // The key blocks to visit: causal rows see keys up to t + diagonal.
    long long key_end = p.keys;
    if (kCausal) {
        const long long last = min(q0 + kQueries, p.queries) - 1 + p.diagonal + 1;
        key_end = max(0ll, min(key_end, last));
    }
    for (long long k0 = 0; k0 < key_end; k0 += kKeys) {
        __syncthreads();  // the previous block's values are read
        load_rows<T, D, true>(ks, 0, kbase, p.k_row, p.k_col, k0, p.keys, pieces);
        load_rows<T, D, false>(vs, Shape::kPitch, vbase, p.v_row, p.v_col, k0, p.keys, pieces);
        __syncthreads();
        // Scores: the fma chain over d from +0 (the contract's s), 8 queries x 4 keys per thread.
        float s[8][4];
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[i][e] = 0.0f;
#pragma unroll 4
        for (int d = 0; d < D; ++d) {
            const float4 qa = *reinterpret_cast<const float4*>(qs + d * kQueries + 8 * group);
            const float4 qb = *reinterpret_cast<const float4*>(qs + d * kQueries + 8 * group + 4);
            const float4 kv = *reinterpret_cast<const float4*>(ks + d * kKeys + 4 * lane);
            const float qr[8] = {qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w};
            const float kr[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[i][e] = __fmaf_rn(qr[i], kr[e], s[i][e]);
        }
        // Whether every key of the block is visible to every query of the block: the update needs no test.
        const bool full = !kBias && k0 + kKeys <= p.keys &&
                          (!kCausal || k0 + kKeys - 1 <= q0 + p.diagonal);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const long long t = q0 + 8 * group + i;
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
            float prob[4], alpha = 1.0f;
            if (any) {
                const float mn = max_nan(m[i], bm);
                const float c = finite(mn) ? mn : 0.0f;
                alpha = expc::exp_f32(__fsub_rn(m[i], c));
#pragma unroll
                for (int e = 0; e < 4; ++e) prob[e] = vis[e] ? expc::exp_f32(__fsub_rn(s[i][e], c)) : 0.0f;
                // The row sum in the reductions' row order: this lane's run, then the butterfly over runs.
                float run = __fadd_rn(__fadd_rn(__fadd_rn(prob[0], prob[1]), prob[2]), prob[3]);
#pragma unroll
                for (int h = 8; h >= 1; h /= 2) run = __fadd_rn(run, __shfl_xor_sync(0xffffffffu, run, h));
                l[i] = __fadd_rn(__fmul_rn(l[i], alpha), run);
                m[i] = mn;
                seen[i] = true;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) prob[e] = 0.0f;
            }
            float4 w;
            w.x = vis[0] ? prob[0] : __uint_as_float(kAbsent);
            w.y = vis[1] ? prob[1] : __uint_as_float(kAbsent);
            w.z = vis[2] ? prob[2] : __uint_as_float(kAbsent);
            w.w = vis[3] ? prob[3] : __uint_as_float(kAbsent);
            *reinterpret_cast<float4*>(ps + (8 * group + i) * kKeys + 4 * lane) = w;
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
            float pr[8][4];
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const float4 x = *reinterpret_cast<const float4*>(ps + (8 * group + i) * kKeys + j4);
                pr[i][0] = x.x; pr[i][1] = x.y; pr[i][2] = x.z; pr[i][3] = x.w;
            }
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                if (j4 + e >= nkeys) break;
#pragma unroll
                for (int j = 0; j < Shape::kColumns; ++j) {
                    const float4 x = *reinterpret_cast<const float4*>(vs + (j4 + e) * Shape::kPitch + 64 * j + 4 * lane);
                    const float vr[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
                    for (int i = 0; i < 8; ++i)
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
    // The result, divided once: o / l; a row that saw no key gives 0.
    char* obase = static_cast<char*>(p.out) + head_offset(p, p.out_batch, p.out_head, b, h) * (long long)sizeof(T);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const long long t = q0 + 8 * group + i;
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

}  // namespace att
}  // namespace lm
