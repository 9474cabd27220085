// The scan kernels' device code (codegen/src/cuda/scan.cuh) run on host threads, a block at a time in
// launch order: 256 std::threads per block, __syncthreads a barrier of the block, each warp's shuffles an
// exchange between barriers of its 32 threads, the counters and flags std::atomic_ref. Its parameters come
// from the GPU plan and the family's bind, as on a device, so this checks the plan, the binding and the
// kernel's indexing, stores and tree (not the device's memory model) against the reference, bit for bit, on
// all three paths (a warp per row; 2, 4 or 8 warps per row; the chunks of tiles), here where no GPU runs
// them.
#pragma GCC optimize("no-strict-aliasing")  // the kernel moves 16-byte pieces through uint4

#include <doctest/doctest.h>

#include <atomic>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <loom/loom.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernel_host_halves.hpp"
#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/ir/half.hpp"
#include "loom/ir/pass.hpp"
#include "loom/ir/scan_core.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

// ---- what the kernel uses of CUDA and of the prelude, on the host ----
namespace sim {
struct Dim {
    unsigned x = 0;
};
thread_local Dim thread_index, block_index;
Dim grid;
std::barrier<>* block_barrier = nullptr;
std::barrier<>* warp_barriers[8] = {};
alignas(16) unsigned char exchange[8][32][8];  // each warp's shuffle slots
}  // namespace sim

#undef __device__
#undef __forceinline__
#undef __shared__
#undef __align__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) alignas(n)
#define LM_SCAN_UNROLL
#define threadIdx (sim::thread_index)
#define blockIdx (sim::block_index)
#define gridDim (sim::grid)
#define LOOM_SCAN_HOST_SIMULATION 1

#if !LOOM_HAS_CUDA  // with CUDA, <loom/loom.hpp> brings the toolkit's vector types (<vector_types.h>)
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
struct alignas(8) uint2 {
    unsigned x, y;
};
#endif
inline uint4 __ldg(const uint4* p) {
    return *p;
}
inline uint2 __ldg(const uint2* p) {
    return *p;
}
template <class T>
T __ldcg(const T* p) {
    return std::atomic_ref<T>(*const_cast<T*>(p)).load(std::memory_order_relaxed);
}
inline float __uint_as_float(unsigned b) {
    return std::bit_cast<float>(b);
}
inline double __longlong_as_double(long long b) {
    return std::bit_cast<double>(b);
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
    return std::atomic_ref<unsigned>(*p).fetch_add(v);
}
inline void __threadfence() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __syncthreads() {
    sim::block_barrier->arrive_and_wait();
}
// A shuffle: every lane of the warp leaves its value, then reads lane `from(lane)`'s (its own when none).
template <class T>
T shuffle(T v, const std::function<int(int)>& from) {
    static_assert(sizeof(T) <= 8);
    const int lane = static_cast<int>(sim::thread_index.x % 32),
              w = static_cast<int>(sim::thread_index.x / 32);
    std::barrier<>& b = *sim::warp_barriers[w];
    b.arrive_and_wait();
    std::memcpy(sim::exchange[w][lane], &v, sizeof(T));
    b.arrive_and_wait();
    const int src = from(lane);
    T r = v;
    if (src >= 0 && src < 32) std::memcpy(&r, sim::exchange[w][src], sizeof(T));
    b.arrive_and_wait();
    return r;
}
template <class T>
T __shfl_up_sync(unsigned, T v, int d) {
    return shuffle(v, [d](int lane) { return lane - d; });
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned d) {
    return shuffle(v, [d](int lane) { return lane + static_cast<int>(d); });
}
template <class T>
T __shfl_sync(unsigned, T v, int src) {
    return shuffle(v, [src](int) { return src; });
}

namespace lm {
namespace scanc = loom::ir::scanc;
inline int widened(bool x) {
    return x ? 1 : 0;
}
// The prelude's integer maximum and minimum (a compare and a select in PTX): the same values.
template <class T>
T maximum(T a, T b) {
    return a < b ? b : a;
}
template <class T>
T minimum(T a, T b) {
    return b < a ? b : a;
}
#include "../../codegen/src/cuda/scan_params.inc"
namespace scan {
inline unsigned load_acquire(const unsigned* f) {
    return std::atomic_ref<unsigned>(*const_cast<unsigned*>(f)).load(std::memory_order_acquire);
}
inline void store_release(unsigned* f, unsigned v) {
    std::atomic_ref<unsigned>(*f).store(v, std::memory_order_release);
}
inline void poll_pause() {
    std::this_thread::yield();
}
}  // namespace scan
}  // namespace lm

#include "../../codegen/src/cuda/scan.cuh"

#undef threadIdx
#undef blockIdx
#undef gridDim
#undef __shared__
#undef __device__
#undef __forceinline__
#undef __align__

using namespace loom;

namespace {

// An entry point: the kernel of one plan with its Io (scan.cuh), over the parameters' first bytes.
using Entry = std::function<void(const lm::ScanParams&)>;

// The entry point the emitter would instantiate for the plan (emit_scan.cpp), for the dtypes tested here,
// with the Io `io` (lm::scan::MemoryIo: from memory to memory).
template <class Op, class In, class A, class Out, class Io = lm::scan::MemoryIo>
Entry entry_for(const codegen::ScanPlan& p, Io io = Io()) {
    using codegen::ScanPath;
    using P = const lm::ScanParams&;
    if (p.path == ScanPath::Warp)
        return p.exclusive ? Entry([io](P s) { lm::scan::scan_warp_rows<Op, In, A, Out, true, Io>(s, io); })
                           : Entry([io](P s) { lm::scan::scan_warp_rows<Op, In, A, Out, false, Io>(s, io); });
    if (p.path == ScanPath::Tile) {
        if (p.row_warps == 2)
            return p.exclusive ? Entry([io](P s) {
                lm::scan::scan_kernel<Op, In, A, Out, true, false, 2, 1, Io>(s, io);
            })
                               : Entry([io](P s) {
                                     lm::scan::scan_kernel<Op, In, A, Out, false, false, 2, 1, Io>(s, io);
                                 });
        if (p.row_warps == 4)
            return p.exclusive ? Entry([io](P s) {
                lm::scan::scan_kernel<Op, In, A, Out, true, false, 4, 1, Io>(s, io);
            })
                               : Entry([io](P s) {
                                     lm::scan::scan_kernel<Op, In, A, Out, false, false, 4, 1, Io>(s, io);
                                 });
        return p.exclusive
                   ? Entry([io](P s) { lm::scan::scan_kernel<Op, In, A, Out, true, false, 8, 1, Io>(s, io); })
                   : Entry(
                         [io](P s) { lm::scan::scan_kernel<Op, In, A, Out, false, false, 8, 1, Io>(s, io); });
    }
    if (p.chunk_tiles() == 2)
        return p.exclusive
                   ? Entry([io](P s) { lm::scan::scan_kernel<Op, In, A, Out, true, true, 8, 2, Io>(s, io); })
                   : Entry(
                         [io](P s) { lm::scan::scan_kernel<Op, In, A, Out, false, true, 8, 2, Io>(s, io); });
    REQUIRE(p.chunk_tiles() == 4);
    return p.exclusive
               ? Entry([io](P s) { lm::scan::scan_kernel<Op, In, A, Out, true, true, 8, 4, Io>(s, io); })
               : Entry([io](P s) { lm::scan::scan_kernel<Op, In, A, Out, false, true, 8, 4, Io>(s, io); });
}

// Runs `body` as block `block` of 256 simulated threads: __syncthreads a barrier of the block, each warp's
// shuffles an exchange among its 32.
void run_block(unsigned block, const std::function<void()>& body) {
    std::barrier<> block_barrier(256);
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    for (int w = 0; w < 8; ++w) {
        warps.push_back(std::make_unique<std::barrier<>>(32));
        sim::warp_barriers[w] = warps.back().get();
    }
    sim::block_barrier = &block_barrier;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 256; ++t)
        threads.emplace_back([&, t] {
            sim::thread_index.x = t;
            sim::block_index.x = block;
            body();
        });
    for (std::thread& t : threads) t.join();
}

// Runs the one scan kernel of `y`'s GPU plan for `device` on host threads, reading `input` (the tensor of y's
// one input, a view or not) and writing a new contiguous output; checks that the counters are left zero.
template <class EntryOf>
Tensor run_simulated(const Array& y, const Tensor& input, EntryOf entry_of,
                     const codegen::DeviceInfo& device = codegen::DeviceInfo::h200()) {
    const codegen::FusionPlan plan =
        gpu::plan_bound(ir::run_pipeline({y.node()}, ir::standard_passes()), device, {}, "", nullptr, {});
    REQUIRE(plan.kernels.size() == 1);
    const auto& s = std::get<codegen::PlannedScan>(plan.kernels[0].schedule);
    Tensor out = Tensor::host(y.shape(), y.dtype());
    testing::poison(out);
    std::vector<const void*> ins;  // the operand's input, or the prologue's; the epilogue's placeholder null
    for (const ir::Node* in : s.inputs)
        ins.push_back(in == s.accumulators.get() || in == s.reduced.get() ? nullptr : input.data());
    void* outs[] = {out.data()};
    const codegen::KernelPointers kp{ins, outs};
    const codegen::LaunchNeeds needs = codegen::GpuFamily<codegen::PlannedScan>::needs(s, kp);
    // A canary word past the counters the family asked for: the kernel must not touch it.
    std::vector<unsigned> counters(static_cast<std::size_t>(needs.counters) + 1, 0u);
    counters.back() = 0xC0FFEEu;
    std::vector<std::vector<double>> workspaces;
    std::vector<void*> workspace_pointers;
    for (std::size_t bytes : needs.workspaces) {
        workspaces.emplace_back(bytes / 8 + 1);
        workspace_pointers.push_back(workspaces.back().data());
    }
    const codegen::LaunchScratch scratch{needs.counters == 0 ? nullptr : counters.data(), workspace_pointers};
    std::vector<std::byte> params(needs.param_bytes);
    const codegen::BoundLaunch b = codegen::GpuFamily<codegen::PlannedScan>::bind(s, kp, scratch, params);
    lm::ScanParams sp;
    REQUIRE(params.size() == codegen::scan_param_layout(s.plan).size);
    REQUIRE(params.size() >= sizeof sp);
    std::memcpy(&sp, params.data(), sizeof sp);
    REQUIRE((b.config.grid_x == 0 || b.config.block_x == 256));
    const Entry entry = entry_of(s.plan, out);
    sim::grid.x = b.config.grid_x;
    for (unsigned block = 0; block < b.config.grid_x; ++block)  // launch order
        run_block(block, [&] { entry(sp); });
    CHECK_MESSAGE(counters.back() == 0xC0FFEEu, "the kernel writes no counter past those it asked for");
    counters.pop_back();
    bool zero = true;
    for (unsigned c : counters) zero = zero && c == 0u;
    CHECK_MESSAGE(zero, "the kernel leaves its counters zero");
    return out;
}

template <class Op, class In, class A, class Out>
void check(const Array& y, const Tensor& input, const std::string& what,
           const codegen::DeviceInfo& device = codegen::DeviceInfo::h200()) {
    const Tensor got = run_simulated(
        y, input, [](const codegen::ScanPlan& p, const Tensor&) { return entry_for<Op, In, A, Out>(p); },
        device);
    const testing::Comparison c =
        testing::compare(got, reference::evaluate(y.node()), testing::Tolerance::exact(), what);
    CHECK_MESSAGE(c.ok, what << ": " << c.message);
}

// The paths: a warp (up to 256), 2, 4 and 8 warps per row, the tree (9 tiles: tile 7 folds 3 digits).
const std::int64_t kLengths[] = {1, 33, 256, 257, 700, 1025, 2048, 2049, 8 * 2048 + 1};

}  // namespace

TEST_CASE("scan kernel (simulated): float32, every op, the three paths, inclusive and exclusive") {
    using namespace lm::scan;
    for (std::int64_t n : kLengths)
        for (bool ex : {false, true}) {
            const Tensor x = testing::random_tensor({2, n}, DType::Float32, static_cast<std::uint64_t>(n));
            const ScanOptions o{.exclusive = ex};
            const std::string w = fmt::format("n={}{}", n, ex ? " exclusive" : "");
            check<Sum, float, float, float>(cumsum(x, 1, o), x, "cumsum " + w);
            if (n > 3000) continue;  // the others on fewer lengths: time
            check<LogAddExp, float, float, float>(logcumsumexp(x, 1, o), x, "logcumsumexp " + w);
            check<Prod, float, float, float>(cumprod(x, 1, o), x, "cumprod " + w);
            check<Max, float, float, float>(cummax(x, 1, o), x, "cummax " + w);
            check<Min, float, float, float>(cummin(x, 1, o), x, "cummin " + w);
        }
}

TEST_CASE("scan kernel (simulated): other dtypes, a non-last axis and views") {
    using namespace lm::scan;
    for (std::int64_t n : {40, 4097}) {  // a warp per row, and the tree over 3 tiles
        const std::string w = fmt::format("n={}", n);
        const Tensor h = testing::random_tensor({2, n}, DType::Float16, 3);
        check<Sum, lm::f16, float, lm::f16>(cumsum(h, 1), h, "cumsum float16 " + w);
        const Tensor i8 = testing::random_tensor({2, n}, DType::Int8, 4, testing::Random::uniform(-100, 100));
        check<Sum, signed char, long long, long long>(cumsum(i8, -1, {.exclusive = true}), i8,
                                                      "cumsum int8 exclusive " + w);
        const Tensor b = testing::random_tensor({2, n}, DType::Bool, 5);
        check<Max, bool, long long, bool>(cummax(b, 1), b, "cummax bool " + w);
        const Tensor d = testing::random_tensor({2, n}, DType::Float64, 6);
        check<LogAddExp, double, double, double>(logcumsumexp(d, 1), d, "logcumsumexp float64 " + w);
    }
    // A non-last axis of a contiguous tensor, and a permuted view (strided loads).
    const Tensor x = testing::random_tensor({3, 2100, 5}, DType::Float32, 7);
    check<Sum, float, float, float>(cumsum(x, 1), x, "cumsum axis 1 of [3, 2100, 5]");
    const Tensor v = x.permute({2, 0, 1});
    check<Sum, float, float, float>(cumsum(v, 2), v, "cumsum of a permuted view");
    check<Min, float, float, float>(cummin(v, 0, {.exclusive = true}), v, "cummin axis 0 of a permuted view");
}

namespace {

// What a fused kernel's emitted Io computes, written out for `cumsum(x * 2) * 3` over a contiguous float32
// x: the prologue's element e is 2 x[e], the epilogue stores 3 times the scan's element e at e.
struct TimesTwoThenThree {
    static constexpr bool kLoads = true;
    static constexpr bool kStores = true;
    static constexpr int kLoadWidth = 0;
    static constexpr int kStoreWidth = 0;
    static constexpr bool kReducesRows = false;
    const float* x;
    float* out;
    float load(long long e) const { return x[e] * 2.0f; }
    void store(long long e, float v) const { out[e] = v * 3.0f; }
};
// Only the prologue: cumsum(x * 2) stored from memory.
struct TimesTwo {
    static constexpr bool kLoads = true;
    static constexpr bool kStores = false;
    static constexpr int kLoadWidth = 0;
    static constexpr int kStoreWidth = 0;
    static constexpr bool kReducesRows = false;
    const float* x;
    float load(long long e) const { return x[e] * 2.0f; }
};
// The same prologue in vectors of 4, as the emitted Io of a prologue with a vector variant; it counts the
// vectors and the single elements it computes, and checks that each vector starts on a multiple of 4.
struct TimesTwoInVectors {
    static constexpr bool kLoads = true;
    static constexpr bool kStores = false;
    static constexpr int kLoadWidth = 4;
    static constexpr int kStoreWidth = 0;
    static constexpr bool kReducesRows = false;
    using Value = float;
    const float* x;
    std::atomic<long long>* vectors;
    std::atomic<long long>* elements;
    std::atomic<long long>* misaligned;
    float load(long long e) const {
        ++*elements;
        return x[e] * 2.0f;
    }
    void load_vector(long long e, float (&r)[4]) const {
        ++*vectors;
        if (e % 4 != 0) ++*misaligned;
        for (int j = 0; j < 4; ++j) r[j] = x[e + j] * 2.0f;
    }
};
// cumsum(x) * 3 with the epilogue in vectors of 4, counted as above.
struct TimesThreeInVectors {
    static constexpr bool kLoads = false;
    static constexpr bool kStores = true;
    static constexpr int kLoadWidth = 0;
    static constexpr int kStoreWidth = 4;
    static constexpr bool kReducesRows = false;
    float* out;
    std::atomic<long long>* vectors;
    std::atomic<long long>* elements;
    std::atomic<long long>* misaligned;
    void store(long long e, float v) const {
        ++*elements;
        out[e] = v * 3.0f;
    }
    void store_vector(long long e, const float (&d)[4]) const {
        ++*vectors;
        if (e % 4 != 0) ++*misaligned;
        for (int j = 0; j < 4; ++j) out[e + j] = d[j] * 3.0f;
    }
};

// What the emitted Io of a row reduction computes, written out for `sum(cumsum(x, 1) * 2, 1) + 1` (kMean:
// `mean`) over float32: the operand of element e is twice the scan's element, each row's output its reduced
// value plus 1.
template <bool kMeanOfRow>
struct DoubledRowsPlusOne {
    static constexpr bool kLoads = false;
    static constexpr bool kStores = false;
    static constexpr int kLoadWidth = 0;
    static constexpr int kStoreWidth = 0;
    static constexpr bool kReducesRows = true;
    static constexpr bool kMean = kMeanOfRow;
    using Reduced = float;
    float* out;
    float operand(long long, float d) const { return d * 2.0f; }
    void store_row(long long row, float r) const { out[row] = r + 1.0f; }
};

}  // namespace

TEST_CASE("scan kernel (simulated): a row reduction after the scan gives the reduction kernel's bits") {
    using namespace lm::scan;
    // Rows of the warp path (1 to 256) and of the tile path's 2 and 4 warps (257 to 1024).
    for (std::int64_t n : {1, 3, 4, 5, 8, 9, 33, 64, 200, 252, 256, 257, 300, 512, 513, 777, 1024})
        for (std::int64_t rows : {1, 3, 17}) {
            const Tensor x =
                testing::random_tensor({rows, n}, DType::Float32, static_cast<std::uint64_t>(n * rows) + 9);
            for (bool mean_of_row : {false, true}) {
                const Array doubled = cumsum(x, 1) * 2.0;
                const Array y = (mean_of_row ? mean(doubled, {1}) : sum(doubled, {1})) + 1.0;
                const std::string w = fmt::format("{} of [{}, {}]", mean_of_row ? "mean" : "sum", rows, n);
                const Tensor got = run_simulated(y, x, [&](const codegen::ScanPlan& p, const Tensor& out) {
                    CHECK(p.row_reduction);
                    CHECK(p.path == (n <= 256 ? codegen::ScanPath::Warp : codegen::ScanPath::Tile));
                    float* o = static_cast<float*>(out.data());
                    return mean_of_row ? entry_for<Sum, float, float, float>(p, DoubledRowsPlusOne<true>{o})
                                       : entry_for<Sum, float, float, float>(p, DoubledRowsPlusOne<false>{o});
                });
                const testing::Comparison c =
                    testing::compare(got, reference::evaluate(y.node()), testing::Tolerance::exact(), w);
                CHECK_MESSAGE(c.ok, w << ": " << c.message);
            }
        }
}

TEST_CASE("scan kernel (simulated): a fused prologue and epilogue index the scan's elements row-major") {
    using namespace lm::scan;
    for (std::int64_t n : {1, 33, 700, 2049, 3 * 2048 + 5})
        for (bool ex : {false, true}) {
            const Tensor x =
                testing::random_tensor({3, n}, DType::Float32, static_cast<std::uint64_t>(n) + 11);
            const std::string w = fmt::format("n={}{}", n, ex ? " exclusive" : "");
            const Array both = cumsum(x * 2.0, 1, {.exclusive = ex}) * 3.0;
            const Tensor got = run_simulated(both, x, [&](const codegen::ScanPlan& p, const Tensor& out) {
                CHECK((p.prologue && p.epilogue));
                return entry_for<Sum, float, float, float>(
                    p,
                    TimesTwoThenThree{static_cast<const float*>(x.data()), static_cast<float*>(out.data())});
            });
            const testing::Comparison c =
                testing::compare(got, reference::evaluate(both.node()), testing::Tolerance::exact(), w);
            CHECK_MESSAGE(c.ok, "cumsum(x * 2) * 3 " << w << ": " << c.message);
            const Array pro = cumsum(x * 2.0, 1, {.exclusive = ex});
            const Tensor got2 = run_simulated(pro, x, [&](const codegen::ScanPlan& p, const Tensor&) {
                CHECK((p.prologue && !p.epilogue));
                return entry_for<Sum, float, float, float>(p, TimesTwo{static_cast<const float*>(x.data())});
            });
            const testing::Comparison c2 =
                testing::compare(got2, reference::evaluate(pro.node()), testing::Tolerance::exact(), w);
            CHECK_MESSAGE(c2.ok, "cumsum(x * 2) " << w << ": " << c2.message);
        }
    // The prologue in vectors of 4: rows whose length is a multiple of 4 take them for every whole thread
    // (the last, partial thread of a row element by element); other lengths, or a scan over axis 0, none.
    for (std::int64_t n : {1, 36, 252, 700, 2048, 2050, 3 * 2048 + 4})
        for (std::int64_t rows : {1, 3}) {
            const Tensor x =
                testing::random_tensor({rows, n}, DType::Float32, static_cast<std::uint64_t>(n) + 5);
            const Array y = cumsum(x * 2.0, 1);
            std::atomic<long long> vectors{0}, elements{0}, misaligned{0};
            const Tensor got = run_simulated(y, x, [&](const codegen::ScanPlan& p, const Tensor&) {
                CHECK(p.prologue_vector_width() == 4);
                return entry_for<Sum, float, float, float>(
                    p,
                    TimesTwoInVectors{static_cast<const float*>(x.data()), &vectors, &elements, &misaligned});
            });
            const std::string w = fmt::format("[{}, {}]", rows, n);
            const testing::Comparison c =
                testing::compare(got, reference::evaluate(y.node()), testing::Tolerance::exact(), w);
            CHECK_MESSAGE(c.ok, "cumsum(x * 2) in vectors " << w << ": " << c.message);
            const bool rows_aligned = rows == 1 || n % 4 == 0;
            const long long whole = rows * (n / 8);  // whole threads of 8 elements
            CHECK_MESSAGE(vectors.load() == (rows_aligned ? 2 * whole : 0), w);
            CHECK_MESSAGE(elements.load() == rows * n - (rows_aligned ? 8 * whole : 0), w);
            CHECK_MESSAGE(misaligned.load() == 0, w);
            // The epilogue in vectors of 4, on the same rows (exclusive scans: element by element).
            for (bool ex : {false, true}) {
                const Array z = cumsum(x, 1, {.exclusive = ex}) * 3.0;
                std::atomic<long long> sv{0}, se{0}, sm{0};
                const Tensor got2 = run_simulated(z, x, [&](const codegen::ScanPlan& p, const Tensor& out) {
                    CHECK(p.epilogue_vector_width() == (ex ? 0 : 4));
                    return entry_for<Sum, float, float, float>(
                        p, TimesThreeInVectors{static_cast<float*>(out.data()), &sv, &se, &sm});
                });
                const std::string w2 = w + (ex ? " exclusive" : "");
                const testing::Comparison c2 =
                    testing::compare(got2, reference::evaluate(z.node()), testing::Tolerance::exact(), w2);
                CHECK_MESSAGE(c2.ok, "cumsum(x) * 3 in vectors " << w2 << ": " << c2.message);
                const bool vectors_used = rows_aligned && !ex;
                CHECK_MESSAGE(sv.load() == (vectors_used ? 2 * whole : 0), w2);
                CHECK_MESSAGE(se.load() == rows * n - (vectors_used ? 8 * whole : 0), w2);
                CHECK_MESSAGE(sm.load() == 0, w2);
            }
        }
    // A scan over axis 0 (rows strided by the row-major layout of the scan's shape).
    const Tensor x = testing::random_tensor({2100, 3}, DType::Float32, 5);
    const Array y = cumsum(x * 2.0, 0) * 3.0;
    const Tensor got = run_simulated(y, x, [&](const codegen::ScanPlan& p, const Tensor& out) {
        return entry_for<Sum, float, float, float>(
            p, TimesTwoThenThree{static_cast<const float*>(x.data()), static_cast<float*>(out.data())});
    });
    const testing::Comparison c =
        testing::compare(got, reference::evaluate(y.node()), testing::Tolerance::exact(), "axis 0");
    CHECK_MESSAGE(c.ok, "cumsum(x * 2, axis 0) * 3: " << c.message);
}

TEST_CASE("scan kernel (simulated): rows of several chunks, the last partial, and units of 32 chunks") {
    using namespace lm::scan;
    // 1, 2 or 10 multiprocessors: a wave of 3, 6 or 30 blocks, so a few tiles make several chunks per row
    // (chunks of 4 float32 tiles, 32 KiB, halved while the blocks are fewer than a wave).
    codegen::DeviceInfo one = codegen::DeviceInfo::h200(), two = one, ten = one;
    one.sm_count = 1;
    two.sm_count = 2;
    ten.sm_count = 10;
    struct Case {
        std::int64_t rows, length;
        const codegen::DeviceInfo* device;
        int chunk_shift;
        std::int64_t chunks;
    };
    const Case cases[] = {
        {1, 3 * 2048 - 7, &one, 0, 3},    // chunks of one tile
        {1, 11 * 2048, &two, 1, 6},       // 2, 2, 2, 2, 2 and 1 tiles
        {1, 16 * 2048 + 3, &two, 1, 9},   //
        {2, 9 * 2048 + 100, &one, 2, 3},  // two rows of 4, 4 and 2 tiles
        {3, 4 * 2048, &two, 1, 2},        //
        {1, 40 * 2048 - 5, &ten, 0, 40},  // a unit of 32 chunks, built by chunk 31, before chunks 32 to 39
        {5, 3 * 2048 + 1, &one, 2, 1},    // rows of one chunk: no flags, no carry
    };
    for (const Case& c : cases) {
        const Tensor x = testing::random_tensor({c.rows, c.length}, DType::Float32,
                                                static_cast<std::uint64_t>(c.length) + 3);
        const codegen::FusionPlan plan = gpu::plan_bound(
            ir::run_pipeline({cumsum(x, 1).node()}, ir::standard_passes()), *c.device, {}, "", nullptr, {});
        const auto& ps = std::get<codegen::PlannedScan>(plan.kernels.at(0).schedule);
        CHECK(ps.plan.path == codegen::ScanPath::Tree);
        CHECK(ps.chunk_shift == c.chunk_shift);
        CHECK(ps.chunks() == c.chunks);
        for (bool ex : {false, true}) {
            const std::string w = fmt::format("[{}, {}]{}", c.rows, c.length, ex ? " exclusive" : "");
            const ScanOptions o{.exclusive = ex};
            check<Sum, float, float, float>(cumsum(x, 1, o), x, "cumsum " + w, *c.device);
            if (c.chunks < 32)
                check<LogAddExp, float, float, float>(logcumsumexp(x, 1, o), x, "logcumsumexp " + w,
                                                      *c.device);
        }
    }
    const Tensor d = testing::random_tensor({1, 16 * 2048 + 3}, DType::Float64, 9);
    check<Sum, double, double, double>(cumsum(d, 1), d, "cumsum float64, 9 chunks", two);
    const Tensor i = testing::random_tensor({1, 16 * 2048 + 3}, DType::Int32, 10);
    check<Prod, int, long long, long long>(cumprod(i, 1, {.exclusive = true}), i, "cumprod int32, 9 chunks",
                                           two);
}

namespace {

// The contract's nodes (docs/semantics.md, "Scans", step 7) over the aggregates `a`: level k holds
// N(i 2^k, 2^k) = N(2i at k - 1) + N(2i + 1 at k - 1) for every i whose tiles all exist.
std::vector<std::vector<float>> contract_levels(const std::vector<float>& a) {
    std::vector<std::vector<float>> levels{a};
    while (levels.back().size() >= 2) {
        const std::vector<float>& below = levels.back();
        std::vector<float> up(below.size() / 2);
        for (std::size_t i = 0; i < up.size(); ++i) up[i] = below[2 * i] + below[2 * i + 1];
        levels.push_back(std::move(up));
    }
    return levels;
}

// The contract's carry of tile j: the nodes of j's binary digits, highest first.
float contract_carry(const std::vector<std::vector<float>>& levels, std::int64_t j) {
    float c = 0.0f;
    bool has = false;
    std::int64_t s = 0;
    for (int k = 62; k >= 0; --k)
        if ((j >> k) & 1) {
            const float n = levels[static_cast<std::size_t>(k)][static_cast<std::size_t>(s >> k)];
            c = has ? c + n : n;
            has = true;
            s += std::int64_t{1} << k;
        }
    return c;
}

}  // namespace

// The carry side of a chunk, for tiles far past the kernel tests above: chunk_nodes, then warp 0's
// publish_units and chunk_carry, then tile_carry, of one block, for chunks of 4 tiles of a row of 2^21 + 77
// tiles (524,308 chunks, the last partial: four levels of units of 32), with the counters and nodes as the
// blocks of smaller tickets leave them. The chunk's nodes, the flags it sets, the nodes of the units it
// completes and its tiles' carries must be the contract's, bit for bit; aggregates of mixed magnitudes make
// every other order of additions give other bits.
TEST_CASE("scan kernel (simulated): a chunk's nodes, units and tiles' carries for rows of 2^21 tiles") {
    const std::int64_t tiles = (std::int64_t{1} << 21) + 77;
    const int shift = 2;
    const std::int64_t chunks = (tiles + (1 << shift) - 1) >> shift;
    std::vector<float> a(static_cast<std::size_t>(tiles));
    std::uint64_t state = 12345;
    for (float& v : a) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const int e = static_cast<int>((state >> 33) % 40) - 20;
        v = std::ldexp(static_cast<float>((state >> 40) % 100000) / 100000.0f - 0.3f, e);
    }
    const std::vector<std::vector<float>> levels = contract_levels(a);
    lm::ScanParams sp{};
    sp.rows = 1;
    sp.tiles = tiles;
    sp.chunk_shift = shift;
    sp.row_nodes = loom::ir::scanc::row_nodes(tiles);
    const int unit_levels = lm::scanc::chunk_levels(chunks);
    REQUIRE(unit_levels == 4);
    std::vector<float> nodes(static_cast<std::size_t>(sp.row_nodes));
    std::vector<unsigned> counters(static_cast<std::size_t>(2 + lm::scanc::row_words(chunks)));
    sp.counters = counters.data();
    sp.nodes = nodes.data();
    auto position = [&](int k, std::int64_t i) {
        return static_cast<std::size_t>(lm::scan::node_position(sp, 0, k, i));
    };
    auto contract = [&](int k, std::int64_t i) {
        return levels[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)];
    };
    auto same = [](float x, float y) {
        return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
    };
    std::vector<std::int64_t> bs = {0,    1,     2,     31,    32,     33,     63,     1023,  1024,
                                    1025, 32767, 32768, 33791, 524287, 524288, 524306, 524307};
    for (int r = 0; r < 12; ++r) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        bs.push_back(static_cast<std::int64_t>((state >> 20) % static_cast<std::uint64_t>(chunks)));
    }
    for (std::int64_t b : bs) {
        INFO("chunk " << b);
        // As the blocks before b leave them: levels 0 to `shift` but chunk b's above level 0; the nodes and
        // flags of the whole units before b; the arrival counts of the units that hold b.
        std::fill(nodes.begin(), nodes.end(), std::nanf(""));
        std::fill(counters.begin(), counters.end(), 0u);
        for (int k = 0; k <= shift; ++k)
            for (std::int64_t i = 0; i < (tiles >> k); ++i)
                if (k == 0 || (i << k >> shift) != b) nodes[position(k, i)] = contract(k, i);
        for (int h = 0; h < unit_levels; ++h) {
            const int k = shift + lm::scan::kRadixBits * h;
            unsigned* flags = lm::scan::unit_flags(sp, 0, chunks, h);
            for (std::int64_t u = 0; ((u + 1) << (lm::scan::kRadixBits * h)) <= b; ++u) {
                if (h > 0) nodes[position(k, u)] = contract(k, u);
                flags[u] = 1u;
            }
            if (h > 0)
                lm::scan::unit_arrivals(sp, 0, chunks, h)[b >> (lm::scan::kRadixBits * h)] =
                    static_cast<unsigned>((b >> (lm::scan::kRadixBits * (h - 1))) & 31);
        }
        const std::int64_t j0 = b << shift, j1 = std::min(j0 + (std::int64_t{1} << shift), tiles);
        lm::scan::Maybe<float> high{};
        float aggregate[4];  // as every thread holds them after pass 1 (a tile past the row's end: none)
        for (int t = 0; t < 4; ++t) aggregate[t] = j0 + t < j1 ? contract(0, j0 + t) : 0.0f;
        lm::scan::ChunkNodes<float, 4> chunk{};
        std::vector<float> carries(4, std::nanf(""));
        run_block(0, [&] {
            const lm::scan::ChunkNodes<float, 4> n =
                lm::scan::chunk_nodes<lm::scan::Sum, float>(sp, 0, b, aggregate);
            if (sim::thread_index.x < 32) {
                const int lane = static_cast<int>(sim::thread_index.x);
                lm::scan::publish_units<lm::scan::Sum, float>(sp, 0, b, chunks, lane);
                const lm::scan::Maybe<float> c =
                    lm::scan::chunk_carry<lm::scan::Sum, float>(sp, 0, b, chunks, lane);
                if (lane == 0) high = c;
            }
            sim::block_barrier->arrive_and_wait();
            if (sim::thread_index.x == 0) {
                chunk = n;
                for (int t = 0; t < 4; ++t)
                    carries[static_cast<std::size_t>(t)] =
                        lm::scan::tile_carry<lm::scan::Sum>(sp, t, high, n);
            }
        });
        bool nodes_ok = true, carries_ok = true;
        for (int k = 1; k <= shift; ++k)
            for (std::int64_t i = j0 >> k; i < std::min(j1 >> k, tiles >> k); ++i)
                nodes_ok = nodes_ok && same(chunk.node[k][i - (j0 >> k)], contract(k, i));
        CHECK(nodes_ok);
        // The chunk's own node, stored for the chunks after it when the chunk is whole.
        const bool whole_chunk = b < (tiles >> shift);
        CHECK(same(nodes[position(shift, b)], whole_chunk ? contract(shift, b) : std::nanf("")));
        // The chunk's flag, and the units it completes (the last of their 32 parts): their nodes and flags.
        const bool whole = b < (tiles >> shift);
        CHECK(lm::scan::unit_flags(sp, 0, chunks, 0)[b] == (whole ? 1u : 0u));
        bool last = whole;
        for (int h = 1; h < unit_levels; ++h) {
            last = last && ((b >> (lm::scan::kRadixBits * (h - 1))) & 31) == 31;
            const std::int64_t u = b >> (lm::scan::kRadixBits * h);
            const int k = shift + lm::scan::kRadixBits * h;
            CHECK(lm::scan::unit_flags(sp, 0, chunks, h)[u] == (last ? 1u : 0u));
            if (last) CHECK(same(nodes[position(k, u)], contract(k, u)));
        }
        for (std::int64_t j = std::max<std::int64_t>(j0, 1); j < j1; ++j)
            carries_ok =
                carries_ok && same(carries[static_cast<std::size_t>(j - j0)], contract_carry(levels, j));
        CHECK(carries_ok);
    }
}
