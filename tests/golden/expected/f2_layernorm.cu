// ---- Loom reduction kernel f2_layernorm (from "f2_layernorm") ----
// reduction plan: schedule inner, 256 threads per block, 256 threads per row (1 rows per block)
//   reductions: mean float32 -> float32 (stage 0), mean float32 -> float32 (stage 1)
//   stages 2; element outputs 1; rows held in registers (8 x 1024 elements, full: no bounds checks in the 4-wide variant); one block per row group
//   order: chunks of 8192, 256 lanes of runs of 4, butterfly over lanes, pairwise over chunks
//   vector variant: yes (4 elements of a row per load)
//   held in registers: in0, in3, in4
//   grid: ceil(O / 1) blocks of 256 threads in x (256 threads per row), blocks per row in y (1 unless split)
//   bytes per reduced element: 4 read per pass over the row (2 passes; a row held in registers is read once), 4 written by the last pass (element outputs)
// element space (out0 .. out1: the reductions' operands, in registers; then the element outputs):
// pointwise plan: rank 2, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// parameters: 88 bytes
// in0: input 0, float32, contiguous, 4 B/element
// in1: input 1, float32, strided dims {0}, 4 B/element
// in2: input 2, float32, strided dims {0}, 4 B/element
// in3: input 3, float32, row broadcast, 0 B/element
// in4: input 4, float32, row broadcast, 0 B/element
// out0: float32
// out1: float32
// out2: float32
// scalars: float32
// entry points: f2_layernorm_v (4-element runs), f2_layernorm_s (general)

struct f2_layernorm_el_params {
    const float* in0;                                        // input 0 "", contiguous (test_reduce_golden.cpp:90)
    const float* in1;                                        // input 1 "row value 0", strided (test_reduce_golden.cpp:90)
    const float* in2;                                        // input 2 "row value 1", strided (test_reduce_golden.cpp:92)
    const float* in3;                                        // input 3 "", row broadcast (test_reduce_golden.cpp:93)
    const float* in4;                                        // input 4 "", row broadcast (test_reduce_golden.cpp:93)
    float* out0;                                             // output 0, contiguous
    float* out1;                                             // output 1, contiguous
    float* out2;                                             // output 2, contiguous
    int n;                                                   // elements in the iteration space
    int ext1;                                                // extent of dimension 1
    int in1_s0;                                              // in1 stride of dimension 0
    int in2_s0;                                              // in2 stride of dimension 0
    float s0;                                                // scalar float32 (test_reduce_golden.cpp:93)
};
static_assert(sizeof(f2_layernorm_el_params) == 88, "kernel parameter layout differs from the host's");

struct f2_layernorm_params {
    f2_layernorm_el_params el;                                           // element space
    long long n_out;                                                     // O: rows (output elements)
    long long len;                                                       // L: elements reduced per row
    long long chunks;                                                    // ceil(L / 8192)
    long long cpb;                                                       // chunks per block (outer split: a power of two)
    long long nblk;                                                      // blocks per row
    void* count;                                                         // split: integer counters, zero at launch and left zero
    void* part0;                                                         // split: partials of reduction 0
    void* part1;                                                         // split: partials of reduction 1
};
static_assert(sizeof(f2_layernorm_params) == 152, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void f2_layernorm_el_body(const f2_layernorm_el_params& p, const float v0, const float v1, const float v4, const float v9, const float v11, float& r0, float& r1, float& r2) {
    // v0 = in0: input 0 "" float32                          // test_reduce_golden.cpp:90
    // v1 = in1: input 1 "row value 0" float32               // test_reduce_golden.cpp:90
    const float v2 = lm::sub(v0, v1);                        // sub (test_reduce_golden.cpp:91)
    const float v3 = lm::mul(v2, v2);                        // mul (test_reduce_golden.cpp:92)
    // v4 = in2: input 2 "row value 1" float32               // test_reduce_golden.cpp:92
    const float v5 = p.s0;                                   // scalar float32 (test_reduce_golden.cpp:93)
    const float v6 = lm::add(v4, v5);                        // add (test_reduce_golden.cpp:93)
    const float v7 = lm::rsqrt_(v6);                         // rsqrt (test_reduce_golden.cpp:93)
    const float v8 = lm::mul(v2, v7);                        // mul (test_reduce_golden.cpp:93)
    // v9 = in3: input 3 "" float32                          // test_reduce_golden.cpp:93
    const float v10 = lm::mul(v8, v9);                       // mul (test_reduce_golden.cpp:93)
    // v11 = in4: input 4 "" float32                         // test_reduce_golden.cpp:93
    const float v12 = lm::add(v10, v11);                     // add (test_reduce_golden.cpp:93)
    r0 = v0;                                                 // output 0
    r1 = v3;                                                 // output 1
    r2 = v12;                                                // output 2
}

// The operands of element (i0, i1) of the element space (row values come from registers).
__device__ __forceinline__ void f2_layernorm_el_load(const f2_layernorm_el_params& p, const int i0, const int i1, float& s0, float& s3, float& s4) {
    (void)i0; (void)i1;
    s0 = lm::to_reg(p.in0[i0 * p.ext1 + i1]);                            // in0 (contiguous)
    s3 = lm::to_reg(p.in3[i1]);                                          // in3 (row broadcast)
    s4 = lm::to_reg(p.in4[i1]);                                          // in4 (row broadcast)
}

// Elements (i0, i1 .. i1 + 3) (rank 2) or i0 .. i0 + 3 (rank 1), 4-element runs.
__device__ __forceinline__ void f2_layernorm_el_load4(const f2_layernorm_el_params& p, const int i0, const int i1, float (&s0)[4], float (&s3)[4], float (&s4)[4]) {
    (void)i0; (void)i1;
    { const lm::vec<float, 4> a = lm::load_vec<float, 4>(p.in0 + (i0 * p.ext1 + i1)); for (int j = 0; j < 4; ++j) s0[j] = lm::to_reg(a.v[j]); } // in0 (16 bytes)
    { const lm::vec<float, 4> a = lm::load_vec<float, 4>(p.in3 + (i1)); for (int j = 0; j < 4; ++j) s3[j] = lm::to_reg(a.v[j]); } // in3 (16 bytes)
    { const lm::vec<float, 4> a = lm::load_vec<float, 4>(p.in4 + (i1)); for (int j = 0; j < 4; ++j) s4[j] = lm::to_reg(a.v[j]); } // in4 (16 bytes)
}

extern "C" __global__ void __launch_bounds__(256) f2_layernorm_v(const __grid_constant__ f2_layernorm_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    __shared__ __align__(16) unsigned char lm_smem[8192];                // butterfly exchange (two slots)
    int lm_par = 0;                                                      // the butterfly slot of the next chunk end
    const f2_layernorm_el_params& pe = p.el;
    const int tid = threadIdx.x;
    const int w = tid;                                                   // lane of the row's group
    const long long o = blockIdx.x;                                      // one row per block
    const long long c_begin = (long long)blockIdx.y * p.cpb;
    const long long c_end = c_begin + p.cpb < p.chunks ? c_begin + p.cpb : p.chunks;
    (void)c_end; (void)w;
    float rv0 = {};                                                      // row value
    float rv1 = {};                                                      // row value
    // the row, held in registers: 8 positions of 4 elements per thread
    float c0[8][4];
    float c3[8][4];
    float c4[8][4];
    #pragma unroll
    for (int q = 0; q < 8; ++q) {
        const long long r0 = (long long)(q / 1) * 1024 + 4 * (w + 256 * (q % 1));
        f2_layernorm_el_load4(pe, (int)o, (int)r0, c0[q], c3[q], c4[q]);
    }
    {  // ---- stage 0 ----
        float acc0[1]; for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;      // reduction 0: mean of float32, lane accumulators
        float cp0_0 = -0.0f;                                             // the partial of chunk 0
        if (0LL * 8192 < p.len) {                                        // chunk 0
            #pragma unroll
            for (int q = 0; q < 8; ++q) {
                const long long r0 = (long long)(q / 1) * 1024 + 4 * (w + 256 * (q % 1));
                const int K = q % 1;
                {                                                        // full rows: inside the row
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        float y0; float y1; float y2; 
                        f2_layernorm_el_body(pe, c0[q][j], rv0, rv1, c3[q][j], c4[q][j], y0, y1, y2);
                        acc0[K] = lm::add(acc0[K], y0);
                    }
                }
            }
            {                                                            // reduction 0: butterfly over the 256 lanes, then the chunk partial
                float* red = reinterpret_cast<float*>(lm_smem + lm_par * 4096); lm_par ^= 1; // this chunk end's slot (4 KiB: 256 accumulators of up to 16 bytes)
                red[tid] = acc0[0];
                __syncthreads();
                float b[8];
                #pragma unroll
                for (int k = 0; k < 8; ++k) b[k] = red[(tid & 31) + 32 * k];
                #pragma unroll
                for (int k = 0; k < 4; ++k) b[k] = lm::add(b[k], b[k + 4]); // s = 128
                #pragma unroll
                for (int k = 0; k < 2; ++k) b[k] = lm::add(b[k], b[k + 2]); // s = 64
                float v = lm::add(b[0], b[1]);                           // s = 32
                v = lm::add(v, lm::shfl_down(v, 16));                    // s = 16
                v = lm::add(v, lm::shfl_down(v, 8));                     // s = 8
                v = lm::add(v, lm::shfl_down(v, 4));                     // s = 4
                v = lm::add(v, lm::shfl_down(v, 2));                     // s = 2
                v = lm::add(v, lm::shfl_down(v, 1));                     // s = 1
                cp0_0 = lm::shfl0(v);                                    // lane 0's value: the chunk partial, in every thread
                for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;
            }
        }
        rv0 = __fdiv_rn(cp0_0, __ll2float_rn(p.len));                    // the row value, in every thread (pairwise over the chunks)
    }
    {  // ---- stage 1 ----
        float acc1[1]; for (int k = 0; k < 1; ++k) acc1[k] = -0.0f;      // reduction 1: mean of float32, lane accumulators
        float cp1_0 = -0.0f;                                             // the partial of chunk 0
        if (0LL * 8192 < p.len) {                                        // chunk 0
            #pragma unroll
            for (int q = 0; q < 8; ++q) {
                const long long r0 = (long long)(q / 1) * 1024 + 4 * (w + 256 * (q % 1));
                const int K = q % 1;
                {                                                        // full rows: inside the row
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        float y0; float y1; float y2; 
                        f2_layernorm_el_body(pe, c0[q][j], rv0, rv1, c3[q][j], c4[q][j], y0, y1, y2);
                        acc1[K] = lm::add(acc1[K], y1);
                    }
                }
            }
            {                                                            // reduction 1: butterfly over the 256 lanes, then the chunk partial
                float* red = reinterpret_cast<float*>(lm_smem + lm_par * 4096); lm_par ^= 1; // this chunk end's slot (4 KiB: 256 accumulators of up to 16 bytes)
                red[tid] = acc1[0];
                __syncthreads();
                float b[8];
                #pragma unroll
                for (int k = 0; k < 8; ++k) b[k] = red[(tid & 31) + 32 * k];
                #pragma unroll
                for (int k = 0; k < 4; ++k) b[k] = lm::add(b[k], b[k + 4]); // s = 128
                #pragma unroll
                for (int k = 0; k < 2; ++k) b[k] = lm::add(b[k], b[k + 2]); // s = 64
                float v = lm::add(b[0], b[1]);                           // s = 32
                v = lm::add(v, lm::shfl_down(v, 16));                    // s = 16
                v = lm::add(v, lm::shfl_down(v, 8));                     // s = 8
                v = lm::add(v, lm::shfl_down(v, 4));                     // s = 4
                v = lm::add(v, lm::shfl_down(v, 2));                     // s = 2
                v = lm::add(v, lm::shfl_down(v, 1));                     // s = 1
                cp1_0 = lm::shfl0(v);                                    // lane 0's value: the chunk partial, in every thread
                for (int k = 0; k < 1; ++k) acc1[k] = -0.0f;
            }
        }
        rv1 = __fdiv_rn(cp1_0, __ll2float_rn(p.len));                    // the row value, in every thread (pairwise over the chunks)
    }
    // ---- element outputs ----
    #pragma unroll
    for (int q = 0; q < 8; ++q) {
        const long long r0 = (long long)(q / 1) * 1024 + 4 * (w + 256 * (q % 1));
        {                                                                // full rows: inside the row
            lm::vec<float, 4> ov0;
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                float y0; float y1; float y2; 
                f2_layernorm_el_body(pe, c0[q][j], rv0, rv1, c3[q][j], c4[q][j], y0, y1, y2);
                ov0.v[j] = y2;
            }
            lm::store_vec<float, 4>(pe.out2 + (o * p.len + r0), ov0);
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) f2_layernorm_s(const __grid_constant__ f2_layernorm_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    __shared__ __align__(16) unsigned char lm_smem[8192];                // butterfly exchange (two slots)
    int lm_par = 0;                                                      // the butterfly slot of the next chunk end
    const f2_layernorm_el_params& pe = p.el;
    const int tid = threadIdx.x;
    const int w = tid;                                                   // lane of the row's group
    const long long o = blockIdx.x;                                      // one row per block
    const long long c_begin = (long long)blockIdx.y * p.cpb;
    const long long c_end = c_begin + p.cpb < p.chunks ? c_begin + p.cpb : p.chunks;
    (void)c_end; (void)w;
    float rv0 = {};                                                      // row value
    float rv1 = {};                                                      // row value
    // the row, held in registers: 8 positions of 4 elements per thread
    float c0[8][4];
    float c3[8][4];
    float c4[8][4];
    #pragma unroll
    for (int q = 0; q < 8; ++q) {
        const long long r0 = (long long)(q / 1) * 1024 + 4 * (w + 256 * (q % 1));
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            if (r0 + j >= p.len) continue;
            f2_layernorm_el_load(pe, (int)o, (int)(r0 + j), c0[q][j], c3[q][j], c4[q][j]);
        }
    }
    {  // ---- stage 0 ----
        float acc0[1]; for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;      // reduction 0: mean of float32, lane accumulators
        float cp0_0 = -0.0f;                                             // the partial of chunk 0
        if (0LL * 8192 < p.len) {                                        // chunk 0
            #pragma unroll
            for (int q = 0; q < 8; ++q) {
                const long long r0 = (long long)(q / 1) * 1024 + 4 * (w + 256 * (q % 1));
                const int K = q % 1;
                if (r0 < p.len) {
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if (r0 + j >= p.len) continue;
                        float y0; float y1; float y2; 
                        f2_layernorm_el_body(pe, c0[q][j], rv0, rv1, c3[q][j], c4[q][j], y0, y1, y2);
                        acc0[K] = lm::add(acc0[K], y0);
                    }
                }
            }
            {                                                            // reduction 0: butterfly over the 256 lanes, then the chunk partial
                float* red = reinterpret_cast<float*>(lm_smem + lm_par * 4096); lm_par ^= 1; // this chunk end's slot (4 KiB: 256 accumulators of up to 16 bytes)
                red[tid] = acc0[0];
                __syncthreads();
                float b[8];
                #pragma unroll
                for (int k = 0; k < 8; ++k) b[k] = red[(tid & 31) + 32 * k];
                #pragma unroll
                for (int k = 0; k < 4; ++k) b[k] = lm::add(b[k], b[k + 4]); // s = 128
                #pragma unroll
                for (int k = 0; k < 2; ++k) b[k] = lm::add(b[k], b[k + 2]); // s = 64
                float v = lm::add(b[0], b[1]);                           // s = 32
                v = lm::add(v, lm::shfl_down(v, 16));                    // s = 16
                v = lm::add(v, lm::shfl_down(v, 8));                     // s = 8
                v = lm::add(v, lm::shfl_down(v, 4));                     // s = 4
                v = lm::add(v, lm::shfl_down(v, 2));                     // s = 2
                v = lm::add(v, lm::shfl_down(v, 1));                     // s = 1
                cp0_0 = lm::shfl0(v);                                    // lane 0's value: the chunk partial, in every thread
                for (int k = 0; k < 1; ++k) acc0[k] = -0.0f;
            }
        }
        rv0 = __fdiv_rn(cp0_0, __ll2float_rn(p.len));                    // the row value, in every thread (pairwise over the chunks)
    }
    {  // ---- stage 1 ----
        float acc1[1]; for (int k = 0; k < 1; ++k) acc1[k] = -0.0f;      // reduction 1: mean of float32, lane accumulators
        float cp1_0 = -0.0f;                                             // the partial of chunk 0
        if (0LL * 8192 < p.len) {                                        // chunk 0
            #pragma unroll
            for (int q = 0; q < 8; ++q) {
                const long long r0 = (long long)(q / 1) * 1024 + 4 * (w + 256 * (q % 1));
                const int K = q % 1;
                if (r0 < p.len) {
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if (r0 + j >= p.len) continue;
                        float y0; float y1; float y2; 
                        f2_layernorm_el_body(pe, c0[q][j], rv0, rv1, c3[q][j], c4[q][j], y0, y1, y2);
                        acc1[K] = lm::add(acc1[K], y1);
                    }
                }
            }
            {                                                            // reduction 1: butterfly over the 256 lanes, then the chunk partial
                float* red = reinterpret_cast<float*>(lm_smem + lm_par * 4096); lm_par ^= 1; // this chunk end's slot (4 KiB: 256 accumulators of up to 16 bytes)
                red[tid] = acc1[0];
                __syncthreads();
                float b[8];
                #pragma unroll
                for (int k = 0; k < 8; ++k) b[k] = red[(tid & 31) + 32 * k];
                #pragma unroll
                for (int k = 0; k < 4; ++k) b[k] = lm::add(b[k], b[k + 4]); // s = 128
                #pragma unroll
                for (int k = 0; k < 2; ++k) b[k] = lm::add(b[k], b[k + 2]); // s = 64
                float v = lm::add(b[0], b[1]);                           // s = 32
                v = lm::add(v, lm::shfl_down(v, 16));                    // s = 16
                v = lm::add(v, lm::shfl_down(v, 8));                     // s = 8
                v = lm::add(v, lm::shfl_down(v, 4));                     // s = 4
                v = lm::add(v, lm::shfl_down(v, 2));                     // s = 2
                v = lm::add(v, lm::shfl_down(v, 1));                     // s = 1
                cp1_0 = lm::shfl0(v);                                    // lane 0's value: the chunk partial, in every thread
                for (int k = 0; k < 1; ++k) acc1[k] = -0.0f;
            }
        }
        rv1 = __fdiv_rn(cp1_0, __ll2float_rn(p.len));                    // the row value, in every thread (pairwise over the chunks)
    }
    // ---- element outputs ----
    #pragma unroll
    for (int q = 0; q < 8; ++q) {
        const long long r0 = (long long)(q / 1) * 1024 + 4 * (w + 256 * (q % 1));
        if (r0 < p.len) {
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                if (r0 + j >= p.len) continue;
                float y0; float y1; float y2; 
                f2_layernorm_el_body(pe, c0[q][j], rv0, rv1, c3[q][j], c4[q][j], y0, y1, y2);
                pe.out2[o * p.len + r0 + j] = y2;
            }
        }
    }
}
