// partition: a graph -> the kernels that evaluate it (fusion_plan.hpp). One pure function for graphs with
// and without reductions; it decides what fuses and records why every boundary exists.
//
// Fused (the default):
//   * Reductions, in topological order, join the kernel of the reductions their operand reads when those
//     share the operand shape and the axes (a later stage: layernorm's variance after its mean), or the last
//     kernel of the same shape and axes when the operand reads no reduction (`sum` and `max` of one input);
//     otherwise they start a kernel, and the reduced values they read are materialized.
//   * A root whose reduced values all come from one reduction kernel is written by it: as a row output when
//     it has one element per row, as an element output when it has the operand's shape. Any other root is
//     written by a pointwise kernel over materialized reduced values; roots of one shape share one.
//   * Elementwise ops, casts, views and gathers fuse into the kernel of their consumer's iteration space (a
//     gather's operand is read at the positions its index gives); an input read by several outputs of a
//     kernel is read once.
// Strict (PartitionOptions::strict, plan_fusion's fallback when a reduction kernel cannot be planned): every
// reduction a kernel of its own, everything else pointwise.
// Unfused (PartitionOptions::fusion false, for debugging and the differential fuzzer): every elementwise op,
// gather and reduction is a kernel of its own, every value between kernels a temporary in its dtype; views
// stay index maps of the kernel that reads them, and a root that is a view or an input gets a copy kernel.
// Matrix products (partition_products.cpp): each is a kernel of its own, and the graph between them is
// partitioned as above, in stages.
// All three give the same bits: every kernel follows the one reduction order, and an elementwise op
// computes the same value wherever it runs (docs/semantics.md, section 1).
#include "loom/codegen/plan/partition.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "loom/codegen/plan/kernel_key.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/hash.hpp"
#include "partition_internal.hpp"

namespace loom::codegen {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

bool same_key(const ir::Node& a, const ir::Node& b) {
    return a.operand(0)->shape() == b.operand(0)->shape() && a.ints() == b.ints();
}

// Reductions reachable from `from` without passing through another reduction (`from` itself when it is one).
std::vector<ir::NodePtr> frontier(const ir::NodePtr& from) {
    std::vector<ir::NodePtr> out;
    std::unordered_set<const ir::Node*> seen;
    std::vector<ir::NodePtr> stack{from};
    while (!stack.empty()) {
        ir::NodePtr n = std::move(stack.back());
        stack.pop_back();
        if (!seen.insert(n.get()).second) continue;
        if (ir::is_reduction(n->op())) {
            out.push_back(n);
            continue;
        }
        for (const auto& op : n->operands()) stack.push_back(op);
    }
    return out;
}

// A readable kernel name from the elementwise ops of a graph: "relu_add_mul" (last ops first, at most 3).
std::string ops_name(const std::vector<ir::NodePtr>& outputs) {
    std::vector<std::string> names;
    const auto order = ir::topo_order(outputs);
    for (auto it = order.rbegin(); it != order.rend() && names.size() < 3; ++it) {
        if (!ir::is_elementwise((*it)->op()) && !ir::is_gather((*it)->op())) continue;
        std::string nm(ir::op_name((*it)->op()));
        if (std::find(names.begin(), names.end(), nm) == names.end()) names.push_back(nm);
    }
    if (names.empty()) return "copy";
    return fmt::format("{}", fmt::join(names, "_"));
}

// A reduction kernel named after its reductions ("max_sum", "_norm" with element outputs).
std::string reduction_name(const ReduceGroupSpec& spec) {
    std::vector<std::string> names;
    for (const auto& r : spec.reductions) {
        std::string nm(ir::op_name(r->op()));
        if (std::find(names.begin(), names.end(), nm) == names.end()) names.push_back(nm);
    }
    std::string base = fmt::format("{}", fmt::join(names, "_"));
    if (!spec.element_outputs.empty()) base += "_norm";
    return base;
}

/// The partition under construction: kernels with their original (unsubstituted) graphs, and the
/// temporaries. finish() substitutes the placeholders and names the kernels.
class Builder {
  public:
    Partition P;

    int temp_of(const ir::Node* n) const {
        const auto it = temp_index_.find(n);
        return it == temp_index_.end() ? -1 : it->second;
    }
    /// Materializes `n` (once): a temporary written by kernel `writer` (appended to its writes later).
    int materialize(const ir::NodePtr& n, const std::string& why) {
        if (const int t = temp_of(n.get()); t >= 0) return t;
        const int t = static_cast<int>(P.temps.size());
        temp_index_.emplace(n.get(), t);
        P.temps.push_back({n,
                           ir::input(n->dtype(), n->shape(), fmt::format("t{} ({})", t, ir::op_name(n->op())),
                                     {}, n->loc()),
                           why});
        return t;
    }

    /// Replaces every materialized node in the graph of `outputs` by its placeholder, except the nodes in
    /// `keep` (a reduction kernel's own reductions).
    std::vector<ir::NodePtr> substitute(const std::vector<ir::NodePtr>& outputs,
                                        const std::unordered_set<const ir::Node*>& keep = {}) const {
        return ir::rewrite(outputs, [&](const ir::Node& n, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
            if (keep.count(&n)) return nullptr;
            const int t = temp_of(&n);
            return t < 0 ? nullptr : P.temps[static_cast<std::size_t>(t)].placeholder;
        });
    }

  private:
    std::unordered_map<const ir::Node*, int> temp_index_;
};

// A reduction kernel being formed: its reductions, and the roots and temporaries it writes.
struct Group {
    std::vector<ir::NodePtr> members;
    std::vector<std::pair<ir::NodePtr, Slot>> el_out, row_out;
    std::string why;
};

// A pointwise kernel being formed: its outputs (one shape) and where each goes.
struct Step {
    std::vector<ir::NodePtr> outputs;
    std::vector<Slot> writes;
    std::string why;
};

Slot root_slot(std::size_t i) {
    return {Slot::Kind::Root, static_cast<int>(i)};
}
Slot temp_slot(int t) {
    return {Slot::Kind::Temp, t};
}

// The reduction kernels and pointwise kernels of `groups` and `steps`, substituted and named.
void finish(Builder& b, std::vector<Group>& groups, std::vector<Step>& steps,
            const std::vector<std::size_t>& order, const PartitionOptions& opt, bool has_reduction) {
    const std::size_t nk = groups.size() + steps.size();
    std::vector<FusedKernel> kernels;
    for (Group& G : groups) {
        std::unordered_set<const ir::Node*> keep;
        for (const auto& m : G.members) keep.insert(m.get());
        std::vector<ir::NodePtr> all = G.members;
        for (const auto& [n, s] : G.el_out) all.push_back(n);
        for (const auto& [n, s] : G.row_out) all.push_back(n);
        const auto sub = b.substitute(all, keep);
        FusedKernel k;
        k.family = Family::Reduction;
        std::size_t i = 0;
        for (; i < G.members.size(); ++i) k.group.reductions.push_back(sub[i]);
        for (const auto& [n, s] : G.el_out) {
            k.group.element_outputs.push_back(sub[i++]);
            k.writes.push_back(s);
        }
        for (const auto& [n, s] : G.row_out) {
            k.group.row_outputs.push_back(sub[i++]);
            k.writes.push_back(s);
        }
        k.members = G.members;
        k.why = std::move(G.why);
        kernels.push_back(std::move(k));
    }
    for (Step& s : steps) {
        FusedKernel k;
        k.family = Family::Pointwise;
        // The kernel computes its own outputs (an unfused kernel writes the temporary it computes).
        std::unordered_set<const ir::Node*> keep;
        for (const auto& o : s.outputs) keep.insert(o.get());
        k.outputs = b.substitute(s.outputs, keep);
        k.writes = std::move(s.writes);
        k.why = std::move(s.why);
        kernels.push_back(std::move(k));
    }
    // Launch order (`order` lists kernel indices, operands first), then names: the user's, else the ops'.
    for (std::size_t pos = 0; pos < order.size(); ++pos) {
        FusedKernel& k = kernels[order[pos]];
        std::string base = !opt.name.empty()               ? opt.name
                           : k.family == Family::Reduction ? reduction_name(k.group)
                           : has_reduction                 ? std::string("pointwise")
                                                           : ops_name(k.outputs);
        k.name = nk > 1 ? fmt::format("{}_{}", base, pos) : base;
        b.P.kernels.push_back(std::move(k));
    }
}

/// Fused and strict partitions.
Partition partition_fused(const std::vector<ir::NodePtr>& roots, const PartitionOptions& opt) {
    Builder b;
    const FusionCostModel default_cost;
    const FusionCostModel& cost = opt.cost ? *opt.cost : default_cost;
    const bool strict = opt.strict;
    std::vector<Group> groups;
    std::unordered_map<const ir::Node*, int> group_of;
    auto materialize = [&](const ir::NodePtr& r, const std::string& why) {
        if (b.temp_of(r.get()) >= 0) return;
        const int t = b.materialize(r, why);
        groups[static_cast<std::size_t>(group_of.at(r.get()))].row_out.push_back({r, temp_slot(t)});
    };
    std::vector<ir::NodePtr> reductions;
    for (const ir::NodePtr& n : detail::owning_order(roots))
        if (ir::is_reduction(n->op())) reductions.push_back(n);
    for (const auto& r : reductions) {
        const auto deps = frontier(r->operands()[0]);
        int g = -1;
        std::string why;
        if (!strict) {
            if (!deps.empty()) {
                const int cand = group_of.at(deps[0].get());
                bool ok = same_key(*groups[static_cast<std::size_t>(cand)].members[0], *r);
                for (const auto& d : deps) ok = ok && group_of.at(d.get()) == cand;
                if (ok && cost.join_reduction(groups[static_cast<std::size_t>(cand)].members, *r))
                    g = cand;
                else
                    why = ok ? "the cost model keeps it apart"
                             : "its operand reads reduced values of another kernel";
            } else {
                for (std::size_t k = groups.size(); k-- > 0;)
                    if (same_key(*groups[k].members[0], *r) && cost.join_reduction(groups[k].members, *r)) {
                        g = static_cast<int>(k);
                        break;
                    }
                if (g < 0) why = "first reduction of its operand shape and axes";
            }
        } else {
            why = fmt::format("one kernel per reduction ({})", opt.strict_reason);
        }
        if (g < 0) {
            g = static_cast<int>(groups.size());
            groups.emplace_back();
            groups.back().why = why;
        }
        groups[static_cast<std::size_t>(g)].members.push_back(r);
        group_of.emplace(r.get(), g);
        for (const auto& d : deps)
            if (group_of.at(d.get()) != g)
                materialize(d, fmt::format("read by {} in another kernel", where_of(*r)));
    }
    if (strict)
        for (const auto& r : reductions) materialize(r, "its own kernel");
    std::vector<std::pair<ir::NodePtr, std::size_t>> pointwise_roots;
    for (std::size_t i = 0; i < roots.size(); ++i) {
        const ir::NodePtr& root = roots[i];
        const auto deps = frontier(root);
        if (deps.empty()) {
            pointwise_roots.push_back({root, i});
            continue;
        }
        const int g = group_of.at(deps[0].get());
        bool one = true;
        for (const auto& d : deps) one = one && group_of.at(d.get()) == g;
        Group& G = groups[static_cast<std::size_t>(g)];
        const ir::Node& m0 = *G.members[0];
        const bool root_is_member = ir::is_reduction(root->op());
        const bool fuse = one && cost.fuse_output(G.members, *root);
        if (fuse && (root_is_member || !strict) && root->numel() == m0.numel()) {
            G.row_out.push_back({root, root_slot(i)});
        } else if (fuse && !strict && root->shape() == m0.operand(0)->shape()) {
            G.el_out.push_back({root, root_slot(i)});
        } else {
            for (const auto& d : deps)
                materialize(d, fmt::format("read by the result {} ({}) of another iteration space",
                                           loom::to_string(root->shape()), short_location(root->loc())));
            pointwise_roots.push_back({root, i});
        }
    }
    std::vector<Step> steps;
    for (const auto& [root, i] : pointwise_roots) {
        Step* step = nullptr;
        for (auto& s : steps)
            if (s.outputs[0]->shape() == root->shape()) step = &s;
        if (!step) {
            steps.emplace_back();
            step = &steps.back();
            if (!reductions.empty())
                step->why = fmt::format(
                    "results of shape {} read reduced values of other kernels or have their own "
                    "iteration space",
                    loom::to_string(root->shape()));
            else if (steps.size() > 1)
                step->why = fmt::format("outputs of shapes {} and {} have different iteration spaces",
                                        loom::to_string(steps[steps.size() - 2].outputs[0]->shape()),
                                        loom::to_string(root->shape()));
        }
        step->outputs.push_back(root);
        step->writes.push_back(root_slot(i));
    }
    if (strict) b.P.note = fmt::format("one kernel per reduction: {}", opt.strict_reason);
    // Reduction kernels first (their order is topological), then the pointwise kernels, which read only
    // reduced values.
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < groups.size() + steps.size(); ++k) order.push_back(k);
    finish(b, groups, steps, order, opt, !reductions.empty());
    return std::move(b.P);
}

/// The unfused partition: one kernel per elementwise op and per reduction.
Partition partition_unfused(const std::vector<ir::NodePtr>& roots, const PartitionOptions& opt) {
    Builder b;
    const std::vector<ir::NodePtr> order = detail::owning_order(roots);
    std::unordered_map<const ir::Node*, std::vector<std::size_t>> root_positions;
    for (std::size_t i = 0; i < roots.size(); ++i) root_positions[roots[i].get()].push_back(i);
    std::unordered_set<const ir::Node*> used;  // nodes some other node reads
    for (const ir::NodePtr& n : order)
        for (const auto& o : n->operands()) used.insert(o.get());
    auto is_op = [](const ir::Node& n) {
        return ir::is_elementwise(n.op()) || ir::is_reduction(n.op()) || ir::is_gather(n.op());
    };
    // Kernels in the graph's topological order, so each reads only what earlier ones wrote.
    std::vector<Group> groups;
    std::vector<Step> steps;
    std::vector<std::size_t> kernel_order;  // indices into groups (reductions) then steps (offset)
    struct Pending {
        bool reduction;
        std::size_t index;
    };
    std::vector<Pending> pending;
    for (const ir::NodePtr& n : order) {
        const bool root = root_positions.count(n.get()) > 0;
        if (!is_op(*n)) continue;
        std::vector<Slot> writes;
        if (used.count(n.get()))
            writes.push_back(temp_slot(b.materialize(n, "fusion off: every op is a kernel")));
        if (root)
            for (std::size_t i : root_positions.at(n.get())) writes.push_back(root_slot(i));
        if (ir::is_reduction(n->op())) {
            Group G;
            G.members = {n};
            for (const Slot& s : writes) G.row_out.push_back({n, s});
            G.why = fmt::format("fusion off: {}", where_of(*n));
            pending.push_back({true, groups.size()});
            groups.push_back(std::move(G));
        } else {
            Step s;
            for (const Slot& w : writes) {
                s.outputs.push_back(n);
                s.writes.push_back(w);
            }
            s.why = fmt::format("fusion off: {}", where_of(*n));
            pending.push_back({false, steps.size()});
            steps.push_back(std::move(s));
        }
    }
    // Roots that are not ops (an input, or a view of one or of a computed value): a copy kernel each.
    for (std::size_t i = 0; i < roots.size(); ++i) {
        if (is_op(*roots[i])) continue;
        Step s;
        s.outputs = {roots[i]};
        s.writes = {root_slot(i)};
        s.why = fmt::format("fusion off: a copy of {}", where_of(*roots[i]));
        pending.push_back({false, steps.size()});
        steps.push_back(std::move(s));
    }
    for (const Pending& p : pending) kernel_order.push_back(p.reduction ? p.index : groups.size() + p.index);
    b.P.note = "fusion off: every elementwise op and every reduction is a kernel of its own";
    PartitionOptions named = opt;
    finish(b, groups, steps, kernel_order, named, true);
    return std::move(b.P);
}

// A hash of a graph's structure and shapes (placeholders compare by dtype and shape).
std::uint64_t graph_key(const std::vector<ir::NodePtr>& outputs) {
    Hasher h;
    h.add(structural_key(outputs));
    for (const ir::Node* n : ir::topo_order(outputs)) {
        h.add(static_cast<std::uint64_t>(n->rank()));
        for (auto e : n->shape()) h.add(static_cast<std::uint64_t>(e));
        for (auto v : n->ints()) h.add(static_cast<std::uint64_t>(v));
    }
    return h.digest();
}

std::uint64_t slot_word(const Slot& s) {
    return (static_cast<std::uint64_t>(s.kind) << 32) | static_cast<std::uint32_t>(s.index);
}

}  // namespace

std::string to_string(const Slot& s) {
    switch (s.kind) {
        case Slot::Kind::Source:
            return fmt::format("in{}", s.index);
        case Slot::Kind::Temp:
            return fmt::format("t{}", s.index);
        case Slot::Kind::Root:
            return fmt::format("out{}", s.index);
        case Slot::Kind::Index:
            return "index";
    }
    return "?";
}

std::string_view family_name(Family f) {
    switch (f) {
        case Family::Pointwise:
            return "pointwise";
        case Family::Tiled:
            return "tiled";
        case Family::Reduction:
            return "reduction";
        case Family::MatMul:
            return "matmul";
        case Family::Attention:
            return "attention";
        case Family::Scan:
            return "scan";
        case Family::Scatter:
            return "scatter";
    }
    return "?";
}

bool FusionCostModel::join_reduction(const std::vector<ir::NodePtr>&, const ir::Node&) const {
    return true;
}
bool FusionCostModel::fuse_output(const std::vector<ir::NodePtr>&, const ir::Node&) const {
    return true;
}

const ir::NodePtr& product_of(const std::vector<ir::NodePtr>& outputs) {
    const ir::NodePtr* found = nullptr;
    auto consider = [&](const ir::NodePtr& n) {
        if (!ir::is_product(n->op())) return;
        if (found && found->get() != n.get())
            throw InternalError("product_of(): a matmul kernel with two products");
        found = &n;
    };
    for (const ir::NodePtr& o : outputs) consider(o);
    for (const ir::Node* n : ir::topo_order(outputs))
        for (const ir::NodePtr& o : n->operands()) consider(o);
    if (!found) throw InternalError("product_of(): a matmul kernel without a product");
    return *found;
}

std::vector<const ir::Node*> graph_inputs(const FusedKernel& k) {
    std::vector<const ir::Node*> out;
    for (const ir::Node* n : ir::topo_order(k.outputs))
        if (n->op() == ir::Op::Input) out.push_back(n);
    return out;
}

std::vector<ir::NodePtr> FusedKernel::written() const {
    if (family != Family::Reduction) return outputs;
    std::vector<ir::NodePtr> out = group.element_outputs;
    out.insert(out.end(), group.row_outputs.begin(), group.row_outputs.end());
    return out;
}

std::vector<ir::NodePtr> FusedKernel::graph() const {
    if (family != Family::Reduction) return outputs;
    std::vector<ir::NodePtr> all = group.reductions;
    all.insert(all.end(), group.element_outputs.begin(), group.element_outputs.end());
    all.insert(all.end(), group.row_outputs.begin(), group.row_outputs.end());
    return all;
}

bool FusedKernel::operator==(const FusedKernel& o) const {
    return family == o.family && name == o.name && writes == o.writes && why == o.why &&
           group.reductions.size() == o.group.reductions.size() &&
           group.element_outputs.size() == o.group.element_outputs.size() &&
           graph_key(graph()) == graph_key(o.graph());
}

bool TempValue::operator==(const TempValue& o) const {
    return value == o.value && why == o.why && placeholder->dtype() == o.placeholder->dtype() &&
           placeholder->shape() == o.placeholder->shape();
}

std::uint64_t Partition::hash() const {
    Hasher h;
    h.add(std::string_view("loom.partition.v1"));
    for (const FusedKernel& k : kernels) {
        h.add(static_cast<std::uint64_t>(k.family));
        h.add(k.name);
        h.add(graph_key(k.graph()));
        h.add(k.group.reductions.size());
        h.add(k.group.element_outputs.size());
        for (const Slot& s : k.writes) h.add(slot_word(s));
        h.add(k.why);
    }
    for (const TempValue& t : temps) {
        h.add(graph_key({t.value}));
        h.add(t.why);
    }
    h.add(note);
    return h.digest();
}

std::string Partition::to_string() const {
    std::string s;
    if (!note.empty()) s += fmt::format("note      {}\n", note);
    for (std::size_t i = 0; i < kernels.size(); ++i) {
        const FusedKernel& k = kernels[i];
        std::vector<std::string> nodes, writes;
        if (k.family == Family::Reduction)
            for (const auto& m : k.members) nodes.push_back(where_of(*m));
        else
            for (const ir::Node* n : ir::topo_order(k.outputs))
                if (ir::is_elementwise(n->op()) || ir::is_product(n->op()) || ir::is_gather(n->op()) ||
                    ir::is_attention(n->op()) || ir::is_scan(n->op()) || ir::is_scatter(n->op()))
                    nodes.push_back(where_of(*n));
        for (const Slot& w : k.writes) writes.push_back(codegen::to_string(w));
        s += fmt::format("kernel {}  {} {}: {}; writes {}\n", i, family_name(k.family), k.name,
                         nodes.empty() ? std::string("(copy)") : fmt::format("{}", fmt::join(nodes, " ")),
                         fmt::join(writes, ", "));
        if (!k.why.empty()) s += fmt::format("boundary  kernel {}: {}\n", i, k.why);
    }
    for (std::size_t t = 0; t < temps.size(); ++t)
        s += fmt::format("temporary t{} = {} {} {}: {}\n", t, where_of(*temps[t].value),
                         loom::to_string(temps[t].value->shape()), name(temps[t].value->dtype()),
                         temps[t].why);
    return s;
}

Partition partition(const std::vector<ir::NodePtr>& roots, const PartitionOptions& options) {
    if (roots.empty()) return {};
    const auto plain = [](const std::vector<ir::NodePtr>& r, const PartitionOptions& o) {
        return o.fusion ? partition_fused(r, o) : partition_unfused(r, o);
    };
    if (detail::has_product(roots) || (options.fusion && detail::has_gathers_computed_first(roots)))
        return detail::partition_products(roots, options, plain);
    return plain(roots, options);
}

}  // namespace loom::codegen
