// plan_host: a graph's partition with each kernel's host schedule (host_plan.hpp); the explain text of a
// host plan.
#include "loom/codegen/llvm/host_plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "loom/codegen/plan/kernel_key.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/hash.hpp"

namespace loom::codegen {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
    return b <= 0 ? 0 : (a + b - 1) / b;
}

// Bytes of a dtype's compute value (float16 and bfloat16 compute in float32).
int compute_bytes(DType t) {
    return is_half(t) ? 4 : static_cast<int>(itemsize(t));
}

int pow2_floor(int v) {
    int p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}

// Lanes per vector for values of `bytes` bytes: the target's vector width, at least 4 and at most 32 (a
// power of two, so that groups of lanes tile the 256 lanes of the reduction order).
int lanes_for(int bytes, const HostTarget& t) {
    const int v = std::max(1, t.vector_bits / (8 * std::max(bytes, 1)));
    return std::clamp(pow2_floor(v), 4, 32);
}

std::size_t accumulator_compute_bytes(const ReduceOpPlan& op) {
    if (op.op == ir::Op::ArgMin || op.op == ir::Op::ArgMax) return 8;  // the index lanes are i64
    if (op.op == ir::Op::Any || op.op == ir::Op::All) return 1;
    const bool sumlike = op.op == ir::Op::Sum || op.op == ir::Op::Prod || op.op == ir::Op::Mean;
    if (sumlike && !is_float(op.in)) return 8;
    return static_cast<std::size_t>(compute_bytes(op.in));
}

// Whether the graph of `n` computes a transcendental function (a costly value to compute twice).
bool computes_transcendental(const ir::NodePtr& n) {
    for (const ir::Node* v : ir::topo_order({n}))
        if (ir::is_elementwise(v->op()) && ir::info(v->op()).cost == ir::Cost::Transcendental) return true;
    return false;
}

// Whether the graph of `root` uses node `v`.
bool uses(const ir::NodePtr& root, const ir::Node* v) {
    for (const ir::Node* n : ir::topo_order({root}))
        if (n == v) return true;
    return false;
}

// HostSchedule::keep: an element output holds a reduction's operand between passes when the output's graph
// uses that operand, the output's dtype stores its compute value exactly (the same dtype, not a half one,
// whose compute value is float32) and the operand computes a transcendental function (computing it once
// instead of twice is worth the store and the load). An output holds one operand: of the candidates, the
// latest stage's.
std::vector<int> kept_operands(const PlannedReduce& pr) {
    const std::size_t nred = pr.plan.ops.size();
    std::vector<int> keep(static_cast<std::size_t>(pr.plan.element_outputs), -1);
    for (std::size_t e = 0; e < keep.size(); ++e) {
        const ir::NodePtr& out = pr.element_roots.at(nred + e);
        for (int stage = pr.plan.stages - 1; stage >= 0 && keep[e] < 0; --stage)
            for (std::size_t j = 0; j < nred && keep[e] < 0; ++j) {
                const ir::NodePtr& operand = pr.element_roots.at(j);
                if (pr.plan.ops[j].stage != stage || operand->dtype() != out->dtype() ||
                    is_half(out->dtype()))
                    continue;
                if (!ir::is_elementwise(operand->op()) || !computes_transcendental(operand) ||
                    !uses(out, operand.get()))
                    continue;
                keep[e] = static_cast<int>(j);
            }
    }
    if (std::all_of(keep.begin(), keep.end(), [](int j) { return j < 0; })) keep.clear();
    return keep;
}

std::uint64_t with(std::uint64_t key, std::uint64_t more) {
    Hasher h;
    h.add(key);
    h.add(more);
    return h.digest();
}

bool strided_root(std::span<const Strides> root_strides, const Slot& w, const Shape& shape) {
    if (w.kind != Slot::Kind::Root || root_strides.empty()) return false;
    const Strides& st = root_strides[static_cast<std::size_t>(w.index)];
    return !st.empty() && !is_contiguous(shape, st);
}

// A root that is a strided view is written element by element by a pointwise kernel at its own index map;
// a reduction kernel writes its outputs contiguous, so such a root goes through a temporary and a pointwise
// kernel that stores it (as plan_fusion does for the GPU).
void route_strided_roots(Partition& P, std::span<const Strides> root_strides) {
    if (root_strides.empty()) return;
    const std::size_t nk = P.kernels.size();
    for (std::size_t k = 0; k < nk; ++k) {
        if (P.kernels[k].family != Family::Reduction) continue;
        std::vector<ir::NodePtr> outs = P.kernels[k].group.element_outputs;
        outs.insert(outs.end(), P.kernels[k].group.row_outputs.begin(), P.kernels[k].group.row_outputs.end());
        for (std::size_t j = 0; j < P.kernels[k].writes.size(); ++j) {
            const Slot w = P.kernels[k].writes[j];
            const ir::Node& v = *outs[j];
            if (!strided_root(root_strides, w, v.shape())) continue;
            const int t = static_cast<int>(P.temps.size());
            const std::string why =
                fmt::format("out{} is a strided view, which a reduction kernel does not write", w.index);
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
                Slot{Slot::Kind::Temp, t};  // before the push_back below, which may move the kernels
            P.kernels.push_back(std::move(store));
        }
    }
}

}  // namespace

HostTarget HostTarget::avx512() {
    HostTarget t;
    t.cpu = "x86-64-v4";
    t.features = "+avx512f,+avx512bw,+avx512dq,+avx512vl,+f16c,+fma,-avx512bf16,-avxneconvert";
    t.vector_bits = 512;
    t.f16c = true;
    return t;
}

std::uint64_t HostTarget::hash() const {
    Hasher h;
    h.add(std::string_view("loom.host.target.v2"));
    h.add(triple);
    h.add(cpu);
    h.add(features);
    h.add(static_cast<std::uint64_t>(vector_bits));
    h.add(f16c ? 1u : 0u);
    h.add(static_cast<std::uint64_t>(cache_bytes));
    return h.digest();
}

std::uint64_t HostSchedule::code_hash() const {
    Hasher h;
    h.add(std::string_view("loom.host.schedule.v3"));
    h.add(static_cast<std::uint64_t>(lanes));
    h.add(split ? 1u : 0u);
    h.add(stream ? 1u : 0u);
    h.add(static_cast<std::uint64_t>(keep.size()));
    for (int j : keep) h.add(static_cast<std::uint64_t>(static_cast<std::int64_t>(j)));
    return h.digest();
}

std::uint64_t HostSchedule::hash() const {
    Hasher h;
    h.add(code_hash());
    h.add(static_cast<std::uint64_t>(task));
    h.add(static_cast<std::uint64_t>(tasks));
    h.add(static_cast<std::uint64_t>(finish_task));
    h.add(static_cast<std::uint64_t>(finish_tasks));
    return h.digest();
}

std::string HostSchedule::to_string() const {
    if (split)
        return fmt::format(
            "{} lanes per vector; split: {} tasks of {} (row, chunk) pairs, then {} tasks of {} rows", lanes,
            tasks, task, finish_tasks, finish_task);
    std::string s = fmt::format("{} lanes per vector; {} tasks of {}", lanes, tasks, task);
    if (stream) s += "; non-temporal stores (the kernel moves more than the last-level cache holds)";
    for (std::size_t e = 0; e < keep.size(); ++e)
        if (keep[e] >= 0)
            s += fmt::format("; out{} holds the operand of reduction {} between its pass and the output pass",
                             e, keep[e]);
    return s;
}

bool HostKernel::operator==(const HostKernel& o) const {
    return pointwise.plan == o.pointwise.plan && reduce.plan == o.reduce.plan && reads == o.reads &&
           numel == o.numel && schedule == o.schedule && key == o.key;
}

bool host_streamed_output(const OperandPlan& out, int lanes) {
    return out.access == Access::Contiguous && static_cast<std::size_t>(lanes) * itemsize(out.dtype) >= 16;
}

HostSchedule host_pointwise_schedule(const PointwisePlan& plan, std::int64_t numel, std::int64_t inner,
                                     int widest_bytes, const HostTarget& target) {
    HostSchedule s;
    s.lanes = lanes_for(widest_bytes, target);
    s.task = kHostPointwiseTask;
    s.tasks = ceil_div(numel, s.task);
    const bool any = std::any_of(plan.outputs.begin(), plan.outputs.end(),
                                 [&](const OperandPlan& o) { return host_streamed_output(o, s.lanes); });
    const double moved = static_cast<double>(plan.bytes_per_element()) * static_cast<double>(numel);
    s.stream =
        any && s.lanes > 1 && inner >= kHostStreamRow && moved > static_cast<double>(target.cache_bytes);
    return s;
}

HostSchedule host_reduce_schedule(const PlannedReduce& pr, const HostTarget& target) {
    const ReducePlan& p = pr.plan;
    const ReduceBinding& b = pr.binding;
    std::size_t acc = 1;
    for (const auto& op : p.ops) acc = std::max(acc, accumulator_compute_bytes(op));
    HostSchedule s;
    s.lanes = lanes_for(static_cast<int>(acc), target);
    const std::int64_t O = b.outputs, L = b.length;
    const bool outer = p.schedule == ReduceSchedule::Outer;
    const std::int64_t C = outer ? kColumnChunk : kReduceChunk;
    const std::int64_t chunks = L == 0 ? 0 : ceil_div(L, C);
    const bool single = p.stages == 1 && p.element_outputs == 0;
    // Units of parallel work without splitting: rows (inner), vectors of output columns (outer).
    const std::int64_t units = outer ? ceil_div(O, s.lanes) : O;
    s.split = single && chunks >= 2 && units < kHostSplitRows;
    if (!outer && !s.split) s.keep = kept_operands(pr);
    if (O == 0) {
        s.tasks = 0;
        return s;
    }
    if (!s.split) {
        if (outer) {
            s.task =
                s.lanes * std::max<std::int64_t>(1, kHostReduceTask / std::max<std::int64_t>(L * s.lanes, 1));
        } else {
            s.task = std::max<std::int64_t>(1, kHostReduceTask / std::max<std::int64_t>(L, 1));
        }
        s.tasks = ceil_div(O, s.task);
        return s;
    }
    // (unit, chunk) pairs, then the rows (columns).
    const std::int64_t per_pair = outer ? C * s.lanes : C;
    s.task = std::max<std::int64_t>(1, kHostReduceTask / per_pair);
    s.tasks = ceil_div(units * chunks, s.task);
    s.finish_task = std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(chunks, 1));
    if (outer) s.finish_task *= s.lanes;
    s.finish_tasks = ceil_div(O, s.finish_task);
    return s;
}

namespace {

// Schedules every kernel of `P` for the host. Throws NotFusable from plan_reduce and for the groups the
// host runs better strictly.
HostPlan schedule(Partition P, std::span<const ir::Node* const> sources, std::span<const InputLayout> layouts,
                  const HostTarget& target, const Options& options, std::span<const Strides> root_strides) {
    route_strided_roots(P, root_strides);
    HostPlan plan;
    plan.options = options;
    plan.target = target;
    plan.sources = sources.size();
    const PlanTarget limits = target.plan_target();
    std::unordered_map<const ir::Node*, Slot> slot;
    for (std::size_t k = 0; k < sources.size(); ++k)
        slot.emplace(sources[k], Slot{Slot::Kind::Source, static_cast<int>(k)});
    std::unordered_map<const ir::Node*, InputLayout> temp_layout;
    for (std::size_t t = 0; t < P.temps.size(); ++t) {
        const ir::Node* ph = P.temps[t].placeholder.get();
        slot.emplace(ph, Slot{Slot::Kind::Temp, static_cast<int>(t)});
        temp_layout.emplace(ph, InputLayout{ph->dtype(), contiguous_strides(ph->shape()), false});
    }
    // The host reads with unaligned vector loads: every layout plans as not 16-byte aligned, so that the
    // plans (and the kernels) do not depend on the pointers' alignment.
    const LayoutOf layout_of = [&](const ir::Node& n) -> InputLayout {
        if (n.op() == ir::Op::Iota) {  // a virtual int64 tensor: stride 1 along its axis, 0 elsewhere
            Strides st(n.shape().size(), 0);
            st[static_cast<std::size_t>(n.ints().at(0))] = 1;
            return InputLayout{DType::Int64, st, false};
        }
        const auto it = slot.find(&n);
        if (it == slot.end())
            throw InternalError(fmt::format("plan_host(): input {} ({}) is neither a source nor a temporary",
                                            ir::describe(n), short_location(n.loc())));
        InputLayout l = it->second.kind == Slot::Kind::Temp
                            ? temp_layout.at(&n)
                            : layouts[static_cast<std::size_t>(it->second.index)];
        l.aligned16 = false;
        return l;
    };
    auto slot_of = [&](const ir::Node* in) {
        if (in->op() == ir::Op::Iota) return Slot{Slot::Kind::Index, 0};  // computed: no memory
        (void)layout_of(*in);  // throws for an input that is neither
        return slot.at(in);
    };
    const std::uint64_t base = with(options.hash(), target.hash());
    for (const FusedKernel& k : P.kernels) {
        HostKernel h;
        if (k.family == Family::Pointwise) {
            std::vector<InputLayout> ls;
            for (const ir::Node* in : pointwise_inputs(k.outputs)) {
                ls.push_back(layout_of(*in));
                h.reads.push_back(slot_of(in));
            }
            std::vector<Strides> out_strides;
            bool strided = false;
            for (std::size_t j = 0; j < k.outputs.size(); ++j) {
                const bool given = strided_root(root_strides, k.writes[j], k.outputs[j]->shape());
                out_strides.push_back(given ? root_strides[static_cast<std::size_t>(k.writes[j].index)]
                                            : contiguous_strides(k.outputs[j]->shape()));
                strided = strided || given;
            }
            h.pointwise =
                strided ? plan_pointwise(k.outputs, ls, limits, PointwiseUse::ReductionSpace, out_strides)
                        : plan_pointwise(k.outputs, ls, limits, PointwiseUse::ReductionSpace);
            h.numel = k.outputs[0]->numel();
            int widest = 1;
            for (const ir::Node* n : ir::topo_order(k.outputs))
                if (!ir::is_view(n->op())) widest = std::max(widest, compute_bytes(n->dtype()));
            const std::int64_t inner =
                h.pointwise.binding.extents.empty() ? h.numel : h.pointwise.binding.extents.back();
            h.schedule = host_pointwise_schedule(h.pointwise.plan, h.numel, inner, widest, target);
            h.key = with(with(kernel_key(k.outputs, h.pointwise.plan), h.schedule.code_hash()), base);
        } else if (k.family == Family::MatMul) {
            // No LLVM emitter yet: the runtime evaluates the product on the CPU reference, which reads the
            // operands in place through their views (product_inputs order); nothing is built, so no key.
            for (const ir::Node* in : product_inputs(k)) h.reads.push_back(slot_of(in));
        } else {
            h.reduce = plan_reduce(k.group, layout_of, limits);
            const ReducePlan& rp = h.reduce.plan;
            const ReduceBinding& rb = h.reduce.binding;
            const bool multi = rp.stages > 1 || rp.element_outputs > 0;
            const std::int64_t chunks = rb.length == 0 ? 0 : (rb.length + kReduceChunk - 1) / kReduceChunk;
            if (multi && rp.schedule == ReduceSchedule::Inner && chunks > 2 && rb.outputs < kHostSplitRows)
                throw NotFusable(fmt::format(
                    "{} rows of {} elements are too few to share among the cores one row per task; "
                    "each reduction runs as its own kernel, its rows' chunks shared among tasks",
                    rb.outputs, rb.length));
            for (const ir::Node* in : h.reduce.inputs) h.reads.push_back(slot_of(in));
            h.schedule = host_reduce_schedule(h.reduce, target);
            Hasher kh;
            kh.add(0x686f7374726564ull);  // "hostred"
            kh.add(rp.hash());
            kh.add(structural_key(h.reduce.element_roots));
            if (!h.reduce.row_roots.empty()) kh.add(structural_key(h.reduce.row_roots));
            h.key = with(with(kh.digest(), h.schedule.code_hash()), base);
        }
        plan.kernels.push_back(std::move(h));
    }
    plan.partition = std::move(P);
    return plan;
}

std::string reduction_text(const HostPlan& plan, std::size_t i) {
    const FusedKernel& k = plan.partition.kernels[i];
    const HostKernel& h = plan.kernels[i];
    const ReducePlan& rp = h.reduce.plan;
    std::string red;
    for (std::size_t j = 0; j < k.members.size(); ++j)
        red += fmt::format(" {} stage {}", where_of(*k.members[j]), rp.ops[j].stage);
    return fmt::format(
        "kernel {}  {}   reduction of {} over axes [{}]:{}\n          {} order, {} element output(s), {} row "
        "output(s); {}\n",
        i, k.name, loom::to_string(k.group.reductions[0]->operand(0)->shape()),
        fmt::join(k.group.reductions[0]->ints(), ", "), red,
        rp.schedule == ReduceSchedule::Inner ? "row (256 lanes of runs of 4 per chunk of 8192)"
                                             : "column (chunks of 256 in sequence)",
        rp.element_outputs, k.group.row_outputs.size(), h.schedule.to_string());
}

std::string product_text(const HostPlan& plan, std::size_t i) {
    const FusedKernel& k = plan.partition.kernels[i];
    const HostKernel& h = plan.kernels[i];
    const ir::Node& m = *product_of(k.outputs);
    std::string reads;
    const auto ins = product_inputs(k);
    for (std::size_t j = 0; j < ins.size(); ++j)
        reads +=
            fmt::format("{}{} {} [{}]", j ? ", " : "", ins[j]->label().empty() ? "input" : ins[j]->label(),
                        ir::describe(*ins[j]), to_string(h.reads[j]));
    std::vector<std::string> writes;
    for (const Slot& w : k.writes) writes.push_back(to_string(w));
    return fmt::format(
        "kernel {}  {}   matmul {} x {} -> {}: {}\n          runs on the CPU reference (the matmul family "
        "has no LLVM emitter); reads {}; writes {}\n",
        i, k.name, ir::describe(*m.operand(0)), ir::describe(*m.operand(1)), ir::describe(m), where_of(m),
        reads, fmt::join(writes, ", "));
}

std::string pointwise_text(const HostPlan& plan, std::size_t i) {
    const FusedKernel& k = plan.partition.kernels[i];
    const HostKernel& h = plan.kernels[i];
    std::string nodes;
    for (const ir::Node* n : ir::topo_order(k.outputs))
        if (ir::is_elementwise(n->op()) || ir::is_view(n->op())) nodes += fmt::format(" {}", where_of(*n));
    std::string reads;
    const auto ins = pointwise_inputs(k.outputs);
    for (std::size_t j = 0; j < ins.size(); ++j)
        reads +=
            fmt::format("{}{} {} [{}]", j ? ", " : "", ins[j]->label().empty() ? "input" : ins[j]->label(),
                        ir::describe(*ins[j]), to_string(h.reads[j]));
    std::vector<std::string> writes;
    for (const Slot& w : k.writes) writes.push_back(to_string(w));
    return fmt::format("kernel {}  {}   pointwise {}:{}\n          reads {}; writes {}; {} elements\n", i,
                       k.name, loom::to_string(k.outputs[0]->shape()), nodes,
                       reads.empty() ? std::string("nothing") : reads, fmt::join(writes, ", "),
                       h.schedule.to_string());
}

}  // namespace

std::uint64_t HostPlan::hash() const {
    Hasher h;
    h.add(partition.hash());
    h.add(options.hash());
    h.add(target.hash());
    for (const HostKernel& k : kernels) {
        h.add(k.key);
        h.add(k.schedule.hash());
    }
    h.add(sources);
    for (int r : reads) h.add(static_cast<std::uint64_t>(r));
    return h.digest();
}

std::string HostPlan::to_string() const {
    std::string text = fmt::format("host     LLVM back end: {} ({}, {}-bit vectors)\n", target.cpu,
                                   target.triple, target.vector_bits);
    if (!partition.note.empty()) text += fmt::format("plan     {}\n", partition.note);
    for (std::size_t i = 0; i < partition.kernels.size(); ++i) {
        const FusedKernel& k = partition.kernels[i];
        switch (k.family) {
            case Family::Pointwise:
                text += pointwise_text(*this, i);
                break;
            case Family::Reduction:
                text += reduction_text(*this, i);
                break;
            case Family::MatMul:
                text += product_text(*this, i);
                break;
        }
        if (!k.why.empty()) text += fmt::format("boundary  kernel {}: {}\n", i, k.why);
    }
    for (std::size_t t = 0; t < partition.temps.size(); ++t)
        text += fmt::format("materialize t{} = {} {}: {}\n", t, where_of(*partition.temps[t].value),
                            loom::to_string(partition.temps[t].value->shape()), partition.temps[t].why);
    return text;
}

HostPlan plan_host(const std::vector<ir::NodePtr>& roots, std::span<const ir::Node* const> sources,
                   std::span<const InputLayout> layouts, const HostTarget& target, const Options& options,
                   std::string_view name, const FusionCostModel* cost,
                   std::span<const Strides> root_strides) {
    if (sources.size() != layouts.size())
        throw InternalError(
            fmt::format("plan_host(): {} sources with {} layouts", sources.size(), layouts.size()));
    if (!root_strides.empty() && root_strides.size() != roots.size())
        throw InternalError(
            fmt::format("plan_host(): {} root layouts for {} roots", root_strides.size(), roots.size()));
    HostPlan plan = schedule_partition(roots, options, name, cost, "plan_host", [&](Partition p) {
        return schedule(std::move(p), sources, layouts, target, options, root_strides);
    });
    plan.reads = sources_read(roots, sources);
    return plan;
}

}  // namespace loom::codegen
