// The CUDA emitter of pointwise kernels: plan + graph -> deterministic, readable CUDA C++ for NVRTC.
//
// The kernel text has a banner with the plan, a `Params` struct (passed by value as one
// `__grid_constant__` parameter), a `__device__` body with one statement per IR node in topological order
// (dense names v0, v1, ...; a comment with the op and the user's file:line), an element function used by
// the scalar variant and by the vector variant's tail, and the entry points: `<name>_v<W>` (16-byte
// vectors, W elements per thread; only when the plan has a vector width above 1) and `<name>_s` (one
// element per thread). Both are `extern "C"`, so profilers show the names unmangled.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/cuda/device_info.hpp"
#include "loom/codegen/cuda/matmul_plan.hpp"
#include "loom/codegen/cuda/tile_plan.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen {

struct KernelSource {
    std::string name;             // kernel base name (kernel_name of the user's name)
    std::string user_name;        // the user's name as given
    std::string vector_entry;     // "<name>_v4"; empty when the plan has no vector variant
    std::string scalar_entry;     // "<name>_s"
    std::string kernel;           // the generated code alone (what golden tests compare)
    std::string source;           // the complete translation unit: prelude + kernel
    std::size_t param_bytes = 0;  // the entry points' one parameter (the plan's struct, or a pointer to it)
    /// The kernel uses the device's arch-specific features (Hopper's wgmma and setmaxnreg): compiled for
    /// sm_XYa rather than sm_XY.
    bool arch_specific = false;
    PointwisePlan plan;
    /// Entry point of a variant.
    const std::string& entry(Variant v) const { return v == Variant::Vector ? vector_entry : scalar_entry; }
};

/// Emits the kernel of `plan` (from plan_pointwise on the same `outputs`, or on a graph of the same
/// structural_key). Deterministic: the same graph structure and plan give the same text.
KernelSource emit_pointwise(std::string_view user_name, const std::vector<ir::NodePtr>& outputs,
                            const PointwisePlan& plan);

/// Emits the tiled kernel of `plan` and `tile` (plan_tile of the same graph): the pointwise kernel's
/// parameter struct and body, and the entry points `<name>_tile` (KernelSource::scalar_entry) and, when the
/// tile has a vector width, `<name>_tile_v4` (vector_entry), launched with TilePlan::launch; which one runs
/// is TilePlan::select_variant's choice.
KernelSource emit_tile(std::string_view user_name, const std::vector<ir::NodePtr>& outputs,
                       const PointwisePlan& plan, const TilePlan& tile);

/// CUDA source of the reduction kernel: `vector_entry` (`<name>_v`, 4-element runs; empty when the plan has
/// no vector variant) and `scalar_entry` (`<name>_s`, general). `plan` is left default (the reduction plan
/// is in the banner).
KernelSource emit_reduce(std::string_view user_name, const PlannedReduce& pr);

/// Emits the matmul kernel of `pm` (plan_matmul): the epilogue's pointwise struct, body and element function,
/// the kernel's parameter struct, the tile loaders, the tile loop and the entry points `<name>_v` (cp.async
/// pieces; KernelSource::vector_entry, only when the plan has the vector variant) and `<name>_s` (element
/// loads), launched with matmul_launch and PlannedMatmul::plan.shared_bytes() of dynamic shared memory.
KernelSource emit_matmul(std::string_view user_name, const PlannedMatmul& pm);

/// plan_pointwise + emit_pointwise. `binding` (optional) receives the numbers of this call.
KernelSource generate_pointwise(std::string_view user_name, const std::vector<ir::NodePtr>& outputs,
                                const std::vector<InputLayout>& layouts, const DeviceInfo& device,
                                PointwiseBinding* binding = nullptr);

/// Exact CUDA spelling of a value of dtype `t` (no headers needed): hex float literals for finite floats
/// ("0x1.8p+0f"), `__int_as_float(0x7f800000)` / `__longlong_as_double(...)` for Inf and NaN, "-0x0p+0f"
/// for -0.0, integer literals that are valid for the type's minimum (e.g. "(-2147483647 - 1)"), with a
/// decimal comment for floats ("0x1.8p+0f /* 1.5 */").
std::string cuda_literal(const ir::ScalarValue& v, DType t);

/// CUDA register type of a dtype: "bool", "signed char", "unsigned char", "int", "long long", "float"
/// (float16, bfloat16, float32), "double".
std::string_view register_type(DType t);
/// CUDA storage type of a dtype: the register type, except "lm::f16" and "lm::bf16".
std::string_view storage_type(DType t);

}  // namespace loom::codegen
