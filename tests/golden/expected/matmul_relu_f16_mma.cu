// ---- Loom matmul kernel matmul_relu_f16_mma (from "matmul_relu_f16_mma") ----
// matmul plan: float16 x float16 -> float16, rank 2, tensor cores (mma.sync m16n8k16 into float32: within the bound of docs/semantics.md, section 12; not wgmma: mma_sync asked for)
// tile 128x128x32: 256 threads as 2 x 4 warps of 4 x 4 MMA tiles of 16 x 8
// shared memory: 3 stages of A 128 x 40 and B 32 x 136 (rows padded by 16 bytes), 56832 bytes
// loads: A and B in 16-byte cp.async pieces where the pointers allow, else element loads; K in steps of 16 over all of K (zero-filled past K)
// epilogue: pointwise plan: rank 2, block 256, vector width 8 (16-byte vectors), 32-bit indexing
// parameters: 32 bytes
// in0: input 0, float16, contiguous, 2 B/element
// in1: input 1, float16, row broadcast, 0 B/element
// out0: float16
// entry point: matmul_relu_f16_mma (the loads, 16-byte pieces or elements per operand, are the parameter `pieces`)

struct matmul_relu_f16_mma_ep_params {
    const lm::f16* in0;                                      // input 0 "accumulators", contiguous (test_matmul_golden.cpp:73)
    const lm::f16* in1;                                      // input 1 "bias", row broadcast (test_matmul_golden.cpp:71)
    lm::f16* out0;                                           // output 0, contiguous
    int n;                                                   // elements in the iteration space
    int ext1;                                                // extent of dimension 1
};
static_assert(sizeof(matmul_relu_f16_mma_ep_params) == 32, "kernel parameter layout differs from the host's");

struct matmul_relu_f16_mma_params {
    const lm::f16* a;                                                    // A: [256, 160] float16, a view of input "a" float16 (test_matmul_golden.cpp:70)
    const lm::f16* b;                                                    // B: [160, 192] float16, a view of input "b" float16 (test_matmul_golden.cpp:70)
    long long M;                                                         // M: the product's rows
    long long N;                                                         // N: the product's columns
    long long K;                                                         // K: the contraction's length
    long long chunks;                                                    // ceil(K / 8192): chunks of the contraction
    long long batches;                                                   // batch entries (the product of the batch extents)
    long long a_s0;                                                      // A stride along axis 0 (m), elements
    long long a_s1;                                                      // A stride along axis 1 (k), elements
    long long b_s0;                                                      // B stride along axis 0 (k), elements
    long long b_s1;                                                      // B stride along axis 1 (n), elements
    long long pieces;                                                    // bit 0 (A), bit 1 (B): the operand's K steps arrive as 16-byte cp.async pieces; else element loads
    matmul_relu_f16_mma_ep_params ep;                                    // the epilogue's parameters
};
static_assert(sizeof(matmul_relu_f16_mma_params) == 128, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void matmul_relu_f16_mma_ep_body(const float v0, const float v1, float& r0) {
    // v0 = in0: input 0 "accumulators" float16              // test_matmul_golden.cpp:73
    // v1 = in1: input 1 "bias" float16                      // test_matmul_golden.cpp:71
    const float v2 = lm::round_f16(lm::add(v0, v1));         // add (test_matmul_golden.cpp:73)
    const float v3 = lm::relu(v2);                           // relu (test_matmul_golden.cpp:73)
    r0 = v3;                                                 // output 0
}

__device__ __forceinline__ void matmul_relu_f16_mma_ep_element(const matmul_relu_f16_mma_ep_params& p, const int e, const float acc) {
    int q = e;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    const float v0 = acc;                                    // in0: the product, from the accumulators
    const float v1 = lm::to_reg(p.in1[i1]);                  // load in1 (row broadcast)
    float r0;
    matmul_relu_f16_mma_ep_body(v0, v1, r0);
    p.out0[e] = lm::to_f16(r0);
}

extern __shared__ __align__(16) unsigned char matmul_relu_f16_mma_smem[];  // 56832 bytes: the stage buffers

// Stage buffers `as` (A: 128 rows of 32, k fastest, pitch 40) and `bs` (B: 32 rows of 128, n fastest, pitch 136) of
// the K step at k0, zeros outside the matrices: per operand, 16-byte cp.async pieces (its row length divides
// into pieces) or element loads through any strides (transposed, sliced, broadcast views), consecutive
// threads walking its unit-stride axis.
__device__ __forceinline__ void matmul_relu_f16_mma_load_a_pieces(const matmul_relu_f16_mma_params& p, const lm::f16* A, lm::f16* as,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)n0;
    for (int q = threadIdx.x; q < 512; q += 256) {                       // 512 pieces of 8 elements
        const int row = q / 4, col = q % 4 * 8;
        const long long m = m0 + row, k = k0 + col;
        const bool in = m < p.M && k < p.K;
        lm::cp_async16(as + row * 40 + col, in ? A + m * p.a_s0 + k : A, in ? 16 : 0);
    }
}

__device__ __forceinline__ void matmul_relu_f16_mma_load_a_elements(const matmul_relu_f16_mma_params& p, const lm::f16* A, lm::f16* as,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)n0;
    for (int q = threadIdx.x; q < 4096; q += 256) {                      // along k
        const int row = q / 32, col = q % 32;
        const long long m = m0 + row, k = k0 + col;
        as[row * 40 + col] = m < p.M && k < p.K ? A[m * p.a_s0 + k * p.a_s1] : lm::f16{0};
    }
}

__device__ __forceinline__ void matmul_relu_f16_mma_load_b_pieces(const matmul_relu_f16_mma_params& p, const lm::f16* B, lm::f16* bs,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)m0;
    for (int q = threadIdx.x; q < 512; q += 256) {                       // 512 pieces of 8 elements
        const int row = q / 16, col = q % 16 * 8;
        const long long k = k0 + row, n = n0 + col;
        const bool in = k < p.K && n < p.N;
        lm::cp_async16(bs + row * 136 + col, in ? B + k * p.b_s0 + n : B, in ? 16 : 0);
    }
}

__device__ __forceinline__ void matmul_relu_f16_mma_load_b_elements(const matmul_relu_f16_mma_params& p, const lm::f16* B, lm::f16* bs,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)m0;
    for (int q = threadIdx.x; q < 4096; q += 256) {                      // along n
        const int row = q / 128, col = q % 128;
        const long long k = k0 + row, n = n0 + col;
        bs[row * 136 + col] = k < p.K && n < p.N ? B[k * p.b_s0 + n * p.b_s1] : lm::f16{0};
    }
}

// The loads the runtime chose for this call's operands (p.pieces, the same for every block).
__device__ __forceinline__ void matmul_relu_f16_mma_load(const matmul_relu_f16_mma_params& p, const lm::f16* A, const lm::f16* B, lm::f16* as, lm::f16* bs,
                                       long long batch, long long m0, long long n0, long long k0) {
    if (p.pieces & 1) matmul_relu_f16_mma_load_a_pieces(p, A, as, batch, m0, n0, k0);
    else matmul_relu_f16_mma_load_a_elements(p, A, as, batch, m0, n0, k0);
    if (p.pieces & 2) matmul_relu_f16_mma_load_b_pieces(p, B, bs, batch, m0, n0, k0);
    else matmul_relu_f16_mma_load_b_elements(p, B, bs, batch, m0, n0, k0);
}

extern "C" __global__ void __launch_bounds__(256) matmul_relu_f16_mma(const __grid_constant__ matmul_relu_f16_mma_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    lm::f16* as_all = reinterpret_cast<lm::f16*>(matmul_relu_f16_mma_smem); // 3 stages of A, then 3 of B
    lm::f16* bs_all = as_all + 15360;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm0 = warp / 4 * 64, wn0 = warp % 4 * 32;                  // the warp's tile in the block's
    const int grp = lane / 4, tig = lane % 4;                            // the lane's group and thread in the MMA fragments
    const long long tiles_n = (p.N + 127) / 128;
    const long long m0 = (long long)(blockIdx.x / tiles_n) * 128;        // the block's tile
    const long long n0 = (long long)(blockIdx.x % tiles_n) * 128;
    for (long long batch = blockIdx.y; batch < p.batches; batch += gridDim.y) {
        const lm::f16* A = p.a;                                          // one matrix: no batch axes
        const lm::f16* B = p.b;
        float c[4][4][4];                                                // the accumulators: per MMA tile, rows grp and grp + 8, columns 2 tig and 2 tig + 1
        #pragma unroll
        for (int i = 0; i < 4; ++i)
            #pragma unroll
            for (int j = 0; j < 4; ++j)
                #pragma unroll
                for (int r = 0; r < 4; ++r) c[i][j][r] = 0;              // K = 0: +0
        {
            const long long k0 = 0, kend = p.K;                          // one pass over K: the bound of section 12 holds for any order
            const int steps = (int)((kend - k0 + 31) / 32);              // K steps of 32
            for (int s = 0; s < 2; ++s) {                                // the pipeline's first 2 K steps in flight
                if (s < steps) matmul_relu_f16_mma_load(p, A, B, as_all + s * 5120, bs_all + s * 4352, batch, m0, n0, k0 + (long long)(s) * 32);
                lm::cp_async_commit();                                   // a group per step, empty or not, so the waits count steps
            }
            for (int t = 0; t < steps; ++t) {
                lm::cp_async_wait<1>();                                  // step t's copies have landed
                __syncthreads();                                         // ... for every thread, and step t - 1's buffers are free
                if (t + 2 < steps) {                                     // refill the buffers of step t - 1 with step t + 2
                    matmul_relu_f16_mma_load(p, A, B, as_all + ((t + 2) % 3) * 5120, bs_all + ((t + 2) % 3) * 4352, batch, m0, n0, k0 + (long long)(t + 2) * 32);
                }
                lm::cp_async_commit();
                const lm::f16* as = as_all + (t % 3) * 5120;
                const lm::f16* bs = bs_all + (t % 3) * 4352;
                #pragma unroll
                for (int kk = 0; kk < 32; kk += 16) {                    // one mma.sync step of k = 16
                    unsigned fa[4][4], fb[4][2];                         // A and B fragments of the warp tile
                    #pragma unroll
                    for (int i = 0; i < 4; ++i)
                        #pragma unroll
                        for (int r = 0; r < 4; ++r)
                            fa[i][r] = lm::load_u32(as + (wm0 + 16 * i + grp + 8 * (r % 2)) * 40 + kk + 8 * (r / 2) + 2 * tig); // 2 consecutive k of one row
                    #pragma unroll
                    for (int j = 0; j < 4; ++j)
                        #pragma unroll
                        for (int r = 0; r < 2; ++r)
                            fb[j][r] = lm::pack_column(bs + (kk + 8 * r + 2 * tig) * 136 + wn0 + 8 * j + grp, 136); // 2 consecutive k of one column
                    #pragma unroll
                    for (int i = 0; i < 4; ++i)
                        #pragma unroll
                        for (int j = 0; j < 4; ++j) lm::mma_m16n8k16_f16(c[i][j], fa[i], fb[j]); // float32 accumulators
                }
            }
            lm::cp_async_wait<0>();
            __syncthreads();                                             // every buffer read before the next copies
        }
        // The epilogue on the accumulators: the product's value in its dtype, then the fused elementwise work.
        #pragma unroll
        for (int i = 0; i < 4; ++i)
            #pragma unroll
            for (int j = 0; j < 4; ++j)
                #pragma unroll
                for (int r = 0; r < 4; ++r) {
                    const long long m = m0 + wm0 + 16 * i + grp + 8 * (r / 2), n = n0 + wn0 + 8 * j + 2 * tig + r % 2;
                    if (m < p.M && n < p.N)
                        matmul_relu_f16_mma_ep_element(p.ep, (int)((batch * p.M + m) * p.N + n), lm::round_f16(c[i][j][r])); // element (batch, m, n) of the product's shape
                }
    }
}
