// ---- Loom pointwise kernel black_scholes_call (from "black_scholes_call") ----
// pointwise plan: rank 1, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// grid: min(ceil(n / 1024), 2112) blocks of 256 (vector variant, grid-stride over vectors of 4, the next vector's loads issued before this one's arithmetic), ceil(n / 256) blocks of 256 (scalar variant)
// bytes per element: 16; parameters: 56 bytes
// in0: input 0, float32, contiguous, 4 B/element
// in1: input 1, float32, contiguous, 4 B/element
// in2: input 2, float32, contiguous, 4 B/element
// out0: float32, contiguous, 4 B/element
// scalars: float32, float32, float32, float32, float32
// entry points: black_scholes_call_v4 (vector), black_scholes_call_s (scalar)

struct black_scholes_call_params {
    const float* in0;                                        // input 0 "S", contiguous (test_pointwise_golden.cpp:61)
    const float* in1;                                        // input 1 "K", contiguous (test_pointwise_golden.cpp:62)
    const float* in2;                                        // input 2 "T", contiguous (test_pointwise_golden.cpp:63)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
    float s0;                                                // scalar float32 (test_pointwise_golden.cpp:17)
    float s1;                                                // scalar float32 (test_pointwise_golden.cpp:17)
    float s2;                                                // scalar float32 (test_pointwise_golden.cpp:17)
    float s3;                                                // scalar float32 (test_pointwise_golden.cpp:17)
    float s4;                                                // scalar float32 (test_pointwise_golden.cpp:17)
};
static_assert(sizeof(black_scholes_call_params) == 56, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void black_scholes_call_body(const black_scholes_call_params& p, const float v0, const float v3, const float v11, float& r0) {
    // v0 = in0: input 0 "S" float32                         // test_pointwise_golden.cpp:61
    const float v1 = p.s0;                                   // scalar float32 (test_pointwise_golden.cpp:17)
    const float v2 = p.s1;                                   // scalar float32 (test_pointwise_golden.cpp:17)
    // v3 = in1: input 1 "K" float32                         // test_pointwise_golden.cpp:62
    const float v4 = lm::div(v0, v3);                        // div (test_pointwise_golden.cpp:69)
    const float v5 = lm::log_(v4);                           // log (test_pointwise_golden.cpp:69)
    const float v6 = p.s2;                                   // scalar float32 (test_pointwise_golden.cpp:17)
    const float v7 = p.s3;                                   // scalar float32 (test_pointwise_golden.cpp:17)
    const float v8 = lm::mul(v1, v7);                        // mul (test_pointwise_golden.cpp:70)
    const float v9 = lm::mul(v8, v7);                        // mul (test_pointwise_golden.cpp:70)
    const float v10 = lm::add(v6, v9);                       // add (test_pointwise_golden.cpp:70)
    // v11 = in2: input 2 "T" float32                        // test_pointwise_golden.cpp:63
    const float v12 = lm::mul(v10, v11);                     // mul (test_pointwise_golden.cpp:70)
    const float v13 = lm::add(v5, v12);                      // add (test_pointwise_golden.cpp:69)
    const float v14 = lm::sqrt_(v11);                        // sqrt (test_pointwise_golden.cpp:65)
    const float v15 = lm::mul(v7, v14);                      // mul (test_pointwise_golden.cpp:66)
    const float v16 = lm::div(v13, v15);                     // div (test_pointwise_golden.cpp:67)
    const float v17 = p.s4;                                  // scalar float32 (test_pointwise_golden.cpp:17)
    const float v18 = lm::mul(v16, v17);                     // mul (test_pointwise_golden.cpp:75)
    const float v19 = lm::erf_(v18);                         // erf (test_pointwise_golden.cpp:75)
    const float v20 = lm::add(v2, v19);                      // add (test_pointwise_golden.cpp:75)
    const float v21 = lm::mul(v1, v20);                      // mul (test_pointwise_golden.cpp:74)
    const float v22 = lm::mul(v0, v21);                      // mul (test_pointwise_golden.cpp:79)
    const float v23 = lm::neg(v6);                           // neg (test_pointwise_golden.cpp:77)
    const float v24 = lm::mul(v23, v11);                     // mul (test_pointwise_golden.cpp:77)
    const float v25 = lm::exp_(v24);                         // exp (test_pointwise_golden.cpp:77)
    const float v26 = lm::mul(v3, v25);                      // mul (test_pointwise_golden.cpp:79)
    const float v27 = lm::sub(v16, v15);                     // sub (test_pointwise_golden.cpp:72)
    const float v28 = lm::mul(v27, v17);                     // mul (test_pointwise_golden.cpp:75)
    const float v29 = lm::erf_(v28);                         // erf (test_pointwise_golden.cpp:75)
    const float v30 = lm::add(v2, v29);                      // add (test_pointwise_golden.cpp:75)
    const float v31 = lm::mul(v1, v30);                      // mul (test_pointwise_golden.cpp:74)
    const float v32 = lm::mul(v26, v31);                     // mul (test_pointwise_golden.cpp:79)
    const float v33 = lm::sub(v22, v32);                     // sub (test_pointwise_golden.cpp:79)
    r0 = v33;                                                // output 0
}

__device__ __forceinline__ void black_scholes_call_element(const black_scholes_call_params& p, const int e) {
    const float v0 = lm::to_reg(p.in0[e]);                   // load in0 (contiguous)
    const float v3 = lm::to_reg(p.in1[e]);                   // load in1 (contiguous)
    const float v11 = lm::to_reg(p.in2[e]);                  // load in2 (contiguous)
    float r0;
    black_scholes_call_body(p, v0, v3, v11, r0);
    p.out0[e] = r0;
}

extern "C" __global__ void __launch_bounds__(256) black_scholes_call_v4(const __grid_constant__ black_scholes_call_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const int step = (int)gridDim.x * (int)blockDim.x * 4;   // elements per pass of the grid
    int i = ((int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x) * 4; // first element of this thread's first vector
    const int nv = p.n - p.n % 4;                            // elements in whole vectors
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (int e = nv; e < p.n; ++e) black_scholes_call_element(p, e); // tail: fewer elements left than a vector
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
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            float r0;
            black_scholes_call_body(p, lm::to_reg(a0.v[j]), lm::to_reg(a1.v[j]), lm::to_reg(a2.v[j]), r0);
            o0.v[j] = r0;
        }
        lm::store_vec<float, 4>(p.out0 + i, o0);             // store out0 (16 bytes)
        if (!more) break;
        i += step;
        a0 = b0;
        a1 = b1;
        a2 = b2;
    }
}

extern "C" __global__ void __launch_bounds__(256) black_scholes_call_s(const __grid_constant__ black_scholes_call_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x; // one element per thread
    if (g >= (unsigned)p.n) return;
    black_scholes_call_element(p, (int)g);
}
