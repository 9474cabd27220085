// The Op enum and per-op facts (name, arity, kind, typing rule, CUDA spelling, cost class, exactness, GPU ulp
// bound), generated from ops.def.
#pragma once

#include <cstdint>
#include <string_view>

namespace loom::ir {

enum class Op : std::uint8_t {
#define LOOM_LEAF(Id, name) Id,
#define LOOM_UNARY_ROW(Id, name, Rule, cuda, Cost, Exactness, Ulp) Id,
#define LOOM_BINARY_ROW(Id, name, Rule, cuda, Cost, Exactness, Ulp) Id,
#define LOOM_TERNARY_ROW(Id, name, Rule, cuda, Cost, Exactness, Ulp) Id,
#define LOOM_VIEW(Id, name) Id,
#define LOOM_REDUCE_ROW(Id, name, Rule, Exactness, Ulp) Id,
#define LOOM_PRODUCT_ROW(Id, name, Rule, Exactness, Ulp) Id,
#define LOOM_GATHER(Id, name) Id,
#define LOOM_ATTENTION(Id, name) Id,
#define LOOM_SCAN(Id, name) Id,
#define LOOM_SCATTER(Id, name) Id,
#include "loom/ir/ops.def"
};

enum class OpKind : std::uint8_t {
    Leaf,
    Unary,
    Binary,
    Ternary,
    View,
    Reduce,
    Product,
    Gather,
    Attention,
    Scan,
    Scatter
};

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
    Random,      // random_uniform, random_normal: int64 index and seed, result the float dtype asked for
    Select,      // where(cond, a, b): cond any dtype (truthiness), result promote(a, b)
    Clamp,       // clamp(x, lo, hi): promoted; bool is an error
    SumProd,     // integers and bool -> int64, floats keep dtype
    MinMax,      // keeps dtype
    Mean,        // integers and bool -> float32, floats keep dtype
    ArgMinMax,   // int64 index
    AnyAll,      // bool
    MatMul,  // float16, bfloat16, float32, float64 keep their dtype; int8 x int8 -> int32 (after promotion)
};

/// Cost class of an elementwise op (column Cost of ops.def).
enum class Cost : std::uint8_t {
    None,            // leaves, views, reductions and products: not an elementwise computation
    Cheap,           // one or a few ALU instructions (add, compare, select, casts, ...)
    Division,        // a correctly rounded division or square root, or fmod: an iterative sequence
    Transcendental,  // a CUDA Math API function that is not correctly rounded, or a composite built on one
};

/// Column Exactness of ops.def.
enum class Exactness : std::uint8_t {
    Exact,    // operands of the op's dtype give a value of the result dtype: nothing to round
    Rounded,  // a float result may need rounding
};

/// The GPU's maximum error for an op, in ulps of a float32 and of a float64 result (column Ulp of ops.def:
/// the CUDA C++ Programming Guide, "Mathematical Functions"; 0 for exact and correctly rounded ops). For a
/// composite, the bound of the function it is built on (`part`) plus one ulp for each of the `steps`
/// rounded steps after it, already added into f32 and f64 (docs/semantics.md, "Composite activations").
struct UlpBound {
    double f32 = 0.0;
    double f64 = 0.0;
    bool composite = false;
    Op part{};      // composites: the function the bound is built on
    int steps = 0;  // composites: rounded steps after `part`
};

struct OpInfo {
    std::string_view name;
    int arity;  // number of operands; -1 for leaves
    OpKind kind;
    Rule rule;
    std::string_view cuda;  // prelude function that computes an elementwise op; empty otherwise
    Cost cost;              // Cost::None for leaves, views, reductions and products
    Exactness exactness;    // leaves and views: Exact (they move values)
    UlpBound gpu_ulp;       // leaves and views: 0 (they compute nothing)
};

const OpInfo& info(Op op);
inline std::string_view op_name(Op op) {
    return info(op).name;
}
inline bool is_elementwise(Op op) {
    OpKind k = info(op).kind;
    return k == OpKind::Unary || k == OpKind::Binary || k == OpKind::Ternary;
}
inline bool is_view(Op op) {
    return info(op).kind == OpKind::View;
}
inline bool is_reduction(Op op) {
    return info(op).kind == OpKind::Reduce;
}
inline bool is_leaf(Op op) {
    return info(op).kind == OpKind::Leaf;
}
/// A contraction of two operands (matmul): a kernel family of its own, never fused into an elementwise
/// kernel.
inline bool is_product(Op op) {
    return info(op).kind == OpKind::Product;
}
/// A read of one operand at the indices another holds (ir::Op::Gather): fused into elementwise kernels as a
/// load at a computed index.
inline bool is_gather(Op op) {
    return info(op).kind == OpKind::Gather;
}
/// Fused attention over heads (ir::Op::Attention): a kernel family of its own.
inline bool is_attention(Op op) {
    return info(op).kind == OpKind::Attention;
}
/// A scan along one axis (cumsum, cumprod, cummax, cummin, logcumsumexp): a kernel family of its own.
inline bool is_scan(Op op) {
    return info(op).kind == OpKind::Scan;
}
/// A write of values at the positions an index array names (scatter, scatter_add): a kernel family of its
/// own.
inline bool is_scatter(Op op) {
    return info(op).kind == OpKind::Scatter;
}
/// Which keys an attention's causal mask hides (Attention's ints[0]; docs/semantics.md, "Attention"): none;
/// TopLeft, query t sees keys s <= t (PyTorch's is_causal); BottomRight, query t sees keys
/// s <= t + S - T (FlashAttention's, which decoding against a KV cache needs).
enum class CausalMask : std::uint8_t { None, TopLeft, BottomRight };
std::string_view causal_mask_name(CausalMask m);
/// How a gather treats an index outside [-extent, extent) (docs/semantics.md, "Gathers"): Checked raises a
/// loom::Error, Clamp moves it to the nearest end. The value of Gather's ints[1].
enum class IndexMode : std::uint8_t { Checked, Clamp };
/// The DSL function that built a gather or a scatter, named in its errors. The value of Gather's and
/// Scatter's ints[2].
enum class GatherApi : std::uint8_t {
    Take,
    TakeAlongAxis,
    IndexSelect,
    OneHot,
    CrossEntropy,
    Scatter,
    ScatterAdd,
    IndexAdd
};
std::string_view gather_api_name(GatherApi api);
/// Whether operands of the op's dtype give a result that needs no rounding (column Exactness of ops.def).
inline bool is_exact(Op op) {
    return info(op).exactness == Exactness::Exact;
}

/// Number of ops in the table.
int num_ops();

}  // namespace loom::ir
