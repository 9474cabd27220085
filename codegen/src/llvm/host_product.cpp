// The host's matrix products (HostProduct, host_plan.hpp): planning a product kernel of the partition (its
// operands as strided views, its epilogue as a pointwise plan over a placeholder for the product, the micro
// tile, blocks and tasks), and its family object (host_family.hpp): explain text, passes, workspaces and
// parameters. The emitter is emit_product.cpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "loom/codegen/llvm/host_family.hpp"
#include "loom/codegen/plan/kernel_key.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/hash.hpp"
#include "loom/ir/view.hpp"

namespace loom::codegen {

namespace {

std::string where_of(const ir::Node& n) {
    return fmt::format("{} ({})", ir::op_name(n.op()), short_location(n.loc()));
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
    return b <= 0 ? 0 : (a + b - 1) / b;
}

// An operand of the product as a strided view of one input (its broadcasts, permutes, slices and reshapes
// composed for the input's layout, ir::compose_views); none when the operand is computed, or a reshape has no
// strides for the input's layout.
std::optional<ir::StridedView> operand_view(const ir::Node& x, const LayoutOf& layout_of) {
    return ir::view_of_input(x, [&](const ir::Node& n) { return layout_of(n).strides; });
}

DType accumulation_type(DType in) {
    if (in == DType::Int8) return DType::Int32;
    if (in == DType::Float64) return DType::Float64;
    return DType::Float32;  // float16, bfloat16 (widened exactly), float32
}

// Whether the epilogue reads the placeholder element by element at the output's own position: every output
// has the product's element count and every use of the placeholder is an elementwise op or a reshape (a
// product's dropped vector axis) of it.
bool reads_in_place(const std::vector<ir::NodePtr>& outputs, const ir::Node* placeholder,
                    std::int64_t numel) {
    for (const ir::NodePtr& o : outputs)
        if (o->numel() != numel) return false;
    for (const ir::Node* n : ir::topo_order(outputs))
        for (const ir::NodePtr& x : n->operands())
            if (x.get() == placeholder && !ir::is_elementwise(n->op()) && n->op() != ir::Op::Reshape)
                return false;
    return true;
}

// The product node of a product kernel's graph.
ir::NodePtr product_node(const std::vector<ir::NodePtr>& outputs) {
    for (const ir::NodePtr& o : outputs)
        if (ir::is_product(o->op())) return o;
    for (const ir::Node* n : ir::topo_order(outputs))
        for (const ir::NodePtr& x : n->operands())
            if (ir::is_product(x->op())) return x;
    return nullptr;
}

}  // namespace

int HostProduct::block_rows() const {
    return kHostProductBlockPanels * mr;
}

int HostProduct::block_cols() const {
    return kHostProductBlockPanels * nr;
}

std::uint64_t HostProduct::code_hash() const {
    Hasher h;
    h.add(std::string_view("loom.host.product.v1"));
    h.add(static_cast<std::uint64_t>(in));
    h.add(static_cast<std::uint64_t>(acc));
    h.add(static_cast<std::uint64_t>(rank));
    h.add(static_cast<std::uint64_t>(lanes));
    h.add(static_cast<std::uint64_t>(mr));
    h.add(static_cast<std::uint64_t>(nr));
    h.add((a_batched ? 1u : 0u) | (b_batched ? 2u : 0u));
    h.add(epilogue.plan.hash());
    h.add(structural_key(epilogue_outputs));
    return h.digest();
}

std::uint64_t HostProduct::hash() const {
    Hasher h;
    h.add(code_hash());
    for (std::int64_t v : {M, N, K, batches, chunks, a_offset, b_offset, pack_task, pack_units, pack_tasks,
                           row_blocks, col_blocks, tasks})
        h.add(static_cast<std::uint64_t>(v));
    for (std::int64_t v : a_strides) h.add(static_cast<std::uint64_t>(v));
    for (std::int64_t v : b_strides) h.add(static_cast<std::uint64_t>(v));
    h.add((a_batched ? 1u : 0u) | (b_batched ? 2u : 0u) | (swapped ? 4u : 0u));
    return h.digest();
}

bool HostProduct::operator==(const HostProduct& o) const {
    return in == o.in && acc == o.acc && rank == o.rank && lanes == o.lanes && mr == o.mr && nr == o.nr &&
           M == o.M && N == o.N && K == o.K && batches == o.batches && chunks == o.chunks &&
           batch == o.batch && a_strides == o.a_strides && b_strides == o.b_strides &&
           a_offset == o.a_offset && b_offset == o.b_offset && a_batched == o.a_batched &&
           b_batched == o.b_batched && swapped == o.swapped && inputs == o.inputs &&
           epilogue.plan == o.epilogue.plan && pack_task == o.pack_task && pack_units == o.pack_units &&
           pack_tasks == o.pack_tasks && row_blocks == o.row_blocks && col_blocks == o.col_blocks &&
           tasks == o.tasks && structural_key(epilogue_outputs) == structural_key(o.epilogue_outputs);
}

std::string HostProduct::to_string() const {
    const std::string chunk_text =
        chunks <= 1
            ? fmt::format("K {} in one chunk", K)
            : fmt::format("K {} in {} chunks of {}, combined by the pairwise tree through a workspace", K,
                          chunks, kProductChunk);
    return fmt::format(
        "{}x{} micro tiles ({} vectors of {} lanes per row, each lane its own output column; one fma per k "
        "in "
        "ascending k from +0), blocks of {}x{} outputs stepping {} k at a time, the accumulators stored in "
        "the block's scratch tile between steps and reloaded; {}; operands packed into panels first "
        "({} tasks of {} panels), then {} tasks of one block{}",
        mr, nr, nr / lanes, lanes, block_rows(), block_cols(), kHostProductDepth, chunk_text, pack_tasks,
        pack_task, tasks,
        swapped ? "; a matrix times a vector, computed as the vector times the matrix's transpose" : "");
}

std::optional<HostProduct> plan_host_product(const FusedKernel& k, const LayoutOf& layout_of,
                                             const HostTarget& target) {
    const ir::NodePtr m = product_node(k.outputs);
    if (!m || m->op() != ir::Op::MatMul) return std::nullopt;
    HostProduct p;
    p.product = m;
    p.in = m->operand(0)->dtype();
    p.acc = accumulation_type(p.in);
    p.rank = m->rank();
    const std::size_t r = static_cast<std::size_t>(p.rank);
    p.M = m->shape()[r - 2];
    p.N = m->shape()[r - 1];
    p.K = m->operand(0)->shape()[r - 1];
    p.batch.assign(m->shape().begin(), m->shape().end() - 2);
    for (std::int64_t e : p.batch) p.batches *= e;
    p.chunks = product_chunks(p.K);
    const std::optional<ir::StridedView> a = operand_view(*m->operand(0), layout_of),
                                         b = operand_view(*m->operand(1), layout_of);
    if (!a || !b) return std::nullopt;  // the partition computes other operands first
    p.a_strides = a->strides;
    p.b_strides = b->strides;
    p.a_offset = a->offset;
    p.b_offset = b->offset;
    if (p.N == 1 && p.M > 1) {
        // A matrix times a vector: the kernel computes the transposed product, the vector times the matrix's
        // transpose (C^T = B^T A^T: M' = 1, N' = M), whose outputs lie in the same order. Each output's sum
        // is the same fma chain (a product of two values does not depend on their order), and a micro tile
        // then has one row of outputs in 6 instead of one column in 16.
        p.swapped = true;
        std::swap(p.M, p.N);
        std::swap(p.a_strides, p.b_strides);
        std::swap(p.a_offset, p.b_offset);
        std::swap(p.a_strides[r - 2], p.a_strides[r - 1]);
        std::swap(p.b_strides[r - 2], p.b_strides[r - 1]);
    }
    for (std::size_t d = 0; d + 2 < r; ++d) {
        p.a_batched = p.a_batched || (p.batch[d] > 1 && p.a_strides[d] != 0);
        p.b_batched = p.b_batched || (p.batch[d] > 1 && p.b_strides[d] != 0);
    }
    // The micro tile: kHostProductRows rows of two vectors of the target's widest registers.
    const int acc_bytes = static_cast<int>(itemsize(p.acc));
    p.lanes = std::clamp(target.vector_bits / (8 * acc_bytes), 2, 16);
    p.mr = kHostProductRows;
    p.nr = 2 * p.lanes;

    // The epilogue: the kernel's outputs over a placeholder holding the accumulators (of the accumulation
    // type; a half product is its accumulator rounded once, as a cast to the half dtype says).
    p.accumulators = ir::input(p.acc, m->shape(), "accumulators", {}, m->loc());
    const ir::NodePtr value = p.acc == m->dtype() ? p.accumulators : ir::cast(p.accumulators, m->dtype());
    p.epilogue_outputs =
        ir::rewrite(k.outputs, [&](const ir::Node& n, const std::vector<ir::NodePtr>&) -> ir::NodePtr {
            return &n == m.get() ? value : nullptr;
        });
    if (!reads_in_place(p.epilogue_outputs, p.accumulators.get(), m->numel())) return std::nullopt;
    p.inputs = {a->base, b->base};
    std::vector<InputLayout> layouts;
    for (const ir::Node* in : pointwise_inputs(p.epilogue_outputs)) {
        p.inputs.push_back(in);
        layouts.push_back(in == p.accumulators.get()
                              ? InputLayout{p.acc, contiguous_strides(m->shape()), false}
                              : layout_of(*in));
    }
    try {
        p.epilogue =
            plan_pointwise(p.epilogue_outputs, layouts, target.plan_target(), PointwiseUse::ReductionSpace);
    } catch (const Error&) {
        return std::nullopt;  // outputs of different shapes: the reference runs the kernel
    }

    // Tasks: about 64 Ki values packed per task; one block of outputs per task.
    const std::int64_t a_units = (p.a_batched ? p.batches : 1) * p.row_panels(),
                       b_units = (p.b_batched ? p.batches : 1) * p.col_panels();
    p.pack_units = p.M == 0 || p.N == 0 || p.batches == 0 ? 0 : a_units + b_units;
    p.pack_task = std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(p.K * p.nr, 1));
    p.pack_tasks = ceil_div(p.pack_units, p.pack_task);
    p.row_blocks = ceil_div(p.M, p.block_rows());
    p.col_blocks = ceil_div(p.N, p.block_cols());
    p.tasks = p.batches * p.row_blocks * p.col_blocks;
    return p;
}

std::size_t host_product_header_bytes(const HostProduct& p) {
    return kProductHeaderFields * 8 + static_cast<std::size_t>(p.rank - 2) * 24;
}

std::size_t host_product_epilogue_offset(const HostProduct& p) {
    return (host_product_header_bytes(p) + 63) / 64 * 64;
}

std::optional<LlvmKernelSource> HostFamily<HostProduct>::emit(const FusedKernel& k, const HostProduct& s,
                                                              const HostTarget& t) {
    return emit_product_llvm(k.name, s, t);
}

std::array<std::size_t, 3> host_product_workspaces(const HostProduct& p) {
    const std::size_t acc = itemsize(p.acc);
    const auto a = static_cast<std::size_t>((p.a_batched ? p.batches : 1) * p.row_panels() * p.mr * p.K),
               b = static_cast<std::size_t>((p.b_batched ? p.batches : 1) * p.col_panels() * p.nr * p.K),
               c = p.chunks > 1 ? static_cast<std::size_t>(p.chunks * p.batches * p.M * p.N) : 0;
    return {std::max<std::size_t>(a * acc, 64), std::max<std::size_t>(b * acc, 64),
            std::max<std::size_t>(c * acc, 64)};
}

HostLaunch HostFamily<HostProduct>::launch(const HostProduct& s) {
    HostLaunch l;
    if (s.tasks == 0 || s.M == 0 || s.N == 0) return l;
    l.param_bytes = host_product_epilogue_offset(s) + s.epilogue.plan.params.size;
    const auto ws = host_product_workspaces(s);
    l.workspaces.assign(ws.begin(), ws.end());
    l.passes[0] = {HostPass::Entry::Partials, s.pack_tasks, s.pack_task, s.pack_units};
    l.passes[1] = {HostPass::Entry::Main, s.tasks, 1, s.tasks};
    l.pass_count = s.pack_tasks > 0 ? 2 : 1;
    if (s.pack_tasks == 0) l.passes[0] = l.passes[1];
    return l;
}

void HostFamily<HostProduct>::pack(const HostProduct& s, KernelPointers p, std::span<void* const> workspaces,
                                   std::span<std::byte> params) {
    std::byte* out = params.data();
    std::size_t at = 0;
    auto put = [&](auto v) {
        static_assert(sizeof(v) == 8);
        std::memcpy(out + at, &v, 8);
        at += 8;
    };
    const std::size_t in_bytes = itemsize(s.in);
    // The kernel's A and B: the product's operands, or B's and A's for a swapped (transposed) product.
    const auto* a = static_cast<const char*>(p.inputs[s.swapped ? 1 : 0]) +
                    s.a_offset * static_cast<std::int64_t>(in_bytes);
    const auto* b = static_cast<const char*>(p.inputs[s.swapped ? 0 : 1]) +
                    s.b_offset * static_cast<std::int64_t>(in_bytes);
    const std::size_t r = static_cast<std::size_t>(s.rank);
    put(a);
    put(b);
    put(workspaces[0]);
    put(workspaces[1]);
    put(workspaces[2]);
    for (std::int64_t v : {s.M, s.N, s.K, s.a_strides[r - 2], s.a_strides[r - 1], s.b_strides[r - 2],
                           s.b_strides[r - 1], s.row_blocks, s.col_blocks, s.row_panels(), s.col_panels()})
        put(v);
    for (std::size_t d = 0; d + 2 < r; ++d) {
        put(s.batch[d]);
        put(s.a_strides[d]);
        put(s.b_strides[d]);
    }
    const std::vector<const void*> ep_inputs(p.inputs.begin() + 2, p.inputs.end());
    pack_params(s.epilogue.plan, s.epilogue.binding, ep_inputs, p.outputs,
                params.subspan(host_product_epilogue_offset(s)));
}

std::string HostFamily<HostProduct>::explain(const HostPlan& plan, std::size_t i, const HostProduct& s) {
    const FusedKernel& k = plan.partition.kernels[i];
    const HostKernel& h = plan.kernels[i];
    const ir::Node& m = *s.product;
    std::string epilogue;
    for (const ir::Node* n : ir::topo_order(k.outputs))
        if (ir::is_elementwise(n->op())) epilogue += fmt::format(" {}", where_of(*n));
    std::string reads;
    for (std::size_t j = 0; j < s.inputs.size(); ++j) {
        if (s.inputs[j] == s.accumulators.get()) continue;
        reads += fmt::format("{}{} {} [{}]", reads.empty() ? "" : ", ",
                             s.inputs[j]->label().empty() ? "input" : s.inputs[j]->label(),
                             ir::describe(*s.inputs[j]), to_string(h.reads[j]));
    }
    std::vector<std::string> writes;
    for (const Slot& w : k.writes) writes.push_back(to_string(w));
    return fmt::format(
        "kernel {}  {}   matmul {} x {} -> {}: {}\n          epilogue on the final accumulators:{}\n"
        "          reads {}; writes {}; {}\n",
        i, k.name, ir::describe(*m.operand(0)), ir::describe(*m.operand(1)), ir::describe(m), where_of(m),
        epilogue.empty() ? std::string(" none (the product stored as it is)") : epilogue, reads,
        fmt::join(writes, ", "), s.to_string());
}

}  // namespace loom::codegen
