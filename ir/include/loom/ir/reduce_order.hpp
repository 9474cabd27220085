// The constants of the reduction order (docs/semantics.md, "Reduction order"), defined once: the CPU
// reference (runtime/src/reference_reduce.cpp), the reduction planner (codegen/src/reduce_plan.cpp) and the
// emitters all read them.
#pragma once

#include <cstdint>

namespace loom {

/// Row order (the innermost axis reduced): the reduced range of one output is cut into chunks of
/// kReduceChunk elements; in a chunk, element i goes to lane (i / kReduceRun) mod kReduceLanes; lanes
/// accumulate in increasing i, are combined by the butterfly lane l with l + 128, then l + 64, ..., l + 1;
/// chunk partials by a pairwise tree over chunk index.
inline constexpr std::int64_t kReduceChunk = 8192;
inline constexpr std::int64_t kReduceLanes = 256;
inline constexpr std::int64_t kReduceRun = 4;
/// Column order (the innermost axis kept): chunks of kColumnChunk elements, each accumulated one element
/// after the other, combined by the same pairwise tree.
inline constexpr std::int64_t kColumnChunk = 256;

}  // namespace loom
