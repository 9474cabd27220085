// ---- Loom pointwise kernel mul (from "mul") ----
// pointwise plan: rank 2, block 256, vector width 1 (no vector variant), 32-bit indexing
// grid: ceil(n / 256) blocks of 256 (scalar variant, 1 element per thread)
// bytes per element: 8; parameters: 48 bytes
// in0: input 0, float32, strided dims {0,1}, 4 B/element
// out0: float32, strided, 4 B/element
// scalars: float32
// entry points: mul_s (scalar)

struct mul_params {
    const float* in0;                                        // input 0 "", strided (test_factories_golden.cpp:56)
    float* out0;                                             // output 0, strided
    int n;                                                   // elements in the iteration space
    int out0_s0;                                             // out0 stride of dimension 0
    int out0_s1;                                             // out0 stride of dimension 1
    int ext1;                                                // extent of dimension 1
    int in0_s0;                                              // in0 stride of dimension 0
    int in0_s1;                                              // in0 stride of dimension 1
    float s0;                                                // scalar float32 (test_factories_golden.cpp:56)
};
static_assert(sizeof(mul_params) == 48, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void mul_body(const mul_params& p, const float v0, float& r0) {
    // v0 = in0: input 0 "" float32                          // test_factories_golden.cpp:56
    const float v1 = p.s0;                                   // scalar float32 (test_factories_golden.cpp:56)
    const float v2 = lm::mul(v0, v1);                        // mul (test_factories_golden.cpp:56)
    r0 = v2;                                                 // output 0
}

__device__ __forceinline__ void mul_element(const mul_params& p, const int e) {
    int q = e;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    q /= p.ext1;
    const int i0 = q;
    const float v0 = lm::to_reg(p.in0[i0 * p.in0_s0 + i1 * p.in0_s1]); // load in0 (strided)
    float r0;
    mul_body(p, v0, r0);
    p.out0[i0 * p.out0_s0 + i1 * p.out0_s1] = r0;            // store out0 (strided: a view)
}

extern "C" __global__ void __launch_bounds__(256) mul_s(const __grid_constant__ mul_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x; // one element per thread
    if (g >= (unsigned)p.n) return;
    mul_element(p, (int)g);
}
