// partition_products: the partition of a graph with matrix products (partition_internal.hpp).
//
// Why: a product is a kernel family of its own (Family::MatMul), which reads its two operands from memory
// and writes its result, or the elementwise work after it, to memory; no other family computes it. So the
// graph is cut at the products:
//   * each operand of a product is read in place when it is an input, a product's result or a view of one
//     (a transposed, sliced or broadcast operand stays a view of the kernel's graph, read without a copy);
//     any other operand is materialized as computed, below its views (a broadcast batch is not expanded),
//     and so is a reshape among the views that has no strides (view_base); elementwise work over another
//     product's result (qkv's bias, read by attention's head products) is materialized too, to become that
//     product's epilogue, rather than recomputed as a prologue in each block column of every reader;
//   * a product's result is a temporary when another node reads it, and is written to the roots it is;
//   * then (with fusion on) a product whose result one pointwise kernel alone reads, element by element over
//     the product's shape, takes that kernel as its epilogue (fuse_epilogues);
//   * the rest of the graph is partitioned by the ordinary partitioner, in stages: stage s computes the
//     operands that the products of depth s + 1 read (depth: the most products on a path to a source,
//     the product included), then those products run; the last stage computes the roots. Each stage reads
//     the values of earlier stages through their placeholders.
// Guarantees: every kernel reads only sources and temporaries written by earlier kernels; the values are the
// graph's (a product computes the same bits wherever its operands come from); the stages' partitions keep
// their fusion decisions, reasons and notes.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/view.hpp"
#include "partition_internal.hpp"

namespace loom::codegen::detail {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

// Whether `x`'s chain of views holds a reshape.
bool has_reshape(const ir::Node& x) {
    for (const ir::Node* n = &x; ir::is_view(n->op()); n = n->operand(0))
        if (n->op() == ir::Op::Reshape) return true;
    return false;
}

// The nodes that are kernels of their own, reading their operands from memory: matrix products
// (Family::MatMul), attention (Family::Attention), scans (Family::Scan) and scatters (Family::Scatter).
bool own_kernel(const ir::Node& n) {
    return ir::is_product(n.op()) || ir::is_attention(n.op()) || ir::is_scan(n.op()) ||
           ir::is_scatter(n.op());
}

// The family and the kernel name of an own_kernel node.
Family own_family(const ir::Node& n) {
    return ir::is_attention(n.op()) ? Family::Attention
           : ir::is_scan(n.op())    ? Family::Scan
           : ir::is_scatter(n.op()) ? Family::Scatter
                                    : Family::MatMul;
}

// The node below a product operand's chain of views, which the kernel reads through strides: an input, a
// product, or a value to materialize. A reshape among the views stays a view where it has strides for a
// contiguous node below it (a product's result and a temporary are contiguous; an input is taken to be,
// and where its layout gives the reshape no strides the plan computes the operand in a prologue instead);
// else the reshape is materialized, and the views above it read the temporary.
const ir::NodePtr& view_base(const ir::NodePtr& n) {
    std::vector<const ir::NodePtr*> chain;  // the views, outermost first
    const ir::NodePtr* p = &n;
    while (ir::is_view((*p)->op())) {
        chain.push_back(p);
        p = &(*p)->operand_ptr(0);
    }
    const ir::NodePtr* base = p;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
        if ((**it)->op() == ir::Op::Reshape &&
            !ir::compose_views(***it, contiguous_strides((*base)->shape()), base->get()))
            base = *it;
    return *base;
}

// Whether a reshape merges or splits axes (not only inserting or dropping axes of extent 1).
bool moves_axes(const ir::Node& reshape) {
    auto unit_free = [](const Shape& s) {
        Shape out;
        for (std::int64_t e : s)
            if (e != 1) out.push_back(e);
        return out;
    };
    return unit_free(reshape.shape()) != unit_free(reshape.operand(0)->shape());
}

// What a fused gather cannot read in place: below a reshape that merges or splits axes, computed work (or a
// view of it with no strides for the reshape), which the fused kernel would index at the gathered position
// through the reshape's quotients and remainders. The node to compute first, or null: none, or one below a
// product, attention, scan or scatter (left to the plan, which refuses it with its message).
ir::NodePtr gathered_reshape_base(const ir::Node& gather) {
    bool moves = false;
    for (const ir::Node* n = gather.operand(0); ir::is_view(n->op()); n = n->operand(0))
        moves = moves || (n->op() == ir::Op::Reshape && moves_axes(*n));
    if (!moves) return nullptr;
    const ir::NodePtr& base = view_base(gather.operand_ptr(0));
    if (base->op() == ir::Op::Input || own_kernel(*base)) return nullptr;
    for (const ir::Node* n : ir::topo_order({base}))
        if (own_kernel(*n)) return nullptr;
    return base;
}

// The checked gathers whose result the graph reads only in part (through a slice that drops elements, a
// broadcast to no elements, or as another gather's operand, which reads its elements at positions), here or
// through views and elementwise work over it (`(take(x, ids, 0) + 1).slice(...)`: the sum's kernel computes
// only the elements the slice keeps). Fused into their reader, they would compute, and so check, only the
// indices of the elements read; computed whole first, every index is checked, as the reference and fusion
// off check them.
std::vector<ir::NodePtr> partly_read_gathers(const std::vector<ir::NodePtr>& order) {
    std::unordered_map<const ir::Node*, std::vector<const ir::Node*>> users;
    for (const ir::NodePtr& n : order)
        for (const ir::NodePtr& o : n->operands()) users[o.get()].push_back(n.get());
    // Whether `n`'s value is read in part: by a reader that drops elements, here or through views of it or
    // elementwise work over it (each element of which reads `n` at its own position). Memoized: elementwise
    // graphs share subexpressions.
    std::unordered_map<const ir::Node*, bool> memo;
    std::function<bool(const ir::Node&)> in_part = [&](const ir::Node& n) {
        if (const auto m = memo.find(&n); m != memo.end()) return m->second;
        bool part = false;
        if (const auto it = users.find(&n); it != users.end())
            for (const ir::Node* u : it->second) {
                if (part) break;
                if (ir::is_gather(u->op()) && u->operand(0) == &n)
                    part = true;
                else if (ir::is_view(u->op()))
                    part = (u->numel() < n.numel() &&
                            (u->op() == ir::Op::Slice || u->op() == ir::Op::BroadcastTo)) ||
                           in_part(*u);
                else if (ir::is_elementwise(u->op()))
                    part = in_part(*u);
            }
        memo.emplace(&n, part);
        return part;
    };
    std::vector<ir::NodePtr> out;
    for (const ir::NodePtr& n : order)
        if (ir::is_gather(n->op()) && static_cast<ir::IndexMode>(n->ints().at(1)) == ir::IndexMode::Checked &&
            n->numel() > 0 && in_part(*n))
            out.push_back(n);
    return out;
}

/// The partition being assembled from the stages and the product kernels.
class Assembly {
  public:
    Partition P;

    /// The placeholder of a materialized value, or null.
    ir::NodePtr placeholder(const ir::Node* n) const {
        const auto it = temp_.find(n);
        return it == temp_.end() ? nullptr : P.temps[static_cast<std::size_t>(it->second)].placeholder;
    }
    int temp_of(const ir::Node* n) const {
        const auto it = temp_.find(n);
        return it == temp_.end() ? -1 : it->second;
    }
    int materialize(const ir::NodePtr& n, std::string why) {
        if (const int t = temp_of(n.get()); t >= 0) return t;
        const int t = static_cast<int>(P.temps.size());
        temp_.emplace(n.get(), t);
        P.temps.push_back({n,
                           ir::input(n->dtype(), n->shape(), fmt::format("t{} ({})", t, ir::op_name(n->op())),
                                     {}, n->loc()),
                           std::move(why)});
        return t;
    }
    /// `nodes` with every materialized value replaced by its placeholder, except those in `keep`.
    std::vector<ir::NodePtr> substitute(const std::vector<ir::NodePtr>& nodes,
                                        const std::unordered_set<const ir::Node*>& keep) const {
        return ir::rewrite(nodes, [&](const ir::Node& n, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
            return keep.count(&n) ? nullptr : placeholder(&n);
        });
    }
    /// Appends the kernels and temporaries of a stage's partition; the stage's root r goes to
    /// `root_slots[r]`.
    void append(Partition stage, const std::vector<Slot>& root_slots) {
        const int offset = static_cast<int>(P.temps.size());
        for (TempValue& t : stage.temps) P.temps.push_back(std::move(t));
        const std::size_t n = stage.kernels.size();
        for (std::size_t k = 0; k < n; ++k) {
            FusedKernel& fk = stage.kernels[k];
            for (Slot& w : fk.writes) {
                if (w.kind == Slot::Kind::Temp)
                    w.index += offset;
                else if (w.kind == Slot::Kind::Root)
                    w = root_slots.at(static_cast<std::size_t>(w.index));
            }
            // The stage named its kernels "<base>_<position>" when it had several; the whole plan renames
            // them.
            if (const std::string suffix = fmt::format("_{}", k); n > 1 && fk.name.ends_with(suffix))
                fk.name.resize(fk.name.size() - suffix.size());
            P.kernels.push_back(std::move(fk));
        }
        if (P.note.empty()) P.note = std::move(stage.note);
    }

  private:
    std::unordered_map<const ir::Node*, int> temp_;
};

// Why operand `x` cannot be its kernel's prologue (computed in the kernel element by element as it loads), or
// empty. A prologue takes elementwise ops and views over inputs, products' results and materialized values;
// not a reduction, and not a gather (product and scan kernels take no error word for its index checks).
// `recomputed`: a product's prologue runs again in every block column, so it takes cheap ops only; a scan
// computes each element of its operand once, so costly functions and random numbers are fine there.
std::string prologue_refusal(const ir::NodePtr& x, const Assembly& A, bool recomputed) {
    std::vector<const ir::Node*> stack{x.get()};
    std::unordered_set<const ir::Node*> seen;
    std::unordered_set<const ir::Node*> inputs;
    while (!stack.empty()) {
        const ir::Node* n = stack.back();
        stack.pop_back();
        if (!seen.insert(n).second) continue;
        if (n->op() == ir::Op::Input || own_kernel(*n) || A.temp_of(n) >= 0) {
            inputs.insert(n);
            continue;
        }
        if (ir::is_reduction(n->op())) return fmt::format("it holds a reduction ({})", where_of(*n));
        if (ir::is_gather(n->op())) return fmt::format("it holds a gather ({})", where_of(*n));
        if (recomputed && ir::is_elementwise(n->op()) && ir::info(n->op()).cost != ir::Cost::Cheap)
            return fmt::format("{} is not cheap enough to recompute for every block column", where_of(*n));
        for (const auto& o : n->operands()) stack.push_back(o.get());
    }
    if (inputs.size() > 32)
        return fmt::format("it reads {} inputs, more than a prologue's 32", inputs.size());
    return {};
}

// The product whose result `base` is elementwise work over, element by element (only elementwise ops between
// them, the same shape), or null. Such work is the product's epilogue: computed once as that product's
// result is stored, rather than again as a prologue in every block column of each product reading it (qkv's
// bias, read by the attention products of every head), and its readers keep their vector loads.
const ir::Node* elementwise_over_product(const ir::Node& base) {
    if (!ir::is_elementwise(base.op())) return nullptr;
    std::vector<const ir::Node*> stack{&base};
    std::unordered_set<const ir::Node*> seen;
    while (!stack.empty()) {
        const ir::Node* n = stack.back();
        stack.pop_back();
        if (!seen.insert(n).second) continue;
        if (ir::is_product(n->op()) && n->shape() == base.shape()) return n;
        if (ir::is_elementwise(n->op()))
            for (const auto& o : n->operands()) stack.push_back(o.get());
    }
    return nullptr;
}

/// Inputs an epilogue may read besides the product: its parameters then stay a small part of the kernel's.
constexpr std::size_t kEpilogueInputs = 32;

bool reads_node(const FusedKernel& k, const ir::Node* n) {
    for (const ir::Node* x : ir::topo_order(k.graph()))
        if (x == n) return true;
    return false;
}

// Why the pointwise kernel `q` cannot be the epilogue of a product (or a scan) whose placeholder is `ph`, or
// empty.
std::string epilogue_refusal(const FusedKernel& q, const ir::Node& product, const ir::Node* ph) {
    const char* what = ir::is_scan(product.op()) ? "scan" : "product";
    if (q.family != Family::Pointwise)
        return fmt::format("a {} kernel ({}) reads it: a reduction over a {}'s result reads it from memory",
                           family_name(q.family), q.name, what);
    // Element e of the kernel's iteration space must be element e of the product: the same shape, or (a
    // vector's squeezed axis) only reshapes of the product to the kernel's shape, which keep the row-major
    // order.
    const Shape& space = q.outputs[0]->shape();
    if (numel(space) != product.numel())
        return fmt::format("kernel {} computes over {}, not the {}'s {}", q.name, loom::to_string(space),
                           what, loom::to_string(product.shape()));
    for (const auto& o : q.outputs)
        if (o.get() == ph && space != product.shape())
            return fmt::format("kernel {} writes it as {}", q.name, loom::to_string(space));
    // Every node computed from the product, not only its direct readers: a view of relu(product) (a transpose
    // of a square product) reads the product out of order just as a view of the product does.
    std::unordered_set<const ir::Node*> from_product{ph};
    for (const ir::Node* x : ir::topo_order(q.outputs)) {
        bool reads = false;
        for (const auto& o : x->operands()) reads = reads || from_product.count(o.get()) > 0;
        if (!reads) continue;
        from_product.insert(x);
        const bool flat_view = x->op() == ir::Op::Reshape && x->shape() == space;
        if (ir::is_view(x->op()) && !flat_view)
            return fmt::format("kernel {} reads it through a view ({}), not element by element", q.name,
                               where_of(*x));
        if (!ir::is_view(x->op()) && space != product.shape())
            return fmt::format("kernel {} computes over {}, not the {}'s {}", q.name, loom::to_string(space),
                               what, loom::to_string(product.shape()));
    }
    if (pointwise_inputs(q.outputs).size() > kEpilogueInputs)
        return fmt::format("kernel {} reads more than {} inputs", q.name, kEpilogueInputs);
    for (const ir::Node* x : ir::topo_order(q.outputs))  // a product or scan kernel takes no error word
        if (ir::is_gather(x->op())) return fmt::format("kernel {} holds a gather ({})", q.name, where_of(*x));
    return {};
}

// The longest row a scan kernel reduces (4 warps of 8 elements a thread: one run of 4 per reduction lane).
constexpr std::int64_t kScanRowReductionLength = 4 * 32 * ir::kScanThreadElements;

// Why the reduction kernel `q` cannot be the row reduction of the scan kernel `scan_kernel` (whose node is
// `scan` and placeholder `ph`), or empty: one sum or mean over the scan's axis, the last, of elementwise work
// on the scan's elements (rows of at most 1024, an inclusive scan that is not also a result), then
// elementwise work on the reduced rows. The scan kernel then reduces each row as it finishes it (scan.cuh, in
// the reductions' row order): the scan's elements are never stored.
std::string row_reduction_refusal(const FusedKernel& scan_kernel, const FusedKernel& q, const ir::Node& scan,
                                  const ir::Node* ph) {
    for (const Slot& w : scan_kernel.writes)
        if (w.kind == Slot::Kind::Root) return "the scan is also a result";
    if (q.group.reductions.size() != 1 || !q.group.element_outputs.empty())
        return fmt::format("kernel {} is not one reduction of its rows", q.name);
    const ir::Node& r = *q.group.reductions[0];
    const auto rank = static_cast<std::int64_t>(scan.shape().size());
    if (r.op() != ir::Op::Sum && r.op() != ir::Op::Mean)
        return fmt::format("kernel {} is a {}, not a sum or a mean", q.name, ir::op_name(r.op()));
    if (r.operand(0)->shape() != scan.shape() || r.ints() != std::vector<std::int64_t>{rank - 1} ||
        ir::scan_axis(scan) != rank - 1)
        return fmt::format("kernel {} does not reduce the scan's rows", q.name);
    const std::int64_t length = scan.shape().back();
    if (length == 0 || length > kScanRowReductionLength || ir::scan_exclusive(scan))
        return fmt::format(
            "kernel {} reduces rows of {} (a row reduction in the scan kernel takes inclusive "
            "scans of rows of 1 to {})",
            q.name, length, kScanRowReductionLength);
    if (r.operand(0)->dtype() != DType::Float32 && r.operand(0)->dtype() != DType::Float64)
        return fmt::format("kernel {} reduces {} values", q.name, name(r.operand(0)->dtype()));
    // The reduction alone reads what is computed from the scan, each element at its own position.
    std::unordered_set<const ir::Node*> from_scan{ph};
    for (const ir::Node* x : ir::topo_order(q.group.row_outputs)) {
        if (x == &r) continue;
        bool reads = false;
        for (const auto& o : x->operands()) reads = reads || from_scan.count(o.get()) > 0;
        if (!reads) continue;
        if (!ir::is_elementwise(x->op()) || x->shape() != scan.shape())
            return fmt::format("kernel {} reads the scan through {}, not only its reduction", q.name,
                               where_of(*x));
        from_scan.insert(x);
    }
    for (const ir::NodePtr& o : q.group.row_outputs)
        if (from_scan.count(o.get()) > 0) return fmt::format("kernel {} writes the scan's elements", q.name);
    // Row outputs of one shape, each element the work on the reduced row of its own position: reshapes of the
    // reduction (which keep the row-major order) and elementwise work over the outputs' shape.
    const Shape& space = q.group.row_outputs.at(0)->shape();
    std::unordered_set<const ir::Node*> from_rows{&r};
    for (const ir::Node* x : ir::topo_order(q.group.row_outputs)) {
        bool reads = false;
        for (const auto& o : x->operands()) reads = reads || from_rows.count(o.get()) > 0;
        if (!reads) continue;
        const bool in_order =
            x->op() == ir::Op::Reshape || (ir::is_elementwise(x->op()) && x->shape() == space);
        if (!in_order)
            return fmt::format("kernel {} reads the reduced rows through {}, not row by row", q.name,
                               where_of(*x));
        from_rows.insert(x);
    }
    for (const ir::NodePtr& o : q.group.row_outputs)
        if (o->shape() != space) return fmt::format("kernel {} writes outputs of several shapes", q.name);
    std::size_t inputs = 0;
    for (const ir::Node* x : ir::topo_order(q.group.row_outputs)) {
        if (ir::is_gather(x->op())) return fmt::format("kernel {} holds a gather ({})", q.name, where_of(*x));
        if (x->op() == ir::Op::Input) ++inputs;
    }
    if (inputs > kEpilogueInputs)
        return fmt::format("kernel {} reads more than {} inputs", q.name, kEpilogueInputs);
    return {};
}

// Epilogues: a product whose result one pointwise kernel alone reads, element by element and over the
// product's shape, takes that kernel's work onto its accumulators (one kernel, the result never stored
// unless it is a root). The merged kernel sits where the pointwise kernel was (its other inputs are ready
// there; nothing between reads the product). Otherwise the temporary's reason says what kept them apart.
void fuse_epilogues(Partition& P, const PartitionOptions& options) {
    for (std::size_t p = 0; p < P.kernels.size(); ++p) {
        const Family family = P.kernels[p].family;
        // The host runs a scan on the CPU reference: its consumers stay LLVM kernels of their own.
        if (family != Family::MatMul && (family != Family::Scan || options.operands_from_memory)) continue;
        // A product or scan kernel as partitioned writes its node alone (to a temporary, and to roots); one
        // merged with its epilogue or row reduction writes that work's values, and takes no second one.
        const std::vector<ir::NodePtr>& outs = P.kernels[p].outputs;
        const bool own_node =
            !outs.empty() && (ir::is_product(outs[0]->op()) || ir::is_scan(outs[0]->op())) &&
            std::all_of(outs.begin(), outs.end(), [&](const ir::NodePtr& o) { return o == outs[0]; });
        if (!own_node) continue;
        int t = -1;
        for (const Slot& w : P.kernels[p].writes)
            if (w.kind == Slot::Kind::Temp) t = w.index;
        if (t < 0) continue;
        const ir::Node* ph = P.temps[static_cast<std::size_t>(t)].placeholder.get();
        const ir::NodePtr product = P.kernels[p].outputs.at(0);
        std::vector<std::size_t> readers;
        for (std::size_t q = p + 1; q < P.kernels.size(); ++q)
            if (reads_node(P.kernels[q], ph)) readers.push_back(q);
        const bool row_reduction = readers.size() == 1 && family == Family::Scan &&
                                   P.kernels[readers[0]].family == Family::Reduction;
        std::string refusal = readers.size() != 1 ? fmt::format("{} kernels read it", readers.size())
                              : row_reduction
                                  ? row_reduction_refusal(P.kernels[p], P.kernels[readers[0]], *product, ph)
                                  : epilogue_refusal(P.kernels[readers[0]], *product, ph);
        if (!refusal.empty()) {
            P.temps[static_cast<std::size_t>(t)].why += fmt::format(" (not an epilogue: {})", refusal);
            continue;
        }
        FusedKernel& q = P.kernels[readers[0]];
        FusedKernel f;
        f.family = family;
        f.name = P.kernels[p].name;
        f.outputs = ir::rewrite(row_reduction ? q.group.row_outputs : q.outputs,
                                [&](const ir::Node& n, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
                                    return &n == ph ? product : nullptr;
                                });
        f.writes = q.writes;
        for (const Slot& w : P.kernels[p].writes)
            if (w.kind == Slot::Kind::Root) {
                f.outputs.push_back(product);
                f.writes.push_back(w);
            }
        std::string nodes;
        for (const ir::Node* n : ir::topo_order(row_reduction ? q.group.row_outputs : q.outputs))
            if (ir::is_elementwise(n->op()) || ir::is_reduction(n->op()))
                nodes += fmt::format(" {}", where_of(*n));
        f.why = fmt::format("{}; its epilogue runs on the {}:{}", P.kernels[p].why,
                            row_reduction            ? "scan's rows as they are finished, never stored"
                            : family == Family::Scan ? "scan's elements as they are stored"
                                                     : "accumulators",
                            nodes.empty() ? " a store" : nodes);
        q = std::move(f);
        P.kernels.erase(P.kernels.begin() + static_cast<std::ptrdiff_t>(p));
        P.temps.erase(P.temps.begin() + t);
        for (FusedKernel& k : P.kernels)
            for (Slot& w : k.writes)
                if (w.kind == Slot::Kind::Temp && w.index > t) --w.index;
        --p;  // the kernel now at p is the next one
    }
}

// The stages before the products (fused partitions only): gathered operands that a fused gather cannot index
// (gathered_reshape_base), then checked gathers read in part (partly_read_gathers), which may read them;
// each stage materialized and partitioned by `plain`.
void compute_gathers_first(const std::vector<ir::NodePtr>& order, Assembly& A, const PlainPartition& plain,
                           const PartitionOptions& stage_options) {
    auto stage = [&](const std::vector<std::pair<ir::NodePtr, std::string>>& nodes) {
        std::vector<ir::NodePtr> values;
        std::vector<Slot> slots;
        std::unordered_set<const ir::Node*> keep;
        for (const auto& [n, why] : nodes) {
            if (A.temp_of(n.get()) >= 0) continue;
            slots.push_back(Slot{Slot::Kind::Temp, A.materialize(n, why)});
            values.push_back(n);
            keep.insert(n.get());
        }
        if (!values.empty()) A.append(plain(A.substitute(values, keep), stage_options), slots);
    };
    std::vector<std::pair<ir::NodePtr, std::string>> operands, gathers;
    for (const ir::NodePtr& n : order)
        if (ir::is_gather(n->op()))
            if (ir::NodePtr base = gathered_reshape_base(*n))
                operands.emplace_back(
                    std::move(base),
                    fmt::format(
                        "the operand of {}, computed first: a reshape beneath the gather merges or "
                        "splits its axes, which the gather's kernel cannot index at a gathered position",
                        where_of(*n)));
    stage(operands);
    for (const ir::NodePtr& g : partly_read_gathers(order)) {
        bool below_own = false;  // one below a product, attention, scan or scatter stays fused
        for (const ir::Node* n : ir::topo_order({g})) below_own = below_own || own_kernel(*n);
        if (!below_own)
            gathers.emplace_back(g,
                                 "a checked gather read only in part, computed whole so that every index is "
                                 "checked, as without fusion");
    }
    stage(gathers);
}

}  // namespace

std::vector<ir::NodePtr> owning_order(const std::vector<ir::NodePtr>& roots) {
    std::unordered_map<const ir::Node*, ir::NodePtr> owner;
    for (const auto& r : roots) owner.emplace(r.get(), r);
    const std::vector<const ir::Node*> topo = ir::topo_order(roots);
    for (const ir::Node* n : topo)
        for (const auto& o : n->operands()) owner.emplace(o.get(), o);
    std::vector<ir::NodePtr> out;
    for (const ir::Node* n : topo) out.push_back(owner.at(n));
    return out;
}

bool has_product(const std::vector<ir::NodePtr>& roots) {
    for (const ir::Node* n : ir::topo_order(roots))
        if (own_kernel(*n)) return true;
    return false;
}

bool has_gathers_computed_first(const std::vector<ir::NodePtr>& roots) {
    bool gathers = false;  // most graphs have none: then nothing more is looked at
    for (const ir::Node* n : ir::topo_order(roots)) {
        if (!ir::is_gather(n->op())) continue;
        if (gathered_reshape_base(*n)) return true;
        gathers = true;
    }
    return gathers && !partly_read_gathers(owning_order(roots)).empty();
}

Partition partition_products(const std::vector<ir::NodePtr>& roots, const PartitionOptions& options,
                             const PlainPartition& plain) {
    const std::vector<ir::NodePtr> order = owning_order(roots);
    std::unordered_map<const ir::Node*, int> depth;
    std::unordered_set<const ir::Node*> read;        // nodes another node reads
    std::vector<std::vector<ir::NodePtr>> products;  // by depth - 1
    for (const ir::NodePtr& n : order) {
        int d = 0;
        for (const auto& o : n->operands()) {
            d = std::max(d, depth.at(o.get()));
            read.insert(o.get());
        }
        if (own_kernel(*n)) {
            ++d;
            if (products.size() < static_cast<std::size_t>(d)) products.resize(static_cast<std::size_t>(d));
            products[static_cast<std::size_t>(d - 1)].push_back(n);
        }
        depth.emplace(n.get(), d);
    }
    Assembly A;
    std::unordered_map<const ir::Node*, std::vector<std::size_t>> roots_of;
    for (std::size_t i = 0; i < roots.size(); ++i) roots_of[roots[i].get()].push_back(i);
    PartitionOptions stage_options = options;
    stage_options.name.clear();  // the plan names its kernels once all are known
    if (options.fusion) compute_gathers_first(order, A, plain, stage_options);
    for (std::size_t level = 0; level < products.size(); ++level) {
        // The operands this level's products read that must be computed first: a stage of their own.
        std::vector<ir::NodePtr> operands;
        std::vector<Slot> slots;
        for (const ir::NodePtr& m : products[level])
            for (const ir::NodePtr& x : m->operands()) {
                // Attention reads its operands through strides alone: in the strict partition (after a plan
                // found a reshape without strides for its input's layout) an operand holding a reshape is
                // computed first, whole.
                const bool strided =
                    ir::is_attention(m->op()) || ir::is_scan(m->op()) || ir::is_scatter(m->op());
                const bool whole = options.strict && strided && has_reshape(*x);
                const ir::NodePtr& base = whole ? x : view_base(x);
                if (!whole &&
                    (base->op() == ir::Op::Input || own_kernel(*base) || A.temp_of(base.get()) >= 0))
                    continue;
                const bool half =
                    m->operand(0)->dtype() == DType::Float16 || m->operand(0)->dtype() == DType::BFloat16;
                const ir::Node* over = elementwise_over_product(*base);
                std::string why =
                    !options.fusion ? std::string("fusion is off")
                    : whole         ? fmt::format(
                                          "{} reads its operands through strides, and this reshape has none "
                                                  "for its input's layout",
                                          ir::op_name(m->op()))
                    : ir::is_scatter(m->op())
                        ? std::string(
                              "a scatter reads x, its indices and its values from memory (or views of them); "
                              "elementwise producers are not fused as its prologue")
                    : ir::is_scan(m->op()) && options.operands_from_memory
                        ? std::string(
                              "the host runs a scan on the CPU reference, which reads its operand from "
                              "memory")
                    : ir::is_scan(m->op()) ? prologue_refusal(x, A, false)
                    : ir::is_attention(m->op())
                        ? std::string("attention reads q, k, v and its bias from memory (or views of it)")
                    : options.operands_from_memory
                        ? std::string("the host's product packs its operands from memory")
                    : options.half_operands_from_memory && half
                        ? std::string(
                              "the product runs on Hopper's wgmma, whose operands the tensor memory "
                              "accelerator copies from memory")
                    : over ? fmt::format(
                                 "it is elementwise work over the result of {}, whose epilogue "
                                 "computes it once (not again in each block column here), and this "
                                 "product reads it with vector loads",
                                 where_of(*over))
                           : prologue_refusal(x, A, true);
                if (why.empty()) continue;  // a prologue: computed in the product's kernel as its tiles load
                const int t = A.materialize(
                    base, fmt::format("an operand of {}, computed first: {}", where_of(*m), why));
                operands.push_back(base);
                slots.push_back(Slot{Slot::Kind::Temp, t});
            }
        if (!operands.empty()) {
            // Substituted before the stage's own temporaries exist: the operands themselves stay computed.
            std::unordered_set<const ir::Node*> keep;
            for (const auto& o : operands) keep.insert(o.get());
            A.append(plain(A.substitute(operands, keep), stage_options), slots);
        }
        for (const ir::NodePtr& m : products[level]) {
            FusedKernel k;
            k.family = own_family(*m);
            const char* what = k.family == Family::Attention ? "attention"
                               : k.family == Family::Scan    ? "a scan"
                               : k.family == Family::Scatter ? "a scatter"
                                                             : "a matrix product";
            std::vector<Slot> writes;
            if (read.count(m.get()))
                writes.push_back(
                    Slot{Slot::Kind::Temp,
                         A.materialize(
                             m, k.family == Family::Scatter
                                    ? "a scatter's result, read by another kernel (its elementwise consumers "
                                      "are not fused as its epilogue)"
                                    : fmt::format("{}'s result, read by another kernel",
                                                  k.family == Family::Attention ? "attention"
                                                  : k.family == Family::Scan    ? "a scan"
                                                                                : "a matrix product"))});
            if (const auto it = roots_of.find(m.get()); it != roots_of.end())
                for (std::size_t i : it->second)
                    writes.push_back(Slot{Slot::Kind::Root, static_cast<int>(i)});
            // An attention kernel stores one result: where its value goes to several places (a root read by
            // another kernel, or a root given twice), the kernel writes a temporary and copies write the
            // roots.
            std::vector<Slot> copies;
            if (k.family == Family::Attention && writes.size() > 1) {
                for (const Slot& w : writes)
                    if (w.kind == Slot::Kind::Root) copies.push_back(w);
                writes = {Slot{Slot::Kind::Temp,
                               A.materialize(m, fmt::format("attention's result, written to {} places: the "
                                                            "kernel stores it once, copies store the rest",
                                                            writes.size()))}};
            }
            const ir::NodePtr sub = A.substitute({m}, {m.get()}).at(0);
            k.outputs.assign(writes.size(), sub);
            k.writes = std::move(writes);
            k.name = k.family == Family::Scan || k.family == Family::Scatter
                         ? std::string(ir::op_name(m->op()))
                         : std::string(family_name(k.family));
            std::string prologue;
            for (const ir::NodePtr& x : sub->operands())
                for (const ir::Node* n : ir::topo_order({x}))
                    if (ir::is_elementwise(n->op())) prologue += fmt::format(" {}", where_of(*n));
            k.why =
                fmt::format("{} ({}) is a kernel of its own: its operands come from memory{}", what,
                            short_location(m->loc()),
                            prologue.empty() ? std::string()
                            : k.family == Family::Scan
                                ? fmt::format("; its prologue computes the operand as it loads:{}", prologue)
                                : fmt::format("; its prologue runs as the tiles load:{}", prologue));
            A.P.kernels.push_back(std::move(k));
            if (!copies.empty())
                A.append(
                    plain(std::vector<ir::NodePtr>(copies.size(), A.placeholder(m.get())), stage_options),
                    copies);
        }
    }
    // The roots that are not products themselves (those were written by their kernels).
    std::vector<ir::NodePtr> rest;
    std::vector<Slot> rest_slots;
    for (std::size_t i = 0; i < roots.size(); ++i) {
        if (own_kernel(*roots[i])) continue;
        rest.push_back(roots[i]);
        rest_slots.push_back(Slot{Slot::Kind::Root, static_cast<int>(i)});
    }
    if (!rest.empty()) A.append(plain(A.substitute(rest, {}), stage_options), rest_slots);
    if (options.fusion) fuse_epilogues(A.P, options);
    // Names: the user's, else each kernel's own; a position suffix when there are several.
    const std::size_t nk = A.P.kernels.size();
    for (std::size_t k = 0; k < nk; ++k) {
        FusedKernel& fk = A.P.kernels[k];
        const std::string base = options.name.empty() ? fk.name : options.name;
        fk.name = nk > 1 ? fmt::format("{}_{}", base, k) : base;
    }
    return std::move(A.P);
}

}  // namespace loom::codegen::detail
