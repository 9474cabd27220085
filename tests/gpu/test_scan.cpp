// GPU tests of the scans (docs/semantics.md, "Scans"): the kernels' bits equal the CPU reference's for every
// op and dtype on rows of 0 to 70000 elements (one tile and the single-pass tree), inclusive and exclusive;
// long rows of many tiles (2^22 + 3 elements: 2049 tiles, eleven levels of the tree); a non-last axis; views
// (a permuted and a sliced input read in place, a result written into a permuted view); NaN, -0.0 and
// infinities; a kernel run twice (the counters left zero); elementwise producers and consumers fused as the
// kernel's prologue and epilogue.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <future>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

const Device cuda0 = Device::cuda(0);

using ScanFn = Array (*)(const Operand&, std::int64_t, ScanOptions, Loc);
struct ScanOp {
    const char* name;
    ScanFn fn;
};
const ScanOp kOps[] = {{"cumsum", cumsum},
                       {"cumprod", cumprod},
                       {"cummax", cummax},
                       {"cummin", cummin},
                       {"logcumsumexp", logcumsumexp}};

// Values for `op` of dtype t on the GPU: normal floats (cumprod: near 1, so products stay finite for long),
// integers in [-100, 100) (cumprod: mostly 1, some 2 and -1), bools.
Tensor values_for(const std::string& op, const Shape& s, DType t, std::uint64_t seed) {
    if (!is_float(t)) {
        const Tensor u = testing::random_tensor(s, DType::Float64, seed, testing::Random::uniform(0.0, 1.0));
        const Array x(u);
        const Array v = t == DType::Bool  ? Array(x < 0.5)
                        : op == "cumprod" ? where(x < 0.9, 1.0, where(x < 0.95, 2.0, -1.0)).astype(t)
                                          : floor(x * 200.0 - 100.0).astype(t);
        return v.eval().to(cuda0);
    }
    const Tensor n = op == "cumprod"
                         ? testing::random_tensor(s, t, seed, testing::Random::uniform(0.99, 1.01))
                         : testing::random_tensor(s, t, seed, testing::Random::normal(0.0, 4.0));
    return n.to(cuda0);
}

// Evaluates `y` on the GPU into a poisoned output and checks it against the reference bit for bit (NaN
// matches NaN; zeros by sign).
testing::Comparison compare_bits(const Array& y, const std::string& what) {
    Tensor out = Tensor::empty(y.shape(), y.dtype(), cuda0);
    testing::poison(out);
    assign(out, y);
    const Tensor expected = reference::evaluate(y.node());
    return testing::compare(out, expected, testing::Tolerance::exact(), what);
}

void check_bits(const Array& y, const std::string& what) {
    const testing::Comparison c = compare_bits(y, what);
    CHECK_MESSAGE(c.ok, what << ": " << c.message);
}

// Evaluates `y` fused and with fusion off, into poisoned outputs: the two give the same bits, and the fused
// result is the reference's within the tolerance derived from the ops. Returns the explain text of `y`.
std::string check_fused(const Array& y, const std::string& what) {
    Tensor fused = Tensor::empty(y.shape(), y.dtype(), cuda0);
    Tensor unfused = Tensor::empty(y.shape(), y.dtype(), cuda0);
    testing::poison(fused);
    testing::poison(unfused);
    assign(fused, y);
    {
        const OptionsScope off(Options{.fusion = false});
        assign(unfused, y);
    }
    const testing::Comparison same =
        testing::compare(fused, unfused, testing::Tolerance::exact(), what + " (fused, unfused)");
    CHECK_MESSAGE(same.ok, same.message);
    const testing::Comparison ref = testing::check_against_reference({y.node()}, {fused});
    CHECK_MESSAGE(ref.ok, what << ": " << ref.message);
    return explain({y});
}

}  // namespace

TEST_CASE("scan on the GPU: the reference's bits, every op, dtype and row length, inclusive and exclusive") {
    // Some 300 kernels are compiled: one thread per op compiles and runs its cases (Loom is safe to call from
    // several threads), and the comparisons are checked here, on the test's thread.
    struct Result {
        std::string what;
        testing::Comparison c;
    };
    std::vector<std::future<std::vector<Result>>> per_op;
    for (const ScanOp& op : kOps)
        per_op.push_back(std::async(std::launch::async, [op] {
            std::vector<Result> results;
            for (DType t : kAllDTypes) {
                if (std::string(op.name) == "logcumsumexp" && !is_float(t)) continue;
                for (std::int64_t n :
                     {0, 1, 31, 32, 33, 300, 1000, 2047, 2048, 2049, 4097, 3 * 2048 + 5, 70000}) {
                    const Tensor x = values_for(op.name, {3, n}, t, static_cast<std::uint64_t>(n) + 1);
                    for (bool exclusive : {false, true}) {
                        const std::string what =
                            fmt::format("{} {} n={}{}", op.name, name(t), n, exclusive ? " exclusive" : "");
                        results.push_back(
                            {what,
                             compare_bits(op.fn(x, 1, {.exclusive = exclusive}, Loc::current()), what)});
                    }
                }
            }
            return results;
        }));
    for (auto& f : per_op)
        for (const Result& r : f.get()) CHECK_MESSAGE(r.c.ok, r.what << ": " << r.c.message);
}

TEST_CASE("scan on the GPU: long rows of many tiles, run twice") {
    const std::int64_t n = (std::int64_t{1} << 22) + 3;
    for (DType t : {DType::Float32, DType::Float64, DType::BFloat16, DType::Int32}) {
        const Tensor x = values_for("cumsum", {n}, t, 7);
        for (int run = 0; run < 2; ++run)
            check_bits(cumsum(x, 0), fmt::format("cumsum {} 2^22 + 3, run {}", name(t), run));
    }
    const Tensor f = values_for("logcumsumexp", {2, n}, DType::Float32, 8);
    check_bits(logcumsumexp(f, -1), "logcumsumexp float32 [2, 2^22 + 3]");
    check_bits(cummax(f, -1, {.exclusive = true}), "cummax exclusive float32 [2, 2^22 + 3]");
    check_bits(cumprod(values_for("cumprod", {n}, DType::Float32, 9), 0), "cumprod float32 2^22 + 3");
}

TEST_CASE("scan on the GPU: a non-last axis, views read in place and a result written into a view") {
    const Tensor x = values_for("cumsum", {5, 4099, 3}, DType::Float32, 10);
    for (const ScanOp& op : kOps) {
        check_bits(op.fn(x, 1, {}, Loc::current()), fmt::format("{} axis 1 of [5, 4099, 3]", op.name));
        check_bits(op.fn(x, 0, {}, Loc::current()), fmt::format("{} axis 0 of [5, 4099, 3]", op.name));
        check_bits(op.fn(x.permute({2, 0, 1}), 2, {}, Loc::current()),
                   fmt::format("{} of a permuted view", op.name));
    }
    const Tensor h = values_for("cumsum", {9000}, DType::Float16, 11);
    check_bits(cumsum(h.slice({{1, ir::SliceSpec::kNone, 3}}), 0), "cumsum of a sliced float16 view");
    // The result stored into a permuted view of the output.
    const Array y = cumsum(x, 1);
    Tensor out = Tensor::empty({3, 5, 4099}, DType::Float32, cuda0);
    testing::poison(out);
    assign(out.permute({1, 2, 0}), y);
    const Tensor expected = reference::evaluate(y.node());
    const testing::Comparison c = testing::compare(out.permute({1, 2, 0}).clone(), expected,
                                                   testing::Tolerance::exact(), "into a view");
    CHECK_MESSAGE(c.ok, c.message);
}

TEST_CASE("scan on the GPU: NaN, -0.0 and infinities") {
    const std::int64_t n = 3 * 2048 + 5;
    std::vector<float> v(static_cast<std::size_t>(n), -0.0f);
    Tensor z = Tensor::host({n}, DType::Float32);
    std::memcpy(z.data(), v.data(), v.size() * 4);
    check_bits(cumsum(z.to(cuda0), 0), "cumsum of -0.0 over tiles");
    v[100] = 1.0f;
    v[3000] = NAN;
    v[5000] = INFINITY;
    v[5001] = -INFINITY;
    std::memcpy(z.data(), v.data(), v.size() * 4);
    const Tensor zd = z.to(cuda0);
    for (const ScanOp& op : kOps)
        check_bits(op.fn(zd, 0, {}, Loc::current()), fmt::format("{} with NaN and Inf", op.name));
}

TEST_CASE("scan on the GPU: elementwise prologues and epilogues fused into the scan kernel") {
    // Each is one kernel (the explain text says which prologue and epilogue), and its bits are the
    // reference's: the fused kernel scans the same values in the same order as the three kernels would.
    struct Case {
        std::string what;
        Array y;
    };
    const Tensor x = values_for("cumsum", {5, 3000}, DType::Float32, 41);
    const Tensor h = values_for("cumsum", {300, 6}, DType::BFloat16, 42);
    const Tensor d = values_for("cumsum", {2, 70000}, DType::Float64, 43);
    const Tensor s0 =
        testing::random_tensor({1}, DType::Float32, 44, testing::Random::uniform(1.0, 5.0)).to(cuda0);
    const std::vector<Case> cases = {
        {"Monte Carlo paths: exp(cumsum(0.0126 z + 0.0002) + log s0), z drawn in the kernel",
         exp(cumsum(random_normal({64, 252}, 7) * 0.0126 + 0.0002, 1) + log(Array(s0)))},
        {"cumsum(x * 0.5) - x over rows of two tiles", cumsum(Array(x) * 0.5, 1) - Array(x)},
        {"exclusive cumsum of exp(x), tree path", cumsum(exp(Array(x) * 0.25), 1, {.exclusive = true})},
        {"bfloat16 cummax over axis 0 of relu(h), times 2", cummax(relu(Array(h)), 0) * 2.0},
        {"logcumsumexp of a float64 row of 70000, then exp", exp(logcumsumexp(Array(d) * 0.01, 1))},
        {"cumprod of a transposed input's square (prologue over a view)",
         cumprod(Array(x).transposed() * Array(x).transposed() * 0.001 + 1.0, 0)},
    };
    // exp and log are CUDA's on the GPU (within their ulp bounds of the reference's): each fused result
    // equals the same program run unfused on the GPU bit for bit, and the reference within the derived
    // tolerance.
    for (const Case& c : cases) {
        const std::string text = check_fused(c.y, c.what);
        const bool one_kernel = text.find("prologue: none") == std::string::npos ||
                                text.find("epilogue: none") == std::string::npos;
        CHECK_MESSAGE(one_kernel, c.what << ":\n" << text);
        CHECK_MESSAGE(text.find("kernel 1") == std::string::npos, c.what << ": one kernel\n" << text);
    }
    // The prologue's value is also a root: computed twice (the scan's and the store's), the same bits.
    const Array p = Array(x) * 3.0;
    Tensor po = Tensor::empty(p.shape(), p.dtype(), cuda0), so = Tensor::empty(p.shape(), p.dtype(), cuda0);
    testing::poison(po);
    testing::poison(so);
    assign({po, so}, {p, cumsum(p, 1) + 1.0});
    CHECK(testing::compare(po, reference::evaluate(p.node()), testing::Tolerance::exact(), "p").ok);
    CHECK(testing::compare(so, reference::evaluate((cumsum(p, 1) + 1.0).node()), testing::Tolerance::exact(),
                           "cumsum(p) + 1")
              .ok);
}

TEST_CASE("scan on the GPU: a sum or mean of each row after the scan, in the scan kernel") {
    // One kernel (the scan's elements never stored), whose bits equal the same program unfused (the scan,
    // then the reduction kernel) and the reference's: the reductions' row order over rows of 1 to 256.
    struct Case {
        std::string what;
        Array y;
        bool row_reduction = true;  // the scan kernel reduces the rows
        bool one_kernel = true;
    };
    const Tensor s0 =
        testing::random_tensor({1}, DType::Float32, 51, testing::Random::uniform(1.0, 5.0)).to(cuda0);
    const Tensor t = values_for("cumsum", {6, 5, 40}, DType::Float32, 52);
    std::vector<Case> cases = {
        {"the Asian average: mean(exp(log s0 + cumsum(0.0126 z + 0.0002)), 1), z drawn in the kernel",
         mean(exp(log(Array(s0)) + cumsum(random_normal({1000, 252}, 9) * 0.0126 + 0.0002, 1)), {1})},
        {"maximum(mean(..., 1) - 1, 0): the row outputs after the reduction",
         maximum(mean(exp(cumsum(random_normal({64, 252}, 10) * 0.01, 1)), {1}) - 1.0, 0.0)},
        {"the reduced rows transposed: the sums in the scan kernel, the transpose a kernel of its own",
         (sum(cumsum(Array(t), 2), {2}) * 2.0).transposed(), true, false},
        {"a sum over the scan's other axis: a reduction kernel of its own", sum(cumsum(Array(t), 2), {1}),
         false, false},
    };
    for (std::int64_t n : {1, 3, 4, 7, 8, 9, 64, 65, 200, 256, 257, 300, 512, 1000, 1024}) {
        const Tensor x = values_for("cumsum", {19, n}, DType::Float32, static_cast<std::uint64_t>(n) + 50);
        const Tensor d = values_for("cumsum", {5, 2, n}, DType::Float64, static_cast<std::uint64_t>(n) + 60);
        cases.push_back({"sum(cumsum(x) * 0.5, 1) + 1, rows of " + std::to_string(n),
                         sum(cumsum(Array(x), 1) * 0.5, {1}) + 1.0});
        cases.push_back({"mean(cumsum(d), 2, keepdims) of float64, rows of " + std::to_string(n),
                         mean(cumsum(Array(d), 2), {2}, true)});
    }
    for (const Case& c : cases) {
        const std::string text = check_fused(c.y, c.what);
        CHECK_MESSAGE((text.find("as the kernel finishes it") != std::string::npos) == c.row_reduction,
                      c.what << ":\n"
                             << text);
        CHECK_MESSAGE((text.find("kernel 1") == std::string::npos) == c.one_kernel, c.what << ":\n" << text);
    }
    // The reduced rows read by two consumers, one of them with another reduction's values: each root gets its
    // own values (the row reduction's kernel is not merged again with a reader of its results).
    const Tensor zx = values_for("cumsum", {6, 40}, DType::Float32, 70),
                 zy = values_for("cumsum", {6, 7}, DType::Float32, 71);
    const Array z = sum(cumsum(Array(zx), 1), {1}), u = sum(Array(zy), {1});
    for (const std::vector<Array>& roots :
         {std::vector<Array>{z + u, z * 3.0}, std::vector<Array>{z * 3.0, z + u}}) {
        Tensor a = Tensor::empty({6}, DType::Float32, cuda0), b = Tensor::empty({6}, DType::Float32, cuda0);
        testing::poison(a);
        testing::poison(b);
        assign({a, b}, roots);
        const testing::Comparison c =
            testing::check_against_reference({roots[0].node(), roots[1].node()}, {a, b});
        CHECK_MESSAGE(c.ok, c.message);
    }
}
