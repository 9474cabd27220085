// GPU reductions against the CPU reference: every op, axis set and keepdims on ranks 1-4 and the sizes the
// contract names; bit-for-bit where the contract promises bits (every reduction of exact values, in
// particular float32 sum and mean); non-contiguous and broadcast inputs; NaN and Inf at chunk boundaries;
// split, outer and warp schedules; fusion of prologues, epilogues and normalizations, compared bit for bit
// with the same graph run one kernel per reduction; repeated runs.
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "loom/runtime/gpu_executor.hpp"
#include "test_pointwise_util.hpp"

using namespace loom;
using namespace pwtest;

namespace {

const ir::Op kOps[] = {ir::Op::Sum,    ir::Op::Prod,   ir::Op::Min, ir::Op::Max, ir::Op::Mean,
                       ir::Op::ArgMin, ir::Op::ArgMax, ir::Op::Any, ir::Op::All};

Array red(ir::Op op, const Array& x, std::vector<std::int64_t> axes, bool keepdims) {
    return Array(ir::reduce(op, x.node(), std::move(axes), keepdims));
}

// Every reduction of `x`'s graph with its derived tolerance (exact for reductions of inputs).
void check_all_ops(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdims,
                   const std::string& what) {
    std::vector<Array> ys;
    for (ir::Op op : kOps) {
        try {
            ys.push_back(red(op, Array(x), axes, keepdims));
        } catch (const Error&) {  // no identity over a zero-length axis: the constructor refuses
        }
    }
    if (ys.empty()) return;
    CAPTURE(what);
    run_checked(ys);
}

std::string axes_text(const std::vector<std::int64_t>& a) {
    return fmt::format("[{}]", fmt::join(a, ","));
}

}  // namespace

TEST_CASE("reduce: every op on float32 rows of the contract's sizes, bit for bit") {
    for (std::int64_t L : {0, 1, 31, 32, 33, 1023, 1025, 4097, 8192, 8193, 20000}) {
        for (std::int64_t rows : {1, 3, 300}) {
            Tensor x = rand({rows, L}, float32, 100 + static_cast<std::uint64_t>(L * 7 + rows));
            check_all_ops(x, {1}, false, fmt::format("rows {} L {}", rows, L));
            check_all_ops(x, {0}, true, fmt::format("columns of {} x {}", rows, L));
        }
    }
}

TEST_CASE("reduce: every op x dtype x axis set x keepdims on ranks 1-4") {
    const std::vector<std::pair<Shape, std::vector<std::vector<std::int64_t>>>> cases = {
        {{1025}, {{0}, {}}},
        {{33, 17}, {{0}, {1}, {0, 1}}},
        {{5, 0, 3}, {{1}, {0, 2}, {2}}},
        {{4, 6, 33}, {{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}}},
        {{3, 4, 5, 37}, {{0, 3}, {1, 2}, {3}, {0, 1, 2, 3}, {-1, -2}}},
    };
    std::uint64_t seed = 7;
    for (DType d : kAllDTypes) {
        for (const auto& [shape, axis_sets] : cases) {
            for (const auto& axes : axis_sets) {
                for (bool keep : {false, true}) {
                    Tensor x = rand(shape, d, ++seed);
                    check_all_ops(x, axes, keep,
                                  fmt::format("{} {} axes {} keepdims {}", name(d), to_string(shape),
                                              axes_text(axes), keep));
                }
            }
        }
    }
}

TEST_CASE("reduce: transposed, sliced, broadcast and misaligned inputs") {
    Tensor x = rand({300, 2051}, float32, 11);
    const Array t = transpose(Array(x));  // [2051, 300], strided
    for (auto axes : std::vector<std::vector<std::int64_t>>{{0}, {1}, {}}) {
        CAPTURE(axes_text(axes));
        run_checked({red(ir::Op::Sum, t, axes, false), red(ir::Op::ArgMax, t, axes, false),
                     red(ir::Op::Min, t, axes, false)});
    }
    const Array s = Array(x).slice({{1, ir::SliceSpec::kNone, 2}, {3, -5, 3}});  // steps and offsets
    run_checked({sum(s, 1), sum(s, 0), argmin(s, 1)});
    const Array shifted = Array(x).slice({{0, ir::SliceSpec::kNone, 1}, {1, 2049, 1}});  // misaligned rows
    run_checked({sum(shifted, 1), mean(shifted, 1)});
    Tensor v = rand({4097}, float32, 12);
    const Array b = broadcast_to(Array(v), {64, 4097});  // stride-0 rows
    run_checked({sum(b, 0), sum(b, 1), max(b, 0)});
}

TEST_CASE(
    "reduce: rows ending inside a run of 4 over stride-0 operands, with element outputs, every float dtype") {
    // A stride-0 operand is read once per position and the value is the same at every position: NVVM once
    // dropped position 1's value of such a run when the row ended at position 2 (a bfloat16 row of 2 reduced
    // max(x, 0), and (x - min) / (max - min) gave 0 where the reference has 0 / 0 = NaN). Every tail length
    // (1 to 3 past a run), constant rows (NaN expected) and rows broadcast from one vector.
    for (DType d : {float32, float64, float16, bfloat16}) {
        CAPTURE(name(d));
        for (std::int64_t L : {1, 2, 3, 5, 6, 7, 9, 1001}) {
            CAPTURE(L);
            const Array c = broadcast_to(Array(rand({1}, d, 90 + L)), {3, L});          // every stride 0
            const Array v = broadcast_to(Array(rand({L}, d, 91 + L)), {5, L});          // rows stride 0
            const Array t = Array(rand({1}, d, 92 + L).as_strided({4, L}, {0, 0}, 0));  // a stride-0 tensor
            for (const Array& x : {c, v, t}) {
                const Array lo = min(x, 1, true), hi = max(x, -1, true);
                run_checked({(x - lo) / (hi - lo), max(x, 1), min(x, 1), sum(x, 1)});
                run_checked({softmax(x), x * 2.0});
            }
        }
    }
}

TEST_CASE("reduce: the vector and scalar variants and every schedule give the same bits") {
    // The same row sums through a contiguous (vector) and a misaligned (scalar) view of the same values.
    Tensor big = rand({65, 8193 * 4 + 4}, float32, 21);
    Tensor a = Tensor::empty({65, 8193 * 4}, float32, dev());
    Tensor b = Tensor::empty({65, 8193 * 4}, float32, dev());
    const Array aligned = Array(big).slice({{0, ir::SliceSpec::kNone, 1}, {0, 8193 * 4, 1}});
    const Array off = Array(big).slice({{0, ir::SliceSpec::kNone, 1}, {1, 8193 * 4 + 1, 1}});
    assign(a, aligned);
    assign(b, off);  // b holds the values of `off`, contiguous
    wait_device();
    const Tensor s1 = run_one(sum(Array(b), 1));
    const Tensor s2 = run_one(sum(off, 1));
    require_same_bits(s1, s2, "contiguous copy vs misaligned view");
    // Repeated runs are bit-identical; the split full reduction equals the reference bit for bit.
    Tensor x = rand({(1 << 24) + 3}, float32, 22);
    const Tensor first = run_one(sum(Array(x) * Array(x)), false);
    for (int k = 0; k < 5; ++k)
        require_same_bits(run_one(sum(Array(x) * Array(x)), false), first, "repeated run");
    // Few columns, long columns: the outer schedule split over blocks.
    Tensor c = rand({200000, 40}, float32, 23);
    run_checked({sum(c, 0), mean(c, 0), max(c, 0)}, false);
    // Few long rows: the inner schedule split over blocks.
    Tensor r = rand({3, 1 << 20}, float32, 24);
    run_checked({sum(r, 1), argmax(r, 1), min(r, 1)}, false);
}

TEST_CASE("reduce: NaN and infinities at chunk boundaries, all-NaN and all-infinite rows, ties") {
    const double nan = std::numeric_limits<double>::quiet_NaN(),
                 inf = std::numeric_limits<double>::infinity();
    const std::int64_t L = 3 * 8192 + 5;
    Tensor h = Tensor::host({6, L}, float32);
    auto* p = static_cast<float*>(h.data());
    for (std::int64_t i = 0; i < 6 * L; ++i) p[i] = static_cast<float>((i * 37) % 101) - 50.0f;
    p[0 * L + 8191] = static_cast<float>(nan);
    p[0 * L + 8192] = static_cast<float>(nan);
    for (std::int64_t i = 0; i < L; ++i) p[1 * L + i] = static_cast<float>(nan);
    for (std::int64_t i = 0; i < L; ++i) p[2 * L + i] = static_cast<float>(-inf);
    for (std::int64_t i = 0; i < L; ++i) p[3 * L + i] = static_cast<float>(inf);
    for (std::int64_t i = 0; i < L; ++i) p[4 * L + i] = 7.0f;  // ties: the first index wins
    p[5 * L + L - 1] = static_cast<float>(nan);                // NaN in the last, partial chunk
    const Tensor x = h.to(dev());
    const Array X(x);
    run_checked({max(X, 1), min(X, 1), argmax(X, 1), argmin(X, 1), sum(X, 1), mean(X, 1)});
    // With a fused epilogue: max of all -Inf stays -Inf, min of all +Inf stays +Inf.
    run_checked({max(X, 1) * 2.0, min(X, 1) + 1.0});
    // Transposed: indices refer to the logical order.
    run_checked({argmax(transpose(X), 0), argmin(transpose(X), 0)});
}

TEST_CASE(
    "reduce: float max and min keep the exact fold's bits: NaN payloads, signed zeros, every position in a "
    "run of 4") {
    // Runs of 4 values fold with fmaxf / fminf (lm::max_run, lm::min_run) and are folded again exactly where
    // those could differ: a NaN (the first NaN operand wins, payload and all) or a zero result (-0 < +0).
    // Rows held in registers (L = 8192) and streamed (L = 20000); each special at each position of a run.
    const std::uint32_t nan_a = 0x7fc01234u, nan_b = 0xffc04321u;
    auto bits = [](float f) {
        std::uint32_t u;
        std::memcpy(&u, &f, 4);
        return u;
    };
    auto of = [](std::uint32_t u) {
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    };
    for (std::int64_t L : {std::int64_t{8192}, std::int64_t{20000}}) {
        constexpr int kRows = 24;
        Tensor h = Tensor::host({kRows, L}, float32);
        auto* p = static_cast<float*>(h.data());
        std::vector<std::uint32_t> want_max(kRows), want_min(kRows);
        for (int r = 0; r < kRows; ++r) {
            float* row = p + r * L;
            const int kind = r / 4, pos = r % 4;  // pos: the special's position in its run of 4
            const std::int64_t at = 4 * (37 + 256 * (r % 3)) + pos;
            switch (kind) {
                case 0:  // all -0 but one +0: max +0, min -0
                    for (std::int64_t i = 0; i < L; ++i) row[i] = -0.0f;
                    row[at] = 0.0f;
                    want_max[r] = 0u, want_min[r] = 0x80000000u;
                    break;
                case 1:  // all +0 but one -0: max +0, min -0
                    for (std::int64_t i = 0; i < L; ++i) row[i] = 0.0f;
                    row[at] = -0.0f;
                    want_max[r] = 0u, want_min[r] = 0x80000000u;
                    break;
                case 2:  // negative and positive values and a -0 in the run: max and min are nonzero
                    for (std::int64_t i = 0; i < L; ++i) row[i] = static_cast<float>((i * 37) % 101) - 50.5f;
                    row[at] = -0.0f;
                    want_max[r] = bits(49.5f), want_min[r] = bits(-50.5f);
                    break;
                case 3:  // negative values, then -0 at `at` and +0 one run later: max +0 (a zero result), min
                         // the least
                    for (std::int64_t i = 0; i < L; ++i) row[i] = -1.0f - static_cast<float>(i % 7);
                    row[at] = -0.0f;
                    row[at + 4] = 0.0f;
                    want_max[r] = 0u, want_min[r] = bits(-7.0f);
                    break;
                case 4:  // two NaN payloads in one run of one lane: the first wins for max and min
                    for (std::int64_t i = 0; i < L; ++i) row[i] = static_cast<float>(i % 13) - 6.0f;
                    row[4 * (37 + 256 * (r % 3)) + (pos == 3 ? 2 : pos)] = of(nan_a);
                    row[4 * (37 + 256 * (r % 3)) + (pos == 3 ? 3 : pos + 1)] = of(nan_b);
                    want_max[r] = want_min[r] = nan_a;
                    break;
                default:  // infinities around one NaN: the NaN
                    for (std::int64_t i = 0; i < L; ++i)
                        row[i] = (i % 2) ? std::numeric_limits<float>::infinity()
                                         : -std::numeric_limits<float>::infinity();
                    row[at] = of(nan_b);
                    want_max[r] = want_min[r] = nan_b;
                    break;
            }
        }
        const Array X(h.to(dev()));
        // float16 and bfloat16 (values widened to float in registers): signed zeros against the reference.
        for (DType d : {float16, bfloat16}) {
            CAPTURE(name(d));
            run_checked({max(astype(X, d), 1), min(astype(X, d), 1)});
        }
        const std::vector<Tensor> outs = run_checked({max(X, 1), min(X, 1)});
        const Tensor mx = outs[0].to(Device::cpu()), mn = outs[1].to(Device::cpu());
        for (int r = 0; r < kRows; ++r) {
            CAPTURE(L);
            CAPTURE(r);
            CHECK(bits(static_cast<const float*>(mx.data())[r]) == want_max[r]);
            CHECK(bits(static_cast<const float*>(mn.data())[r]) == want_min[r]);
        }
    }
}

TEST_CASE("reduce: int8 and int32 sums in int64, mean of integers, any/all") {
    Tensor i8 = rand({64, 5000}, int8, 31);
    Tensor i32 = rand({64, 5000}, int32, 32);
    run_checked({sum(i8, 1), sum(i32, 1), mean(i8, 1), mean(i32, 0), any(Array(i8) > 120, 1),
                 all(Array(i32) != 7, 0)});
    // 2^31 + 8 int8 ones sum to 2147483656.
    Tensor host_ones = Tensor::host({(std::int64_t{1} << 31) + 8}, int8);
    std::memset(host_ones.data(), 1, static_cast<std::size_t>(host_ones.nbytes()));
    const Tensor ones = host_ones.to(dev());
    Tensor s = Tensor(sum(Array(ones)));
    const Tensor hs = s.to(Device::cpu());
    CHECK(*static_cast<const std::int64_t*>(hs.data()) == 2147483656LL);
}

TEST_CASE("reduce: fusion gives one kernel and the same bits as one kernel per reduction") {
    // Rows held in registers: one chunk and two chunks, of exactly their register capacity (full rows: no
    // bounds checks in the 4-wide variant) and not.
    for (std::int64_t L : {8192, 16384, 8000, 12289}) {
        CAPTURE(L);
        Tensor x = rand({L == 8192 ? 1000 : 300, L}, float32, 41);
        Tensor w = rand({L}, float32, 42), b = rand({L}, float32, 43);
        const Array X(x), W(w), B(b);
        // softmax
        const Array m = max(X, -1, true);
        const Array e = exp(X - m);
        const Array sm = e / sum(e, -1, true);
        // layernorm
        const Array mu = mean(X, -1, true);
        const Array d = X - mu;
        const Array ln = d * rsqrt(mean(d * d, -1, true) + 1e-5) * W + B;
        // rmsnorm
        const Array rms = X * rsqrt(mean(X * X, -1, true) + 1e-6) * W;
        for (const auto& [y, label] : std::vector<std::pair<Array, std::string>>{
                 {sm, "softmax"}, {ln, "layernorm"}, {rms, "rmsnorm"}}) {
            CAPTURE(label);
            const std::string plan = gpu::explain(ir::run_pipeline({y.node()}, ir::standard_passes()), label);
            CHECK(plan.find("kernel 1") == std::string::npos);  // one kernel
            const Tensor fused = run_one(y, false);
            // Unfused: every reduction materialized first (eval of each reduced value, then the rest).
            Tensor unfused;
            if (label == "softmax") {
                const Tensor mt = eval(m);
                const Array e2 = exp(X - Array(mt));
                const Tensor st = eval(sum(e2, -1, true));
                unfused = eval(e2 / Array(st));
            } else if (label == "layernorm") {
                const Tensor mut = eval(mu);
                const Array d2 = X - Array(mut);
                const Tensor vt = eval(mean(d2 * d2, -1, true));
                unfused = eval(d2 * rsqrt(Array(vt) + 1e-5) * W + B);
            } else {
                const Tensor mt = eval(mean(X * X, -1, true));
                unfused = eval(X * rsqrt(Array(mt) + 1e-6) * W);
            }
            wait_device();
            require_same_bits(fused, unfused, label + ": fused vs unfused");
        }
        // sum(x*x) reads x once in one kernel; sum and max of one input share a kernel; mean and var too.
        const std::string two =
            gpu::explain(ir::run_pipeline({sum(X, 1).node(), max(X, 1).node(), sqrt(mean(X * X, 1)).node()},
                                          ir::standard_passes()),
                         "");
        CHECK(two.find("kernel 1") == std::string::npos);
        run_checked({sum(X, 1), max(X, 1), sqrt(mean(X * X, 1))}, false);
    }
}

TEST_CASE(
    "reduce: var, std, softmax, logsumexp, layernorm, rmsnorm in float32, float16 and bfloat16 against the "
    "reference") {
    for (DType dt : {float32, float16, bfloat16}) {
        const std::string dtype_name(name(dt));
        CAPTURE(dtype_name);
        for (std::int64_t L : {1000, 4096, 20000}) {  // held in registers, and two chunks and more
            CAPTURE(L);
            Tensor x = rand({96, L}, dt, 81), w = rand({L}, dt, 82), b = rand({L}, dt, 83);
            const std::vector<Array> norms{softmax(x), layernorm(x, w, b, 1e-5), rmsnorm(x, w, 1e-6),
                                           logsumexp(x)};
            for (const Array& y : norms) {
                const std::string plan =
                    gpu::explain(ir::run_pipeline({y.node()}, ir::standard_passes()), "");
                if (L <= 4096) CHECK(plan.find("kernel 1") == std::string::npos);  // one kernel per row block
            }
            run_checked(norms, false);
            run_checked({var(x, 1, 1.0), stddev(x, -1), var(x, 0), stddev(x)}, false);
        }
    }
    // Half rows with deviations of 300: their squares pass float16's 65504; the statistics in float32 do not.
    Tensor h = rand({64, 2048}, float16, 84, testing::Random::uniform(-300, 300));
    const std::vector<Tensor> got =
        run_checked({var(h, 1), rmsnorm(h, 1.0, 1e-5), layernorm(h, 1.0, 0.0, 1e-5)}, false);
    const Tensor v = got[0].to(Device::cpu()), r = got[1].to(Device::cpu());
    for (std::int64_t i = 0; i < 64; ++i) {
        CAPTURE(i);
        REQUIRE(std::isfinite(v.get_double(i)));
        CHECK(v.get_double(i) > 20000.0);  // about 300^2 / 3
        CHECK(std::isfinite(r.get_double(i * 2048)));
    }
}

TEST_CASE(
    "reduce: a split row gives the same bits whatever blocks share it, also with more than 256 groups of "
    "chunk partials") {
    // One row of 301 chunks (two groups of chunk partials) reduced as 1, 2, 3, 7, 100 and 131 identical rows
    // (a stride-0 broadcast): on an H200 264, 132, 88, 37, 13 (5 waves) and 2 blocks per row, so the ranges,
    // the blocks that complete groups and the one that completes the row all differ. Every row has the
    // reference's bits, and the bits of the single row.
    const std::int64_t L = 300 * 8192 + 77;
    Tensor v = rand({L}, float32, 61);
    std::uint32_t single_sum = 0;
    for (std::int64_t rows : {1, 2, 3, 7, 100, 131}) {
        CAPTURE(rows);
        const Array b = broadcast_to(Array(v), {rows, L});
        const std::string plan =
            gpu::explain(ir::run_pipeline({sum(b, 1).node()}, ir::standard_passes()), "");
        CHECK(plan.find("split over") != std::string::npos);
        const std::vector<Tensor> got = run_checked({sum(b, 1), argmax(b, 1), min(b, 1), mean(b, 1)}, false);
        const Tensor h = got[0].to(Device::cpu());
        const auto* bits = static_cast<const std::uint32_t*>(h.data());
        if (rows == 1) single_sum = bits[0];
        for (std::int64_t r = 0; r < rows; ++r) REQUIRE(bits[r] == single_sum);
    }
    // A full sum over 65,540 chunks: 257 groups, so the row combines its group partials in two windows.
    Tensor w = rand({1 << 15}, float32, 62);
    const Array big = broadcast_to(Array(w), {(1 << 14) + 1, 1 << 15});
    run_checked({sum(big), max(big)}, false);
}

TEST_CASE("reduce: split counters stay zero between launches: back to back, two streams, two threads") {
    // Split kernels find their counters zero (a buffer per stream; the block that completes a counter resets
    // it); any counter left nonzero would make a later launch finish early or never, and change bits.
    Tensor x = rand({1 << 22}, float32, 51);     // full sum: 512 chunks over many blocks
    Tensor c = rand({4096, 1024}, float32, 52);  // column sums: 16 chunks of 256 rows, split
    const Tensor ref_s = eval(sum(x)), ref_c = eval(sum(c, 0));
    wait_device();
    {
        const auto plan =
            gpu::explain(ir::run_pipeline({sum(x).node(), sum(c, 0).node()}, ir::standard_passes()), "");
        CHECK(plan.find("split") != std::string::npos);
    }
    std::vector<Tensor> a, b;
    for (int i = 0; i < 20; ++i) {
        a.push_back(eval(sum(x)));
        b.push_back(eval(sum(c, 0)));
    }
    Stream s1, s2;
    synchronize();
    for (int i = 0; i < 10; ++i) {
        with_stream(s1, [&] { a.push_back(eval(sum(x))); });
        with_stream(s2, [&] { b.push_back(eval(sum(c, 0))); });
        with_stream(s2, [&] { a.push_back(eval(sum(x))); });
    }
    s1.synchronize();
    s2.synchronize();
    std::vector<Tensor> ta(10), tb(10);
    std::string e1, e2;  // an exception in a thread is reported here, not by terminating
    auto guarded = [](std::string& err, const std::function<void()>& fn) {
        try {
            fn();
        } catch (const std::exception& e) {
            err = e.what();
        }
    };
    std::thread t1([&] {
        guarded(e1, [&] {
            for (auto& t : ta) t = eval(sum(x));
            synchronize();
        });
    });
    std::thread t2([&] {
        guarded(e2, [&] {
            for (auto& t : tb) t = eval(sum(c, 0));
            synchronize();
        });
    });
    t1.join();
    t2.join();
    REQUIRE(e1.empty());
    REQUIRE(e2.empty());
    wait_device();
    a.insert(a.end(), ta.begin(), ta.end());
    b.insert(b.end(), tb.begin(), tb.end());
    for (std::size_t i = 0; i < a.size(); ++i)
        require_same_bits(a[i], ref_s, fmt::format("full sum, launch {}", i));
    for (std::size_t i = 0; i < b.size(); ++i)
        require_same_bits(b[i], ref_c, fmt::format("column sums, launch {}", i));
    run_checked({sum(x), sum(c, 0)}, false);  // and the reference
}

TEST_CASE("reduce: traced functions with reductions") {
    auto f = loom::function("row_softmax", [](Array x) {
        const Array e = exp(x - max(x, -1, true));
        return e / sum(e, -1, true);
    });
    Tensor x = rand({256, 3000}, float32, 51);
    Tensor y = Tensor::empty({256, 3000}, float32, dev());
    testing::poison(y);
    f(x, y);
    wait_device();
    const Array X(x);
    const Array e = exp(X - max(X, -1, true));
    const Tensor expect = run_one(e / sum(e, -1, true), false);
    require_same_bits(y, expect, "traced vs lazy");
}
