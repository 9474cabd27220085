// Shapes, strides and NumPy broadcasting.
#include "loom/ir/shape.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <source_location>
#include <vector>

#include "loom/ir/error.hpp"

namespace loom {

std::int64_t numel(const Shape& s) {
    std::int64_t n = 1;
    for (auto e : s) n *= e;
    return n;
}

Strides contiguous_strides(const Shape& s) {
    Strides st(s.size());
    std::int64_t acc = 1;
    for (std::size_t k = s.size(); k-- > 0;) {
        st[k] = acc;
        acc *= s[k];
    }
    return st;
}

bool is_contiguous(const Shape& shape, const Strides& strides) {
    std::int64_t expect = 1;
    for (std::size_t k = shape.size(); k-- > 0;) {
        if (shape[k] == 1) continue;
        if (strides[k] != expect) return false;
        expect *= shape[k];
    }
    return true;
}

bool is_non_overlapping(const Shape& shape, const Strides& strides) {
    std::vector<std::size_t> dims;
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (shape[k] == 0) return true;  // no elements
        if (shape[k] > 1) dims.push_back(k);
    }
    std::sort(dims.begin(), dims.end(),
              [&](std::size_t a, std::size_t b) { return std::abs(strides[a]) < std::abs(strides[b]); });
    std::int64_t reach = 0;  // the largest element distance the smaller dimensions span
    for (std::size_t k : dims) {
        const std::int64_t s = std::abs(strides[k]);
        if (s <= reach) return false;
        reach += s * (shape[k] - 1);
    }
    return true;
}

std::string to_string(const Shape& s) {
    return fmt::format("[{}]", fmt::join(s, ", "));
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
    const std::size_t r = std::max(a.size(), b.size());
    Shape res(r);
    for (std::size_t k = 0; k < r; ++k) {
        std::int64_t ea = k < r - a.size() ? 1 : a[k - (r - a.size())];
        std::int64_t eb = k < r - b.size() ? 1 : b[k - (r - b.size())];
        if (ea == eb || eb == 1)
            res[k] = ea;
        else if (ea == 1)
            res[k] = eb;
        else
            return false;
    }
    out = std::move(res);
    return true;
}

int normalize_axis(std::int64_t axis, int rank) {
    if (axis < -rank || axis >= rank) return -1;
    return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::string short_location(const std::source_location& loc) {
    std::string_view f = loc.file_name();
    if (f.empty()) return "<unknown>";
    auto slash = f.find_last_of('/');
    if (slash != std::string_view::npos) f = f.substr(slash + 1);
    return fmt::format("{}:{}", f, loc.line());
}

}  // namespace loom
