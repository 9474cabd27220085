// ---- Loom pointwise kernel g1_embedding_lookup (from "g1_embedding_lookup") ----
// pointwise plan: rank 2, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// grid: ceil(n / 1024) blocks of 256 (vector variant, 4 elements per thread, rows), ceil(n / 256) blocks of 256 (scalar variant)
// bytes per element: 16; parameters: 64 bytes
// in0: input 1, int64, strided dims {0}, 8 B/element
// in1: input 0, float32, indirect dims {1} g0 unit-inner, 4 B/element
// out0: float32, contiguous, 4 B/element
// g0: gather position, checked (an out-of-range index is recorded in the error word; position 0 is read); the same in every lane: computed once per vector of 4 elements, each indirect site read with one load per vector
// entry points: g1_embedding_lookup_v4 (vector), g1_embedding_lookup_s (scalar)

struct g1_embedding_lookup_params {
    const long long* in0;                                    // input 1 "ids", strided (test_gather_vector_golden.cpp:49)
    const float* in1;                                        // input 0 "table", indirect (test_gather_vector_golden.cpp:48)
    float* out0;                                             // output 0, contiguous
    void* err;                                               // the error word: the first out-of-range index of a checked gather
    int n;                                                   // elements in the iteration space
    int ext1;                                                // extent of dimension 1
    int in0_s0;                                              // in0 stride of dimension 0
    int in1_g0;                                              // in1 stride of gather position g0
    long long g0_n;                                          // g0: extent of the axis take reads (test_gather_vector_golden.cpp:50)
    long long g0_id;                                         // g0: the gather's number in the error table
};
static_assert(sizeof(g1_embedding_lookup_params) == 64, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void g1_embedding_lookup_body(const g1_embedding_lookup_params& p, const long long v0, const int o1, float& r0) {
    // v0 = in0: input 1 "ids" int64                         // test_gather_vector_golden.cpp:49
    const long long v1 = lm::gather_checked(v0, p.g0_n, p.err, p.g0_id); // take position g0, checked (test_gather_vector_golden.cpp:50)
    const float v2 = lm::to_reg(p.in1[o1 + v1 * p.in1_g0]);  // load in1 (indirect): input "table" (test_gather_vector_golden.cpp:48)
    r0 = v2;                                                 // output 0
}

// The vector variant's body: the statements above that the outputs need, each gathered operand a
// value, which the caller loads at positions that are the same in every lane of a vector.
__device__ __forceinline__ void g1_embedding_lookup_vector_body(const float v2, float& r0) {
    // v2 = in1: input 0 "table" float32, gathered (loaded by the caller) // test_gather_vector_golden.cpp:48
    r0 = v2;                                                 // output 0
}

__device__ __forceinline__ void g1_embedding_lookup_element(const g1_embedding_lookup_params& p, const int e) {
    int q = e;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    q /= p.ext1;
    const int i0 = q;
    const long long v0 = lm::to_reg(p.in0[i0 * p.in0_s0]);   // load in0 (strided)
    float r0;
    g1_embedding_lookup_body(p, v0, (int)(i1), r0);
    p.out0[e] = r0;
}

extern "C" __global__ void __launch_bounds__(256) g1_embedding_lookup_v4(const __grid_constant__ g1_embedding_lookup_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = (blockIdx.x * blockDim.x + threadIdx.x) * 4u; // first element of this thread's vector
    if (g >= (unsigned)p.n) return;
    const int i = (int)g;
    if (p.n - i < 4) {                                       // tail: fewer elements left than a vector
        for (int e = i; e < p.n; ++e) g1_embedding_lookup_element(p, e);
        return;
    }
    int q = i;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    q /= p.ext1;
    const int i0 = q;
    const long long v0 = lm::to_reg(p.in0[i0 * p.in0_s0]);   // load in0 once (same in every lane)
    // The gathers' positions, the same in every lane: computed once per vector, from its first element.
    const long long v1 = lm::gather_checked(v0, p.g0_n, p.err, p.g0_id); // take position g0, checked (test_gather_vector_golden.cpp:50)
    const lm::vec<float, 4> a1 = lm::load_vec<float, 4>(p.in1 + (i1 + v1 * p.in1_g0)); // load in1 (indirect, 16 bytes of a gathered row): input "table" (test_gather_vector_golden.cpp:48)
    lm::vec<float, 4> o0;
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        float r0;
        g1_embedding_lookup_vector_body(lm::to_reg(a1.v[j]), r0);
        o0.v[j] = r0;
    }
    lm::store_vec<float, 4>(p.out0 + i, o0);                 // store out0 (16 bytes)
}

extern "C" __global__ void __launch_bounds__(256) g1_embedding_lookup_s(const __grid_constant__ g1_embedding_lookup_params p) {
    lm::await_prior_grids();                                 // the stream's previous kernel complete
    lm::launch_dependent_grids();                            // the next kernel may be scheduled
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x; // one element per thread
    if (g >= (unsigned)p.n) return;
    g1_embedding_lookup_element(p, (int)g);
}
