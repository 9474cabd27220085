// ---- Loom attention kernel attention (from "attention") ----
// attention of float32 heads of D = 64, causal
// path: CUDA cores in float32, the reference's order bit for bit (the one float32 exp)
// block: 8 queries; keys in steps of 64 (the order's key block) through shared memory; 128 threads as 8 row groups of 16 lanes
// decoding: the keys split in chunks of 512, a block per chunk; the last block of a row block combines the chunks' states in the pairwise tree
// shared memory: 36864 bytes (queries and keys transposed, values, the step's probabilities)
// entry point: attention (the operands' loads, 16-byte pieces or elements, are the parameter `vector_loads`)

extern "C" __global__ void __launch_bounds__(128) attention(const lm::AttentionParams p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    extern __shared__ __align__(16) float smem[];                        // 36864 bytes
    lm::att::attention_simt<float, 64, true, false, 1, true>(p, smem);   // type, D, causal, bias, queries per thread, split keys
}
