// Internal: the vector width of a pointwise plan (PointwisePlan::vector_width, vector_flat, vector_registers,
// gathers_per_vector()), decided from the graph, the plan's classified operands and one call's binding.
#pragma once

#include <vector>

#include "loom/codegen/plan/pointwise_plan.hpp"
#include "pointwise_graph.hpp"

namespace loom::codegen::detail {

/// Which values of graph `g` (planned as `p`) are the same in every lane of a vector along the last
/// dimension, and which derived indices (a reshape's quotients and remainders) are: a value is when nothing
/// in its cone of arguments moves along that dimension (no contiguous or row-broadcast site, no site, derived
/// index or iota with a term in it, no gather whose position moves). An embedding lookup's row ids are; the
/// index of a take along the last axis is not. `sites_move`: every strided, gathered or indirect site counts
/// as moving (the host back end's reduction rows, whose values another loop supplies). One pass in the
/// graph's order.
struct LaneUniform {
    std::vector<bool> values;   // by value number
    std::vector<bool> derived;  // by derived index
};
LaneUniform lane_uniform_values(const PwGraph& g, const PointwisePlan& p, bool sites_move);
/// Whether the offset of load site `o`, less its last-dimension term, is the same in every lane: its derived
/// indices and its gathers' positions (values numbered below `before`) are.
bool row_parts_uniform(const LaneUniform& u, const PwGraph& g, const OperandPlan& o,
                       std::size_t before = static_cast<std::size_t>(-1));

/// Sets p.vector_width (1: no vector variant), p.vector_flat (and so gathers_per_vector()) and, when the
/// register estimate rules the vector variant out, p.vector_registers, for the plan `p` of graph `g`, its
/// loads, outputs, derived indices and gathers classified. `own_kernel`: the plan is a pointwise kernel of
/// its own (PointwiseUse::Kernel), the only use whose vector variant the register budget limits and the only
/// one that computes gathers' positions once per vector.
void plan_vector_width(const PwGraph& g, PointwisePlan& p, const PointwiseBinding& b,
                       const std::vector<InputLayout>& layouts, bool own_kernel);

}  // namespace loom::codegen::detail
