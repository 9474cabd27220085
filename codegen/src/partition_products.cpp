// partition_products: the partition of a graph with matrix products (partition_internal.hpp).
//
// Why: a product is a kernel family of its own (Family::MatMul), which reads its two operands from memory
// and writes its result to memory; no other family computes it, and nothing fuses into it yet (prologues and
// epilogues come with its GPU kernel). So the graph is cut at the products:
//   * each operand of a product is read in place when it is an input, a product's result or a view of one
//     (a transposed, sliced or broadcast operand stays a view of the kernel's graph, read without a copy);
//     any other operand is materialized as computed, below its views (a broadcast batch is not expanded);
//   * a product's result is a temporary when another node reads it, and is written to the roots it is;
//   * the rest of the graph is partitioned by the ordinary partitioner, in stages: stage s computes the
//     operands that the products of depth s + 1 read (depth: the most products on a path to a source,
//     the product included), then those products run; the last stage computes the roots. Each stage reads
//     the values of earlier stages through their placeholders.
// Guarantees: every kernel reads only sources and temporaries written by earlier kernels; the values are the
// graph's (a product computes the same bits wherever its operands come from); the stages' partitions keep
// their fusion decisions, reasons and notes.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "partition_internal.hpp"

namespace loom::codegen::detail {

namespace {

std::string where_of(const ir::Node& n) { return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc())); }

// The node below a chain of views.
const ir::NodePtr& view_base(const ir::NodePtr& n) {
    const ir::NodePtr* p = &n;
    while (ir::is_view((*p)->op())) p = &(*p)->operand_ptr(0);
    return *p;
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
        P.temps.push_back({n, ir::input(n->dtype(), n->shape(), fmt::format("t{} ({})", t, ir::op_name(n->op())), {}, n->loc()),
                           std::move(why)});
        return t;
    }
    /// `nodes` with every materialized value replaced by its placeholder, except those in `keep`.
    std::vector<ir::NodePtr> substitute(const std::vector<ir::NodePtr>& nodes, const std::unordered_set<const ir::Node*>& keep) const {
        return ir::rewrite(nodes, [&](const ir::Node& n, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
            return keep.count(&n) ? nullptr : placeholder(&n);
        });
    }
    /// Appends the kernels and temporaries of a stage's partition; the stage's root r goes to `root_slots[r]`.
    void append(Partition stage, const std::vector<Slot>& root_slots) {
        const int offset = static_cast<int>(P.temps.size());
        for (TempValue& t : stage.temps) P.temps.push_back(std::move(t));
        const std::size_t n = stage.kernels.size();
        for (std::size_t k = 0; k < n; ++k) {
            FusedKernel& fk = stage.kernels[k];
            for (Slot& w : fk.writes) {
                if (w.kind == Slot::Kind::Temp) w.index += offset;
                else if (w.kind == Slot::Kind::Root) w = root_slots.at(static_cast<std::size_t>(w.index));
            }
            // The stage named its kernels "<base>_<position>" when it had several; the whole plan renames them.
            if (const std::string suffix = fmt::format("_{}", k); n > 1 && fk.name.ends_with(suffix))
                fk.name.resize(fk.name.size() - suffix.size());
            P.kernels.push_back(std::move(fk));
        }
        if (P.note.empty()) P.note = std::move(stage.note);
    }

private:
    std::unordered_map<const ir::Node*, int> temp_;
};

}  // namespace

bool has_product(const std::vector<ir::NodePtr>& roots) {
    for (const ir::Node* n : ir::topo_order(roots))
        if (ir::is_product(n->op())) return true;
    return false;
}

Partition partition_products(const std::vector<ir::NodePtr>& roots, const PartitionOptions& options,
                             const PlainPartition& plain) {
    const std::vector<ir::NodePtr> order = [&] {  // owning pointers, operands first
        std::unordered_map<const ir::Node*, ir::NodePtr> owner;
        for (const auto& r : roots) owner.emplace(r.get(), r);
        const std::vector<const ir::Node*> topo = ir::topo_order(roots);
        for (const ir::Node* n : topo)
            for (const auto& o : n->operands()) owner.emplace(o.get(), o);
        std::vector<ir::NodePtr> out;
        for (const ir::Node* n : topo) out.push_back(owner.at(n));
        return out;
    }();
    std::unordered_map<const ir::Node*, int> depth;
    std::unordered_set<const ir::Node*> read;  // nodes another node reads
    std::vector<std::vector<ir::NodePtr>> products;  // by depth - 1
    for (const ir::NodePtr& n : order) {
        int d = 0;
        for (const auto& o : n->operands()) {
            d = std::max(d, depth.at(o.get()));
            read.insert(o.get());
        }
        if (ir::is_product(n->op())) {
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
    for (std::size_t level = 0; level < products.size(); ++level) {
        // The operands this level's products read that must be computed first: a stage of their own.
        std::vector<ir::NodePtr> operands;
        std::vector<Slot> slots;
        for (const ir::NodePtr& m : products[level])
            for (const ir::NodePtr& x : m->operands()) {
                const ir::NodePtr& base = view_base(x);
                if (base->op() == ir::Op::Input || ir::is_product(base->op()) || A.temp_of(base.get()) >= 0) continue;
                const int t = A.materialize(base, fmt::format("an operand of {}, which reads its operands from memory", where_of(*m)));
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
            k.family = Family::MatMul;
            std::vector<Slot> writes;
            if (read.count(m.get()))
                writes.push_back(Slot{Slot::Kind::Temp, A.materialize(m, "a matrix product's result, read by another kernel")});
            if (const auto it = roots_of.find(m.get()); it != roots_of.end())
                for (std::size_t i : it->second) writes.push_back(Slot{Slot::Kind::Root, static_cast<int>(i)});
            const ir::NodePtr sub = A.substitute({m}, {m.get()}).at(0);
            k.outputs.assign(writes.size(), sub);
            k.writes = std::move(writes);
            k.name = "matmul";
            k.why = fmt::format("a matrix product ({}) is a kernel of its own: its operands come from memory",
                                short_location(m->loc()));
            A.P.kernels.push_back(std::move(k));
        }
    }
    // The roots that are not products themselves (those were written by their kernels).
    std::vector<ir::NodePtr> rest;
    std::vector<Slot> rest_slots;
    for (std::size_t i = 0; i < roots.size(); ++i) {
        if (ir::is_product(roots[i]->op())) continue;
        rest.push_back(roots[i]);
        rest_slots.push_back(Slot{Slot::Kind::Root, static_cast<int>(i)});
    }
    if (!rest.empty()) A.append(plain(A.substitute(rest, {}), stage_options), rest_slots);
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
