// Internal: the LLVM IR of every elementwise op of ops.def and of every cast, on compute values at any
// width, with the contract's rules spelled out where LLVM leaves a result undefined or poison (division by
// zero, INT_MIN / -1, shift amounts outside the width, float -> integer conversions out of range) and float16
// / bfloat16 results rounded once per op (docs/semantics.md, sections 4-6).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "llvm_ir.hpp"

namespace loom::codegen::llvm_ir {

/// Emits elementwise node `n` on `args` (compute values of its operands' dtypes at width w) and returns the
/// result (a compute value of n's dtype). `hint` names the result; `comment` annotates its instruction.
std::string emit_elementwise(Builder& b, const ir::Node& n, const std::vector<std::string>& args, int w,
                             std::string_view hint, std::string_view comment);

/// The cast of compute value `v` from dtype `from` to `to` (docs/semantics.md, section 6).
std::string emit_cast(Builder& b, DType from, DType to, const std::string& v, int w, std::string_view hint,
                      std::string_view comment = {});

/// IEEE 754-2019 minimum / maximum of floats of IR type `ty` at width w, as the reference computes them: a
/// NaN operand wins (the first), equal values pick by sign (-0 < +0), else the smaller / larger. Written as
/// compares and selects rather than llvm.minimum / llvm.maximum: InstCombine narrows those to half precision
/// when the operands are widened float16 values, and LLVM 19's x86 lowering of the half form loses a NaN
/// against +0.
std::string float_min_max(Builder& b, bool max, std::string_view ty, const std::string& x,
                          const std::string& y, int w, std::string_view hint, std::string_view comment = {});

/// The names of the host scalar library's functions the generated code may call (runtime/src/
/// host_scalar_library.cpp defines one per name): `loom_<op>_f32` / `loom_<op>_f64` for the functions of
/// rule FloatMath other than sqrt, `loom_cast_<from>_to_<to>` for the casts to float16 and bfloat16 that
/// must round from a double, and the float16 conversions used without F16C.
std::string library_function(ir::Op op, DType compute);
std::string library_cast(DType from, DType to);
/// The host library's function of a random op (rule Random) giving values of the float dtype `result`:
/// `loom_<op>_<f16|bf16|f32|f64>(i64 index, i64 seed)`, returning the value (halves in a float).
std::string library_random(ir::Op op, DType result);

}  // namespace loom::codegen::llvm_ir
