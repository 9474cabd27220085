// Internal: the vector width of a pointwise plan (PointwisePlan::vector_width, vector_flat, vector_registers,
// GatherPlan::per_vector), decided from the graph, the plan's classified operands and one call's binding.
#pragma once

#include <vector>

#include "loom/codegen/plan/pointwise_plan.hpp"
#include "pointwise_graph.hpp"

namespace loom::codegen::detail {

/// Sets p.vector_width (1: no vector variant), p.vector_flat, each gather's per_vector and, when the register
/// estimate rules the vector variant out, p.vector_registers, for the plan `p` of graph `g`, its loads,
/// outputs, derived indices and gathers classified. `own_kernel`: the plan is a pointwise kernel of its own
/// (PointwiseUse::Kernel), the only use whose vector variant the register budget limits and the only one
/// that computes gathers' positions once per vector.
void plan_vector_width(const PwGraph& g, PointwisePlan& p, const PointwiseBinding& b,
                       const std::vector<InputLayout>& layouts, bool own_kernel);

}  // namespace loom::codegen::detail
