// The vector width of a pointwise plan: what its operands allow (16-byte alignment, unit stride along the
// last dimension), what the binding allows (the last extent and every streamed row on a vector boundary), and
// the register estimate of a kernel of its own.
#include "pointwise_vector.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace loom::codegen::detail {

namespace {

// What the operands allow of a vector variant: the widest dtype streamed, whether every streamed operand is
// contiguous (a flat variant, no multi-index), and whether each can move a vector at a time: unit stride
// along the last dimension (a strided site that does not move along it takes one scalar load per vector),
// 16-byte aligned, outputs contiguous (a strided output is written element by element). An index site has no
// memory to align: a vector's lanes take consecutive indices (stride 1) or one.
struct VectorFit {
    std::size_t widest = 1;
    bool all_flat = true;
    bool ok = true;
};

VectorFit vector_fit(const PointwisePlan& p, const PointwiseBinding& b,
                     const std::vector<InputLayout>& layouts) {
    const int R = p.rank;
    VectorFit v;
    for (std::size_t s = 0; s < p.loads.size(); ++s) {
        const OperandPlan& o = p.loads[s];
        const InputLayout& lay = layouts[static_cast<std::size_t>(o.input)];
        if (o.access == Access::Scalar) continue;
        if (o.access == Access::Indirect) {  // loaded one element at a time, after its gathers' positions
            v.all_flat = false;
            v.ok = false;
            continue;
        }
        if (o.index) {
            if (o.access != Access::Contiguous) v.all_flat = false;
            if (o.access == Access::Gathered) v.ok = false;
            if (o.access == Access::Strided && !o.unit_inner && (o.dim_mask >> (R - 1) & 1u)) v.ok = false;
            continue;
        }
        const bool inner_zero = (o.access == Access::Strided) && !(o.dim_mask >> (R - 1) & 1u);
        if (o.access != Access::Contiguous) v.all_flat = false;
        if (o.access == Access::Gathered) v.ok = false;
        if (o.access == Access::Strided && !o.unit_inner && !inner_zero) v.ok = false;
        if (inner_zero) continue;  // one scalar load per vector
        v.widest = std::max(v.widest, itemsize(o.dtype));
        if (!lay.aligned16 || (b.sites[s].offset * static_cast<std::int64_t>(itemsize(o.dtype))) % 16 != 0)
            v.ok = false;
    }
    for (const auto& o : p.outputs) {
        v.widest = std::max(v.widest, itemsize(o.dtype));
        if (o.access != Access::Contiguous) v.ok = false;
    }
    return v;
}

// Whether every streamed row of a strided site starts on a boundary of `vw` elements.
bool rows_on_vector_boundaries(const PointwisePlan& p, const PointwiseBinding& b, int vw) {
    bool ok = true;
    for (std::size_t s = 0; s < p.loads.size(); ++s) {
        const OperandPlan& o = p.loads[s];
        if (o.access != Access::Strided || !o.unit_inner || o.index) continue;
        for (int d = 0; d + 1 < p.rank; ++d)
            ok = ok && b.sites[s].coefs[static_cast<std::size_t>(d)] % vw == 0;
    }
    return ok;
}

// Registers a thread of the vector variant holds: a vector of every load that moves along the last dimension
// and of every output.
int vector_registers(const PointwisePlan& p, int vw) {
    const int R = p.rank;
    int regs = 0;
    for (const OperandPlan& o : p.loads)
        if (o.access != Access::Scalar && !(o.access == Access::Strided && !(o.dim_mask >> (R - 1) & 1u)))
            regs += vw * register_words(o.dtype);
    for (const OperandPlan& o : p.outputs) regs += vw * register_words(o.dtype);
    return regs;
}

}  // namespace

// The vector width: one 16-byte vector of the widest streamed dtype per thread, where the operands allow it
// (vector_fit). With a multi-index the last extent must divide into vectors and every streamed row start on
// a vector. A kernel of its own gives its vector variant up above kVectorRegisterBudget registers per
// thread, and the plan notes the estimate.
void plan_vector_width(PointwisePlan& p, const PointwiseBinding& b, const std::vector<InputLayout>& layouts,
                       bool own_kernel) {
    const VectorFit fit = vector_fit(p, b, layouts);
    const int vw = static_cast<int>(16 / fit.widest);
    bool ok = fit.ok;
    if (ok && !fit.all_flat && b.extents.back() % vw != 0) ok = false;
    if (ok && !fit.all_flat) ok = rows_on_vector_boundaries(p, b, vw);
    if (ok && vw > 1 && own_kernel) {
        const int regs = vector_registers(p, vw);
        if (regs > kVectorRegisterBudget) {
            ok = false;
            p.vector_registers = regs;
        }
    }
    p.vector_width = ok && vw > 1 ? vw : 1;
    p.vector_flat = p.vector_width > 1 && fit.all_flat;
}

}  // namespace loom::codegen::detail
