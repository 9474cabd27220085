// The LLVM emitters of the host back end: a kernel's plan and host schedule (host_plan.hpp) -> one LLVM IR
// module as text, deterministic and meant for review (a banner with the plan, named values, a `; ` comment
// with the op and the user's file:line on every instruction that computes a node). No LLVM library is
// needed to emit: the loom_llvm module (llvm/src/jit.cpp) parses, optimizes and compiles the text.
//
// Every entry point has the signature `void @<entry>(ptr %p, i64 %begin, i64 %end)`: `p` is the kernel's
// packed parameter struct (pack_params / pack_reduce_params, the layout every back end shares) and
// [begin, end) the work of one task: elements of a pointwise kernel's iteration space; rows (inner
// schedule) or output columns (outer schedule) of a reduction; (row, chunk) pairs of a split reduction's
// partial pass, then rows of its finishing pass.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/llvm/host_plan.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen {

struct LlvmKernelSource {
    std::string name;       // kernel base name (kernel_name of the user's name)
    std::string user_name;  // the user's name as given
    std::string ir;         // the module's text
    /// Pointwise: `<name>`; reductions: `<name>_rows` (a task of whole rows or output columns), or, when the
    /// schedule is split, `<name>_partials` (chunk partials of (row, chunk) pairs into the workspaces) and
    /// `<name>_finish` (the pairwise tree over each row's chunk partials, the finish and the row outputs).
    std::string entry;
    std::string partials_entry;
    std::string finish_entry;
};

/// The host kernel of a pointwise plan (from plan_pointwise on `outputs`, or a graph of the same structure).
LlvmKernelSource emit_pointwise_llvm(std::string_view user_name, const std::vector<ir::NodePtr>& outputs,
                                     const PointwisePlan& plan, const HostSchedule& schedule,
                                     const HostTarget& target);

/// The host kernel of a reduction group (plan_reduce with HostTarget::plan_target()).
LlvmKernelSource emit_reduce_llvm(std::string_view user_name, const PlannedReduce& pr,
                                  const HostSchedule& schedule, const HostTarget& target);

/// The host kernel of a matrix product and its epilogue (plan_host_product): `<name>_pack`, the packing
/// pass over panels, and `<name>`, the blocks of outputs (host_plan.hpp, HostProduct).
LlvmKernelSource emit_product_llvm(std::string_view user_name, const HostProduct& p,
                                   const HostTarget& target);

/// The IR text that enters a disk cache key: `text` without its `; ` comments (outside quoted strings)
/// and without the spaces then left at the ends of lines, so that two call sites of one graph (whose
/// comments name different file:line) share an entry.
std::string strip_llvm_comments(std::string_view text);

}  // namespace loom::codegen
