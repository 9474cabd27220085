// The vector width of a pointwise plan: what its operands allow (16-byte alignment, unit stride along the
// last dimension, gathers whose positions are the same in every lane), what the binding allows (the last
// extent and every streamed row on a vector boundary), and the register estimate of a kernel of its own.
#include "pointwise_vector.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace loom::codegen::detail {

namespace {

bool moves_along_last(const PointwisePlan& p, std::uint32_t dim_mask) {
    return (dim_mask >> (p.rank - 1) & 1u) != 0;
}

// Whether every gather's position is the same in every lane of a vector (lane_uniform_values).
bool positions_lane_uniform(const PwGraph& g, const PointwisePlan& p) {
    const LaneUniform u = lane_uniform_values(g, p, false);
    for (const PwGather& gt : g.gathers)
        if (!u.values[static_cast<std::size_t>(gt.value)]) return false;
    return true;
}

// What the operands allow of a vector variant: the widest dtype streamed, whether every streamed operand is
// contiguous (a flat variant, no multi-index), and whether each can move a vector at a time: unit stride
// along the last dimension (a strided site that does not move along it takes one scalar load per vector),
// 16-byte aligned, outputs contiguous (a strided output is written element by element). An index site has no
// memory to align: a vector's lanes take consecutive indices (stride 1) or one. An indirect site (a load at a
// gather's position) is read as a strided site is when `per_vector`: its gathers' positions are computed once
// per vector; it takes no derived index (a reshape's, whose lanes the vector variant does not compute).
struct VectorFit {
    std::size_t widest = 1;
    bool all_flat = true;
    bool ok = true;
};

VectorFit vector_fit(const PointwisePlan& p, const PointwiseBinding& b,
                     const std::vector<InputLayout>& layouts, bool per_vector) {
    VectorFit v;
    for (std::size_t s = 0; s < p.loads.size(); ++s) {
        const OperandPlan& o = p.loads[s];
        const InputLayout& lay = layouts[static_cast<std::size_t>(o.input)];
        if (o.access == Access::Scalar) continue;
        const bool affine = o.access == Access::Strided || o.access == Access::Indirect;
        const bool inner_zero = affine && !moves_along_last(p, o.dim_mask);
        if (o.access != Access::Contiguous) v.all_flat = false;
        if (o.access == Access::Gathered) v.ok = false;
        if (o.access == Access::Indirect && (!per_vector || !o.derived.empty())) v.ok = false;
        if (affine && !o.unit_inner && !inner_zero) v.ok = false;
        if (inner_zero || o.index) continue;  // one scalar load per vector, or no memory
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

// Whether every streamed row of a strided or indirect site starts on a boundary of `vw` elements: its
// coefficients of the other dimensions and, for an indirect site, its gathers' strides are multiples of `vw`
// (its offset is, vector_fit checked).
bool rows_on_vector_boundaries(const PointwisePlan& p, const PointwiseBinding& b, int vw) {
    bool ok = true;
    for (std::size_t s = 0; s < p.loads.size(); ++s) {
        const OperandPlan& o = p.loads[s];
        if ((o.access != Access::Strided && o.access != Access::Indirect) || !o.unit_inner || o.index)
            continue;
        for (int d = 0; d + 1 < p.rank; ++d)
            ok = ok && b.sites[s].coefs[static_cast<std::size_t>(d)] % vw == 0;
        for (int q : o.positions) ok = ok && b.sites[s].pcoefs[static_cast<std::size_t>(q)] % vw == 0;
    }
    return ok;
}

// Registers a thread of the vector variant holds: a vector of every load that moves along the last dimension
// and of every output.
int vector_registers(const PointwisePlan& p, int vw) {
    int regs = 0;
    for (const OperandPlan& o : p.loads) {
        const bool affine = o.access == Access::Strided || o.access == Access::Indirect;
        if (o.access != Access::Scalar && !(affine && !moves_along_last(p, o.dim_mask)))
            regs += vw * register_words(o.dtype);
    }
    for (const OperandPlan& o : p.outputs) regs += vw * register_words(o.dtype);
    return regs;
}

}  // namespace

LaneUniform lane_uniform_values(const PwGraph& g, const PointwisePlan& p, bool sites_move) {
    LaneUniform u;
    u.derived.assign(p.derived.size(), false);
    for (std::size_t m = 0; m < p.derived.size(); ++m) {
        const DerivedPlan& dp = p.derived[m];
        bool r = !moves_along_last(p, dp.dim_mask);
        for (int j : dp.derived)
            r = r && static_cast<std::size_t>(j) < m && u.derived[static_cast<std::size_t>(j)];
        u.derived[m] = r;
    }
    u.values.assign(g.values.size(), false);
    for (std::size_t k = 0; k < g.values.size(); ++k) {
        const PwValue& v = g.values[k];
        bool r = true;
        if (v.site >= 0) {
            const OperandPlan& o = p.loads[static_cast<std::size_t>(v.site)];
            switch (o.access) {
                case Access::Scalar:
                    break;
                case Access::Contiguous:
                case Access::RowBroadcast:
                    r = false;
                    break;
                case Access::Strided:
                case Access::Gathered:
                case Access::Indirect:
                    r = !sites_move && !moves_along_last(p, o.dim_mask) && row_parts_uniform(u, g, o, k);
                    break;
            }
        } else {
            for (int a : v.args)  // elementwise operands, or a gather's index
                r = r && static_cast<std::size_t>(a) < k && u.values[static_cast<std::size_t>(a)];
        }
        u.values[k] = r;
    }
    return u;
}

bool row_parts_uniform(const LaneUniform& u, const PwGraph& g, const OperandPlan& o, std::size_t before) {
    for (int m : o.derived)
        if (!u.derived[static_cast<std::size_t>(m)]) return false;
    for (int q : o.positions) {
        const auto pv = static_cast<std::size_t>(g.gathers[static_cast<std::size_t>(q)].value);
        if (pv >= before || !u.values[pv]) return false;
    }
    return true;
}

// The vector width: one 16-byte vector of the widest streamed dtype per thread, where the operands allow it
// (vector_fit). With a multi-index the last extent must divide into vectors and every streamed row start on
// a vector. A kernel of its own gives its vector variant up above kVectorRegisterBudget registers per
// thread, and the plan notes the estimate. Gathers allow a vector variant only when their positions are
// lane-uniform, in a kernel of its own (PointwisePlan::gathers_per_vector): the pointwise kernel's vector
// variant computes them once per vector (codegen/src/cuda/emit_pointwise_vector.cpp), while a reduction's
// spaces and the host back end read an indirect site one element at a time.
void plan_vector_width(const PwGraph& g, PointwisePlan& p, const PointwiseBinding& b,
                       const std::vector<InputLayout>& layouts, bool own_kernel) {
    const bool per_vector = own_kernel && !p.gathers.empty() && positions_lane_uniform(g, p);
    const VectorFit fit = vector_fit(p, b, layouts, per_vector);
    const int vw = static_cast<int>(16 / fit.widest);
    // Gathers whose positions are not computed once per vector rule it out, even where no site reads at them
    // (a position on an axis of extent 1): the vector variant computes every position once per vector.
    bool ok = fit.ok && (p.gathers.empty() || per_vector);
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
