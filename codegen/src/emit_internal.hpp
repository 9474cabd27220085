// Internal helpers of the CUDA emitter: the expression of one elementwise node.
#pragma once

#include <string>
#include <vector>

#include "loom/codegen/pointwise_plan.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen::detail {

/// `lm::add(v0, v1)`, `lm::cast<lm::f16>(v3)`, ...: the op's `cuda` spelling from ops.def applied to
/// `args`; float16/bfloat16 results are rounded with lm::round_f16 / lm::round_bf16 unless the op's
/// result is always a value of the operands' dtype (neg, abs, min, max, where, floor, ...).
std::string op_expression(const ir::Node& n, const std::vector<std::string>& args);

/// The pieces of a pointwise graph used inside another kernel (the element and row spaces of a reduction):
/// its parameter struct `<name>_params`, its body `<name>_body(...)` (one statement per node), and the
/// offset of every load site as an expression over the iteration indices `i0` (and `i1` for rank 2),
/// the derived indices `t<m>` and the fields of `p`.
struct PointwisePart {
    std::string params_struct;
    std::string body;
    bool body_needs_params = false;  // the body's first parameter is `const <name>_params& p`
    std::string derived;             // statements defining t<m> (reshape decompositions) from i0, i1
    std::vector<std::string> site_offset;
    std::string idx;                 // "int" or "long long"
};
PointwisePart pointwise_part(std::string_view name, const std::vector<ir::NodePtr>& outputs, const PointwisePlan& plan);

}  // namespace loom::codegen::detail
