// The device code of scatter kernels (Family::Scatter; docs/semantics.md, "Scatters"), pasted after the
// prelude into every scatter kernel's source by codegen/embed_scatter.cmake (never into other kernels). The
// emitted entry point (codegen/src/cuda/emit_scatter.cpp) instantiates scatter_kernel with its plan's path
// and types.
//
// A block of 256 threads owns one column (the coordinates off the axis) at a time: blocks take columns
// blockIdx.x, + gridDim.x, ..., each with its own workspace (`work`, p.work_words words per block), so the
// order of a column's work is the block's alone. Paths:
//   Last (scatter): each target's largest position by integer atomicMax, then one copy per target.
//   Sorted (scatter_add, the contract's order): the column's positions, in tiles of 256 in ascending order,
//     get their rank among the positions of their target: a bitonic sort of the tile's (target, position)
//     keys in shared memory, a max-scan finding each run's first key, the counts of earlier tiles added
//     (keys are unique, so the result does not depend on the sort). Exclusive scans of the counts and of the
//     chunk counts (ceil(count / 256)) give each target's start and its first chunk; the positions are
//     placed target after target in ascending position; a thread per chunk of 256 sums its values in
//     sequence from -0.0 (0 for integers); a thread per target combines its chunk partials by the pairwise
//     tree and adds x's element once. A target without values keeps x's element, bit for bit.
//   Atomic (scatter_add, opt-in, float32 and float64): x copied, then atomicAdd of every value; the order of
//     the additions is the hardware's, so not reproducible.
// An index outside [-n, n) in checked mode is recorded in the runtime's error word (the first one to arrive)
// and its value is skipped.

namespace lm {

// LOOM_SCATTER_PARAMS

namespace scatter {

constexpr int kThreads = 256;
constexpr int kChunk = 256;  // kColumnChunk
constexpr long long kNoKey = -1;

// An element as the accumulator: halves exactly as float32, bool and integers as int64 (unsigned: wrapping).
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
__device__ __forceinline__ unsigned long long widen(bool x) {
    return x ? 1ull : 0ull;
}
__device__ __forceinline__ unsigned long long widen(signed char x) {
    return (unsigned long long)(long long)x;
}
__device__ __forceinline__ unsigned long long widen(unsigned char x) {
    return (unsigned long long)x;
}
__device__ __forceinline__ unsigned long long widen(int x) {
    return (unsigned long long)(long long)x;
}
__device__ __forceinline__ unsigned long long widen(long long x) {
    return (unsigned long long)x;
}

// An accumulator as the result's element: halves rounded once, integers modulo 2^bits, bool its truth.
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
__device__ __forceinline__ void narrow(bool* d, unsigned long long r) {
    *d = r != 0;
}
__device__ __forceinline__ void narrow(signed char* d, unsigned long long r) {
    *d = (signed char)r;
}
__device__ __forceinline__ void narrow(unsigned char* d, unsigned long long r) {
    *d = (unsigned char)r;
}
__device__ __forceinline__ void narrow(int* d, unsigned long long r) {
    *d = (int)r;
}
__device__ __forceinline__ void narrow(long long* d, unsigned long long r) {
    *d = (long long)r;
}

// The start of a sum: -0.0 for floats (a sum of only -0.0 is -0.0), 0 for integers.
template <class A>
__device__ __forceinline__ A sum_start() {
    return (A)0;
}
template <>
__device__ __forceinline__ float sum_start<float>() {
    return -0.0f;
}
template <>
__device__ __forceinline__ double sum_start<double>() {
    return -0.0;
}

// The offsets of column `col` in x, the indices, the values and the result.
struct Column {
    long long at[4];
};
__device__ __forceinline__ Column column_of(const ScatterParams& p, long long col) {
    Column c;
    for (int o = 0; o < 4; ++o) c.at[o] = 0;
    for (int a = 5; a >= 0; --a) {
        const long long e = p.col_extent[a];
        const long long i = col % e;
        col /= e;
        for (int o = 0; o < 4; ++o) c.at[o] += i * p.col_stride[o][a];
    }
    return c;
}

// The target of position `pos` of the column: its index normalized (v + n for v in [-n, 0)), clamped in
// Clamp mode; -1 for an index out of range in checked mode, which is recorded in the error word.
template <class I, bool kChecked>
__device__ __forceinline__ long long target_of(const ScatterParams& p, const Column& c, long long pos) {
    const long long v = (long long)static_cast<const I*>(p.idx)[c.at[1] + pos * p.step[1]];
    const long long n = p.extent;
    const long long k = v < 0 ? v + n : v;
    if (k >= 0 && k < n) return k;
    if (!kChecked) return k < 0 ? 0 : n - 1;
    gather_error_word* e = static_cast<gather_error_word*>(p.error_word);
    if (atomicCAS(&e->flag, 0u, 1u) == 0u) {
        e->id = (unsigned int)p.error_id;
        e->value = v;
    }
    return -1;
}

template <class T>
__device__ __forceinline__ void store_all(const ScatterParams& p, const Column& c, long long t, T v) {
    for (int o = 0; o < p.outputs; ++o) static_cast<T*>(p.out[o])[c.at[3] + t * p.step[3]] = v;
}

// scatter: the largest position per target (atomicMax on integers: no order to depend on), then each
// target's value, or x's element where none lands.
template <class T, class I, bool kChecked>
__device__ void last_column(const ScatterParams& p, const Column& c, long long* win) {
    const int tid = (int)threadIdx.x;
    for (long long t = tid; t < p.extent; t += kThreads) win[t] = -1;
    __syncthreads();
    for (long long pos = tid; pos < p.length; pos += kThreads) {
        const long long t = target_of<I, kChecked>(p, c, pos);
        if (t >= 0) atomicMax(&win[t], pos);
    }
    __syncthreads();
    const T* x = static_cast<const T*>(p.x);
    const T* v = static_cast<const T*>(p.values);
    for (long long t = tid; t < p.extent; t += kThreads) {
        const long long w = win[t];
        store_all<T>(p, c, t, w >= 0 ? v[c.at[2] + w * p.step[2]] : x[c.at[0] + t * p.step[0]]);
    }
    __syncthreads();
}

// scatter_add with atomics (float32, float64): x's element, then every value added as it arrives.
template <class T, class I, bool kChecked>
__device__ void atomic_column(const ScatterParams& p, const Column& c) {
    const int tid = (int)threadIdx.x;
    const T* x = static_cast<const T*>(p.x);
    const T* v = static_cast<const T*>(p.values);
    for (long long t = tid; t < p.extent; t += kThreads) store_all<T>(p, c, t, x[c.at[0] + t * p.step[0]]);
    __syncthreads();
    for (long long pos = tid; pos < p.length; pos += kThreads) {
        const long long t = target_of<I, kChecked>(p, c, pos);
        if (t < 0) continue;
        const T value = v[c.at[2] + pos * p.step[2]];
        for (int o = 0; o < p.outputs; ++o)
            atomicAdd(static_cast<T*>(p.out[o]) + c.at[3] + t * p.step[3], value);
    }
    __syncthreads();
}

// Block-wide inclusive scans over s[0, 256) in shared memory (Hillis-Steele: each step reads, then writes).
__device__ __forceinline__ void block_max_scan(int* s) {
    const int tid = (int)threadIdx.x;
    for (int d = 1; d < kThreads; d *= 2) {
        const int v = tid >= d ? max(s[tid], s[tid - d]) : s[tid];
        __syncthreads();
        s[tid] = v;
        __syncthreads();
    }
}
__device__ __forceinline__ void block_sum_scan(long long* s) {
    const int tid = (int)threadIdx.x;
    for (int d = 1; d < kThreads; d *= 2) {
        const long long v = tid >= d ? s[tid] + s[tid - d] : s[tid];
        __syncthreads();
        s[tid] = v;
        __syncthreads();
    }
}

// The Sorted path's workspace of one block (p.work_words words): cnt[n], start[n], cstart[n + 1], rank[m],
// sorted[m], then the chunk partials.
struct SortedWork {
    long long *cnt, *start, *cstart, *rank, *sorted;
    void* partials;
};
__device__ __forceinline__ SortedWork sorted_work(const ScatterParams& p, long long* w) {
    SortedWork r;
    r.cnt = w;
    r.start = r.cnt + p.extent;
    r.cstart = r.start + p.extent;
    r.rank = r.cstart + p.extent + 1;
    r.sorted = r.rank + p.length;
    r.partials = r.sorted + p.length;
    return r;
}

// The placement of a column's positions (the Sorted path's first phases): each position's rank among those
// of its target, each target's count, start and first chunk, and the positions placed target after target in
// ascending order, in the workspace; cstart[n] holds the chunk count.
template <class I, bool kChecked>
__device__ void place_positions(const ScatterParams& p, const Column& c, const SortedWork& w) {
    const int tid = (int)threadIdx.x;
    const long long n = p.extent, m = p.length;
    long long *cnt = w.cnt, *start = w.start, *cstart = w.cstart, *rank = w.rank, *sorted = w.sorted;
    __shared__ long long keys[kThreads];
    __shared__ int heads[kThreads];
    __shared__ long long sums[2][kThreads];
    __shared__ long long carry[2];
    for (long long t = tid; t < n; t += kThreads) cnt[t] = 0;
    __syncthreads();
    // Ranks, a tile of 256 positions at a time in ascending order.
    for (long long base = 0; base < m; base += kThreads) {
        const long long pos = base + tid;
        long long key = kNoKey;
        if (pos < m) {
            const long long t = target_of<I, kChecked>(p, c, pos);
            if (t >= 0)
                key = t * kThreads + tid;
            else
                rank[pos] = -1;
        }
        // Absent keys sort last: compared as unsigned, -1 is the largest.
        keys[tid] = key;
        __syncthreads();
        for (int k = 2; k <= kThreads; k *= 2)
            for (int j = k / 2; j > 0; j /= 2) {
                const int other = tid ^ j;
                if (other > tid) {
                    const unsigned long long a = (unsigned long long)keys[tid],
                                             b = (unsigned long long)keys[other];
                    if ((a > b) == ((tid & k) == 0)) {
                        keys[tid] = (long long)b;
                        keys[other] = (long long)a;
                    }
                }
                __syncthreads();
            }
        const long long mine = keys[tid];
        const long long t = mine / kThreads;
        heads[tid] = tid == 0 || keys[tid - 1] / kThreads != t || keys[tid - 1] == kNoKey ? tid : 0;
        __syncthreads();
        block_max_scan(heads);
        const int first = heads[tid];
        if (mine != kNoKey) rank[base + mine % kThreads] = cnt[t] + (tid - first);
        __syncthreads();
        if (mine != kNoKey &&
            (tid == kThreads - 1 || keys[tid + 1] == kNoKey || keys[tid + 1] / kThreads != t))
            cnt[t] += tid - first + 1;
        __syncthreads();
    }
    // Each target's start and first chunk: exclusive scans of the counts and the chunk counts.
    if (tid == 0) carry[0] = carry[1] = 0;
    __syncthreads();
    for (long long base = 0; base < n; base += kThreads) {
        const long long t = base + tid;
        const long long count = t < n ? cnt[t] : 0;
        sums[0][tid] = count;
        sums[1][tid] = (count + kChunk - 1) / kChunk;
        __syncthreads();
        block_sum_scan(sums[0]);
        block_sum_scan(sums[1]);
        if (t < n) {
            start[t] = carry[0] + sums[0][tid] - count;
            cstart[t] = carry[1] + sums[1][tid] - (count + kChunk - 1) / kChunk;
        }
        __syncthreads();
        if (tid == 0) {
            carry[0] += sums[0][kThreads - 1];
            carry[1] += sums[1][kThreads - 1];
        }
        __syncthreads();
    }
    if (tid == 0) cstart[n] = carry[1];
    // Each target's positions in ascending order.
    for (long long pos = tid; pos < m; pos += kThreads) {
        const long long r = rank[pos];
        if (r < 0) continue;
        const long long v = (long long)static_cast<const I*>(p.idx)[c.at[1] + pos * p.step[1]];
        const long long k = v < 0 ? v + n : v;
        const long long t = k < 0 ? 0 : (k >= n ? n - 1 : k);  // in range, or clamped in Clamp mode
        sorted[start[t] + r] = pos;
    }
    __syncthreads();
}

// scatter_add in the contract's order (the file's comment, Sorted), in the block's workspace `w`. `placed`:
// the block's previous column had the same indices (index_add, or indices broadcast along the columns), so
// the counts, starts, ranks and the placement in the workspace are this column's too: only the sums run
// again.
template <class T, class A, class I, bool kChecked>
__device__ void sorted_column(const ScatterParams& p, const Column& c, const SortedWork& w, bool placed) {
    const int tid = (int)threadIdx.x;
    const long long n = p.extent;
    const long long *cnt = w.cnt, *start = w.start, *cstart = w.cstart, *sorted = w.sorted;
    A* partial = static_cast<A*>(w.partials);
    if (!placed) place_positions<I, kChecked>(p, c, w);
    const long long chunks = cstart[n];
    // A thread per chunk: its target (the last whose first chunk is at most g), its values in sequence.
    const T* v = static_cast<const T*>(p.values);
    for (long long g = tid; g < chunks; g += kThreads) {
        long long lo = 0, hi = n - 1;
        while (lo < hi) {
            const long long mid = (lo + hi + 1) / 2;
            if (cstart[mid] <= g)
                lo = mid;
            else
                hi = mid - 1;
        }
        const long long first = start[lo] + (g - cstart[lo]) * kChunk;
        const long long end = min(start[lo] + cnt[lo], first + kChunk);
        A acc = sum_start<A>();
        for (long long k = first; k < end; ++k) acc = acc + widen(v[c.at[2] + sorted[k] * p.step[2]]);
        partial[g] = acc;
    }
    __syncthreads();
    // A thread per target: the pairwise tree over its chunk partials, then x's element once.
    const T* x = static_cast<const T*>(p.x);
    for (long long t = tid; t < n; t += kThreads) {
        const T xt = x[c.at[0] + t * p.step[0]];
        if (cnt[t] == 0) {
            store_all<T>(p, c, t, xt);
            continue;
        }
        A* q = partial + cstart[t];
        for (long long len = cstart[t + 1] - cstart[t]; len > 1; len = (len + 1) / 2) {
            long long k = 0;
            for (; k + 1 < len; k += 2) q[k / 2] = q[k] + q[k + 1];
            if (k < len) q[k / 2] = q[k];
        }
        T r;
        narrow(&r, widen(xt) + q[0]);
        store_all<T>(p, c, t, r);
    }
    __syncthreads();
}

// kPath: 0 Last, 1 Sorted, 2 Atomic (ScatterPath).
template <int kPath, class T, class A, class I, bool kChecked>
__device__ void scatter_kernel(const ScatterParams& p) {
    long long* w = p.work + (long long)blockIdx.x * p.work_words;
    // Indices that do not move along the columns (index_add's one index for every column): a block places
    // its first column's positions and reuses that placement for the other columns it takes.
    bool shared_index = true;
    for (int a = 0; a < 6; ++a)
        if (p.col_extent[a] > 1 && p.col_stride[1][a] != 0) shared_index = false;
    for (long long col = blockIdx.x; col < p.columns; col += gridDim.x) {
        const Column c = column_of(p, col);
        if constexpr (kPath == 0)
            last_column<T, I, kChecked>(p, c, w);
        else if constexpr (kPath == 1)
            sorted_column<T, A, I, kChecked>(p, c, sorted_work(p, w),
                                             shared_index && col != (long long)blockIdx.x);
        else
            atomic_column<T, I, kChecked>(p, c);
    }
}

}  // namespace scatter
}  // namespace lm
