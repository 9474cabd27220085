// The constants of the reduction order (docs/semantics.md, "Reduction order") and of the matrix products'
// order (section 12), and the pairwise tree both use, defined once: the CPU reference
// (runtime/src/reference_reduce.cpp, reference_matmul.cpp), the reduction planner
// (codegen/src/reduce_plan.cpp) and the emitters all read them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

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

/// Matrix products (docs/semantics.md, section 12): the contraction axis of length K is cut into chunks of
/// kProductChunk, chunk c holding k in [c * kProductChunk, min(K, (c + 1) * kProductChunk)); Kc is K itself
/// for K <= 8192. Each output accumulates a chunk with fma in ascending k from +0, and the chunk partials are
/// combined by the pairwise tree below. Long enough that every common shape (K up to 8192) is one chunk, one
/// fma chain per output, as a register-tiled GEMM kernel accumulates it, with no partials to keep; a power of
/// two, so that every K tile a kernel uses and every split of a longer K into groups of chunks lands on chunk
/// boundaries.
inline constexpr std::int64_t kProductChunk = 8192;
/// The number of chunks of a contraction of length K (0 for K = 0).
constexpr std::int64_t product_chunks(std::int64_t K) {
    return K <= 0 ? 0 : (K + kProductChunk - 1) / kProductChunk;
}

/// The pairwise tree over chunk partials p[0 .. n), n >= 1: (0, 1), (2, 3), ... combined as `combine(left,
/// right)`, an odd last partial carried up unchanged, repeated until one value remains. Overwrites `p`;
/// returns the root.
template <class T, class Combine>
T pairwise_tree(std::span<T> p, Combine&& combine) {
    std::size_t n = p.size();
    while (n > 1) {
        std::size_t k = 0;
        for (; k + 1 < n; k += 2) p[k / 2] = combine(p[k], p[k + 1]);
        if (k < n) p[k / 2] = p[k];
        n = (n + 1) / 2;
    }
    return p[0];
}

}  // namespace loom
