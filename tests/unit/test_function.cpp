// Traced functions on host tensors (the CPU reference runs them): results, specializations, traces,
// captured scalars, errors, generated code, threads.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <functional>
#include <loom/loom.hpp>
#include <thread>

#include "error_message.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/program.hpp"

using namespace loom;

namespace {

Tensor host_random(const Shape& shape, DType dt, std::uint64_t seed) {
    return testing::random_tensor(shape, dt, seed);
}

float at(const Tensor& t, std::int64_t i) {
    return static_cast<float>(t.get_double(i));
}

}  // namespace

TEST_CASE("a traced function gives the same values as the expression evaluated directly") {
    auto f = loom::function("scale_bias_act",
                            [](Array x, Array scale, Array bias) { return gelu(x * scale + bias); });
    Tensor x = host_random({8, 16}, float32, 1), s = host_random({16}, float32, 2),
           b = host_random({16}, float32, 3);
    const Tensor got = f(x, s, b);
    const Tensor want = gelu(x * s + b);
    REQUIRE(got.shape() == Shape{8, 16});
    for (std::int64_t i = 0; i < got.numel(); ++i) CHECK(at(got, i) == at(want, i));
    Tensor out = Tensor::host({8, 16}, float32);
    testing::poison(out);
    f(x, s, b, out);  // preallocated output
    for (std::int64_t i = 0; i < out.numel(); ++i) CHECK(at(out, i) == at(want, i));
    CHECK(f.stats().calls == 2);
    CHECK(f.stats().specializations == 1);
    CHECK(f.stats().traces == 1);
}

TEST_CASE("several results come back as a std::array, in the order returned") {
    auto f = loom::function("sum_diff", [](Array a, Array b) { return std::tuple{a + b, a - b}; });
    Tensor a = host_random({5}, float64, 4), b = host_random({5}, float64, 5);
    auto [s, d] = f(a, b);
    for (int i = 0; i < 5; ++i) {
        CHECK(s.get_double(i) == a.get_double(i) + b.get_double(i));
        CHECK(d.get_double(i) == a.get_double(i) - b.get_double(i));
    }
}

TEST_CASE("a new specialization per dtype, shape or layout, the same arguments reuse it") {
    auto f = loom::function("twice", [](Array x) { return x * 2.0; });
    Tensor a = host_random({4, 4}, float32, 6), b = host_random({4, 4}, float32, 7);
    (void)f(a);
    (void)f(b);  // same specialization: new data only
    CHECK(f.stats().specializations == 1);
    (void)f(host_random({4, 5}, float32, 8));  // shape
    CHECK(f.stats().specializations == 2);
    (void)f(host_random({4, 4}, float64, 9));  // dtype
    CHECK(f.stats().specializations == 3);
    (void)f(a.as_strided({4, 4}, {1, 4}, 0));  // strides (a transposed view)
    CHECK(f.stats().specializations == 4);
    CHECK(f.stats().traces == 4);
    CHECK(f.stats().calls == 5);
}

TEST_CASE("scalars captured by the callable keep the value they had when it was traced") {
    double k = 3.0;
    auto f = loom::function("scale_by_k", [&k](Array x) { return x * k; });
    Tensor x = host_random({6}, float32, 10);
    const Tensor first = f(x);
    k = 5.0;  // too late: the specialization was traced with 3.0
    const Tensor second = f(x);
    for (int i = 0; i < 6; ++i) {
        CHECK(at(first, i) == at(x, i) * 3.0f);
        CHECK(at(second, i) == at(x, i) * 3.0f);
    }
}

TEST_CASE("errors name the function and the user's line") {
    auto bad = loom::function("bad_shapes", [](Array a, Array b) { return a + b; });
    Tensor a = host_random({4, 3}, float32, 11), b = host_random({5}, float32, 12);
    CHECK_THROWS_WITH_AS((void)bad(a, b),
                         doctest::Contains("add(): shapes [4, 3] float32 and [5] float32 do not broadcast"),
                         Error);
    Tensor captured = host_random({3}, float32, 13);
    const int capture_def = __LINE__ + 1;
    auto reads_capture = loom::function("reads_capture", [&captured](Array x) { return x + captured; });
    try {
        (void)reads_capture(a);  // the call's line: capture_def + 2
        FAIL("no exception");
    } catch (const Error& e) {
        const std::string msg = e.what();
        CHECK(msg.find("reads_capture(): the function reads a tensor that is not one of its arguments") == 0);
        CHECK_MESSAGE(
            msg.find(fmt::format("(test_function.cpp:{}; the function is defined at test_function.cpp:{})",
                                 capture_def + 2, capture_def)) != std::string::npos,
            msg);
    }
    Tensor out_wrong = Tensor::host({2}, float32);
    auto f = loom::function("plus_one", [](Array x) { return x + 1.0; });
    const int def_line = __LINE__ - 1;
    CHECK_THROWS_AS(f(a, out_wrong), Error);
    // The call's line and the definition's: a wrong output, and an undefined argument.
    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { f(a, out_wrong); });
    CHECK(msg.find("plus_one(): output 0 is [2] float32 on cpu but the result is [4, 3] float32") == 0);
    CHECK(msg.find(fmt::format("test_function.cpp:{}; the function is defined at test_function.cpp:{})", line,
                               def_line)) != std::string::npos);
    const Tensor undefined;
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)f(undefined); });
    CHECK(msg.find("plus_one(): argument 0 is an undefined Tensor") == 0);
    CHECK(msg.find(fmt::format("test_function.cpp:{};", line)) != std::string::npos);
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)f.cuda_source(undefined); });
    CHECK(msg.find(fmt::format("test_function.cpp:{};", line)) != std::string::npos);
}

TEST_CASE("cuda_source of a traced function shows its kernel, named after it") {
    auto f = loom::function("scale_bias_act", [](Array x, Array s, Array b) { return relu(x * s + b); });
    Tensor x = host_random({64, 32}, float32, 14), s = host_random({32}, float32, 15),
           b = host_random({32}, float32, 16);
    const std::string src = f.cuda_source(x, s, b);
    CHECK(src.find("scale_bias_act") != std::string::npos);
    CHECK(src.find("relu") != std::string::npos);
    CHECK(src.find("row broadcast") != std::string::npos);
}

TEST_CASE("calls from several threads share one specialization and give right results") {
    auto f = loom::function("cube", [](Array x) { return x * x * x; });
    Tensor x = host_random({32}, float32, 17);
    const Tensor want = Array(x) * x * x;
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 20; ++i) {
                const Tensor got = f(x);
                for (std::int64_t k = 0; k < got.numel(); ++k) wrong += at(got, k) != at(want, k);
            }
        });
    for (auto& th : threads) th.join();
    CHECK(wrong == 0);
    CHECK(f.stats().specializations == 1);
    CHECK(f.stats().calls == 80);
}

TEST_CASE("cuda_source of a traced function with reductions follows the arguments' layout") {
    // The kernels depend on the specialization: a transposed argument is read through its strides.
    auto f = loom::function("row_sums", [](Array x) { return sum(x, 1); });
    Tensor base = Tensor::host({64, 48}, float32);
    const std::string contiguous = f.cuda_source(base);
    const std::string transposed = f.cuda_source(base.as_strided({48, 64}, {1, 48}, 0));
    CHECK(contiguous.find("in0: input 0, float32, contiguous") != std::string::npos);
    CHECK(transposed.find("in0: input 0, float32, strided") != std::string::npos);
    // Negative strides (a reversed view) reach elements before element 0 of the view.
    Tensor rev = base.as_strided({64, 48}, {-48, 1}, 63 * 48);
    CHECK(f.cuda_source(rev).find("row_sums") != std::string::npos);
}

TEST_CASE(
    "a program with reductions plans, from its arguments' layouts alone, the kernels evaluation generates") {
    // A Program plans its reduction kernels once, from the placeholders and the specialization's layouts
    // (no tensor bound); evaluation plans the same graph with the tensors bound. Both must give the same
    // kernels: fused, materialized (two kernels), strict, split and strict, for contiguous, transposed,
    // reversed and misaligned arguments, and for one tensor passed as two arguments.
    using Fn = std::function<std::vector<Array>(const std::vector<Array>&)>;
    const auto softmax_rows = [](const Array& x) {
        const Array e = exp(x - max(x, -1, true));
        return e / sum(e, -1, true);
    };
    Tensor base = host_random({64, 48}, float32, 30), line = host_random({4097}, float32, 31);
    Tensor w = host_random({64}, float32, 32), b = host_random({64}, float32, 33);
    struct Case {
        std::string name;
        std::vector<Tensor> args;
        Fn fn;
        std::size_t kernels;
    };
    const std::vector<Case> cases{
        {"softmax_rows",
         {host_random({64, 4096}, float32, 34)},
         [&](const auto& a) { return std::vector{softmax_rows(a[0])}; },
         1},
        {"layernorm_t",
         {base.as_strided({48, 64}, {1, 48}, 0), w, b},
         [](const auto& a) {
             const Array d = a[0] - mean(a[0], -1, true);
             return std::vector{d * rsqrt(mean(d * d, -1, true) + 1e-5) * a[1] + a[2], mean(a[0], -1)};
         },
         1},
        {"centred",
         {host_random({128, 512}, float32, 35)},
         [](const auto& a) { return std::vector{a[0] - mean(a[0])}; },
         2},
        {"reversed",
         {host_random({128, 512}, float32, 36)},
         [](const auto& a) {
             const Array m = sum(a[0], 1, true);
             return std::vector{a[0] * m.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, -1}})};
         },
         2},
        {"few_rows",
         {host_random({2, 1 << 16}, float32, 37)},
         [&](const auto& a) { return std::vector{softmax_rows(a[0])}; },
         3},
        {"row_stats_rev",
         {base.as_strided({64, 48}, {-48, 1}, 63 * 48)},
         [](const auto& a) {
             return std::vector{sum(a[0], 1), max(a[0], 1)};
         },
         1},
        {"misaligned",
         {line.as_strided({4096}, {1}, 1)},
         [](const auto& a) { return std::vector{a[0] / sum(a[0] * a[0])}; },
         0},
        {"twice", {base, base}, [](const auto& a) { return std::vector{a[0] + sum(a[1], -1, true)}; }, 1},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        std::vector<ir::NodePtr> params;
        std::vector<Array> in;
        std::vector<const Tensor*> args;
        for (std::size_t k = 0; k < c.args.size(); ++k) {
            params.push_back(ir::input(c.args[k].dtype(), c.args[k].shape(), fmt::format("arg{}", k)));
            in.push_back(Array(params.back()));
            args.push_back(&c.args[k]);
        }
        std::vector<ir::NodePtr> roots;
        for (const Array& r : c.fn(in)) roots.push_back(r.node());
        const Program p(roots, params, args, c.name, std::source_location::current());
        CHECK(p.has_reductions());
        CHECK(p.kernels() == 0);  // on the host nothing is compiled
        // The program's lowered graph with the arguments bound: what evaluating it would plan.
        std::vector<ir::NodePtr> bound;
        for (std::size_t k = 0; k < params.size(); ++k)
            bound.push_back(ir::input(c.args[k].dtype(), c.args[k].shape(), params[k]->label(),
                                      std::static_pointer_cast<const void>(c.args[k].impl()),
                                      params[k]->loc()));
        const auto graph =
            ir::rewrite(p.roots(), [&](const ir::Node& n, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
                for (std::size_t k = 0; k < params.size(); ++k)
                    if (params[k].get() == &n) return bound[k];
                return nullptr;
            });
        const auto kernels = gpu::generate(graph, c.name);
        if (c.kernels > 0) CHECK(kernels.size() == c.kernels);
        std::string expect;
        for (const auto& k : kernels) expect += k.source;
        CHECK(p.cuda_source() == expect);
        CHECK(p.cuda_source() == expect);  // planned again from the same specialization: the same text
    }
}
