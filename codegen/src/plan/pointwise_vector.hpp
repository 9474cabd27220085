// Internal: the vector width of a pointwise plan (PointwisePlan::vector_width, vector_flat,
// vector_registers), decided from the plan's classified operands and one call's binding.
#pragma once

#include <vector>

#include "loom/codegen/plan/pointwise_plan.hpp"

namespace loom::codegen::detail {

/// Sets p.vector_width (1: no vector variant), p.vector_flat and, when the register estimate rules the vector
/// variant out, p.vector_registers. `own_kernel`: the plan is a pointwise kernel of its own
/// (PointwiseUse::Kernel), the only use whose vector variant the register budget limits.
void plan_vector_width(PointwisePlan& p, const PointwiseBinding& b, const std::vector<InputLayout>& layouts,
                       bool own_kernel);

}  // namespace loom::codegen::detail
