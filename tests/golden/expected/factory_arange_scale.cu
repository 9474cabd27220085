// ---- Loom pointwise kernel add_mul_cast (from "add_mul_cast") ----
// pointwise plan: rank 2, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// grid: ceil(n / 1024) blocks of 256 (vector variant, 4 elements per thread, rows), ceil(n / 256) blocks of 256 (scalar variant)
// bytes per element: 8; parameters: 56 bytes
// in0: input 0, float32, contiguous, 4 B/element
// in1: input 1, int64, row broadcast, an index, computed (no memory)
// out0: float32, contiguous, 4 B/element
// scalars: float64, float64, float32
// entry points: add_mul_cast_v4 (vector), add_mul_cast_s (scalar)

struct add_mul_cast_params {
    const float* in0;                                        // input 0 "", contiguous (test_factories_golden.cpp:38)
    long long in1_base;                                      // input 1 "", row broadcast (test_factories_golden.cpp:38)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
    int ext1;                                                // extent of dimension 1
    double s0;                                               // scalar float64 (test_factories_golden.cpp:38)
    double s1;                                               // scalar float64 (test_factories_golden.cpp:38)
    float s2;                                                // scalar float32 (test_factories_golden.cpp:38)
};
static_assert(sizeof(add_mul_cast_params) == 56, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void add_mul_cast_body(const add_mul_cast_params& p, const float v0, const long long v2, float& r0) {
    // v0 = in0: input 0 "" float32                          // test_factories_golden.cpp:38
    const double v1 = p.s0;                                  // scalar float64 (test_factories_golden.cpp:38)
    // v2 = in1: the index along axis 0, int64               // test_factories_golden.cpp:38
    const double v3 = lm::cast<double>(v2);                  // cast to float64 (test_factories_golden.cpp:38)
    const double v4 = p.s1;                                  // scalar float64 (test_factories_golden.cpp:38)
    const double v5 = lm::mul(v3, v4);                       // mul (test_factories_golden.cpp:38)
    const double v6 = lm::add(v1, v5);                       // add (test_factories_golden.cpp:38)
    const float v7 = lm::cast<float>(v6);                    // cast to float32 (test_factories_golden.cpp:38)
    const float v8 = lm::mul(v0, v7);                        // mul (test_factories_golden.cpp:38)
    const float v9 = p.s2;                                   // scalar float32 (test_factories_golden.cpp:38)
    const float v10 = lm::add(v8, v9);                       // add (test_factories_golden.cpp:38)
    r0 = v10;                                                // output 0
}

__device__ __forceinline__ void add_mul_cast_element(const add_mul_cast_params& p, const int e) {
    int q = e;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    const float v0 = lm::to_reg(p.in0[e]);                   // load in0 (contiguous)
    const long long v2 = p.in1_base + (long long)(i1);       // index in1 (row broadcast): computed
    float r0;
    add_mul_cast_body(p, v0, v2, r0);
    p.out0[e] = r0;
}

extern "C" __global__ void __launch_bounds__(256) add_mul_cast_v4(const __grid_constant__ add_mul_cast_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = (blockIdx.x * blockDim.x + threadIdx.x) * 4u; // first element of this thread's vector
    if (g >= (unsigned)p.n) return;
    const int i = (int)g;
    if (p.n - i < 4) {                                       // tail: fewer elements left than a vector
        for (int e = i; e < p.n; ++e) add_mul_cast_element(p, e);
        return;
    }
    int q = i;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    const lm::vec<float, 4> a0 = lm::load_vec<float, 4>(p.in0 + i); // load in0 (contiguous, 16 bytes)
    lm::vec<float, 4> o0;
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        float r0;
        add_mul_cast_body(p, lm::to_reg(a0.v[j]), lm::vector_lane<4>(p.in1_base + (long long)(i1), j), r0);
        o0.v[j] = r0;
    }
    lm::store_vec<float, 4>(p.out0 + i, o0);                 // store out0 (16 bytes)
}

extern "C" __global__ void __launch_bounds__(256) add_mul_cast_s(const __grid_constant__ add_mul_cast_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x; // one element per thread
    if (g >= (unsigned)p.n) return;
    add_mul_cast_element(p, (int)g);
}
