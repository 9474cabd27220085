// Shapes, strides and NumPy broadcasting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom {

/// Extents of an array, outermost first (row-major). Rank 0 is a scalar; Loom supports up to rank 8.
using Shape = std::vector<std::int64_t>;
/// Strides in elements (not bytes), one per dimension; 0 for a broadcast dimension.
using Strides = std::vector<std::int64_t>;

inline constexpr int kMaxRank = 8;

/// Product of the extents (1 for rank 0).
std::int64_t numel(const Shape& s);
/// Row-major contiguous strides of a shape, in elements.
Strides contiguous_strides(const Shape& s);
/// "[4096, 512]"
std::string to_string(const Shape& s);
/// Whether `strides` (elements) lay `shape` out row-major without gaps; extent-1 axes may have any stride.
bool is_contiguous(const Shape& shape, const Strides& strides);
/// Whether no two elements of a view of `shape` and `strides` (elements) share an address: the dimensions
/// sorted by |stride| each step past everything the smaller ones reach. True when there are no elements.
bool is_non_overlapping(const Shape& shape, const Strides& strides);
/// NumPy broadcast of two shapes; returns false when they do not broadcast.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);
/// Normalizes a possibly negative axis against a rank; returns -1 when out of range.
int normalize_axis(std::int64_t axis, int rank);

namespace ir {

/// One (start, stop, step) of a slice with Python's meaning: negative indices count from the end, kNone is
/// the default for the step's direction (a step of kNone is 1), negative steps walk backwards.
struct SliceSpec {
    static constexpr std::int64_t kNone = INT64_MIN;
    std::int64_t start = kNone;
    std::int64_t stop = kNone;
    std::int64_t step = 1;
};

}  // namespace ir

}  // namespace loom
