// Pointwise planning: compose views down to every load, coalesce the iteration space, classify accesses,
// choose vector width and index width, lay out the kernel parameters.
#include "loom/codegen/plan/pointwise_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "pointwise_graph.hpp"
#include "pointwise_vector.hpp"

namespace loom::codegen {

namespace {

using detail::PwGraph;

// An affine index: off + sum_d c[d] * idx_d + sum_m t[m] * derived_m + sum_k p[k] * position_k (a gather's
// position along its axis, a value of the kernel).
struct Form {
    std::int64_t off = 0;
    std::vector<std::int64_t> c;
    std::vector<std::int64_t> t;
    std::vector<std::int64_t> p;
};

void add_scaled(Form& f, const Form& g, std::int64_t k) {
    f.off += k * g.off;
    if (f.c.size() < g.c.size()) f.c.resize(g.c.size(), 0);
    for (std::size_t d = 0; d < g.c.size(); ++d) f.c[d] += k * g.c[d];
    if (f.t.size() < g.t.size()) f.t.resize(g.t.size(), 0);
    for (std::size_t m = 0; m < g.t.size(); ++m) f.t[m] += k * g.t[m];
    if (f.p.size() < g.p.size()) f.p.resize(g.p.size(), 0);
    for (std::size_t q = 0; q < g.p.size(); ++q) f.p[q] += k * g.p[q];
}

bool has_position(const Form& f) {
    for (auto v : f.p)
        if (v != 0) return true;
    return false;
}

std::int64_t tcoef(const Form& f, std::size_t m) {
    return m < f.t.size() ? f.t[m] : 0;
}

struct Derived {
    Form L;
    std::int64_t div = 1, mod = 0;
    bool has_div = false, has_mod = false;
    int group = 0;
    std::int64_t inner = 1;  // product of the group's later extents
};

struct Analysis {
    Shape extents;              // iteration space (before coalescing)
    std::vector<Form> sites;    // per load site, in elements of the bound tensor
    std::vector<Form> outputs;  // per output, in elements of its tensor (contiguous unless given strides)
    std::vector<Derived> derived;
    std::vector<std::vector<int>> groups;      // derived indices of one reshape group, outermost first
    std::vector<std::int64_t> gather_extents;  // per gather position: the extent of its axis
};

// Index maps of every context, from the root down; the forms of every load site.
Analysis analyze(const PwGraph& g, const Shape& out_shape, const std::vector<InputLayout>& layouts) {
    Analysis an;
    an.extents = out_shape;
    for (const auto& gt : g.gathers)
        an.gather_extents.push_back(
            gt.node->operand(0)->shape().at(static_cast<std::size_t>(gt.node->ints().at(0))));
    const std::size_t R = out_shape.size();
    std::vector<std::vector<Form>> maps(g.contexts.size());
    maps[detail::kRootContext].resize(R);
    for (std::size_t d = 0; d < R; ++d) {
        maps[0][d].c.assign(R, 0);
        maps[0][d].c[d] = 1;
    }
    for (std::size_t k = 2; k < g.contexts.size(); ++k) {
        const auto& cx = g.contexts[k];
        const ir::Node* v = cx.view;
        const ir::Node* a = v->operand(0);
        const std::vector<Form>& C = maps[static_cast<std::size_t>(cx.parent)];
        if (cx.gather >= 0) {  // x of a gather: the parent's map, and the gather's position along the axis
            std::vector<Form> A = C;
            Form pos;
            pos.p.assign(static_cast<std::size_t>(cx.gather) + 1, 0);
            pos.p[static_cast<std::size_t>(cx.gather)] = 1;
            A.at(static_cast<std::size_t>(v->ints().at(0))) = std::move(pos);
            maps[k] = std::move(A);
            continue;
        }
        std::vector<Form> A(static_cast<std::size_t>(a->rank()));
        const Shape& tv = v->shape();
        const Shape& ta = a->shape();
        switch (v->op()) {
            case ir::Op::BroadcastTo: {
                const std::size_t lead = tv.size() - ta.size();
                for (std::size_t e = 0; e < ta.size(); ++e)
                    if (ta[e] != 1) A[e] = C[e + lead];
                break;
            }
            case ir::Op::Permute:
                for (std::size_t q = 0; q < tv.size(); ++q) A[static_cast<std::size_t>(v->ints()[q])] = C[q];
                break;
            case ir::Op::Slice:
                for (std::size_t d = 0; d < tv.size(); ++d) {
                    add_scaled(A[d], C[d], v->ints()[2 * d + 1]);
                    A[d].off += v->ints()[2 * d];
                }
                break;
            case ir::Op::Reshape: {
                if (numel(tv) == 0) break;  // nothing is ever read
                std::vector<std::size_t> vd, ad;
                for (std::size_t d = 0; d < tv.size(); ++d)
                    if (tv[d] != 1) vd.push_back(d);
                for (std::size_t e = 0; e < ta.size(); ++e)
                    if (ta[e] != 1) ad.push_back(e);
                std::size_t p = 0, q = 0;
                while (p < vd.size() && q < ad.size()) {
                    std::vector<std::size_t> D{vd[p]}, E{ad[q]};
                    std::int64_t pv = tv[vd[p++]], pa = ta[ad[q++]];
                    while (pv != pa) {
                        if (pv < pa) {
                            D.push_back(vd[p]);
                            pv *= tv[vd[p++]];
                        } else {
                            E.push_back(ad[q]);
                            pa *= ta[ad[q++]];
                        }
                    }
                    Form L;
                    std::int64_t ip = 1;
                    for (std::size_t j = D.size(); j-- > 0;) {
                        add_scaled(L, C[D[j]], ip);
                        ip *= tv[D[j]];
                    }
                    if (E.size() == 1) {
                        A[E[0]] = L;
                        continue;
                    }
                    const int group = static_cast<int>(an.groups.size());
                    an.groups.emplace_back();
                    std::int64_t inner = pa;
                    for (std::size_t j = 0; j < E.size(); ++j) {
                        inner /= ta[E[j]];
                        Derived dv;
                        dv.L = L;
                        dv.div = inner;
                        dv.mod = ta[E[j]];
                        dv.has_div = j + 1 < E.size();
                        dv.has_mod = j > 0;
                        dv.group = group;
                        dv.inner = inner;
                        const std::size_t m = an.derived.size();
                        an.groups.back().push_back(static_cast<int>(m));
                        an.derived.push_back(std::move(dv));
                        A[E[j]].t.assign(m + 1, 0);
                        A[E[j]].t[m] = 1;
                    }
                }
                break;
            }
            default:
                throw InternalError(fmt::format("analyze: {} is not a view", ir::op_name(v->op())));
        }
        maps[k] = std::move(A);
    }
    for (const auto& s : g.sites) {
        const ir::Node* in = g.inputs[static_cast<std::size_t>(s.input)];
        const InputLayout& lay = layouts[static_cast<std::size_t>(s.input)];
        Form f;
        const auto& C = maps[static_cast<std::size_t>(s.ctx)];
        for (std::size_t e = 0; e < C.size(); ++e)
            if (in->shape()[e] != 1) add_scaled(f, C[e], lay.strides[e]);
        an.sites.push_back(std::move(f));
    }
    return an;
}

// A reshape group whose derived indices appear with coefficients proportional to their inner extents is
// the group's linear index times one coefficient: substitute it (the reshape was a strided view there).
void simplify(Analysis& an) {
    auto rewrite = [&](Form& f, std::size_t limit) {
        for (std::size_t gi = an.groups.size(); gi-- > 0;) {
            const auto& members = an.groups[gi];
            if (static_cast<std::size_t>(members.front()) >= limit) continue;
            const std::int64_t unit = tcoef(f, static_cast<std::size_t>(members.back()));
            bool any = false, prop = unit != 0;
            for (int m : members) {
                const std::int64_t c = tcoef(f, static_cast<std::size_t>(m));
                any = any || c != 0;
                prop = prop && c == unit * an.derived[static_cast<std::size_t>(m)].inner;
            }
            if (!any || !prop) continue;
            for (int m : members) f.t[static_cast<std::size_t>(m)] = 0;
            add_scaled(f, an.derived[static_cast<std::size_t>(members.front())].L, unit);
        }
    };
    for (auto& f : an.sites) rewrite(f, an.derived.size());
    for (std::size_t m = 0; m < an.derived.size(); ++m) rewrite(an.derived[m].L, m);
    // Keep the derived indices still referenced, renumbered densely.
    std::vector<bool> used(an.derived.size(), false);
    for (const auto& f : an.sites)
        for (std::size_t m = 0; m < f.t.size(); ++m) used[m] = used[m] || f.t[m] != 0;
    for (std::size_t m = an.derived.size(); m-- > 0;)
        if (used[m])
            for (std::size_t j = 0; j < an.derived[m].L.t.size(); ++j)
                used[j] = used[j] || an.derived[m].L.t[j] != 0;
    std::vector<int> renum(an.derived.size(), -1);
    std::vector<Derived> kept;
    for (std::size_t m = 0; m < an.derived.size(); ++m)
        if (used[m]) {
            renum[m] = static_cast<int>(kept.size());
            kept.push_back(an.derived[m]);
        }
    auto remap = [&](Form& f) {
        std::vector<std::int64_t> t(kept.size(), 0);
        for (std::size_t m = 0; m < f.t.size(); ++m)
            if (f.t[m] != 0) t[static_cast<std::size_t>(renum[m])] = f.t[m];
        f.t = std::move(t);
    };
    for (auto& f : an.sites) remap(f);
    for (auto& d : kept) remap(d.L);
    an.derived = std::move(kept);
}

// Drops extent-1 dimensions and merges neighbours that every form walks as one (c[d] == c[d+1] * n[d+1]).
void coalesce(Analysis& an) {
    std::vector<Form*> forms;
    for (auto& f : an.sites) forms.push_back(&f);
    for (auto& f : an.outputs) forms.push_back(&f);
    for (auto& d : an.derived) forms.push_back(&d.L);
    for (Form* f : forms) f->c.resize(an.extents.size(), 0);
    Shape ext;
    std::vector<std::vector<std::int64_t>> cols;  // per kept dimension: the coefficient of every form
    for (std::size_t d = 0; d < an.extents.size(); ++d) {
        if (an.extents[d] == 1) continue;
        std::vector<std::int64_t> col;
        for (Form* f : forms) col.push_back(f->c[d]);
        if (!ext.empty()) {
            bool merge = true;
            for (std::size_t k = 0; k < forms.size(); ++k)
                merge = merge && cols.back()[k] == col[k] * an.extents[d];
            if (merge) {
                ext.back() *= an.extents[d];
                cols.back() = col;
                continue;
            }
        }
        ext.push_back(an.extents[d]);
        cols.push_back(std::move(col));
    }
    if (ext.empty()) {  // a single element: one dimension of extent 1
        ext.push_back(1);
        cols.emplace_back(forms.size(), 0);
    }
    for (std::size_t k = 0; k < forms.size(); ++k) {
        forms[k]->c.resize(ext.size());
        for (std::size_t d = 0; d < ext.size(); ++d) forms[k]->c[d] = cols[d][k];
    }
    an.extents = std::move(ext);
}

std::uint32_t mask_of(const Form& f) {
    std::uint32_t m = 0;
    for (std::size_t d = 0; d < f.c.size(); ++d)
        if (f.c[d] != 0) m |= 1u << d;
    return m;
}

std::vector<int> positions_of(const Form& f) {
    std::vector<int> r;
    for (std::size_t q = 0; q < f.p.size(); ++q)
        if (f.p[q] != 0) r.push_back(static_cast<int>(q));
    return r;
}

std::vector<int> derived_of(const Form& f) {
    std::vector<int> r;
    for (std::size_t m = 0; m < f.t.size(); ++m)
        if (f.t[m] != 0) r.push_back(static_cast<int>(m));
    return r;
}

std::size_t reg_size(DType t) {
    switch (t) {
        case DType::Float16:
        case DType::BFloat16:
            return 4;  // held as float
        default:
            return itemsize(t);
    }
}

ParamLayout layout_params(const PointwisePlan& p) {
    ParamLayout L;
    const std::size_t isz = p.index == IndexWidth::I32 ? 4 : 8;
    auto add = [&](ParamField::Kind k, int a, int b, std::string name, ParamType type, DType dtype,
                   std::size_t size) {
        ParamField f;
        f.kind = k;
        f.a = a;
        f.b = b;
        f.name = std::move(name);
        f.type = type;
        f.dtype = dtype;
        f.size = size;
        f.align = size;  // natural alignment: every field's size is its alignment
        L.add(std::move(f));
    };
    using K = ParamField::Kind;
    using T = ParamType;
    for (std::size_t s = 0; s < p.loads.size(); ++s) {
        if (p.loads[s].index)  // an iota site: its offset, the index of the iteration space's element 0
            add(K::InputPointer, static_cast<int>(s), 0, fmt::format("in{}_base", s), T::Int64, DType::Int64,
                8);
        else
            add(K::InputPointer, static_cast<int>(s), 0, fmt::format("in{}", s), T::ConstPointer,
                p.loads[s].dtype, 8);
    }
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
        add(K::OutputPointer, static_cast<int>(o), 0, fmt::format("out{}", o), T::Pointer, p.outputs[o].dtype,
            8);
    if (p.checks_indices()) add(K::ErrorWord, 0, 0, "err", T::RawPointer, DType::Int64, 8);
    add(K::NumElements, 0, 0, "n", T::Index, DType::Int64, isz);
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const OperandPlan& op = p.outputs[o];
        if (op.access != Access::Strided) continue;
        for (int d = 0; d < p.rank; ++d) {
            if (!(op.dim_mask >> d & 1u) || (op.unit_inner && d == p.rank - 1)) continue;
            add(K::OutputCoef, static_cast<int>(o), d, fmt::format("out{}_s{}", o, d), T::Index, DType::Int64,
                isz);
        }
    }
    for (int d = 1; d < p.rank; ++d)
        add(K::Extent, d, 0, fmt::format("ext{}", d), T::Index, DType::Int64, isz);
    for (std::size_t s = 0; s < p.loads.size(); ++s) {
        const OperandPlan& o = p.loads[s];
        if (o.access != Access::Strided && o.access != Access::Gathered && o.access != Access::Indirect)
            continue;
        for (int d = 0; d < p.rank; ++d) {
            if (!(o.dim_mask >> d & 1u) || (o.unit_inner && d == p.rank - 1)) continue;
            add(K::SiteCoef, static_cast<int>(s), d, fmt::format("in{}_s{}", s, d), T::Index, DType::Int64,
                isz);
        }
        for (int m : o.derived)
            add(K::SiteDerived, static_cast<int>(s), m, fmt::format("in{}_t{}", s, m), T::Index, DType::Int64,
                isz);
        for (int q : o.positions)
            add(K::SitePosition, static_cast<int>(s), q, fmt::format("in{}_g{}", s, q), T::Index,
                DType::Int64, isz);
    }
    for (std::size_t q = 0; q < p.gathers.size(); ++q) {
        add(K::GatherExtent, static_cast<int>(q), 0, fmt::format("g{}_n", q), T::Int64, DType::Int64, 8);
        if (p.gathers[q].mode == ir::IndexMode::Checked)
            add(K::GatherId, static_cast<int>(q), 0, fmt::format("g{}_id", q), T::Int64, DType::Int64, 8);
    }
    for (std::size_t m = 0; m < p.derived.size(); ++m) {
        const DerivedPlan& dv = p.derived[m];
        const int mi = static_cast<int>(m);
        add(K::DerivedOffset, mi, 0, fmt::format("t{}_off", m), T::Index, DType::Int64, isz);
        for (int d = 0; d < p.rank; ++d)
            if (dv.dim_mask >> d & 1u)
                add(K::DerivedCoef, mi, d, fmt::format("t{}_s{}", m, d), T::Index, DType::Int64, isz);
        for (int j : dv.derived)
            add(K::DerivedDerived, mi, j, fmt::format("t{}_t{}", m, j), T::Index, DType::Int64, isz);
        if (dv.has_div) add(K::DerivedDiv, mi, 0, fmt::format("t{}_div", m), T::Index, DType::Int64, isz);
        if (dv.has_mod) add(K::DerivedMod, mi, 0, fmt::format("t{}_mod", m), T::Index, DType::Int64, isz);
    }
    for (std::size_t k = 0; k < p.scalar_dtypes.size(); ++k)
        add(K::Scalar, static_cast<int>(k), 0, fmt::format("s{}", k), T::Scalar, p.scalar_dtypes[k],
            reg_size(p.scalar_dtypes[k]));
    L.finish();
    return L;
}

constexpr double kI32Limit = 2147483648.0;  // 2^31

}  // namespace

void ParamLayout::add(ParamField f) {
    if (f.align == 0 || (f.align & (f.align - 1)) != 0)
        throw InternalError(fmt::format("ParamLayout::add: field {} has alignment {}", f.name, f.align));
    f.offset = (size + f.align - 1) / f.align * f.align;
    size = f.offset + f.size;
    align = std::max(align, f.align);
    fields.push_back(std::move(f));
}

void ParamLayout::finish() {
    size = (size + align - 1) / align * align;
}

const ParamField& ParamLayout::field(ParamField::Kind k, int a) const {
    for (const ParamField& f : fields)
        if (f.kind == k && f.a == a) return f;
    throw InternalError(
        fmt::format("ParamLayout::field: no field of kind {} number {}", static_cast<int>(k), a));
}

std::string_view access_name(Access a) {
    switch (a) {
        case Access::Contiguous:
            return "contiguous";
        case Access::RowBroadcast:
            return "row broadcast";
        case Access::Scalar:
            return "scalar";
        case Access::Strided:
            return "strided";
        case Access::Gathered:
            return "gathered";
        case Access::Indirect:
            return "indirect";
    }
    return "?";
}

std::vector<const ir::Node*> pointwise_inputs(const std::vector<ir::NodePtr>& outputs) {
    return detail::build_pw_graph(outputs).inputs;
}

std::vector<const ir::Node*> pointwise_scalars(const std::vector<ir::NodePtr>& outputs) {
    return detail::build_pw_graph(outputs).scalars;
}

namespace {

// Transcendental functions and floating-point divisions computed per element (each value once per context):
// the elementwise ops of cost class Division or Transcendental (ops.def) with a float result.
int costly_ops(const detail::PwGraph& g) {
    int n = 0;
    for (const detail::PwValue& v : g.values) {
        if (!v.node || !ir::is_elementwise(v.node->op())) continue;
        if (v.ctx == detail::kUniformContext) continue;  // rank 0: computed once per thread, not per element
        const ir::Cost cost = ir::info(v.node->op()).cost;
        if ((cost == ir::Cost::Division || cost == ir::Cost::Transcendental) && is_float(v.node->dtype()))
            ++n;
    }
    return n;
}

// The outputs of one kernel share one iteration space: the first output's shape.
void check_one_space(const std::vector<ir::NodePtr>& outputs) {
    const Shape& shape = outputs[0]->shape();
    for (const auto& o : outputs)
        if (o->shape() != shape)
            throw Error(
                fmt::format("pointwise(): outputs of one kernel must share one iteration space; got {} "
                            "({}) and {} ({})",
                            to_string(shape), short_location(outputs[0]->loc()), to_string(o->shape()),
                            short_location(o->loc())));
}

// One layout per input of the graph, of its dtype and rank; output strides, when given, one per output.
void check_layouts(const PwGraph& g, const std::vector<InputLayout>& layouts, std::size_t outputs,
                   std::span<const Strides> output_strides) {
    if (layouts.size() != g.inputs.size())
        throw InternalError(
            fmt::format("plan_pointwise: {} layouts for {} inputs", layouts.size(), g.inputs.size()));
    for (std::size_t k = 0; k < layouts.size(); ++k)
        if (layouts[k].dtype != g.inputs[k]->dtype() ||
            layouts[k].strides.size() != g.inputs[k]->shape().size())
            throw InternalError(
                fmt::format("plan_pointwise: layout {} ({}, {} strides) does not fit input {}", k,
                            name(layouts[k].dtype), layouts[k].strides.size(), g.inputs[k]->label()));
    if (!output_strides.empty() && output_strides.size() != outputs)
        throw InternalError(
            fmt::format("plan_pointwise: {} output layouts for {} outputs", output_strides.size(), outputs));
}

// The iteration space and the index maps of every load site, output and derived index: the views composed
// down to each load (analyze), reshape groups that are strided views folded back (simplify), the outputs'
// strides over the space (an extent-1 dimension moves nothing), then extent-1 dimensions dropped and
// neighbours that every map walks as one merged (coalesce). An empty space is one dimension of extent 0.
Analysis index_maps(const PwGraph& g, const Shape& shape, const std::vector<InputLayout>& layouts,
                    std::size_t outputs, std::span<const Strides> output_strides) {
    Analysis an = analyze(g, shape, layouts);
    simplify(an);
    for (const auto& d : an.derived)
        if (has_position(d.L)) {  // a reshape beneath a gather that is no strided view of what it reads
            const ir::Node& gn = *g.gathers.at(0).node;
            throw Error(fmt::format(
                "{}(): the gathered operand is a reshape that merges or splits axes of a tensor view that "
                "has no strides for it (a transposed or sliced tensor); evaluate the reshaped operand into a "
                "tensor first ({})",
                ir::gather_api_name(static_cast<ir::GatherApi>(gn.ints().at(2))), short_location(gn.loc())));
        }
    for (std::size_t o = 0; o < outputs; ++o) {
        Form f;
        f.c = output_strides.empty() ? contiguous_strides(shape) : output_strides[o];
        if (f.c.size() != shape.size())
            throw InternalError("plan_pointwise: an output layout of another rank");
        for (std::size_t d = 0; d < shape.size(); ++d)
            if (shape[d] == 1) f.c[d] = 0;
        an.outputs.push_back(std::move(f));
    }
    if (numel(shape) == 0) {  // nothing runs: the simplest plan
        an.extents = {0};
        for (auto& f : an.sites) f = Form{f.off, {0}, {}};
        for (auto& f : an.outputs) f = Form{0, {1}, {}};
        an.derived.clear();
    } else {
        coalesce(an);
    }
    return an;
}

// Row-major strides of the coalesced space: the index map of a contiguous operand.
Strides row_major(const Shape& extents) {
    const int R = static_cast<int>(extents.size());
    Strides cs(static_cast<std::size_t>(R), 1);
    for (int d = R - 2; d >= 0; --d)
        cs[static_cast<std::size_t>(d)] =
            cs[static_cast<std::size_t>(d) + 1] * extents[static_cast<std::size_t>(d) + 1];
    return cs;
}

// Each load site's access from its index map: gathered (through a derived index), scalar, contiguous, a
// row broadcast (the last dimension alone, at unit stride) or strided. Sites that stream from memory count
// their bytes per element; scalars, row broadcasts and index (iota) sites, which are computed, do not.
void classify_loads(const PwGraph& g, const Analysis& an, const Strides& cs, PointwisePlan& p,
                    PointwiseBinding& b) {
    const int R = p.rank;
    for (std::size_t s = 0; s < g.sites.size(); ++s) {
        const Form& f = an.sites[s];
        OperandPlan o;
        o.input = g.sites[s].input;
        o.dtype = g.inputs[static_cast<std::size_t>(o.input)]->dtype();
        o.derived = derived_of(f);
        o.positions = positions_of(f);
        o.dim_mask = mask_of(f);
        const bool row = R >= 2 && o.dim_mask == (1u << (R - 1)) && f.c.back() == 1;
        if (!o.positions.empty())
            o.access = Access::Indirect;
        else if (!o.derived.empty())
            o.access = Access::Gathered;
        else if (o.dim_mask == 0)
            o.access = Access::Scalar;
        else if (f.c == cs)
            o.access = Access::Contiguous;
        else if (row)
            o.access = Access::RowBroadcast;
        else
            o.access = Access::Strided;
        if (o.access == Access::Strided || o.access == Access::Gathered || o.access == Access::Indirect) {
            o.unit_inner = f.c.back() == 1;
        } else {
            o.dim_mask = 0;
        }
        o.index = g.inputs[static_cast<std::size_t>(o.input)]->op() == ir::Op::Iota;
        const bool streamed = o.access != Access::Scalar && o.access != Access::RowBroadcast && !o.index;
        o.bytes_per_element = streamed ? static_cast<int>(itemsize(o.dtype)) : 0;
        p.loads.push_back(std::move(o));
        PointwiseBinding::Site site;
        site.offset = f.off;
        site.coefs = f.c;
        site.dcoefs = f.t;
        site.pcoefs = f.p;
        site.pcoefs.resize(g.gathers.size(), 0);
        b.sites.push_back(std::move(site));
    }
}

// Each output: contiguous, or strided when `given` strides (a view the user writes into) are not the
// contiguous ones.
void plan_outputs(const std::vector<ir::NodePtr>& outputs, const Analysis& an, const Strides& cs, bool given,
                  PointwisePlan& p, PointwiseBinding& b) {
    for (std::size_t k = 0; k < outputs.size(); ++k) {
        const Form& f = an.outputs[k];
        OperandPlan op;
        op.dtype = outputs[k]->dtype();
        op.access = !given || f.c == cs ? Access::Contiguous : Access::Strided;
        if (op.access == Access::Strided) {
            op.dim_mask = mask_of(f);
            op.unit_inner = f.c.back() == 1;
        }
        op.bytes_per_element = static_cast<int>(itemsize(op.dtype));
        p.outputs.push_back(op);
        b.outputs.push_back(f.c);
    }
}

// The derived indices (a reshape's quotients and remainders) and the scalars: their shapes in the plan,
// their numbers in the binding.
void plan_derived_and_scalars(const PwGraph& g, const Analysis& an, PointwisePlan& p, PointwiseBinding& b) {
    for (const auto& d : an.derived) {
        DerivedPlan dp;
        dp.dim_mask = mask_of(d.L);
        dp.derived = derived_of(d.L);
        dp.has_div = d.has_div;
        dp.has_mod = d.has_mod;
        p.derived.push_back(std::move(dp));
        PointwiseBinding::Derived bd;
        bd.offset = d.L.off;
        bd.div = d.div;
        bd.mod = d.mod;
        bd.coefs = d.L.c;
        bd.dcoefs = d.L.t;
        b.derived.push_back(std::move(bd));
    }
    for (const ir::Node* s : g.scalars) {
        p.scalar_dtypes.push_back(s->dtype());
        b.scalars.push_back(s->value());
    }
    for (std::size_t k = 0; k < g.gathers.size(); ++k) {
        const ir::Node& gn = *g.gathers[k].node;
        GatherPlan gp;
        gp.mode = static_cast<ir::IndexMode>(gn.ints().at(1));
        p.gathers.push_back(gp);
        b.gather_extents.push_back(an.gather_extents[k]);
        b.gather_ids.push_back(gp.mode == ir::IndexMode::Checked ? ir::gather_error_id(gn) : 0);
    }
}

// A grid-stride vector variant for an arithmetic-heavy flat kernel of its own: at least kGridStrideCostlyOps
// transcendental functions and divisions per element, and no fewer than the arrays it streams, so that a
// thread's next loads overlap this vector's arithmetic.
void plan_grid_stride(const PwGraph& g, PointwisePlan& p, bool own_kernel, const PlanTarget& target) {
    int streams = static_cast<int>(p.outputs.size());  // arrays read or written element by element
    for (const auto& o : p.loads) streams += o.bytes_per_element > 0 ? 1 : 0;
    if (const int costly = costly_ops(g);
        own_kernel && p.vector_flat && costly >= kGridStrideCostlyOps && costly >= streams)
        p.grid_stride_blocks = kGridStrideBlocksPerSM * target.multiprocessors;
}

// The index width: 32-bit when the element count, every extent and every byte offset (through the derived
// indices' largest values too) stays below 2^31, else 64-bit.
IndexWidth index_width(const Analysis& an, const PointwisePlan& p, std::int64_t n) {
    auto bound = [&](const Form& f, const std::vector<double>& tmax) {
        double s = 0;
        for (std::size_t d = 0; d < f.c.size(); ++d)
            s += std::fabs(static_cast<double>(f.c[d])) *
                 static_cast<double>(std::max<std::int64_t>(an.extents[d] - 1, 0));
        for (std::size_t m = 0; m < f.t.size() && m < tmax.size(); ++m)
            s += std::fabs(static_cast<double>(f.t[m])) * tmax[m];
        for (std::size_t q = 0; q < f.p.size(); ++q)
            s += std::fabs(static_cast<double>(f.p[q])) *
                 static_cast<double>(std::max<std::int64_t>(an.gather_extents[q] - 1, 0));
        return s;
    };
    bool fits = static_cast<double>(n) < kI32Limit;
    std::vector<double> tmax;
    for (const auto& d : an.derived) {
        const double lmax = bound(d.L, tmax) + std::fabs(static_cast<double>(d.L.off));
        fits = fits && lmax < kI32Limit;
        tmax.push_back(d.has_mod ? static_cast<double>(d.mod - 1)
                                 : std::floor(lmax / static_cast<double>(d.div)));
    }
    for (std::size_t s = 0; s < p.loads.size(); ++s)
        fits = fits && bound(an.sites[s], tmax) * static_cast<double>(itemsize(p.loads[s].dtype)) < kI32Limit;
    for (const auto& o : p.outputs)
        fits = fits && static_cast<double>(std::max<std::int64_t>(n - 1, 0)) *
                               static_cast<double>(itemsize(o.dtype)) <
                           kI32Limit;
    return fits ? IndexWidth::I32 : IndexWidth::I64;
}

}  // namespace

PlannedPointwise plan_pointwise(const std::vector<ir::NodePtr>& outputs,
                                const std::vector<InputLayout>& layouts, const PlanTarget& target,
                                PointwiseUse use, std::span<const Strides> output_strides) {
    if (outputs.empty()) throw InternalError("plan_pointwise: no outputs");
    check_one_space(outputs);
    const PwGraph g = detail::build_pw_graph(outputs);
    check_layouts(g, layouts, outputs.size(), output_strides);
    const Shape& shape = outputs[0]->shape();
    const std::int64_t n = numel(shape);
    const Analysis an = index_maps(g, shape, layouts, outputs.size(), output_strides);

    PlannedPointwise out;
    PointwisePlan& p = out.plan;
    PointwiseBinding& b = out.binding;
    p.rank = static_cast<int>(an.extents.size());
    if (p.rank > 32) throw InternalError("plan_pointwise: rank above 32");
    b.numel = n;
    b.extents = an.extents;
    const Strides cs = row_major(an.extents);
    classify_loads(g, an, cs, p, b);
    plan_outputs(outputs, an, cs, !output_strides.empty() && n > 1, p, b);
    plan_derived_and_scalars(g, an, p, b);
    const bool own_kernel = use == PointwiseUse::Kernel;
    detail::plan_vector_width(g, p, b, layouts, own_kernel);
    plan_grid_stride(g, p, own_kernel, target);
    p.index = index_width(an, p, n);
    p.params = layout_params(p);
    // Beyond the kernel parameter limit the struct travels in device memory (the kernel takes a pointer).
    p.params_in_memory = p.params.size > target.param_limit_bytes;
    return out;
}

}  // namespace loom::codegen
