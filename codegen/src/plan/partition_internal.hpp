// Internals of partition(): the partition of graphs with matrix products (partition_products.cpp), which
// cuts the graph at its products and partitions the pieces between them with the ordinary partitioner.
#pragma once

#include <functional>
#include <vector>

#include "loom/codegen/plan/partition.hpp"

namespace loom::codegen::detail {

/// The ordinary partition of a graph without products: fused, strict or unfused as the options say.
using PlainPartition = std::function<Partition(const std::vector<ir::NodePtr>&, const PartitionOptions&)>;

/// The nodes of the graph of `roots` in topological order (operands first), as owning pointers (from the
/// users' operand lists).
std::vector<ir::NodePtr> owning_order(const std::vector<ir::NodePtr>& roots);

/// Whether the graph of `roots` has a matrix product.
bool has_product(const std::vector<ir::NodePtr>& roots);

/// Whether the graph of `roots` has a gather whose operand is computed work below a reshape that merges or
/// splits axes, or a checked gather that the graph reads only in part: partition_products computes those
/// first, in stages of their own.
bool has_gathers_computed_first(const std::vector<ir::NodePtr>& roots);

/// The partition of a graph with products: each product a Family::MatMul kernel reading its operands from
/// memory (inputs, products' results and views of either in place; anything else materialized first), the
/// rest partitioned by `plain` in stages between the products. Gathered operands a fused gather cannot
/// index and checked gathers read in part (has_gathers_computed_first) are first stages.
Partition partition_products(const std::vector<ir::NodePtr>& roots, const PartitionOptions& options,
                             const PlainPartition& plain);

}  // namespace loom::codegen::detail
