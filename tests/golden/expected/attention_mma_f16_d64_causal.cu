// ---- Loom attention kernel attention (from "attention") ----
// attention of float16 heads of D = 64, causal
// path: tensor cores (mma.sync.m16n8k16, float32 accumulators; FlashAttention-2's schedule), within the stated bound, not the reference's bits
// block: 128 queries (8 warps of 16 rows); keys in tiles of 64 through shared memory, double buffered (cp.async), read with ldmatrix
// shared memory: 55296 bytes (queries, keys and values twice; rows padded to D + 8)
// entry point: attention (the operands' loads, 16-byte pieces or elements, are the parameter `vector_loads`)

extern "C" __global__ void __launch_bounds__(256) attention(const lm::AttentionParams p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    extern __shared__ __align__(16) float smem[];                        // 55296 bytes
    static_assert(lm::att::MmaShape<64>::kQueries == 128 && lm::att::MmaShape<64>::kKeys == 64 && lm::att::MmaShape<64>::kThreads == 256 && lm::att::MmaShape<64>::kBytes == 55296, "the plan's block");
    lm::att::attention_mma<lm::f16, 64, true, false>(p, smem);           // type, D, causal, bias
}
