// The CUDA emitter of pointwise kernels: Params struct, body, element function and scalar entry point (the
// vector entry points: emit_pointwise_vector.cpp), and the pieces of a pointwise graph inside other kernels.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "emit_internal.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/cuda/prelude.hpp"
#include "loom/codegen/plan/names.hpp"
#include "loom/ir/error.hpp"
#include "pointwise_emitter.hpp"

namespace loom::codegen {

namespace {

using detail::PwGraph;
using detail::store_expr;

// A statement with its comment aligned at column 60.
void line(std::string& s, int indent, std::string_view code, std::string_view comment = {}) {
    detail::write_line(s, indent, code, comment, 60);
}

}  // namespace

namespace detail {

// Finds the uniform values; hoists them when one of their ops is costly (a division, a square root or
// a transcendental function: for example the bias corrections 1 - b^t of an optimizer step).
void PointwiseEmitter::plan_uniforms() {
    uniform.assign(g.values.size(), false);
    bool costly = false;
    for (std::size_t k = 0; k < g.values.size(); ++k) {
        const detail::PwValue& v = g.values[k];
        const ir::Node& n = *v.node;
        if (ir::info(n.op()).kind == ir::OpKind::Leaf) {
            uniform[k] = n.op() == ir::Op::Scalar || n.op() == ir::Op::Constant ||
                         (n.op() == ir::Op::Input &&
                          plan.loads[static_cast<std::size_t>(v.site)].access == Access::Scalar &&
                          !plan.loads[static_cast<std::size_t>(v.site)].index);
            continue;
        }
        bool all = !ir::is_gather(n.op());  // a gather's position is computed where its loads are
        for (int a : v.args) all = all && uniform[static_cast<std::size_t>(a)];
        uniform[k] = all;
        costly = costly || (all && ir::info(n.op()).cost != ir::Cost::Cheap);
    }
    if (!costly) return;
    std::vector<bool>& used = used_per_element;
    used.assign(g.values.size(), false);
    for (std::size_t k = 0; k < g.values.size(); ++k)
        if (!uniform[k])
            for (int a : g.values[k].args) used[static_cast<std::size_t>(a)] = true;
    for (int o : g.outputs) used[static_cast<std::size_t>(o)] = true;
    for (std::size_t k = 0; k < g.values.size(); ++k)
        if (uniform[k] && used[k] && ir::info(g.values[k].node->op()).kind != ir::OpKind::Leaf)
            frontier.push_back(static_cast<int>(k));
}

// The values of the uniform sites, in site order (the arguments of {name}_uniforms).
std::vector<std::size_t> PointwiseEmitter::uniform_sites() const {
    std::vector<std::size_t> out;
    for (std::size_t k = 0; k < g.sites.size(); ++k)
        if (uniform[static_cast<std::size_t>(g.sites[k].value)]) out.push_back(k);
    return out;
}

// The function computing the hoisted values once per thread.
std::string PointwiseEmitter::uniforms() const {
    std::vector<std::string> sig{fmt::format("const {}_params& p", name)};
    for (std::size_t k : uniform_sites()) {
        const int v = g.sites[k].value;
        sig.push_back(fmt::format(
            "const {} {}", register_type(g.values[static_cast<std::size_t>(v)].node->dtype()), vname(v)));
    }
    for (int f : frontier)
        sig.push_back(
            fmt::format("{}& u{}", register_type(g.values[static_cast<std::size_t>(f)].node->dtype()), f));
    std::string s = fmt::format(
        "// The values that are the same for every element, computed once per thread.\n"
        "__device__ __forceinline__ void {}_uniforms({}) {{\n",
        name, fmt::join(sig, ", "));
    std::vector<bool> needed(g.values.size(), false);  // the hoisted values and their operands
    for (int f : frontier) needed[static_cast<std::size_t>(f)] = true;
    for (std::size_t k = g.values.size(); k-- > 0;)
        if (needed[k])
            for (int a : g.values[k].args) needed[static_cast<std::size_t>(a)] = true;
    for (std::size_t k = 0; k < g.values.size(); ++k)
        if (needed[k] && g.values[k].node->op() != ir::Op::Input) value_line(s, k);
    for (int f : frontier) line(s, 4, fmt::format("u{} = {};", f, vname(f)));
    s += "}\n";
    return s;
}

// Declares the hoisted values at indentation `ind` and computes them from the uniform sites' values.
void PointwiseEmitter::call_uniforms(std::string& s, int ind) const {
    if (frontier.empty()) return;
    std::vector<std::string> args{"p"};
    for (int f : frontier) {
        line(s, ind,
             fmt::format("{} {};", register_type(g.values[static_cast<std::size_t>(f)].node->dtype()),
                         vname(f)));
    }
    for (std::size_t k : uniform_sites()) args.push_back(vname(g.sites[k].value));
    for (int f : frontier) args.push_back(vname(f));
    line(s, ind, fmt::format("{}_uniforms({});", name, fmt::join(args, ", ")), "the same for every element");
}

std::string PointwiseEmitter::params_struct() const {
    std::string s = fmt::format("struct {}_params {{\n", name);
    for (const ParamField& f : plan.params.fields) {
        std::string comment;
        switch (f.kind) {
            case ParamField::Kind::InputPointer: {
                const auto& site = g.sites[static_cast<std::size_t>(f.a)];
                const ir::Node* in = g.inputs[static_cast<std::size_t>(site.input)];
                comment = fmt::format("input {} \"{}\", {} ({})", site.input, in->label(),
                                      access_name(plan.loads[static_cast<std::size_t>(f.a)].access),
                                      short_location(in->loc()));
                break;
            }
            case ParamField::Kind::OutputPointer:
                comment = fmt::format("output {}, {}", f.a,
                                      access_name(plan.outputs[static_cast<std::size_t>(f.a)].access));
                break;
            case ParamField::Kind::NumElements:
                comment = "elements in the iteration space";
                break;
            case ParamField::Kind::Extent:
                comment = fmt::format("extent of dimension {}", f.a);
                break;
            case ParamField::Kind::SiteCoef:
                comment = fmt::format("in{} stride of dimension {}", f.a, f.b);
                break;
            case ParamField::Kind::SiteDerived:
                comment = fmt::format("in{} stride of t{}", f.a, f.b);
                break;
            case ParamField::Kind::DerivedOffset:
                comment = fmt::format("t{} linear offset", f.a);
                break;
            case ParamField::Kind::DerivedCoef:
                comment = fmt::format("t{} stride of dimension {}", f.a, f.b);
                break;
            case ParamField::Kind::DerivedDerived:
                comment = fmt::format("t{} stride of t{}", f.a, f.b);
                break;
            case ParamField::Kind::DerivedDiv:
                comment = fmt::format("t{} divisor", f.a);
                break;
            case ParamField::Kind::DerivedMod:
                comment = fmt::format("t{} extent", f.a);
                break;
            case ParamField::Kind::Scalar: {
                const ir::Node* sc = g.scalars[static_cast<std::size_t>(f.a)];
                comment = fmt::format("scalar {} ({})", name_of(sc->dtype()), short_location(sc->loc()));
                break;
            }
            case ParamField::Kind::OutputCoef:
                comment = fmt::format("out{} stride of dimension {}", f.a, f.b);
                break;
            case ParamField::Kind::SitePosition:
                comment = fmt::format("in{} stride of gather position g{}", f.a, f.b);
                break;
            case ParamField::Kind::GatherExtent: {
                const ir::Node& gn = *g.gathers[static_cast<std::size_t>(f.a)].node;
                comment = fmt::format("g{}: extent of the axis {} reads ({})", f.a,
                                      ir::gather_api_name(static_cast<ir::GatherApi>(gn.ints().at(2))),
                                      short_location(gn.loc()));
                break;
            }
            case ParamField::Kind::GatherId:
                comment = fmt::format("g{}: the gather's number in the error table", f.a);
                break;
            case ParamField::Kind::ErrorWord:
                comment = "the error word: the first out-of-range index of a checked gather";
                break;
            case ParamField::Kind::ElementSpace:
            case ParamField::Kind::RowSpace:
            case ParamField::Kind::Rows:
            case ParamField::Kind::Length:
            case ParamField::Kind::Chunks:
            case ParamField::Kind::ChunksPerBlock:
            case ParamField::Kind::BlocksPerRow:
            case ParamField::Kind::Counters:
            case ParamField::Kind::Partials:
            case ParamField::Kind::Product:
            case ParamField::Kind::Epilogue:
                throw InternalError(
                    fmt::format("emit_pointwise: reduction parameter {} in a pointwise plan", f.name));
        }
        line(s, 4, detail::param_declaration(f, plan.index), comment);
    }
    s += "};\n";
    s += fmt::format(
        "static_assert(sizeof({}_params) == {}, \"kernel parameter layout differs from the host's\");\n",
        name, plan.params.size);
    return s;
}

// The statement computing value `k` (a comment for a load site, whose value is a parameter).
void PointwiseEmitter::value_line(std::string& s, std::size_t k) const {
    const auto& v = g.values[k];
    const ir::Node& n = *v.node;
    const std::string where = short_location(n.loc());
    const std::string_view rt = register_type(n.dtype());
    const int vi = static_cast<int>(k);
    switch (ir::info(n.op()).kind) {
        case ir::OpKind::Leaf:
            if (indirect(v.site)) {  // loaded (or an iota's index computed) here, after its positions
                std::vector<std::string> terms{fmt::format("o{}", v.site)};
                for (int q : plan.loads[static_cast<std::size_t>(v.site)].positions)
                    terms.push_back(fmt::format(
                        "{} * p.in{}_g{}", vname(g.gathers[static_cast<std::size_t>(q)].value), v.site, q));
                if (n.op() == ir::Op::Iota)
                    line(s, 4,
                         fmt::format("const long long {} = p.in{}_base + (long long)({});", vname(vi), v.site,
                                     fmt::join(terms, " + ")),
                         fmt::format("index in{} (indirect): the index along axis {} ({})", v.site,
                                     n.ints().at(0), where));
                else
                    line(s, 4,
                         fmt::format("const {} {} = lm::to_reg(p.in{}[{}]);", rt, vname(vi), v.site,
                                     fmt::join(terms, " + ")),
                         fmt::format("load in{} (indirect): input \"{}\" ({})", v.site, n.label(), where));
            } else if (n.op() == ir::Op::Input) {
                line(s, 4,
                     fmt::format("// {} = in{}: input {} \"{}\" {}", vname(vi), v.site,
                                 g.sites[static_cast<std::size_t>(v.site)].input, n.label(),
                                 name_of(n.dtype())),
                     where);
            } else if (n.op() == ir::Op::Iota) {  // a parameter of the body, computed by the caller
                line(s, 4,
                     fmt::format("// {} = in{}: the index along axis {}, {}", vname(vi), v.site,
                                 n.ints().at(0), name_of(n.dtype())),
                     where);
            } else if (n.op() == ir::Op::Scalar) {
                line(s, 4, fmt::format("const {} {} = p.s{};", rt, vname(vi), g.scalar_number.at(&n)),
                     fmt::format("scalar {} ({})", name_of(n.dtype()), where));
            } else {
                line(s, 4,
                     fmt::format("const {} {} = {};", rt, vname(vi), cuda_literal(n.value(), n.dtype())),
                     fmt::format("constant {} ({})", name_of(n.dtype()), where));
            }
            return;
        case ir::OpKind::Unary:
        case ir::OpKind::Binary:
        case ir::OpKind::Ternary: {
            std::vector<std::string> args;
            for (int a : v.args) args.push_back(vname(a));
            const std::string op = n.op() == ir::Op::Cast ? fmt::format("cast to {}", name_of(n.dtype()))
                                                          : std::string(ir::op_name(n.op()));
            line(s, 4, fmt::format("const {} {} = {};", rt, vname(vi), detail::op_expression(n, args)),
                 fmt::format("{} ({})", op, where));
            return;
        }
        case ir::OpKind::Gather: {
            const int q = v.gather;
            const std::string api(ir::gather_api_name(static_cast<ir::GatherApi>(n.ints().at(2))));
            if (plan.gathers[static_cast<std::size_t>(q)].mode == ir::IndexMode::Checked)
                line(s, 4,
                     fmt::format("const long long {} = lm::gather_checked({}, p.g{}_n, p.err, p.g{}_id);",
                                 vname(vi), vname(v.args.at(0)), q, q),
                     fmt::format("{} position g{}, checked ({})", api, q, where));
            else
                line(s, 4,
                     fmt::format("const long long {} = lm::gather_clamped({}, p.g{}_n);", vname(vi),
                                 vname(v.args.at(0)), q),
                     fmt::format("{} position g{}, clamped ({})", api, q, where));
            return;
        }
        case ir::OpKind::View:
        case ir::OpKind::Reduce:
        case ir::OpKind::Product:
        case ir::OpKind::Attention:
        case ir::OpKind::Scan:
        case ir::OpKind::Scatter:
            throw InternalError(
                "emit_pointwise: view, reduction, product, attention, scan or scatter as a value");
    }
}

// Whether value k is one of {name}_uniforms's results (the frontier).
bool PointwiseEmitter::hoisted(std::size_t k) const {
    return std::find(frontier.begin(), frontier.end(), static_cast<int>(k)) != frontier.end();
}

// The body's parameter of a load site: its value, or the affine part of an indirect site's offset (the
// vector body, `per_vector`, takes an indirect site's value too).
std::string PointwiseEmitter::site_param(const detail::PwSite& site, std::size_t k, bool per_vector) const {
    if (indirect(static_cast<int>(k)) && !per_vector) return fmt::format("const {} o{}", idx, k);
    return fmt::format("const {} {}",
                       register_type(g.values[static_cast<std::size_t>(site.value)].node->dtype()),
                       vname(site.value));
}

// The values a body computes, by value number. {name}_body computes every one (those of {name}_uniforms
// aside). {name}_vector_body (`per_vector`) computes what the outputs need, walking back from them through
// operands: an indirect site is a parameter there (the caller loads it at the vector's positions), so the
// gathers' positions and the cones of their indices, which the caller computes once per vector, are left
// out unless an output needs them too; a value of {name}_uniforms is a parameter and ends the walk.
std::vector<bool> PointwiseEmitter::body_values(bool per_vector) const {
    if (!per_vector) return std::vector<bool>(g.values.size(), true);
    std::vector<bool> keep(g.values.size(), false);
    for (int o : g.outputs) keep[static_cast<std::size_t>(o)] = true;
    for (std::size_t k = g.values.size(); k-- > 0;)
        if (keep[k] && !hoisted(k))
            for (int a : g.values[k].args) keep[static_cast<std::size_t>(a)] = true;
    return keep;
}

// Whether a body takes the kernel's parameters: {name}_body for its scalars and gathers, the vector body
// for the scalars among the values it computes (`keep`).
bool PointwiseEmitter::body_takes_params(const std::vector<bool>& keep, bool per_vector) const {
    if (!per_vector) return body_needs_params;
    for (std::size_t k = 0; k < g.values.size(); ++k)
        if (keep[k] && g.values[k].node->op() == ir::Op::Scalar) return true;
    return false;
}

// One statement per value the body computes (body_values), in the graph's order, then the outputs. The
// vector body takes the parameters of {name}_body that it reads, each indirect site as its value.
std::string PointwiseEmitter::body(bool per_vector) const {
    const std::vector<bool> keep = body_values(per_vector);
    std::vector<std::string> sig;
    if (body_takes_params(keep, per_vector)) sig.push_back(fmt::format("const {}_params& p", name));
    for (std::size_t k = 0; k < g.sites.size(); ++k)
        if (keep[static_cast<std::size_t>(g.sites[k].value)])
            sig.push_back(site_param(g.sites[k], k, per_vector));
    for (int f : frontier)
        if (keep[static_cast<std::size_t>(f)])
            sig.push_back(fmt::format(
                "const {} {}", register_type(g.values[static_cast<std::size_t>(f)].node->dtype()), vname(f)));
    for (std::size_t o = 0; o < g.outputs.size(); ++o)
        sig.push_back(fmt::format("{}& r{}", register_type(plan.outputs[o].dtype), o));
    std::string s;
    if (per_vector)
        s += "// The vector variant's body: the statements above that the outputs need, each gathered "
             "operand a\n"
             "// value, which the caller loads at positions that are the same in every lane of a vector.\n";
    s += fmt::format("__device__ __forceinline__ void {}_{}({}) {{\n", name,
                     per_vector ? "vector_body" : "body", fmt::join(sig, ", "));
    for (std::size_t k = 0; k < g.values.size(); ++k) {
        if (!keep[k]) continue;
        const detail::PwValue& v = g.values[k];
        if (!frontier.empty() && uniform[k]) {  // computed once per thread, or used only by what is
            if (!used_per_element[k]) continue;
            if (ir::info(v.node->op()).kind != ir::OpKind::Leaf) {
                line(s, 4,
                     fmt::format("// {}: computed once per thread ({}_uniforms)", vname(static_cast<int>(k)),
                                 name),
                     short_location(v.node->loc()));
                continue;
            }
        }
        if (per_vector && indirect(v.site)) {  // a parameter: the caller loads it at the vector's positions
            const std::string what =
                v.node->op() == ir::Op::Iota
                    ? fmt::format("the index along axis {}", v.node->ints().at(0))
                    : fmt::format("input {} \"{}\"", g.sites[static_cast<std::size_t>(v.site)].input,
                                  v.node->label());
            line(s, 4,
                 fmt::format("// {} = in{}: {}{} {}, gathered (loaded by the caller)",
                             vname(static_cast<int>(k)), v.site, what,
                             v.node->op() == ir::Op::Iota ? "," : "", name_of(v.node->dtype())),
                 short_location(v.node->loc()));
            continue;
        }
        value_line(s, k);
    }
    for (std::size_t o = 0; o < g.outputs.size(); ++o)
        line(s, 4, fmt::format("r{} = {};", o, vname(g.outputs[o])), fmt::format("output {}", o));
    s += "}\n";
    return s;
}

// Offset expression of a Strided/Gathered site (or the row part of one) over i<d> and t<m>.
std::string PointwiseEmitter::site_terms(std::size_t s, bool skip_inner) const {
    const OperandPlan& o = plan.loads[s];
    std::vector<std::string> terms;
    for (int d = 0; d < plan.rank; ++d) {
        if (!(o.dim_mask >> d & 1u)) continue;
        if (d == plan.rank - 1 && skip_inner) continue;
        if (o.unit_inner && d == plan.rank - 1)
            terms.push_back(fmt::format("i{}", d));
        else
            terms.push_back(fmt::format("i{} * p.in{}_s{}", d, s, d));
    }
    for (int m : o.derived) terms.push_back(fmt::format("t{} * p.in{}_t{}", m, s, m));
    if (terms.empty()) return "0";
    return fmt::format("{}", fmt::join(terms, " + "));
}

// Decomposes the flat index `flat` into the iteration-space indices of `needed` dimensions.
void PointwiseEmitter::decompose(std::string& s, std::uint32_t needed, const std::string& flat) const {
    if (needed == 0) return;
    int lo = 0;
    while (!(needed >> lo & 1u)) ++lo;
    const int R = plan.rank;
    if (R == 1) {
        line(s, 4, fmt::format("const {} i0 = {};", idx, flat), "iteration index");
        return;
    }
    line(s, 4, fmt::format("{} q = {};", idx, flat), "flat index -> multi-index (row-major)");
    for (int d = R - 1; d > lo; --d) {
        if (needed >> d & 1u) line(s, 4, fmt::format("const {} i{} = q % p.ext{};", idx, d, d));
        line(s, 4, fmt::format("q /= p.ext{};", d));
    }
    if (lo == 0)
        line(s, 4, fmt::format("const {} i0 = q;", idx));
    else
        line(s, 4, fmt::format("const {} i{} = q % p.ext{};", idx, lo, lo));
}

void PointwiseEmitter::derived_indices(std::string& s) const {
    for (std::size_t m = 0; m < plan.derived.size(); ++m) {
        const DerivedPlan& d = plan.derived[m];
        std::vector<std::string> terms{fmt::format("p.t{}_off", m)};
        for (int k = 0; k < plan.rank; ++k)
            if (d.dim_mask >> k & 1u) terms.push_back(fmt::format("i{} * p.t{}_s{}", k, m, k));
        for (int j : d.derived) terms.push_back(fmt::format("t{} * p.t{}_t{}", j, m, j));
        std::string e = fmt::format("{}", fmt::join(terms, " + "));
        if (d.has_div) e = fmt::format("({}) / p.t{}_div", e, m);
        if (d.has_mod) e = fmt::format("({}) % p.t{}_mod", e, m);
        line(s, 4, fmt::format("const {} t{} = {};", idx, m, e), "reshape: index of the operand's dimension");
    }
}

// Offset expression of strided output o over i<d>.
std::string PointwiseEmitter::output_terms(std::size_t o) const {
    const OperandPlan& op = plan.outputs[o];
    std::vector<std::string> terms;
    for (int d = 0; d < plan.rank; ++d) {
        if (!(op.dim_mask >> d & 1u)) continue;
        if (op.unit_inner && d == plan.rank - 1)
            terms.push_back(fmt::format("i{}", d));
        else
            terms.push_back(fmt::format("i{} * p.out{}_s{}", d, o, d));
    }
    if (terms.empty()) return "0";
    return fmt::format("{}", fmt::join(terms, " + "));
}

std::uint32_t PointwiseEmitter::element_dims() const {
    std::uint32_t m = 0;
    for (const auto& o : plan.loads) {
        if (o.access == Access::Strided || o.access == Access::Gathered || o.access == Access::Indirect)
            m |= o.dim_mask;
        if (o.access == Access::RowBroadcast) m |= 1u << (plan.rank - 1);
    }
    for (const auto& o : plan.outputs)
        if (o.access == Access::Strided) m |= o.dim_mask;
    for (const auto& d : plan.derived) m |= d.dim_mask;
    return m;
}

// A call of the body (`per_vector`: the vector body) with site arguments `args` (one per site, in site
// order: the vector body takes those of the sites it reads) and output references `outs`.
std::string PointwiseEmitter::body_call(const std::vector<std::string>& args,
                                        const std::vector<std::string>& outs, bool per_vector) const {
    const std::vector<bool> keep = body_values(per_vector);
    std::vector<std::string> all;
    if (body_takes_params(keep, per_vector)) all.push_back("p");
    for (std::size_t k = 0; k < g.sites.size(); ++k)
        if (keep[static_cast<std::size_t>(g.sites[k].value)]) all.push_back(args.at(k));
    for (int f : frontier)
        if (keep[static_cast<std::size_t>(f)]) all.push_back(vname(f));
    all.insert(all.end(), outs.begin(), outs.end());
    return fmt::format("{}_{}({});", name, per_vector ? "vector_body" : "body", fmt::join(all, ", "));
}

std::string PointwiseEmitter::element() const {
    const std::string acc =
        acc_site < 0 ? std::string()
                     : fmt::format(", const {} acc",
                                   register_type(plan.loads[static_cast<std::size_t>(acc_site)].dtype));
    const std::string result =
        returns_value ? std::string(register_type(plan.outputs.at(0).dtype)) : std::string("void");
    std::string s =
        fmt::format("__device__ {} {} {}_element(const {}_params& p, const {} e{}) {{\n",
                    out_of_line ? "__noinline__" : "__forceinline__", result, name, name, idx, acc);
    decompose(s, element_dims(), "e");
    derived_indices(s);
    std::vector<std::string> args;
    for (std::size_t k = 0; k < g.sites.size(); ++k) {
        const OperandPlan& o = plan.loads[k];
        std::string off;
        switch (o.access) {
            case Access::Contiguous:
                off = "e";
                break;
            case Access::RowBroadcast:
                off = fmt::format("i{}", plan.rank - 1);
                break;
            case Access::Scalar:
                off = "0";
                break;
            case Access::Strided:
            case Access::Gathered:
            case Access::Indirect:
                off = site_terms(k, false);
                break;
        }
        const int v = g.sites[k].value;
        if (o.access == Access::Indirect) {  // the body loads it once its gathers' positions are known
            args.push_back(fmt::format("({})({})", idx, off));
            continue;
        }
        if (static_cast<int>(k) == acc_site)
            line(s, 4, fmt::format("const {} {} = acc;", register_type(o.dtype), vname(v)),
                 fmt::format("in{}: {}", k, acc_what));
        else if (o.index)
            line(s, 4, fmt::format("const long long {} = p.in{}_base + (long long)({});", vname(v), k, off),
                 fmt::format("index in{} ({}): computed", k, access_name(o.access)));
        else
            line(s, 4,
                 fmt::format("const {} {} = lm::to_reg(p.in{}[{}]);", register_type(o.dtype), vname(v), k,
                             off),
                 fmt::format("load in{} ({})", k, access_name(o.access)));
        args.push_back(vname(v));
    }
    call_uniforms(s, 4);
    std::vector<std::string> outs;
    for (std::size_t o = 0; o < plan.outputs.size(); ++o) {
        line(s, 4, fmt::format("{} r{};", register_type(plan.outputs[o].dtype), o));
        outs.push_back(fmt::format("r{}", o));
    }
    line(s, 4, body_call(args, outs));
    if (returns_value) {
        line(s, 4, "return r0;", returns_what);
        s += "}\n";
        return s;
    }
    for (std::size_t o = 0; o < plan.outputs.size(); ++o) {
        const bool strided = plan.outputs[o].access == Access::Strided;
        line(s, 4,
             fmt::format("p.out{}[{}] = {};", o, strided ? output_terms(o) : std::string("e"),
                         store_expr(plan.outputs[o].dtype, fmt::format("r{}", o))),
             strided ? fmt::format("store out{} (strided: a view)", o) : std::string());
    }
    s += "}\n";
    return s;
}

// The opening of an entry point: the Params struct by value (__grid_constant__), or, when it exceeds the
// kernel parameter limit, a pointer to it in device memory bound to the same name `p`.
std::string PointwiseEmitter::entry(const std::string& entry_name) const {
    std::string s =
        fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n", plan.block, entry_name,
                    plan.params_in_memory ? fmt::format("const {}_params* __restrict__ pp", name)
                                          : fmt::format("const __grid_constant__ {}_params p", name));
    detail::write_kernel_prologue(s, true, 60);
    if (plan.params_in_memory)
        line(s, 4, fmt::format("const {}_params& p = *pp;", name),
             fmt::format("{} bytes of parameters in device memory", plan.params.size));
    return s;
}

std::string PointwiseEmitter::scalar_kernel() const {
    std::string s = entry(name + "_s");
    if (plan.index == IndexWidth::I32) {
        line(s, 4, "const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;", "one element per thread");
        line(s, 4, "if (g >= (unsigned)p.n) return;");
        line(s, 4, fmt::format("{}_element(p, (int)g);", name));
    } else {
        line(s, 4, "const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
             "one element per thread");
        line(s, 4, "if (e >= p.n) return;");
        line(s, 4, fmt::format("{}_element(p, e);", name));
    }
    s += "}\n";
    return s;
}

}  // namespace detail

KernelSource emit_pointwise(std::string_view user_name, const std::vector<ir::NodePtr>& outputs,
                            const PointwisePlan& plan) {
    const PwGraph g = detail::build_pw_graph(outputs);
    if (g.sites.size() != plan.loads.size() || g.scalars.size() != plan.scalar_dtypes.size() ||
        g.outputs.size() != plan.outputs.size())
        throw InternalError(
            fmt::format("emit_pointwise: plan ({} loads, {} scalars, {} outputs) does not belong to "
                        "this graph ({}, {}, {})",
                        plan.loads.size(), plan.scalar_dtypes.size(), plan.outputs.size(), g.sites.size(),
                        g.scalars.size(), g.outputs.size()));
    KernelSource ks;
    ks.user_name = std::string(user_name);
    ks.name = kernel_name(user_name);
    ks.scalar_entry = ks.name + "_s";
    if (plan.has_vector_variant()) ks.vector_entry = fmt::format("{}_v{}", ks.name, plan.vector_width);
    ks.plan = plan;
    ks.param_bytes =
        plan.params_in_memory ? sizeof(void*) : plan.params.size;  // a pointer to the uploaded struct

    detail::PointwiseEmitter em{g, plan, ks.name, plan.index == IndexWidth::I32 ? "int" : "long long",
                                !g.scalars.empty() || !g.gathers.empty()};
    em.plan_uniforms();
    std::string& s = ks.kernel;
    s += detail::banner("pointwise", ks.name, user_name, plan.to_string());
    s += fmt::format("// entry points: {}{}\n\n",
                     ks.vector_entry.empty() ? "" : ks.vector_entry + " (vector), ",
                     ks.scalar_entry + " (scalar)");
    s += em.params_struct();
    s += '\n';
    if (!em.frontier.empty()) {
        s += em.uniforms();
        s += '\n';
    }
    s += em.body();
    s += '\n';
    if (em.plan.gathers_per_vector()) {
        s += em.body(true);
        s += '\n';
    }
    s += em.element();
    s += '\n';
    if (plan.has_vector_variant()) {
        s += em.vector_kernel();
        s += '\n';
    }
    s += em.scalar_kernel();
    ks.source = fmt::format("{}\n{}", prelude_source(), ks.kernel);
    return ks;
}

detail::PointwisePart detail::pointwise_part(std::string_view name, const std::vector<ir::NodePtr>& outputs,
                                             const PointwisePlan& plan) {
    const PwGraph g = detail::build_pw_graph(outputs);
    if (g.sites.size() != plan.loads.size() || g.outputs.size() != plan.outputs.size())
        throw InternalError("pointwise_part: the plan does not belong to this graph");
    detail::PointwiseEmitter em{g, plan, std::string(name),
                                plan.index == IndexWidth::I32 ? "int" : "long long",
                                !g.scalars.empty() || !g.gathers.empty()};
    PointwisePart part;
    part.params_struct = em.params_struct();
    part.body = em.body();
    part.body_needs_params = em.body_needs_params;
    part.idx = em.idx;
    em.derived_indices(part.derived);
    for (std::size_t k = 0; k < g.sites.size(); ++k) {
        const OperandPlan& o = plan.loads[k];
        switch (o.access) {
            case Access::Contiguous:
                part.site_offset.push_back(plan.rank == 2 ? "i0 * p.ext1 + i1" : "i0");
                break;
            case Access::RowBroadcast:
                part.site_offset.push_back(fmt::format("i{}", plan.rank - 1));
                break;
            case Access::Scalar:
                part.site_offset.push_back("0");
                break;
            case Access::Strided:
            case Access::Gathered:
            case Access::Indirect:
                part.site_offset.push_back(em.site_terms(k, false));
                break;
        }
    }
    return part;
}

detail::EpiloguePart detail::epilogue_part(std::string_view name, const std::vector<ir::NodePtr>& outputs,
                                           const PointwisePlan& plan, int acc_site, bool one_call_site,
                                           bool vector, std::string_view acc_what) {
    const PwGraph g = detail::build_pw_graph(outputs);
    if (g.sites.size() != plan.loads.size() || g.outputs.size() != plan.outputs.size() || acc_site < 0 ||
        static_cast<std::size_t>(acc_site) >= g.sites.size())
        throw InternalError("epilogue_part: the plan does not belong to this graph");
    detail::PointwiseEmitter em{g,
                                plan,
                                std::string(name),
                                plan.index == IndexWidth::I32 ? "int" : "long long",
                                !g.scalars.empty() || !g.gathers.empty(),
                                acc_site};
    if (!acc_what.empty()) em.acc_what = std::string(acc_what);
    for (const auto& v : g.values)
        if (!one_call_site && ir::is_elementwise(v.node->op()) &&
            ir::info(v.node->op()).cost != ir::Cost::Cheap)
            em.out_of_line = true;
    EpiloguePart part{em.params_struct(), em.body(), em.element(), em.idx};
    if (vector) {
        if (!plan.has_vector_variant())
            throw InternalError("epilogue_part: a vector epilogue of a plan without a vector variant");
        part.element += '\n' + em.element_vector();
    }
    return part;
}

namespace {

// The pieces of the pointwise graph of `operand` whose element function returns its value (the plan's output
// pointer unused), its load site `acc_site` (-1: none) taken from `acc`, described by `acc_what`; `vector`
// adds the prologue's vector function.
detail::EpiloguePart returning_part(std::string_view name, const ir::NodePtr& operand,
                                    const PointwisePlan& plan, int acc_site, bool vector,
                                    std::string_view acc_what, std::string_view returns_what) {
    const PwGraph g = detail::build_pw_graph({operand});
    if (g.sites.size() != plan.loads.size() || g.outputs.size() != 1 || plan.outputs.size() != 1 ||
        acc_site >= static_cast<int>(g.sites.size()))
        throw InternalError(fmt::format("{}: the plan does not belong to this graph", name));
    detail::PointwiseEmitter em{g,
                                plan,
                                std::string(name),
                                plan.index == IndexWidth::I32 ? "int" : "long long",
                                !g.scalars.empty() || !g.gathers.empty(),
                                acc_site,
                                true};
    if (!acc_what.empty()) em.acc_what = std::string(acc_what);
    if (!returns_what.empty()) em.returns_what = std::string(returns_what);
    detail::EpiloguePart part{em.params_struct(), em.body(), em.element(), em.idx};
    if (vector) part.element += '\n' + em.prologue_vector();
    return part;
}

}  // namespace

detail::EpiloguePart detail::prologue_part(std::string_view name, const ir::NodePtr& operand,
                                           const PointwisePlan& plan, bool vector) {
    return returning_part(name, operand, plan, -1, vector, {}, {});
}

detail::EpiloguePart detail::operand_part(std::string_view name, const ir::NodePtr& operand,
                                          const PointwisePlan& plan, int acc_site) {
    if (acc_site < 0) throw InternalError("operand_part: no site takes the scan's element");
    return returning_part(name, operand, plan, acc_site, false, "the scan's element, rounded to its dtype",
                          "the reduction's operand: reduced by the caller");
}

KernelSource generate_pointwise(std::string_view user_name, const std::vector<ir::NodePtr>& outputs,
                                const std::vector<InputLayout>& layouts, const DeviceInfo& device,
                                PointwiseBinding* binding) {
    PlannedPointwise pp = plan_pointwise(outputs, layouts, device.plan_target());
    if (binding) *binding = pp.binding;
    return emit_pointwise(user_name, outputs, pp.plan);
}

}  // namespace loom::codegen
