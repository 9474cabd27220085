// GPU tests of gathers (docs/semantics.md, "Gathers", and section 11, "Checked gathers on the GPU"): the
// GPU's bits equal the CPU reference's for every operand dtype, int32 and int64 indices, negative indices,
// views, broadcast indices and sizes 0, 1, 31, 32, 33 and 4097; a gather fused into a normalization equals
// the unfused kernels bit for bit; an out-of-range index is never read, is raised as loom::Error naming the
// function, the index and the user's line at the next synchronization (a synchronous copy, synchronize(), a
// traced function's graph replay), and leaves the runtime usable (the error word is zeroed); clamp mode. Rows
// gathered by ids that do not move along the row run the vector variant (positions once per vector, a row's
// vector in one load): the same bits as the reference and as the scalar variant, fused with an epilogue, with
// negative ids, and an out-of-range id still raised, checked or clamped as in the scalar variant.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <loom/loom.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

const Device cuda0 = Device::cuda(0);

Tensor on_gpu(const Tensor& h) {
    return h.to(cuda0);
}

Tensor random_of(const Shape& s, DType t, std::uint64_t seed) {
    return on_gpu(testing::random_tensor(
        s, t, seed, is_float(t) ? testing::Random::normal() : testing::Random::uniform(-100, 100)));
}

Tensor indices(const Shape& s, DType dtype, std::int64_t extent, std::uint64_t seed) {
    return on_gpu(testing::random_tensor(
        s, dtype, seed,
        testing::Random::uniform(static_cast<double>(-extent), static_cast<double>(extent - 1))));
}

Tensor int64_tensor(const std::vector<std::int64_t>& v) {
    Tensor t = Tensor::host({static_cast<std::int64_t>(v.size())}, int64);
    std::memcpy(t.data(), v.data(), v.size() * sizeof(std::int64_t));
    return on_gpu(t);
}

void check_bits(const Array& y, const char* what) {
    Tensor out = Tensor::empty(y.shape(), y.dtype(), cuda0);
    testing::poison(out);
    assign(out, y);
    const Tensor expected = reference::evaluate(y.node());
    const testing::Comparison c = testing::compare(out, expected, testing::Tolerance::exact(), what);
    CHECK_MESSAGE(c.ok, what << ": " << c.message);
}

/// Whether the plan of `y` has a vector variant that computes its gathers' positions once per vector (its
/// explain text says so): the variant a launch takes for 16-byte aligned device buffers.
bool vectorized(const Array& y) {
    return explain({y}).find("gathers: positions once per vector") != std::string::npos;
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("gathers on the GPU: the reference's bits, every dtype, int32 and int64 indices, sizes") {
    for (DType t : kAllDTypes) {
        CAPTURE(name(t));
        const Tensor x = random_of({33, 5}, t, 1);
        for (DType it : {int32, int64}) {
            for (std::int64_t m : {0, 1, 31, 32, 33, 4097}) {
                CAPTURE(m);
                check_bits(take(x, indices({m}, it, 33, 2), 0), "take axis 0");
                check_bits(take(x, indices({m}, it, 5, 3), -1), "take axis -1");
            }
        }
    }
    const Tensor base = random_of({40, 12}, float32, 4);
    check_bits(take(base.transposed(), indices({64}, int32, 12, 5).slice({{3, 64, 3}}), 0), "views");
    check_bits(take_along_axis(random_of({4, 7, 5}, float64, 6), indices({4, 3, 1}, int64, 7, 7), 1),
               "take_along_axis, a broadcast index");
    check_bits(one_hot(indices({100}, int32, 10, 8), 10, float16), "one_hot");
}

TEST_CASE("gathers on the GPU: layernorm(take(table, ids, 0)) is one kernel, fused equals unfused") {
    const Tensor table = random_of({5000, 256}, float32, 9);
    const Tensor w = random_of({256}, float32, 10), b = random_of({256}, float32, 11);
    const Tensor ids = indices({1000}, int64, 5000, 12);
    const auto graph = [&] { return layernorm(take(table, ids, 0), w, b, 1e-5); };
    const Tensor fused = graph();
    Tensor unfused;
    {
        OptionsScope off({.fusion = false});
        unfused = graph();
    }
    CHECK(testing::same_bits(fused, unfused));
    check_bits(graph(), "layernorm(take(table, ids, 0))");
    const std::string plan = explain({graph()});
    CHECK_MESSAGE(plan.find("kernel 1") == std::string::npos, plan);
}

TEST_CASE("gathers on the GPU: an out-of-range index raises at the next synchronization, not sticky") {
    const Tensor x = random_of({33, 8}, float32, 13);
    std::vector<std::int64_t> iv(4096, 3);
    iv[1234] = 33;
    const Tensor bad = int64_tensor(iv);
    Tensor out = Tensor::empty({4096, 8}, float32, cuda0);
    const int line = __LINE__ + 1;
    const Array y = take(x, bad, 0);
    assign(out, y);  // launches; the error is recorded in the device's error word
    std::string msg = error_of([&] { (void)out.to_host(); });
    CHECK_MESSAGE(msg.find("take(): index 33 is out of range for an axis of extent 33") != std::string::npos,
                  msg);
    CHECK_MESSAGE(msg.find(fmt::format("test_gather.cpp:{}", line)) != std::string::npos, msg);
    CHECK(!runtime_poisoned());
    // Not sticky: the word was zeroed; the next evaluation and synchronization are clean.
    iv[1234] = -1;
    const Tensor good = take(x, int64_tensor(iv), 0);
    CHECK(testing::same_bits(good.slice({{1234, 1235}}), x.slice({{32, 33}})));
    CHECK_NOTHROW(synchronize());
    // synchronize() reports it too, and so does a fused normalization.
    iv[7] = -34;
    const Tensor w = random_of({8}, float32, 14), b = random_of({8}, float32, 15);
    assign(out, layernorm(take(x, int64_tensor(iv), 0), w, b, 1e-5));
    msg = error_of([] { synchronize(); });
    CHECK_MESSAGE(msg.find("take(): index -34 is out of range") != std::string::npos, msg);
    CHECK_NOTHROW(synchronize());
}

TEST_CASE("gathers on the GPU: a traced function's graph replay reports an out-of-range index") {
    // Two kernels (a normalization of the rows, a sum over them), so that calls replay one CUDA graph.
    auto f = loom::function("embed_norm", [](Array table, Array ids, Array w, Array b) {
        const Array rows = take(table, ids, 0);
        return std::tuple{layernorm(rows, w, b, 1e-5), sum(rows, 0)};
    });
    const Tensor table = random_of({100, 64}, float32, 16);
    const Tensor w = random_of({64}, float32, 17), b = random_of({64}, float32, 18);
    std::vector<std::int64_t> iv(50, 7);
    Tensor out = Tensor::empty({50, 64}, float32, cuda0), col = Tensor::empty({64}, float32, cuda0);
    const Tensor ids = int64_tensor(iv);
    for (int call = 0; call < 3; ++call) {  // compiled, captured, replayed
        f(table, ids, w, b, out, col);
        CHECK_NOTHROW(synchronize());
    }
    CHECK(f.stats().graph_replays >= 1);
    iv[49] = 100;
    const Tensor bad = int64_tensor(iv);
    const std::uint64_t replays = f.stats().graph_replays;
    f(table, bad, w, b, out, col);
    CHECK(f.stats().graph_replays == replays + 1);
    const std::string msg = error_of([] { synchronize(); });
    CHECK_MESSAGE(
        msg.find("take(): index 100 is out of range for an axis of extent 100") != std::string::npos, msg);
    f(table, ids, w, b, out, col);
    CHECK_NOTHROW(synchronize());
    CHECK(testing::same_bits(out, Tensor(layernorm(take(table, ids, 0), w, b, 1e-5))));
}

TEST_CASE("gathers on the GPU: clamp mode reads the nearer end and raises nothing") {
    const Tensor x = random_of({9, 3}, int32, 19);
    const Tensor idx = int64_tensor({-100, -10, -9, -1, 0, 8, 9, 500});
    const Tensor y = take(x, idx, 0, IndexMode::Clamp);
    CHECK_NOTHROW(synchronize());
    CHECK(testing::same_bits(y, Tensor(take(x, int64_tensor({0, 0, 0, 8, 0, 8, 8, 8}), 0))));
    check_bits(take(x, idx, 0, IndexMode::Clamp), "clamp");
}

TEST_CASE("gathers on the GPU: rows gathered a vector at a time, the reference's bits, every dtype") {
    for (DType t : kAllDTypes) {
        CAPTURE(name(t));
        const Tensor table = random_of({301, 64}, t, 40);
        for (DType it : {int32, int64}) {
            for (std::int64_t m : {1, 33, 1000}) {
                CAPTURE(m);
                const Array y = take(table, indices({m}, it, 301, 41), 0);  // negative ids among them
                CHECK(vectorized(y));
                check_bits(y, "take rows, a vector at a time");
            }
        }
    }
    // Fused with an elementwise epilogue: float32 (4 lanes), bfloat16 (8), float64 (2), int8 (16).
    for (DType t : {float32, bfloat16, float64, int8}) {
        CAPTURE(name(t));
        const Array y = take(random_of({500, 128}, t, 42), indices({777}, int64, 500, 43), 0) * 2 + 1;
        CHECK(vectorized(y));
        check_bits(y, "take(t, ids, 0) * 2 + 1");
    }
}

TEST_CASE("gathers on the GPU: the vector variant's bits equal the scalar variant's") {
    // The first 128 columns of a [500, 129] table: rows 129 elements apart start off vector boundaries, so
    // that view is read by the scalar variant; a contiguous copy of it by the vector variant.
    for (DType t : {float32, bfloat16, float64, int8}) {
        CAPTURE(name(t));
        const Tensor wide = random_of({500, 129}, t, 44);
        const Tensor view = wide.slice({{0, 500}, {0, 128}});
        const Tensor copy = Array(view) * 1;
        const Tensor ids = indices({999}, int32, 500, 45);
        const Array scalar = take(view, ids, 0) * 3 - 2, vector = take(copy, ids, 0) * 3 - 2;
        CHECK(!vectorized(scalar));
        CHECK(vectorized(vector));
        CHECK(testing::same_bits(Tensor(scalar), Tensor(vector)));
    }
}

TEST_CASE("gathers on the GPU: broadcast ids, one element per row, nested gathers and one_hot, vectorized") {
    const Tensor table = random_of({300, 64}, float32, 46);
    const Array shared = broadcast_to(Array(indices({1, 40}, int32, 300, 47)), {3, 40});
    check_bits(take(table, shared, 0) * 2 + 1, "ids broadcast over a leading axis");
    check_bits(take(table, indices({}, int64, 300, 48), 0), "a rank-0 id");
    const Tensor x = random_of({64, 256}, float32, 49);
    const Array row =
        Array(x) - broadcast_to(take_along_axis(x, indices({64, 1}, int64, 256, 50), 1), {64, 256});
    CHECK(vectorized(row));
    check_bits(row, "one element a row, subtracted from the row");
    const Array nested =
        take(table, take(indices({500}, int32, 300, 51), indices({40}, int64, 500, 52), 0), 0);
    CHECK(vectorized(nested));
    check_bits(nested, "ids looked up through a map");
    const Array hot = one_hot(indices({100}, int32, 16, 53), 16, float32);
    CHECK(vectorized(hot));
    check_bits(hot, "one_hot of 16 classes");
}

TEST_CASE("gathers on the GPU: an out-of-range id of the vector variant raises at the next synchronization") {
    const Tensor x = random_of({33, 64}, float32, 54);
    std::vector<std::int64_t> iv(4096, 3);
    iv[1234] = 33;
    Tensor out = Tensor::empty({4096, 64}, float32, cuda0);
    const int line = __LINE__ + 1;
    const Array y = take(x, int64_tensor(iv), 0);
    CHECK(vectorized(y));
    assign(out, y);
    std::string msg = error_of([&] { (void)out.to_host(); });
    CHECK_MESSAGE(msg.find("take(): index 33 is out of range for an axis of extent 33") != std::string::npos,
                  msg);
    CHECK_MESSAGE(msg.find(fmt::format("test_gather.cpp:{}", line)) != std::string::npos, msg);
    CHECK(!runtime_poisoned());
    // Not sticky; -1 is the last row.
    iv[1234] = -1;
    const Tensor good = take(x, int64_tensor(iv), 0);
    CHECK(testing::same_bits(good.slice({{1234, 1235}}), x.slice({{32, 33}})));
    CHECK_NOTHROW(synchronize());
    // Below -extent, in a fused epilogue, raised by synchronize().
    iv[7] = -34;
    const Array fused = take(x, int64_tensor(iv), 0) * 2 + 1;
    CHECK(vectorized(fused));
    assign(out, fused);
    msg = error_of([] { synchronize(); });
    CHECK_MESSAGE(msg.find("take(): index -34 is out of range") != std::string::npos, msg);
    CHECK_NOTHROW(synchronize());
}

TEST_CASE("gathers on the GPU: clamp mode of the vector variant reads the nearer end, raises nothing") {
    const Tensor x = random_of({9, 16}, int32, 55);
    const Tensor idx = int64_tensor({-100, -10, -9, -1, 0, 8, 9, 500});
    const Array y = take(x, idx, 0, IndexMode::Clamp);
    CHECK(vectorized(y));
    const Tensor got = y;
    CHECK_NOTHROW(synchronize());
    CHECK(testing::same_bits(got, Tensor(take(x, int64_tensor({0, 0, 0, 8, 0, 8, 8, 8}), 0))));
    check_bits(y, "clamp, a vector at a time");
}
