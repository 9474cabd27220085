// ---- Loom pointwise kernel black_scholes_call_put (from "black_scholes_call_put") ----
// pointwise plan: rank 1, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// grid: min(ceil(n / 1024), 2112) blocks of 256 (vector variant, grid-stride over vectors of 4, the next vector's loads issued before this one's arithmetic), ceil(n / 256) blocks of 256 (scalar variant)
// bytes per element: 20; parameters: 72 bytes
// in0: input 0, float32, contiguous, 4 B/element
// in1: input 1, float32, contiguous, 4 B/element
// in2: input 2, float32, contiguous, 4 B/element
// out0: float32, contiguous, 4 B/element
// out1: float32, contiguous, 4 B/element
// scalars: float32, float32, float32, float32, float32, float32
// entry points: black_scholes_call_put_v4 (vector), black_scholes_call_put_s (scalar)

struct black_scholes_call_put_params {
    const float* in0;                                        // input 0 "S", contiguous (test_multi_output_golden.cpp:28)
    const float* in1;                                        // input 1 "K", contiguous (test_multi_output_golden.cpp:28)
    const float* in2;                                        // input 2 "T", contiguous (test_multi_output_golden.cpp:29)
    float* out0;                                             // output 0, contiguous
    float* out1;                                             // output 1, contiguous
    int n;                                                   // elements in the iteration space
    float s0;                                                // scalar float32 (test_multi_output_golden.cpp:35)
    float s1;                                                // scalar float32 (test_multi_output_golden.cpp:35)
    float s2;                                                // scalar float32 (test_multi_output_golden.cpp:33)
    float s3;                                                // scalar float32 (test_multi_output_golden.cpp:33)
    float s4;                                                // scalar float32 (test_multi_output_golden.cpp:35)
    float s5;                                                // scalar float32 (test_multi_output_golden.cpp:37)
};
static_assert(sizeof(black_scholes_call_put_params) == 72, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void black_scholes_call_put_body(const black_scholes_call_put_params& p, const float v0, const float v3, const float v7, float& r0, float& r1) {
    // v0 = in0: input 0 "S" float32                         // test_multi_output_golden.cpp:28
    const float v1 = p.s0;                                   // scalar float32 (test_multi_output_golden.cpp:35)
    const float v2 = p.s1;                                   // scalar float32 (test_multi_output_golden.cpp:35)
    // v3 = in1: input 1 "K" float32                         // test_multi_output_golden.cpp:28
    const float v4 = lm::div(v0, v3);                        // div (test_multi_output_golden.cpp:33)
    const float v5 = lm::log_(v4);                           // log (test_multi_output_golden.cpp:33)
    const float v6 = p.s2;                                   // scalar float32 (test_multi_output_golden.cpp:33)
    // v7 = in2: input 2 "T" float32                         // test_multi_output_golden.cpp:29
    const float v8 = lm::mul(v6, v7);                        // mul (test_multi_output_golden.cpp:33)
    const float v9 = lm::add(v5, v8);                        // add (test_multi_output_golden.cpp:33)
    const float v10 = p.s3;                                  // scalar float32 (test_multi_output_golden.cpp:33)
    const float v11 = lm::sqrt_(v7);                         // sqrt (test_multi_output_golden.cpp:32)
    const float v12 = lm::mul(v10, v11);                     // mul (test_multi_output_golden.cpp:33)
    const float v13 = lm::div(v9, v12);                      // div (test_multi_output_golden.cpp:33)
    const float v14 = p.s4;                                  // scalar float32 (test_multi_output_golden.cpp:35)
    const float v15 = lm::mul(v13, v14);                     // mul (test_multi_output_golden.cpp:35)
    const float v16 = lm::erf_(v15);                         // erf (test_multi_output_golden.cpp:35)
    const float v17 = lm::add(v2, v16);                      // add (test_multi_output_golden.cpp:35)
    const float v18 = lm::mul(v1, v17);                      // mul (test_multi_output_golden.cpp:35)
    const float v19 = lm::mul(v0, v18);                      // mul (test_multi_output_golden.cpp:38)
    const float v20 = p.s5;                                  // scalar float32 (test_multi_output_golden.cpp:37)
    const float v21 = lm::mul(v20, v7);                      // mul (test_multi_output_golden.cpp:37)
    const float v22 = lm::exp_(v21);                         // exp (test_multi_output_golden.cpp:37)
    const float v23 = lm::mul(v3, v22);                      // mul (test_multi_output_golden.cpp:37)
    const float v24 = lm::sub(v13, v12);                     // sub (test_multi_output_golden.cpp:34)
    const float v25 = lm::mul(v24, v14);                     // mul (test_multi_output_golden.cpp:36)
    const float v26 = lm::erf_(v25);                         // erf (test_multi_output_golden.cpp:36)
    const float v27 = lm::add(v2, v26);                      // add (test_multi_output_golden.cpp:36)
    const float v28 = lm::mul(v1, v27);                      // mul (test_multi_output_golden.cpp:36)
    const float v29 = lm::mul(v23, v28);                     // mul (test_multi_output_golden.cpp:38)
    const float v30 = lm::sub(v19, v29);                     // sub (test_multi_output_golden.cpp:38)
    const float v31 = lm::sub(v2, v28);                      // sub (test_multi_output_golden.cpp:39)
    const float v32 = lm::mul(v23, v31);                     // mul (test_multi_output_golden.cpp:39)
    const float v33 = lm::sub(v2, v18);                      // sub (test_multi_output_golden.cpp:39)
    const float v34 = lm::mul(v0, v33);                      // mul (test_multi_output_golden.cpp:39)
    const float v35 = lm::sub(v32, v34);                     // sub (test_multi_output_golden.cpp:39)
    r0 = v30;                                                // output 0
    r1 = v35;                                                // output 1
}

__device__ __forceinline__ void black_scholes_call_put_element(const black_scholes_call_put_params& p, const int e) {
    const float v0 = lm::to_reg(p.in0[e]);                   // load in0 (contiguous)
    const float v3 = lm::to_reg(p.in1[e]);                   // load in1 (contiguous)
    const float v7 = lm::to_reg(p.in2[e]);                   // load in2 (contiguous)
    float r0;
    float r1;
    black_scholes_call_put_body(p, v0, v3, v7, r0, r1);
    p.out0[e] = r0;
    p.out1[e] = r1;
}

extern "C" __global__ void __launch_bounds__(256) black_scholes_call_put_v4(const __grid_constant__ black_scholes_call_put_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const int step = (int)gridDim.x * (int)blockDim.x * 4;   // elements per pass of the grid
    int i = ((int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x) * 4; // first element of this thread's first vector
    const int nv = p.n - p.n % 4;                            // elements in whole vectors
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (int e = nv; e < p.n; ++e) black_scholes_call_put_element(p, e); // tail: fewer elements left than a vector
    if (i >= nv) return;
    lm::vec<float, 4> a0 = lm::load_vec<float, 4>(p.in0 + i); // load in0 (contiguous, 16 bytes)
    lm::vec<float, 4> a1 = lm::load_vec<float, 4>(p.in1 + i); // load in1 (contiguous, 16 bytes)
    lm::vec<float, 4> a2 = lm::load_vec<float, 4>(p.in2 + i); // load in2 (contiguous, 16 bytes)
    for (;;) {
        const bool more = i < nv - step;                     // this thread has another vector
        lm::vec<float, 4> b0;
        lm::vec<float, 4> b1;
        lm::vec<float, 4> b2;
        if (more) {                                          // the next vector's loads, in flight during this one's arithmetic
            b0 = lm::load_vec<float, 4>(p.in0 + (i + step));
            b1 = lm::load_vec<float, 4>(p.in1 + (i + step));
            b2 = lm::load_vec<float, 4>(p.in2 + (i + step));
        }
        lm::vec<float, 4> o0;
        lm::vec<float, 4> o1;
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            float r0;
            float r1;
            black_scholes_call_put_body(p, lm::to_reg(a0.v[j]), lm::to_reg(a1.v[j]), lm::to_reg(a2.v[j]), r0, r1);
            o0.v[j] = r0;
            o1.v[j] = r1;
        }
        lm::store_vec<float, 4>(p.out0 + i, o0);             // store out0 (16 bytes)
        lm::store_vec<float, 4>(p.out1 + i, o1);             // store out1 (16 bytes)
        if (!more) break;
        i += step;
        a0 = b0;
        a1 = b1;
        a2 = b2;
    }
}

extern "C" __global__ void __launch_bounds__(256) black_scholes_call_put_s(const __grid_constant__ black_scholes_call_put_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x; // one element per thread
    if (g >= (unsigned)p.n) return;
    black_scholes_call_put_element(p, (int)g);
}
