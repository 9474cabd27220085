// The schedule both back ends share (plan/schedule.hpp): the inputs' slots and layouts, the strided roots
// routed through temporaries, the temporaries placed, the sources read, the partition for a request.
#include "loom/codegen/plan/schedule.hpp"

#include <fmt/format.h>

#include <unordered_set>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"

namespace loom::codegen {

ScheduleInputs::ScheduleInputs(const Partition& P, const ScheduleRequest& request) : request_(request) {
    for (std::size_t k = 0; k < request.sources.size(); ++k) {
        InputLayout l = request.layouts[k];
        l.aligned16 = l.aligned16 && request.aligned;
        inputs_.emplace(request.sources[k], std::pair{Slot{Slot::Kind::Source, static_cast<int>(k)}, l});
    }
    for (std::size_t t = 0; t < P.temps.size(); ++t) {
        const ir::Node* ph = P.temps[t].placeholder.get();
        const InputLayout l{ph->dtype(), contiguous_strides(ph->shape()), request.aligned};
        inputs_.emplace(ph, std::pair{Slot{Slot::Kind::Temp, static_cast<int>(t)}, l});
    }
}

InputLayout ScheduleInputs::layout(const ir::Node& n) const {
    if (n.op() == ir::Op::Iota) {  // a virtual int64 tensor: stride 1 along its axis, 0 elsewhere
        Strides st(n.shape().size(), 0);
        st[static_cast<std::size_t>(n.ints().at(0))] = 1;
        return InputLayout{DType::Int64, st, request_.aligned};
    }
    const auto it = inputs_.find(&n);
    if (it == inputs_.end())
        throw InternalError(fmt::format("{}(): input {} ({}) is neither a source nor a temporary",
                                        request_.api, ir::describe(n), short_location(n.loc())));
    return it->second.second;
}

Slot ScheduleInputs::slot(const ir::Node* input) const {
    if (input->op() == ir::Op::Iota) return Slot{Slot::Kind::Index, 0};  // computed: no memory
    (void)layout(*input);  // throws for an input that is neither
    return inputs_.at(input).first;
}

const Strides* ScheduleInputs::strided_root(const Slot& w, const Shape& shape) const {
    if (w.kind != Slot::Kind::Root || request_.root_strides.empty()) return nullptr;
    const Strides& st = request_.root_strides[static_cast<std::size_t>(w.index)];
    return st.empty() || is_contiguous(shape, st) ? nullptr : &st;
}

std::vector<Strides> ScheduleInputs::output_strides(const FusedKernel& k, bool* strided) const {
    std::vector<Strides> out;
    bool any = false;
    for (std::size_t j = 0; j < k.outputs.size(); ++j) {
        const Shape& shape = k.outputs[j]->shape();
        const Strides* st = strided_root(k.writes[j], shape);
        out.push_back(st ? *st : contiguous_strides(shape));
        any = any || st;
    }
    if (strided) *strided = any;
    return out;
}

void route_strided_roots(Partition& P, std::span<const Strides> root_strides, std::uint32_t view_writers) {
    if (root_strides.empty()) return;
    const std::size_t nk = P.kernels.size();
    for (std::size_t k = 0; k < nk; ++k) {
        if (view_writers & family_bit(P.kernels[k].family)) continue;
        const std::vector<ir::NodePtr> outs = P.kernels[k].written();
        for (std::size_t j = 0; j < P.kernels[k].writes.size(); ++j) {
            const Slot w = P.kernels[k].writes[j];
            if (w.kind != Slot::Kind::Root) continue;
            const ir::Node& v = *outs[j];
            const Strides& st = root_strides[static_cast<std::size_t>(w.index)];
            if (st.empty() || is_contiguous(v.shape(), st)) continue;
            const int t = static_cast<int>(P.temps.size());
            const std::string why = fmt::format("out{} is a strided view, which a {} kernel does not write",
                                                w.index, family_name(P.kernels[k].family));
            P.temps.push_back(
                {outs[j],
                 ir::input(v.dtype(), v.shape(), fmt::format("t{} (out{})", t, w.index), {}, v.loc()), why});
            FusedKernel store;
            store.family = Family::Pointwise;
            store.name = P.kernels[k].name + "_store";
            for (int n = 1;;
                 ++n) {  // one name per kernel: the kernels of a plan may be compiled as one module
                bool taken = false;
                for (const FusedKernel& other : P.kernels) taken = taken || other.name == store.name;
                if (!taken) break;
                store.name = fmt::format("{}_store{}", P.kernels[k].name, n);
            }
            store.outputs = {P.temps.back().placeholder};
            store.writes = {w};
            store.why = fmt::format("{}: written through t{}", why, t);
            P.kernels[k].writes[j] =
                Slot{Slot::Kind::Temp, t};  // before the push_back, which may move kernels
            P.kernels.push_back(std::move(store));
        }
    }
}

void place_temporaries(ScheduledPartition& plan) {
    plan.temps.clear();
    plan.temp_bytes = 0;
    for (const TempValue& t : plan.partition.temps) {
        plan.temps.push_back({t.value->shape(), t.value->dtype(), plan.temp_bytes});
        const std::size_t bytes = static_cast<std::size_t>(t.value->numel()) * itemsize(t.value->dtype());
        plan.temp_bytes += (bytes + 255) / 256 * 256;
    }
}

std::vector<int> sources_read(const std::vector<ir::NodePtr>& roots,
                              std::span<const ir::Node* const> sources) {
    std::unordered_set<const ir::Node*> in_graph;
    for (const ir::Node* n : ir::topo_order(roots))
        if (n->op() == ir::Op::Input) in_graph.insert(n);
    std::vector<int> reads;
    for (std::size_t k = 0; k < sources.size(); ++k)
        if (in_graph.count(sources[k])) reads.push_back(static_cast<int>(k));
    return reads;
}

namespace detail {

Partition partition_for(const ScheduleRequest& r, bool strict, const std::string& strict_reason) {
    PartitionOptions po;
    po.fusion = r.options.fusion;
    po.half_operands_from_memory = r.half_operands_from_memory;
    po.operands_from_memory = r.operands_from_memory;
    po.name = std::string(r.name);
    po.cost = r.cost;
    po.strict = strict;
    po.strict_reason = strict_reason;
    return partition(*r.roots, po);
}

void throw_unfused_not_plannable(std::string_view api, const NotFusable& e) {
    throw InternalError(fmt::format("{}(): an unfused kernel is not plannable: {}", api, e.what()));
}

}  // namespace detail

}  // namespace loom::codegen
