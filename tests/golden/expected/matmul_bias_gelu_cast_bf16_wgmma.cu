// ---- Loom matmul kernel matmul_bias_gelu_cast_bf16_wgmma (from "matmul_bias_gelu_cast_bf16_wgmma") ----
// matmul plan: bfloat16 x bfloat16 -> bfloat16, rank 2, tensor cores (Hopper wgmma.mma_async m64n128k16 into float32: within the bound of docs/semantics.md, section 12)
// tile 128x128x64: 384 threads as a producer warpgroup (tensor memory accelerator copies) and 2 consumer warpgroups taking whole tiles in turn (ping-pong: one's epilogue beside the other's MMAs); a persistent grid walking the tiles in groups of 8 tile rows
// shared memory: a ring of 6 stages of A 128 x 64 (K-major) and B 64 x 128 (N-major), 128-byte swizzled, full and empty mbarriers, 197728 bytes, then 32768 bytes of epilogue buffers bytes
// loads: bulk tensor copies of A (tensor map of rank 2) and B (rank 2), zeros past M, N and K; K in steps of 16 over all of K; the epilogue through shared memory, 64 rows of bfloat16 at a time per consumer, whole lines per warp
// epilogue: pointwise plan: rank 2, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// parameters: 32 bytes
// in0: input 0, bfloat16, contiguous, 2 B/element
// in1: input 1, bfloat16, row broadcast, 0 B/element
// out0: float32
// entry point: matmul_bias_gelu_cast_bf16_wgmma (compiled for sm_90a: wgmma and setmaxnreg)

struct matmul_bias_gelu_cast_bf16_wgmma_ep_params {
    const lm::bf16* in0;                                     // input 0 "accumulators", contiguous (test_matmul_wgmma_golden.cpp:44)
    const lm::bf16* in1;                                     // input 1 "bias", row broadcast (test_matmul_wgmma_golden.cpp:43)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
    int ext1;                                                // extent of dimension 1
};
static_assert(sizeof(matmul_bias_gelu_cast_bf16_wgmma_ep_params) == 32, "kernel parameter layout differs from the host's");

struct matmul_bias_gelu_cast_bf16_wgmma_params {
    alignas(64) unsigned char tmap_a[128];                               // the tensor map of A (CUtensorMap, encoded by the runtime)
    alignas(64) unsigned char tmap_b[128];                               // the tensor map of B (CUtensorMap, encoded by the runtime)
    long long M;                                                         // M: the product's rows
    long long N;                                                         // N: the product's columns
    long long K;                                                         // K: the contraction's length
    long long batches;                                                   // batch entries (the product of the batch extents)
    long long pieces;                                                    // bit 2: the epilogue in vectors (the pointers aligned, N whole vectors)
    matmul_bias_gelu_cast_bf16_wgmma_ep_params ep;                       // the epilogue's parameters
};
static_assert(sizeof(matmul_bias_gelu_cast_bf16_wgmma_params) == 384, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void matmul_bias_gelu_cast_bf16_wgmma_ep_body(const float v0, const float v1, float& r0) {
    // v0 = in0: input 0 "accumulators" bfloat16             // test_matmul_wgmma_golden.cpp:44
    // v1 = in1: input 1 "bias" bfloat16                     // test_matmul_wgmma_golden.cpp:43
    const float v2 = lm::round_bf16(lm::add(v0, v1));        // add (test_matmul_wgmma_golden.cpp:44)
    const float v3 = lm::round_bf16(lm::gelu_erf(v2));       // gelu (test_matmul_wgmma_golden.cpp:44)
    const float v4 = lm::cast<float>(v3);                    // cast to float32 (test_matmul_wgmma_golden.cpp:44)
    r0 = v4;                                                 // output 0
}

__device__ __forceinline__ void matmul_bias_gelu_cast_bf16_wgmma_ep_element(const matmul_bias_gelu_cast_bf16_wgmma_ep_params& p, const int e, const float acc) {
    int q = e;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    const float v0 = acc;                                    // in0: the product, from the accumulators
    const float v1 = lm::to_reg(p.in1[i1]);                  // load in1 (row broadcast)
    float r0;
    matmul_bias_gelu_cast_bf16_wgmma_ep_body(v0, v1, r0);
    p.out0[e] = r0;
}

__device__ __forceinline__ void matmul_bias_gelu_cast_bf16_wgmma_ep_element4(const matmul_bias_gelu_cast_bf16_wgmma_ep_params& p, const int i, const lm::vec<float, 4> acc) {
    int q = i;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    const lm::vec<lm::bf16, 4> a1 = lm::load_vec<lm::bf16, 4>(p.in1 + i1); // load in1 (row broadcast, 8 bytes)
    lm::vec<float, 4> o0;
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        float r0;
        matmul_bias_gelu_cast_bf16_wgmma_ep_body(acc.v[j], lm::to_reg(a1.v[j]), r0);
        o0.v[j] = r0;
    }
    lm::store_vec<float, 4>(p.out0 + i, o0);                 // store out0 (16 bytes)
}

extern __shared__ __align__(1024) unsigned char matmul_bias_gelu_cast_bf16_wgmma_smem[];  // 230496 bytes: the stage ring and its mbarriers

// One warpgroup MMA, d (64 x 128, float32) += A (64 x 16) B (16 x 128), both operands from shared memory through
// their descriptors; A K-major, B N-major (the transpose bits). Thread t of the warpgroup holds rows 16 (t / 32) + (t % 32) / 4
// and + 8 of columns 8 j + 2 (t % 4) and + 1: d[4 j + 2 h + c] is row + 8 h, column + c.
__device__ __forceinline__ void matmul_bias_gelu_cast_bf16_wgmma_mma(float (&d)[64], unsigned long long desc_a, unsigned long long desc_b) {
    asm volatile(
        "{\n"
        ".reg .pred scale_d;\n"
        "setp.ne.b32 scale_d, %66, 0;\n"                                 // d += A B (scale-d 1)
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16\n"
        "{%0, %1, %2, %3, %4, %5, %6, %7,\n"
        "%8, %9, %10, %11, %12, %13, %14, %15,\n"
        "%16, %17, %18, %19, %20, %21, %22, %23,\n"
        "%24, %25, %26, %27, %28, %29, %30, %31,\n"
        "%32, %33, %34, %35, %36, %37, %38, %39,\n"
        "%40, %41, %42, %43, %44, %45, %46, %47,\n"
        "%48, %49, %50, %51, %52, %53, %54, %55,\n"
        "%56, %57, %58, %59, %60, %61, %62, %63},\n"
        "%64, %65, scale_d, 1, 1, 0, 1;\n"                               // descriptors, scale-d, scale A and B by 1, transpose A, B
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "n"(1));
}

// Tile t of the persistent grid's order: batch entries one after another; within one, groups of 8 tile rows,
// walked down a group's rows before across its columns, so the tiles in flight at once share rows of A and
// columns of B in L2.
__device__ __forceinline__ void matmul_bias_gelu_cast_bf16_wgmma_tile(long long t, long long tiles_m, long long tiles_n, long long& batch, long long& m0,
                                        long long& n0) {
    const long long per_batch = tiles_m * tiles_n;
    batch = t / per_batch;
    t %= per_batch;
    const long long first = t / (8 * tiles_n) * 8;                       // the group's first tile row
    const long long rows = tiles_m - first < 8 ? tiles_m - first : 8;    // tile rows in this group
    const long long r = t % (8 * tiles_n);
    m0 = (first + r % rows) * 128;
    n0 = r / rows * 128;
}

extern "C" __global__ void __launch_bounds__(384, 1) matmul_bias_gelu_cast_bf16_wgmma(const __grid_constant__ matmul_bias_gelu_cast_bf16_wgmma_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    // Shared memory: 6 stages of A (16384 bytes) then B (16384 bytes), 1024-byte aligned for the 128-byte swizzle,
    // then a full and an empty mbarrier per stage, then the consumers' epilogue buffers.
    const unsigned ring = (lm::smem_addr(matmul_bias_gelu_cast_bf16_wgmma_smem) + 1023u) & ~1023u;
    const unsigned full0 = ring + 196608u, empty0 = full0 + 48u;         // stage s: full0 + 8 s, empty0 + 8 s
    const unsigned epilogue0 = empty0 + 48u;                             // then the consumers' epilogue buffers
    const int warpgroup = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < 6; ++s) {
            lm::mbar_init(full0 + 8 * s, 1);                             // the producer's arrival, with the copies' bytes
            lm::mbar_init(empty0 + 8 * s, 4);                            // the release by each warp of the consumer of its tile
        }
        lm::mbar_init_fence();
    }
    __syncthreads();
    const long long tiles_m = (p.M + 127) / 128, tiles_n = (p.N + 127) / 128;
    const long long tiles = tiles_m * tiles_n * p.batches;
    const int k_steps = (int)((p.K + 63) / 64);                          // one pass over all of K
    if (warpgroup == 0) {
        // The producer warpgroup: one thread issues every copy; the stage of K step `it` (counted over the block's tiles)
        // is it % stages, in its (it / stages)-th use.
        lm::setmaxnreg_dec<40>();                                        // its registers to the consumers
        if (threadIdx.x == 0) {
            int it = 0;
            for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
                long long batch, m0, n0;
                matmul_bias_gelu_cast_bf16_wgmma_tile(t, tiles_m, tiles_n, batch, m0, n0);
                for (int ks = 0; ks < k_steps; ++ks, ++it) {
                    const int s = it % 6;
                    lm::mbar_wait(empty0 + 8 * s, ((it / 6) & 1) ^ 1);   // the consumers have released it
                    lm::mbar_expect_tx(full0 + 8 * s, 32768u);           // whole boxes: zeros past M, N and K count too
                    const unsigned as = ring + s * 32768u, bs = as + 16384u;
                    const int k0 = ks * 64;
                    lm::tma_load_2d(as, &p.tmap_a, full0 + 8 * s, k0, (int)m0); // A: 128 rows of 64 k
                    lm::tma_load_2d(bs, &p.tmap_b, full0 + 8 * s, (int)n0 + 0, k0); // B: 64 k rows of 64 n per copy
                    lm::tma_load_2d(bs + 8192u, &p.tmap_b, full0 + 8 * s, (int)n0 + 64, k0);
                }
            }
        }
    } else {
        // A consumer warpgroup: whole tiles, the two consumers taking the block's tiles in turn (tile j of the block's
        // list is consumer j % 2's); the ring hands out its stages in tile order, so one consumer's MMAs run while the
        // other's epilogue does.
        lm::setmaxnreg_inc<232>();                                       // the accumulators' registers
        const int c = warpgroup - 1, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
        for (long long t = blockIdx.x + c * gridDim.x, j = c; t < tiles; t += 2 * gridDim.x, j += 2) {
            int it = (int)j * k_steps;                                   // the K steps of the block's tiles before this one
            long long batch, m0, n0;
            matmul_bias_gelu_cast_bf16_wgmma_tile(t, tiles_m, tiles_n, batch, m0, n0);
            float d[2][64];                                              // the accumulators: 2 blocks of 64 rows
            #pragma unroll
            for (int r = 0; r < 2; ++r)
                #pragma unroll
                for (int i = 0; i < 64; ++i) d[r][i] = 0.0f;             // K = 0: +0
            int held = -1;                                               // the stage whose MMAs may still read it
            // The consumers' turns at the ring, in tile order: this one waits until the other has taken every stage of
            // the tile before (so that no consumer waits on a stage more than one use ahead of the producer).
            if (j >= 2 || c == 1) lm::named_barrier_sync(1 + c, 256);
            for (int ks = 0; ks < k_steps; ++ks, ++it) {
                const int s = it % 6;
                lm::mbar_wait(full0 + 8 * s, (it / 6) & 1);              // its copies have landed
                const unsigned as = ring + s * 32768u, bs = as + 16384u;
                lm::wgmma_fence();
                #pragma unroll
                for (int kk = 0; kk < 4; ++kk) {                         // 16 k per MMA
                    const unsigned long long desc_b = lm::wgmma_desc(bs + kk * 2048u, 8192u, 1024u);
                    #pragma unroll
                    for (int r = 0; r < 2; ++r)                          // 64 rows of A per MMA (8 KiB apart)
                        matmul_bias_gelu_cast_bf16_wgmma_mma(d[r], lm::wgmma_desc(as + r * 8192u + kk * 32u, 16u, 1024u), desc_b);
                }
                lm::wgmma_commit();
                lm::wgmma_wait<1>();                                     // the previous step's MMAs are done ...
                if (held >= 0 && lane == 0) lm::mbar_arrive(empty0 + 8 * held); // ... so its stage goes back to the producer
                held = s;
            }
            if (t + gridDim.x < tiles) lm::named_barrier_arrive(2 - c, 256); // the next tile's consumer may start
            lm::wgmma_wait<0>();
            if (held >= 0 && lane == 0) lm::mbar_arrive(empty0 + 8 * held);
            #pragma unroll
            for (int r = 0; r < 2; ++r)
                #pragma unroll
                for (int i = 0; i < 64; ++i) lm::wgmma_hold(d[r][i]);    // the MMAs' results, read only from here
            // The epilogue on the accumulators, through shared memory: the product's value in its dtype, then the fused
            // elementwise work, consecutive threads on consecutive columns.
            unsigned char* const ct = matmul_bias_gelu_cast_bf16_wgmma_smem + (epilogue0 - lm::smem_addr(matmul_bias_gelu_cast_bf16_wgmma_smem)) + c * 16384; // this consumer's buffer: 64 rows of 128 values
            const int tid = threadIdx.x % 128;
            #pragma unroll
            for (int r = 0; r < 2; ++r) {                                // 64 rows at a time (unrolled: d[r] stays in registers)
                lm::named_barrier_sync(3 + c, 128);                      // the buffer's last reads are done
                #pragma unroll
                for (int j = 0; j < 16; ++j)
                    #pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int row = 16 * warp + lane / 4 + 8 * h;    // row % 8 is lane / 4
                        const unsigned pair = (unsigned)lm::float_to_bf16(d[r][4 * j + 2 * h]) | (unsigned)lm::float_to_bf16(d[r][4 * j + 2 * h + 1]) << 16; // columns 8 j + 2 (lane % 4) and + 1
                        *reinterpret_cast<unsigned*>(ct + row * 256 + ((j ^ (lane / 4)) << 4) + 4 * (lane % 4)) = pair;
                    }
                lm::named_barrier_sync(3 + c, 128);                      // the 64 rows are in the buffer
                if (p.pieces & 4) {                                      // the epilogue's pointers aligned and N whole vectors: 4 columns at once
                    #pragma unroll 2
                    for (int q = 0; q < 16; ++q) {
                        const int e = tid + 128 * q, row = e / 32, col = e % 32 * 4;
                        const long long m = m0 + 64 * r + row, n = n0 + col;
                        if (m < p.M && n < p.N) {                        // N is whole vectors: n .. n + 3 all in the product
                            const lm::vec<unsigned short, 4> bits = *reinterpret_cast<const lm::vec<unsigned short, 4>*>(ct + row * 256 + (((col >> 3) ^ (row & 7)) << 4) + 2 * (col & 7));
                            lm::vec<float, 4> acc;
                            #pragma unroll
                            for (int j = 0; j < 4; ++j) acc.v[j] = lm::bf16_to_float(bits.v[j]);
                            matmul_bias_gelu_cast_bf16_wgmma_ep_element4(p.ep, (int)((batch * p.M + m) * p.N + n), acc); // elements (batch, m, n .. n + 3)
                        }
                    }
                } else {
                    #pragma unroll 4
                    for (int q = 0; q < 64; ++q) {
                        const int e = tid + 128 * q, row = e / 128, col = e % 128;
                        const long long m = m0 + 64 * r + row, n = n0 + col;
                        if (m < p.M && n < p.N) {
                            const unsigned short bits = *reinterpret_cast<const unsigned short*>(ct + row * 256 + (((col >> 3) ^ (row & 7)) << 4) + 2 * (col & 7));
                            matmul_bias_gelu_cast_bf16_wgmma_ep_element(p.ep, (int)((batch * p.M + m) * p.N + n), lm::bf16_to_float(bits)); // element (batch, m, n) of the product's shape
                        }
                    }
                }
            }
        }
    }
}
