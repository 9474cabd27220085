// plan_host: a graph's partition with each kernel's host schedule (host_plan.hpp); the explain text of a
// host plan.
#include "loom/codegen/llvm/host_plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "loom/codegen/llvm/host_family.hpp"
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

// What one kernel of a plan_host call is scheduled for.
struct HostRequest {
    const HostTarget& target;
    std::uint64_t base;  // the options' and the target's hash, in every key
};

HostKernel schedule_pointwise(const FusedKernel& k, const ScheduleInputs& in, const HostRequest& r) {
    HostKernel h;
    std::vector<InputLayout> ls;
    for (const ir::Node* input : pointwise_inputs(k.outputs)) {
        ls.push_back(in.layout(*input));
        h.reads.push_back(in.slot(input));
    }
    bool strided = false;
    const std::vector<Strides> out_strides = in.output_strides(k, &strided);
    const PlanTarget limits = r.target.plan_target();
    HostPointwise s;
    s.planned = strided ? plan_pointwise(k.outputs, ls, limits, PointwiseUse::ReductionSpace, out_strides)
                        : plan_pointwise(k.outputs, ls, limits, PointwiseUse::ReductionSpace);
    const std::int64_t numel = s.planned.binding.numel;
    int widest = 1;
    for (const ir::Node* n : ir::topo_order(k.outputs))
        if (!ir::is_view(n->op())) widest = std::max(widest, compute_bytes(n->dtype()));
    const std::int64_t inner = s.planned.binding.extents.empty() ? numel : s.planned.binding.extents.back();
    s.schedule = host_pointwise_schedule(s.planned.plan, numel, inner, widest, r.target);
    h.key = with(with(kernel_key(k.outputs, s.planned.plan), s.schedule.code_hash()), r.base);
    h.schedule = std::move(s);
    return h;
}

// Throws NotFusable from plan_reduce, and for the groups the host runs better strictly.
HostKernel schedule_reduction(const FusedKernel& k, const ScheduleInputs& in, const HostRequest& r) {
    HostKernel h;
    HostReduction s;
    s.planned = plan_reduce(k.group, in.layout_of(), r.target.plan_target());
    const ReducePlan& rp = s.planned.plan;
    const ReduceBinding& rb = s.planned.binding;
    const bool multi = rp.stages > 1 || rp.element_outputs > 0;
    const std::int64_t chunks = rb.length == 0 ? 0 : (rb.length + kReduceChunk - 1) / kReduceChunk;
    if (multi && rp.schedule == ReduceSchedule::Inner && chunks > 2 && rb.outputs < kHostSplitRows)
        throw NotFusable(
            fmt::format("{} rows of {} elements are too few to share among the cores one row per "
                        "task; each reduction runs as its own kernel, its rows' chunks shared "
                        "among tasks",
                        rb.outputs, rb.length));
    for (const ir::Node* input : s.planned.inputs) h.reads.push_back(in.slot(input));
    s.schedule = host_reduce_schedule(s.planned, r.target);
    Hasher kh;
    kh.add(0x686f7374726564ull);  // "hostred"
    kh.add(rp.hash());
    kh.add(structural_key(s.planned.element_roots));
    if (!s.planned.row_roots.empty()) kh.add(structural_key(s.planned.row_roots));
    h.key = with(with(kh.digest(), s.schedule.code_hash()), r.base);
    h.schedule = std::move(s);
    return h;
}

// A family without an LLVM emitter: the runtime evaluates the kernel on the CPU reference, which reads its
// inputs in place through their views (graph_inputs order); nothing is built, so no key.
HostKernel schedule_on_reference(const FusedKernel& k, const ScheduleInputs& in) {
    HostKernel h;
    for (const ir::Node* input : graph_inputs(k)) h.reads.push_back(in.slot(input));
    bool checks = false;
    for (const ir::Node* n : ir::topo_order(k.outputs))
        checks = checks || (ir::is_scatter(n->op()) && ir::scatter_mode(*n) == ir::IndexMode::Checked);
    h.schedule = HostReference{k.family, checks};
    return h;
}

// A product kernel: the host's product family when plan_host_product takes it, else the reference.
HostKernel schedule_product(const FusedKernel& k, const ScheduleInputs& in, const HostRequest& r) {
    std::optional<HostProduct> p = plan_host_product(k, in.layout_of(), r.target);
    if (!p) return schedule_on_reference(k, in);
    std::vector<Slot> reads;
    for (const ir::Node* input : p->inputs)
        reads.push_back(input == p->accumulators.get() ? Slot{Slot::Kind::Index, 0} : in.slot(input));
    const std::uint64_t key = with(p->code_hash(), r.base);
    // Built with its schedule (not a default schedule assigned over), which also keeps GCC from a false
    // maybe-uninitialized report on the default alternative's destruction.
    return HostKernel{.schedule = std::move(*p), .reads = std::move(reads), .key = key};
}

HostKernel schedule_kernel(const FusedKernel& k, const ScheduleInputs& in, const HostRequest& r) {
    switch (k.family) {
        case Family::Pointwise:
            return schedule_pointwise(k, in, r);
        case Family::Tiled:
            break;
        case Family::Reduction:
            return schedule_reduction(k, in, r);
        case Family::MatMul:
            return schedule_product(k, in, r);
        case Family::Attention:  // no LLVM emitter yet: the reference evaluates the node, in the same order
        case Family::Scan:
        case Family::Scatter:
            return schedule_on_reference(k, in);
    }
    throw InternalError(
        fmt::format("plan_host(): kernel {} of the partition is of family {}, which the host "
                    "does not schedule",
                    k.name, family_name(k.family)));
}

// The host schedule of a kernel that has one (pointwise and reduction kernels).
const HostSchedule* schedule_of(const HostKernel& k) {
    if (const auto* s = std::get_if<HostPointwise>(&k.schedule)) return &s->schedule;
    if (const auto* s = std::get_if<HostReduction>(&k.schedule)) return &s->schedule;
    return nullptr;
}

}  // namespace

Family HostKernel::family() const {
    if (std::holds_alternative<HostPointwise>(schedule)) return Family::Pointwise;
    if (std::holds_alternative<HostReduction>(schedule)) return Family::Reduction;
    if (std::holds_alternative<HostProduct>(schedule)) return Family::MatMul;
    return std::get<HostReference>(schedule).family;
}

void HostKernel::throw_wrong_family(Family f) {
    throw InternalError(fmt::format("HostKernel::as(): the kernel is of family {}", family_name(f)));
}

bool HostKernel::operator==(const HostKernel& o) const {
    if (schedule.index() != o.schedule.index() || reads != o.reads || key != o.key) return false;
    if (const auto* s = std::get_if<HostPointwise>(&schedule)) {
        const auto& t = std::get<HostPointwise>(o.schedule);
        return s->planned.plan == t.planned.plan && s->schedule == t.schedule;
    }
    if (const auto* s = std::get_if<HostReduction>(&schedule)) {
        const auto& t = std::get<HostReduction>(o.schedule);
        return s->planned.plan == t.planned.plan && s->schedule == t.schedule;
    }
    if (const auto* s = std::get_if<HostProduct>(&schedule)) return *s == std::get<HostProduct>(o.schedule);
    return true;
}

std::uint64_t HostPlan::hash() const {
    Hasher h;
    h.add(partition.hash());
    h.add(options.hash());
    h.add(target.hash());
    for (const HostKernel& k : kernels) {
        h.add(k.key);
        if (const HostSchedule* s = schedule_of(k)) h.add(s->hash());
        if (const auto* p = std::get_if<HostProduct>(&k.schedule)) h.add(p->hash());
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
        text += std::visit(
            [&](const auto& s) { return HostFamily<std::decay_t<decltype(s)>>::explain(*this, i, s); },
            kernels[i].schedule);
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
    ScheduleRequest r;
    r.api = "plan_host";
    r.roots = &roots;
    r.sources = sources;
    r.layouts = layouts;
    r.options = options;
    r.name = name;
    r.cost = cost;
    r.root_strides = root_strides;
    // The host reads with unaligned vector loads: every layout plans as not 16-byte aligned, so that the
    // plans (and the kernels) do not depend on the pointers' alignment.
    r.aligned = false;
    // The host's products pack their operands from strided views: a prologue is computed first.
    r.operands_from_memory = true;
    const HostRequest request{target, with(options.hash(), target.hash())};
    HostPlan plan = schedule_plan<HostPlan>(
        r, [&](const FusedKernel& k, const ScheduleInputs& in) { return schedule_kernel(k, in, request); });
    plan.target = target;
    return plan;
}

}  // namespace loom::codegen
