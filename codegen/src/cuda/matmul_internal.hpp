// Pieces of plan_matmul shared between its files: the Hopper (wgmma) schedule lives in matmul_wgmma.cpp.
#pragma once

#include "loom/codegen/cuda/matmul_plan.hpp"

namespace loom::codegen::detail {

/// Plans the product on Hopper's warpgroup MMAs when it can run there: float16 or bfloat16 on compute
/// capability 9.0, tensor cores asked for (ProductPath::TensorCores), operands that are views of inputs whose
/// layouts the tensor memory accelerator can copy (a unit stride along one of the matrix axes, 16-byte
/// aligned rows and batch entries, batches that broadcast or collapse to one axis), K at least 1, and a tile
/// hint (`given`, 0 for the planner's choice) that is a wgmma tile. Sets the tile, stages, consumers,
/// majorness and map ranks of pm.plan and pm.binding's batch strides and returns true; else sets
/// plan.wgmma_note (why not, for the banner and the explain log) and returns false. `a_aligned` /
/// `b_aligned`: the operands' inputs are 16-byte aligned.
bool plan_wgmma(PlannedMatmul& pm, const TileHint& given, bool a_aligned, bool b_aligned,
                const DeviceInfo& device);

}  // namespace loom::codegen::detail
