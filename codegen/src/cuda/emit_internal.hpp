// Internal helpers of the CUDA emitter: the expression of one elementwise node.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/cuda/matmul_plan.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen::detail {

/// The one writer of generated text: appends `code` indented by `indent` spaces and, when given, `comment`
/// as a `// ` comment aligned at column `column` (60 in pointwise kernels, 72 in the wider reduction
/// kernels).
void write_line(std::string& s, int indent, std::string_view code, std::string_view comment = {},
                int column = 60);

/// The first statements of every kernel Loom emits, written right after its signature (comments aligned at
/// `column`). Loom launches its kernels with programmatic dependent launch (runtime/src/module.cpp), so a
/// kernel's blocks may be resident before the stream's previous kernel has finished: the kernel first calls
/// lm::await_prior_grids(), and nothing touches global memory before it returns. Then, when
/// `release_dependents`, lm::launch_dependent_grids() lets the next kernel's blocks be scheduled as this
/// grid's retire; a one-wave grid sized to the machine (a split reduction) passes false.
void write_kernel_prologue(std::string& s, bool release_dependents, int column);

/// The value stored for a register `r` of compute type into an output of dtype `t`: float16 and bfloat16 are
/// converted to their storage (`lm::to_f16(r)`, `lm::to_bf16(r)`), every other dtype is stored as it is.
std::string store_expr(DType t, const std::string& r);

/// The banner that opens every kernel: `// ---- Loom <kind> kernel <name> (from "<user name>") ----` (the
/// user's name with control characters shown as spaces), then `plan_text` line by line as comments.
std::string banner(std::string_view kind, std::string_view name, std::string_view user_name,
                   std::string_view plan_text);

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
    std::string idx;  // "int" or "long long"
};
PointwisePart pointwise_part(std::string_view name, const std::vector<ir::NodePtr>& outputs,
                             const PointwisePlan& plan);

/// A pointwise graph as the epilogue of a matmul kernel: its parameter struct `<name>_params`, its body, and
/// `<name>_element(const <name>_params& p, const <idx> e, const <type> acc)`, which computes and stores the
/// outputs of element `e` (row-major over the outputs' shape) with load site `acc_site` taken from `acc`;
/// `__noinline__` when the graph has a transcendental or a division (one copy instead of one per
/// accumulator).
struct EpiloguePart {
    std::string params_struct;
    std::string body;
    std::string element;
    std::string idx;
};
/// A costly element function (a transcendental, a division) is `__noinline__` unless `one_call_site` (the
/// caller calls it from one loop, not once per unrolled register of a tile), so that NVRTC compiles it once.
/// `vector` (the plan has a vector variant of width W) adds `<name>_element<W>(p, i, lm::vec<type, W> acc)`:
/// elements i .. i + W - 1 of one row, with 16-byte loads and stores, each through the same body.
/// `acc_what` (empty: a product's accumulators) says in a comment what `acc` holds.
EpiloguePart epilogue_part(std::string_view name, const std::vector<ir::NodePtr>& outputs,
                           const PointwisePlan& plan, int acc_site, bool one_call_site = false,
                           bool vector = false, std::string_view acc_what = {});
/// A matmul or scan operand computed as it loads (a prologue): the pieces of the pointwise graph of
/// `operand`, whose `<name>_element(const <name>_params& p, const <idx> e)` returns element `e` (row-major
/// over the operand's shape) in its register type; the plan's output pointer is unused. `vector` (the plan
/// has a vector variant of width W, and no gathers) adds `<name>_vector(p, i, r)`: elements i .. i + W - 1 of
/// one row into `r[W]`, i a multiple of W.
EpiloguePart prologue_part(std::string_view name, const ir::NodePtr& operand, const PointwisePlan& plan,
                           bool vector = false);

/// A value computed from another kernel's value (a scan's row reduction's operand from the scan's element):
/// the pieces of the pointwise graph of `operand`, whose `<name>_element(const <name>_params& p,
/// const <idx> e, const <type> acc)` returns element `e`'s value in its register type, with load site
/// `acc_site` taken from `acc`; the plan's output pointer is unused.
EpiloguePart operand_part(std::string_view name, const ir::NodePtr& operand, const PointwisePlan& plan,
                          int acc_site);

/// The CUDA type of a parameter field: `int` / `long long` (ParamType::Index per `index`), `const lm::bf16*`,
/// `void*`, `float`, `<struct_prefix>_el_params` (a nested struct), ...
std::string param_ctype(const ParamField& f, IndexWidth index, std::string_view struct_prefix = {});

/// The declaration of a parameter field, `long long n_out;` or `alignas(64) unsigned char map[128];`.
std::string param_declaration(const ParamField& f, IndexWidth index, std::string_view struct_prefix = {});

/// Hopper (a wgmma plan, matmul_plan.hpp): `<name>_mma`, one warpgroup MMA of the plan's tile width and
/// operand majorness with its accumulators as asm operands.
std::string wgmma_mma_function(const MatmulPlan& p, const std::string& name);
/// Hopper: the tile order `<name>_tile` and the kernel `<name>` (producer and consumer warpgroups, the
/// epilogue calling `<name>_ep_element` with `value_of(accumulator)`, the product's value in its dtype).
std::string wgmma_kernel(const PlannedMatmul& pm, const std::string& name, const std::string& ep_idx,
                         const std::function<std::string(const std::string&)>& value_of);

}  // namespace loom::codegen::detail
