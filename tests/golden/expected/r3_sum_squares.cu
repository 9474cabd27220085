// ---- Loom reduction kernel r3_sum_squares (from "r3_sum_squares") ----
// reduction plan: schedule inner, 256 threads per block, 256 threads per row (1 rows per block)
//   reductions: sum float32 -> float32 (stage 0)
//   stages 1; element outputs 0; rows re-read per pass; split: blocks share each row's chunks in balanced ranges (full waves), chunk partials climb a counter tree (groups of 256, then the row)
//   order: chunks of 8192, 256 lanes of runs of 4, butterfly over lanes, pairwise over chunks
//   vector variant: yes (4 elements of a row per load)
//   grid: ceil(O / 1) blocks of 256 threads in x (256 threads per row), blocks per row in y (1 unless split)
//   bytes per reduced element: 4 read per pass over the row (1 pass)
// element space (out0 .. out0: the reductions' operands, in registers):
// pointwise plan: rank 1, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// parameters: 24 bytes
// in0: input 0, float32, contiguous, 4 B/element
// out0: float32
// row space (the row outputs):
// pointwise plan: rank 1, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// parameters: 24 bytes
// in0: input 0, float32, scalar, 0 B/element
// out0: float32
// entry points: r3_sum_squares_v (4-element runs), r3_sum_squares_s (general)

struct r3_sum_squares_el_params {
    const float* in0;                                        // input 0 "", contiguous (test_reduce_golden.cpp:60)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
};
static_assert(sizeof(r3_sum_squares_el_params) == 24, "kernel parameter layout differs from the host's");

struct r3_sum_squares_row_params {
    const float* in0;                                        // input 0 "row value 0", scalar (test_reduce_golden.cpp:60)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
};
static_assert(sizeof(r3_sum_squares_row_params) == 24, "kernel parameter layout differs from the host's");

struct r3_sum_squares_params {
    r3_sum_squares_el_params el;                                         // element space
    r3_sum_squares_row_params row;                                       // row space (epilogue)
    long long n_out;                                                     // O: rows (output elements)
    long long len;                                                       // L: elements reduced per row
    long long chunks;                                                    // ceil(L / 8192)
    long long cpb;                                                       // chunks per block (outer split: a power of two)
    long long nblk;                                                      // blocks per row
    void* count;                                                         // split: integer counters, zero at launch and left zero
    void* part0;                                                         // split: partials of reduction 0
};
static_assert(sizeof(r3_sum_squares_params) == 104, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void r3_sum_squares_el_body(const float v0, float& r0) {
    // v0 = in0: input 0 "" float32                          // test_reduce_golden.cpp:60
    const float v1 = lm::mul(v0, v0);                        // mul (test_reduce_golden.cpp:60)
    r0 = v1;                                                 // output 0
}

// The operands of element (i0, i1) of the element space (row values come from registers).
__device__ __forceinline__ void r3_sum_squares_el_load(const r3_sum_squares_el_params& p, const int i0, const int i1, float& s0) {
    (void)i0; (void)i1;
    s0 = lm::to_reg(p.in0[i0]);                                          // in0 (contiguous)
}

// Elements (i0, i1 .. i1 + 3) (rank 2) or i0 .. i0 + 3 (rank 1), 4-element runs.
__device__ __forceinline__ void r3_sum_squares_el_load4(const r3_sum_squares_el_params& p, const int i0, const int i1, float (&s0)[4]) {
    (void)i0; (void)i1;
    { const lm::vec<float, 4> a = lm::load_vec<float, 4>(p.in0 + (i0)); for (int j = 0; j < 4; ++j) s0[j] = lm::to_reg(a.v[j]); } // in0 (16 bytes)
}

__device__ __forceinline__ void r3_sum_squares_row_body(const float v0, float& r0) {
    // v0 = in0: input 0 "row value 0" float32               // test_reduce_golden.cpp:60
    r0 = v0;                                                 // output 0
}

// The epilogue of row i0: the row outputs from the reduced values.
__device__ __forceinline__ void r3_sum_squares_row_at(const r3_sum_squares_row_params& p, const int i0, const float rv0) {
    (void)rv0;
    float y0;
    r3_sum_squares_row_body(rv0, y0);
    p.out0[i0] = y0;                                                     // row output 0
}

// Reduction 0: the pairwise tree over n <= 256 partials at src (identities pad it to 256), by the
// block; the value in thread 0.
__device__ __forceinline__ float r3_sum_squares_tree0(const float* src, const long long n, unsigned char* buf) {
    const int tid = threadIdx.x;
    float* t = reinterpret_cast<float*>(buf);
    t[tid] = tid < n ? lm::ldcg(src + tid) : -0.0f;
    __syncthreads();
    float v = -0.0f;
    if (tid < 32) {
        float b[8];
        #pragma unroll
        for (int k = 0; k < 8; ++k) b[k] = t[tid * 8 + k];
        #pragma unroll
        for (int k = 0; k < 8; k += 2) b[k] = lm::add(b[k], b[k + 1]);
        #pragma unroll
        for (int k = 0; k < 8; k += 4) b[k] = lm::add(b[k], b[k + 2]);
        v = lm::add(b[0], b[4]);
        v = lm::add(v, lm::shfl_down(v, 1));
        v = lm::add(v, lm::shfl_down(v, 2));
        v = lm::add(v, lm::shfl_down(v, 4));
        v = lm::add(v, lm::shfl_down(v, 8));
        v = lm::add(v, lm::shfl_down(v, 16));
    }
    __syncthreads();                                                     // buf is read before anyone writes it again
    return v;
}

// The split finisher of block (o, y): count its chunk partials in; complete groups and the row.
__device__ __noinline__ void r3_sum_squares_split_finish(const r3_sum_squares_params& p, const long long o, const long long c_begin, const long long c_end, unsigned char* buf) {
    __shared__ bool lm_last;
    const int tid = threadIdx.x;
    const long long groups = (p.chunks + 255) >> 8;
    unsigned int* cnt = reinterpret_cast<unsigned int*>(p.count) + o * (groups + 1); // per row: a counter per group, then the row's
    if (c_begin >= c_end) return;                                        // no chunks (more blocks than chunks): nothing to count
    for (long long g = c_begin >> 8; g <= (c_end - 1) >> 8; ++g) {       // the groups this block's chunks belong to
        __syncthreads();                                                 // lm_last and buf are free again
        const long long lo = c_begin > (g << 8) ? c_begin : (g << 8), hi = c_end < ((g + 1) << 8) ? c_end : ((g + 1) << 8);
        const long long kids = p.chunks - (g << 8) < 256 ? p.chunks - (g << 8) : 256; // chunks in group g
        if (tid == 0) {
            __threadfence();                                             // the chunk partials are visible device-wide before the count
            lm_last = lm::arrive(cnt + g, (unsigned int)(hi - lo), (unsigned int)kids); // this block completed group g
        }
        __syncthreads();
        if (!lm_last) continue;
        __threadfence();
        float* part0 = reinterpret_cast<float*>(p.part0) + o * (p.chunks + groups);
        const float gv0 = r3_sum_squares_tree0(part0 + (g << 8), kids, buf); // group g's partial, in thread 0
        if (groups > 1) {
            if (tid == 0) {
                part0[p.chunks + g] = gv0;
                __threadfence();
                lm_last = lm::arrive(cnt + groups, 1u, (unsigned int)groups); // this block completed the row
            }
            __syncthreads();
            if (!lm_last) continue;
            __threadfence();
        }
        float fin0 = gv0;
        if (groups > 1) {                                                // the row: pairwise over the group partials, 256 at a time
            float stk0[40]; int top0 = 0; long long cnt0 = 0;            // binary counter over windows
            for (long long w0 = 0; w0 < groups; w0 += 256) {
                const float v = r3_sum_squares_tree0(part0 + p.chunks + w0, groups - w0 < 256 ? groups - w0 : 256, buf);
                if (tid == 0) { float xp = v; for (long long q = cnt0; q & 1; q >>= 1) xp = lm::add(stk0[--top0], xp); stk0[top0++] = xp; ++cnt0; }
            }
            if (tid == 0) { float f = -0.0f; if (top0 > 0) { f = stk0[--top0]; while (top0 > 0) f = lm::add(stk0[--top0], f); } fin0 = f; }
        }
        if (tid == 0) r3_sum_squares_row_at(p.row, (int)o, (p.len == 0 ? 0.0f : fin0)); // finish and the epilogue
        return;
    }
}

extern "C" __global__ void __launch_bounds__(256, 2) r3_sum_squares_v(const __grid_constant__ r3_sum_squares_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    __shared__ __align__(16) unsigned char lm_smem[8192];                // butterfly exchange (two slots); the split finisher's trees
    int lm_par = 0;                                                      // the butterfly slot of the next chunk end
    const r3_sum_squares_el_params& pe = p.el;
    const int tid = threadIdx.x;
    const int w = tid;                                                   // lane of the row's group
    const long long o = blockIdx.x;                                      // one row per block
    const long long c_begin = (long long)blockIdx.y * p.chunks / p.nblk; // this block's balanced range of the row's chunks
    const long long c_end = ((long long)blockIdx.y + 1) * p.chunks / p.nblk;
    const long long lm_groups = (p.chunks + 255) >> 8;                   // groups of 256 chunk partials
    (void)c_end; (void)w;
    float rv0 = {};                                                      // row value
    {  // ---- stage 0 ----
        float acc0[1]; for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;      // reduction 0: sum of float32, lane accumulators
        float nx0[8][4];                                                 // the next chunk's values
        if (c_begin < c_end) {
            #pragma unroll
            for (int m = 0; m < 8; ++m) {
                const long long r0 = (c_begin) * 8192 + m * 1024 + 4 * w;
                if (r0 < p.len) r3_sum_squares_el_load4(pe, (int)(o * p.len + r0), (int)0, nx0[m]);
            }
        }
        for (long long c = c_begin; c < c_end; ++c) {                    // the chunks of this block
            float cu0[8][4];
            #pragma unroll
            for (int m = 0; m < 8; ++m) for (int j = 0; j < 4; ++j) cu0[m][j] = nx0[m][j];
            if (c + 1 < c_end) {
                #pragma unroll
                for (int m = 0; m < 8; ++m) {
                    const long long r0 = (c + 1) * 8192 + m * 1024 + 4 * w;
                    if (r0 < p.len) r3_sum_squares_el_load4(pe, (int)(o * p.len + r0), (int)0, nx0[m]);
                }
            }
            #pragma unroll
            for (int m = 0; m < 8; ++m) {
                const int K = 0;
                const long long r0 = c * 8192 + m * 1024 + 4 * w;
                if (r0 < p.len) {
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        float y0; 
                        r3_sum_squares_el_body(cu0[m][j], y0);
                        acc0[K] = lm::add(acc0[K], y0);
                    }
                }
            }
            {                                                            // reduction 0: butterfly over the 256 lanes, then the chunk partial
                float* red = reinterpret_cast<float*>(lm_smem + lm_par * 4096); lm_par ^= 1; // this chunk end's slot (4 KiB: 256 accumulators of up to 16 bytes)
                red[tid] = acc0[0];
                __syncthreads();
                if (tid < 32) {
                    float b[8];
                    #pragma unroll
                    for (int k = 0; k < 8; ++k) b[k] = red[(tid & 31) + 32 * k];
                    #pragma unroll
                    for (int k = 0; k < 4; ++k) b[k] = lm::add(b[k], b[k + 4]); // s = 128
                    #pragma unroll
                    for (int k = 0; k < 2; ++k) b[k] = lm::add(b[k], b[k + 2]); // s = 64
                    float v = lm::add(b[0], b[1]);                       // s = 32
                    v = lm::add(v, lm::shfl_down(v, 16));                // s = 16
                    v = lm::add(v, lm::shfl_down(v, 8));                 // s = 8
                    v = lm::add(v, lm::shfl_down(v, 4));                 // s = 4
                    v = lm::add(v, lm::shfl_down(v, 2));                 // s = 2
                    v = lm::add(v, lm::shfl_down(v, 1));                 // s = 1
                    if (tid == 0) reinterpret_cast<float*>(p.part0)[o * (p.chunks + lm_groups) + c] = v; // the chunk partial
                }
                for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;
            }
        }
        r3_sum_squares_split_finish(p, o, c_begin, c_end, lm_smem);      // the chunk partials climb the counter tree; whoever completes the row finishes it
        return;
    }
}

extern "C" __global__ void __launch_bounds__(256, 2) r3_sum_squares_s(const __grid_constant__ r3_sum_squares_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    __shared__ __align__(16) unsigned char lm_smem[8192];                // butterfly exchange (two slots); the split finisher's trees
    int lm_par = 0;                                                      // the butterfly slot of the next chunk end
    const r3_sum_squares_el_params& pe = p.el;
    const int tid = threadIdx.x;
    const int w = tid;                                                   // lane of the row's group
    const long long o = blockIdx.x;                                      // one row per block
    const long long c_begin = (long long)blockIdx.y * p.chunks / p.nblk; // this block's balanced range of the row's chunks
    const long long c_end = ((long long)blockIdx.y + 1) * p.chunks / p.nblk;
    const long long lm_groups = (p.chunks + 255) >> 8;                   // groups of 256 chunk partials
    (void)c_end; (void)w;
    float rv0 = {};                                                      // row value
    {  // ---- stage 0 ----
        float acc0[1]; for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;      // reduction 0: sum of float32, lane accumulators
        float nx0[8][4];                                                 // the next chunk's values
        if (c_begin < c_end) {
            #pragma unroll
            for (int m = 0; m < 8; ++m) {
                const long long r0 = (c_begin) * 8192 + m * 1024 + 4 * w;
                #pragma unroll
                for (int j = 0; j < 4; ++j) {
                    if (r0 + j >= p.len) continue;
                    r3_sum_squares_el_load(pe, (int)(o * p.len + (r0 + j)), (int)0, nx0[m][j]);
                }
            }
        }
        for (long long c = c_begin; c < c_end; ++c) {                    // the chunks of this block
            float cu0[8][4];
            #pragma unroll
            for (int m = 0; m < 8; ++m) for (int j = 0; j < 4; ++j) cu0[m][j] = nx0[m][j];
            if (c + 1 < c_end) {
                #pragma unroll
                for (int m = 0; m < 8; ++m) {
                    const long long r0 = (c + 1) * 8192 + m * 1024 + 4 * w;
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if (r0 + j >= p.len) continue;
                        r3_sum_squares_el_load(pe, (int)(o * p.len + (r0 + j)), (int)0, nx0[m][j]);
                    }
                }
            }
            #pragma unroll
            for (int m = 0; m < 8; ++m) {
                const int K = 0;
                const long long r0 = c * 8192 + m * 1024 + 4 * w;
                if (r0 < p.len) {
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if (r0 + j >= p.len) continue;
                        float y0; 
                        r3_sum_squares_el_body(cu0[m][j], y0);
                        acc0[K] = lm::add(acc0[K], y0);
                    }
                }
            }
            {                                                            // reduction 0: butterfly over the 256 lanes, then the chunk partial
                float* red = reinterpret_cast<float*>(lm_smem + lm_par * 4096); lm_par ^= 1; // this chunk end's slot (4 KiB: 256 accumulators of up to 16 bytes)
                red[tid] = acc0[0];
                __syncthreads();
                if (tid < 32) {
                    float b[8];
                    #pragma unroll
                    for (int k = 0; k < 8; ++k) b[k] = red[(tid & 31) + 32 * k];
                    #pragma unroll
                    for (int k = 0; k < 4; ++k) b[k] = lm::add(b[k], b[k + 4]); // s = 128
                    #pragma unroll
                    for (int k = 0; k < 2; ++k) b[k] = lm::add(b[k], b[k + 2]); // s = 64
                    float v = lm::add(b[0], b[1]);                       // s = 32
                    v = lm::add(v, lm::shfl_down(v, 16));                // s = 16
                    v = lm::add(v, lm::shfl_down(v, 8));                 // s = 8
                    v = lm::add(v, lm::shfl_down(v, 4));                 // s = 4
                    v = lm::add(v, lm::shfl_down(v, 2));                 // s = 2
                    v = lm::add(v, lm::shfl_down(v, 1));                 // s = 1
                    if (tid == 0) reinterpret_cast<float*>(p.part0)[o * (p.chunks + lm_groups) + c] = v; // the chunk partial
                }
                for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;
            }
        }
        r3_sum_squares_split_finish(p, o, c_begin, c_end, lm_smem);      // the chunk partials climb the counter tree; whoever completes the row finishes it
        return;
    }
}
