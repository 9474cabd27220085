// Golden tests of the reduction emitter: row sum, column sum, full sum (split), sum(x*x), softmax and
// layernorm written from user-level ops (one kernel each), compared as text and compiled with NVRTC for
// sm_90; then every reduction op on every dtype it accepts, and the planner's schedule choices, compiled.
#include <cstdlib>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "golden_util.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"

using namespace loom;

namespace {

std::vector<codegen::KernelSource> kernels_of(const std::vector<Array>& ys, std::string_view name) {
    std::vector<ir::NodePtr> roots;
    for (const auto& y : ys) roots.push_back(y.node());
    return gpu::generate(ir::run_pipeline(roots, ir::standard_passes()), name);
}

// One kernel, compared with the golden file and compiled.
codegen::KernelSource golden_one(const std::string& name, const std::vector<Array>& ys) {
    auto ks = kernels_of(ys, name);
    REQUIRE(ks.size() == 1);
    golden::check_text(name, ks[0].kernel);
    golden::compile_sm90(ks[0]);
    return ks[0];
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("golden: row sum (inner schedule, a block per row, 16-byte runs)") {
    Tensor x = Tensor::host({512, 16384}, float32);
    auto ks = golden_one("r1_row_sum", {sum(x, 1)});
    CHECK(contains(ks.kernel, "schedule inner"));
    CHECK(ks.vector_entry == "r1_row_sum_v");
    CHECK(contains(ks.kernel, "lm::add("));  // no contraction: the prelude's rounded add
    // A grid sized by the rows: the next kernel may be scheduled as its blocks retire.
    CHECK(contains(ks.kernel, "lm::launch_dependent_grids();"));
}

TEST_CASE("golden: column sum (outer schedule, the column order, 16-byte loads across outputs)") {
    Tensor x = Tensor::host({16384, 1024}, float32);
    auto ks = golden_one("r2_column_sum", {sum(x, 0)});
    CHECK(contains(ks.kernel, "schedule outer"));
    CHECK(contains(ks.kernel, "order (columns): chunks of 256"));
    CHECK(ks.vector_entry == "r2_column_sum_v");
    CHECK(contains(ks.kernel, "lm::load_vec_ro<float, 4>("));  // the read-only data path
}

TEST_CASE(
    "golden: sum(x*x) to one scalar (split over blocks in full waves, chunk partials climb a counter tree)") {
    Tensor x = Tensor::host({1 << 22}, float32);
    auto ks = golden_one("r3_sum_squares", {sum(x * x)});
    CHECK(contains(ks.kernel, "split: blocks share each row's chunks in balanced ranges (full waves)"));
    CHECK(contains(ks.kernel, "__launch_bounds__(256, 2)"));  // the wave's 2 blocks per SM stay resident
    CHECK(contains(ks.kernel, "p.chunks / p.nblk"));          // balanced chunk ranges
    CHECK(contains(ks.kernel,
                   "lm::arrive(cnt + g, (unsigned int)(hi - lo)"));  // integer counters, no float atomics
    CHECK(contains(ks.kernel, "lm::arrive(cnt + groups, 1u"));
    CHECK(contains(ks.source, "bool arrive(unsigned int* counter, unsigned int add, unsigned int total)"));
    CHECK(contains(ks.source, "atomicAdd(counter, add)"));
    CHECK_FALSE(contains(ks.source, "atomicAdd(reinterpret_cast<float"));
    // One wave sized to the machine: it waits for the previous kernel but lets no next kernel's blocks be
    // scheduled beside its own (measured 25% slower that way).
    CHECK(contains(ks.kernel, "lm::await_prior_grids();"));
    CHECK_FALSE(contains(ks.kernel, "lm::launch_dependent_grids();"));
}

TEST_CASE("golden: softmax from max, exp, sum is one kernel with the row in registers") {
    Tensor x = Tensor::host({64, 8192}, float32);
    const Array m = max(x, -1, true);
    const Array e = exp(x - m);
    const Array y = e / sum(e, -1, true);
    auto ks = golden_one("f1_softmax", {y});
    CHECK(contains(ks.kernel, "stage 1"));
    CHECK(contains(ks.kernel, "held in registers"));
    CHECK(contains(ks.kernel, "element outputs"));
}

TEST_CASE("golden: layernorm with weight and bias is one kernel (mean, variance, normalize)") {
    Tensor x = Tensor::host({64, 8192}, float32);
    Tensor w = Tensor::host({8192}, float32), b = Tensor::host({8192}, float32);
    const Array mu = mean(x, -1, true);
    const Array d = x - mu;
    const Array var = mean(d * d, -1, true);
    const Array y = d * rsqrt(var + 1e-5) * w + b;
    auto ks = golden_one("f2_layernorm", {y});
    CHECK(contains(ks.kernel, "stage 1"));
    // x (32 registers per thread) and, beside it within 96 registers, weight and bias: loaded with the row
    CHECK(contains(ks.kernel, "held in registers: in0, in3, in4\n"));
    CHECK(contains(ks.kernel, "full: no bounds checks"));  // 8192 = 8 x 1024: row math once per thread
    // Rows of 16384: x alone takes 64 registers per thread, so weight and bias are loaded where used.
    Tensor x2 = Tensor::host({4, 16384}, float32);
    Tensor w2 = Tensor::host({16384}, float32), b2 = Tensor::host({16384}, float32);
    const Array d2 = x2 - mean(x2, -1, true);
    const Array y2 = d2 * rsqrt(mean(d2 * d2, -1, true) + 1e-5) * w2 + b2;
    // The GPU planner's text: explain() of these host arrays gives the host plan.
    CHECK(contains(gpu::explain(ir::run_pipeline({y2.node()}, ir::standard_passes()), ""),
                   "rows held in registers"));
    CHECK(contains(cuda_source({y2}, "layernorm_16k"), "held in registers: in0\n"));
}

TEST_CASE("every reduction op x dtype compiles with NVRTC, inner and outer") {
    const ir::Op ops[] = {ir::Op::Sum,    ir::Op::Prod,   ir::Op::Min, ir::Op::Max, ir::Op::Mean,
                          ir::Op::ArgMin, ir::Op::ArgMax, ir::Op::Any, ir::Op::All};
    // Every dtype on both axes with LOOM_TEST_EXHAUSTIVE=1 (minutes of NVRTC); by default each dtype on one
    // axis, the axes alternating.
    const bool all = std::getenv("LOOM_TEST_EXHAUSTIVE") != nullptr;
    int compiled = 0, index = 0;
    for (DType t : kAllDTypes) {
        CAPTURE(name(t));
        Tensor x = Tensor::host({33, 40}, t);
        ++index;
        for (int axis : {0, 1}) {
            if (!all && axis != index % 2) continue;
            std::vector<Array> ys;
            for (ir::Op op : ops) {
                try {
                    ys.push_back(Array(ir::reduce(op, Array(x).node(), {axis}, false)));
                } catch (const Error&) {
                }
            }
            REQUIRE(!ys.empty());
            for (const auto& ks : kernels_of(ys, fmt::format("all_{}_{}", name(t), axis))) {
                golden::compile_sm90(ks);
                ++compiled;
            }
        }
    }
    CHECK(compiled >= (all ? 18 : 9));
}

TEST_CASE("every reduction op x dtype compiles with the row held in registers (block and warp per row)") {
    // An element output beside the reductions keeps the row in registers: the butterfly runs in every warp
    // and the chunk partials are broadcast with lm::shfl0 (for arg reductions too).
    const ir::Op ops[] = {ir::Op::Sum,    ir::Op::Prod,   ir::Op::Min, ir::Op::Max, ir::Op::Mean,
                          ir::Op::ArgMin, ir::Op::ArgMax, ir::Op::Any, ir::Op::All};
    // Every dtype at every row length with LOOM_TEST_EXHAUSTIVE=1; by default each dtype at one length, the
    // lengths (a warp per row, a block per row, several chunks) taken in turn.
    const bool all = std::getenv("LOOM_TEST_EXHAUSTIVE") != nullptr;
    int compiled = 0, index = 0;
    for (DType t : kAllDTypes) {
        ++index;
        for (std::int64_t L : {100, 2049, 16384}) {
            if (!all && L != (index % 3 == 0 ? 100 : index % 3 == 1 ? 2049 : 16384)) continue;
            CAPTURE(name(t));
            CAPTURE(L);
            Tensor x = Tensor::host({8, L}, t);
            std::vector<Array> ys;
            for (ir::Op op : ops) ys.push_back(Array(ir::reduce(op, Array(x).node(), {1}, true)));
            ys.push_back(Array(x) == ys[3]);  // x == max(x): an element output reading a reduced value
            const auto kernels = kernels_of(ys, fmt::format("held_{}_{}", name(t), L));
            REQUIRE(!kernels.empty());
            int held = 0;
            for (const auto& ks : kernels) held += contains(ks.kernel, "held in registers (");
            if (held == 0)
                MESSAGE(kernels.size(), " kernels; the first: ", kernels.front().kernel.substr(0, 600));
            CHECK(held == 1);
            for (const auto& ks : kernels) {
                golden::compile_sm90(ks);
                ++compiled;
            }
        }
    }
    CHECK(compiled >= (all ? 27 : 9));
}

TEST_CASE("schedules: warp per row, strided and transposed inputs, epilogues and int sums compile") {
    Tensor x = Tensor::host({300, 100}, float32);
    Tensor h = Tensor::host({64, 4096}, float16);
    Tensor i8 = Tensor::host({16, 3000}, int8);
    Tensor big = Tensor::host({3, 70000}, float32);
    const std::vector<std::vector<Array>> cases = {
        {sum(x, 1)},                              // warp per row, L = 100 (scalar variant)
        {sum(transpose(x), 1)},                   // strided loads along the reduced axis
        {sqrt(mean(x * x, 1)) + 1.0, max(x, 1)},  // two reductions, an epilogue
        {argmax(transpose(x), 0), argmin(x, 1)},  // arg reductions, two kernels
        {sum(h, -1), mean(h, -1)},                // float16 accumulates in float32
        {sum(i8, 1), any(i8 > 3, 1)},             // int8 sums in int64
        {exp(big - max(big, -1, true)) /
         sum(exp(big - max(big, -1, true)), -1, true)},  // long rows, few: strict
        {sum(big, 0)},                                   // outer, L = 3
        {sum(big)},                                      // full reduction, split
    };
    int n = 0;
    for (const auto& ys : cases) {
        CAPTURE(n);
        for (const auto& ks : kernels_of(ys, fmt::format("case_{}", n))) golden::compile_sm90(ks);
        ++n;
    }
}

TEST_CASE("full rows: only a row of exactly its register capacity drops the bounds checks") {
    // 8192 and 16384 = 8 and 16 blocks of 1024: every position of the 4-wide variant is inside the row.
    // 8000 and 12289 keep `if (r0 < p.len)` around each position (the plan hash tells the kernels apart).
    for (std::int64_t L : {8192, 16384, 8000, 12289}) {
        CAPTURE(L);
        Tensor x = Tensor::host({64, L}, float32);
        const Array X(x);
        const Array mu = mean(X, -1, true);
        const Array d = X - mu;
        const auto kernels = kernels_of({d * rsqrt(mean(d * d, -1, true) + 1e-5)}, fmt::format("full_{}", L));
        REQUIRE(kernels.size() == 1);
        const std::string& k = kernels.front().kernel;
        const bool full = L % 1024 == 0;
        CHECK(contains(k, "held in registers ("));
        CHECK(contains(k, "full: no bounds checks") == full);
        const std::string vec = k.substr(k.find("_v(const"), k.find("_s(const") - k.find("_v(const"));
        CHECK(contains(vec, "if (r0 < p.len)") == !full);
        golden::compile_sm90(kernels.front());
    }
}
