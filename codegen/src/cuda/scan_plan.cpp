// plan_scan: the GPU plan of one scan node (scan_plan.hpp).
#include "loom/codegen/cuda/scan_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/hash.hpp"
#include "loom/ir/scan_core.hpp"
#include "loom/ir/view.hpp"

namespace loom::codegen {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

// Merges adjacent axes of `extent` whose strides in both `a` and `b` lay them out one after the other, and
// drops axes of extent 1: the row index then walks fewer axes.
void merge_axes(std::vector<std::int64_t>& extent, std::vector<std::int64_t>& a,
                std::vector<std::int64_t>& b) {
    std::vector<std::int64_t> e2, a2, b2;
    for (std::size_t d = 0; d < extent.size(); ++d) {
        if (extent[d] == 1) continue;
        if (!e2.empty() && a2.back() == a[d] * extent[d] && b2.back() == b[d] * extent[d]) {
            e2.back() *= extent[d];
            a2.back() = a[d];
            b2.back() = b[d];
            continue;
        }
        e2.push_back(extent[d]);
        a2.push_back(a[d]);
        b2.push_back(b[d]);
    }
    extent = std::move(e2);
    a = std::move(a2);
    b = std::move(b2);
}

}  // namespace

const char* scan_path_name(ScanPath p) {
    switch (p) {
        case ScanPath::Warp:
            return "warp";
        case ScanPath::Tile:
            return "tile";
        case ScanPath::Tree:
            return "tree";
    }
    return "?";
}

DType scan_accumulator(DType out) {
    if (!is_float(out)) return DType::Int64;
    return out == DType::Float64 ? DType::Float64 : DType::Float32;
}

std::int64_t PlannedScan::rows() const {
    std::int64_t r = 1;
    for (std::int64_t e : outer) r *= e;
    return r;
}

std::int64_t PlannedScan::tiles() const {
    return (length + ir::kScanTile - 1) / ir::kScanTile;
}

std::int64_t PlannedScan::chunks() const {
    return ir::scanc::row_chunks(tiles(), chunk_shift);
}

int ScanPlan::chunk_tiles() const {
    return kScanChunkRegisters / (ir::kScanThreadElements * static_cast<int>(itemsize(acc)) / 4);
}

int ScanPlan::prologue_vector_width() const {
    const int w = prologue_plan.vector_width;
    return prologue && w > 1 && prologue_plan.gathers.empty() && ir::kScanThreadElements % w == 0 ? w : 0;
}

int ScanPlan::epilogue_vector_width() const {
    const int w = epilogue_plan.vector_width;
    return epilogue && !exclusive && w > 1 && ir::kScanThreadElements % w == 0 ? w : 0;
}

std::int64_t PlannedScan::counter_words() const {
    return ir::scanc::row_words(chunks());
}

std::uint64_t ScanPlan::hash() const {
    Hasher h;
    h.add(0x7363616e00000001ull);
    h.add(static_cast<std::uint64_t>(op));
    h.add(static_cast<std::uint64_t>(in));
    h.add(static_cast<std::uint64_t>(acc));
    h.add(static_cast<std::uint64_t>(out));
    h.add(exclusive ? 1u : 0u);
    h.add(static_cast<std::uint64_t>(path));
    h.add(static_cast<std::uint64_t>(threads));
    h.add(static_cast<std::uint64_t>(row_warps));
    h.add(static_cast<std::uint64_t>(prologue) | static_cast<std::uint64_t>(epilogue) << 1);
    if (prologue) h.add(prologue_plan.hash());
    if (row_reduction) {
        h.add(0x726f777265640001ull);
        h.add(static_cast<std::uint64_t>(reduce_op));
        h.add(static_cast<std::uint64_t>(reduce_dtype));
        h.add(operand_plan.hash());
        h.add(static_cast<std::uint64_t>(operand_site));
        h.add(row_plan.hash());
        h.add(static_cast<std::uint64_t>(row_site));
    }
    if (epilogue) {
        h.add(epilogue_plan.hash());
        h.add(static_cast<std::uint64_t>(acc_site));
    }
    return h.digest();
}

namespace {

// A fused kernel's prologue and epilogue lines of the banner; empty for a scan from memory to memory.
std::string fused_text(const ScanPlan& p) {
    auto trimmed = [](std::string t) {
        while (!t.empty() && t.back() == '\n') t.pop_back();
        return t;
    };
    std::string s;
    if (p.prologue)
        s += (p.prologue_vector_width() > 0
                  ? fmt::format("\nprologue: the operand computed as it loads, in vectors of {} consecutive "
                                "elements where every row allows (else element by element)\n",
                                p.prologue_vector_width())
                  : std::string("\nprologue: the operand computed element by element as it loads\n")) +
             trimmed(p.prologue_plan.describe(false));
    if (p.epilogue)
        s += (p.epilogue_vector_width() > 0
                  ? fmt::format(
                        "\nepilogue: the kernel's outputs computed from the scan's elements as they are "
                        "stored, in vectors of {} consecutive elements where every row allows (else "
                        "element by element)\n",
                        p.epilogue_vector_width())
                  : std::string(
                        "\nepilogue: the kernel's outputs computed from the scan's elements as they are "
                        "stored\n")) +
             trimmed(p.epilogue_plan.describe(false));
    if (p.row_reduction)
        s += fmt::format(
                 "\nrow reduction: the {} ({}) of each row, in the reductions' row order (two runs of 4 per "
                 "thread, the butterfly {}), as the kernel finishes the row; the scan's elements never "
                 "stored\nreduction operand (from the scan's elements):\n",
                 ir::op_name(p.reduce_op), name(p.reduce_dtype),
                 p.path == ScanPath::Warp ? "by shuffles"
                                          : "through shared memory across warps, then shuffles") +
             trimmed(p.operand_plan.describe(false)) + "\nrow outputs (from each row's reduced value):\n" +
             trimmed(p.row_plan.describe(false));
    return s;
}

}  // namespace

std::string ScanPlan::to_string() const {
    return fmt::format(
        "{}{} of {} -> {}, accumulated in {}\n"
        "path: {}\n"
        "block: {} threads of {} elements (a tile of {}): thread totals, Kogge-Stone over lanes (shuffles) "
        "and over warps (shared memory), the thread prefixes, the outputs{}",
        ir::op_name(op), exclusive ? " (exclusive)" : "", name(in), name(out), name(acc),
        path == ScanPath::Warp
            ? "one warp per row of at most 256 elements, 8 rows per block (no warp scan, no "
              "carry)"
        : path == ScanPath::Tile
            ? (row_warps == 8
                   ? std::string("one block per row of at most one tile (no carry)")
                   : fmt::format("{} warps per row of at most {} elements, {} rows per block (no carry)",
                                 row_warps, row_warps * 32 * ir::kScanThreadElements, 8 / row_warps))
            : fmt::format("chunks of tiles, a block per chunk in launch order (a counter): its tiles' "
                          "aggregates and the chunk's nodes of the pairwise tree, published (the last of 32 "
                          "chunks to publish builds their node, and so on up), the nodes before it from "
                          "earlier chunks (release / acquire), then their scans with their carries, from "
                          "registers (at most {} tiles a chunk); {} blocks per multiprocessor",
                          chunk_tiles(), kScanChunkBlocksPerSM),
        threads, ir::kScanThreadElements, ir::kScanTile, fused_text(*this));
}

namespace {

// The kernel's one scan node: its output, or below its epilogue's elementwise nodes.
ir::NodePtr scan_node(const FusedKernel& k) {
    ir::NodePtr found;
    for (const ir::NodePtr& o : k.outputs) {
        std::vector<ir::NodePtr> stack{o};
        while (!stack.empty()) {
            ir::NodePtr n = std::move(stack.back());
            stack.pop_back();
            if (ir::is_scan(n->op())) {
                if (found && found != n)
                    throw InternalError(fmt::format("plan_scan(): kernel {} holds two scans", k.name));
                found = std::move(n);
                continue;
            }
            for (const auto& x : n->operands()) stack.push_back(x);
        }
    }
    if (!found) throw InternalError(fmt::format("plan_scan(): kernel {} holds no scan", k.name));
    return found;
}

// Whether the operand `x` is computed (elementwise work below its views), not a view of an input.
bool computed_operand(const ir::Node& x) {
    const ir::Node* b = &x;
    while (ir::is_view(b->op())) b = b->operand(0);
    return b->op() != ir::Op::Input;
}

// The prologue: the operand as a pointwise plan over the scan's shape (element e row-major), its inputs the
// kernel's first.
void plan_prologue(PlannedScan& ps, const LayoutOf& layout_of, const DeviceInfo& device) {
    const ir::NodePtr& x = ps.node->operand_ptr(0);
    ps.inputs = pointwise_inputs({x});
    std::vector<InputLayout> layouts;
    for (const ir::Node* in : ps.inputs) layouts.push_back(layout_of(*in));
    PlannedPointwise pp = plan_pointwise({x}, layouts, device.plan_target());
    if (pp.plan.params_in_memory)
        throw InternalError(fmt::format(
            "plan_scan(): the prologue of {} has more parameters than a launch takes", where_of(*ps.node)));
    ps.plan.prologue = true;
    ps.plan.prologue_plan = std::move(pp.plan);
    ps.prologue_binding = std::move(pp.binding);
}

// The site of `plan` whose input (of `inputs`) is `placeholder`: exactly one.
int placeholder_site(const PointwisePlan& plan, const std::vector<const ir::Node*>& inputs,
                     const ir::Node* placeholder, const ir::Node& scan, const char* what) {
    int site = -1;
    for (std::size_t s = 0; s < plan.loads.size(); ++s) {
        if (inputs[static_cast<std::size_t>(plan.loads[s].input)] != placeholder) continue;
        if (site >= 0)
            throw InternalError(fmt::format("plan_scan(): the {} of {} reads {} at two sites", what,
                                            where_of(scan), placeholder->label()));
        site = static_cast<int>(s);
    }
    if (site < 0)
        throw InternalError(fmt::format("plan_scan(): the {} of {} does not read {}", what, where_of(scan),
                                        placeholder->label()));
    return site;
}

// The epilogue: the kernel's outputs over a placeholder for the scan's value ("accumulators"), a pointwise
// plan over their shape (the scan's, or a reshape of it that keeps the row-major order), every output
// contiguous; its inputs follow the operand's.
void plan_epilogue(PlannedScan& ps, const FusedKernel& k, const LayoutOf& layout_of,
                   const DeviceInfo& device) {
    const ir::Node& n = *ps.node;
    ps.accumulators = ir::input(n.dtype(), n.shape(), "accumulators", {}, n.loc());
    ps.epilogue_outputs =
        ir::rewrite(k.outputs, [&](const ir::Node& x, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
            return &x == &n ? ps.accumulators : nullptr;
        });
    const std::vector<const ir::Node*> ep_inputs = pointwise_inputs(ps.epilogue_outputs);
    std::vector<InputLayout> layouts;
    for (const ir::Node* in : ep_inputs) {
        ps.inputs.push_back(in);
        layouts.push_back(in == ps.accumulators.get()
                              ? InputLayout{n.dtype(), contiguous_strides(n.shape()), true}
                              : layout_of(*in));
    }
    PlannedPointwise ep = plan_pointwise(ps.epilogue_outputs, layouts, device.plan_target());
    if (ep.plan.params_in_memory)
        throw InternalError(fmt::format(
            "plan_scan(): the epilogue of {} has more parameters than a launch takes", where_of(n)));
    const int site = placeholder_site(ep.plan, ep_inputs, ps.accumulators.get(), n, "epilogue");
    ps.plan.epilogue = true;
    ps.plan.epilogue_plan = std::move(ep.plan);
    ps.plan.acc_site = site;
    ps.epilogue_binding = std::move(ep.binding);
}

// The row reduction (partition_products.cpp, row_reduction_refusal): the one sum or mean of the kernel's
// outputs; its operand over a placeholder for the scan's elements, planned over the scan's shape; the outputs
// over a placeholder for the reduced rows, planned over the rows. Their inputs follow the operand's.
void plan_row_reduction(PlannedScan& ps, const FusedKernel& k, const ir::Node& r, const LayoutOf& layout_of,
                        const DeviceInfo& device) {
    const ir::Node& n = *ps.node;
    ps.accumulators = ir::input(n.dtype(), n.shape(), "accumulators", {}, n.loc());
    ps.reduction_operand = ir::rewrite(
        {r.operand_ptr(0)}, [&](const ir::Node& x, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
            return &x == &n ? ps.accumulators : nullptr;
        });
    ps.reduced = ir::input(r.dtype(), r.shape(), "reduced", {}, r.loc());
    ps.row_outputs =
        ir::rewrite(k.outputs, [&](const ir::Node& x, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
            return &x == &r ? ps.reduced : nullptr;
        });
    auto plan_part = [&](const std::vector<ir::NodePtr>& outputs, const ir::NodePtr& placeholder,
                         const char* what, PointwiseBinding& binding, int& site) {
        const std::vector<const ir::Node*> part_inputs = pointwise_inputs(outputs);
        std::vector<InputLayout> layouts;
        for (const ir::Node* in : part_inputs) {
            ps.inputs.push_back(in);
            layouts.push_back(
                in == placeholder.get()
                    ? InputLayout{placeholder->dtype(), contiguous_strides(placeholder->shape()), true}
                    : layout_of(*in));
        }
        PlannedPointwise pp = plan_pointwise(outputs, layouts, device.plan_target());
        if (pp.plan.params_in_memory)
            throw InternalError(fmt::format(
                "plan_scan(): the {} of {} has more parameters than a launch takes", what, where_of(n)));
        site = placeholder_site(pp.plan, part_inputs, placeholder.get(), n, what);
        binding = std::move(pp.binding);
        return std::make_pair(std::move(pp.plan), part_inputs.size());
    };
    ScanPlan& p = ps.plan;
    p.row_reduction = true;
    p.reduce_op = r.op();
    p.reduce_dtype = r.operand(0)->dtype();
    auto [operand_plan, operand_inputs] = plan_part(ps.reduction_operand, ps.accumulators,
                                                    "reduction operand", ps.operand_binding, p.operand_site);
    p.operand_plan = std::move(operand_plan);
    ps.reduction_operand_inputs = operand_inputs;
    p.row_plan = plan_part(ps.row_outputs, ps.reduced, "row outputs", ps.row_binding, p.row_site).first;
}

// The kernel's row reduction, when its outputs hold one (a reduction over the scan): the reduction node.
const ir::Node* row_reduction_of(const FusedKernel& k) {
    const ir::Node* found = nullptr;
    for (const ir::Node* x : ir::topo_order(k.outputs))
        if (ir::is_reduction(x->op())) {
            if (found)
                throw InternalError(fmt::format("plan_scan(): kernel {} holds two reductions", k.name));
            found = x;
        }
    return found;
}

}  // namespace

PlannedScan plan_scan(const FusedKernel& k, const LayoutOf& layout_of, const DeviceInfo& device) {
    if (k.outputs.empty()) throw InternalError(fmt::format("plan_scan(): kernel {} has no outputs", k.name));
    PlannedScan ps;
    ps.node = scan_node(k);
    const ir::Node& n = *ps.node;
    const ir::Node& x = *n.operand(0);
    const Strides out = contiguous_strides(n.shape());
    Strides in = out;  // a prologue's element e is row-major over the scan's shape
    if (computed_operand(x)) {
        plan_prologue(ps, layout_of, device);
    } else {
        const std::optional<ir::StridedView> view =
            ir::view_of_input(x, [&](const ir::Node& i) { return layout_of(i).strides; });
        if (!view)
            throw NotFusable(fmt::format(
                "the operand of {} is a reshape that has no strides for its input's layout", where_of(n)));
        ps.input = view->base;
        ps.inputs = {view->base};
        ps.in_offset = view->offset;
        in = view->strides;
    }
    ps.operand_inputs = ps.inputs.size();
    bool fused_store = false;
    for (const ir::NodePtr& o : k.outputs) fused_store = fused_store || o != ps.node;
    if (const ir::Node* r = row_reduction_of(k))
        plan_row_reduction(ps, k, *r, layout_of, device);
    else if (fused_store)
        plan_epilogue(ps, k, layout_of, device);
    const auto axis = static_cast<std::size_t>(ir::scan_axis(n));
    ps.length = n.shape()[axis];
    ps.in_step = in[axis];
    ps.out_step = out[axis];
    for (std::size_t d = 0; d < n.shape().size(); ++d) {
        if (d == axis) continue;
        ps.outer.push_back(n.shape()[d]);
        ps.in_outer.push_back(in[d]);
        ps.out_outer.push_back(out[d]);
    }
    merge_axes(ps.outer, ps.in_outer, ps.out_outer);
    if (ps.outer.size() > static_cast<std::size_t>(kScanOuterAxes))
        throw Error(
            fmt::format("{}(): {} axes besides the scanned one that do not merge; a scan kernel takes at "
                        "most {} ({})",
                        ir::op_name(n.op()), ps.outer.size(), kScanOuterAxes, short_location(n.loc())));
    ScanPlan& p = ps.plan;
    p.op = n.op();
    p.in = x.dtype();
    p.out = n.dtype();
    p.acc = scan_accumulator(n.dtype());
    p.exclusive = ir::scan_exclusive(n);
    p.path = ps.length > ir::kScanTile                  ? ScanPath::Tree
             : ps.length > 32 * ir::kScanThreadElements ? ScanPath::Tile
                                                        : ScanPath::Warp;
    p.threads = ir::kScanThreads;
    const std::int64_t warps =
        (ps.length + 32 * ir::kScanThreadElements - 1) / (32 * ir::kScanThreadElements);
    p.row_warps = p.path == ScanPath::Tile   ? (warps <= 2   ? 2
                                                : warps <= 4 ? 4
                                                             : 8)
                  : p.path == ScanPath::Warp ? 1
                                             : 8;
    const bool reducible_path = p.path == ScanPath::Warp || (p.path == ScanPath::Tile && p.row_warps <= 4);
    if (p.row_reduction && (!reducible_path || p.exclusive || ps.length == 0 ||
                            ir::scan_axis(n) != static_cast<int>(n.shape().size()) - 1))
        throw InternalError(fmt::format(
            "plan_scan(): the row reduction of {} is not over rows of 1 to 1024 of its last axis, inclusive",
            where_of(n)));
    if (p.path == ScanPath::Tree) {
        const std::int64_t wave = std::max<std::int64_t>(device.sm_count, 1) * kScanChunkBlocksPerSM;
        while ((std::int64_t{2} << ps.chunk_shift) <= p.chunk_tiles() && ps.chunks() > 1) ++ps.chunk_shift;
        while (ps.chunk_shift > 0 && ps.rows() * ps.chunks() < wave) --ps.chunk_shift;
    }
    return ps;
}

}  // namespace loom::codegen
