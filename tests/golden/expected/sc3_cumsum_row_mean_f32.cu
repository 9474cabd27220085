// ---- Loom scan kernel cumsum (from "cumsum") ----
// cumsum of float32 -> float32, accumulated in float32
// path: one warp per row of at most 256 elements, 8 rows per block (no warp scan, no carry)
// block: 256 threads of 8 elements (a tile of 2048): thread totals, Kogge-Stone over lanes (shuffles) and over warps (shared memory), the thread prefixes, the outputs
// prologue: the operand computed as it loads, in vectors of 4 consecutive elements where every row allows (else element by element)
// pointwise plan: rank 1, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// parameters: 40 bytes
// in0: input 0, int64, contiguous, an index, computed (no memory)
// out0: float32
// scalars: int64, float32, float32
// row reduction: the mean (float32) of each row, in the reductions' row order (two runs of 4 per thread, the butterfly by shuffles), as the kernel finishes the row; the scan's elements never stored
// reduction operand (from the scan's elements):
// pointwise plan: rank 1, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// parameters: 32 bytes
// in0: input 0, float32, contiguous, 4 B/element
// in1: input 1, float32, scalar, 0 B/element
// out0: float32
// row outputs (from each row's reduced value):
// pointwise plan: rank 1, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// parameters: 24 bytes
// in0: input 0, float32, contiguous, 4 B/element
// out0: float32
// entry point: cumsum (loads and stores in whole 16-byte pieces or by elements: the parameters `vector_in`, `vector_out`)

struct cumsum_pro_params {
    long long in0_base;                                      // input 0 "", contiguous (test_scan_golden.cpp:75)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
    long long s0;                                            // scalar int64 (test_scan_golden.cpp:75)
    float s1;                                                // scalar float32 (test_scan_golden.cpp:76)
    float s2;                                                // scalar float32 (test_scan_golden.cpp:76)
};
static_assert(sizeof(cumsum_pro_params) == 40, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void cumsum_pro_body(const cumsum_pro_params& p, const long long v0, float& r0) {
    // v0 = in0: the index along axis 0, int64               // test_scan_golden.cpp:75
    const long long v1 = p.s0;                               // scalar int64 (test_scan_golden.cpp:75)
    const float v2 = lm::random_normal<float>(v0, v1);       // random_normal (test_scan_golden.cpp:75)
    const float v3 = p.s1;                                   // scalar float32 (test_scan_golden.cpp:76)
    const float v4 = lm::mul(v2, v3);                        // mul (test_scan_golden.cpp:76)
    const float v5 = p.s2;                                   // scalar float32 (test_scan_golden.cpp:76)
    const float v6 = lm::add(v4, v5);                        // add (test_scan_golden.cpp:76)
    r0 = v6;                                                 // output 0
}

__device__ __forceinline__ float cumsum_pro_element(const cumsum_pro_params& p, const int e) {
    const long long v0 = p.in0_base + (long long)(e);        // index in0 (contiguous): computed
    float r0;
    cumsum_pro_body(p, v0, r0);
    return r0;                                               // the operand's element: stored by the caller
}

__device__ __forceinline__ void cumsum_pro_vector(const cumsum_pro_params& p, const int i, float (&r)[4]) {
    #pragma unroll
    for (int j = 0; j < 4; ++j) cumsum_pro_body(p, lm::vector_lane<4>(p.in0_base + (long long)(i), j), r[j]);
}

struct cumsum_ro_params {
    const float* in0;                                        // input 0 "accumulators", contiguous (test_scan_golden.cpp:76)
    const float* in1;                                        // input 1 "", scalar (test_scan_golden.cpp:76)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
};
static_assert(sizeof(cumsum_ro_params) == 32, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void cumsum_ro_body(const float v0, const float v1, float& r0) {
    // v0 = in0: input 0 "accumulators" float32              // test_scan_golden.cpp:76
    // v1 = in1: input 1 "" float32                          // test_scan_golden.cpp:76
    const float v2 = lm::add(v0, v1);                        // add (test_scan_golden.cpp:76)
    const float v3 = lm::exp_(v2);                           // exp (test_scan_golden.cpp:76)
    r0 = v3;                                                 // output 0
}

__device__ __forceinline__ float cumsum_ro_element(const cumsum_ro_params& p, const int e, const float acc) {
    const float v0 = acc;                                    // in0: the scan's element, rounded to its dtype
    const float v1 = lm::to_reg(p.in1[0]);                   // load in1 (scalar)
    float r0;
    cumsum_ro_body(v0, v1, r0);
    return r0;                                               // the reduction's operand: reduced by the caller
}

struct cumsum_row_params {
    const float* in0;                                        // input 0 "reduced", contiguous (test_scan_golden.cpp:89)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
};
static_assert(sizeof(cumsum_row_params) == 24, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void cumsum_row_body(const float v0, float& r0) {
    // v0 = in0: input 0 "reduced" float32                   // test_scan_golden.cpp:89
    r0 = v0;                                                 // output 0
}

__device__ __forceinline__ void cumsum_row_element(const cumsum_row_params& p, const int e, const float acc) {
    const float v0 = acc;                                    // in0: the row's reduced value
    float r0;
    cumsum_row_body(v0, r0);
    p.out0[e] = r0;
}

struct cumsum_params {
    lm::ScanParams scan;
    cumsum_pro_params pro;  // the prologue's parameters
    cumsum_ro_params ro;  // the reduction operand's parameters
    cumsum_row_params row;  // the row outputs' parameters
};

// The scan's loads from its prologue and stores: a reduction of each row, then its outputs (scan.cuh's Io policy).
struct cumsum_io {
    static constexpr bool kLoads = true;
    static constexpr bool kStores = false;
    static constexpr int kLoadWidth = 4;                                 // the prologue's vectors: 4 consecutive elements
    static constexpr bool kReducesRows = true;
    static constexpr bool kMean = true;                                  // the row's sum divided by its length
    using Reduced = float;                                               // the reduction's operand and accumulator
    static constexpr int kStoreWidth = 0;                                // no vectors: element by element
    const cumsum_params& p;
    __device__ __forceinline__ auto load(long long e) const {
        return cumsum_pro_element(p.pro, (int)e);  // element e of the operand, in its register type
    }
    using Value = float;
    __device__ __forceinline__ void load_vector(long long e, float (&r)[4]) const {
        cumsum_pro_vector(p.pro, (int)e, r);  // elements e .. e + 3 of the operand (e a multiple of 4)
    }
    template <class Out>
    __device__ __forceinline__ float operand(long long e, Out d) const {
        return cumsum_ro_element(p.ro, (int)e, lm::to_reg(d));  // the reduction's operand of element e
    }
    __device__ __forceinline__ void store_row(long long row, float r) const {
        cumsum_row_element(p.row, (int)row, r);  // the outputs of the row's reduced value
    }
};

extern "C" __global__ void __launch_bounds__(256) cumsum(const __grid_constant__ cumsum_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    lm::scan::scan_warp_rows<lm::scan::Sum, float, float, float, false, cumsum_io>(p.scan, cumsum_io{p}); // combine, in, accumulator, out, exclusive, io
}
