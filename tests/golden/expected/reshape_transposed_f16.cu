// ---- Loom pointwise kernel reshape_transposed_f16 (from "reshape_transposed_f16") ----
// pointwise plan: rank 1, block 256, vector width 1 (no vector variant), 32-bit indexing
// grid: ceil(n / 256) blocks of 256 (scalar variant, 1 element per thread)
// bytes per element: 4; parameters: 56 bytes
// in0: input 0, float16, gathered dims {} t0 t1, 2 B/element
// out0: float16, contiguous, 2 B/element
// t0: derived index div
// t1: derived index mod
// scalars: float16
// entry points: reshape_transposed_f16_s (scalar)

struct reshape_transposed_f16_params {
    const lm::f16* in0;                                      // input 0 "x", gathered (test_pointwise_golden.cpp:122)
    lm::f16* out0;                                           // output 0, contiguous
    int n;                                                   // elements in the iteration space
    int in0_t0;                                              // in0 stride of t0
    int in0_t1;                                              // in0 stride of t1
    int t0_off;                                              // t0 linear offset
    int t0_s0;                                               // t0 stride of dimension 0
    int t0_div;                                              // t0 divisor
    int t1_off;                                              // t1 linear offset
    int t1_s0;                                               // t1 stride of dimension 0
    int t1_mod;                                              // t1 extent
    float s0;                                                // scalar float16 (test_pointwise_golden.cpp:17)
};
static_assert(sizeof(reshape_transposed_f16_params) == 56, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void reshape_transposed_f16_body(const reshape_transposed_f16_params& p, const float v0, float& r0) {
    // v0 = in0: input 0 "x" float16                         // test_pointwise_golden.cpp:122
    const float v1 = p.s0;                                   // scalar float16 (test_pointwise_golden.cpp:17)
    const float v2 = lm::round_f16(lm::mul(v0, v1));         // mul (test_pointwise_golden.cpp:125)
    const float v3 = lm::round_f16(lm::exp_(v2));            // exp (test_pointwise_golden.cpp:125)
    r0 = v3;                                                 // output 0
}

__device__ __forceinline__ void reshape_transposed_f16_element(const reshape_transposed_f16_params& p, const int e) {
    const int i0 = e;                                        // iteration index
    const int t0 = (p.t0_off + i0 * p.t0_s0) / p.t0_div;     // reshape: index of the operand's dimension
    const int t1 = (p.t1_off + i0 * p.t1_s0) % p.t1_mod;     // reshape: index of the operand's dimension
    const float v0 = lm::to_reg(p.in0[t0 * p.in0_t0 + t1 * p.in0_t1]); // load in0 (gathered)
    float r0;
    reshape_transposed_f16_body(p, v0, r0);
    p.out0[e] = lm::to_f16(r0);
}

extern "C" __global__ void __launch_bounds__(256) reshape_transposed_f16_s(const __grid_constant__ reshape_transposed_f16_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x; // one element per thread
    if (g >= (unsigned)p.n) return;
    reshape_transposed_f16_element(p, (int)g);
}
