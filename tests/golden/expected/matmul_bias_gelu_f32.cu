// ---- Loom matmul kernel matmul_bias_gelu_f32 (from "matmul_bias_gelu_f32") ----
// matmul plan: float32 x float32 -> float32, rank 2, CUDA cores (one fma per k in the contract's order)
// tile 128x128x32: 256 threads as 4 x 2 warps of 4 x 8 lanes, 8 x 8 accumulators per thread, fragments read 4 elements of A's rows and 4 of B's at once; 2 blocks per multiprocessor (few K steps: at most 128 registers per thread)
// shared memory: 3 stages of A 128 x 36 and B 32 x 132 (rows padded by 16 bytes), 105984 bytes
// loads: A and B in 16-byte cp.async pieces where the pointers allow, else element loads; K in chunks of 8192 (one chunk: no partials); the epilogue through a shared-memory tile of the outputs, whole lines per warp, 4 columns at a time (16-byte vectors) where the pointers allow
// epilogue: pointwise plan: rank 2, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// parameters: 32 bytes
// in0: input 0, float32, contiguous, 4 B/element
// in1: input 1, float32, row broadcast, 0 B/element
// out0: float32
// entry point: matmul_bias_gelu_f32 (the loads, 16-byte pieces or elements per operand, are the parameter `pieces`)

struct matmul_bias_gelu_f32_ep_params {
    const float* in0;                                        // input 0 "accumulators", contiguous (test_matmul_golden.cpp:39)
    const float* in1;                                        // input 1 "bias", row broadcast (test_matmul_golden.cpp:38)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
    int ext1;                                                // extent of dimension 1
};
static_assert(sizeof(matmul_bias_gelu_f32_ep_params) == 32, "kernel parameter layout differs from the host's");

struct matmul_bias_gelu_f32_params {
    const float* a;                                                      // A: [512, 256] float32, a view of input "x" float32 (test_matmul_golden.cpp:37)
    const float* b;                                                      // B: [256, 384] float32, a view of input "w" float32 (test_matmul_golden.cpp:37)
    long long M;                                                         // M: the product's rows
    long long N;                                                         // N: the product's columns
    long long K;                                                         // K: the contraction's length
    long long chunks;                                                    // ceil(K / 8192): chunks of the contraction
    long long batches;                                                   // batch entries (the product of the batch extents)
    long long a_s0;                                                      // A stride along axis 0 (m), elements
    long long a_s1;                                                      // A stride along axis 1 (k), elements
    long long b_s0;                                                      // B stride along axis 0 (k), elements
    long long b_s1;                                                      // B stride along axis 1 (n), elements
    long long pieces;                                                    // bit 0 (A), bit 1 (B): the operand's K steps arrive as 16-byte cp.async pieces; else element loads; bit 2: the epilogue in vectors
    matmul_bias_gelu_f32_ep_params ep;                                   // the epilogue's parameters
};
static_assert(sizeof(matmul_bias_gelu_f32_params) == 128, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void matmul_bias_gelu_f32_ep_body(const float v0, const float v1, float& r0) {
    // v0 = in0: input 0 "accumulators" float32              // test_matmul_golden.cpp:39
    // v1 = in1: input 1 "bias" float32                      // test_matmul_golden.cpp:38
    const float v2 = lm::add(v0, v1);                        // add (test_matmul_golden.cpp:39)
    const float v3 = lm::gelu_erf(v2);                       // gelu (test_matmul_golden.cpp:39)
    r0 = v3;                                                 // output 0
}

__device__ __forceinline__ void matmul_bias_gelu_f32_ep_element(const matmul_bias_gelu_f32_ep_params& p, const int e, const float acc) {
    int q = e;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    const float v0 = acc;                                    // in0: the product, from the accumulators
    const float v1 = lm::to_reg(p.in1[i1]);                  // load in1 (row broadcast)
    float r0;
    matmul_bias_gelu_f32_ep_body(v0, v1, r0);
    p.out0[e] = r0;
}

__device__ __forceinline__ void matmul_bias_gelu_f32_ep_element4(const matmul_bias_gelu_f32_ep_params& p, const int i, const lm::vec<float, 4> acc) {
    int q = i;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    const lm::vec<float, 4> a1 = lm::load_vec<float, 4>(p.in1 + i1); // load in1 (row broadcast, 16 bytes)
    lm::vec<float, 4> o0;
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        float r0;
        matmul_bias_gelu_f32_ep_body(acc.v[j], lm::to_reg(a1.v[j]), r0);
        o0.v[j] = r0;
    }
    lm::store_vec<float, 4>(p.out0 + i, o0);                 // store out0 (16 bytes)
}

extern __shared__ __align__(16) unsigned char matmul_bias_gelu_f32_smem[];  // 105984 bytes: the stage buffers

// Stage buffers `as` (A: 128 rows of 32, k fastest, pitch 36) and `bs` (B: 32 rows of 128, n fastest, pitch 132) of
// the K step at k0, zeros outside the matrices: per operand, 16-byte cp.async pieces (its row length divides
// into pieces) or element loads through any strides (transposed, sliced, broadcast views), consecutive
// threads walking its unit-stride axis.
__device__ __forceinline__ void matmul_bias_gelu_f32_load_a_pieces(const matmul_bias_gelu_f32_params& p, const float* A, float* as,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)n0;
    for (int q = threadIdx.x; q < 1024; q += 256) {                      // 1024 pieces of 4 elements
        const int row = q / 8, col = q % 8 * 4;
        const long long m = m0 + row, k = k0 + col;
        const bool in = m < p.M && k < p.K;
        lm::cp_async16(as + row * 36 + col, in ? A + m * p.a_s0 + k : A, in ? 16 : 0);
    }
}

__device__ __forceinline__ void matmul_bias_gelu_f32_load_a_elements(const matmul_bias_gelu_f32_params& p, const float* A, float* as,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)n0;
    for (int q = threadIdx.x; q < 4096; q += 256) {                      // along k
        const int row = q / 32, col = q % 32;
        const long long m = m0 + row, k = k0 + col;
        as[row * 36 + col] = m < p.M && k < p.K ? A[m * p.a_s0 + k * p.a_s1] : (float)0;
    }
}

__device__ __forceinline__ void matmul_bias_gelu_f32_load_b_pieces(const matmul_bias_gelu_f32_params& p, const float* B, float* bs,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)m0;
    for (int q = threadIdx.x; q < 1024; q += 256) {                      // 1024 pieces of 4 elements
        const int row = q / 32, col = q % 32 * 4;
        const long long k = k0 + row, n = n0 + col;
        const bool in = k < p.K && n < p.N;
        lm::cp_async16(bs + row * 132 + col, in ? B + k * p.b_s0 + n : B, in ? 16 : 0);
    }
}

__device__ __forceinline__ void matmul_bias_gelu_f32_load_b_elements(const matmul_bias_gelu_f32_params& p, const float* B, float* bs,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)m0;
    for (int q = threadIdx.x; q < 4096; q += 256) {                      // along n
        const int row = q / 128, col = q % 128;
        const long long k = k0 + row, n = n0 + col;
        bs[row * 132 + col] = k < p.K && n < p.N ? B[k * p.b_s0 + n * p.b_s1] : (float)0;
    }
}

// The loads the runtime chose for this call's operands (p.pieces, the same for every block).
__device__ __forceinline__ void matmul_bias_gelu_f32_load(const matmul_bias_gelu_f32_params& p, const float* A, const float* B, float* as, float* bs,
                                       long long batch, long long m0, long long n0, long long k0) {
    if (p.pieces & 1) matmul_bias_gelu_f32_load_a_pieces(p, A, as, batch, m0, n0, k0);
    else matmul_bias_gelu_f32_load_a_elements(p, A, as, batch, m0, n0, k0);
    if (p.pieces & 2) matmul_bias_gelu_f32_load_b_pieces(p, B, bs, batch, m0, n0, k0);
    else matmul_bias_gelu_f32_load_b_elements(p, B, bs, batch, m0, n0, k0);
}

extern "C" __global__ void __launch_bounds__(256, 2) matmul_bias_gelu_f32(const __grid_constant__ matmul_bias_gelu_f32_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    float* as_all = reinterpret_cast<float*>(matmul_bias_gelu_f32_smem); // 3 stages of A, then 3 of B
    float* bs_all = as_all + 13824;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = warp / 2 * 32 + lane / 8;                           // this thread's first row in the tile (then every 4)
    const int col0 = warp % 2 * 64 + lane % 8 * 4;                       // this thread's first column (then groups of 4 every 32)
    const long long tiles_n = (p.N + 127) / 128;
    const long long m0 = (long long)(blockIdx.x / tiles_n) * 128;        // the block's tile
    const long long n0 = (long long)(blockIdx.x % tiles_n) * 128;
    for (long long batch = blockIdx.y; batch < p.batches; batch += gridDim.y) {
        const float* A = p.a;                                            // one matrix: no batch axes
        const float* B = p.b;
        float c[8][8];                                                   // the accumulators
        #pragma unroll
        for (int i = 0; i < 8; ++i)
            #pragma unroll
            for (int j = 0; j < 8; ++j) c[i][j] = 0;                     // K = 0: the empty sum, +0
        for (long long chunk = 0; chunk < p.chunks; ++chunk) {           // chunks of 8192 along K (docs/semantics.md, section 12)
            const long long k0 = chunk * 8192, kend = min(p.K, k0 + 8192);
            #pragma unroll
            for (int i = 0; i < 8; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j) c[i][j] = 0;                 // each chunk from +0
            const int steps = (int)((kend - k0 + 31) / 32);              // K steps of 32
            for (int s = 0; s < 2; ++s) {                                // the pipeline's first 2 K steps in flight
                if (s < steps) matmul_bias_gelu_f32_load(p, A, B, as_all + s * 4608, bs_all + s * 4224, batch, m0, n0, k0 + (long long)(s) * 32);
                lm::cp_async_commit();                                   // a group per step, empty or not, so the waits count steps
            }
            for (int t = 0; t < steps; ++t) {
                lm::cp_async_wait<1>();                                  // step t's copies have landed
                __syncthreads();                                         // ... for every thread, and step t - 1's buffers are free
                if (t + 2 < steps) {                                     // refill the buffers of step t - 1 with step t + 2
                    matmul_bias_gelu_f32_load(p, A, B, as_all + ((t + 2) % 3) * 4608, bs_all + ((t + 2) % 3) * 4224, batch, m0, n0, k0 + (long long)(t + 2) * 32);
                }
                lm::cp_async_commit();
                const float* as = as_all + (t % 3) * 4608;
                const float* bs = bs_all + (t % 3) * 4224;
                const long long kn = min((long long)32, kend - (k0 + (long long)t * 32)); // the k of this step that exist
                if (kn == 32) {
                    #pragma unroll
                    for (int k4 = 0; k4 < 32; k4 += 4) {                 // ascending k
                        lm::vec<float, 4> a4[8];
                        #pragma unroll
                        for (int i = 0; i < 8; ++i) a4[i] = lm::load_vec<float, 4>(as + (row0 + 4 * i) * 36 + k4); // 4 k of a row in one 16-byte read: a warp's 4 rows meet in no bank
                        #pragma unroll
                        for (int q = 0; q < 4; ++q) {
                            const int kk = k4 + q;
                            float fa[8], fb[8];
                            #pragma unroll
                            for (int i = 0; i < 8; ++i) fa[i] = a4[i].v[q]; // k + q of the row's 16-byte read
                            #pragma unroll
                            for (int j = 0; j < 8; j += 4) {             // 4 consecutive columns in one 16-byte read
                                const lm::vec<float, 4> b4 = lm::load_vec<float, 4>(bs + kk * 132 + col0 + 32 * (j / 4)); // a quarter warp: 128 consecutive bytes
                                #pragma unroll
                                for (int q4 = 0; q4 < 4; ++q4) fb[j + q4] = b4.v[q4];
                            }
                            #pragma unroll
                            for (int i = 0; i < 8; ++i)
                                #pragma unroll
                                for (int j = 0; j < 8; ++j) c[i][j] = __fmaf_rn(fa[i], fb[j], c[i][j]); // acc = fma(a[i, k], b[k, j], acc): one rounding
                        }
                    }
                } else {
                    for (int kk = 0; kk < (int)kn; ++kk) {               // the last, partial step: no padding term enters a sum
                        float fa[8], fb[8];
                        #pragma unroll
                        for (int i = 0; i < 8; ++i) fa[i] = (float)lm::to_reg(as[(row0 + 4 * i) * 36 + kk]); // 4-byte reads (the last, partial step only)
                        #pragma unroll
                        for (int j = 0; j < 8; j += 4) {                 // 4 consecutive columns in one 16-byte read
                            const lm::vec<float, 4> b4 = lm::load_vec<float, 4>(bs + kk * 132 + col0 + 32 * (j / 4)); // a quarter warp: 128 consecutive bytes
                            #pragma unroll
                            for (int q4 = 0; q4 < 4; ++q4) fb[j + q4] = b4.v[q4];
                        }
                        #pragma unroll
                        for (int i = 0; i < 8; ++i)
                            #pragma unroll
                            for (int j = 0; j < 8; ++j) c[i][j] = __fmaf_rn(fa[i], fb[j], c[i][j]); // acc = fma(a[i, k], b[k, j], acc): one rounding
                    }
                }
            }
            lm::cp_async_wait<0>();
            __syncthreads();                                             // every buffer read before the next copies
        }
        // The epilogue on the accumulators, through shared memory: the product's value in its dtype, then the fused
        // elementwise work, consecutive threads on consecutive columns.
        __syncthreads();                                                 // every thread's last reads of the stage buffers are done
        float* ct = reinterpret_cast<float*>(as_all);                    // the block's outputs: 128 rows of 132
        #pragma unroll
        for (int i = 0; i < 8; ++i)
            #pragma unroll
            for (int j = 0; j < 8; j += 4)
                lm::store_vec<float, 4>(ct + (row0 + 4 * i) * 132 + col0 + 32 * (j / 4) + j % 4, lm::vec<float, 4>{{c[i][j], c[i][j + 1], c[i][j + 2], c[i][j + 3]}}); // a quarter warp: 128 consecutive bytes
        __syncthreads();
        if (p.pieces & 4) {                                              // the epilogue's pointers aligned and N whole vectors: a thread's 4 consecutive columns at once
            #pragma unroll 2
            for (int r = 0; r < 16; ++r) {
                const int e = (threadIdx.x + 256 * r) * 4, row = e / 128, col = e % 128; // a warp: 512 consecutive bytes of a row
                const long long m = m0 + row, n = n0 + col;
                if (m < p.M && n < p.N)                                  // N is whole vectors: n .. n + 3 all in the product
                    matmul_bias_gelu_f32_ep_element4(p.ep, (int)((batch * p.M + m) * p.N + n), lm::load_vec<float, 4>(ct + row * 132 + col)); // elements (batch, m, n .. n + 3)
            }
        } else {
            #pragma unroll 4
            for (int r = 0; r < 64; ++r) {
                const int e = threadIdx.x + 256 * r, row = e / 128, col = e % 128;
                const long long m = m0 + row, n = n0 + col;
                if (m < p.M && n < p.N)
                    matmul_bias_gelu_f32_ep_element(p.ep, (int)((batch * p.M + m) * p.N + n), ct[row * 132 + col]); // element (batch, m, n) of the product's shape
            }
        }
        __syncthreads();                                                 // the tile read by every thread before the stage buffers fill again
    }
}
