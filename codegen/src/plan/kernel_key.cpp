// Structural keys for the in-memory kernel cache (see kernel_key.hpp).
#include "loom/codegen/plan/kernel_key.hpp"

#include <bit>
#include <unordered_map>

#include "loom/ir/graph.hpp"
#include "loom/ir/hash.hpp"

namespace loom::codegen {

std::uint64_t structural_key(const std::vector<ir::NodePtr>& outputs) {
    Hasher h;
    h.add(std::string_view("loom.pointwise.v1"));
    const auto order = ir::topo_order(outputs);
    std::unordered_map<const ir::Node*, std::uint64_t> pos;
    std::uint64_t inputs = 0;
    for (const ir::Node* n : order) {
        pos.emplace(n, pos.size());
        h.add(static_cast<std::uint64_t>(n->op()));
        h.add(static_cast<std::uint64_t>(n->dtype()));
        h.add(static_cast<std::uint64_t>(n->rank()));
        switch (ir::info(n->op()).kind) {
            case ir::OpKind::Leaf:
                if (n->op() == ir::Op::Input) h.add(inputs++);
                if (n->op() == ir::Op::Constant) {
                    const ir::ScalarValue& v = n->value();
                    h.add(v.is_float ? std::bit_cast<std::uint64_t>(v.f) : static_cast<std::uint64_t>(v.i));
                }
                break;
            case ir::OpKind::Unary:
            case ir::OpKind::Binary:
            case ir::OpKind::Ternary:
            case ir::OpKind::View:
            case ir::OpKind::Reduce:
            case ir::OpKind::Product:
            case ir::OpKind::Gather:
            case ir::OpKind::Attention:
            case ir::OpKind::Scan:
            case ir::OpKind::Scatter:
                h.add(n->operands().size());
                for (const auto& o : n->operands()) h.add(pos.at(o.get()));
                if (ir::is_attention(n->op())) h.add(std::bit_cast<std::uint64_t>(n->value().f));
                if (ir::info(n->op()).kind == ir::OpKind::Reduce || ir::is_gather(n->op()) ||
                    ir::is_attention(n->op()) || ir::is_scan(n->op()) || ir::is_scatter(n->op())) {
                    for (auto a : n->ints()) h.add(static_cast<std::uint64_t>(a));
                    h.add(n->keepdims() ? 1u : 0u);
                }
                break;
        }
    }
    h.add(outputs.size());
    for (const auto& o : outputs) h.add(pos.at(o.get()));
    return h.digest();
}

std::uint64_t kernel_key(const std::vector<ir::NodePtr>& outputs, const PointwisePlan& plan) {
    Hasher h;
    h.add(structural_key(outputs));
    h.add(plan.hash());
    return h.digest();
}

}  // namespace loom::codegen
