// The family object of matrix-product kernels on the GPU (kernel_family.hpp): the chunk tree's workspace and
// a split K's counters, the grid, the operands' loads (16-byte pieces or elements) chosen from the pointers,
// and on Hopper the two tensor maps the runtime encodes into the parameters.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"

namespace loom::codegen {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

// What an mma.sync product gives: int8 exact, float32 within its TF32 or 3xTF32 bound, the half dtypes within
// the bound of float32 accumulation (and, unasked, why they are on tensor cores).
std::string mma_bound_text(const MatmulPlan& p) {
    if (p.in == DType::Int8) return ", exact";
    if (p.precision() == ProductPrecision::TF32)
        return " TF32 into float32, product_precision=tf32: within the TF32 bound of semantics.md section 12";
    if (p.precision() == ProductPrecision::TF32x3)
        return " TF32 into float32, product_precision=3xtf32: within the 3xTF32 bound of semantics.md "
               "section 12";
    return fmt::format(", within the bound of semantics.md section 12{}",
                       p.requested == ProductPath::Auto
                           ? fmt::format("; {} runs on tensor cores by default", name(p.in))
                           : std::string());
}

// The path, closing the threads' parenthesis: how the block's threads share the tile (warpgroups, MMA tiles
// per warp or accumulators per thread), the shared memory, and the units that multiply with what they give;
// why not wgmma where it did not apply.
std::string path_text(const PlannedMatmul& pm) {
    const MatmulPlan& p = pm.plan;
    if (p.wgmma)
        return fmt::format(
            "{} and a producer warpgroup), {} bytes of shared memory, tensor cores (Hopper wgmma.mma_async "
            "m64n{}k{}{}; a persistent grid of {} blocks)",
            p.pingpong
                ? std::string("2 consumer warpgroups taking whole tiles in turn")
                : fmt::format("{} consumer warpgroup{} of 64 rows", p.consumers, p.consumers > 1 ? "s" : ""),
            p.shared_bytes(), p.wgmma_n(), p.wgmma_k(),
            p.in == DType::Float32
                ? fmt::format("{}{}", mma_bound_text(p),
                              p.wgmma_a_registers()
                                  ? fmt::format(", {}'s tile through registers", p.wgmma_swap() ? "B" : "A")
                                  : std::string())
                : mma_bound_text(p),
            pm.binding.persistent_blocks);
    if (p.tensor_cores)
        return fmt::format(
            "{}x{} MMA tiles of 16x8 per warp), {} bytes of shared memory, "
            "tensor cores (mma.sync m16n8k{}{}{})",
            p.frags_m(), p.frags_n(), p.shared_bytes(), p.mma_k(), mma_bound_text(p),
            p.wgmma_note.empty() ? std::string() : "; not wgmma: " + p.wgmma_note);
    return fmt::format("{}x{} accumulators per thread), {} bytes of shared memory, CUDA cores{}", p.thread_m,
                       p.thread_n, p.shared_bytes(), p.path_note());
}

// Why operand `which` (0: A, 1: B) of a CUDA-core or mma.sync plan loads element by element: computed by a
// prologue, its unit stride along the other matrix axis (a transposed view: the loads walk that axis so a
// warp's stay coalesced), no unit stride, or a pointer or row length off 16 bytes.
std::string element_loads_why(const PlannedMatmul& pm, int which) {
    const MatmulPlan& p = pm.plan;
    const Strides& s = which == 0 ? pm.binding.a_strides : pm.binding.b_strides;
    const std::size_t r = s.size();
    if (which == 0 ? p.a_prologue : p.b_prologue) return "computed by a prologue";
    if (which == 0 ? p.a_m_fastest : p.b_k_fastest)
        return which == 0 ? "its unit stride runs along m (a transposed view)"
                          : "its unit stride runs along k (a transposed view)";
    if (r == 0 || s[r - 1] != 1) return "no axis of unit stride";
    if (which == 1 && p.tile_n % p.piece() != 0) return "the tile's columns are not whole 16-byte pieces";
    return "not 16-byte aligned, or a device without cp.async";
}

// How the operands reach shared memory: bulk tensor copies into the wgmma ring, else 16-byte cp.async pieces
// for the operands whose layouts allow them (the pointers decide at launch) and element loads for the others,
// with the reason.
std::string loads_text(const PlannedMatmul& pm) {
    const MatmulPlan& p = pm.plan;
    const bool vector_b = p.vector_b || p.vector_b_column;
    if (p.wgmma)
        return fmt::format("bulk tensor copies of A ({}) and B ({}) into a ring, 128-byte swizzled",
                           p.a_mn_major ? "M-major" : "K-major", p.b_mn_major ? "N-major" : "K-major");
    if (p.vector_a && vector_b) return "cp.async 16-byte pieces where the pointers allow, element loads else";
    if (p.vector_a)
        return fmt::format("A in cp.async 16-byte pieces where the pointers allow, B by element loads ({})",
                           element_loads_why(pm, 1));
    if (vector_b)
        return fmt::format("A by element loads ({}), B in cp.async 16-byte pieces where the pointers allow",
                           element_loads_why(pm, 0));
    return fmt::format("element loads (A: {}; B: {})", element_loads_why(pm, 0), element_loads_why(pm, 1));
}

// K and how it is walked: in one pass on tensor cores, else in chunks, shared among blocks (split K) or
// combined through a workspace, or in one step per batch entry for a batch_pipelined kernel.
std::string k_text(const PlannedMatmul& pm) {
    const MatmulPlan& p = pm.plan;
    const MatmulBinding& b = pm.binding;
    std::string how;
    if (p.split_k)
        how = fmt::format(
            " (shared among {} blocks per tile along the grid's z, {} chunk(s) each: split K; the pairwise "
            "tree through a workspace)",
            b.k_groups, b.group_chunks);
    else if (p.chunked)
        how = " (pairwise tree through a workspace)";
    else if (p.batch_pipelined)
        how = fmt::format(
            ", one step; each block walking batch entries, the next one's tiles copying, {} blocks per "
            "multiprocessor",
            p.blocks_per_sm);
    return fmt::format("K {} in {}{}", b.K,
                       p.tensor_cores ? std::string("one pass") : fmt::format("{} chunk(s)", b.chunks), how);
}

// The epilogue's elementwise operations, each with where it was written; none when the product is stored as
// it is.
std::string epilogue_text(const FusedKernel& k) {
    std::string epilogue;
    for (const ir::Node* n : ir::topo_order(k.outputs))
        if (ir::is_elementwise(n->op())) epilogue += fmt::format(" {}", where_of(*n));
    return epilogue.empty() ? std::string(" none (the product stored as it is)") : epilogue;
}

// The kernel's reads: each input other than the placeholder for the product, and where it is read from.
std::string reads_text(const FusionPlan& plan, std::size_t i, const PlannedMatmul& pm) {
    std::string reads;
    for (std::size_t j = 0; j < pm.inputs.size(); ++j) {
        if (pm.inputs[j] == pm.accumulators.get()) continue;
        reads += fmt::format("{}{} {} [{}]", reads.empty() ? "" : ", ",
                             pm.inputs[j]->label().empty() ? "input" : pm.inputs[j]->label(),
                             ir::describe(*pm.inputs[j]), to_string(plan.kernels[i].reads[j]));
    }
    return reads;
}

}  // namespace

KernelSource GpuFamily<PlannedMatmul>::emit(const FusedKernel& k, const PlannedMatmul& s) {
    return emit_matmul(k.name, s);
}

std::string GpuFamily<PlannedMatmul>::plan_text(const PlannedMatmul& s) {
    return s.plan.to_string() + "\nepilogue: " + s.plan.epilogue.describe(false);
}

std::string GpuFamily<PlannedMatmul>::explain(const FusionPlan& plan, std::size_t i,
                                              const PlannedMatmul& pm) {
    const FusedKernel& k = plan.partition.kernels[i];
    const MatmulPlan& p = pm.plan;
    const ir::Node& m = *pm.product;
    std::vector<std::string> writes;
    for (const Slot& w : k.writes) writes.push_back(to_string(w));
    return fmt::format(
        "kernel {}  {}   matmul {} x {} -> {}: {}\n"
        "          tile {}x{}x{}{}, {} stages, {} threads (warps {}x{}, {}; {}; {}\n"
        "          epilogue:{}\n"
        "          reads {}; writes {}; 1 launch\n",
        i, k.name, ir::describe(*m.operand(0)), ir::describe(*m.operand(1)), ir::describe(m), where_of(m),
        p.tile_m, p.tile_n, p.tile_k, p.hinted ? " (hinted)" : "", p.stages, p.threads(), p.warps_m,
        p.warps_n, path_text(pm), loads_text(pm), k_text(pm), epilogue_text(k), reads_text(plan, i, pm),
        fmt::join(writes, ", "));
}

LaunchNeeds GpuFamily<PlannedMatmul>::needs(const PlannedMatmul& s, KernelPointers) {
    LaunchNeeds n;
    n.param_bytes = s.plan.params.size;
    if (!s.plan.chunked || s.product->numel() == 0) return n;
    n.workspaces.push_back(matmul_workspace_bytes(s));  // written before it is read: no zeroing
    n.counters = matmul_counter_count(s);               // split K
    return n;
}

BoundLaunch GpuFamily<PlannedMatmul>::bind(const PlannedMatmul& s, KernelPointers p,
                                           const LaunchScratch& scratch, std::span<std::byte> params) {
    BoundLaunch b;
    b.config = matmul_launch(s);
    if (b.config.grid_x == 0) return b;
    if (s.plan.chunked && scratch.workspaces.size() != 1)
        throw InternalError("matmul kernel: a chunked product without its workspace");
    if (s.plan.split_k && !scratch.counters)
        throw InternalError("matmul kernel: a split K without its counters");
    b.shared_bytes = s.plan.shared_bytes();
    if (s.plan.wgmma) {  // Hopper: the operands' tensor maps, which the runtime encodes in place
        b.maps = matmul_tensor_maps(s, p.inputs);
        b.map_offsets = matmul_tensor_map_offsets(s);
        b.map_count = 2;
    }
    pack_matmul_params(s, p.inputs, p.outputs, s.plan.chunked ? scratch.workspaces[0] : nullptr,
                       s.plan.split_k ? scratch.counters : nullptr,
                       select_matmul_loads(s, p.inputs, p.outputs), params);
    return b;
}

}  // namespace loom::codegen
