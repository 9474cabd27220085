// ---- Loom pointwise kernel g1_lookup_scale_shift_bf16 (from "g1_lookup_scale_shift_bf16") ----
// pointwise plan: rank 2, block 256, vector width 8 (16-byte vectors), 32-bit indexing
// grid: ceil(n / 2048) blocks of 256 (vector variant, 8 elements per thread, rows), ceil(n / 256) blocks of 256 (scalar variant)
// bytes per element: 8; parameters: 64 bytes
// in0: input 1, int32, strided dims {0}, 4 B/element
// in1: input 0, bfloat16, indirect dims {1} g0 unit-inner, 2 B/element
// in2: input 2, bfloat16, row broadcast, 0 B/element
// out0: bfloat16, contiguous, 2 B/element
// g0: gather position, clamped; the same in every lane: computed once per vector of 8 elements, each indirect site read with one load per vector
// scalars: bfloat16
// entry points: g1_lookup_scale_shift_bf16_v8 (vector), g1_lookup_scale_shift_bf16_s (scalar)

struct g1_lookup_scale_shift_bf16_params {
    const int* in0;                                          // input 1 "ids", strided (test_gather_vector_golden.cpp:73)
    const lm::bf16* in1;                                     // input 0 "table", indirect (test_gather_vector_golden.cpp:72)
    const lm::bf16* in2;                                     // input 2 "pos", row broadcast (test_gather_vector_golden.cpp:74)
    lm::bf16* out0;                                          // output 0, contiguous
    int n;                                                   // elements in the iteration space
    int ext1;                                                // extent of dimension 1
    int in0_s0;                                              // in0 stride of dimension 0
    int in1_g0;                                              // in1 stride of gather position g0
    long long g0_n;                                          // g0: extent of the axis take reads (test_gather_vector_golden.cpp:75)
    float s0;                                                // scalar bfloat16 (test_gather_vector_golden.cpp:75)
};
static_assert(sizeof(g1_lookup_scale_shift_bf16_params) == 64, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void g1_lookup_scale_shift_bf16_body(const g1_lookup_scale_shift_bf16_params& p, const int v0, const int o1, const float v5, float& r0) {
    // v0 = in0: input 1 "ids" int32                         // test_gather_vector_golden.cpp:73
    const long long v1 = lm::gather_clamped(v0, p.g0_n);     // take position g0, clamped (test_gather_vector_golden.cpp:75)
    const float v2 = lm::to_reg(p.in1[o1 + v1 * p.in1_g0]);  // load in1 (indirect): input "table" (test_gather_vector_golden.cpp:72)
    const float v3 = p.s0;                                   // scalar bfloat16 (test_gather_vector_golden.cpp:75)
    const float v4 = lm::round_bf16(lm::mul(v2, v3));        // mul (test_gather_vector_golden.cpp:75)
    // v5 = in2: input 2 "pos" bfloat16                      // test_gather_vector_golden.cpp:74
    const float v6 = lm::round_bf16(lm::add(v4, v5));        // add (test_gather_vector_golden.cpp:75)
    r0 = v6;                                                 // output 0
}

// The vector variant's body: the statements above that the outputs need, each gathered operand a
// value, which the caller loads at positions that are the same in every lane of a vector.
__device__ __forceinline__ void g1_lookup_scale_shift_bf16_vector_body(const g1_lookup_scale_shift_bf16_params& p, const float v2, const float v5, float& r0) {
    // v2 = in1: input 0 "table" bfloat16, gathered (loaded by the caller) // test_gather_vector_golden.cpp:72
    const float v3 = p.s0;                                   // scalar bfloat16 (test_gather_vector_golden.cpp:75)
    const float v4 = lm::round_bf16(lm::mul(v2, v3));        // mul (test_gather_vector_golden.cpp:75)
    // v5 = in2: input 2 "pos" bfloat16                      // test_gather_vector_golden.cpp:74
    const float v6 = lm::round_bf16(lm::add(v4, v5));        // add (test_gather_vector_golden.cpp:75)
    r0 = v6;                                                 // output 0
}

__device__ __forceinline__ void g1_lookup_scale_shift_bf16_element(const g1_lookup_scale_shift_bf16_params& p, const int e) {
    int q = e;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    q /= p.ext1;
    const int i0 = q;
    const int v0 = lm::to_reg(p.in0[i0 * p.in0_s0]);         // load in0 (strided)
    const float v5 = lm::to_reg(p.in2[i1]);                  // load in2 (row broadcast)
    float r0;
    g1_lookup_scale_shift_bf16_body(p, v0, (int)(i1), v5, r0);
    p.out0[e] = lm::to_bf16(r0);
}

extern "C" __global__ void __launch_bounds__(256) g1_lookup_scale_shift_bf16_v8(const __grid_constant__ g1_lookup_scale_shift_bf16_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = (blockIdx.x * blockDim.x + threadIdx.x) * 8u; // first element of this thread's vector
    if (g >= (unsigned)p.n) return;
    const int i = (int)g;
    if (p.n - i < 8) {                                       // tail: fewer elements left than a vector
        for (int e = i; e < p.n; ++e) g1_lookup_scale_shift_bf16_element(p, e);
        return;
    }
    int q = i;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    q /= p.ext1;
    const int i0 = q;
    const int v0 = lm::to_reg(p.in0[i0 * p.in0_s0]);         // load in0 once (same in every lane)
    const lm::vec<lm::bf16, 8> a2 = lm::load_vec<lm::bf16, 8>(p.in2 + i1); // load in2 (row broadcast, 16 bytes)
    // The gathers' positions, the same in every lane: computed once per vector, from its first element.
    const long long v1 = lm::gather_clamped(v0, p.g0_n);     // take position g0, clamped (test_gather_vector_golden.cpp:75)
    const lm::vec<lm::bf16, 8> a1 = lm::load_vec<lm::bf16, 8>(p.in1 + (i1 + v1 * p.in1_g0)); // load in1 (indirect, 16 bytes of a gathered row): input "table" (test_gather_vector_golden.cpp:72)
    lm::vec<lm::bf16, 8> o0;
    #pragma unroll
    for (int j = 0; j < 8; ++j) {
        float r0;
        g1_lookup_scale_shift_bf16_vector_body(p, lm::to_reg(a1.v[j]), lm::to_reg(a2.v[j]), r0);
        o0.v[j] = lm::to_bf16(r0);
    }
    lm::store_vec<lm::bf16, 8>(p.out0 + i, o0);              // store out0 (16 bytes)
}

extern "C" __global__ void __launch_bounds__(256) g1_lookup_scale_shift_bf16_s(const __grid_constant__ g1_lookup_scale_shift_bf16_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x; // one element per thread
    if (g >= (unsigned)p.n) return;
    g1_lookup_scale_shift_bf16_element(p, (int)g);
}
