// How graphs with reductions are partitioned, planned and explained, without a GPU: one kernel for a fused
// normalization, the boundaries and materialized values of graphs that need several, the strict fallback,
// and the plans the schedules choose (all read from loom::explain and the generated CUDA).
#include <doctest/doctest.h>

#include <string>

#include <loom/loom.hpp>
#include "loom/codegen/reduce_plan.hpp"

using namespace loom;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
int kernels_in(const std::string& plan) {
    int n = 0;
    for (std::size_t p = plan.find("kernel "); p != std::string::npos; p = plan.find("kernel ", p + 1))
        if (p == 0 || plan[p - 1] == '\n') ++n;
    return n;
}

}  // namespace

TEST_CASE("reduce partition: softmax, layernorm and rmsnorm written by hand are one kernel each") {
    Tensor x = Tensor::host({64, 4096}, float32), w = Tensor::host({4096}, float32), b = Tensor::host({4096}, float32);
    const Array X(x), W(w), B(b);
    const Array e = exp(X - max(X, -1, true));
    const std::string sm = explain({e / sum(e, -1, true)});
    CHECK(kernels_in(sm) == 1);
    CHECK(contains(sm, "max ("));
    CHECK(contains(sm, "stage 1"));
    CHECK(contains(sm, "1 element output(s)"));
    CHECK(contains(sm, "rows held in registers"));
    const Array d = X - mean(X, -1, true);
    CHECK(kernels_in(explain({d * rsqrt(mean(d * d, -1, true) + 1e-5) * W + B})) == 1);
    CHECK(kernels_in(explain({X * rsqrt(mean(X * X, -1, true) + 1e-6) * W})) == 1);
    CHECK(kernels_in(explain({layernorm(X, W, B, 1e-5)})) == 1);
}

TEST_CASE("reduce partition: a prologue, an epilogue and several reductions of one operand share a kernel") {
    Tensor x = Tensor::host({300, 1000}, float32);
    const Array X(x);
    const std::string plan = explain({sum(X * X, 1), max(X, 1), sqrt(mean(X * X, 1)) + 1.0});
    CHECK(kernels_in(plan) == 1);
    CHECK(contains(plan, "3 row output(s)"));
    CHECK(contains(plan, "schedule inner"));
    CHECK(contains(plan, "32 threads per row"));  // rows of 1000: a warp per row
    const std::string cols = explain({sum(X, 0), argmax(X, 0)});
    CHECK(kernels_in(cols) == 1);
    CHECK(contains(cols, "schedule outer"));
}

TEST_CASE("reduce partition: boundaries are explained and reduced values are materialized where needed") {
    Tensor x = Tensor::host({128, 512}, float32);
    const Array X(x);
    // A full mean read back at every element: the mean's kernel, then a pointwise kernel over it.
    const std::string centered = explain({X - mean(X)});
    CHECK(kernels_in(centered) == 2);
    CHECK(contains(centered, "materialize t0 = mean"));
    CHECK(contains(centered, "pointwise [128, 512]"));
    // Reductions over different axes: two kernels, the second reads the first's value.
    const std::string two = explain({sum(X - mean(X, 0, true), 1)});
    CHECK(kernels_in(two) == 2);
    CHECK(contains(two, "read by sum"));
    // A reduced value read at another row (reversed): not fusable, so every reduction gets its own kernel.
    const Array m = sum(X, 1, true);
    const Array reversed = m.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, -1}});
    const std::string strict = explain({X * reversed});
    CHECK(contains(strict, "one kernel per reduction"));
    CHECK(kernels_in(strict) == 2);
}

TEST_CASE("reduce partition: split plans for few long rows, the generated CUDA compiles") {
    Tensor x = Tensor::host({1 << 22}, float32);
    const std::string plan = explain({sum(Array(x))});
    CHECK(kernels_in(plan) == 1);
    CHECK(contains(plan, "split over"));
    CHECK(contains(plan, "one launch"));  // a split reduction is one launch, not two
    // Inner splits run one wave of 2 blocks per SM (264 on the H200 the explain plans for), whose balanced
    // chunk ranges need not be powers of two: 512 chunks go to 264 blocks.
    CHECK(contains(plan, "split over 264 blocks per row (balanced chunk ranges in full waves; groups of 256 chunk partials"));
    // Three rows share the wave: 88 blocks each; fewer chunks than the share: a block per chunk.
    Tensor three = Tensor::host({3, 1 << 22}, float32);
    CHECK(contains(explain({sum(Array(three), 1)}), "split over 88 blocks per row"));
    Tensor shortrows = Tensor::host({3, 5 * 8192}, float32);
    CHECK(contains(explain({max(Array(shortrows), 1)}), "split over 5 blocks per row"));
    // Rows that do not divide the wave: nearly full waves of smaller ranges instead of one part-filled wave
    // (200 rows on 264 slots: 13 blocks each, 2600 blocks in 10 waves, 1.5% above the ideal).
    Tensor many = Tensor::host({200, 1 << 22}, float32);
    CHECK(contains(explain({sum(Array(many), 1)}), "split over 13 blocks per row"));
    CHECK(codegen::split_blocks_per_row(1, 32768, 264) == 264);
    CHECK(codegen::split_blocks_per_row(3, 512, 264) == 88);
    CHECK(codegen::split_blocks_per_row(7, 301, 264) == 37);    // 259 of 264 slots: within 2%
    CHECK(codegen::split_blocks_per_row(100, 301, 264) == 13);  // 1300 blocks: 5 waves less 20 blocks
    CHECK(codegen::split_blocks_per_row(131, 301, 264) == 2);   // 262 of 264 slots
    CHECK(codegen::split_blocks_per_row(263, 512, 264) == 1);   // one wave already: no split
    CHECK(codegen::split_blocks_per_row(200, 512, 264) == 13);
    CHECK(codegen::split_blocks_per_row(200, 5, 264) == 5);     // few chunks: the best there is, 1000 blocks in 4 waves
    Tensor c = Tensor::host({4096, 1024}, float32);
    CHECK(contains(explain({sum(Array(c), 0)}), "schedule outer, 256 threads per block, a thread per 1 or 4 outputs"));
    // Outer splits aim at 2 blocks per SM (132 on the H200 the explain plans for): 1024 columns are one
    // block of outputs, 512 chunks of 256 rows go 2 to a block, so 256 blocks.
    Tensor row = Tensor::host({1024}, float32);
    CHECK(contains(explain({sum(Array(row).broadcast_to({131072, 1024}), 0)}), "split over 256 blocks per row"));
    const auto rep = compile({sum(Array(x) * 2.0)}, "split_sum");
    CHECK(rep.kernels == 1);
    // Few long rows with a normalization: too few rows for one pass per stage, so one kernel per
    // reduction (split) and a pointwise kernel.
    Tensor y = Tensor::host({2, 1 << 16}, float32);
    const Array Y(y);
    const Array e = exp(Y - max(Y, -1, true));
    const std::string few = explain({e / sum(e, -1, true)});
    CHECK(contains(few, "one kernel per reduction"));
    CHECK(kernels_in(few) == 3);
    // Every reduction op and accumulator type in a split kernel (chunk partials, group trees, the row's
    // windows): the generated CUDA compiles.
    for (DType d : kAllDTypes) {
        CAPTURE(name(d));
        Tensor t = Tensor::host({3, 5 * 8192 + 3}, d);
        const Array T(t);
        std::vector<Array> ys{sum(T, 1), max(T, 1), min(T, 1), argmax(T, 1), argmin(T, 1), any(T, 1), all(T, 1)};
        if (d != bool_) ys.push_back(mean(T, 1));
        for (const Array& yv : ys) {
            CHECK(contains(explain({yv}), "split over 6 blocks per row"));  // 6 chunks, the last one of 3 elements
            CHECK(compile({yv}, "split_" + std::string(name(d))).kernels == 1);
        }
    }
}
