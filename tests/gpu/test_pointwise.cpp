// GPU tests of one fused pointwise kernel against the CPU reference: sizes and tails, the vector and
// scalar variants (aligned and misaligned data), broadcasts, view inputs, multi-output kernels, roots of
// two shapes, assign() into preallocated and aliasing outputs, and kernel-cache hits.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "loom/runtime/kernel_cache.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;

TEST_CASE("pointwise: sizes 0, 1, 31, 32, 33, 4097 and 2^24 + 3, several outputs and dtypes") {
    for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{31}, std::int64_t{32},
                           std::int64_t{33}, std::int64_t{4097}, (std::int64_t{1} << 24) + 3}) {
        CAPTURE(n);
        const auto seed = static_cast<std::uint64_t>(n) * 16;
        Tensor x = rand({n}, float32, seed + 1), y = rand({n}, float32, seed + 2);
        // One kernel, three outputs of one shape: exact, inexact and a narrowing cast to int8.
        run_checked({x * 1.5f + y, tanh(x) * y, (x * 8.0f).astype(int8)});
        // Narrow dtypes give wider vectors (8 halves, 16 bytes of int8): other tails.
        Tensor h = rand({n}, bfloat16, seed + 3), b = rand({n}, int8, seed + 4),
               c = rand({n}, int8, seed + 5);
        run_checked({h * h - 1.0f, silu(h)});
        run_checked({b + c, b * c, maximum(b, c)});
    }
    // Empty arrays of rank 2 (an extent of 0 in either position).
    for (Shape s : {Shape{3, 0}, Shape{0, 5}}) {
        CAPTURE(to_string(s));
        Tensor x = rand(s, float32, 7);
        const auto outs = run_checked({x + 1.0f});
        CHECK(outs[0].numel() == 0);
    }
}

TEST_CASE(
    "pointwise: misaligned inputs take the scalar variant and agree bit for bit with the vector variant") {
    for (std::int64_t n : {std::int64_t{33}, std::int64_t{4097}, std::int64_t{100003}}) {
        CAPTURE(n);
        Tensor buf = rand({n + 1}, float32, 100 + static_cast<std::uint64_t>(n));
        Tensor mis = buf.as_strided({n}, {1}, 1);              // element 1: 4 bytes past a 16-byte boundary
        Tensor ali = reference::cast(mis, float32).to(dev());  // a copy: the same values, 16-byte aligned
        Tensor w = rand({n}, float32, 200 + static_cast<std::uint64_t>(n));
        auto exact_ops = [&](const Tensor& x) {
            return std::vector<Array>{x * w + 0.25f, sqrt(abs(x)) / (w - 3.0f)};
        };
        auto inexact_ops = [&](const Tensor& x) { return std::vector<Array>{exp(x) * w}; };

        const auto va = exact_ops(ali), vm = exact_ops(mis);
        std::vector<Tensor> oa{Tensor::empty({n}, float32, dev()), Tensor::empty({n}, float32, dev())};
        std::vector<Tensor> om{Tensor::empty({n}, float32, dev()), Tensor::empty({n}, float32, dev())};
        const Launch la = plan_of(va, oa), lm = plan_of(vm, om);
        CHECK(la.plan.has_vector_variant());
        CHECK(la.variant == codegen::Variant::Vector);
        CHECK(lm.variant == codegen::Variant::Scalar);
        const auto ra = run_checked(va), rm = run_checked(vm);
        for (std::size_t k = 0; k < ra.size(); ++k)
            require_same_bits(rm[k], ra[k], "scalar variant vs vector variant");
        run_checked(inexact_ops(ali));
        run_checked(inexact_ops(mis));

        // The same misalignment through a slice of the whole buffer: x[1:].
        const Array sl = Array(buf).slice({{1, kNone}});
        const auto rs = run_checked({sl * w + 0.25f});
        require_same_bits(rs[0], ra[0], "slice [1:] vs aligned copy");
    }
}

TEST_CASE("pointwise: a misaligned output launches the scalar entry of a vectorized kernel") {
    const std::int64_t n = 4099;
    Tensor x = rand({n}, float32, 301), y = rand({n}, float32, 302);
    const Array e = x * y - x;
    Tensor aligned_out = Tensor::empty({n}, float32, dev());
    Tensor big = Tensor::empty({n + 1}, float32, dev());
    testing::poison(big);
    Tensor mis_out = big.as_strided({n}, {1}, 1);
    REQUIRE(mis_out.is_contiguous());
    const Launch la = plan_of({e}, {aligned_out}), lm = plan_of({e}, {mis_out});
    CHECK(la.plan.has_vector_variant());
    CHECK(lm.plan.has_vector_variant());  // the inputs are aligned: same plan, same kernel
    CHECK(la.variant == codegen::Variant::Vector);
    CHECK(lm.variant == codegen::Variant::Scalar);
    testing::poison(aligned_out);
    assign(aligned_out, e);
    assign(mis_out, e);
    wait_device();
    require_reference({e}, {aligned_out}, "vector variant");
    require_reference({e}, {mis_out}, "scalar variant");
    require_same_bits(mis_out, aligned_out, "scalar variant vs vector variant");
    // Element 0 of the buffer stays poisoned: nothing was written before the output.
    CHECK(std::isnan(big.to_host().get_double(0)));

    // int8 and float16 at odd byte offsets.
    Tensor b8 = rand({n + 3}, int8, 303), h16 = rand({n + 1}, float16, 304);
    const Array i8 = Array(b8).slice({{3, kNone}}) * 3 + 1;
    const Array f16 = Array(h16).slice({{1, kNone}}) * 0.5f + 1.0f;
    Tensor o8 = Tensor::empty({n}, int8, dev()), o16 = Tensor::empty({n}, float16, dev());
    CHECK(plan_of({i8}, {o8}).variant == codegen::Variant::Scalar);
    CHECK(plan_of({f16}, {o16}).variant == codegen::Variant::Scalar);
    run_checked({i8});
    run_checked({f16});
}

TEST_CASE("pointwise: scalar, row, column and outer-product broadcasts") {
    for (std::int64_t cols :
         {std::int64_t{64}, std::int64_t{37}}) {  // a multiple of the vector width, and not
        CAPTURE(cols);
        const std::int64_t rows = 33;
        Tensor x = rand({rows, cols}, float32, 401), row = rand({cols}, float32, 402),
               col = rand({rows, 1}, float32, 403);
        Tensor s0 = rand({}, float32, 404);  // a rank-0 device tensor
        run_checked({x * row + col, x - s0, x * 2.5f, x + constant(0.125)});
        run_checked({Array(col) * row});  // [rows, 1] x [cols] -> [rows, cols]
        // A row vector given as [1, cols], and rank-3 broadcasts over a new leading dimension.
        Tensor row2 = rand({1, cols}, float32, 405), z = rand({3, 1, cols}, float32, 406);
        run_checked({maximum(x, row2), Array(z) * col + x});
        // Integer broadcasts with promotion: int32 [rows, cols] with int8 rows and a uint8 column.
        Tensor xi = rand({rows, cols}, int32, 407), ri = rand({cols}, int8, 408),
               ci = rand({rows, 1}, uint8, 409);
        run_checked({xi * ri - ci, (xi >> 3) & ri});
        // A half column broadcast across a bfloat16 matrix (float16 with bfloat16 promotes to float32).
        Tensor hb = rand({rows, cols}, bfloat16, 410), hc = rand({rows, 1}, float16, 411);
        run_checked({hb + hc, hb * 2.0f});
    }
}

TEST_CASE("pointwise: transposed, permuted, reshaped and sliced views as inputs") {
    Tensor x = rand({48, 64}, float32, 501), y = rand({64, 48}, float32, 502);
    // Transposes: through the DSL and through the tensor's strides.
    run_checked({Array(x).transposed() + y});
    Tensor xt = x.as_strided({64, 48}, {1, 64}, 0);
    run_checked({xt * y, Array(xt) - Array(x).transposed()});
    // Slices with step 2, negative steps and both.
    run_checked({Array(x).slice({{0, kNone, 2}}) + 1.0f});                           // [24, 64]
    run_checked({Array(x).slice({{kNone, kNone, -1}, {kNone, kNone, -2}}) * 3.0f});  // [48, 32]
    // [16, 13] from rows 1, 4, ..., 46 and columns 63, 58, ..., 3 of x, against [16, 13] from y.
    run_checked({Array(x).slice({{1, 47, 3}, {63, 0, -5}}) -
                 Array(y).slice({{1, kNone, 4}, {0, kNone, 3}}).transposed().slice({{kNone}, {0, 13}})});
    // Rank-3 permutes, and reshapes that are (and are not) strided views.
    Tensor z = rand({4, 6, 10}, float32, 503), w = rand({10, 4, 6}, float32, 504);
    run_checked({Array(z).permute({2, 0, 1}) * w});
    run_checked({Array(z).reshape({24, 10}) + Array(w).reshape({24, 10})});
    run_checked({Array(z).permute({2, 0, 1}).reshape({40, 6}) + 1.0f});  // not a strided view: derived index
    run_checked({Array(x).transposed().reshape({3072}) * Array(y).reshape({3072})});
    // A column taken from a matrix and broadcast back.
    run_checked({x * Array(x).slice({{kNone}, {3, 4}})});
    // Int64 and bool inputs through views.
    Tensor k = rand({16, 32}, int64, 505), m = rand({32, 16}, bool_, 506);
    run_checked({where(Array(m).transposed(), Array(k).slice({{kNone, kNone, -1}}), k + 1)});
}

TEST_CASE("pointwise: Black-Scholes call and put, two outputs of one kernel") {
    const std::int64_t n = 100003;
    Tensor S = rand({n}, float32, 601, testing::Random::uniform(10, 110));
    Tensor K = rand({n}, float32, 602, testing::Random::uniform(10, 110));
    Tensor T = rand({n}, float32, 603, testing::Random::uniform(0.1, 2.1));
    const float r = 0.02f, v = 0.3f;
    auto cdf = [](const Array& d) {
        return 0.5f * (1.0f + erf(d * static_cast<float>(std::numbers::sqrt2 / 2)));
    };
    const Array sqrt_t = sqrt(T);
    const Array d1 = (log(S / K) + (r + 0.5f * v * v) * T) / (v * sqrt_t);
    const Array d2 = d1 - v * sqrt_t;
    const Array disc = K * exp(-r * T);
    const Array call = S * cdf(d1) - disc * cdf(d2);
    const Array put = disc * cdf(-d2) - S * cdf(-d1);
    std::vector<Tensor> outs{Tensor::empty({n}, float32, dev()), Tensor::empty({n}, float32, dev())};
    const Launch l = plan_of({call, put}, outs);
    CHECK(l.kernels == 1);
    CHECK(l.plan.outputs.size() == 2);
    CHECK(l.plan.loads.size() == 3);  // S, K, T each read once for both outputs
    const auto res = run_checked({call, put});
    // Put-call parity: call - put = S - K exp(-rT), to float32 accuracy on values up to ~100.
    const Tensor c = res[0].to_host(), p = res[1].to_host(), sh = S.to_host(), kh = K.to_host(),
                 th = T.to_host();
    for (std::int64_t i = 0; i < n; i += 997) {
        const double parity = sh.get_double(i) - kh.get_double(i) * std::exp(-0.02 * th.get_double(i));
        CHECK(std::abs(c.get_double(i) - p.get_double(i) - parity) < 1e-3);
    }
}

TEST_CASE(
    "pointwise: an arithmetic-heavy kernel's grid-stride vector variant agrees bit for bit with the scalar "
    "variant") {
    // Black-Scholes prices are arithmetic-heavy: the vector variant loops over at most 16 blocks per SM with
    // the next vector's loads in flight. Sizes: one partial vector, a partial pass, several passes of the
    // grid (16 x 132 blocks x 1024 elements per pass on the H200) with a tail of 1 to 3 elements.
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{3}, std::int64_t{4097}, (std::int64_t{1} << 22) + 3,
                           std::int64_t{3} * 16 * 132 * 1024 + 5}) {
        CAPTURE(n);
        const auto seed = 700 + static_cast<std::uint64_t>(n % 1000);
        Tensor bufS = rand({n + 1}, float32, seed + 1, testing::Random::uniform(10, 110));
        Tensor K = rand({n}, float32, seed + 2, testing::Random::uniform(10, 110));
        Tensor T = rand({n}, float32, seed + 3, testing::Random::uniform(0.1, 2.1));
        Tensor mis = bufS.as_strided({n}, {1}, 1);  // 4 bytes past a 16-byte boundary: scalar variant
        Tensor S = reference::cast(mis, float32).to(dev());  // the same values, aligned: vector variant
        auto prices = [&](const Tensor& s) {
            const Array sq = sqrt(T);
            const Array d1 = (log(s / K) + 0.065f * T) / (0.3f * sq);
            const Array d2 = d1 - 0.3f * sq;
            const Array disc = K * exp(-0.02f * T);
            return std::vector<Array>{s * erf(d1) - disc * erf(d2), disc * erf(-d2)};
        };
        const auto va = prices(S), vm = prices(mis);
        std::vector<Tensor> oa{Tensor::empty({n}, float32, dev()), Tensor::empty({n}, float32, dev())};
        std::vector<Tensor> om{Tensor::empty({n}, float32, dev()), Tensor::empty({n}, float32, dev())};
        const Launch la = plan_of(va, oa), lm = plan_of(vm, om);
        CHECK(la.plan.grid_stride_blocks > 0);
        if (n >= 4) {  // below one vector either entry computes every element with the scalar body
            CHECK(la.variant == codegen::Variant::Vector);
            CHECK(lm.variant == codegen::Variant::Scalar);
        }
        const auto ra = run_checked(va), rm = run_checked(vm);
        for (std::size_t k = 0; k < ra.size(); ++k)
            require_same_bits(ra[k], rm[k], "grid-stride vector variant vs scalar variant");
    }
}

TEST_CASE("pointwise: roots of two different shapes run as two kernels") {
    Tensor x = rand({33, 40}, float32, 701), row = rand({40}, float32, 702);
    const Array a = x * row + 1.0f, b = exp(row) - 2.0f, c = x - 3.0f;
    std::vector<Tensor> outs{Tensor::empty({33, 40}, float32, dev()), Tensor::empty({40}, float32, dev()),
                             Tensor::empty({33, 40}, float32, dev())};
    const auto graph = ir::run_pipeline(roots_of({a, b, c}), ir::standard_passes());
    const auto groups = codegen::partition(graph).kernels;
    REQUIRE(groups.size() == 2);
    CHECK(groups[0].outputs.size() == 2);  // a and c share the [33, 40] kernel
    CHECK(groups[1].outputs.size() == 1);
    run_checked({a, b, c});
    // eval() of several arrays returns new tensors in root order.
    const auto [ra, rb] = eval(a, b);
    CHECK(ra.shape() == Shape{33, 40});
    CHECK(rb.shape() == Shape{40});
    require_reference({a, b}, {ra, rb}, "eval() of two shapes");
}

TEST_CASE("pointwise: assign into preallocated outputs that alias inputs") {
    SUBCASE("the transpose of a square matrix into itself goes through a temporary") {
        Tensor x = rand({96, 96}, float32, 801);
        const Array e = Array(x).transposed() * 2.0f + x;
        const Tensor expected = reference::evaluate(e.node());  // reads x now, before it is overwritten
        assign(x, e);
        wait_device();
        const testing::Comparison c =
            testing::compare(x, expected, testing::tolerance_for(e.node()), "x = 2 x^T + x");
        CHECK_MESSAGE(c.ok, c.message);
    }
    SUBCASE("a reversed slice into itself") {
        Tensor x = rand({4097}, int32, 802);
        const Array e = Array(x).slice({{kNone, kNone, -1}}) - x;
        const Tensor expected = reference::evaluate(e.node());
        assign(x, e);
        wait_device();
        const testing::Comparison c =
            testing::compare(x, expected, testing::Tolerance::exact(), "x = x[::-1] - x");
        CHECK_MESSAGE(c.ok, c.message);
        // Antisymmetric: x[i] == -x[n-1-i] afterwards.
        const Tensor h = x.to_host();
        for (std::int64_t i = 0; i < 4097; i += 101) CHECK(h.get_int(i) == -h.get_int(4096 - i));
    }
    SUBCASE("an output shifted by one element against its input") {
        const std::int64_t n = 100000;
        Tensor x = rand({n}, float32, 803);
        Tensor in = x.as_strided({n - 1}, {1}, 1), out = x.as_strided({n - 1}, {1}, 0);
        const Array e = Array(in) * 3.0f + 1.0f;
        const Tensor expected = reference::evaluate(e.node());
        assign(out, e);
        wait_device();
        const testing::Comparison c =
            testing::compare(out, expected, testing::Tolerance::exact(), "x[:-1] = 3 x[1:] + 1");
        CHECK_MESSAGE(c.ok, c.message);
    }
    SUBCASE("the same index map in place needs no temporary and is right") {
        Tensor x = rand({4097}, float64, 804);
        const Array e = x * x - 0.5;
        const Tensor expected = reference::evaluate(e.node());
        assign(x, e);
        wait_device();
        const testing::Comparison c =
            testing::compare(x, expected, testing::Tolerance::exact(), "x = x * x - 0.5");
        CHECK_MESSAGE(c.ok, c.message);
    }
    SUBCASE("an output of the first kernel is an input of the second kernel") {
        // Roots of two shapes run as two kernels; the first writes x in place, the second reads x's first
        // row and must still see the values from before the call.
        Tensor x = rand({8, 8}, float32, 806), r = Tensor::empty({8}, float32, dev());
        testing::poison(r);
        const Array a = x * 2.0f, b = Array(x).slice({{0, 1}}).reshape({8}) + 1.0f;
        const auto expected = reference::evaluate({a.node(), b.node()});
        assign({x, r}, {a, b});
        wait_device();
        const testing::Comparison ca =
            testing::compare(x, expected[0], testing::Tolerance::exact(), "x = 2 x");
        const testing::Comparison cb =
            testing::compare(r, expected[1], testing::Tolerance::exact(), "r = x[0] + 1");
        CHECK_MESSAGE(ca.ok, ca.message);
        CHECK_MESSAGE(cb.ok, cb.message);
    }
    SUBCASE("two outputs, one of them an input") {
        Tensor x = rand({64, 64}, float32, 805), y = Tensor::empty({64, 64}, float32, dev());
        testing::poison(y);
        const Array a = Array(x).transposed() + 1.0f, b = x * 2.0f;
        const auto expected = reference::evaluate({a.node(), b.node()});
        assign({x, y}, {a, b});
        wait_device();
        CHECK(testing::compare(x, expected[0], testing::Tolerance::exact(), "x = x^T + 1").ok);
        CHECK(testing::compare(y, expected[1], testing::Tolerance::exact(), "y = 2 x").ok);
    }
}

TEST_CASE("pointwise: a new scalar value hits the kernel cache and gives the new result") {
    Tensor x = rand({4097}, float32, 901);
    const auto first = run_checked({x * 2.5f + 1.0f});
    const KernelCacheStats before = kernel_cache_stats();
    const auto second = run_checked({x * -0.75f + 3.0f});
    Tensor x2 = rand({4097}, float32, 902);  // another tensor of the same layout: the same kernel
    run_checked({x2 * 4.0f + 0.5f});
    const KernelCacheStats after = kernel_cache_stats();
    CHECK(after.compiles == before.compiles);
    CHECK(after.hits >= before.hits + 4);  // two assign() calls per run_checked
    const Tensor a = first[0].to_host(), b = second[0].to_host(), xh = x.to_host();
    CHECK(b.get_double(7) == static_cast<float>(static_cast<float>(xh.get_double(7)) * -0.75f) + 3.0f);
    CHECK(a.get_double(7) != b.get_double(7));
    // A baked constant is part of the kernel: a new value compiles a new kernel.
    const KernelCacheStats c0 = kernel_cache_stats();
    run_checked({x * constant(2.5) + 1.0f}, false);
    run_checked({x * constant(-0.75) + 1.0f}, false);
    CHECK(kernel_cache_stats().compiles == c0.compiles + 2);
}

TEST_CASE(
    "pointwise: costly values that are the same for every element are computed once per thread, with the "
    "same bits") {
    // The bias corrections of an optimizer step: pow, exp, a division and a square root of a rank-0 tensor
    // and scalars, used by every element. The kernel computes them in {name}_uniforms before its element
    // loop; unfused (every op its own kernel) computes each once in a kernel of its own. Same bits.
    for (DType dt : {float32, float16, bfloat16, float64}) {
        const std::string dtype_name(name(dt));
        CAPTURE(dtype_name);
        for (std::int64_t n : {std::int64_t{1}, std::int64_t{1001},
                               std::int64_t{1} << 22}) {  // tail only, vectors, grid stride
            CAPTURE(n);
            Tensor x = rand({n}, dt, 91), t = rand({}, dt, 92, testing::Random::uniform(1.0, 20.0));
            const Array tt(t);
            const Array c1 = 1.0 - pow(0.9, tt), c2 = sqrt(exp(tt * 0.01) / (tt + 3.0));
            const std::vector<Array> ys{Array(x) / c1 + c2, Array(x) * c1};
            const std::string src = cuda_source(ys, "uniform_bias");
            CHECK(src.find("_uniforms(") != std::string::npos);
            const std::vector<Tensor> fused = run_checked(ys);
            std::vector<Tensor> unfused;
            {
                const OptionsScope off({.fusion = false});
                for (const Array& y : ys) unfused.push_back(y.eval());
            }
            for (std::size_t k = 0; k < ys.size(); ++k)
                require_same_bits(fused[k], unfused[k], fmt::format("output {}", k));
        }
    }
    // Only cheap uniform ops: nothing is hoisted, the kernel is as before.
    Tensor x = rand({1000}, float32, 93), t = rand({}, float32, 94);
    CHECK(cuda_source({Array(x) * (Array(t) + 1.0)}, "uniform_cheap").find("_uniforms(") ==
          std::string::npos);
}
