// Reference semantics of every elementwise op on one element, per docs/semantics.md. Used by constant
// folding and, through the templates of elementwise_impl.hpp, by the CPU reference evaluator, so the two
// can never disagree.
#pragma once

#include "loom/ir/node.hpp"

namespace loom::ir {

/// Value of elementwise op `op` whose result has dtype `out`, applied to `args` (values of `in`, the
/// operand dtype after the constructors' promotion; for Where the first argument is bool and `in` is the
/// dtype of the other two; for Cast `in` is the source dtype). Integer overflow wraps, division by zero
/// and INT_MIN / -1 give the contract's defined values, float16/bfloat16 compute in float32 and round once.
ScalarValue eval_elementwise(Op op, DType out, DType in, const ScalarValue* args);

}  // namespace loom::ir
