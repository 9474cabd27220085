// ---- Loom pointwise kernel e1_relu_scale_bias (from "e1_relu_scale_bias") ----
// pointwise plan: rank 1, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// grid: ceil(n / 1024) blocks of 256 (vector variant, 4 elements per thread, flat), ceil(n / 256) blocks of 256 (scalar variant)
// bytes per element: 8; parameters: 32 bytes
// in0: input 0, float32, contiguous, 4 B/element
// out0: float32, contiguous, 4 B/element
// scalars: float32, float32
// entry points: e1_relu_scale_bias_v4 (vector), e1_relu_scale_bias_s (scalar)

struct e1_relu_scale_bias_params {
    const float* in0;                                        // input 0 "x", contiguous (test_pointwise_golden.cpp:28)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
    float s0;                                                // scalar float32 (test_pointwise_golden.cpp:17)
    float s1;                                                // scalar float32 (test_pointwise_golden.cpp:17)
};
static_assert(sizeof(e1_relu_scale_bias_params) == 32, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void e1_relu_scale_bias_body(const e1_relu_scale_bias_params& p, const float v0, float& r0) {
    // v0 = in0: input 0 "x" float32                         // test_pointwise_golden.cpp:28
    const float v1 = p.s0;                                   // scalar float32 (test_pointwise_golden.cpp:17)
    const float v2 = lm::mul(v0, v1);                        // mul (test_pointwise_golden.cpp:29)
    const float v3 = p.s1;                                   // scalar float32 (test_pointwise_golden.cpp:17)
    const float v4 = lm::add(v2, v3);                        // add (test_pointwise_golden.cpp:29)
    const float v5 = lm::relu(v4);                           // relu (test_pointwise_golden.cpp:29)
    r0 = v5;                                                 // output 0
}

__device__ __forceinline__ void e1_relu_scale_bias_element(const e1_relu_scale_bias_params& p, const int e) {
    const float v0 = lm::to_reg(p.in0[e]);                   // load in0 (contiguous)
    float r0;
    e1_relu_scale_bias_body(p, v0, r0);
    p.out0[e] = r0;
}

extern "C" __global__ void __launch_bounds__(256) e1_relu_scale_bias_v4(const __grid_constant__ e1_relu_scale_bias_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = (blockIdx.x * blockDim.x + threadIdx.x) * 4u; // first element of this thread's vector
    if (g >= (unsigned)p.n) return;
    const int i = (int)g;
    if (p.n - i < 4) {                                       // tail: fewer elements left than a vector
        for (int e = i; e < p.n; ++e) e1_relu_scale_bias_element(p, e);
        return;
    }
    const lm::vec<float, 4> a0 = lm::load_vec<float, 4>(p.in0 + i); // load in0 (contiguous, 16 bytes)
    lm::vec<float, 4> o0;
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        float r0;
        e1_relu_scale_bias_body(p, lm::to_reg(a0.v[j]), r0);
        o0.v[j] = r0;
    }
    lm::store_vec<float, 4>(p.out0 + i, o0);                 // store out0 (16 bytes)
}

extern "C" __global__ void __launch_bounds__(256) e1_relu_scale_bias_s(const __grid_constant__ e1_relu_scale_bias_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x; // one element per thread
    if (g >= (unsigned)p.n) return;
    e1_relu_scale_bias_element(p, (int)g);
}
