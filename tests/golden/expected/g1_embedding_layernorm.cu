// ---- Loom reduction kernel mean_sum_norm (from "mean_sum_norm") ----
// reduction plan: schedule inner, 256 threads per block, 32 threads per row (8 rows per block)
//   reductions: mean float32 -> float32 (stage 0), sum float32 -> float32 (stage 1)
//   stages 2; element outputs 1; rows held in registers (1 x 1024 elements); one block per row group
//   order: chunks of 8192, 256 lanes of runs of 4, butterfly over lanes, pairwise over chunks
//   vector variant: no
//   held in registers: in0
//   grid: ceil(O / 8) blocks of 256 threads in x (32 threads per row), blocks per row in y (1 unless split)
//   bytes per reduced element: 12 read per pass over the row (2 passes; a row held in registers is read once), 4 written by the last pass (element outputs)
// element space (out0 .. out1: the reductions' operands, in registers; then the element outputs):
// pointwise plan: rank 2, block 256, vector width 1 (no vector variant), 32-bit indexing
// parameters: 128 bytes
// in0: input 1, int64, strided dims {0}, 8 B/element
// in1: input 0, float32, indirect dims {1} g0 unit-inner, 4 B/element
// in2: input 2, float32, strided dims {0}, 4 B/element
// in3: input 3, float32, strided dims {0}, 4 B/element
// in4: input 4, float32, row broadcast, 0 B/element
// in5: input 5, float32, row broadcast, 0 B/element
// out0: float32
// out1: float32
// out2: float32
// g0: gather position, checked (an out-of-range index is recorded in the error word; position 0 is read)
// scalars: float32, float32
// entry points: mean_sum_norm_s (general)

struct mean_sum_norm_el_params {
    const long long* in0;                                    // input 1 "", strided (test_gather_golden.cpp:39)
    const float* in1;                                        // input 0 "", indirect (test_gather_golden.cpp:39)
    const float* in2;                                        // input 2 "row value 0", strided (test_gather_golden.cpp:39)
    const float* in3;                                        // input 3 "row value 1", strided (test_gather_golden.cpp:39)
    const float* in4;                                        // input 4 "", row broadcast (test_gather_golden.cpp:39)
    const float* in5;                                        // input 5 "", row broadcast (test_gather_golden.cpp:39)
    float* out0;                                             // output 0, contiguous
    float* out1;                                             // output 1, contiguous
    float* out2;                                             // output 2, contiguous
    void* err;                                               // the error word: the first out-of-range index of a checked gather
    int n;                                                   // elements in the iteration space
    int ext1;                                                // extent of dimension 1
    int in0_s0;                                              // in0 stride of dimension 0
    int in1_g0;                                              // in1 stride of gather position g0
    int in2_s0;                                              // in2 stride of dimension 0
    int in3_s0;                                              // in3 stride of dimension 0
    long long g0_n;                                          // g0: extent of the axis take reads (test_gather_golden.cpp:39)
    long long g0_id;                                         // g0: the gather's number in the error table
    float s0;                                                // scalar float32 (test_gather_golden.cpp:39)
    float s1;                                                // scalar float32 (test_gather_golden.cpp:39)
};
static_assert(sizeof(mean_sum_norm_el_params) == 128, "kernel parameter layout differs from the host's");

struct mean_sum_norm_params {
    mean_sum_norm_el_params el;                                          // element space
    long long n_out;                                                     // O: rows (output elements)
    long long len;                                                       // L: elements reduced per row
    long long chunks;                                                    // ceil(L / 8192)
    long long cpb;                                                       // chunks per block (outer split: a power of two)
    long long nblk;                                                      // blocks per row
    void* count;                                                         // split: integer counters, zero at launch and left zero
    void* part0;                                                         // split: partials of reduction 0
    void* part1;                                                         // split: partials of reduction 1
};
static_assert(sizeof(mean_sum_norm_params) == 192, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void mean_sum_norm_el_body(const mean_sum_norm_el_params& p, const long long v0, const int o1, const float v3, const float v6, const float v13, const float v15, float& r0, float& r1, float& r2) {
    // v0 = in0: input 1 "" int64                            // test_gather_golden.cpp:39
    const long long v1 = lm::gather_checked(v0, p.g0_n, p.err, p.g0_id); // take position g0, checked (test_gather_golden.cpp:39)
    const float v2 = lm::to_reg(p.in1[o1 + v1 * p.in1_g0]);  // load in1 (indirect): input "" (test_gather_golden.cpp:39)
    // v3 = in2: input 2 "row value 0" float32               // test_gather_golden.cpp:39
    const float v4 = lm::sub(v2, v3);                        // sub (test_gather_golden.cpp:39)
    const float v5 = lm::mul(v4, v4);                        // mul (test_gather_golden.cpp:39)
    // v6 = in3: input 3 "row value 1" float32               // test_gather_golden.cpp:39
    const float v7 = p.s0;                                   // scalar float32 (test_gather_golden.cpp:39)
    const float v8 = lm::div(v6, v7);                        // div (test_gather_golden.cpp:39)
    const float v9 = p.s1;                                   // scalar float32 (test_gather_golden.cpp:39)
    const float v10 = lm::add(v8, v9);                       // add (test_gather_golden.cpp:39)
    const float v11 = lm::rsqrt_(v10);                       // rsqrt (test_gather_golden.cpp:39)
    const float v12 = lm::mul(v4, v11);                      // mul (test_gather_golden.cpp:39)
    // v13 = in4: input 4 "" float32                         // test_gather_golden.cpp:39
    const float v14 = lm::mul(v12, v13);                     // mul (test_gather_golden.cpp:39)
    // v15 = in5: input 5 "" float32                         // test_gather_golden.cpp:39
    const float v16 = lm::add(v14, v15);                     // add (test_gather_golden.cpp:39)
    r0 = v2;                                                 // output 0
    r1 = v5;                                                 // output 1
    r2 = v16;                                                // output 2
}

// The operands of element (i0, i1) of the element space (row values come from registers).
__device__ __forceinline__ void mean_sum_norm_el_load(const mean_sum_norm_el_params& p, const int i0, const int i1, long long& s0, int& s1, float& s4, float& s5) {
    (void)i0; (void)i1;
    s0 = lm::to_reg(p.in0[i0 * p.in0_s0]);                               // in0 (strided)
    s1 = (int)(i1);                                                      // in1 (indirect): the affine part of its offset, loaded by the body
    s4 = lm::to_reg(p.in4[i1]);                                          // in4 (row broadcast)
    s5 = lm::to_reg(p.in5[i1]);                                          // in5 (row broadcast)
}

// The operands of element (i0, i1) of the element space not held in registers (row values come from registers).
__device__ __forceinline__ void mean_sum_norm_el_loadu(const mean_sum_norm_el_params& p, const int i0, const int i1, int& s1, float& s4, float& s5) {
    (void)i0; (void)i1;
    s1 = (int)(i1);                                                      // in1 (indirect): the affine part of its offset, loaded by the body
    s4 = lm::to_reg(p.in4[i1]);                                          // in4 (row broadcast)
    s5 = lm::to_reg(p.in5[i1]);                                          // in5 (row broadcast)
}

extern "C" __global__ void __launch_bounds__(256) mean_sum_norm_s(const __grid_constant__ mean_sum_norm_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    __shared__ __align__(16) unsigned char lm_smem[8192];                // butterfly exchange (two slots)
    const mean_sum_norm_el_params& pe = p.el;
    const int tid = threadIdx.x;
    const int w = tid & 31;                                              // lane of the row's warp
    const long long o = (long long)blockIdx.x * 8 + (tid >> 5);          // one row per warp
    if (o >= p.n_out) return;                                            // whole warps leave together
    const long long c_begin = (long long)blockIdx.y * p.cpb;
    const long long c_end = c_begin + p.cpb < p.chunks ? c_begin + p.cpb : p.chunks;
    (void)c_end; (void)w;
    float rv0 = {};                                                      // row value
    float rv1 = {};                                                      // row value
    // the row, held in registers: 8 positions of 4 elements per thread
    long long c0[8][4];
    #pragma unroll
    for (int q = 0; q < 8; ++q) {
        const long long r0 = (long long)(q / 8) * 1024 + 4 * (w + 32 * (q % 8));
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            if (r0 + j >= p.len) continue;
        int scratch1;
        float scratch4;
        float scratch5;
            mean_sum_norm_el_load(pe, (int)o, (int)(r0 + j), c0[q][j], scratch1, scratch4, scratch5);
        }
    }
    {  // ---- stage 0 ----
        float acc0[8]; for (int k = 0; k < 8; ++k) acc0[k] = -0.0f;      // reduction 0: mean of float32, lane accumulators
        float stk0[40]; int top0 = 0; long long cnt0 = 0;                // binary counter over chunk partials
        if (0LL * 8192 < p.len) {                                        // chunk 0
            #pragma unroll
            for (int q = 0; q < 8; ++q) {
                const long long r0 = (long long)(q / 8) * 1024 + 4 * (w + 32 * (q % 8));
                const int K = q % 8;
                if (r0 < p.len) {
                    int u1[4];
                    float u4[4];
                    float u5[4];
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if (r0 + j >= p.len) continue;
                        mean_sum_norm_el_loadu(pe, (int)o, (int)(r0 + j), u1[j], u4[j], u5[j]);
                    }
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if (r0 + j >= p.len) continue;
                        float y0; float y1; float y2; 
                        mean_sum_norm_el_body(pe, c0[q][j], u1[j], rv0, rv1, u4[j], u5[j], y0, y1, y2);
                        acc0[K] = lm::add(acc0[K], y0);
                    }
                }
            }
            {                                                            // reduction 0: butterfly over the 256 lanes, then the chunk partial
                for (int k = 0; k < 4; ++k) acc0[k] = lm::add(acc0[k], acc0[k + 4]); // s = 128
                for (int k = 0; k < 2; ++k) acc0[k] = lm::add(acc0[k], acc0[k + 2]); // s = 64
                float v = lm::add(acc0[0], acc0[1]);                     // s = 32
                v = lm::add(v, lm::shfl_down(v, 16));                    // s = 16
                v = lm::add(v, lm::shfl_down(v, 8));                     // s = 8
                v = lm::add(v, lm::shfl_down(v, 4));                     // s = 4
                v = lm::add(v, lm::shfl_down(v, 2));                     // s = 2
                v = lm::add(v, lm::shfl_down(v, 1));                     // s = 1
                if (w == 0) { float xp = v; for (long long q = cnt0; q & 1; q >>= 1) xp = lm::add(stk0[--top0], xp); stk0[top0++] = xp; ++cnt0; }
                for (int k = 0; k < 8; ++k) acc0[k] = -0.0f;
            }
        }
        if (w == 0) { float fin0 = -0.0f; if (top0 > 0) { fin0 = stk0[--top0]; while (top0 > 0) fin0 = lm::add(stk0[--top0], fin0); } rv0 = __fdiv_rn(fin0, __ll2float_rn(p.len)); }
        rv0 = lm::shfl0(rv0);                                            // the row value to every lane
    }
    {  // ---- stage 1 ----
        float acc1[8]; for (int k = 0; k < 8; ++k) acc1[k] = -0.0f;      // reduction 1: sum of float32, lane accumulators
        float stk1[40]; int top1 = 0; long long cnt1 = 0;                // binary counter over chunk partials
        if (0LL * 8192 < p.len) {                                        // chunk 0
            #pragma unroll
            for (int q = 0; q < 8; ++q) {
                const long long r0 = (long long)(q / 8) * 1024 + 4 * (w + 32 * (q % 8));
                const int K = q % 8;
                if (r0 < p.len) {
                    int u1[4];
                    float u4[4];
                    float u5[4];
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if (r0 + j >= p.len) continue;
                        mean_sum_norm_el_loadu(pe, (int)o, (int)(r0 + j), u1[j], u4[j], u5[j]);
                    }
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if (r0 + j >= p.len) continue;
                        float y0; float y1; float y2; 
                        mean_sum_norm_el_body(pe, c0[q][j], u1[j], rv0, rv1, u4[j], u5[j], y0, y1, y2);
                        acc1[K] = lm::add(acc1[K], y1);
                    }
                }
            }
            {                                                            // reduction 1: butterfly over the 256 lanes, then the chunk partial
                for (int k = 0; k < 4; ++k) acc1[k] = lm::add(acc1[k], acc1[k + 4]); // s = 128
                for (int k = 0; k < 2; ++k) acc1[k] = lm::add(acc1[k], acc1[k + 2]); // s = 64
                float v = lm::add(acc1[0], acc1[1]);                     // s = 32
                v = lm::add(v, lm::shfl_down(v, 16));                    // s = 16
                v = lm::add(v, lm::shfl_down(v, 8));                     // s = 8
                v = lm::add(v, lm::shfl_down(v, 4));                     // s = 4
                v = lm::add(v, lm::shfl_down(v, 2));                     // s = 2
                v = lm::add(v, lm::shfl_down(v, 1));                     // s = 1
                if (w == 0) { float xp = v; for (long long q = cnt1; q & 1; q >>= 1) xp = lm::add(stk1[--top1], xp); stk1[top1++] = xp; ++cnt1; }
                for (int k = 0; k < 8; ++k) acc1[k] = -0.0f;
            }
        }
        if (w == 0) { float fin1 = -0.0f; if (top1 > 0) { fin1 = stk1[--top1]; while (top1 > 0) fin1 = lm::add(stk1[--top1], fin1); } rv1 = (p.len == 0 ? 0.0f : fin1); }
        rv1 = lm::shfl0(rv1);                                            // the row value to every lane
    }
    // ---- element outputs ----
    #pragma unroll
    for (int q = 0; q < 8; ++q) {
        const long long r0 = (long long)(q / 8) * 1024 + 4 * (w + 32 * (q % 8));
        if (r0 < p.len) {
            int u1[4];
            float u4[4];
            float u5[4];
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                if (r0 + j >= p.len) continue;
                mean_sum_norm_el_loadu(pe, (int)o, (int)(r0 + j), u1[j], u4[j], u5[j]);
            }
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                if (r0 + j >= p.len) continue;
                float y0; float y1; float y2; 
                mean_sum_norm_el_body(pe, c0[q][j], u1[j], rv0, rv1, u4[j], u5[j], y0, y1, y2);
                pe.out2[o * p.len + r0 + j] = y2;
            }
        }
    }
}
