// Misuse that must be a clear loom::Error, never a crash or a silent wrong answer: overflowing shapes,
// views outside their storage, unsigned scalars beyond int64, empty handles, outputs sharing memory,
// odd kernel names.
#include <doctest/doctest.h>

#include <climits>
#include <cstring>
#include <loom/loom.hpp>
#include <vector>

#include "../common/gpu_explain.hpp"
#include "../common/needs_cuda.hpp"

using namespace loom;

TEST_CASE("shapes whose element count overflows 64 bits are errors") {
    CHECK_THROWS_WITH_AS((void)Tensor::host({std::int64_t{1} << 62}, float32), doctest::Contains("64-bit"),
                         Error);
    CHECK_THROWS_WITH_AS((void)Tensor::host({std::int64_t{1} << 40, std::int64_t{1} << 40}, float32),
                         doctest::Contains("64-bit"), Error);
    Tensor x = Tensor::host({1, 1}, float32);
    CHECK_THROWS_WITH_AS((void)broadcast_to(x, {std::int64_t{1} << 40, std::int64_t{1} << 40}),
                         doctest::Contains("broadcast_to(): shape"), Error);
    Tensor v = Tensor::host({4}, float32);
    CHECK_THROWS_WITH_AS((void)reshape(v, {std::int64_t{1} << 31, std::int64_t{1} << 31, 4}),
                         doctest::Contains("reshape(): shape"), Error);
}

TEST_CASE("as_strided views must stay inside the storage Loom owns") {
    Tensor x = Tensor::host({2, 3, 4}, float32);
    CHECK_THROWS_WITH_AS((void)x.as_strided({1000}, {1}, 0), doctest::Contains("of a storage of 24"), Error);
    CHECK_THROWS_AS((void)x.as_strided({4}, {-1}, 2), Error);
    CHECK_THROWS_AS((void)x.as_strided({4}, {1}, -5), Error);
    CHECK_THROWS_AS((void)x.as_strided({2}, {1}, std::int64_t{1} << 40), Error);
    CHECK_NOTHROW((void)x.as_strided({4}, {-1}, 3));       // elements 3, 2, 1, 0
    CHECK_NOTHROW((void)x.as_strided({6, 4}, {4, 1}, 0));  // the whole storage
    CHECK_NOTHROW((void)x.as_strided({100}, {0}, 23));     // a broadcast of the last element
}

TEST_CASE("unsigned 64-bit scalars above INT64_MAX are errors, not wrapped") {
    Tensor i64 = Tensor::host({2}, int64);
    CHECK_THROWS_WITH_AS((void)(Array(i64) + ULLONG_MAX), doctest::Contains("18446744073709551615"), Error);
    CHECK_THROWS_AS((void)constant(ULLONG_MAX), Error);
    CHECK_NOTHROW((void)(Array(i64) + static_cast<unsigned long long>(INT64_MAX)));
}

TEST_CASE("empty Arrays and Tensors throw instead of crashing") {
    Array a;
    CHECK_THROWS_WITH_AS((void)a.dtype(), doctest::Contains("empty"), Error);
    CHECK_THROWS_AS((void)a.shape(), Error);
    CHECK_THROWS_AS((void)a.numel(), Error);
    Tensor t;
    CHECK_THROWS_WITH_AS((void)t.to_host(), doctest::Contains("undefined"), Error);
    CHECK_THROWS_AS((void)t.shape(), Error);
}

TEST_CASE("outputs of one assign() may not share memory") {
    Tensor a = testing::random_tensor({4}, float32, 1), b = testing::random_tensor({4}, float32, 2);
    CHECK_THROWS_WITH_AS(assign({a, a}, {Array(b) + 1.0, Array(b) + 2.0}), doctest::Contains("share memory"),
                         Error);
    // Memory, not handles: a second handle over the same bytes shares them; disjoint slices of one tensor
    // do not.
    Tensor again = Tensor::view(a.data(), {4}, float32);
    CHECK_THROWS_WITH_AS(assign({a, again}, {Array(b) + 1.0, Array(b) + 2.0}),
                         doctest::Contains("share memory"), Error);
    Tensor c = testing::random_tensor({8}, float32, 3);
    assign({c.slice({{0, 4}}), c.slice({{4, 8}})}, {Array(b) + 1.0, Array(b) + 2.0});
    for (int i = 0; i < 4; ++i) {
        CHECK(c.get_double(i) == static_cast<double>(static_cast<float>(b.get_double(i) + 1.0)));
        CHECK(c.get_double(4 + i) == static_cast<double>(static_cast<float>(b.get_double(i) + 2.0)));
    }
}

TEST_CASE("an output over the memory of an input through another handle is written through a temporary") {
    // docs/semantics.md section 8: an output that overlaps an input reads the input's old values. The
    // overlap is of memory: Tensor::view of the same pointer and a DLPack import of Loom's own export are
    // handles of their own over the same bytes. Before, only one storage counted, and the host back end
    // wrote in place: a transpose read elements it had already overwritten.
    std::vector<float> buf(9 * 9);
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
    const std::vector<float> before = buf;
    Tensor x = Tensor::view(buf.data(), {9, 9}, float32);
    Tensor y = Tensor::view(buf.data(), {9, 9}, float32);
    assign(y, x.transposed() + 0.0f);
    for (int i = 0; i < 9; ++i)
        for (int j = 0; j < 9; ++j)
            CHECK(buf[static_cast<std::size_t>(i * 9 + j)] == before[static_cast<std::size_t>(j * 9 + i)]);
    // A shift right by one through two handles: x[1:] = x[:-1].
    std::vector<float> line(1000);
    for (std::size_t i = 0; i < line.size(); ++i) line[i] = static_cast<float>(i);
    Tensor p = Tensor::view(line.data(), {1000}, float32), q = Tensor::view(line.data(), {1000}, float32);
    assign(q.slice({{1, 1000}}), p.slice({{0, 999}}) + 0.0f);
    CHECK(line[0] == 0.0f);
    for (std::size_t i = 1; i < line.size(); ++i) CHECK(line[i] == static_cast<float>(i - 1));
    // Through DLPack: Loom's export imported again is a handle of its own.
    Tensor z = testing::random_tensor({6, 6}, float32, 4);
    const Tensor zt = Tensor(Array(z).transposed() + 0.0f);
    Tensor w = from_dlpack(z.to_dlpack());
    assign(w, z.transposed() + 0.0f);
    CHECK(std::memcmp(w.data(), zt.data(), zt.nbytes()) == 0);
    // A traced function, first and cached call.
    auto f = loom::function("transpose_copy", [](Array a) { return a.transposed() + 0.0f; });
    for (int call = 0; call < 2; ++call) {
        for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
        f(x, y);
        for (int i = 0; i < 9; ++i)
            for (int j = 0; j < 9; ++j)
                CHECK(buf[static_cast<std::size_t>(i * 9 + j)] ==
                      before[static_cast<std::size_t>(j * 9 + i)]);
    }
}

TEST_CASE("a kernel name with control characters still compiles" * loom_test::needs_cuda()) {
    Tensor x = Tensor::host({64}, float32);
    const CompileReport r = compile({relu(x * 1.5)}, "a\nb\tc");
    CHECK(r.image_bytes > 0);
    CHECK(cuda_source({relu(x * 1.5)}, "a\nb").find("a\nb") == std::string::npos);
}

TEST_CASE("eval(a) evaluates one array") {
    Tensor x = testing::random_tensor({3}, float32, 3);
    const Tensor r = eval(Array(x) * 2.0);
    for (int i = 0; i < 3; ++i) CHECK(r.get_double(i) == x.get_double(i) * 2.0);
}

TEST_CASE("explain() lists each kernel, its nodes with the user's lines, and the boundary between kernels") {
    Tensor x = Tensor::host({64, 8}, float32), v = Tensor::host({8}, float32);
    const Array a = relu(x * 2.0);  // one kernel over [64, 8]
    const Array b = exp(v);         // another over [8]
    const std::string text = explain({a, b}, "pair");
    CHECK(text.find("kernel 0  pair_0") != std::string::npos);
    CHECK(text.find("kernel 1  pair_1") != std::string::npos);
    CHECK(text.find("relu (test_robustness.cpp:") != std::string::npos);
    CHECK(
        text.find("boundary  kernel 1: outputs of shapes [64, 8] and [8] have different iteration spaces") !=
        std::string::npos);
}

TEST_CASE("explain() says when the register estimate rules out the 16-byte vector variant") {
    std::vector<Tensor> ins;
    for (int k = 0; k < 40; ++k) ins.push_back(Tensor::host({1024}, float32));
    Array acc(ins[0]);
    for (int k = 1; k < 40; ++k) acc = acc + Array(ins[static_cast<std::size_t>(k)]);  // 40 inputs, 1 output
    const std::string text = loom_test::gpu_explain({acc});
    CHECK(text.find("vector width 1 (register estimate of 16-byte vectors: 164 per thread, above 128)") !=
          std::string::npos);
    CHECK(loom_test::gpu_explain({Array(ins[0]) + Array(ins[1])}).find("vector width 4;") !=
          std::string::npos);
}

TEST_CASE("misuse found by a fresh user: each a loom::Error naming the API and the line, nothing crashes") {
    const Tensor a = testing::random_tensor({3}, float32, 5), b = testing::random_tensor({4}, float32, 6);
    // A value cast to DType that names none: full() recursed until the stack overflowed.
    CHECK_THROWS_WITH_AS((void)Tensor(full({3}, 1.0, static_cast<DType>(42), Device::cpu())),
                         doctest::Contains("is not a Loom dtype"), Error);
    // A traced body that returns an empty Array: std::out_of_range before.
    auto empty = loom::function("returns_empty", [](Array) { return Array(); });
    CHECK_THROWS_WITH_AS((void)empty(a),
                         doctest::Contains("returns_empty(): result 0 of the body is an empty Array"), Error);
    // A body's error names the function and the call that traced it, beside the body's line.
    auto add = loom::function("add_two", [](Array x, Array y) { return x + y; });
    const std::string call =
        fmt::format("while tracing add_two() for the call at test_robustness.cpp:{}", __LINE__ + 1);
    CHECK_THROWS_WITH_AS((void)add(a, b), doctest::Contains(call.c_str()), Error);
    // A broadcast (self-overlapping) output of a traced call: refused as assign() refuses it, not an
    // internal error of the host back end's plan.
    Tensor one = Tensor::host({1}, float32);
    CHECK_THROWS_WITH_AS(add(a, a, one.as_strided({3}, {0}, 0)), doctest::Contains("overlaps itself"), Error);
    // Loom's own line no more: the factory's caller is named.
    const std::string here = fmt::format("(test_robustness.cpp:{})", __LINE__ + 1);
    CHECK_THROWS_WITH_AS((void)random_normal({-3}, float32, 1, Device::cpu()),
                         doctest::Contains(here.c_str()), Error);
    CHECK_THROWS_WITH_AS((void)a.get_int(-1), doctest::Contains("Tensor::get_int(): index -1"), Error);
    const std::string item_at = fmt::format(
        "Tensor::item(): use of an undefined (default-constructed) Tensor "
        "(test_robustness.cpp:{})",
        __LINE__ + 1);
    CHECK_THROWS_WITH_AS((void)Tensor().item<float>(), doctest::Contains(item_at.c_str()), Error);
    // An empty Array given as attention's bias was taken for no bias.
    const Tensor q = testing::random_tensor({1, 4, 8}, float32, 7);
    CHECK_THROWS_WITH_AS((void)attention(q, q, q, AttentionOptions{.bias = Array()}),
                         doctest::Contains("attention(): the bias is an empty Array"), Error);
    // The runtime still works.
    CHECK(Tensor(add(a, a)).get_double(0) == a.get_double(0) * 2.0);
}
