// ---- Loom matmul kernel mm_gemv (from "mm_gemv") ----
// matmul plan: float32 x float32 -> float32, rank 2, CUDA cores (one fma per k in the contract's order)
// tile 128x1x128: 128 threads as 4 x 1 warps of 32 x 1 lanes, 1 x 1 accumulators per thread, fragments read 4 elements of A's rows and 1 of B's at once
// shared memory: 3 stages of A 128 x 132 and B 128 x 1 (A's rows padded by 16 bytes, B's narrower than a piece), 204288 bytes
// loads: A and B in 16-byte cp.async pieces where the pointers allow, else element loads; K in chunks of 8192, shared among blocks in aligned groups of chunks along the grid's z; each group's partial (a subtree of the pairwise tree) through a workspace, the block that completes a tile's counter combining them in the tree's order
// epilogue: pointwise plan: rank 1, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// parameters: 24 bytes
// in0: input 0, float32, contiguous, 4 B/element
// out0: float32
// entry point: mm_gemv (the loads, 16-byte pieces or elements per operand, are the parameter `pieces`)

struct mm_gemv_ep_params {
    const float* in0;                                        // input 0 "accumulators", contiguous (test_matmul_golden.cpp:198)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
};
static_assert(sizeof(mm_gemv_ep_params) == 24, "kernel parameter layout differs from the host's");

struct mm_gemv_params {
    const float* a;                                                      // A: [4096, 16384] float32, a view of input "a" float32 (test_matmul_golden.cpp:197)
    const float* b;                                                      // B: [16384, 1] float32, a view of input "x" float32 (test_matmul_golden.cpp:197)
    long long M;                                                         // M: the product's rows
    long long N;                                                         // N: the product's columns
    long long K;                                                         // K: the contraction's length
    long long chunks;                                                    // ceil(K / 8192): chunks of the contraction
    long long batches;                                                   // batch entries (the product of the batch extents)
    long long a_s0;                                                      // A stride along axis 0 (m), elements
    long long a_s1;                                                      // A stride along axis 1 (k), elements
    long long b_s0;                                                      // B stride along axis 0 (k), elements
    long long b_s1;                                                      // B stride along axis 1 (n), elements
    void* ws;                                                            // per group of chunks, its tree's stack (bit_width(group_chunks) slots), then per group its partial; each slot batches x M x N accumulators
    long long group_chunks;                                              // chunks per block along the grid's z (a power of two): block z takes chunks [z g, (z + 1) g)
    void* count;                                                         // unsigned counters, one per output tile and batch entry: zero at launch and left zero
    long long pieces;                                                    // bit 0 (A), bit 1 (B): the operand's K steps arrive as 16-byte cp.async pieces; else element loads
    mm_gemv_ep_params ep;                                                // the epilogue's parameters
};
static_assert(sizeof(mm_gemv_params) == 144, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void mm_gemv_ep_body(const float v0, float& r0) {
    // v0 = in0: input 0 "accumulators" float32              // test_matmul_golden.cpp:198
    r0 = v0;                                                 // output 0
}

__device__ __forceinline__ void mm_gemv_ep_element(const mm_gemv_ep_params& p, const int e, const float acc) {
    const float v0 = acc;                                    // in0: the product, from the accumulators
    float r0;
    mm_gemv_ep_body(v0, r0);
    p.out0[e] = r0;
}

extern __shared__ __align__(16) unsigned char mm_gemv_smem[];  // 204288 bytes: the stage buffers

// Stage buffers `as` (A: 128 rows of 128, k fastest, pitch 132) and `bs` (B: 128 rows of 1, n fastest, pitch 1) of
// the K step at k0, zeros outside the matrices: per operand, 16-byte cp.async pieces (its row length divides
// into pieces) or element loads through any strides (transposed, sliced, broadcast views), consecutive
// threads walking its unit-stride axis.
__device__ __forceinline__ void mm_gemv_load_a_pieces(const mm_gemv_params& p, const float* A, float* as,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)n0;
    for (int q = threadIdx.x; q < 4096; q += 128) {                      // 4096 pieces of 4 elements
        const int row = q / 32, col = q % 32 * 4;
        const long long m = m0 + row, k = k0 + col;
        const bool in = m < p.M && k < p.K;
        lm::cp_async16(as + row * 132 + col, in ? A + m * p.a_s0 + k : A, in ? 16 : 0);
    }
}

__device__ __forceinline__ void mm_gemv_load_a_elements(const mm_gemv_params& p, const float* A, float* as,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)n0;
    for (int q = threadIdx.x; q < 16384; q += 128) {                     // along k
        const int row = q / 128, col = q % 128;
        const long long m = m0 + row, k = k0 + col;
        as[row * 132 + col] = m < p.M && k < p.K ? A[m * p.a_s0 + k * p.a_s1] : (float)0;
    }
}

__device__ __forceinline__ void mm_gemv_load_b_pieces(const mm_gemv_params& p, const float* B, float* bs,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)m0;
    for (int q = threadIdx.x; q < 32; q += 128) {                        // 32 pieces of 4 consecutive k of the column
        const int row = q * 4;
        const long long k = k0 + row, n = n0;
        const bool in = k < p.K && n < p.N;
        lm::cp_async16(bs + row, in ? B + k + n * p.b_s1 : B, in ? 16 : 0); // B's stride along k is 1
    }
}

__device__ __forceinline__ void mm_gemv_load_b_elements(const mm_gemv_params& p, const float* B, float* bs,
        long long batch, long long m0, long long n0, long long k0) {
    (void)batch; (void)m0;
    for (int q = threadIdx.x; q < 128; q += 128) {                       // along k (B's unit stride)
        const int row = q % 128, col = q / 128;
        const long long k = k0 + row, n = n0 + col;
        bs[row * 1 + col] = k < p.K && n < p.N ? B[k * p.b_s0 + n * p.b_s1] : (float)0;
    }
}

// The loads the runtime chose for this call's operands (p.pieces, the same for every block).
__device__ __forceinline__ void mm_gemv_load(const mm_gemv_params& p, const float* A, const float* B, float* as, float* bs,
                                       long long batch, long long m0, long long n0, long long k0) {
    if (p.pieces & 1) mm_gemv_load_a_pieces(p, A, as, batch, m0, n0, k0);
    else mm_gemv_load_a_elements(p, A, as, batch, m0, n0, k0);
    if (p.pieces & 2) mm_gemv_load_b_pieces(p, B, bs, batch, m0, n0, k0);
    else mm_gemv_load_b_elements(p, B, bs, batch, m0, n0, k0);
}

extern "C" __global__ void __launch_bounds__(128) mm_gemv(const __grid_constant__ mm_gemv_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    float* as_all = reinterpret_cast<float*>(mm_gemv_smem);              // 3 stages of A, then 3 of B
    float* bs_all = as_all + 50688;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = warp / 1 * 32 + lane / 1;                           // this thread's first row in the tile (then every 32)
    const int col0 = warp % 1 * 1 + lane % 1;                            // this thread's first column (then every 1)
    const long long tiles_n = (p.N + 0) / 1;
    const long long m0 = (long long)(blockIdx.x / tiles_n) * 128;        // the block's tile
    const long long n0 = (long long)(blockIdx.x % tiles_n) * 1;
    for (long long batch = blockIdx.y; batch < p.batches; batch += gridDim.y) {
        const float* A = p.a;                                            // one matrix: no batch axes
        const float* B = p.b;
        float c[1][1];                                                   // the accumulators
        #pragma unroll
        for (int i = 0; i < 1; ++i)
            #pragma unroll
            for (int j = 0; j < 1; ++j) c[i][j] = 0;                     // K = 0: the empty sum, +0
        const long long c_begin = (long long)blockIdx.z * p.group_chunks, c_end = min(p.chunks, c_begin + p.group_chunks); // this block's group of chunks: an aligned subtree
        for (long long chunk = c_begin; chunk < c_end; ++chunk) {        // chunks of 8192 along K (docs/semantics.md, section 12)
            const long long k0 = chunk * 8192, kend = min(p.K, k0 + 8192);
            #pragma unroll
            for (int i = 0; i < 1; ++i)
                #pragma unroll
                for (int j = 0; j < 1; ++j) c[i][j] = 0;                 // each chunk from +0
            const int steps = (int)((kend - k0 + 127) / 128);            // K steps of 128
            for (int s = 0; s < 2; ++s) {                                // the pipeline's first 2 K steps in flight
                if (s < steps) mm_gemv_load(p, A, B, as_all + s * 16896, bs_all + s * 128, batch, m0, n0, k0 + (long long)(s) * 128);
                lm::cp_async_commit();                                   // a group per step, empty or not, so the waits count steps
            }
            for (int t = 0; t < steps; ++t) {
                lm::cp_async_wait<1>();                                  // step t's copies have landed
                __syncthreads();                                         // ... for every thread, and step t - 1's buffers are free
                if (t + 2 < steps) {                                     // refill the buffers of step t - 1 with step t + 2
                    mm_gemv_load(p, A, B, as_all + ((t + 2) % 3) * 16896, bs_all + ((t + 2) % 3) * 128, batch, m0, n0, k0 + (long long)(t + 2) * 128);
                }
                lm::cp_async_commit();
                const float* as = as_all + (t % 3) * 16896;
                const float* bs = bs_all + (t % 3) * 128;
                const long long kn = min((long long)128, kend - (k0 + (long long)t * 128)); // the k of this step that exist
                if (kn == 128) {
                    #pragma unroll
                    for (int k4 = 0; k4 < 128; k4 += 4) {                // ascending k
                        lm::vec<float, 4> a4[1];
                        #pragma unroll
                        for (int i = 0; i < 1; ++i) a4[i] = lm::load_vec<float, 4>(as + (row0 + 32 * i) * 132 + k4); // 4 k of a row in one 16-byte read: a warp's 32 rows meet in no bank
                        const lm::vec<float, 4> b4k = lm::load_vec<float, 4>(bs + k4); // the same 4 k of the vector, one broadcast read
                        #pragma unroll
                        for (int q = 0; q < 4; ++q) {
                            const int kk = k4 + q;
                            float fa[1], fb[1];
                            #pragma unroll
                            for (int i = 0; i < 1; ++i) fa[i] = a4[i].v[q]; // k + q of the row's 16-byte read
                            fb[0] = b4k.v[q];                            // k + q of the vector's 16-byte read
                            #pragma unroll
                            for (int i = 0; i < 1; ++i)
                                #pragma unroll
                                for (int j = 0; j < 1; ++j) c[i][j] = __fmaf_rn(fa[i], fb[j], c[i][j]); // acc = fma(a[i, k], b[k, j], acc): one rounding
                        }
                    }
                } else {
                    for (int kk = 0; kk < (int)kn; ++kk) {               // the last, partial step: no padding term enters a sum
                        float fa[1], fb[1];
                        #pragma unroll
                        for (int i = 0; i < 1; ++i) fa[i] = (float)lm::to_reg(as[(row0 + 32 * i) * 132 + kk]); // 4-byte reads (the last, partial step only)
                        #pragma unroll
                        for (int j = 0; j < 1; ++j) fb[j] = (float)lm::to_reg(bs[kk * 1 + col0 + 1 * j]); // consecutive words across the lanes
                        #pragma unroll
                        for (int i = 0; i < 1; ++i)
                            #pragma unroll
                            for (int j = 0; j < 1; ++j) c[i][j] = __fmaf_rn(fa[i], fb[j], c[i][j]); // acc = fma(a[i, k], b[k, j], acc): one rounding
                    }
                }
            }
            lm::cp_async_wait<0>();
            __syncthreads();                                             // every buffer read before the next copies
            // The chunk's partial onto the pairwise tree of each output (section 12, step 3): the stack holds the
            // binary digits of the chunk's place in its group; a partial merges (older on the left) with each
            // completed subtree below it, so the group's last partial is the group's subtree.
            const long long g = chunk - c_begin;                         // the chunk within its group
            const bool last = chunk + 1 == c_end;
            const int merges = last ? __popcll(g) : __ffsll(~g) - 1;     // the last partial closes the whole stack
            const int depth = __popcll(g);                               // partials on the stack before this one
            const long long plane = p.batches * p.M * p.N;
            float* ws = static_cast<float*>(p.ws) + (long long)blockIdx.z * (64 - __clzll(p.group_chunks)) * plane; // the group's stack
            #pragma unroll
            for (int i = 0; i < 1; ++i)
                #pragma unroll
                for (int j = 0; j < 1; ++j) {
                    const long long m = m0 + row0 + 32 * i, n = n0 + col0 + 1 * j;
                    if (m >= p.M || n >= p.N) continue;
                    const long long e = (batch * p.M + m) * p.N + n;
                    float v = c[i][j];
                    int top = depth;
                    for (int k = 0; k < merges; ++k) { --top; v = __fadd_rn(ws[top * plane + e], v); }
                    if (!last) ws[top * plane + e] = v;                  // pushed: a subtree of the tree
                    c[i][j] = v;
                }
        }
        {                                                                // the groups' partials: the block that completes the tile combines them
            const long long plane = p.batches * p.M * p.N;
            float* gp = static_cast<float*>(p.ws) + (long long)gridDim.z * (64 - __clzll(p.group_chunks)) * plane; // after the groups' stacks: one partial per group
            #pragma unroll
            for (int i = 0; i < 1; ++i)
                #pragma unroll
                for (int j = 0; j < 1; ++j) {
                    const long long m = m0 + row0 + 32 * i, n = n0 + col0 + 1 * j;
                    if (m >= p.M || n >= p.N) continue;
                    const long long e = (batch * p.M + m) * p.N + n;
                    gp[blockIdx.z * plane + e] = c[i][j];
                }
            __threadfence();                                             // the partials visible before they are counted
            __syncthreads();
            __shared__ bool lm_last;
            if (threadIdx.x == 0) {
                unsigned* count = static_cast<unsigned*>(p.count) + (batch * gridDim.x + blockIdx.x); // the tile's counter
                lm_last = atomicAdd(count, 1u) + 1 == gridDim.z;
                if (lm_last) *count = 0;                                 // every group counted: zero again for the next launch
            }
            __syncthreads();
            if (!lm_last) continue;                                      // another group's block completes this tile
            __threadfence();                                             // the other groups' partials, read through L2
            #pragma unroll
            for (int i = 0; i < 1; ++i)
                #pragma unroll
                for (int j = 0; j < 1; ++j) {
                    const long long m = m0 + row0 + 32 * i, n = n0 + col0 + 1 * j;
                    if (m >= p.M || n >= p.N) continue;
                    const long long e = (batch * p.M + m) * p.N + n;
                    float v[16];                                         // the groups' partials (at most 16 groups)
                    int live = (int)gridDim.z;                           // values on this level of the tree
                    for (int g = 0; g < live; ++g) v[g] = __ldcg(gp + g * plane + e);
                    for (; live > 1; live = (live + 1) / 2) {            // the pairwise tree: (0, 1), (2, 3), ..., an odd last carried up
                        for (int g = 0; g + 1 < live; g += 2) v[g / 2] = __fadd_rn(v[g], v[g + 1]);
                        if (live % 2) v[live / 2] = v[live - 1];
                    }
                    c[i][j] = v[0];
                }
        }
        // The epilogue on the accumulators: the product's value in its dtype, then the fused elementwise work.
        #pragma unroll
        for (int i = 0; i < 1; ++i) {
            const long long m = m0 + row0 + 32 * i;
            if (m >= p.M) continue;
            #pragma unroll
            for (int j = 0; j < 1; ++j) {
                const long long n = n0 + col0 + 1 * j;
                if (n >= p.N) continue;
                mm_gemv_ep_element(p.ep, (int)((batch * p.M + m) * p.N + n), c[i][j]); // element (batch, m, n) of the product's shape
            }
        }
    }
}
