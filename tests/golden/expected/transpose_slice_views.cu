// ---- Loom pointwise kernel transpose_slice_views (from "transpose_slice_views") ----
// pointwise plan: rank 2, block 256, vector width 1 (no vector variant), 32-bit indexing
// grid: ceil(n / 256) blocks of 256 (scalar variant, 1 element per thread)
// bytes per element: 12; parameters: 48 bytes
// in0: input 0, float32, strided dims {0,1}, 4 B/element
// in1: input 1, float32, strided dims {0,1} unit-inner, 4 B/element
// out0: float32, contiguous, 4 B/element
// entry points: transpose_slice_views_s (scalar)

struct transpose_slice_views_params {
    const float* in0;                                        // input 0 "x", strided (test_pointwise_golden.cpp:109)
    const float* in1;                                        // input 1 "y", strided (test_pointwise_golden.cpp:110)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
    int ext1;                                                // extent of dimension 1
    int in0_s0;                                              // in0 stride of dimension 0
    int in0_s1;                                              // in0 stride of dimension 1
    int in1_s0;                                              // in1 stride of dimension 0
};
static_assert(sizeof(transpose_slice_views_params) == 48, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void transpose_slice_views_body(const float v0, const float v1, float& r0) {
    // v0 = in0: input 0 "x" float32                         // test_pointwise_golden.cpp:109
    // v1 = in1: input 1 "y" float32                         // test_pointwise_golden.cpp:110
    const float v2 = lm::add(v0, v1);                        // add (test_pointwise_golden.cpp:113)
    r0 = v2;                                                 // output 0
}

__device__ __forceinline__ void transpose_slice_views_element(const transpose_slice_views_params& p, const int e) {
    int q = e;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    q /= p.ext1;
    const int i0 = q;
    const float v0 = lm::to_reg(p.in0[i0 * p.in0_s0 + i1 * p.in0_s1]); // load in0 (strided)
    const float v1 = lm::to_reg(p.in1[i0 * p.in1_s0 + i1]);  // load in1 (strided)
    float r0;
    transpose_slice_views_body(v0, v1, r0);
    p.out0[e] = r0;
}

extern "C" __global__ void __launch_bounds__(256) transpose_slice_views_s(const __grid_constant__ transpose_slice_views_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x; // one element per thread
    if (g >= (unsigned)p.n) return;
    transpose_slice_views_element(p, (int)g);
}
