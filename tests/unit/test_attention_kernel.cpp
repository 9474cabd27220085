// The attention kernels' CUDA-core device code (lm::att::attention_simt, codegen/src/cuda/attention.cuh) run
// on host threads, a block at a time in launch order: 128 std::threads per block, __syncthreads a barrier of
// the block, each warp's shuffles an exchange between barriers of its 32 threads, the split counters
// std::atomic_ref, the float32 exp the reference's own (loom/ir/exp_core.hpp). Its parameters come from the
// GPU plan and the family's bind, as on a device, so this checks the plan, the binding, the kernel's
// indexing, masks, online softmax and the split keys' pairwise tree (not the device's memory model) against
// the reference, bit for bit: 64 queries per block, decoding's 8 per block with and without split keys,
// float32, float16 and bfloat16, causal masks of both alignments, biases with masked keys, rows and chunks,
// grouped heads, and 16-byte and element loads; here where no GPU runs them. The tensor-core kernel
// (attention_mma) is left out: inline PTX (LOOM_ATTENTION_HOST_SIMULATION).
#pragma GCC optimize("no-strict-aliasing")  // the kernel moves 16-byte pieces through float4 and lm::vec

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <loom/loom.hpp>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "kernel_host_halves.hpp"
#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/exp_core.hpp"
#include "loom/ir/half.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

// ---- what the kernel uses of CUDA and of the prelude, on the host ----
// Internal linkage throughout: the scan and scatter kernels' host runs define functions of the same names.
namespace {
namespace attention_sim {
constexpr int kThreads = 128;  // lm::att::kThreads
constexpr int kWarps = kThreads / 32;
struct Dim {
    unsigned x = 0;
};
thread_local Dim thread_index, block_index;
std::barrier<>* block_barrier = nullptr;
std::barrier<>* warp_barriers[kWarps] = {};
// Each warp's shuffle slots, two that alternate: a lane writes a slot again two shuffles later, after the
// barrier of the shuffle between, which every lane passes only once it has read the slot.
alignas(16) unsigned char exchange[kWarps][2][32][8];
thread_local unsigned shuffles = 0;  // this thread's shuffles so far (threads are new for every block)
}  // namespace attention_sim
}  // namespace

#undef __device__
#undef __forceinline__
#undef __shared__
#define __device__
#define __forceinline__ inline
// Blocks run one at a time, so a static serves as the one block's shared variable.
#define __shared__ static
#define threadIdx (attention_sim::thread_index)
#define blockIdx (attention_sim::block_index)
#define LOOM_ATTENTION_HOST_SIMULATION 1

#if !LOOM_HAS_CUDA  // with CUDA, <loom/loom.hpp> brings the toolkit's vector types (<vector_types.h>)
struct alignas(16) float4 {
    float x, y, z, w;
};
#endif

namespace {
inline void __syncthreads() {
    attention_sim::block_barrier->arrive_and_wait();
}
// A row group's probabilities are read by the other lanes of its warp: a barrier of the warp's 32 threads.
inline void __syncwarp(unsigned = 0xffffffffu) {
    attention_sim::warp_barriers[attention_sim::thread_index.x / 32]->arrive_and_wait();
}
// A butterfly shuffle: every lane of the warp leaves its value, then reads lane `lane ^ lane_mask`'s.
template <class T>
T __shfl_xor_sync(unsigned, T v, int lane_mask) {
    static_assert(sizeof(T) <= 8);
    const unsigned lane = attention_sim::thread_index.x % 32, w = attention_sim::thread_index.x / 32;
    const unsigned slot = attention_sim::shuffles++ % 2;
    std::memcpy(attention_sim::exchange[w][slot][lane], &v, sizeof(T));
    attention_sim::warp_barriers[w]->arrive_and_wait();
    T r;
    std::memcpy(&r, attention_sim::exchange[w][slot][lane ^ static_cast<unsigned>(lane_mask)], sizeof(T));
    return r;
}
// Loom builds with -ffp-contract=off (loom_fp_contract): each operator is one rounding, as the intrinsics.
inline float __fmaf_rn(float a, float b, float c) {
    return std::fma(a, b, c);
}
inline float __fmul_rn(float a, float b) {
    return a * b;
}
inline float __fadd_rn(float a, float b) {
    return a + b;
}
inline float __fsub_rn(float a, float b) {
    return a - b;
}
inline float __fdiv_rn(float a, float b) {
    return a / b;
}
inline float __int_as_float(int b) {
    return std::bit_cast<float>(b);
}
inline unsigned __float_as_uint(float x) {
    return std::bit_cast<unsigned>(x);
}
inline float __uint_as_float(unsigned b) {
    return std::bit_cast<float>(b);
}
inline long long min(long long a, long long b) {
    return std::min(a, b);
}
inline long long max(long long a, long long b) {
    return std::max(a, b);
}
template <class T>
T __ldcg(const T* p) {
    return std::atomic_ref<T>(*const_cast<T*>(p)).load(std::memory_order_relaxed);
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
    return std::atomic_ref<unsigned>(*p).fetch_add(v);
}
inline void __threadfence() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
}  // namespace

namespace lm {
namespace expc = loom::ir::expc;  // the prelude's lm::expc: the same source (LOOM_EXP_CORE)
#include "../../codegen/src/cuda/attention_params.inc"
namespace {
// The prelude's (codegen/src/cuda/prelude.cuh).
inline float to_reg(float x) {
    return x;
}
template <class T, int N>
struct alignas(sizeof(T) * N) vec {
    T v[N];
};
template <class T, int N>
vec<T, N> load_vec(const T* p) {
    return *reinterpret_cast<const vec<T, N>*>(p);
}
inline bool arrive(unsigned int* counter, unsigned int add, unsigned int total) {
    const bool last = atomicAdd(counter, add) + add == total;
    if (last) std::atomic_ref<unsigned>(*counter).store(0u);
    return last;
}
}  // namespace
}  // namespace lm

// attention.cuh, whose line "// LOOM_ATTENTION_PARAMS" stays a comment here (the struct is declared above).
// Its `#pragma unroll` lines are NVRTC's: tests/CMakeLists.txt compiles this file with -Wno-unknown-pragmas.
#include "../../codegen/src/cuda/attention.cuh"

#undef threadIdx
#undef blockIdx
#undef __shared__
#undef __device__
#undef __forceinline__

static_assert(lm::att::kThreads == attention_sim::kThreads);

using namespace loom;

namespace {

// An instantiation of attention_simt: the template arguments emit_attention.cpp writes for a plan.
template <class T, int D, bool kCausal, bool kBias, int R, bool kSplit>
struct Simt {
    static constexpr std::size_t kSharedBytes = sizeof(float) * lm::att::SimtShape<D, R>::kFloats;
    static void run(const lm::AttentionParams& p, float* smem) {
        lm::att::attention_simt<T, D, kCausal, kBias, R, kSplit>(p, smem);
    }
    // The entry point's call in the emitted kernel.
    static std::string call() {
        const char* type = std::is_same_v<T, float>     ? "float"
                           : std::is_same_v<T, lm::f16> ? "lm::f16"
                                                        : "lm::bf16";
        return fmt::format("lm::att::attention_simt<{}, {}, {}, {}, {}, {}>(p, smem);", type, D, kCausal,
                           kBias, R, kSplit);
    }
};

// Runs `y`'s one attention kernel with the instantiation K on host threads, `launches` times with the same
// counters and workspace (each launch into a freshly poisoned output), reading `tensors` (those y's inputs
// are bound to, views or not); checks that the emitted kernel calls K, that the shared memory is K's, and
// that the counters are zero after every launch. Returns each launch's output.
template <class K>
std::vector<Tensor> run_simulated(const Array& y, const std::vector<Tensor>& tensors, int launches) {
    const Options cores{.product_path = ProductPath::CudaCores};  // float16 and bfloat16 of 64 queries too
    const codegen::FusionPlan plan = gpu::plan_bound(ir::run_pipeline({y.node()}, ir::standard_passes()),
                                                     codegen::DeviceInfo::h200(), cores, "", nullptr, {});
    REQUIRE(plan.kernels.size() == 1);
    const auto& s = std::get<codegen::PlannedAttention>(plan.kernels[0].schedule);
    REQUIRE(s.plan.path == codegen::AttentionPath::Simt);
    const std::vector<codegen::KernelSource> sources = gpu::emit_kernels(plan);
    REQUIRE(sources.size() == 1);
    const std::string& kernel = sources[0].kernel;
    REQUIRE_MESSAGE(kernel.find(K::call()) != std::string::npos, K::call() << " in\n" << kernel);
    std::vector<const void*> ins;
    for (const ir::Node* input : s.inputs) {
        const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const Tensor& t) {
            return t.impl().get() == input->payload().get();
        });
        REQUIRE(it != tensors.end());
        ins.push_back(it->data());
    }
    Tensor out = Tensor::host(y.shape(), y.dtype());
    void* outs[] = {out.data()};
    const codegen::KernelPointers kp{ins, outs};
    const codegen::LaunchNeeds needs = codegen::GpuFamily<codegen::PlannedAttention>::needs(s, kp);
    std::vector<unsigned> counters(static_cast<std::size_t>(needs.counters), 0u);
    std::vector<std::vector<float>> workspaces;
    std::vector<void*> workspace_pointers;
    for (std::size_t bytes : needs.workspaces) {  // written before read: poisoned
        workspaces.emplace_back(bytes / sizeof(float), std::bit_cast<float>(0x7fc0deadu));
        workspace_pointers.push_back(workspaces.back().data());
    }
    const codegen::LaunchScratch scratch{counters.empty() ? nullptr : counters.data(), workspace_pointers};
    std::vector<std::byte> params(needs.param_bytes);
    const codegen::BoundLaunch b =
        codegen::GpuFamily<codegen::PlannedAttention>::bind(s, kp, scratch, params);
    lm::AttentionParams ap;
    REQUIRE(params.size() == sizeof ap);
    std::memcpy(&ap, params.data(), sizeof ap);
    REQUIRE(b.config.grid_x > 0);
    REQUIRE(b.config.block_x == static_cast<unsigned>(attention_sim::kThreads));
    REQUIRE(b.shared_bytes == K::kSharedBytes);
    std::vector<Tensor> results;
    for (int launch = 0; launch < launches; ++launch) {
        testing::poison(out);
        for (unsigned block = 0; block < b.config.grid_x; ++block) {  // launch order
            // The block's dynamic shared memory, poisoned: the kernel writes what it reads.
            std::vector<float4> smem(b.shared_bytes / sizeof(float4));
            std::fill_n(reinterpret_cast<unsigned*>(smem.data()), b.shared_bytes / sizeof(unsigned),
                        0x7fc0beefu);
            std::barrier<> block_barrier(attention_sim::kThreads);
            std::vector<std::unique_ptr<std::barrier<>>> warps;
            for (int w = 0; w < attention_sim::kWarps; ++w) {
                warps.push_back(std::make_unique<std::barrier<>>(32));
                attention_sim::warp_barriers[w] = warps.back().get();
            }
            attention_sim::block_barrier = &block_barrier;
            std::vector<std::thread> threads;
            for (unsigned t = 0; t < static_cast<unsigned>(attention_sim::kThreads); ++t)
                threads.emplace_back([&, t] {
                    attention_sim::thread_index.x = t;
                    attention_sim::block_index.x = block;
                    K::run(ap, reinterpret_cast<float*>(smem.data()));
                });
            for (std::thread& t : threads) t.join();
        }
        bool zero = true;
        for (unsigned c : counters) zero = zero && c == 0u;
        CHECK_MESSAGE(zero, "the kernel leaves its counters zero (launch " << launch + 1 << ")");
        results.push_back(out.clone());
    }
    return results;
}

// Checks the kernel's result, each of `launches` launches, against the reference bit for bit.
template <class K>
void check(const Array& y, const std::vector<Tensor>& tensors, const std::string& what, int launches = 1) {
    const std::vector<Tensor> got = run_simulated<K>(y, tensors, launches);
    const Tensor expected = reference::evaluate(y.node());
    for (std::size_t i = 0; i < got.size(); ++i) {
        const testing::Comparison c = testing::compare(got[i], expected, testing::Tolerance::exact(), what);
        CHECK_MESSAGE(c.ok, what << " (launch " << i + 1 << "): " << c.message);
        CHECK_MESSAGE(testing::same_bits(got[i], expected), what << " (launch " << i + 1 << ")");
        CHECK_MESSAGE(testing::same_bits(got[i], got[0]),
                      what << ": launch " << i + 1 << " against the first");
    }
}

Tensor random_of(const Shape& s, DType t, std::uint64_t seed) {
    return testing::random_tensor(s, t, seed, testing::Random::normal());
}

// Element i of a contiguous float32, float16 or bfloat16 tensor set to x (rounded to the dtype).
void set(Tensor& t, std::int64_t i, float x) {
    const std::size_t k = static_cast<std::size_t>(i);
    if (t.dtype() == float32)
        static_cast<float*>(t.data())[k] = x;
    else if (t.dtype() == float16)
        static_cast<std::uint16_t*>(t.data())[k] = float_to_half_bits(x);
    else
        static_cast<std::uint16_t*>(t.data())[k] = float_to_bf16_bits(x);
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST_CASE("attention kernel (simulated): 64 queries per block, a causal mask and a bias that masks") {
    // float32, top-left causal over more keys than queries: a query block that ends in the diagonal's key
    // block; the values of keys no query sees (70 and after) are Inf and NaN, never read.
    {
        Tensor q = random_of({1, 2, 70, 24}, float32, 1), k = random_of({1, 2, 131, 24}, float32, 2),
               v = random_of({1, 2, 131, 24}, float32, 3);
        for (std::int64_t h = 0; h < 2; ++h)
            for (std::int64_t s = 70; s < 131; ++s) set(v, (h * 131 + s) * 24 + s % 24, s % 2 ? kInf : kNaN);
        check<Simt<float, 24, true, false, 8, false>>(attention(q, k, v, {.causal = CausalMask::TopLeft}),
                                                      {q, k, v}, "float32 causal top-left");
    }
    // bfloat16 with a bias [T, S]: row 5 sees no key (0), key 3 is masked for every query (its value NaN,
    // never read); NaN in one query gives NaN in its row only.
    {
        const std::int64_t T = 70, S = 150, D = 40;
        Tensor q = random_of({1, 2, T, D}, bfloat16, 4), k = random_of({1, 2, S, D}, bfloat16, 5),
               v = random_of({1, 2, S, D}, bfloat16, 6), bias = random_of({T, S}, bfloat16, 7);
        for (std::int64_t s = 0; s < S; ++s) set(bias, 5 * S + s, -kInf);
        for (std::int64_t t = 0; t < T; ++t) set(bias, t * S + 3, -kInf);
        set(v, 3 * D + 1, kNaN);
        set(q, (T + 66) * D + 7, kNaN);  // head 1, query 66
        check<Simt<lm::bf16, 40, false, true, 8, false>>(attention(q, k, v, {.bias = Array(bias)}),
                                                         {q, k, v, bias}, "bfloat16 with a masking bias");
    }
}

TEST_CASE("attention kernel (simulated): decoding splits the keys among blocks, the last one combines") {
    // float32, one query over 1100 keys (3 chunks, the last of 76) of grouped heads: 2 query heads per kv
    // head, 2 batches.
    {
        const Tensor q = random_of({2, 4, 1, 16}, float32, 10), k = random_of({2, 2, 1100, 16}, float32, 11),
                     v = random_of({2, 2, 1100, 16}, float32, 12);
        check<Simt<float, 16, false, false, 1, true>>(attention(q, k, v), {q, k, v},
                                                      "float32 grouped heads, 3 chunks");
    }
    // float32, two queries over 3500 keys: 7 chunks, the tree's odd subtrees carried up at two levels (the
    // float16 case below rounds most of the tree's order away).
    {
        const Tensor q = random_of({1, 2, 2, 16}, float32, 30), k = random_of({1, 2, 3500, 16}, float32, 31),
                     v = random_of({1, 2, 3500, 16}, float32, 32);
        check<Simt<float, 16, false, false, 1, true>>(attention(q, k, v), {q, k, v}, "float32, 7 chunks");
    }
    // float16, bottom-right causal: 3 queries over 2600 keys (6 chunks: the odd subtrees carried up).
    // Launched twice with the same counters and workspace: the first launch leaves the counters zero.
    {
        const Tensor q = random_of({1, 2, 3, 64}, float16, 13), k = random_of({1, 2, 2600, 64}, float16, 14),
                     v = random_of({1, 2, 2600, 64}, float16, 15);
        check<Simt<lm::f16, 64, true, false, 1, true>>(
            attention(q, k, v, {.causal = CausalMask::BottomRight}), {q, k, v},
            "float16 causal bottom-right, 6 chunks", 2);
    }
    // float32, 16 queries (2 row blocks of 8) with a bias that masks the whole second chunk (keys 512 to
    // 1023, for every query: an absent state the tree skips), row 9 that sees no key (0), key 3 masked for
    // every query and Inf and NaN values under the masks (never read), NaN in one query (NaN in its row):
    // over 600 keys (2 chunks, the second absent) and 1100 (3, the middle one absent).
    for (std::int64_t S : {600, 1100}) {
        const std::int64_t T = 16, D = 32;
        Tensor q = random_of({1, 2, T, D}, float32, 16), k = random_of({1, 1, S, D}, float32, 17),
               v = random_of({1, 1, S, D}, float32, 18), bias = random_of({T, S}, float32, 19);
        for (std::int64_t t = 0; t < T; ++t) {
            for (std::int64_t s = 512; s < std::min<std::int64_t>(S, 1024); ++s) set(bias, t * S + s, -kInf);
            set(bias, t * S + 3, -kInf);
        }
        for (std::int64_t s = 0; s < S; ++s) set(bias, 9 * S + s, -kInf);
        set(v, 3 * D + 2, kNaN);
        for (std::int64_t s = 512; s < 530; ++s) set(v, s * D + 5, s % 2 ? kInf : kNaN);
        set(q, (T + 12) * D + 1, kNaN);  // head 1, query 12
        check<Simt<float, 32, false, true, 1, true>>(attention(q, k, v, {.bias = Array(bias)}),
                                                     {q, k, v, bias},
                                                     fmt::format("float32 masked chunk and row, S={}", S));
    }
}

TEST_CASE("attention kernel (simulated): decoding over few keys takes one block per row block") {
    // 5 queries over 300 keys (not split: one chunk), D = 80 (a second column group of the output, partly
    // past D), and the values a transposed view (d stride 300): element loads, not 16-byte pieces.
    const Tensor q = random_of({1, 3, 5, 80}, float32, 20), k = random_of({1, 3, 300, 80}, float32, 21);
    const Tensor v_stored = random_of({1, 3, 80, 300}, float32, 22);
    const Tensor v = v_stored.permute({0, 1, 3, 2});
    check<Simt<float, 80, false, false, 1, false>>(attention(q, k, v), {q, k, v},
                                                   "float32 decoding, not split, transposed values");
}
