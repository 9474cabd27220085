// ---- Loom pointwise kernel e4_silu_mul_bf16 (from "e4_silu_mul_bf16") ----
// pointwise plan: rank 1, block 256, vector width 8 (16-byte vectors), 32-bit indexing
// grid: ceil(n / 2048) blocks of 256 (vector variant, 8 elements per thread, flat), ceil(n / 256) blocks of 256 (scalar variant)
// bytes per element: 6; parameters: 32 bytes
// in0: input 0, bfloat16, contiguous, 2 B/element
// in1: input 1, bfloat16, contiguous, 2 B/element
// out0: bfloat16, contiguous, 2 B/element
// entry points: e4_silu_mul_bf16_v8 (vector), e4_silu_mul_bf16_s (scalar)

struct e4_silu_mul_bf16_params {
    const lm::bf16* in0;                                     // input 0 "a", contiguous (test_pointwise_golden.cpp:53)
    const lm::bf16* in1;                                     // input 1 "b", contiguous (test_pointwise_golden.cpp:54)
    lm::bf16* out0;                                          // output 0, contiguous
    int n;                                                   // elements in the iteration space
};
static_assert(sizeof(e4_silu_mul_bf16_params) == 32, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void e4_silu_mul_bf16_body(const float v0, const float v2, float& r0) {
    // v0 = in0: input 0 "a" bfloat16                        // test_pointwise_golden.cpp:53
    const float v1 = lm::round_bf16(lm::silu(v0));           // silu (test_pointwise_golden.cpp:55)
    // v2 = in1: input 1 "b" bfloat16                        // test_pointwise_golden.cpp:54
    const float v3 = lm::round_bf16(lm::mul(v1, v2));        // mul (test_pointwise_golden.cpp:55)
    r0 = v3;                                                 // output 0
}

__device__ __forceinline__ void e4_silu_mul_bf16_element(const e4_silu_mul_bf16_params& p, const int e) {
    const float v0 = lm::to_reg(p.in0[e]);                   // load in0 (contiguous)
    const float v2 = lm::to_reg(p.in1[e]);                   // load in1 (contiguous)
    float r0;
    e4_silu_mul_bf16_body(v0, v2, r0);
    p.out0[e] = lm::to_bf16(r0);
}

extern "C" __global__ void __launch_bounds__(256) e4_silu_mul_bf16_v8(const __grid_constant__ e4_silu_mul_bf16_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = (blockIdx.x * blockDim.x + threadIdx.x) * 8u; // first element of this thread's vector
    if (g >= (unsigned)p.n) return;
    const int i = (int)g;
    if (p.n - i < 8) {                                       // tail: fewer elements left than a vector
        for (int e = i; e < p.n; ++e) e4_silu_mul_bf16_element(p, e);
        return;
    }
    const lm::vec<lm::bf16, 8> a0 = lm::load_vec<lm::bf16, 8>(p.in0 + i); // load in0 (contiguous, 16 bytes)
    const lm::vec<lm::bf16, 8> a1 = lm::load_vec<lm::bf16, 8>(p.in1 + i); // load in1 (contiguous, 16 bytes)
    lm::vec<lm::bf16, 8> o0;
    #pragma unroll
    for (int j = 0; j < 8; ++j) {
        float r0;
        e4_silu_mul_bf16_body(lm::to_reg(a0.v[j]), lm::to_reg(a1.v[j]), r0);
        o0.v[j] = lm::to_bf16(r0);
    }
    lm::store_vec<lm::bf16, 8>(p.out0 + i, o0);              // store out0 (16 bytes)
}

extern "C" __global__ void __launch_bounds__(256) e4_silu_mul_bf16_s(const __grid_constant__ e4_silu_mul_bf16_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x; // one element per thread
    if (g >= (unsigned)p.n) return;
    e4_silu_mul_bf16_element(p, (int)g);
}
