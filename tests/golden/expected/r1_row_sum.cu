// ---- Loom reduction kernel r1_row_sum (from "r1_row_sum") ----
// reduction plan: schedule inner, 256 threads per block, 256 threads per row (1 rows per block)
//   reductions: sum float32 -> float32 (stage 0)
//   stages 1; element outputs 0; rows re-read per pass; one block per row group
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
// in0: input 0, float32, contiguous, 4 B/element
// out0: float32
// entry points: r1_row_sum_v (4-element runs), r1_row_sum_s (general)

struct r1_row_sum_el_params {
    const float* in0;                                        // input 0 "", contiguous (test_reduce_golden.cpp:40)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
};
static_assert(sizeof(r1_row_sum_el_params) == 24, "kernel parameter layout differs from the host's");

struct r1_row_sum_row_params {
    const float* in0;                                        // input 0 "row value 0", contiguous (test_reduce_golden.cpp:40)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
};
static_assert(sizeof(r1_row_sum_row_params) == 24, "kernel parameter layout differs from the host's");

struct r1_row_sum_params {
    r1_row_sum_el_params el;                                             // element space
    r1_row_sum_row_params row;                                           // row space (epilogue)
    long long n_out;                                                     // O: rows (output elements)
    long long len;                                                       // L: elements reduced per row
    long long chunks;                                                    // ceil(L / 8192)
    long long cpb;                                                       // chunks per block (outer split: a power of two)
    long long nblk;                                                      // blocks per row
    void* count;                                                         // split: integer counters, zero at launch and left zero
    void* part0;                                                         // split: partials of reduction 0
};
static_assert(sizeof(r1_row_sum_params) == 104, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void r1_row_sum_el_body(const float v0, float& r0) {
    // v0 = in0: input 0 "" float32                          // test_reduce_golden.cpp:40
    r0 = v0;                                                 // output 0
}

// The operands of element (i0, i1) of the element space (row values come from registers).
__device__ __forceinline__ void r1_row_sum_el_load(const r1_row_sum_el_params& p, const int i0, const int i1, float& s0) {
    (void)i0; (void)i1;
    s0 = lm::to_reg(p.in0[i0]);                                          // in0 (contiguous)
}

// Elements (i0, i1 .. i1 + 3) (rank 2) or i0 .. i0 + 3 (rank 1), 4-element runs.
__device__ __forceinline__ void r1_row_sum_el_load4(const r1_row_sum_el_params& p, const int i0, const int i1, float (&s0)[4]) {
    (void)i0; (void)i1;
    { const lm::vec<float, 4> a = lm::load_vec<float, 4>(p.in0 + (i0)); for (int j = 0; j < 4; ++j) s0[j] = lm::to_reg(a.v[j]); } // in0 (16 bytes)
}

__device__ __forceinline__ void r1_row_sum_row_body(const float v0, float& r0) {
    // v0 = in0: input 0 "row value 0" float32               // test_reduce_golden.cpp:40
    r0 = v0;                                                 // output 0
}

// The epilogue of row i0: the row outputs from the reduced values.
__device__ __forceinline__ void r1_row_sum_row_at(const r1_row_sum_row_params& p, const int i0, const float rv0) {
    (void)rv0;
    float y0;
    r1_row_sum_row_body(rv0, y0);
    p.out0[i0] = y0;                                                     // row output 0
}

extern "C" __global__ void __launch_bounds__(256) r1_row_sum_v(const __grid_constant__ r1_row_sum_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    __shared__ __align__(16) unsigned char lm_smem[8192];                // butterfly exchange (two slots)
    int lm_par = 0;                                                      // the butterfly slot of the next chunk end
    const r1_row_sum_el_params& pe = p.el;
    const int tid = threadIdx.x;
    const int w = tid;                                                   // lane of the row's group
    const long long o = blockIdx.x;                                      // one row per block
    const long long c_begin = (long long)blockIdx.y * p.cpb;
    const long long c_end = c_begin + p.cpb < p.chunks ? c_begin + p.cpb : p.chunks;
    (void)c_end; (void)w;
    float rv0 = {};                                                      // row value
    {  // ---- stage 0 ----
        float acc0[1]; for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;      // reduction 0: sum of float32, lane accumulators
        float stk0[40]; int top0 = 0; long long cnt0 = 0;                // binary counter over chunk partials
        float nx0[8][4];                                                 // the next chunk's values
        if (c_begin < c_end) {
            #pragma unroll
            for (int m = 0; m < 8; ++m) {
                const long long r0 = (c_begin) * 8192 + m * 1024 + 4 * w;
                if (r0 < p.len) r1_row_sum_el_load4(pe, (int)(o * p.len + r0), (int)0, nx0[m]);
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
                    if (r0 < p.len) r1_row_sum_el_load4(pe, (int)(o * p.len + r0), (int)0, nx0[m]);
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
                        r1_row_sum_el_body(cu0[m][j], y0);
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
                    if (tid == 0) { float xp = v; for (long long q = cnt0; q & 1; q >>= 1) xp = lm::add(stk0[--top0], xp); stk0[top0++] = xp; ++cnt0; }
                }
                for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;
            }
        }
        if (tid == 0) { float fin0 = -0.0f; if (top0 > 0) { fin0 = stk0[--top0]; while (top0 > 0) fin0 = lm::add(stk0[--top0], fin0); } rv0 = (p.len == 0 ? 0.0f : fin0); }
        { __shared__ float b; if (tid == 0) b = rv0; __syncthreads(); rv0 = b; } // the row value to every thread
    }
    if (tid == 0) r1_row_sum_row_at(p.row, (int)o, rv0);                 // the epilogue, once per row
}

extern "C" __global__ void __launch_bounds__(256) r1_row_sum_s(const __grid_constant__ r1_row_sum_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    __shared__ __align__(16) unsigned char lm_smem[8192];                // butterfly exchange (two slots)
    int lm_par = 0;                                                      // the butterfly slot of the next chunk end
    const r1_row_sum_el_params& pe = p.el;
    const int tid = threadIdx.x;
    const int w = tid;                                                   // lane of the row's group
    const long long o = blockIdx.x;                                      // one row per block
    const long long c_begin = (long long)blockIdx.y * p.cpb;
    const long long c_end = c_begin + p.cpb < p.chunks ? c_begin + p.cpb : p.chunks;
    (void)c_end; (void)w;
    float rv0 = {};                                                      // row value
    {  // ---- stage 0 ----
        float acc0[1]; for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;      // reduction 0: sum of float32, lane accumulators
        float stk0[40]; int top0 = 0; long long cnt0 = 0;                // binary counter over chunk partials
        float nx0[8][4];                                                 // the next chunk's values
        if (c_begin < c_end) {
            #pragma unroll
            for (int m = 0; m < 8; ++m) {
                const long long r0 = (c_begin) * 8192 + m * 1024 + 4 * w;
                #pragma unroll
                for (int j = 0; j < 4; ++j) {
                    if (r0 + j >= p.len) continue;
                    r1_row_sum_el_load(pe, (int)(o * p.len + (r0 + j)), (int)0, nx0[m][j]);
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
                        r1_row_sum_el_load(pe, (int)(o * p.len + (r0 + j)), (int)0, nx0[m][j]);
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
                        r1_row_sum_el_body(cu0[m][j], y0);
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
                    if (tid == 0) { float xp = v; for (long long q = cnt0; q & 1; q >>= 1) xp = lm::add(stk0[--top0], xp); stk0[top0++] = xp; ++cnt0; }
                }
                for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;
            }
        }
        if (tid == 0) { float fin0 = -0.0f; if (top0 > 0) { fin0 = stk0[--top0]; while (top0 > 0) fin0 = lm::add(stk0[--top0], fin0); } rv0 = (p.len == 0 ? 0.0f : fin0); }
        { __shared__ float b; if (tid == 0) b = rv0; __syncthreads(); rv0 = b; } // the row value to every thread
    }
    if (tid == 0) r1_row_sum_row_at(p.row, (int)o, rv0);                 // the epilogue, once per row
}
