// cross_entropy (loom::cross_entropy; dsl/include/loom/dsl/composites.hpp) on host tensors: against a float64
// evaluation for mean, sum and none, with ignored rows, rank-3 logits, int32 and int64 labels and bfloat16
// logits; every row ignored gives NaN for the mean; the host back end equals the reference bit for bit, and
// unfused equals fused; out-of-range labels (above and negative) raise naming cross_entropy, the label and
// the caller's line; the errors of building one.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Labels in [0, classes), every `ignore_every`-th one replaced by -100.
Tensor labels_of(std::int64_t rows, std::int64_t classes, DType dt, int ignore_every, std::uint64_t seed) {
    Tensor l = testing::random_tensor({rows}, int64, seed, testing::Random::uniform(0, double(classes - 1)));
    auto* p = static_cast<std::int64_t*>(l.data());
    for (std::int64_t i = 0; ignore_every > 0 && i < rows; i += ignore_every) p[i] = -100;
    return dt == int64 ? l : Tensor(Array(l).astype(dt));
}

// The per-row losses in float64 (0 for ignored rows) of float logits [rows, classes].
std::vector<double> naive(const Tensor& logits, const Tensor& labels) {
    const Tensor x = Tensor(Array(logits).astype(float64)), l = Tensor(Array(labels).astype(int64));
    const std::int64_t rows = l.numel(), classes = x.numel() / std::max<std::int64_t>(rows, 1);
    const auto* xp = static_cast<const double*>(x.data());
    const auto* lp = static_cast<const std::int64_t*>(l.data());
    std::vector<double> out(static_cast<std::size_t>(rows), 0.0);
    for (std::int64_t i = 0; i < rows; ++i) {
        if (lp[i] == -100) continue;
        double m = -INFINITY, s = 0.0;
        for (std::int64_t c = 0; c < classes; ++c) m = std::max(m, xp[i * classes + c]);
        for (std::int64_t c = 0; c < classes; ++c) s += std::exp(xp[i * classes + c] - m);
        out[static_cast<std::size_t>(i)] = std::log(s) + m - xp[i * classes + lp[i]];
    }
    return out;
}

double value(const Tensor& t) {
    return Tensor(Array(t).astype(float64)).item<double>();
}

}  // namespace

TEST_CASE("cross_entropy: mean, sum and none against float64, ignored rows, int32 and int64 labels") {
    const std::int64_t rows = 67, classes = 301;
    const Tensor x = testing::random_tensor({rows, classes}, float32, 1, testing::Random::normal(0.0, 3.0));
    for (const DType ldt : {int64, int32}) {
        const Tensor labels = labels_of(rows, classes, ldt, 5, 2);
        const std::vector<double> want = naive(x, labels);
        double total = 0.0;
        std::int64_t counted = 0;
        for (std::int64_t i = 0; i < rows; ++i) {
            total += want[static_cast<std::size_t>(i)];
            counted += i % 5 != 0;
        }
        // Each loss is logsumexp (values near 10 at most here) minus a logit: a few float32 roundings of
        // such values, 1e-5 relative with room; the sums add 67 of them.
        const Tensor none = cross_entropy(x, labels, {.reduction = LossReduction::None});
        REQUIRE(none.shape() == Shape{rows});
        CHECK(none.dtype() == float32);
        const auto* np = static_cast<const float*>(none.data());
        for (std::int64_t i = 0; i < rows; ++i)
            CHECK(std::abs(np[i] - want[static_cast<std::size_t>(i)]) <= 1e-5 * (1 + std::abs(want[i])));
        CHECK(std::abs(value(cross_entropy(x, labels, {.reduction = LossReduction::Sum})) - total) <=
              1e-5 * std::abs(total));
        const Tensor mean = cross_entropy(x, labels);
        CHECK(mean.shape() == Shape{});
        CHECK(std::abs(value(mean) - total / double(counted)) <= 1e-5 * std::abs(total / double(counted)));
    }
}

TEST_CASE("cross_entropy: an ignore_index that int32 labels cannot hold ignores nothing") {
    const Tensor x = testing::random_tensor({9, 7}, float32, 3);
    const Tensor labels = labels_of(9, 7, int32, 0, 4);  // every label valid, none ignored
    const Tensor plain = cross_entropy(x, labels);
    for (const std::int64_t far : {std::int64_t{3000000000}, std::int64_t{-3000000000}}) {
        const Tensor got = cross_entropy(x, labels, {.ignore_index = far});
        CHECK(testing::same_bits(got, plain));
    }
}

TEST_CASE("cross_entropy: rank-3 logits, bfloat16 in float32, every row ignored, bits on every path") {
    const Tensor x = testing::random_tensor({3, 5, 17}, float32, 3);
    Tensor l = testing::random_tensor({3, 5}, int64, 4, testing::Random::uniform(0, 16));
    const Array y = cross_entropy(x, l, {.reduction = LossReduction::None});
    CHECK(y.shape() == Shape{3, 5});
    const Tensor expected = reference::evaluate(y.node());
    CHECK(testing::same_bits(Tensor(y), expected));
    Tensor unfused;
    {
        Options o = current_options();
        o.fusion = false;
        const OptionsScope scope(o);
        unfused = Tensor(cross_entropy(x, l));
    }
    CHECK(testing::same_bits(unfused, Tensor(cross_entropy(x, l))));

    const Tensor xb = Tensor(Array(x).astype(bfloat16));
    const Tensor b = cross_entropy(xb, l);
    CHECK(b.dtype() == bfloat16);
    // float32 inside, rounded once to bfloat16 (8 bits of mantissa).
    CHECK(std::abs(value(b) - value(cross_entropy(Tensor(Array(xb).astype(float32)), l))) <=
          std::ldexp(std::abs(value(b)), -8));

    auto* lp = static_cast<std::int64_t*>(l.data());
    for (std::int64_t i = 0; i < l.numel(); ++i) lp[i] = 7;
    CHECK(std::isnan(value(cross_entropy(x, l, {.ignore_index = 7}))));
    CHECK(value(cross_entropy(x, l, {.reduction = LossReduction::Sum, .ignore_index = 7})) == 0.0);
}

TEST_CASE("cross_entropy: a label out of range raises naming it and the caller's line") {
    const Tensor x = testing::random_tensor({9, 6}, float32, 5);
    Tensor l = testing::random_tensor({9}, int64, 6, testing::Random::uniform(0, 5));
    auto* lp = static_cast<std::int64_t*>(l.data());
    lp[4] = 6;
    const int line = __LINE__ + 1;
    std::string msg = error_of([&] { (void)Tensor(cross_entropy(x, l)); });
    CHECK_MESSAGE(has(msg, "cross_entropy(): label 6 is out of range for 6 classes (valid: 0 to 5"), msg);
    CHECK_MESSAGE(has(msg, fmt::format("test_cross_entropy.cpp:{}", line)), msg);
    lp[4] = -3;  // never read as take's "from the end"
    msg = error_of([&] { (void)Tensor(cross_entropy(x, l)); });
    CHECK_MESSAGE(has(msg, "cross_entropy(): label -3 is out of range for 6 classes"), msg);
    lp[4] = -100;
    CHECK(std::isfinite(value(cross_entropy(x, l))));
    // An int32 label at its minimum is named as given: the shift to an invalid index runs in int64, where
    // it does not wrap.
    Tensor l32 = testing::random_tensor({9}, int32, 7, testing::Random::uniform(0, 5));
    static_cast<std::int32_t*>(l32.data())[2] = std::numeric_limits<std::int32_t>::min();
    msg = error_of([&] { (void)Tensor(cross_entropy(x, l32)); });
    CHECK_MESSAGE(has(msg, "cross_entropy(): label -2147483648 is out of range for 6 classes"), msg);
}

TEST_CASE("cross_entropy: int32 labels over more classes than int32 holds are built (the shift is int64)") {
    // A lazy [1, 2^31 + 10] row: only the building is checked (the label shift once made an int32 scalar of
    // the class count, refused by sub() with a message naming an API the user never called).
    const Array logits = zeros({1, (std::int64_t{1} << 31) + 10}, float32, Device::cpu());
    const Tensor labels = testing::random_tensor({1}, int32, 8, testing::Random::uniform(0, 5));
    CHECK_NOTHROW((void)cross_entropy(logits, labels));
}

TEST_CASE("cross_entropy: errors when built name the shapes and dtypes") {
    const Tensor x = testing::random_tensor({4, 3}, float32, 7);
    const Tensor l = testing::random_tensor({4}, int64, 8, testing::Random::uniform(0, 2));
    CHECK(has(error_of([&] { (void)cross_entropy(x, Tensor(Array(l).astype(float32))); }),
              "labels must be int32 or int64"));
    CHECK(has(error_of([&] { (void)cross_entropy(x, testing::random_tensor({3}, int64, 9)); }),
              "labels must have the logits' shape without the class axis, [4]"));
    CHECK(has(error_of([&] { (void)cross_entropy(l, l); }), "logits must be floats"));
    CHECK(has(error_of([&] {
                  (void)cross_entropy(testing::random_tensor({4, 0}, float32, 1), l);
              }),
              "no classes"));
    const std::string msg = error_of([&] { (void)cross_entropy(x, testing::random_tensor({3}, int64, 9)); });
    CHECK_MESSAGE((has(msg, "cross_entropy()") && has(msg, "test_cross_entropy.cpp:")), msg);
}
