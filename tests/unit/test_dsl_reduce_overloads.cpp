// The reductions' axis arguments: one integer axis, a list of axes, and an empty brace list (all axes).
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <loom/loom.hpp>

using namespace loom;

TEST_CASE("reductions: an empty brace list means all axes, and one integer axis of any integer type") {
    const Tensor x = testing::random_tensor({3, 4, 5}, float32, 3);
    CHECK(sum(x, {}, true).shape() == Shape{1, 1, 1});  // not axis 0
    CHECK(sum(x, {}, true).node() == sum(x, Axes{}, true).node());
    CHECK(max(x, {}).shape() == Shape{});
    CHECK(mean(x, {}, false).node() == mean(x).node());
    CHECK(sum(x, 1).node() == sum(x, Axes{1}).node());
    CHECK(sum(x, std::int64_t{-1}, true).node() == sum(x, Axes{2}, true).node());
    CHECK(argmax(x, std::size_t{0}).node() == argmax(x, Axes{0}).node());
    CHECK(prod(x, short{2}).shape() == Shape{3, 4});
    CHECK(any(x, {0, 2}).shape() == Shape{4});
    CHECK(all(x, {1}).node() == all(x, 1).node());  // a one-element list is that axis
    CHECK(min(x, -2, true).shape() == Shape{3, 1, 5});
    CHECK(argmin(x, 2L).shape() == Shape{3, 4});
}
