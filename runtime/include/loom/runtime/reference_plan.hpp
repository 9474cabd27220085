// Following a partition on the CPU reference: each kernel of a codegen::Partition evaluated by the
// reference in launch order, its inputs bound to the graph's tensors and to the temporaries earlier kernels
// wrote (contiguous, in their dtype). What any back end computes when it follows the partition, with the
// reference's arithmetic: the differential fuzzer compares it bit for bit with the whole graph evaluated
// at once, for fused, strict and unfused partitions, without a GPU. It checks the partitioner (which
// values are materialized, at which dtype and shape, which kernel writes which root), not an emitter.
#pragma once

#include <vector>

#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::reference {

/// The results of `roots` (the roots `partition` was made for) computed kernel by kernel: one contiguous
/// host tensor per root. Throws InternalError when the partition is malformed (a kernel reads a temporary
/// no earlier kernel wrote, or a root is never written).
std::vector<Tensor> evaluate_partition(const codegen::Partition& partition,
                                       const std::vector<ir::NodePtr>& roots);

}  // namespace loom::reference
