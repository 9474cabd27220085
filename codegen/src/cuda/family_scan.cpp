// The GPU family object of scan kernels (GpuFamily<PlannedScan>, kernel_family.hpp): emits the kernel,
// explains it, says what a launch needs (the tree path's counters and nodes) and binds one call (the
// parameter struct, the grid).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "loom/codegen/cuda/kernel_family.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/scan_core.hpp"

namespace loom::codegen {

#include "scan_params.inc"

static_assert(sizeof(ScanParams) == 7 * 8 + 3 * 6 * 8 + 7 * 8 + 4 * 4,
              "scan_params.inc: the host's and the device's layouts must agree");

std::size_t scan_param_bytes() {
    return sizeof(ScanParams);
}

ScanParamLayout scan_param_layout(const ScanPlan& p) {
    auto up = [](std::size_t n, std::size_t a) { return (n + a - 1) / a * a; };
    ScanParamLayout l;
    l.size = sizeof(ScanParams);
    l.align = alignof(ScanParams);
    if (p.prologue) {
        const std::size_t a = std::max<std::size_t>(p.prologue_plan.params.align, 1);
        l.prologue_offset = up(l.size, a);
        l.size = l.prologue_offset + p.prologue_plan.params.size;
        l.align = std::max(l.align, a);
    }
    if (p.epilogue) {
        const std::size_t a = std::max<std::size_t>(p.epilogue_plan.params.align, 1);
        l.epilogue_offset = up(l.size, a);
        l.size = l.epilogue_offset + p.epilogue_plan.params.size;
        l.align = std::max(l.align, a);
    }
    if (p.row_reduction) {
        const std::size_t a = std::max<std::size_t>(p.operand_plan.params.align, 1);
        l.operand_offset = up(l.size, a);
        l.size = l.operand_offset + p.operand_plan.params.size;
        l.align = std::max(l.align, a);
        const std::size_t b = std::max<std::size_t>(p.row_plan.params.align, 1);
        l.row_offset = up(l.size, b);
        l.size = l.row_offset + p.row_plan.params.size;
        l.align = std::max(l.align, b);
    }
    l.size = up(l.size, l.align);
    return l;
}

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

// The elementwise operations of a prologue or epilogue graph, each with where it was written; `none` when
// there are none.
std::string fused_nodes(const std::vector<ir::NodePtr>& outputs, const char* none) {
    std::string s;
    for (const ir::Node* n : ir::topo_order(outputs))
        if (ir::is_elementwise(n->op())) s += fmt::format(" {}", where_of(*n));
    return s.empty() ? std::string(none) : s;
}

// The bits of the exclusive scan's identity (ir::scan_identity) in the accumulator's type
// (ScanParams::identity).
long long identity_bits(const ScanPlan& p) {
    const ir::ScalarValue v = ir::scan_identity(p.op, p.out);
    if (!v.is_float) return v.i;
    if (p.acc == DType::Float64) return std::bit_cast<long long>(v.f);
    return static_cast<long long>(std::bit_cast<std::uint32_t>(static_cast<float>(v.f)));
}

// Whether every row's 8-element pieces are whole aligned pieces: step 1, the pointer and every other axis's
// stride a multiple of 16 bytes.
bool pieces(const void* base, std::int64_t step, const std::vector<std::int64_t>& outer_strides, DType t) {
    const auto size = static_cast<std::int64_t>(itemsize(t));
    if (step != 1 || reinterpret_cast<std::uintptr_t>(base) % 16 != 0) return false;
    for (std::int64_t s : outer_strides)
        if ((s * size) % 16 != 0) return false;
    return true;
}

// Whether a fused prologue or epilogue of vector width `w` (ScanPlan::prologue_vector_width,
// epilogue_vector_width; 0: none) takes each thread's 8 elements in its vectors (ScanParams::vector_in,
// vector_out): step 1 and every row starting on a multiple of w, so that a thread's vectors (from multiples
// of 8 of its row) start on multiples of w of the scan's row-major elements; and the pointwise vector
// variant's conditions on the part's pointers and index sites (select_variant).
int fused_vectors(std::int64_t w, std::int64_t step, const std::vector<std::int64_t>& outer_strides,
                  const PointwisePlan& plan, const PointwiseBinding& binding,
                  std::span<const void* const> inputs, std::span<void* const> outputs) {
    if (w == 0 || step != 1) return 0;
    for (std::int64_t stride : outer_strides)
        if (stride % w != 0) return 0;
    return select_variant(plan, binding, inputs, outputs) == Variant::Vector ? 1 : 0;
}

}  // namespace

KernelSource GpuFamily<PlannedScan>::emit(const FusedKernel& k, const PlannedScan& s) {
    return emit_scan(k.name, s);
}

std::string GpuFamily<PlannedScan>::plan_text(const PlannedScan& s) {
    return s.plan.to_string();
}

std::string GpuFamily<PlannedScan>::explain(const FusionPlan& plan, std::size_t i, const PlannedScan& s) {
    const FusedKernel& k = plan.partition.kernels[i];
    const ir::Node& n = *s.node;
    std::vector<std::string> writes;
    for (const Slot& w : k.writes) writes.push_back(to_string(w));
    std::string all_writes;
    for (const std::string& w : writes) all_writes += (all_writes.empty() ? "" : ", ") + w;
    const std::string path =
        s.plan.path == ScanPath::Warp
            ? fmt::format("one warp per row, 8 rows per block ({} rows of {})", s.rows(), s.length)
        : s.plan.path == ScanPath::Tile
            ? fmt::format("{} warps per row, {} rows per block ({} rows of {})", s.plan.row_warps,
                          8 / s.plan.row_warps, s.rows(), s.length)
            : fmt::format(
                  "{} rows of {} tiles in chunks of {}, a block per chunk in launch order: its tiles "
                  "loaded into registers at once, their aggregates, the nodes before it from earlier "
                  "chunks, then their scans",
                  s.rows(), s.tiles(), std::int64_t{1} << s.chunk_shift);
    std::string reads;
    for (std::size_t j = 0; j < s.inputs.size(); ++j) {
        const ir::Node& in = *s.inputs[j];
        if (&in == s.accumulators.get() || &in == s.reduced.get()) continue;
        reads +=
            fmt::format("{}{} {} [{}]", reads.empty() ? "" : ", ", in.label().empty() ? "input" : in.label(),
                        ir::describe(in), to_string(plan.kernels[i].reads.at(j)));
    }
    return fmt::format(
        "kernel {}  {}   {} {} -> {} ({}): {}\n"
        "          {}; 256 threads of 8 elements\n"
        "          prologue:{}\n"
        "          epilogue:{}\n"
        "          reads {}; writes {}; 1 launch\n",
        i, k.name, ir::op_name(n.op()), ir::describe(*n.operand(0)), ir::describe(n), ir::scan_attributes(n),
        where_of(n), path, fused_nodes({n.operand_ptr(0)}, " none (the operand read from memory)"),
        s.plan.row_reduction
            ? fmt::format(
                  " the {} of each row of{} as the kernel finishes it (the reductions' row order; the "
                  "scan's elements never stored), then{}",
                  ir::op_name(s.plan.reduce_op), fused_nodes(s.reduction_operand, " the scan's elements"),
                  fused_nodes(s.row_outputs, " a store"))
            : fused_nodes(s.epilogue_outputs, " none (the scan stored as it is)"),
        reads.empty() ? "nothing" : reads, all_writes);
}

LaunchNeeds GpuFamily<PlannedScan>::needs(const PlannedScan& s, KernelPointers) {
    LaunchNeeds n;
    n.param_bytes = scan_param_layout(s.plan).size;
    if (s.plan.path == ScanPath::Tree && s.rows() > 0) {
        n.counters = 2 + s.rows() * s.counter_words();  // the tickets, the blocks done, the hierarchy's
        n.workspaces.push_back(static_cast<std::size_t>(s.rows() * ir::scanc::row_nodes(s.tiles())) *
                               itemsize(s.plan.acc));  // the nodes
    }
    return n;
}

BoundLaunch GpuFamily<PlannedScan>::bind(const PlannedScan& s, KernelPointers p, const LaunchScratch& scratch,
                                         std::span<std::byte> params) {
    const ScanPlan& plan = s.plan;
    const ScanParamLayout layout = scan_param_layout(plan);
    if (params.size() < layout.size)
        throw InternalError(
            fmt::format("scan kernel: {} parameter bytes for {}", params.size(), layout.size));
    std::memset(params.data(), 0, layout.size);
    if (p.inputs.size() != s.inputs.size())
        throw InternalError(
            fmt::format("scan kernel: {} input pointers for {}", p.inputs.size(), s.inputs.size()));
    const std::span<const void* const> operand_inputs = p.inputs.subspan(0, s.operand_inputs);
    if (plan.prologue) {
        static void* const no_output[1] = {nullptr};
        pack_params(plan.prologue_plan, s.prologue_binding, operand_inputs, no_output,
                    params.subspan(layout.prologue_offset, plan.prologue_plan.params.size));
    }
    if (plan.epilogue)
        pack_params(plan.epilogue_plan, s.epilogue_binding, p.inputs.subspan(s.operand_inputs), p.outputs,
                    params.subspan(layout.epilogue_offset, plan.epilogue_plan.params.size));
    if (plan.row_reduction) {
        static void* const no_output[1] = {nullptr};
        pack_params(plan.operand_plan, s.operand_binding,
                    p.inputs.subspan(s.operand_inputs, s.reduction_operand_inputs), no_output,
                    params.subspan(layout.operand_offset, plan.operand_plan.params.size));
        pack_params(plan.row_plan, s.row_binding,
                    p.inputs.subspan(s.operand_inputs + s.reduction_operand_inputs), p.outputs,
                    params.subspan(layout.row_offset, plan.row_plan.params.size));
    }
    ScanParams sp{};
    if (!plan.prologue)
        sp.in = static_cast<const char*>(p.inputs[0]) +
                s.in_offset * static_cast<std::int64_t>(itemsize(plan.in));
    const bool fused_out = plan.epilogue || plan.row_reduction;
    if (!fused_out && p.outputs.size() > 4)
        throw Error(fmt::format("{}(): a scan kernel writes at most 4 outputs, not {} ({})",
                                ir::op_name(s.node->op()), p.outputs.size(), short_location(s.node->loc())));
    sp.outputs = fused_out ? 0 : static_cast<int>(p.outputs.size());
    for (std::size_t o = 0; o < static_cast<std::size_t>(sp.outputs); ++o) sp.out[o] = p.outputs[o];
    const std::size_t axes = s.outer.size(), pad = 6 - axes;
    for (std::size_t a = 0; a < 6; ++a) {
        sp.outer[a] = a < pad ? 1 : s.outer[a - pad];
        sp.in_outer[a] = a < pad ? 0 : s.in_outer[a - pad];
        sp.out_outer[a] = a < pad ? 0 : s.out_outer[a - pad];
    }
    sp.rows = s.rows();
    sp.length = s.length;
    sp.in_step = s.in_step;
    sp.out_step = s.out_step;
    sp.tiles = s.tiles();
    sp.row_nodes = ir::scanc::row_nodes(sp.tiles);
    sp.identity = identity_bits(plan);
    sp.vector_in = plan.prologue ? fused_vectors(plan.prologue_vector_width(), s.in_step, s.in_outer,
                                                 plan.prologue_plan, s.prologue_binding, operand_inputs, {})
                   : pieces(sp.in, s.in_step, s.in_outer, plan.in) ? 1
                                                                   : 0;
    bool out_pieces = !plan.exclusive && !fused_out;
    for (std::size_t o = 0; o < static_cast<std::size_t>(sp.outputs); ++o)
        out_pieces = out_pieces && pieces(sp.out[o], s.out_step, s.out_outer, plan.out);
    sp.vector_out = plan.epilogue ? fused_vectors(plan.epilogue_vector_width(), s.out_step, s.out_outer,
                                                  plan.epilogue_plan, s.epilogue_binding,
                                                  p.inputs.subspan(s.operand_inputs), p.outputs)
                    : out_pieces  ? 1
                                  : 0;
    if (plan.path == ScanPath::Tree && s.rows() > 0) {
        sp.counters = static_cast<unsigned int*>(scratch.counters);
        if (scratch.workspaces.size() != 1)
            throw InternalError(fmt::format("scan kernel: {} workspaces for 1", scratch.workspaces.size()));
        sp.nodes = scratch.workspaces[0];
        sp.chunk_shift = s.chunk_shift;
    }
    std::memcpy(params.data(), &sp, sizeof sp);
    BoundLaunch b;
    const std::int64_t rows_per_block = plan.path == ScanPath::Warp ? 8 : 8 / plan.row_warps;
    const std::int64_t blocks = s.length == 0 ? 0
                                : plan.path == ScanPath::Tree
                                    ? s.rows() * s.chunks()
                                    : (s.rows() + rows_per_block - 1) / rows_per_block;
    if (blocks == 0) return b;
    if (blocks > 0x7fffffffll)
        throw Error(fmt::format("{}(): {} blocks exceed a launch's {} ({})", ir::op_name(s.node->op()),
                                blocks, 0x7fffffff, short_location(s.node->loc())));
    b.config.grid_x = static_cast<std::uint32_t>(blocks);
    b.config.block_x = static_cast<std::uint32_t>(plan.threads);
    return b;
}

}  // namespace loom::codegen
