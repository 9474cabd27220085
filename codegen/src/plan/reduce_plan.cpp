// Reduction planning: the element and row graphs of a group, its schedule, its parameters and launch.
#include "loom/codegen/plan/reduce_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/hash.hpp"

namespace loom::codegen {

namespace {

Strides contiguous_strides(const Shape& s) {
    Strides st(s.size(), 1);
    for (std::size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
    return st;
}

std::int64_t pow2_at_least(std::int64_t v) {
    std::int64_t p = 1;
    while (p < v) p *= 2;
    return p;
}

bool is_arg(ir::Op op) {
    return op == ir::Op::ArgMin || op == ir::Op::ArgMax;
}

// Whether every site of a placeholder in `plan` reads the row value of its own row: the placeholder's
// element is the row index o for every element of the space. `inner`: the space is (O, L), else (L, O).
void check_row_values(const PointwisePlan& plan, const PointwiseBinding& b, const std::vector<int>& row_value,
                      std::int64_t O, std::int64_t L, bool inner, std::string_view part) {
    if (O == 0 || b.numel == 0) return;  // nothing is ever read
    for (std::size_t s = 0; s < plan.loads.size(); ++s) {
        const int input = plan.loads[s].input;
        if (row_value[static_cast<std::size_t>(input)] < 0) continue;
        const auto& site = b.sites[s];
        bool ok = site.offset == 0 && plan.loads[s].derived.empty() && plan.loads[s].positions.empty();
        if (ok && plan.rank == 2) {
            ok = inner ? (site.coefs[0] == 1 && site.coefs[1] == 0)
                       : (site.coefs[0] == 0 && site.coefs[1] == 1);
        } else if (ok) {
            const std::int64_t c = site.coefs[0];
            ok = (O == 1 && c == 0) || (L == 1 && c == 1) || (O == 1 && L == 1);
        }
        if (!ok)
            throw NotFusable(
                fmt::format("the {} graph reads a reduced value at another row than its own", part));
    }
}

// The kernel's parameter struct: the element space's struct, the row space's (when there is one), then the
// numbers of the order and the split workspaces.
ParamLayout layout_reduce_params(const ReducePlan& plan, bool has_row) {
    ParamLayout L;
    auto add = [&](ParamField::Kind k, int a, std::string name, ParamType type, std::size_t size,
                   std::size_t align) {
        ParamField f;
        f.kind = k;
        f.a = a;
        f.name = std::move(name);
        f.type = type;
        f.size = size;
        f.align = align;
        L.add(std::move(f));
    };
    using K = ParamField::Kind;
    using T = ParamType;
    add(K::ElementSpace, 0, "el", T::Struct, plan.element.params.size,
        std::max<std::size_t>(plan.element.params.align, 1));
    if (has_row)
        add(K::RowSpace, 1, "row", T::Struct, plan.row.params.size,
            std::max<std::size_t>(plan.row.params.align, 1));
    add(K::Rows, 0, "n_out", T::Int64, 8, 8);
    add(K::Length, 0, "len", T::Int64, 8, 8);
    add(K::Chunks, 0, "chunks", T::Int64, 8, 8);
    add(K::ChunksPerBlock, 0, "cpb", T::Int64, 8, 8);
    add(K::BlocksPerRow, 0, "nblk", T::Int64, 8, 8);
    add(K::Counters, 0, "count", T::RawPointer, 8, 8);
    for (std::size_t j = 0; j < plan.ops.size(); ++j)
        add(K::Partials, static_cast<int>(j), fmt::format("part{}", j), T::RawPointer, 8, 8);
    L.finish();
    return L;
}

}  // namespace

std::string_view schedule_name(ReduceSchedule s) {
    return s == ReduceSchedule::Inner ? "inner" : "outer";
}

Accumulator accumulator_of(const ReduceOpPlan& op) {
    const bool sumlike = op.op == ir::Op::Sum || op.op == ir::Op::Prod || op.op == ir::Op::Mean;
    const DType held = is_half(op.in) ? DType::Float32 : op.in;  // the register type of the operand's values
    if (is_arg(op.op)) return {Accumulator::Kind::Indexed, held};
    if (op.op == ir::Op::Any || op.op == ir::Op::All) return {Accumulator::Kind::Flag, DType::UInt8};
    if (sumlike && !is_float(op.in)) return {Accumulator::Kind::Value, DType::Int64};
    return {Accumulator::Kind::Value, held};
}

std::size_t Accumulator::bytes() const {
    switch (kind) {
        case Kind::Value:
            return itemsize(dtype);
        case Kind::Flag:
            return 1;
        case Kind::Indexed:
            return 16;
    }
    throw InternalError("Accumulator::bytes: bad kind");
}

std::size_t accumulator_bytes(const ReduceOpPlan& op) {
    return accumulator_of(op).bytes();
}

std::uint64_t ReducePlan::hash() const {
    Hasher h;
    h.add(static_cast<std::uint64_t>(schedule));
    h.add(static_cast<std::uint64_t>(block));
    h.add(static_cast<std::uint64_t>(group));
    h.add(static_cast<std::uint64_t>(cached_blocks));
    h.add(static_cast<std::uint64_t>(full_rows));
    h.add(split);
    h.add(vector_variant);
    h.add(static_cast<std::uint64_t>(stages));
    for (const auto& o : ops) {
        h.add(static_cast<std::uint64_t>(o.op));
        h.add(static_cast<std::uint64_t>(o.in));
        h.add(static_cast<std::uint64_t>(o.out));
        h.add(static_cast<std::uint64_t>(o.stage));
    }
    h.add(static_cast<std::uint64_t>(element_outputs));
    h.add(element.hash());
    h.add(row.hash());
    for (int v : element_row_value) h.add(static_cast<std::uint64_t>(v + 1));
    h.add(0xfeedull);
    for (int v : row_row_value) h.add(static_cast<std::uint64_t>(v + 1));
    h.add(0xcac4eull);
    for (int v : cached_sites) h.add(static_cast<std::uint64_t>(v));
    return h.digest();
}

std::string ReducePlan::to_string() const {
    std::string ops_text;
    for (std::size_t k = 0; k < ops.size(); ++k)
        ops_text += fmt::format("{}{} {} -> {} (stage {})", k ? ", " : "", ir::op_name(ops[k].op),
                                name(ops[k].in), name(ops[k].out), ops[k].stage);
    std::string s =
        fmt::format("reduction plan: schedule {}, {} threads per block, ", schedule_name(schedule), block);
    if (schedule == ReduceSchedule::Inner)
        s += fmt::format("{} threads per row ({} rows per block)", group, block / group);
    else
        s += "256 outputs per block (1024 with 4-wide loads), one thread per output summing whole chunks";
    s += fmt::format("\n  reductions: {}\n  stages {}; element outputs {}; rows {}; {}\n", ops_text, stages,
                     element_outputs,
                     cached_blocks > 0
                         ? fmt::format("held in registers ({} x 1024 elements{})", cached_blocks,
                                       full_rows ? ", full: no bounds checks in the 4-wide variant" : "")
                         : std::string("re-read per pass"),
                     !split ? "one block per row group"
                     : schedule == ReduceSchedule::Inner
                         ? "split: blocks share each row's chunks in balanced ranges (full waves), chunk "
                           "partials climb a counter tree (groups of 256, then the row)"
                         : "split: several blocks per row, the last block of a row group finishes it");
    if (schedule == ReduceSchedule::Inner)
        s += fmt::format(
            "  order: chunks of {}, {} lanes of runs of {}, butterfly over lanes, pairwise over chunks\n",
            kReduceChunk, kReduceLanes, kReduceRun);
    else
        s += fmt::format("  order (columns): chunks of {} accumulated in sequence, pairwise over chunks\n",
                         kColumnChunk);
    s += fmt::format("  vector variant: {}\n", vector_variant ? (schedule == ReduceSchedule::Inner
                                                                     ? "yes (4 elements of a row per load)"
                                                                     : "yes (4 outputs per load)")
                                                              : "no");
    if (cached_blocks > 0) {
        std::string cs;
        for (int k : cached_sites) cs += fmt::format("{}in{}", cs.empty() ? "" : ", ", k);
        s += fmt::format("  held in registers: {}\n", cs.empty() ? std::string("nothing") : cs);
    }
    // The kernel's own grid and bytes (the element and row spaces below describe what is read and written).
    if (schedule == ReduceSchedule::Inner)
        s += fmt::format(
            "  grid: ceil(O / {}) blocks of {} threads in x ({} threads per row), blocks per row in y "
            "(1 unless split)\n",
            rows_per_block(), block, group);
    else
        s += fmt::format(
            "  grid: ceil(O / {}) blocks of {} threads in x (ceil(O / {}) with 4-wide loads), blocks per row "
            "in y (1 unless split)\n",
            block, block, 4 * block);
    int read = 0;
    for (std::size_t k = 0; k < element.loads.size(); ++k)
        if (element_row_value[static_cast<std::size_t>(element.loads[k].input)] < 0)
            read += element.loads[k].bytes_per_element;
    int written = 0;
    for (std::size_t k = ops.size(); k < element.outputs.size(); ++k)
        written += element.outputs[k].bytes_per_element;
    s += fmt::format(
        "  bytes per reduced element: {} read per pass over the row ({} pass{}{}){}\n", read, stages,
        stages > 1 ? "es" : "", cached_blocks > 0 ? "; a row held in registers is read once" : "",
        written ? fmt::format(", {} written by the last pass (element outputs)", written) : std::string());
    s += fmt::format("element space (out0 .. out{}: the reductions' operands, in registers{}):\n",
                     ops.size() - 1, element_outputs > 0 ? "; then the element outputs" : "");
    s += element.describe(false);
    if (!row.loads.empty() || !row.outputs.empty())
        s += "row space (the row outputs):\n" + row.describe(false);
    return s;
}

namespace {

// The shape of a reduction group: O outputs ("rows") of L reduced elements each, and the axes behind them.
struct GroupShape {
    int rank = 0;
    std::vector<std::int64_t> kept, reduced;  // the operand's axes, in order
    std::int64_t O = 1, L = 1;
    bool trailing = true;  // the reduced axes are the operand's last ones
    bool outer = false;    // the innermost axis is kept: the outer schedule
};

// The group's shape, read from its first reduction: every reduction of a group has the same operand shape
// and axes, so one iteration space serves them all.
GroupShape group_shape(const ReduceGroupSpec& spec) {
    if (spec.reductions.empty()) throw InternalError("plan_reduce: no reductions");
    const ir::Node& first = *spec.reductions[0];
    const Shape S = first.operand(0)->shape();
    const std::vector<std::int64_t> axes = first.ints();
    for (const auto& r : spec.reductions)
        if (!ir::is_reduction(r->op()) || r->operand(0)->shape() != S || r->ints() != axes)
            throw InternalError("plan_reduce: the reductions of a group must share operand shape and axes");
    GroupShape g;
    g.rank = static_cast<int>(S.size());
    for (int d = 0; d < g.rank; ++d) {
        const bool red = std::find(axes.begin(), axes.end(), d) != axes.end();
        (red ? g.reduced : g.kept).push_back(d);
        (red ? g.L : g.O) *= S[static_cast<std::size_t>(d)];
    }
    for (std::size_t k = 0; k < g.reduced.size(); ++k)
        if (g.reduced[k] != g.rank - static_cast<std::int64_t>(g.reduced.size() - k)) g.trailing = false;
    g.outer = !g.reduced.empty() && g.reduced.back() != g.rank - 1;
    return g;
}

// The number of `n` among the group's reductions, or -1 when it is not one of them.
int group_index(const ReduceGroupSpec& spec, const ir::Node* n) {
    for (std::size_t k = 0; k < spec.reductions.size(); ++k)
        if (spec.reductions[k].get() == n) return static_cast<int>(k);
    return -1;
}

// The reductions and their stages: a reduction runs one stage after the latest reduction of the group that
// its operand reads (layernorm: the variance after the mean), so a stage reads only row values finished
// before it. An operand may read only earlier reductions of its own group.
void plan_stages(const ReduceGroupSpec& spec, ReducePlan& plan) {
    const std::size_t nred = spec.reductions.size();
    std::vector<int> stage(nred, 0);
    for (std::size_t k = 0; k < nred; ++k) {
        for (const ir::Node* n : ir::topo_order({spec.reductions[k]->operands()[0]})) {
            if (!ir::is_reduction(n->op())) continue;
            const int j = group_index(spec, n);
            if (j < 0 || static_cast<std::size_t>(j) >= k)
                throw InternalError(
                    "plan_reduce: an operand reads a reduction outside the group or a later one");
            stage[k] = std::max(stage[k], stage[static_cast<std::size_t>(j)] + 1);
        }
    }
    plan.stages = 1 + *std::max_element(stage.begin(), stage.end());
    for (std::size_t k = 0; k < nred; ++k)
        plan.ops.push_back({spec.reductions[k]->op(), spec.reductions[k]->operand(0)->dtype(),
                            spec.reductions[k]->dtype(), stage[k]});
}

// A placeholder input per reduction: its row value, which later stages, the element outputs and the row
// outputs read in its place (held in registers, never in memory).
void make_placeholders(const ReduceGroupSpec& spec, PlannedReduce& pr) {
    for (std::size_t k = 0; k < spec.reductions.size(); ++k)
        pr.placeholders.push_back(ir::input(spec.reductions[k]->dtype(), spec.reductions[k]->shape(),
                                            fmt::format("row value {}", k), {}, spec.reductions[k]->loc()));
}

// The rewriter that replaces each reduction of the group by its placeholder. Every reduction the graphs
// read must be the group's: the partition materializes the others.
ir::Rewriter row_value_substitution(const ReduceGroupSpec& spec, const PlannedReduce& pr) {
    return [&spec, &pr](const ir::Node& n, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
        if (!ir::is_reduction(n.op())) return nullptr;
        const int j = group_index(spec, &n);
        if (j < 0) throw InternalError("plan_reduce: a reduction outside the group was not materialized");
        return pr.placeholders[static_cast<std::size_t>(j)];
    };
}

// The schedule: outer (the column order) when the innermost axis is kept, else inner (the lane order), as
// docs/semantics.md fixes it from the shape and the axes; the outer schedule's chunks are kColumnChunk rows.
// Element outputs are written along the inner schedule's rows, so they need the reduced axes trailing.
void plan_schedule(const ReduceGroupSpec& spec, const GroupShape& g, ReducePlan& plan, ReduceBinding& b) {
    plan.schedule = g.outer ? ReduceSchedule::Outer : ReduceSchedule::Inner;
    if (!spec.element_outputs.empty() && (!g.trailing || g.outer))
        throw NotFusable("element outputs need the reduced axes to be the trailing axes");
    b.outputs = g.O;
    b.length = g.L;
    b.chunks = g.outer ? (g.L + kColumnChunk - 1) / kColumnChunk : (g.L + kReduceChunk - 1) / kReduceChunk;
}

// The element space's graph: each reduction's operand, its row values substituted, permuted so that the
// reduced axes come last (inner) or first (outer) and reshaped to (O, L) or (L, O); then the element outputs
// (inner, reduced axes trailing: the reshape alone).
void element_space_roots(const ReduceGroupSpec& spec, const GroupShape& g, const ir::Rewriter& subst,
                         PlannedReduce& pr) {
    std::vector<std::int64_t> perm = g.outer ? g.reduced : g.kept;
    const std::vector<std::int64_t>& rest = g.outer ? g.kept : g.reduced;
    perm.insert(perm.end(), rest.begin(), rest.end());
    bool identity = true;
    for (int d = 0; d < g.rank; ++d) identity = identity && perm[static_cast<std::size_t>(d)] == d;
    const Shape space = g.outer ? Shape{g.L, g.O} : Shape{g.O, g.L};
    std::vector<ir::NodePtr> roots;
    for (const auto& r : spec.reductions) roots.push_back(r->operands()[0]);
    roots.insert(roots.end(), spec.element_outputs.begin(), spec.element_outputs.end());
    const std::vector<ir::NodePtr> substituted = ir::rewrite(roots, subst);
    for (std::size_t k = 0; k < substituted.size(); ++k) {
        ir::NodePtr v = substituted[k];
        if (k < spec.reductions.size() && !identity) v = ir::permute(v, perm, v->loc());
        pr.element_roots.push_back(ir::reshape(v, space, v->loc()));
    }
    pr.plan.element_outputs = static_cast<int>(spec.element_outputs.size());
}

// The layouts of a space's inputs. `row_value` receives, per input, the reduction whose placeholder it is,
// or -1; a placeholder is laid out contiguously (it is never read from memory). The bound inputs join
// pr.inputs: the element space's first, then the row space's, the order in which they are packed.
std::vector<InputLayout> space_layouts(const std::vector<ir::NodePtr>& roots, const LayoutOf& layout_of,
                                       PlannedReduce& pr, std::vector<int>& row_value) {
    std::vector<InputLayout> ls;
    row_value.clear();
    for (const ir::Node* in : pointwise_inputs(roots)) {
        int j = -1;
        for (std::size_t k = 0; k < pr.placeholders.size(); ++k)
            if (pr.placeholders[k].get() == in) j = static_cast<int>(k);
        row_value.push_back(j);
        if (j >= 0) {
            ls.push_back({in->dtype(), contiguous_strides(in->shape()), true});
        } else {
            ls.push_back(layout_of(*in));
            pr.inputs.push_back(in);
        }
    }
    return ls;
}

// The element and row spaces as pointwise plans: the element space over (O, L) or (L, O), the row space
// over the O rows (the row outputs, each reshaped to O elements). A space may read a row value only at its
// own row: one thread holds it, so a read at another row cannot be one kernel.
void plan_spaces(const ReduceGroupSpec& spec, const GroupShape& g, const ir::Rewriter& subst,
                 const LayoutOf& layout_of, const PlanTarget& target, PlannedReduce& pr) {
    ReducePlan& plan = pr.plan;
    ReduceBinding& b = pr.binding;
    {
        PlannedPointwise pe = plan_pointwise(
            pr.element_roots, space_layouts(pr.element_roots, layout_of, pr, plan.element_row_value), target,
            PointwiseUse::ReductionSpace);
        plan.element = std::move(pe.plan);
        b.element = std::move(pe.binding);
    }
    check_row_values(plan.element, b.element, plan.element_row_value, g.O, g.L, !g.outer, "element");
    if (spec.row_outputs.empty()) return;
    for (const auto& r : ir::rewrite(spec.row_outputs, subst)) {
        if (r->numel() != g.O)
            throw InternalError("plan_reduce: a row output does not have one element per row");
        pr.row_roots.push_back(ir::reshape(r, {g.O}, r->loc()));
    }
    PlannedPointwise pw =
        plan_pointwise(pr.row_roots, space_layouts(pr.row_roots, layout_of, pr, plan.row_row_value), target,
                       PointwiseUse::ReductionSpace);
    plan.row = std::move(pw.plan);
    b.row = std::move(pw.binding);
    check_row_values(plan.row, b.row, plan.row_row_value, g.O, 1, true, "row");
}

// The element-space sites read from memory that differ from row to row (contiguous, gathered, or strided
// along the row index): the ones a held row must hold.
std::vector<int> varying_sites(const ReducePlan& plan) {
    std::vector<int> varying;
    for (std::size_t s = 0; s < plan.element.loads.size(); ++s) {
        const OperandPlan& o = plan.element.loads[s];
        if (plan.element_row_value[static_cast<std::size_t>(o.input)] >= 0) continue;
        const bool v = o.access == Access::Contiguous || o.access == Access::Gathered ||
                       (o.access == Access::Strided && (plan.element.rank == 1 || (o.dim_mask & 1u)));
        if (v) varying.push_back(static_cast<int>(s));
    }
    return varying;
}

// Held rows (inner schedule, several passes over each row): a row of at most 16 blocks of 1024 elements whose
// varying sites take at most 64 values per thread is loaded once into registers, and every pass works from
// them. With a block per row, row broadcasts (a weight, a bias) are held too while the held values fit in
// kHeldRegisters registers per thread (an 8-byte value takes two): loaded with the row, their latency
// overlaps the reductions instead of following the last one. Scalars, and row broadcasts that do not fit,
// are loaded where they are used.
void plan_held_rows(ReducePlan& plan, std::int64_t L) {
    const std::vector<int> varying = varying_sites(plan);
    const std::int64_t streamed = static_cast<std::int64_t>(varying.size());
    const std::int64_t blocks1024 = std::max<std::int64_t>(1, (L + 1023) / 1024);
    const std::int64_t per_thread = blocks1024 * 1024 / plan.group;  // elements of a row per thread
    if (blocks1024 > 16 || streamed * per_thread > 64) return;
    plan.cached_blocks = static_cast<int>(blocks1024);
    plan.full_rows = L == blocks1024 * 1024;
    plan.cached_sites = varying;
    constexpr std::int64_t kHeldRegisters = 96;
    auto registers = [&](std::size_t site) {
        return per_thread * register_words(plan.element.loads[site].dtype);
    };
    std::int64_t held = 0;
    for (int k : varying) held += registers(static_cast<std::size_t>(k));
    for (std::size_t k = 0; k < plan.element.loads.size() && plan.group == 256; ++k) {
        const OperandPlan& o = plan.element.loads[k];
        if (plan.element_row_value[static_cast<std::size_t>(o.input)] >= 0 || o.access == Access::Scalar ||
            o.access == Access::Indirect)  // loaded where used, at its gathers' positions
            continue;
        if (std::find(varying.begin(), varying.end(), static_cast<int>(k)) != varying.end()) continue;
        if (held + registers(k) > kHeldRegisters) continue;
        held += registers(k);
        plan.cached_sites.push_back(static_cast<int>(k));
    }
    std::sort(plan.cached_sites.begin(), plan.cached_sites.end());
}

// Whether the element space has a 4-wide variant along its innermost dimension (the reduced index for inner,
// the output index for outer, `inner_extent` long): every site read from memory moves by 1 or 0 elements
// along it, and coalescing left that dimension whole.
bool has_vector_variant(const ReducePlan& plan, const ReduceBinding& b, std::int64_t inner_extent) {
    bool vec = inner_extent > 1;
    const int rdim = plan.element.rank - 1;
    for (std::size_t s = 0; s < plan.element.loads.size() && vec; ++s) {
        const OperandPlan& o = plan.element.loads[s];
        if (plan.element_row_value[static_cast<std::size_t>(o.input)] >= 0) continue;
        switch (o.access) {
            case Access::Contiguous:
            case Access::Scalar:
            case Access::RowBroadcast:
                break;
            case Access::Strided:
                vec = o.unit_inner || !(o.dim_mask >> rdim & 1u);
                break;
            case Access::Gathered:
            case Access::Indirect:
                vec = false;
                break;
        }
    }
    if (plan.element.rank == 2 && b.element.extents.size() == 2 && b.element.extents[1] != inner_extent)
        vec = false;
    return vec;
}

// Blocks along the grid's x: rows_per_block rows each, or 1024 outputs for the outer schedule's 4-wide loads.
std::int64_t row_blocks(const ReducePlan& plan, const GroupShape& g) {
    const std::int64_t per_block =
        g.outer && plan.vector_variant && g.O % 4 == 0 ? 1024 : plan.rows_per_block();
    return (g.O + per_block - 1) / per_block;
}

// Outer split: 2 blocks per SM to aim for, each thread keeping 16 rows of 16-byte loads in flight; a power of
// two chunks per block, and at most as many block partials per row as the finisher's tree holds in 16 KiB.
void split_outer(ReducePlan& plan, ReduceBinding& b, std::int64_t row_blocks, const PlanTarget& target) {
    const std::int64_t aim = 2LL * target.multiprocessors;
    std::size_t acc = 1;
    for (const auto& op : plan.ops) acc = std::max(acc, accumulator_bytes(op));
    const std::int64_t max_blocks =
        std::min<std::int64_t>(2048, static_cast<std::int64_t>(16384 / (2 * acc)));
    const std::int64_t want_blocks = (aim + row_blocks - 1) / row_blocks;
    std::int64_t cpb = pow2_at_least((b.chunks + want_blocks - 1) / want_blocks);
    cpb = std::max(cpb, pow2_at_least((b.chunks + max_blocks - 1) / max_blocks));
    b.chunks_per_block = cpb;
    b.blocks_per_row = (b.chunks + cpb - 1) / cpb;
    plan.split = b.blocks_per_row > 1;
}

// Inner split: block y of a row takes the balanced contiguous range [y C / B, (y + 1) C / B) of its C chunks
// and writes one partial per chunk; the chunk partials then climb a counter tree (groups of 256, then the
// row), so the order is the pairwise tree over chunks whatever B is. B is chosen so that the waves of
// kSplitBlocksPerSM blocks per SM (the kernel's __launch_bounds__ keeps that many resident) are full: one
// wave when the rows divide it, as for a full reduction. Power-of-two ranges instead left the last wave
// part-empty.
void split_inner(ReducePlan& plan, ReduceBinding& b, std::int64_t row_blocks, const PlanTarget& target) {
    b.blocks_per_row = split_blocks_per_row(row_blocks, b.chunks, kSplitBlocksPerSM * target.multiprocessors);
    b.chunks_per_block = (b.chunks + b.blocks_per_row - 1) / b.blocks_per_row;
    plan.split = b.blocks_per_row > 1;
}

// The split: when the row blocks fall short of 2 per SM and the rows span several chunks, several blocks
// share each row's chunks. A group of several passes over each row (`multi`) cannot share a row among
// blocks: it runs unsplit while its rows span few chunks, else it is not one kernel. Unsplit, one block
// takes all of a row's chunks.
void plan_split(ReducePlan& plan, ReduceBinding& b, const GroupShape& g, bool multi, std::int64_t row_blocks,
                const PlanTarget& target) {
    const std::int64_t fill = 2LL * target.multiprocessors;
    if (g.O > 0 && row_blocks < fill && b.chunks > 1) {
        if (multi) {
            if (b.chunks > (g.outer ? 64 : 2))
                throw NotFusable(
                    fmt::format("{} rows of {} elements are too few to fill the device in one pass per "
                                "stage; each reduction runs as its own split kernel",
                                g.O, g.L));
        } else if (g.outer) {
            split_outer(plan, b, row_blocks, target);
        } else {
            split_inner(plan, b, row_blocks, target);
        }
    }
    if (!plan.split) {
        b.chunks_per_block = std::max<std::int64_t>(b.chunks, 1);
        b.blocks_per_row = 1;
    }
}

// The parameter struct, which must fit the device's kernel parameter limit.
void plan_params(PlannedReduce& pr, const ReduceGroupSpec& spec, const PlanTarget& target) {
    pr.plan.params = layout_reduce_params(pr.plan, !pr.row_roots.empty());
    const std::size_t psize = pr.plan.params.size;
    if (psize > target.param_limit_bytes)
        throw Error(fmt::format(
            "reduce(): the kernel parameters need {} bytes, above the device's limit of {} bytes; "
            "split the computation ({})",
            psize, target.param_limit_bytes, short_location(spec.reductions[0]->loc())));
}

}  // namespace

PlannedReduce plan_reduce(const ReduceGroupSpec& spec, const LayoutOf& layout_of, const PlanTarget& target) {
    const GroupShape g = group_shape(spec);
    PlannedReduce pr;
    ReducePlan& plan = pr.plan;
    plan_stages(spec, plan);
    make_placeholders(spec, pr);
    const ir::Rewriter subst = row_value_substitution(spec, pr);
    plan_schedule(spec, g, plan, pr.binding);
    element_space_roots(spec, g, subst, pr);
    plan_spaces(spec, g, subst, layout_of, target, pr);
    // Threads: 256 a block; inner, a warp per row up to 2048 elements, else the block; outer, one per output.
    const bool multi = plan.stages > 1 || plan.element_outputs > 0;
    plan.block = 256;
    plan.group = g.outer ? 1 : (g.L <= 2048 ? 32 : 256);
    if (!g.outer && multi) plan_held_rows(plan, g.L);
    plan.vector_variant = has_vector_variant(plan, pr.binding, g.outer ? g.O : g.L);
    const std::int64_t blocks = row_blocks(plan, g);
    plan_split(plan, pr.binding, g, multi, blocks, target);
    if (blocks > 0x7fffffffLL)
        throw Error(fmt::format("reduce(): {} rows need more than 2^31 - 1 blocks", g.O));
    plan_params(pr, spec, target);
    return pr;
}

std::size_t reduce_params_size(const ReducePlan& plan) {
    return plan.params.size;
}

void pack_reduce_params(const PlannedReduce& pr, std::span<const void* const> inputs,
                        std::span<void* const> el_outputs, std::span<void* const> row_outputs,
                        std::span<void* const> partials, std::span<std::byte> out, void* error_word) {
    const ReducePlan& plan = pr.plan;
    const ParamLayout& L = plan.params;
    if (out.size() < L.size) throw InternalError("pack_reduce_params: buffer too small");
    std::memset(out.data(), 0, L.size);
    // Element plan: bound inputs in order, placeholders get no pointer; its reduction operands write nothing.
    std::size_t next = 0;
    std::vector<const void*> el_in;
    for (int rv : plan.element_row_value) el_in.push_back(rv < 0 ? inputs[next++] : nullptr);
    std::vector<void*> el_out(plan.element.outputs.size(), nullptr);
    for (std::size_t k = 0; k < el_outputs.size(); ++k) el_out[plan.ops.size() + k] = el_outputs[k];
    using K = ParamField::Kind;
    for (const ParamField& f : L.fields) {
        std::byte* at = out.data() + f.offset;
        auto put = [&](auto v) { std::memcpy(at, &v, sizeof v); };
        switch (f.kind) {
            case K::ElementSpace:
                pack_params(plan.element, pr.binding.element, el_in, el_out, out.subspan(f.offset, f.size),
                            error_word);
                break;
            case K::RowSpace: {
                std::vector<const void*> rw_in;
                for (int rv : plan.row_row_value) rw_in.push_back(rv < 0 ? inputs[next++] : nullptr);
                pack_params(plan.row, pr.binding.row, rw_in, row_outputs, out.subspan(f.offset, f.size),
                            error_word);
                break;
            }
            case K::Rows:
                put(static_cast<std::int64_t>(pr.binding.outputs));
                break;
            case K::Length:
                put(static_cast<std::int64_t>(pr.binding.length));
                break;
            case K::Chunks:
                put(static_cast<std::int64_t>(pr.binding.chunks));
                break;
            case K::ChunksPerBlock:
                put(static_cast<std::int64_t>(pr.binding.chunks_per_block));
                break;
            case K::BlocksPerRow:
                put(static_cast<std::int64_t>(pr.binding.blocks_per_row));
                break;
            // partials[0] is the counters (one unsigned int per row group), then one workspace per reduction
            case K::Counters:
                put(partials.empty() ? nullptr : partials[0]);
                break;
            case K::Partials: {
                const std::size_t k = static_cast<std::size_t>(f.a) + 1;
                put(k < partials.size() ? partials[k] : nullptr);
                break;
            }
            case K::InputPointer:
            case K::OutputPointer:
            case K::NumElements:
            case K::Extent:
            case K::SiteCoef:
            case K::SiteDerived:
            case K::DerivedOffset:
            case K::DerivedCoef:
            case K::DerivedDerived:
            case K::DerivedDiv:
            case K::DerivedMod:
            case K::Scalar:
            case K::OutputCoef:
            case K::SitePosition:
            case K::GatherExtent:
            case K::GatherId:
            case K::ErrorWord:
            case K::Product:
            case K::Epilogue:
                throw InternalError(
                    fmt::format("pack_reduce_params: pointwise parameter {} in a reduction plan", f.name));
        }
    }
    if (next != inputs.size()) throw InternalError("pack_reduce_params: input count does not match the plan");
}

namespace {

// Whether the 4-wide entry point can run with these pointers: every site read 4 at a time starts each run on
// a 4-element boundary, and so do the element outputs.
bool vector_ok(const PlannedReduce& pr, std::span<const void* const> inputs,
               std::span<void* const> el_outputs) {
    const ReducePlan& plan = pr.plan;
    const ReduceBinding& b = pr.binding;
    const bool outer = plan.schedule == ReduceSchedule::Outer;
    if (!plan.vector_variant || (outer ? b.outputs : b.length) % 4 != 0) return false;
    for (std::size_t k = 0; k < el_outputs.size(); ++k) {
        const std::size_t isz = itemsize(plan.element.outputs[plan.ops.size() + k].dtype);
        if (reinterpret_cast<std::uintptr_t>(el_outputs[k]) % (4 * isz) != 0) return false;
    }
    const int R = plan.element.rank;
    for (std::size_t s = 0; s < plan.element.loads.size(); ++s) {
        const OperandPlan& o = plan.element.loads[s];
        if (plan.element_row_value[static_cast<std::size_t>(o.input)] >= 0 || o.access == Access::Scalar ||
            o.index)
            continue;
        const bool unit = o.access == Access::Contiguous || o.access == Access::RowBroadcast ||
                          (o.access == Access::Strided && o.unit_inner);
        if (!unit) continue;
        int idx = 0;  // the bound input of this site: count the inputs before it that are not row values
        for (int q = 0; q < o.input; ++q)
            if (plan.element_row_value[static_cast<std::size_t>(q)] < 0) ++idx;
        const std::size_t isz = itemsize(o.dtype);
        const auto addr =
            reinterpret_cast<std::uintptr_t>(inputs[static_cast<std::size_t>(idx)]) +
            static_cast<std::uintptr_t>(b.element.sites[s].offset * static_cast<std::int64_t>(isz));
        if (addr % (4 * isz) != 0) return false;
        if (R == 2 && b.element.sites[s].coefs[0] % 4 != 0) return false;
    }
    return true;
}

}  // namespace

LaunchConfig reduce_launch(const PlannedReduce& pr, std::span<const void* const> inputs,
                           std::span<void* const> el_outputs) {
    const ReducePlan& plan = pr.plan;
    const ReduceBinding& b = pr.binding;
    const bool outer = plan.schedule == ReduceSchedule::Outer;
    LaunchConfig l;
    l.block_x = static_cast<std::uint32_t>(plan.block);
    l.vector = vector_ok(pr, inputs, el_outputs);
    const std::int64_t per_block = outer ? (l.vector ? 1024 : 256) : plan.rows_per_block();
    if (b.outputs == 0) return l;  // grid_x 0: nothing to launch
    l.grid_x = static_cast<std::uint32_t>((b.outputs + per_block - 1) / per_block);
    l.grid_y = static_cast<std::uint32_t>(b.blocks_per_row);
    return l;
}

std::int64_t split_blocks_per_row(std::int64_t rows, std::int64_t chunks, std::int64_t slots) {
    rows = std::max<std::int64_t>(rows, 1);
    slots = std::max<std::int64_t>(slots, 1);
    // Time in units of one row's work on one slot: ceil(rows B / slots) waves of blocks doing 1/B of a row.
    // The ideal is rows / slots; take the fewest blocks within 2% of it, else the best there is.
    auto time = [&](std::int64_t B) {
        return static_cast<double>((rows * B + slots - 1) / slots) / static_cast<double>(B);
    };
    const double ideal = static_cast<double>(rows) / static_cast<double>(slots);
    const std::int64_t most = std::min<std::int64_t>(chunks, 65535);  // gridDim.y
    const std::int64_t one_wave = std::min(slots / rows, most);  // every slot busy when the rows divide them
    if (one_wave >= 1 && time(one_wave) <= 1.02 * ideal) return one_wave;
    std::int64_t best = 1;
    for (std::int64_t B = 1; B <= most; ++B) {
        if (time(B) < time(best) * (1 - 1e-12)) best = B;
        if (time(best) <= 1.02 * ideal) break;
    }
    return best;
}

std::int64_t split_counter_count(const PlannedReduce& pr, const LaunchConfig& l) {
    const ReduceBinding& b = pr.binding;
    if (!pr.plan.split) return 0;
    if (pr.plan.schedule == ReduceSchedule::Outer) return l.grid_x;
    return b.outputs * (b.split_groups() + 1);
}

std::int64_t split_partial_count(const PlannedReduce& pr) {
    const ReduceBinding& b = pr.binding;
    if (!pr.plan.split) return 0;
    if (pr.plan.schedule == ReduceSchedule::Outer) return b.outputs * b.blocks_per_row;
    return b.outputs * (b.chunks + b.split_groups());
}

}  // namespace loom::codegen
