// ---- Loom pointwise kernel adam_step (from "adam_step") ----
// pointwise plan: rank 1, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// grid: ceil(n / 1024) blocks of 256 (vector variant, 4 elements per thread, flat), ceil(n / 256) blocks of 256 (scalar variant)
// bytes per element: 28; parameters: 96 bytes
// in0: input 0, float32, contiguous, 4 B/element
// in1: input 1, float32, contiguous, 4 B/element
// in2: input 2, float32, contiguous, 4 B/element
// in3: input 3, float32, scalar, 0 B/element
// in4: input 4, float32, contiguous, 4 B/element
// out0: float32, contiguous, 4 B/element
// out1: float32, contiguous, 4 B/element
// out2: float32, contiguous, 4 B/element
// scalars: float32, float32, float32, float32, float32, float32
// entry points: adam_step_v4 (vector), adam_step_s (scalar)

struct adam_step_params {
    const float* in0;                                        // input 0 "p", contiguous (test_pointwise_golden.cpp:153)
    const float* in1;                                        // input 1 "m", contiguous (test_pointwise_golden.cpp:153)
    const float* in2;                                        // input 2 "g", contiguous (test_pointwise_golden.cpp:153)
    const float* in3;                                        // input 3 "t", scalar (test_pointwise_golden.cpp:155)
    const float* in4;                                        // input 4 "v", contiguous (test_pointwise_golden.cpp:154)
    float* out0;                                             // output 0, contiguous
    float* out1;                                             // output 1, contiguous
    float* out2;                                             // output 2, contiguous
    int n;                                                   // elements in the iteration space
    float s0;                                                // scalar float32 (test_pointwise_golden.cpp:17)
    float s1;                                                // scalar float32 (test_pointwise_golden.cpp:17)
    float s2;                                                // scalar float32 (test_pointwise_golden.cpp:17)
    float s3;                                                // scalar float32 (test_pointwise_golden.cpp:17)
    float s4;                                                // scalar float32 (test_pointwise_golden.cpp:17)
    float s5;                                                // scalar float32 (test_pointwise_golden.cpp:17)
};
static_assert(sizeof(adam_step_params) == 96, "kernel parameter layout differs from the host's");

// The values that are the same for every element, computed once per thread.
__device__ __forceinline__ void adam_step_uniforms(const adam_step_params& p, const float v10, float& u13, float& u23) {
    const float v2 = p.s1;                                   // scalar float32 (test_pointwise_golden.cpp:17)
    const float v9 = p.s3;                                   // scalar float32 (test_pointwise_golden.cpp:17)
    const float v11 = lm::add(v10, v9);                      // add (test_pointwise_golden.cpp:155)
    const float v12 = lm::pow_(v2, v11);                     // pow (test_pointwise_golden.cpp:159)
    const float v13 = lm::sub(v9, v12);                      // sub (test_pointwise_golden.cpp:159)
    const float v16 = p.s4;                                  // scalar float32 (test_pointwise_golden.cpp:17)
    const float v22 = lm::pow_(v16, v11);                    // pow (test_pointwise_golden.cpp:160)
    const float v23 = lm::sub(v9, v22);                      // sub (test_pointwise_golden.cpp:160)
    u13 = v13;
    u23 = v23;
}

__device__ __forceinline__ void adam_step_body(const adam_step_params& p, const float v0, const float v3, const float v6, const float v10, const float v17, const float v13, const float v23, float& r0, float& r1, float& r2) {
    // v0 = in0: input 0 "p" float32                         // test_pointwise_golden.cpp:153
    const float v1 = p.s0;                                   // scalar float32 (test_pointwise_golden.cpp:17)
    const float v2 = p.s1;                                   // scalar float32 (test_pointwise_golden.cpp:17)
    // v3 = in1: input 1 "m" float32                         // test_pointwise_golden.cpp:153
    const float v4 = lm::mul(v2, v3);                        // mul (test_pointwise_golden.cpp:156)
    const float v5 = p.s2;                                   // scalar float32 (test_pointwise_golden.cpp:17)
    // v6 = in2: input 2 "g" float32                         // test_pointwise_golden.cpp:153
    const float v7 = lm::mul(v5, v6);                        // mul (test_pointwise_golden.cpp:156)
    const float v8 = lm::add(v4, v7);                        // add (test_pointwise_golden.cpp:156)
    // v13: computed once per thread (adam_step_uniforms)    // test_pointwise_golden.cpp:159
    const float v14 = lm::div(v8, v13);                      // div (test_pointwise_golden.cpp:161)
    const float v15 = lm::mul(v1, v14);                      // mul (test_pointwise_golden.cpp:161)
    const float v16 = p.s4;                                  // scalar float32 (test_pointwise_golden.cpp:17)
    // v17 = in4: input 4 "v" float32                        // test_pointwise_golden.cpp:154
    const float v18 = lm::mul(v16, v17);                     // mul (test_pointwise_golden.cpp:158)
    const float v19 = lm::mul(v1, v6);                       // mul (test_pointwise_golden.cpp:158)
    const float v20 = lm::mul(v19, v6);                      // mul (test_pointwise_golden.cpp:158)
    const float v21 = lm::add(v18, v20);                     // add (test_pointwise_golden.cpp:158)
    // v23: computed once per thread (adam_step_uniforms)    // test_pointwise_golden.cpp:160
    const float v24 = lm::div(v21, v23);                     // div (test_pointwise_golden.cpp:162)
    const float v25 = lm::sqrt_(v24);                        // sqrt (test_pointwise_golden.cpp:162)
    const float v26 = p.s5;                                  // scalar float32 (test_pointwise_golden.cpp:17)
    const float v27 = lm::add(v25, v26);                     // add (test_pointwise_golden.cpp:162)
    const float v28 = lm::div(v15, v27);                     // div (test_pointwise_golden.cpp:161)
    const float v29 = lm::sub(v0, v28);                      // sub (test_pointwise_golden.cpp:163)
    r0 = v29;                                                // output 0
    r1 = v8;                                                 // output 1
    r2 = v21;                                                // output 2
}

__device__ __forceinline__ void adam_step_element(const adam_step_params& p, const int e) {
    const float v0 = lm::to_reg(p.in0[e]);                   // load in0 (contiguous)
    const float v3 = lm::to_reg(p.in1[e]);                   // load in1 (contiguous)
    const float v6 = lm::to_reg(p.in2[e]);                   // load in2 (contiguous)
    const float v10 = lm::to_reg(p.in3[0]);                  // load in3 (scalar)
    const float v17 = lm::to_reg(p.in4[e]);                  // load in4 (contiguous)
    float v13;
    float v23;
    adam_step_uniforms(p, v10, v13, v23);                    // the same for every element
    float r0;
    float r1;
    float r2;
    adam_step_body(p, v0, v3, v6, v10, v17, v13, v23, r0, r1, r2);
    p.out0[e] = r0;
    p.out1[e] = r1;
    p.out2[e] = r2;
}

extern "C" __global__ void __launch_bounds__(256) adam_step_v4(const __grid_constant__ adam_step_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = (blockIdx.x * blockDim.x + threadIdx.x) * 4u; // first element of this thread's vector
    if (g >= (unsigned)p.n) return;
    const int i = (int)g;
    if (p.n - i < 4) {                                       // tail: fewer elements left than a vector
        for (int e = i; e < p.n; ++e) adam_step_element(p, e);
        return;
    }
    const lm::vec<float, 4> a0 = lm::load_vec<float, 4>(p.in0 + i); // load in0 (contiguous, 16 bytes)
    const lm::vec<float, 4> a1 = lm::load_vec<float, 4>(p.in1 + i); // load in1 (contiguous, 16 bytes)
    const lm::vec<float, 4> a2 = lm::load_vec<float, 4>(p.in2 + i); // load in2 (contiguous, 16 bytes)
    const float v10 = lm::to_reg(p.in3[0]);                  // load in3 once (scalar)
    const lm::vec<float, 4> a4 = lm::load_vec<float, 4>(p.in4 + i); // load in4 (contiguous, 16 bytes)
    float v13;
    float v23;
    adam_step_uniforms(p, v10, v13, v23);                    // the same for every element
    lm::vec<float, 4> o0;
    lm::vec<float, 4> o1;
    lm::vec<float, 4> o2;
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        float r0;
        float r1;
        float r2;
        adam_step_body(p, lm::to_reg(a0.v[j]), lm::to_reg(a1.v[j]), lm::to_reg(a2.v[j]), v10, lm::to_reg(a4.v[j]), v13, v23, r0, r1, r2);
        o0.v[j] = r0;
        o1.v[j] = r1;
        o2.v[j] = r2;
    }
    lm::store_vec<float, 4>(p.out0 + i, o0);                 // store out0 (16 bytes)
    lm::store_vec<float, 4>(p.out1 + i, o1);                 // store out1 (16 bytes)
    lm::store_vec<float, 4>(p.out2 + i, o2);                 // store out2 (16 bytes)
}

extern "C" __global__ void __launch_bounds__(256) adam_step_s(const __grid_constant__ adam_step_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x; // one element per thread
    if (g >= (unsigned)p.n) return;
    adam_step_element(p, (int)g);
}
