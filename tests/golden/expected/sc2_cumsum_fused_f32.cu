// ---- Loom scan kernel cumsum (from "cumsum") ----
// cumsum of float32 -> float32, accumulated in float32
// path: one warp per row of at most 256 elements, 8 rows per block (no warp scan, no carry)
// block: 256 threads of 8 elements (a tile of 2048): thread totals, Kogge-Stone over lanes (shuffles) and over warps (shared memory), the thread prefixes, the outputs
// prologue: the operand computed element by element as it loads
// pointwise plan: rank 2, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// parameters: 64 bytes
// in0: input 0, int64, strided dims {0}, an index, computed (no memory)
// in1: input 1, int64, row broadcast, an index, computed (no memory)
// out0: float32
// scalars: int64, int64, float32, float32
// epilogue: the kernel's outputs computed from the scan's elements as they are stored
// pointwise plan: rank 1, block 256, vector width 4 (16-byte vectors), 32-bit indexing
// parameters: 32 bytes
// in0: input 0, float32, contiguous, 4 B/element
// in1: input 1, float32, scalar, 0 B/element
// out0: float32
// entry point: cumsum (loads and stores in whole 16-byte pieces or by elements: the parameters `vector_in`, `vector_out`)

struct cumsum_pro_params {
    long long in0_base;                                      // input 0 "", strided (test_scan_golden.cpp:75)
    long long in1_base;                                      // input 1 "", row broadcast (test_scan_golden.cpp:75)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
    int ext1;                                                // extent of dimension 1
    int in0_s0;                                              // in0 stride of dimension 0
    long long s0;                                            // scalar int64 (test_scan_golden.cpp:75)
    long long s1;                                            // scalar int64 (test_scan_golden.cpp:75)
    float s2;                                                // scalar float32 (test_scan_golden.cpp:76)
    float s3;                                                // scalar float32 (test_scan_golden.cpp:76)
};
static_assert(sizeof(cumsum_pro_params) == 64, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void cumsum_pro_body(const cumsum_pro_params& p, const long long v0, const long long v3, float& r0) {
    // v0 = in0: the index along axis 0, int64               // test_scan_golden.cpp:75
    const long long v1 = p.s0;                               // scalar int64 (test_scan_golden.cpp:75)
    const long long v2 = lm::mul(v0, v1);                    // mul (test_scan_golden.cpp:75)
    // v3 = in1: the index along axis 1, int64               // test_scan_golden.cpp:75
    const long long v4 = lm::add(v2, v3);                    // add (test_scan_golden.cpp:75)
    const long long v5 = p.s1;                               // scalar int64 (test_scan_golden.cpp:75)
    const float v6 = lm::random_normal<float>(v4, v5);       // random_normal (test_scan_golden.cpp:75)
    const float v7 = p.s2;                                   // scalar float32 (test_scan_golden.cpp:76)
    const float v8 = lm::mul(v6, v7);                        // mul (test_scan_golden.cpp:76)
    const float v9 = p.s3;                                   // scalar float32 (test_scan_golden.cpp:76)
    const float v10 = lm::add(v8, v9);                       // add (test_scan_golden.cpp:76)
    r0 = v10;                                                // output 0
}

__device__ __forceinline__ float cumsum_pro_element(const cumsum_pro_params& p, const int e) {
    int q = e;                                               // flat index -> multi-index (row-major)
    const int i1 = q % p.ext1;
    q /= p.ext1;
    const int i0 = q;
    const long long v0 = p.in0_base + (long long)(i0 * p.in0_s0); // index in0 (strided): computed
    const long long v3 = p.in1_base + (long long)(i1);       // index in1 (row broadcast): computed
    float r0;
    cumsum_pro_body(p, v0, v3, r0);
    return r0;                                               // the operand's element: stored by the caller
}

struct cumsum_ep_params {
    const float* in0;                                        // input 0 "accumulators", contiguous (test_scan_golden.cpp:76)
    const float* in1;                                        // input 1 "", scalar (test_scan_golden.cpp:76)
    float* out0;                                             // output 0, contiguous
    int n;                                                   // elements in the iteration space
};
static_assert(sizeof(cumsum_ep_params) == 32, "kernel parameter layout differs from the host's");

__device__ __forceinline__ void cumsum_ep_body(const float v0, const float v1, float& r0) {
    // v0 = in0: input 0 "accumulators" float32              // test_scan_golden.cpp:76
    // v1 = in1: input 1 "" float32                          // test_scan_golden.cpp:76
    const float v2 = lm::add(v0, v1);                        // add (test_scan_golden.cpp:76)
    const float v3 = lm::exp_(v2);                           // exp (test_scan_golden.cpp:76)
    r0 = v3;                                                 // output 0
}

__device__ __forceinline__ void cumsum_ep_element(const cumsum_ep_params& p, const int e, const float acc) {
    const float v0 = acc;                                    // in0: the scan's element, rounded to its dtype
    const float v1 = lm::to_reg(p.in1[0]);                   // load in1 (scalar)
    float r0;
    cumsum_ep_body(v0, v1, r0);
    p.out0[e] = r0;
}

struct cumsum_params {
    lm::ScanParams scan;
    cumsum_pro_params pro;  // the prologue's parameters
    cumsum_ep_params ep;  // the epilogue's parameters
};

// The scan's loads from its prologue and stores into its epilogue (scan.cuh's Io policy).
struct cumsum_io {
    static constexpr bool kLoads = true;
    static constexpr bool kStores = true;
    const cumsum_params& p;
    __device__ __forceinline__ auto load(long long e) const {
        return cumsum_pro_element(p.pro, (int)e);  // element e of the operand, in its register type
    }
    template <class Out>
    __device__ __forceinline__ void store(long long e, Out v) const {
        cumsum_ep_element(p.ep, (int)e, lm::to_reg(v));  // the outputs of element e from the scan's value
    }
};

extern "C" __global__ void __launch_bounds__(256) cumsum(const __grid_constant__ cumsum_params p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    lm::scan::scan_warp_rows<lm::scan::Sum, float, float, float, false, cumsum_io>(p.scan, cumsum_io{p}); // combine, in, accumulator, out, exclusive, io
}
