// The Op enum and per-op facts (name, arity, kind, typing rule, CUDA spelling), generated from ops.def.
#pragma once

#include <cstdint>
#include <string_view>

namespace loom::ir {

enum class Op : std::uint8_t {
#define LOOM_LEAF(Id, name) Id,
#define LOOM_UNARY(Id, name, Rule, cuda) Id,
#define LOOM_BINARY(Id, name, Rule, cuda) Id,
#define LOOM_TERNARY(Id, name, Rule, cuda) Id,
#define LOOM_VIEW(Id, name) Id,
#define LOOM_REDUCE(Id, name, Rule) Id,
#include "loom/ir/ops.def"
};

enum class OpKind : std::uint8_t { Leaf, Unary, Binary, Ternary, View, Reduce };

/// Typing rules (docs/semantics.md, "Op typing").
enum class Rule : std::uint8_t {
    None,        // leaves and views: dtype given or kept
    Numeric,     // any non-bool dtype, result keeps it (bool is an error)
    FloatMath,   // float result; integer and bool operands promote to float32
    FloatArith,  // floats only, the promoted float dtype (fma)
    Rounding,    // floats keep dtype; integers pass through unchanged; bool is an error
    ToBool,      // result bool
    Cast,        // result is the cast's target dtype
    Arith,       // promoted dtype; bool is an error
    Compare,     // operands promoted, result bool
    Logical,     // any dtypes (truthiness), result bool
    Bitwise,     // bool or integers only, promoted
    Shift,       // integers only, result has the left operand's dtype
    Select,      // where(cond, a, b): cond any dtype (truthiness), result promote(a, b)
    Clamp,       // clamp(x, lo, hi): promoted; bool is an error
    SumProd,     // integers and bool -> int64, floats keep dtype
    MinMax,      // keeps dtype
    Mean,        // integers and bool -> float32, floats keep dtype
    ArgMinMax,   // int64 index
    AnyAll,      // bool
};

struct OpInfo {
    std::string_view name;
    int arity;  // number of operands; -1 for leaves
    OpKind kind;
    Rule rule;
    std::string_view cuda;  // prelude function that computes an elementwise op; empty otherwise
};

const OpInfo& info(Op op);
inline std::string_view op_name(Op op) { return info(op).name; }
inline bool is_elementwise(Op op) {
    OpKind k = info(op).kind;
    return k == OpKind::Unary || k == OpKind::Binary || k == OpKind::Ternary;
}
inline bool is_view(Op op) { return info(op).kind == OpKind::View; }
inline bool is_reduction(Op op) { return info(op).kind == OpKind::Reduce; }
inline bool is_leaf(Op op) { return info(op).kind == OpKind::Leaf; }

/// Number of ops in the table.
int num_ops();

}  // namespace loom::ir
