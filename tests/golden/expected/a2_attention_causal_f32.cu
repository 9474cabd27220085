// ---- Loom attention kernel attention (from "attention") ----
// attention of float32 heads of D = 64, causal
// path: CUDA cores in float32, the reference's order bit for bit (the one float32 exp)
// block: 64 queries; keys in steps of 64 (the order's key block) through shared memory; 128 threads as 8 row groups of 16 lanes
// shared memory: 65536 bytes (queries and keys transposed, values, the step's probabilities)
// entry point: attention (the operands' loads, 16-byte pieces or elements, are the parameter `vector_loads`)

extern "C" __global__ void __launch_bounds__(128) attention(const lm::AttentionParams p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    extern __shared__ __align__(16) float smem[];                        // 65536 bytes
    lm::att::attention_simt<float, 64, true, false, 8, false>(p, smem);  // type, D, causal, bias, queries per thread, split keys
}
