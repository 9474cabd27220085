// Gathers (take, take_along_axis, index_select, one_hot; docs/semantics.md, "Gathers") on host tensors: the
// host back end against the CPU reference bit for bit, every dtype of the operand, int32 and int64 indices,
// negative indices, views as operand and index, broadcast indices, sizes 0, 1, 31, 32, 33 and 4097; fused
// producers and consumers equal to the unfused kernels bit for bit; an out-of-range index raises loom::Error
// with the user's line and leaves the outputs as they were; clamp mode; the errors of building a gather.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "loom/ir/graph.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

const DType kAll[] = {bool_, int8, uint8, int32, int64, float16, bfloat16, float32, float64};

// Random values, never zeros alone: floats normal, integers and bools uniform.
Tensor random_of(const Shape& s, DType t, std::uint64_t seed) {
    return testing::random_tensor(
        s, t, seed, is_float(t) ? testing::Random::normal() : testing::Random::uniform(-100, 100));
}

// Indices in [-extent, extent) of `dtype`.
Tensor indices(const Shape& s, DType dtype, std::int64_t extent, std::uint64_t seed) {
    return testing::random_tensor(
        s, dtype, seed,
        testing::Random::uniform(static_cast<double>(-extent), static_cast<double>(extent - 1)));
}

template <class T>
Tensor tensor_of(const std::vector<T>& v, const Shape& s) {
    Tensor t = Tensor::host(s, sizeof(T) == 8 ? int64 : int32);
    if (!v.empty()) std::memcpy(t.data(), v.data(), v.size() * sizeof(T));
    return t;
}

// Evaluates `y` into a poisoned output and checks it against the reference, bit for bit.
void check_bits(const Array& y, const char* what) {
    Tensor out = Tensor::host(y.shape(), y.dtype());
    testing::poison(out);
    assign(out, y);
    const Tensor expected = reference::evaluate(y.node());
    const testing::Comparison c = testing::compare(out, expected, testing::Tolerance::exact(), what);
    CHECK_MESSAGE(c.ok, what << ": " << c.message);
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

TEST_CASE("take: host back end against the reference, every dtype, int32 and int64 indices, sizes") {
    for (DType t : kAll) {
        CAPTURE(name(t));
        const Tensor x = random_of({33, 5}, t, 1);
        for (DType it : {int32, int64}) {
            CAPTURE(name(it));
            for (std::int64_t m : {0, 1, 31, 32, 33, 4097}) {
                CAPTURE(m);
                const Tensor rows = indices({m}, it, 33, static_cast<std::uint64_t>(m) + 2);
                check_bits(take(x, rows, 0), "take axis 0");
                const Tensor cols = indices({m}, it, 5, static_cast<std::uint64_t>(m) + 3);
                check_bits(take(x, cols, -1), "take axis -1");
            }
        }
    }
}

TEST_CASE("take: negative indices count from the end, an index array of any rank, one index") {
    const Tensor x = random_of({4, 6}, float32, 4);
    const std::vector<std::int64_t> iv{-1, -6, 0, 5, 2, -3};
    const Tensor idx = tensor_of(iv, {2, 3});
    const Tensor y = take(x, idx, 1);
    CHECK(y.shape() == Shape{4, 2, 3});
    const auto xv = x.to_vector<float>(), yv = y.to_vector<float>();
    for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 6; ++j) {
            const std::int64_t c = iv[static_cast<std::size_t>(j)] < 0 ? iv[static_cast<std::size_t>(j)] + 6
                                                                       : iv[static_cast<std::size_t>(j)];
            CHECK(yv[static_cast<std::size_t>(r * 6 + j)] == xv[static_cast<std::size_t>(r * 6 + c)]);
        }
    // A scalar index drops the axis (NumPy).
    const Tensor row = take(x, -2, 0);
    CHECK(row.shape() == Shape{6});
    CHECK(testing::same_bits(row, x.slice({{2, 3}}).reshape({6})));
    check_bits(take(x, tensor_of(std::vector<std::int64_t>{-4, 3, 0, 1, -1, 2}, {3, 2}), 0),
               "take of a [3, 2] index along axis 0");
}

TEST_CASE("take and take_along_axis: views as the operand and the index") {
    const Tensor base = random_of({40, 12}, float64, 5);
    const Tensor xt = base.transposed();                  // [12, 40], strided
    const Tensor xs = base.slice({{1, 39, 2}, {2, 11}});  // [19, 9], a step
    const Tensor ib = indices({64}, int32, 12, 6);
    const Tensor iv = ib.slice({{3, 64, 3}});  // [21], a stride of 3
    check_bits(take(xt, iv, 0), "take from a transposed view by a strided index");
    check_bits(take(xs, indices({7}, int64, 9, 7), 1), "take from a sliced view");
    check_bits(take(xt * 2 + 1, iv, 0) - 3, "take of an elementwise producer, then a consumer");
    const Tensor ia = indices({19, 4}, int64, 9, 8);
    check_bits(take_along_axis(xs, ia.transposed().transposed(), 1), "take_along_axis, views");
}

TEST_CASE("take_along_axis: the index broadcasts against the operand off the axis (NumPy)") {
    const Tensor x = random_of({4, 7, 5}, float32, 9);
    const Tensor i1 = indices({4, 3, 1}, int64, 7, 10);  // broadcast along the last axis
    const Tensor y = take_along_axis(x, i1, 1);
    CHECK(y.shape() == Shape{4, 3, 5});
    check_bits(take_along_axis(x, i1, 1), "index [4, 3, 1]");
    check_bits(take_along_axis(x, indices({1, 3, 5}, int32, 7, 11), 1), "index [1, 3, 5]");
    const Tensor x1 = random_of({1, 7, 5}, int32, 12);  // the operand broadcasts too
    const Array z = take_along_axis(x1, indices({4, 2, 5}, int64, 7, 13), -2);
    CHECK(z.shape() == Shape{4, 2, 5});
    check_bits(z, "operand [1, 7, 5], index [4, 2, 5]");
    // The argmax along an axis picks the maximum (NumPy's idiom).
    const Tensor m = take_along_axis(x, argmax(x, 2, true), 2);
    CHECK(testing::same_bits(m, Tensor(max(x, 2, true))));
}

TEST_CASE("index_select and one_hot") {
    const Tensor x = random_of({6, 4}, bfloat16, 14);
    const Tensor idx = tensor_of(std::vector<std::int32_t>{3, -1, 0}, {3});
    const Tensor y = index_select(x, 1, idx);
    CHECK(y.shape() == Shape{6, 3});
    CHECK(testing::same_bits(y, Tensor(take(x, idx, 1))));
    CHECK_THROWS_AS((void)index_select(x, 0, tensor_of(std::vector<std::int64_t>{0, 1}, {1, 2})), Error);

    const std::vector<std::int64_t> labels{2, 0, -1, 9, 4};
    const Tensor lt = tensor_of(labels, {5});
    const Tensor h = one_hot(lt, 10, float32);
    CHECK(h.shape() == Shape{5, 10});
    const auto hv = h.to_vector<float>();
    for (int i = 0; i < 5; ++i)
        for (int c = 0; c < 10; ++c) {
            const std::int64_t l = labels[static_cast<std::size_t>(i)] < 0
                                       ? labels[static_cast<std::size_t>(i)] + 10
                                       : labels[static_cast<std::size_t>(i)];
            CHECK(hv[static_cast<std::size_t>(i * 10 + c)] == (c == l ? 1.0f : 0.0f));
        }
    check_bits(one_hot(lt, 10), "one_hot int64");
    CHECK(Tensor(one_hot(lt, 10)).dtype() == int64);
    const std::string msg = error_of([&] { (void)Tensor(one_hot(lt, 9)); });
    CHECK_MESSAGE(msg.find("one_hot(): index 9 is out of range for an axis of extent 9") != std::string::npos,
                  msg);
}

TEST_CASE("gathers fuse with producers and consumers: fused equals unfused bit for bit") {
    const Tensor table = random_of({300, 64}, float32, 15);
    const Tensor w = random_of({64}, float32, 16), b = random_of({64}, float32, 17);
    const Tensor ids = indices({77}, int64, 300, 18);
    const auto graph = [&] { return layernorm(take(table, ids, 0), w, b, 1e-5); };
    const Tensor fused = graph();
    Tensor unfused;
    {
        OptionsScope off({.fusion = false});
        unfused = graph();
    }
    CHECK(testing::same_bits(fused, unfused));
    check_bits(graph(), "layernorm(take(table, ids, 0))");
    // One kernel: the gathered rows are read by the normalization kernel itself.
    const std::string plan = explain({graph()});
    CHECK_MESSAGE(plan.find("kernel 1") == std::string::npos, plan);
    // An elementwise producer of the operand and of the index, and a consumer.
    const auto g2 = [&] { return relu(take(table * 0.5 + 1, (ids + 1) % 300, 0)) * 2; };
    const Tensor f2 = g2();
    Tensor u2;
    {
        OptionsScope off({.fusion = false});
        u2 = g2();
    }
    CHECK(testing::same_bits(f2, u2));
    // A gather of a reduced value at other rows than its own: the reduction is materialized first.
    const Tensor r = random_of({40, 16}, float32, 26);
    check_bits(Array(r) - take(sum(r, 1, true), indices({40}, int32, 40, 27), 0), "x - take(sum(x), ids)");
}

TEST_CASE("gathers: an out-of-range index raises with the user's line and leaves the outputs untouched") {
    const Tensor x = random_of({33, 8}, float32, 19);
    const Tensor w = random_of({8}, float32, 20), b = random_of({8}, float32, 21);
    for (std::int64_t bad : {33, -34, 1000000}) {
        CAPTURE(bad);
        std::vector<std::int64_t> iv(100, 3);
        iv[57] = bad;
        const Tensor idx = tensor_of(iv, {100});
        Tensor out = Tensor::host({100, 8}, float32);
        testing::poison(out);
        const Tensor before = out.clone();
        const int line = __LINE__ + 1;
        const Array y = take(x, idx, 0);
        const std::string expect =
            fmt::format("take(): index {} is out of range for an axis of extent 33", bad);
        std::string msg = error_of([&] { assign(out, y); });
        CHECK_MESSAGE(msg.find(expect) != std::string::npos, msg);
        CHECK_MESSAGE(msg.find(fmt::format("test_gather.cpp:{}", line)) != std::string::npos, msg);
        CHECK(testing::same_bits(out, before));
        // Fused into a normalization, and on the reference.
        Tensor out2 = Tensor::host({100, 8}, float32);
        testing::poison(out2);
        const Tensor before2 = out2.clone();
        msg = error_of([&] { assign(out2, layernorm(y, w, b, 1e-5)); });
        CHECK_MESSAGE(msg.find(expect) != std::string::npos, msg);
        CHECK(testing::same_bits(out2, before2));
        msg = error_of([&] { (void)reference::evaluate(y.node()); });
        CHECK_MESSAGE(msg.find(expect) != std::string::npos, msg);
        // The runtime is usable after the error.
        iv[57] = 5;
        const Tensor good = take(x, tensor_of(iv, {100}), 0);
        CHECK(testing::same_bits(good.slice({{57, 58}}), x.slice({{5, 6}})));
    }
    // int32 indices, a take_along_axis.
    const Tensor i32 = tensor_of(std::vector<std::int32_t>{0, 1, 8}, {1, 3});
    const std::string msg = error_of([&] { (void)Tensor(take_along_axis(x, i32, 1)); });
    CHECK_MESSAGE(
        msg.find("take_along_axis(): index 8 is out of range for an axis of extent 8") != std::string::npos,
        msg);
}

TEST_CASE("gathers: clamp mode moves an out-of-range index to the nearer end") {
    const Tensor x = random_of({9, 3}, int64, 22);
    const std::vector<std::int64_t> iv{-100, -10, -9, -1, 0, 8, 9, 500};
    const std::vector<std::int64_t> at{0, 0, 0, 8, 0, 8, 8, 8};
    const Tensor idx = tensor_of(iv, {8});
    const Tensor y = take(x, idx, 0, IndexMode::Clamp);
    const Tensor expected = take(x, tensor_of(at, {8}), 0);
    CHECK(testing::same_bits(y, expected));
    check_bits(take(x, idx, 0, IndexMode::Clamp), "clamp");
    check_bits(take_along_axis(x, indices({9, 5}, int32, 40, 23), 1, IndexMode::Clamp), "clamp along axis");
}

TEST_CASE("gathers: errors of building one") {
    const Tensor x = random_of({4, 3}, float32, 24);
    const Tensor fi = random_of({2}, float32, 25);
    CHECK(error_of([&] { (void)take(x, fi, 0); }).find("take(): indices must be int32 or int64") !=
          std::string::npos);
    CHECK(error_of([&] {
              (void)take(x, tensor_of(std::vector<std::int64_t>{0}, {1}), 2);
          }).find("take(): axis 2 is out of range") != std::string::npos);
    CHECK(error_of([&] {
              (void)take(Tensor::host({0, 3}, float32), tensor_of(std::vector<std::int64_t>{0}, {1}), 0);
          }).find("there is no element to take") != std::string::npos);
    // Said of the user's index: its own count and shape, not those of the index broadcast over the operand's
    // other axes (which counted 24 indices for these 2).
    const std::string e0 = error_of([&] {
        (void)take(Tensor::host({0, 3, 4}, float32), tensor_of(std::vector<std::int64_t>{0, 0}, {2}), 0);
    });
    CHECK_MESSAGE(e0.find("take(): the 2 indices of") != std::string::npos, e0);
    CHECK_MESSAGE(e0.find("[2] int64") != std::string::npos, e0);
    const std::string e1 = error_of([&] {
        (void)index_select(Tensor::host({5, 0}, float32), 1, tensor_of(std::vector<std::int64_t>{0}, {1}));
    });
    CHECK_MESSAGE(e1.find("index_select(): the 1 index of") != std::string::npos, e1);
    const std::string e2 = error_of([&] { (void)one_hot(tensor_of(std::vector<std::int64_t>{0}, {1}), 0); });
    CHECK_MESSAGE(e2.find("one_hot(): classes is 0: no class for the 1 indices of") != std::string::npos, e2);
    const std::string e3 = error_of([&] {
        (void)take_along_axis(Tensor::host({0, 3}, float32),
                              tensor_of(std::vector<std::int64_t>{0, 0, 0}, {1, 3}), 0);
    });
    CHECK_MESSAGE(e3.find("take_along_axis(): the 3 indices of") != std::string::npos, e3);
    CHECK(error_of([&] {
              (void)take_along_axis(x, tensor_of(std::vector<std::int64_t>{0}, {1}), 0);
          }).find("must have the rank of the operand") != std::string::npos);
    // The IR prints the op with its axis, its mode and the function that built it.
    const std::string text =
        ir::print({take(x, tensor_of(std::vector<std::int32_t>{1}, {1}), 1, IndexMode::Clamp).node()});
    CHECK_MESSAGE(text.find("gather") != std::string::npos, text);
    CHECK_MESSAGE(text.find("axis=1 clamp (take)") != std::string::npos, text);
    // An empty take from an empty axis is fine.
    CHECK(Tensor(take(Tensor::host({0, 3}, float32), Tensor::host({0}, int32), 0)).shape() == Shape{0, 3});
}

TEST_CASE(
    "gathers: elementwise work below a reshape beneath a gather is computed first, fused equals unfused") {
    // The fused kernel cannot index the transposed product at a gathered position through the reshape's
    // quotients and remainders: the partition computes the product first (a kernel of its own), and the
    // gather reads it through the reshape's strides. Fusion off gave the same values all along.
    const Tensor x = random_of({4, 5}, float32, 26);
    const Tensor ids = tensor_of(std::vector<std::int64_t>{19, 3, -1}, {3});
    const Array picked = take(reshape(x.transposed() * 2.0, {20}), ids, 0) + 1.0;
    const std::string plan = explain({picked});
    CHECK_MESSAGE(plan.find("computed first: a reshape beneath the gather") != std::string::npos, plan);
    const testing::Comparison c = testing::check_against_reference({picked});
    CHECK_MESSAGE(c.ok, c.message);
    auto unfused = loom::function(
        "gather_unfused",
        [](Array v, Array i) { return take(reshape(transpose(v) * 2.0, {20}), i, 0) + 1.0; },
        Options{.fusion = false});
    CHECK(testing::same_bits(unfused(x, ids), Tensor(picked)));
    // A transpose after the computation: the reshape of that view is what is computed first.
    const Array later = take(reshape(transpose(Array(x) * 2.0), {20}), ids, 0);
    const testing::Comparison c2 = testing::check_against_reference({later});
    CHECK_MESSAGE(c2.ok, c2.message);
    // A reshape of a transposed tensor view has no strides: refused, saying what to do.
    const std::string e = error_of([&] { (void)Tensor(take(reshape(Array(x.transposed()), {20}), ids, 0)); });
    CHECK_MESSAGE(e.find("take(): the gathered operand is a reshape") != std::string::npos, e);
    CHECK_MESSAGE(e.find("evaluate the reshaped operand into a tensor first") != std::string::npos, e);
    // Along a row of a 2-d gather, and inside a reduction.
    const Array rows =
        take(reshape(Array(x) * 3.0, {10, 2}), tensor_of(std::vector<std::int64_t>{9, 0}, {2}), 0);
    const testing::Comparison c3 = testing::check_against_reference({rows, sum(rows)});
    CHECK_MESSAGE(c3.ok, c3.message);
}

TEST_CASE("gathers: a checked gather read only in part still checks every index, fused as unfused") {
    // Fused into a reader that drops elements, the gather computed (and checked) only the elements read; the
    // partition now computes such a gather whole first, as the reference and fusion off do.
    const Tensor x = random_of({4}, float32, 27);
    const Tensor bad = tensor_of(std::vector<std::int64_t>{0, 99}, {2});
    const std::string sliced = error_of([&] { (void)Tensor(take(x, bad, 0).slice({{0, 1}})); });
    CHECK_MESSAGE(sliced.find("take(): index 99 is out of range") != std::string::npos, sliced);
    const std::string nothing = error_of([&] {
        (void)Tensor(broadcast_to(take(x, bad, 0).reshape({2, 1}), {2, 0}));
    });
    CHECK_MESSAGE(nothing.find("index 99 is out of range") != std::string::npos, nothing);
    const std::string nested = error_of(
        [&] { (void)Tensor(take(take(x, bad, 0), tensor_of(std::vector<std::int64_t>{0}, {1}), 0)); });
    CHECK_MESSAGE(nested.find("index 99 is out of range") != std::string::npos, nested);
    // In range, the values are the reference's; clamp mode and a gather read whole stay fused.
    const Tensor good = tensor_of(std::vector<std::int64_t>{3, -1, 1}, {3});
    const Array part = take(x, good, 0).slice({{1, 3}}) * 2.0;
    const testing::Comparison c = testing::check_against_reference({part});
    CHECK_MESSAGE(c.ok, c.message);
    CHECK_MESSAGE(explain({part}).find("read only in part") != std::string::npos, explain({part}));
    CHECK(explain({take(x, bad, 0, IndexMode::Clamp).slice({{0, 1}})}).find("read only in part") ==
          std::string::npos);
    CHECK(explain({take(x, good, 0) * 2.0}).find("read only in part") == std::string::npos);
    // Read in part through elementwise work over it: the sum's kernel computes only the elements the slice
    // keeps, so the gather below it is computed whole first too.
    const std::string through_add = error_of([&] { (void)Tensor((take(x, bad, 0) + 1.0).slice({{0, 1}})); });
    CHECK_MESSAGE(through_add.find("take(): index 99 is out of range") != std::string::npos, through_add);
    const std::string as_operand = error_of(
        [&] { (void)Tensor(take(take(x, bad, 0) * 2.0, tensor_of(std::vector<std::int64_t>{0}, {1}), 0)); });
    CHECK_MESSAGE(as_operand.find("index 99 is out of range") != std::string::npos, as_operand);
    const std::string one_hot_part = error_of([&] { (void)Tensor(one_hot(bad, 4).slice({{0, 1}})); });
    CHECK_MESSAGE(one_hot_part.find("one_hot(): index 99 is out of range") != std::string::npos,
                  one_hot_part);
    const Tensor rows = random_of({2, 4}, float32, 28);
    const Tensor bad_cols = tensor_of(std::vector<std::int64_t>{1, 7}, {2, 1});
    const std::string along = error_of([&] {
        (void)Tensor((sum(rows, 1, true) - take_along_axis(rows, bad_cols, 1)).slice({{0, 1}}));
    });
    CHECK_MESSAGE(along.find("index 7 is out of range") != std::string::npos, along);
    Tensor out = Tensor::empty({1}, float32, Device::cpu());
    const std::string assigned = error_of([&] { assign(out, (take(x, bad, 0) + 1.0).slice({{0, 1}})); });
    CHECK_MESSAGE(assigned.find("index 99 is out of range") != std::string::npos, assigned);
    const std::string loss = error_of([&] {
        (void)Tensor(cross_entropy(rows, tensor_of(std::vector<std::int64_t>{0, 9}, {2}),
                                   CrossEntropyOptions{.reduction = LossReduction::None})
                         .slice({{0, 1}}));
    });
    CHECK_MESSAGE(loss.find("cross_entropy(): label 9 is out of range") != std::string::npos, loss);
    // In range, the elementwise reader's values are the reference's.
    const testing::Comparison c4 =
        testing::check_against_reference({(take(x, good, 0) + 1.0).slice({{1, 3}})});
    CHECK_MESSAGE(c4.ok, c4.message);
}

TEST_CASE("gathers: a bad index in a traced call on the host names the call and the function") {
    const Tensor x = random_of({4}, float32, 29);
    const int defined = __LINE__ + 1;
    const auto pick = loom::function("pick", [](Array a, Array i) { return take(a, i, 0) * 2.0; });
    for (const std::int64_t bad : {4, 9}) {
        const Tensor ids = tensor_of(std::vector<std::int64_t>{0, bad}, {2});
        const int call = __LINE__ + 1;
        const std::string msg = error_of([&] { (void)pick(x, ids); });
        CHECK_MESSAGE(msg.find(fmt::format("take(): index {} is out of range", bad)) != std::string::npos,
                      msg);
        CHECK_MESSAGE(msg.find(fmt::format("(in the call of pick() at test_gather.cpp:{}; the function is "
                                           "defined at test_gather.cpp:{})",
                                           call, defined)) != std::string::npos,
                      msg);
    }
}

TEST_CASE("gathers: an error names the line of the gather evaluated, not of an equal one built elsewhere") {
    // Equal nodes are shared (hash-consing), but a gather or scatter keeps its line: the same take written on
    // two lines is two nodes, so the error of the one evaluated names its own line.
    const Tensor x = random_of({4}, float32, 30);
    const Tensor bad = tensor_of(std::vector<std::int64_t>{0, 4}, {2});
    const Array kept = take(x, bad, 0);  // built, never evaluated
    const int line = __LINE__ + 1;
    const Array used = take(x, bad, 0) * 2.0;
    const std::string msg = error_of([&] { (void)Tensor(used); });
    CHECK_MESSAGE(msg.find(fmt::format("(test_gather.cpp:{})", line)) != std::string::npos, msg);
    CHECK(kept.node() != used.node()->operand_ptr(0));
    // On one line they are one node, as any other op.
    auto twice = [&] { return std::pair{take(x, bad, 0), take(x, bad, 0)}; };
    const auto [a, b] = twice();
    CHECK(a.node() == b.node());
}

TEST_CASE("gathers: a checked gather whose result has no element still checks its indices") {
    // The operand's other axes have extent 0, so the result has none, but the indices do: NumPy's take
    // raises for 7 into an axis of 4, and docs/semantics.md checks every index. Before, nothing was read and
    // nothing raised.
    const Tensor bad = tensor_of(std::vector<std::int64_t>{0, 7, 1}, {3});
    const Tensor table = Tensor::empty({4, 0}, float32, Device::cpu());
    const Tensor wide = Tensor::empty({0, 3}, float32, Device::cpu());
    const std::string where = fmt::format("test_gather.cpp:{})", __LINE__ + 1);
    const std::string take_msg = error_of([&] { (void)Tensor(take(table, bad, 0)); });
    CHECK_MESSAGE(
        take_msg.find("take(): index 7 is out of range for an axis of extent 4") != std::string::npos,
        take_msg);
    CHECK_MESSAGE(take_msg.find(where) != std::string::npos, take_msg);
    const std::string select_msg = error_of([&] { (void)Tensor(index_select(wide, 1, bad)); });
    CHECK_MESSAGE(select_msg.find("index 7 is out of range for an axis of extent 3") != std::string::npos,
                  select_msg);
    const std::string summed = error_of([&] { (void)Tensor(sum(take(wide, bad, 1))); });
    CHECK_MESSAGE(summed.find("index 7 is out of range") != std::string::npos, summed);
    const std::string along = error_of([&] {
        (void)Tensor(take_along_axis(wide, tensor_of(std::vector<std::int64_t>{99}, {1, 1}), 1));
    });
    CHECK_MESSAGE(along.find("take_along_axis(): index 99 is out of range") != std::string::npos, along);
    // The same on the CPU reference (its own evaluation of the graph).
    CHECK_THROWS_AS((void)reference::evaluate(take(table, bad, 0).node()), Error);
    // A gather whose operand is the same at every position (a constant broadcast): the host back end emitted
    // no load at the position, and so no check either.
    const std::string constant_row = error_of([&] { (void)Tensor(take(full({4}, 0.5, float32), bad, 0)); });
    CHECK_MESSAGE(constant_row.find("take(): index 7 is out of range") != std::string::npos, constant_row);
    // In range (or clamped), the result is empty, of the right shape and dtype, and nothing raises.
    const Tensor good = tensor_of(std::vector<std::int64_t>{0, 3, -4}, {3});
    const Tensor r = take(table, good, 0);
    CHECK(r.shape() == Shape{3, 0});
    CHECK(r.dtype() == float32);
    CHECK(Tensor(take(table, bad, 0, IndexMode::Clamp)).shape() == Shape{3, 0});
    CHECK(Tensor(take_along_axis(wide, tensor_of(std::vector<std::int64_t>{2}, {1, 1}), 1)).shape() ==
          Shape{0, 1});
}
