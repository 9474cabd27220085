// Internal helpers of the CUDA emitter: the expression of one elementwise node.
#pragma once

#include <string>
#include <vector>

#include "loom/ir/node.hpp"

namespace loom::codegen::detail {

/// `lm::add(v0, v1)`, `lm::cast<lm::f16>(v3)`, ...: the op's `cuda` spelling from ops.def applied to
/// `args`; float16/bfloat16 results are rounded with lm::round_f16 / lm::round_bf16 unless the op's
/// result is always a value of the operands' dtype (neg, abs, min, max, where, floor, ...).
std::string op_expression(const ir::Node& n, const std::vector<std::string>& args);

}  // namespace loom::codegen::detail
