// The device code of scan kernels (Family::Scan; docs/semantics.md, "Scans"), pasted after the prelude into
// every scan kernel's source by codegen/embed_scan.cmake (never into other kernels), with the combines of
// loom/ir/scan_core.hpp, which the CPU reference compiles too. The emitted entry point
// (codegen/src/cuda/emit_scan.cpp) instantiates scan_kernel with its plan's op, types and path.
//
// A block of 256 threads scans one tile of 2048 elements of a row, in the contract's order: each thread's 8
// consecutive elements (one or more 16-byte loads where the row is contiguous and aligned), its total, the
// Kogge-Stone lane scan by warp shuffles, the warp scan over the 8 warp totals in shared memory, each
// thread's prefix (carry, previous warp, previous lane: absent terms omitted), its 8 outputs. Tile path: a
// row of at most one tile per block. Chunk path (rows of several tiles): a block takes a ticket from a
// counter in launch order, chunk ticket % chunks of row ticket / chunks, a chunk being 2^chunk_shift
// consecutive tiles (at most kChunkTiles, 4 of a 4-byte accumulator: 32 KiB of float32). It loads its tiles
// into registers, all at once, scans them for their aggregates, builds the chunk's nodes of the contract's
// tree and publishes the chunk's; the last chunk of 32 to do so builds their node, and so on up (waiting for
// nothing). It then awaits the nodes before it among its siblings at each level (published by blocks with
// smaller tickets, already running: no deadlock), folds its tiles' carries, and finishes its tiles' scans
// from its registers: DRAM sees one read and one write. The last block to
// finish sets the counters back to zero, as the runtime requires. The result goes to every output of the
// kernel (a root and a temporary another kernel reads), each contiguous; or, in a fused kernel, the operand
// comes from an elementwise prologue and the result goes to an elementwise epilogue (the Io policy below).

// LOOM_SCAN_CORE

// Loops the compiler unrolls (empty in the host simulation of tests/unit/test_scan_kernel.cpp).
#ifndef LM_SCAN_UNROLL
#define LM_SCAN_UNROLL _Pragma("unroll")
#endif

namespace lm {

// LOOM_SCAN_PARAMS

namespace scan {

constexpr int kThreads = 256;  // kScanThreads
constexpr int kPerThread = 8;  // kScanThreadElements
constexpr int kWarps = kThreads / 32;
constexpr int kTile = kThreads * kPerThread;        // kScanTile
constexpr int kRadixBits = scanc::kChunkRadixBits;  // a unit of the chunks' hierarchy holds 32

// The combines (scan_core.hpp).
struct Sum {
    template <class A>
    __device__ __forceinline__ static A combine(A a, A b) {
        return scanc::add(a, b);
    }
};
struct Prod {
    template <class A>
    __device__ __forceinline__ static A combine(A a, A b) {
        return scanc::mul(a, b);
    }
};
struct Max {
    template <class A>
    __device__ __forceinline__ static A combine(A a, A b) {
        return scanc::max_of(a, b);
    }
};
struct Min {
    template <class A>
    __device__ __forceinline__ static A combine(A a, A b) {
        return scanc::min_of(a, b);
    }
};
// The integer accumulator (int64) goes through the prelude's maximum / minimum: a compare and a select, which
// ptxas does not fuse into a three-input VIMNMX3 (prelude.cuh says why); scanc::max_of's values.
template <>
__device__ __forceinline__ long long Max::combine<long long>(long long a, long long b) {
    return maximum(a, b);
}
template <>
__device__ __forceinline__ long long Min::combine<long long>(long long a, long long b) {
    return minimum(a, b);
}
struct LogAddExp {
    template <class A>
    __device__ __forceinline__ static A combine(A a, A b) {
        return scanc::log_add_exp(a, b);
    }
};

// An element as the accumulator: halves exactly as float32, bool and integers as int64.
__device__ __forceinline__ float widen(float x) {
    return x;
}
__device__ __forceinline__ double widen(double x) {
    return x;
}
__device__ __forceinline__ float widen(f16 x) {
    return to_reg(x);
}
__device__ __forceinline__ float widen(bf16 x) {
    return to_reg(x);
}
__device__ __forceinline__ long long widen(bool x) {
    return (long long)widened(x);
}
__device__ __forceinline__ long long widen(signed char x) {
    return (long long)x;
}
__device__ __forceinline__ long long widen(unsigned char x) {
    return (long long)x;
}
__device__ __forceinline__ long long widen(int x) {
    return (long long)x;
}
__device__ __forceinline__ long long widen(long long x) {
    return x;
}

// An accumulator as the result's element, rounded once (halves) or narrowed exactly (cummax, cummin).
__device__ __forceinline__ void narrow(float* d, float r) {
    *d = r;
}
__device__ __forceinline__ void narrow(double* d, double r) {
    *d = r;
}
__device__ __forceinline__ void narrow(f16* d, float r) {
    d->bits = float_to_f16(r);
}
__device__ __forceinline__ void narrow(bf16* d, float r) {
    d->bits = float_to_bf16(r);
}
__device__ __forceinline__ void narrow(bool* d, long long r) {
    *d = r != 0;
}
__device__ __forceinline__ void narrow(signed char* d, long long r) {
    *d = (signed char)r;
}
__device__ __forceinline__ void narrow(unsigned char* d, long long r) {
    *d = (unsigned char)r;
}
__device__ __forceinline__ void narrow(int* d, long long r) {
    *d = (int)r;
}
__device__ __forceinline__ void narrow(long long* d, long long r) {
    *d = r;
}

// The exclusive scans' identity from its bits (ScanParams::identity).
template <class A>
__device__ __forceinline__ A from_bits(long long b);
template <>
__device__ __forceinline__ float from_bits<float>(long long b) {
    return __uint_as_float((unsigned)b);
}
template <>
__device__ __forceinline__ double from_bits<double>(long long b) {
    return __longlong_as_double(b);
}
template <>
__device__ __forceinline__ long long from_bits<long long>(long long b) {
    return b;
}

// A term of the order that may not exist: omitted, never an identity.
template <class A>
struct Maybe {
    A v;
    bool has;
};
template <class Op, class A>
__device__ __forceinline__ void fold(Maybe<A>& m, A x) {
    m.v = m.has ? Op::template combine<A>(m.v, x) : x;
    m.has = true;
}

// 8 consecutive elements of 8 * sizeof(T) bytes at `p`, aligned to 16 bytes (8 for 1-byte types): whole
// 16-byte (or 8-byte) pieces.
template <class T>
__device__ __forceinline__ void load_pieces(T (&v)[kPerThread], const T* p) {
    constexpr int bytes = kPerThread * (int)sizeof(T);
    if constexpr (bytes >= 16) {
        LM_SCAN_UNROLL
        for (int k = 0; k < bytes / 16; ++k)
            reinterpret_cast<uint4*>(v)[k] = __ldg(reinterpret_cast<const uint4*>(p) + k);
    } else {
        reinterpret_cast<uint2*>(v)[0] = __ldg(reinterpret_cast<const uint2*>(p));
    }
}
template <class T>
__device__ __forceinline__ void store_pieces(T* p, const T (&v)[kPerThread]) {
    constexpr int bytes = kPerThread * (int)sizeof(T);
    if constexpr (bytes >= 16) {
        LM_SCAN_UNROLL
        for (int k = 0; k < bytes / 16; ++k)
            reinterpret_cast<uint4*>(p)[k] = reinterpret_cast<const uint4*>(v)[k];
    } else {
        reinterpret_cast<uint2*>(p)[0] = reinterpret_cast<const uint2*>(v)[0];
    }
}

// The offsets of row `row` (over the other axes, innermost last) in the operand and the result.
__device__ __forceinline__ void row_offsets(const ScanParams& p, long long row, long long& in,
                                            long long& out) {
    in = 0;
    out = 0;
    LM_SCAN_UNROLL
    for (int a = 5; a >= 0; --a) {
        const long long i = row % p.outer[a];
        row /= p.outer[a];
        in += i * p.in_outer[a];
        out += i * p.out_outer[a];
    }
}

// The tree's values: node (k, i) combines the aggregates of tiles [i 2^k, (i + 1) 2^k) of a row; its position
// among the row's nodes is the count of nodes of the levels below plus i. The chunk path stores there the
// levels up to the chunk's (chunk_shift) and the nodes of whole units of 32, 1024, ... chunks above it.
__device__ __forceinline__ long long node_position(const ScanParams& p, long long row, int k, long long i) {
    long long pos = row * p.row_nodes + i;
    for (int q = 0; q < k; ++q) pos += p.tiles >> q;
    return pos;
}
// The flags' acquire and release, and the wait between polls. LOOM_SCAN_HOST_SIMULATION:
// tests/unit/test_scan_kernel.cpp runs this code on host threads, with its own definitions of these.
#ifndef LOOM_SCAN_HOST_SIMULATION
__device__ __forceinline__ unsigned load_acquire(const unsigned* f) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
    return v;
}
__device__ __forceinline__ void store_release(unsigned* f, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(f), "r"(v) : "memory");
}
__device__ __forceinline__ void poll_pause() {
    __nanosleep(128);  // polls that spare the L2 the blocks still reading their tiles use
}
#endif

// The thread's outputs into one output: inclusive at the elements' own positions (whole pieces where they
// allow), exclusive one position later (the row's first output the identity).
template <class A, class Out, bool kExclusive>
__device__ __forceinline__ void store_outputs(const ScanParams& p, Out* out, const A (&v)[kPerThread],
                                              long long first, int count) {
    if constexpr (kExclusive) {
        if (first == 0) narrow(out, from_bits<A>(p.identity));
        LM_SCAN_UNROLL
        for (int i = 0; i < kPerThread; ++i)
            if (i < count && first + i + 1 < p.length) narrow(out + (first + i + 1) * p.out_step, v[i]);
    } else if (count == kPerThread && p.vector_out) {
        __align__(16) Out raw[kPerThread];
        LM_SCAN_UNROLL
        for (int i = 0; i < kPerThread; ++i) narrow(raw + i, v[i]);
        store_pieces(out + first, raw);
    } else {
        LM_SCAN_UNROLL
        for (int i = 0; i < kPerThread; ++i)
            if (i < count) narrow(out + (first + i) * p.out_step, v[i]);
    }
}

// Where a kernel's elements come from and go to. MemoryIo: the operand read from memory (ScanParams::in, at
// its strides), the result stored into every output (ScanParams::out). A fused kernel's emitted Io instead
// computes the operand's element e (row-major over the scan's shape) with its prologue (`load(e)`), and/or
// hands the result's element e to its epilogue (`store(e, value)`), which computes and stores the kernel's
// outputs; kLoads / kStores say which of the two it has. A prologue of kLoadWidth W > 0 also computes W
// consecutive elements from a multiple of W at once (`load_vector(e, Value (&)[W])`), where the launch allows
// (ScanParams::vector_in): what W neighbours share, such as a block of random numbers, is computed once. An
// epilogue of kStoreWidth W > 0 likewise takes W consecutive elements (`store_vector(e, const Out (&)[W])`)
// and stores its outputs in 16-byte vectors where the launch allows (ScanParams::vector_out). A row reduction
// (kReducesRows: rows of at most 1024, the warp path or the tile path's 2 or 4 warps) stores no element:
// `operand(e, d)` gives the reduction's operand of element e from the scan's element d (rounded to the
// result's dtype), and `store_row(row, r)` the kernel's outputs from the row's sum or mean r (kMean), both of
// type Reduced.
struct MemoryIo {
    static constexpr bool kLoads = false;
    static constexpr bool kStores = false;
    static constexpr int kLoadWidth = 0;
    static constexpr int kStoreWidth = 0;
    static constexpr bool kReducesRows = false;
};

// The thread's outputs through the Io's epilogue: element e of the result is at `out_row + position *
// out_step` (the result's strides are row-major), each rounded to the result's dtype first, as a stored
// result would be.
template <class A, class Out, bool kExclusive, class Io>
__device__ __forceinline__ void store_fused(const ScanParams& p, const Io& io, long long out_row,
                                            const A (&v)[kPerThread], long long first, int count) {
    Out d;
    if constexpr (kExclusive) {
        if (first == 0) {
            narrow(&d, from_bits<A>(p.identity));
            io.store(out_row, d);
        }
        LM_SCAN_UNROLL
        for (int i = 0; i < kPerThread; ++i)
            if (i < count && first + i + 1 < p.length) {
                narrow(&d, v[i]);
                io.store(out_row + (first + i + 1) * p.out_step, d);
            }
    } else {
        if constexpr (Io::kStoreWidth > 0) {  // the epilogue's vectors (step 1, rows on vector boundaries)
            constexpr int W = Io::kStoreWidth;
            if (count == kPerThread && p.vector_out) {
                LM_SCAN_UNROLL
                for (int k = 0; k < kPerThread / W; ++k) {
                    Out r[W];
                    LM_SCAN_UNROLL
                    for (int j = 0; j < W; ++j) narrow(&r[j], v[k * W + j]);
                    io.store_vector(out_row + first + k * W, r);
                }
                return;
            }
        }
        LM_SCAN_UNROLL
        for (int i = 0; i < kPerThread; ++i)
            if (i < count) {
                narrow(&d, v[i]);
                io.store(out_row + (first + i) * p.out_step, d);
            }
    }
}

// Every output of the thread's elements: into memory, or through the Io's epilogue.
template <class A, class Out, bool kExclusive, class Io>
__device__ __forceinline__ void store_all(const ScanParams& p, const Io& io, long long out_row,
                                          const A (&v)[kPerThread], long long first, int count) {
    if constexpr (Io::kStores) {
        store_fused<A, Out, kExclusive>(p, io, out_row, v, first, count);
    } else {
        for (int o = 0; o < p.outputs; ++o)
            store_outputs<A, Out, kExclusive>(p, static_cast<Out*>(p.out[o]) + out_row, v, first, count);
    }
}

// The present elements of a thread whose element 0 is at `first` of `count` (0 to 8): the count.
__device__ __forceinline__ int present(long long length, long long first) {
    const long long left = length - first;
    return left >= kPerThread ? kPerThread : (left > 0 ? (int)left : 0);
}

// Step 1: the thread's values (whole pieces where they allow; absent slots left as they are)...
template <class In, class A, class Io>
__device__ __forceinline__ void load_values(const ScanParams& p, const Io& io, long long in_row,
                                            long long first, int count, A (&v)[kPerThread]) {
    if constexpr (Io::kLoadWidth > 0) {  // the prologue's vectors (the step 1, rows on vector boundaries)
        constexpr int W = Io::kLoadWidth;
        if (count == kPerThread && p.vector_in) {
            LM_SCAN_UNROLL
            for (int k = 0; k < kPerThread / W; ++k) {
                typename Io::Value r[W];
                io.load_vector(in_row + first + k * W, r);
                LM_SCAN_UNROLL
                for (int j = 0; j < W; ++j) v[k * W + j] = widen(r[j]);
            }
            return;
        }
    }
    if constexpr (Io::kLoads) {  // the prologue's elements, at the row-major positions of the scan's shape
        LM_SCAN_UNROLL
        for (int i = 0; i < kPerThread; ++i)
            if (i < count) v[i] = widen(io.load(in_row + (first + i) * p.in_step));
    } else {
        const In* in = static_cast<const In*>(p.in) + in_row;
        if (count == kPerThread && p.vector_in) {
            __align__(16) In raw[kPerThread];
            load_pieces(raw, in + first);
            LM_SCAN_UNROLL
            for (int i = 0; i < kPerThread; ++i) v[i] = widen(raw[i]);
        } else {
            LM_SCAN_UNROLL
            for (int i = 0; i < kPerThread; ++i)
                if (i < count) v[i] = widen(in[(first + i) * p.in_step]);
        }
    }
}
// ... and its total.
template <class Op, class A>
__device__ __forceinline__ A values_total(const A (&v)[kPerThread], int count) {
    A x = v[0];
    LM_SCAN_UNROLL
    for (int i = 1; i < kPerThread; ++i)
        if (i < count) x = Op::template combine<A>(x, v[i]);
    return x;
}
template <class Op, class In, class A, class Io>
__device__ __forceinline__ A thread_total(const ScanParams& p, const Io& io, long long in_row,
                                          long long first, int count, A (&v)[kPerThread]) {
    load_values<In>(p, io, in_row, first, count, v);
    return values_total<Op>(v, count);
}

// Step 2: the lane scan (every lane shuffles; absent threads, a tail of lanes, do not combine).
template <class Op, class A>
__device__ __forceinline__ A lane_scan(A x, int lane, int count) {
    LM_SCAN_UNROLL
    for (int d = 1; d < 32; d *= 2) {
        const A y = __shfl_up_sync(0xffffffffu, x, d);
        if (lane >= d && count > 0) x = Op::template combine<A>(y, x);
    }
    return x;
}

// Step 5: the outputs from the thread's prefix.
template <class Op, class A>
__device__ __forceinline__ void thread_outputs(const Maybe<A>& prefix, int count, A (&v)[kPerThread]) {
    A r = prefix.has ? Op::template combine<A>(prefix.v, v[0]) : v[0];
    v[0] = r;
    LM_SCAN_UNROLL
    for (int i = 1; i < kPerThread; ++i)
        if (i < count) v[i] = r = Op::template combine<A>(r, v[i]);
}

// A row reduction (Io::kReducesRows) of a row of 1 to 1024 elements, after step 5: the reductions' row order
// (docs/semantics.md, "Reduction order") over x_i, the operand of the row's element i. Reduction lane r takes
// the run of 4 elements from 4 r (one chunk, at most 256 runs: one each), from the identity -0 in ascending
// order; thread t of the row holds runs 2 t and 2 t + 1 (row_runs). The butterfly's step s combines reduction
// lane r < s with r + s, which sits in thread t + s / 2, the same slot; absent lanes are skipped (combining
// with the identity is exact). Steps from threads of other warps go through shared memory (the tile path),
// steps s = 32 to 2 by shuffles (warp_butterfly), s = 1 combines thread 0's two slots, which finishes the row
// (the mean: one division by the length) and hands it on (finish_row).
template <class Out, class Io, class A, class R>
__device__ __forceinline__ void row_runs(const ScanParams& p, const Io& io, long long out_row,
                                         const A (&v)[kPerThread], long long first, int count, R (&run)[2],
                                         int (&has)[2]) {
    LM_SCAN_UNROLL
    for (int k = 0; k < 2; ++k) {
        run[k] = (R)-0.0;
        has[k] = count > 4 * k ? 1 : 0;
        LM_SCAN_UNROLL
        for (int i = 4 * k; i < 4 * k + 4; ++i)
            if (i < count) {
                Out d;
                narrow(&d, v[i]);
                run[k] = scanc::add(run[k], io.operand(out_row + (first + i) * p.out_step, d));
            }
    }
}
template <class R>
__device__ __forceinline__ void warp_butterfly(R (&run)[2], const int (&has)[2], int lane) {
    LM_SCAN_UNROLL
    for (int d = 16; d >= 1; d /= 2) {  // the step s = 2 d
        LM_SCAN_UNROLL
        for (int k = 0; k < 2; ++k) {
            const R other = __shfl_down_sync(0xffffffffu, run[k], d);
            const int other_has = __shfl_down_sync(0xffffffffu, has[k], d);
            if (lane < d && other_has) run[k] = scanc::add(run[k], other);
        }
    }
}
template <class Io, class R>
__device__ __forceinline__ void finish_row(const ScanParams& p, const Io& io, long long row,
                                           const R (&run)[2], const int (&has)[2]) {
    if (!has[0]) return;  // an empty row (none: the partition takes rows of 1 or more) or a row past the last
    R r = has[1] ? scanc::add(run[0], run[1]) : run[0];
    if constexpr (Io::kMean) r = scanc::div(r, (R)p.length);
    io.store_row(row, r);
}

// The warp path's row reduction: a warp per row of at most 256.
template <class A, class Out, class Io>
__device__ __forceinline__ void reduce_row(const ScanParams& p, const Io& io, long long row,
                                           long long out_row, const A (&v)[kPerThread], long long first,
                                           int count, int lane) {
    using R = typename Io::Reduced;
    R run[2];
    int has[2];
    row_runs<Out>(p, io, out_row, v, first, count, run, has);
    warp_butterfly(run, has, lane);
    if (lane == 0) finish_row(p, io, row, run, has);
}

// The tile path's: kRowWarps of 2 or 4 warps per row of at most 1024 (every thread of the block takes part in
// the barriers); the steps from s = 32 kRowWarps down to 64 through shared memory.
template <int kRowWarps, class A, class Out, class Io>
__device__ __forceinline__ void reduce_tile_row(const ScanParams& p, const Io& io, long long row,
                                                long long out_row, const A (&v)[kPerThread], long long first,
                                                int count, int t, int lane) {
    static_assert(kRowWarps == 2 || kRowWarps == 4, "a row reduction takes rows of at most 1024");
    using R = typename Io::Reduced;
    __shared__ R runs[kThreads][2];
    __shared__ int runs_present[kThreads][2];
    R run[2];
    int has[2];
    row_runs<Out>(p, io, out_row, v, first, count, run, has);
    LM_SCAN_UNROLL
    for (int d = 16 * kRowWarps; d >= 32; d /= 2) {  // the step s = 2 d, partners in other warps
        LM_SCAN_UNROLL
        for (int k = 0; k < 2; ++k) {
            runs[threadIdx.x][k] = run[k];
            runs_present[threadIdx.x][k] = has[k];
        }
        __syncthreads();
        if (t < d) {
            LM_SCAN_UNROLL
            for (int k = 0; k < 2; ++k)
                if (runs_present[threadIdx.x + d][k]) run[k] = scanc::add(run[k], runs[threadIdx.x + d][k]);
        }
        __syncthreads();
    }
    if (t >= 32) return;  // the row's first warp, whole
    warp_butterfly(run, has, lane);
    if (t == 0) finish_row(p, io, row, run, has);
}

// Rows of at most 256 elements (32 threads of 8): one warp per row, 8 rows per block. The contract's order
// has then one warp and no carry: the prefix is the previous lane's lane scan value alone.
template <class Op, class In, class A, class Out, bool kExclusive, class Io = MemoryIo>
__device__ __forceinline__ void scan_warp_rows(const ScanParams& p, const Io& io = Io()) {
    const int lane = threadIdx.x & 31;
    const long long row = (long long)blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (row >= p.rows) return;  // the whole warp
    long long in_row, out_row;
    row_offsets(p, row, in_row, out_row);
    const long long first = (long long)lane * kPerThread;
    const int count = present(p.length, first);
    A v[kPerThread];
    const A x = lane_scan<Op, A>(thread_total<Op, In, A>(p, io, in_row, first, count, v), lane, count);
    const A previous_lane = __shfl_up_sync(0xffffffffu, x, 1);
    Maybe<A> prefix;
    prefix.has = lane > 0;
    prefix.v = previous_lane;
    if constexpr (Io::kReducesRows) {  // every lane takes part in the reduction's shuffles
        if (count > 0) thread_outputs<Op, A>(prefix, count, v);
        reduce_row<A, Out>(p, io, row, out_row, v, first, count, lane);
        return;
    }
    if (count == 0) return;
    thread_outputs<Op, A>(prefix, count, v);
    store_all<A, Out, kExclusive>(p, io, out_row, v, first, count);
}

// Step 3 over a row's warp totals (`totals`, its present `warps` first) in one warp: lane w ends with W_w.
// A lane past the present warps reads nothing: were it to read totals[0], the tile path's lane 0, which
// stores its result there, would overwrite a word another lane of its warp read, with no barrier between.
template <class Op, class A, int kRowWarps>
__device__ __forceinline__ A warp_scan_of(const A* totals, int lane, int warps) {
    A s = lane < warps ? totals[lane] : A();
    LM_SCAN_UNROLL
    for (int d = 1; d < kRowWarps; d *= 2) {  // steps d >= kRowWarps would change nothing
        const A y = __shfl_up_sync(0xffffffffu, s, d);
        if (lane >= d && lane < warps) s = Op::template combine<A>(y, s);
    }
    return s;
}

// The tile path: a row of at most one tile, steps 1 to 5 of the contract (no carry), then the stores.
// kRowWarps warps take a row: the block's 8, or 4 or 2 for shorter rows, 8 / kRowWarps rows per block from
// `row0` on (a group of warps past the last row loads and stores nothing but takes part in every barrier).
template <class Op, class In, class A, class Out, bool kExclusive, int kRowWarps, class Io>
__device__ __forceinline__ void scan_tile(const ScanParams& p, const Io& io, long long row0) {
    __shared__ A warp_scan[kWarps];
    const int lane = threadIdx.x & 31, group = (threadIdx.x >> 5) / kRowWarps,
              w = (threadIdx.x >> 5) % kRowWarps;
    const int t = (int)threadIdx.x - group * kRowWarps * 32;  // the thread within its row's warps
    const long long row = row0 + group;
    long long in_row = 0, out_row = 0;
    if (row < p.rows) row_offsets(p, row, in_row, out_row);
    const long long first = (long long)t * kPerThread;  // position of the thread's element 0
    const int len = (int)(p.length < kTile ? p.length : kTile);
    const int count = row < p.rows ? present(p.length, first) : 0;
    const int threads = (len + kPerThread - 1) / kPerThread, warps = (threads + 31) / 32;
    A* const scan = warp_scan + group * kRowWarps;  // the warp values of this row

    // Steps 1 and 2.
    A v[kPerThread];
    const A x = lane_scan<Op, A>(thread_total<Op, In, A>(p, io, in_row, first, count, v), lane, count);
    const A previous_lane = __shfl_up_sync(0xffffffffu, x, 1);

    // Step 3: the warp scan over the row's warp totals, by its first warp.
    if (count > 0 && (lane == 31 || t == threads - 1)) scan[w] = x;
    __syncthreads();
    if (w == 0) {
        const A s = warp_scan_of<Op, A, kRowWarps>(scan, lane, warps);
        if (lane < warps) scan[lane] = s;
    }
    __syncthreads();

    // Steps 4 and 5: the thread's prefix, then its outputs.
    Maybe<A> prefix = {A(), false};
    if (w > 0) fold<Op>(prefix, scan[w - 1]);
    if (lane > 0) fold<Op>(prefix, previous_lane);
    if constexpr (Io::kReducesRows) {  // every thread takes part in the reduction's barriers
        if (count > 0) thread_outputs<Op, A>(prefix, count, v);
        // plan_scan gives a row reduction rows of at most 1024: 2 or 4 warps.
        if constexpr (kRowWarps <= 4)
            reduce_tile_row<kRowWarps, A, Out>(p, io, row, out_row, v, first, count, t, lane);
        return;
    }
    if (count == 0) return;
    thread_outputs<Op, A>(prefix, count, v);
    store_all<A, Out, kExclusive>(p, io, out_row, v, first, count);
}

// The chunk path. Tile j of a row, from thread threadIdx.x's view: its element 0's position, its present
// elements, the tile's present threads and warps.
struct TileSpan {
    long long first;
    int count, threads, warps;
};
__device__ __forceinline__ TileSpan tile_span(const ScanParams& p, long long j) {
    TileSpan s;
    s.first = j * kTile + (long long)threadIdx.x * kPerThread;
    const long long left = p.length - j * kTile;
    const int len = left >= kTile ? kTile : (left > 0 ? (int)left : 0);
    s.count = present(p.length, s.first);
    s.threads = (len + kPerThread - 1) / kPerThread;
    s.warps = (s.threads + 31) / 32;
    return s;
}

// Steps 1 to 3 of the chunk path's tile j from its loaded values: the thread's lane scan value X_t, and in
// every warp the warp scan over the tile's warp totals (lane w ends with W_w; each warp takes the same steps,
// so the same bits). One barrier per tile: the warp totals of consecutive tiles go to alternate buffers of
// `totals`, so a tile's stores never meet the previous tile's reads.
template <class A>
struct TileScan {
    A lane;   // X_t
    A warps;  // W_(lane) of the warp scan
};
template <class Op, class A>
__device__ __forceinline__ TileScan<A> tile_scan(const A (&v)[kPerThread], const TileSpan& s, long long j,
                                                 A (*totals)[kWarps]) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    TileScan<A> r;
    r.lane = lane_scan<Op, A>(values_total<Op>(v, s.count), lane, s.count);
    A* const buf = totals[j & 1];
    if (s.count > 0 && (lane == 31 || (int)threadIdx.x == s.threads - 1)) buf[w] = r.lane;
    __syncthreads();
    r.warps = warp_scan_of<Op, A, kWarps>(buf, lane, s.warps);
    return r;
}

// The chunk path's registers: each thread's values of the chunk's tiles (at most kChunkTiles of them), read
// once, all loads issued before any tile is scanned so that the whole chunk is in flight at once; per tile
// the terms of the thread's prefix that steps 2 and 3 give (the carry, step 7, comes later); and the tiles'
// aggregates, which every thread holds.
template <class A, int kChunkTiles>
struct ChunkValues {
    A v[kChunkTiles][kPerThread];
    A previous_lane[kChunkTiles];  // X_(t-1), the lane scan of the lane before
    A previous_warp[kChunkTiles];  // W_(w-1), the warp scan of the warp before
    A aggregate[kChunkTiles];      // the tile's aggregate: its node of level 0
};

// Pass 1 over a chunk, tiles [j0, j1): each tile's loads, then each tile's steps 1 to 3 and its aggregate
// (step 6: W of its last present warp, shuffled to every lane).
template <class Op, class In, class A, int kChunkTiles, class Io>
__device__ __forceinline__ void chunk_aggregates(const ScanParams& p, const Io& io, long long in_row,
                                                 long long j0, long long j1, A (*totals)[kWarps],
                                                 ChunkValues<A, kChunkTiles>& c) {
    const int w = threadIdx.x >> 5;
    LM_SCAN_UNROLL
    for (int t = 0; t < kChunkTiles; ++t) {
        c.aggregate[t] = A();  // a tile past the row's end has none; its value is never used
        if (j0 + t < j1) {
            const TileSpan s = tile_span(p, j0 + t);
            load_values<In>(p, io, in_row, s.first, s.count, c.v[t]);
        }
    }
    LM_SCAN_UNROLL
    for (int t = 0; t < kChunkTiles; ++t)
        if (j0 + t < j1) {  // the same for the whole block: tile_scan's barrier is reached by every thread
            const long long j = j0 + t;
            const TileSpan s = tile_span(p, j);
            const TileScan<A> ts = tile_scan<Op, A>(c.v[t], s, j, totals);
            c.previous_lane[t] = __shfl_up_sync(0xffffffffu, ts.lane, 1);
            c.previous_warp[t] = __shfl_sync(0xffffffffu, ts.warps, w > 0 ? w - 1 : 0);
            c.aggregate[t] = __shfl_sync(0xffffffffu, ts.warps, s.warps - 1);
        }
}

// log2 of a power of two.
template <int N>
struct Log2 {
    static constexpr int value = 1 + Log2<N / 2>::value;
};
template <>
struct Log2<1> {
    static constexpr int value = 0;
};

// The chunk's nodes of levels 0 to chunk_shift (step 7's tree), in every thread's registers: node[k][i] is
// N(k, (b << (chunk_shift - k)) + i) = node[k - 1][2i] + node[k - 1][2i + 1] (a node whose tiles do not all
// exist holds a value never used). Thread 0 stores the chunk's own node, N(chunk_shift, b), where the blocks
// after it read it, when the chunk is whole (a partial one is the row's last, which no chunk waits for).
template <class A, int kChunkTiles>
struct ChunkNodes {
    static constexpr int kLevels = Log2<kChunkTiles>::value;
    A node[kLevels + 1][kChunkTiles];
};
template <class Op, class A, int kChunkTiles>
__device__ __forceinline__ ChunkNodes<A, kChunkTiles> chunk_nodes(const ScanParams& p, long long row,
                                                                  long long b,
                                                                  const A (&aggregate)[kChunkTiles]) {
    using Nodes = ChunkNodes<A, kChunkTiles>;
    Nodes n;
    LM_SCAN_UNROLL
    for (int i = 0; i < kChunkTiles; ++i) n.node[0][i] = aggregate[i];
    LM_SCAN_UNROLL
    for (int k = 1; k <= Nodes::kLevels; ++k) {
        LM_SCAN_UNROLL
        for (int i = 0; i < (kChunkTiles >> k); ++i)
            n.node[k][i] = Op::template combine<A>(n.node[k - 1][2 * i], n.node[k - 1][2 * i + 1]);
    }
    // N(chunk_shift, b), chosen from the top down (a test of k == chunk_shift would let the compiler index
    // the levels by chunk_shift, and keep them in local memory).
    A own = n.node[Nodes::kLevels][0];
    LM_SCAN_UNROLL
    for (int k = Nodes::kLevels - 1; k >= 0; --k)
        if (p.chunk_shift <= k) own = n.node[k][0];
    if (threadIdx.x == 0 && b < (p.tiles >> p.chunk_shift))
        static_cast<A*>(p.nodes)[node_position(p, row, p.chunk_shift, b)] = own;
    return n;
}

// The hierarchy over a row's chunks (scan_core.hpp's chunk_levels, level_units, row_words): a whole unit of
// level h (every tile of it exists) is the contract's node N(chunk_shift + 5h, its index). The carry of a
// chunk folds, for each level, the nodes of its digits over the units before it among its 32 siblings.
// Where a row's flags of level h, and its arrival counts of level h >= 1, start in ScanParams::counters.
__device__ __forceinline__ unsigned* unit_flags(const ScanParams& p, long long row, long long chunks, int h) {
    unsigned* f = p.counters + 2 + row * scanc::row_words(chunks);
    for (int q = 0; q < h; ++q) f += scanc::level_units(chunks, q);
    return f;
}
__device__ __forceinline__ unsigned* unit_arrivals(const ScanParams& p, long long row, long long chunks,
                                                   int h) {
    unsigned* f = unit_flags(p, row, chunks, scanc::chunk_levels(chunks));
    for (int q = 1; q < h; ++q) f += scanc::level_units(chunks, q);
    return f;
}
// Unit i of level h, once published.
template <class A>
__device__ __forceinline__ A await_unit(const ScanParams& p, long long row, long long chunks, int h,
                                        long long i) {
    const unsigned* flag = unit_flags(p, row, chunks, h) + i;
    while (load_acquire(flag) == 0u) poll_pause();
    return __ldcg(static_cast<const A*>(p.nodes) + node_position(p, row, p.chunk_shift + kRadixBits * h, i));
}

// Warp 0 of chunk b, after chunk_nodes: the chunk's node published (when the row has several chunks and this
// one is whole: a partial one is the row's last, which no chunk waits for); then, level by level, its arrival
// counted in the unit above, and the block whose part arrives last of the 32 builds that unit's node from
// them (all published, so it waits for nothing) and publishes it.
template <class Op, class A>
__device__ __forceinline__ void publish_units(const ScanParams& p, long long row, long long b,
                                              long long chunks, int lane) {
    const int levels = scanc::chunk_levels(chunks);
    if (levels == 0 || b >= (p.tiles >> p.chunk_shift)) return;  // a row of one chunk has no flags
    // Thread 0 stored the chunk's node (chunk_nodes), so its release orders that store before the flag's.
    if (lane == 0) store_release(unit_flags(p, row, chunks, 0) + b, 1u);
    long long u = b;
    for (int h = 0; h + 1 < levels; ++h) {
        unsigned arrived = 0;
        if (lane == 0) arrived = atomicAdd(unit_arrivals(p, row, chunks, h + 1) + (u >> kRadixBits), 1u);
        if (__shfl_sync(0xffffffffu, arrived, 0) != 31u) return;
        u >>= kRadixBits;
        A v = await_unit<A>(p, row, chunks, h, (u << kRadixBits) + lane);
        LM_SCAN_UNROLL
        for (int d = 1; d < 32; d *= 2) {  // the pairwise tree over the 32 parts: N(k, i) = N(2i) + N(2i + 1)
            const A right = __shfl_down_sync(0xffffffffu, v, d);
            if ((lane & (2 * d - 1)) == 0) v = Op::template combine<A>(v, right);
        }
        if (lane == 0) {
            static_cast<A*>(p.nodes)[node_position(p, row, p.chunk_shift + kRadixBits * (h + 1), u)] = v;
            store_release(unit_flags(p, row, chunks, h + 1) + u, 1u);
        }
    }
}

// Warp 0 of chunk b: its carry, the contract's fold of the digits of its tiles' indices from chunk_shift up,
// highest first. For each level, top down: lane s awaits the s-th of the units before b's among its 32
// siblings (`d` of them), the pairwise tree over them is built by shuffles, and the node of each digit of d
// (the units [d with that digit and the lower ones cleared, + 2^digit)) is folded, highest first.
template <class Op, class A>
__device__ __forceinline__ Maybe<A> chunk_carry(const ScanParams& p, long long row, long long b,
                                                long long chunks, int lane) {
    Maybe<A> carry = {A(), false};
    for (int h = scanc::chunk_levels(chunks) - 1; h >= 0; --h) {
        const int d = (int)((b >> (kRadixBits * h)) & 31);
        if (d == 0) continue;
        const long long first = (b >> (kRadixBits * (h + 1))) << kRadixBits;
        A v = lane < d ? await_unit<A>(p, row, chunks, h, first + lane) : A();
        A node[kRadixBits];
        LM_SCAN_UNROLL
        for (int q = 0; q < kRadixBits; ++q) {
            if (q > 0) {  // level q: lane l (a multiple of 2^q) holds units [l, l + 2^q) where they are all
                          // before
                const A right = __shfl_down_sync(0xffffffffu, v, 1 << (q - 1));
                if ((lane & ((1 << q) - 1)) == 0 && lane + (1 << q) <= d)
                    v = Op::template combine<A>(v, right);
            }
            node[q] = __shfl_sync(0xffffffffu, v, (d >> (q + 1)) << (q + 1));
        }
        LM_SCAN_UNROLL
        for (int q = kRadixBits - 1; q >= 0; --q)
            if ((d >> q) & 1) fold<Op>(carry, node[q]);
    }
    return carry;
}

// The carry of the chunk's tile t (step 7): the chunk's carry `high`, then the nodes of t's digits below
// chunk_shift, highest first (digit k's node spans the 2^k tiles before t's half of its run of 2^(k + 1)).
// Tile 0 of a row has none; its value is never used.
template <class Op, class A, int kChunkTiles>
__device__ __forceinline__ A tile_carry(const ScanParams& p, int t, const Maybe<A>& high,
                                        const ChunkNodes<A, kChunkTiles>& n) {
    Maybe<A> carry = high;
    LM_SCAN_UNROLL
    for (int k = ChunkNodes<A, kChunkTiles>::kLevels - 1; k >= 0; --k)
        if (k < p.chunk_shift && ((t >> k) & 1)) fold<Op>(carry, n.node[k][(t >> (k + 1)) << 1]);
    return carry.v;
}

// Pass 2 over a chunk: each tile's steps 4 and 5 from its registers and its carry, then its stores.
template <class Op, class A, class Out, bool kExclusive, int kChunkTiles, class Io>
__device__ __forceinline__ void chunk_scans(const ScanParams& p, const Io& io, long long out_row,
                                            long long j0, long long j1, const Maybe<A>& high,
                                            const ChunkNodes<A, kChunkTiles>& nodes,
                                            ChunkValues<A, kChunkTiles>& c) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    LM_SCAN_UNROLL
    for (int t = 0; t < kChunkTiles; ++t) {
        const long long j = j0 + t;
        const TileSpan s = tile_span(p, j);
        if (j >= j1 || s.count == 0) continue;
        Maybe<A> prefix = {tile_carry<Op>(p, t, high, nodes), j > 0};
        if (w > 0) fold<Op>(prefix, c.previous_warp[t]);
        if (lane > 0) fold<Op>(prefix, c.previous_lane[t]);
        thread_outputs<Op, A>(prefix, s.count, c.v[t]);
        store_all<A, Out, kExclusive>(p, io, out_row, c.v[t], s.first, s.count);
    }
}

// A block of the chunk path: its ticket's chunk read once into registers, its tiles' aggregates, its carry,
// then its tiles' scans; the last block to finish sets the counters and flags back to zero.
template <class Op, class In, class A, class Out, bool kExclusive, int kChunkTiles, class Io>
__device__ __forceinline__ void scan_chunks(const ScanParams& p, const Io& io) {
    __shared__ unsigned ticket;
    __shared__ int last;
    __shared__ A totals[2][kWarps];
    __shared__ A high_value;
    __shared__ int high_present;
    if (threadIdx.x == 0) ticket = atomicAdd(p.counters, 1u);
    __syncthreads();
    const int c = p.chunk_shift;
    const long long chunks = scanc::row_chunks(p.tiles, c);
    const long long row = (long long)ticket / chunks, b = (long long)ticket % chunks;
    const long long j0 = b << c, j1 = j0 + (1ll << c) < p.tiles ? j0 + (1ll << c) : p.tiles;
    long long in_row, out_row;
    row_offsets(p, row, in_row, out_row);
    ChunkValues<A, kChunkTiles> values;
    chunk_aggregates<Op, In, A>(p, io, in_row, j0, j1, totals, values);
    const ChunkNodes<A, kChunkTiles> nodes = chunk_nodes<Op, A>(p, row, b, values.aggregate);
    if (threadIdx.x < 32) {
        publish_units<Op, A>(p, row, b, chunks, (int)threadIdx.x);
        const Maybe<A> carry = chunk_carry<Op, A>(p, row, b, chunks, (int)threadIdx.x);
        if (threadIdx.x == 0) {
            high_value = carry.v;
            high_present = carry.has ? 1 : 0;
        }
    }
    __syncthreads();
    chunk_scans<Op, A, Out, kExclusive>(p, io, out_row, j0, j1, Maybe<A>{high_value, high_present != 0},
                                        nodes, values);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(p.counters + 1, 1u) == gridDim.x - 1 ? 1 : 0;
    }
    __syncthreads();
    if (last) {
        __threadfence();
        const long long words = p.rows * scanc::row_words(chunks);
        for (long long i = threadIdx.x; i < words; i += kThreads) p.counters[2 + i] = 0u;
        if (threadIdx.x == 0) {
            p.counters[0] = 0u;
            p.counters[1] = 0u;
        }
    }
}

// The kernel: the tile path takes rows from blockIdx.x * (8 / kRowWarps) on; the chunk path (kTree, the
// contract's tree) a chunk of at most kChunkTiles tiles per block.
template <class Op, class In, class A, class Out, bool kExclusive, bool kTree, int kRowWarps = kWarps,
          int kChunkTiles = 1, class Io = MemoryIo>
__device__ __forceinline__ void scan_kernel(const ScanParams& p, const Io& io = Io()) {
    if constexpr (!kTree)
        scan_tile<Op, In, A, Out, kExclusive, kRowWarps>(p, io, (long long)blockIdx.x * (kWarps / kRowWarps));
    else
        scan_chunks<Op, In, A, Out, kExclusive, kChunkTiles>(p, io);
}

}  // namespace scan
}  // namespace lm
