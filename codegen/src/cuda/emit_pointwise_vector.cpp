// The CUDA emitter of pointwise kernels, its vector variants: one thread computes W consecutive elements of a
// row with 16-byte loads and stores (the plan's vector width W), each element through the same body as the
// scalar variant's, so both give the same bits.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "emit_internal.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/ir/error.hpp"
#include "pointwise_emitter.hpp"

namespace loom::codegen {

namespace {

using detail::store_expr;

// A statement with its comment aligned at column 60.
void line(std::string& s, int indent, std::string_view code, std::string_view comment = {}) {
    detail::write_line(s, indent, code, comment, 60);
}

}  // namespace

namespace detail {

// The values the gathers' positions are computed from, by value number: each position and, back through
// operands, the cone of its index, down to the sites, which are loaded once per vector (by vector_operands,
// or an indirect site by gathered_operands), and the values of {name}_uniforms. A site of the cone that a
// vector's lanes read at different elements would be a position that moves along the vector: an error of
// the plan.
std::vector<bool> PointwiseEmitter::position_cones() const {
    const int R = plan.rank;
    std::vector<bool> cone(g.values.size(), false);
    for (const PwGather& gt : g.gathers) cone[static_cast<std::size_t>(gt.value)] = true;
    for (std::size_t k = g.values.size(); k-- > 0;) {
        if (!cone[k]) continue;
        const PwValue& v = g.values[k];
        if (v.site >= 0) {
            const OperandPlan& o = plan.loads[static_cast<std::size_t>(v.site)];
            const bool once = o.access == Access::Scalar ||
                              ((o.access == Access::Strided || o.access == Access::Indirect) &&
                               !(o.dim_mask >> (R - 1) & 1u));
            if (!once)
                throw InternalError(
                    fmt::format("emit_pointwise: load in{} of a gather's index moves along the "
                                "vector of a position computed once per vector",
                                v.site));
            cone[k] = false;
            continue;
        }
        if (hoisted(k)) {
            cone[k] = false;
            continue;
        }
        for (int a : v.args) cone[static_cast<std::size_t>(a)] = true;
    }
    return cone;
}

// The gathers of the vector at element i, computed once: every position is the same in every lane
// (PointwisePlan::gathers_per_vector), so lane 0's is computed, with the values of its index's cone and the
// checked or clamped position call (an out-of-range index is recorded, as in the scalar variant, and never
// read). Each indirect site is loaded after its positions, in the graph's order (a gather's index may itself
// be gathered). Sets the indirect sites' entries of `args`, the body's arguments by the lane j.
void PointwiseEmitter::gathered_operands(std::string& s, std::vector<std::string>& args) const {
    const std::vector<bool> cone = position_cones();
    line(s, 4,
         "// The gathers' positions, the same in every lane: computed once per vector, from its first "
         "element.");
    for (std::size_t k = 0; k < g.values.size(); ++k) {
        const int site = g.values[k].site;
        if (indirect(site))
            args.at(static_cast<std::size_t>(site)) = gathered_site(s, site);
        else if (cone[k])
            value_line(s, k);
    }
}

// Indirect site k of the vector at element i, once its gathers' positions are known: its offset at the
// vector's first element (the affine part plus each position times its stride), then the W consecutive
// elements from there in one load when the site moves along the row (unit stride: the planner checked that
// they lie on a vector boundary), else the one element that every lane takes. Returns the lane j's value.
std::string PointwiseEmitter::gathered_site(std::string& s, int k) const {
    const std::size_t ks = static_cast<std::size_t>(k);
    const OperandPlan& o = plan.loads[ks];
    const int v = g.sites[ks].value;
    const ir::Node& n = *g.values[static_cast<std::size_t>(v)].node;
    const int W = plan.vector_width;
    std::vector<std::string> terms;
    if (const std::string affine = site_terms(ks, false); affine != "0") terms.push_back(affine);
    for (int q : o.positions)
        terms.push_back(
            fmt::format("{} * p.in{}_g{}", vname(g.gathers[static_cast<std::size_t>(q)].value), k, q));
    const std::string off = fmt::format("{}", fmt::join(terms, " + "));
    const bool run = o.dim_mask >> (plan.rank - 1) & 1u;  // W consecutive elements, else one for every lane
    if (o.index) {
        line(s, 4, fmt::format("const long long {} = p.in{}_base + (long long)({});", vname(v), k, off),
             fmt::format("index in{} (indirect){}: the index along axis {}", k,
                         run ? " at the first element" : ", the same in every lane", n.ints().at(0)));
        return run ? fmt::format("({} + j)", vname(v)) : vname(v);
    }
    const std::string what = fmt::format("input \"{}\" ({})", n.label(), short_location(n.loc()));
    if (!run) {
        line(s, 4,
             fmt::format("const {} {} = lm::to_reg(p.in{}[{}]);", register_type(o.dtype), vname(v), k, off),
             fmt::format("load in{} once (indirect, the same in every lane): {}", k, what));
        return vname(v);
    }
    const std::string_view st = storage_type(o.dtype);
    line(s, 4,
         fmt::format("const lm::vec<{}, {}> a{} = lm::load_vec<{}, {}>(p.in{} + ({}));", st, W, k, st, W, k,
                     off),
         fmt::format("load in{} (indirect, {} bytes of a gathered row): {}", k,
                     W * static_cast<int>(itemsize(o.dtype)), what));
    return fmt::format("lm::to_reg(a{}.v[j])", k);
}

// A matmul epilogue's vector of W elements: `<name>_element<W>(p, i, acc)` computes and stores elements
// i .. i + W - 1 (i a multiple of W, the W in one row of the outputs' shape) with 16-byte loads and
// stores; the caller vouches that every streamed pointer is 16-byte aligned. Each element goes through
// the same body as in `<name>_element`: the same bits.
std::string PointwiseEmitter::element_vector() const {
    if (!plan.gathers.empty())
        throw InternalError(
            "emit_pointwise: a gather in a matmul epilogue (the partition gives a product none)");
    const int W = plan.vector_width;
    const std::string_view at = register_type(plan.loads[static_cast<std::size_t>(acc_site)].dtype);
    std::string s = fmt::format(
        "__device__ {} void {}_element{}(const {}_params& p, const {} i, const lm::vec<{}, {}> acc) {{\n",
        out_of_line ? "__noinline__" : "__forceinline__", name, W, name, idx, at, W);
    const std::vector<std::string> args = vector_operands(s);
    call_uniforms(s, 4);
    compute_and_store_vector(s, 4, args);
    s += "}\n";
    return s;
}

// A scan prologue's vector: the operand's W consecutive elements i .. i + W - 1 of one row, in its register
// type, into `r`; i is a multiple of W (the caller's condition, as select_variant's for the vector variants),
// so that lane j's index is known to be lane 0's with j in its low bits. Each element goes through the same
// body as {name}_element's: the same bits.
std::string PointwiseEmitter::prologue_vector() const {
    if (!plan.gathers.empty() || !plan.has_vector_variant() || plan.outputs.size() != 1)
        throw InternalError(
            "emit_pointwise: a prologue vector of a plan with gathers or without a vector variant");
    const int W = plan.vector_width;
    std::string s = fmt::format(
        "__device__ __forceinline__ void {}_vector(const {}_params& p, const {} i, {} (&r)[{}]) {{\n", name,
        name, idx, register_type(plan.outputs[0].dtype), W);
    const std::vector<std::string> args = vector_operands(s);
    call_uniforms(s, 4);
    line(s, 4, "#pragma unroll");
    line(s, 4, fmt::format("for (int j = 0; j < {}; ++j) {}", W, body_call(args, {"r[j]"})));
    s += "}\n";
    return s;
}

// The arithmetic of the W elements of the vector at element i (operands `args`, indexed by j) and the
// 16-byte stores of every output, at indentation `ind`: the common part of both vector variants.
void PointwiseEmitter::compute_and_store_vector(std::string& s, int ind,
                                                const std::vector<std::string>& args) const {
    const int W = plan.vector_width;
    for (std::size_t o = 0; o < plan.outputs.size(); ++o)
        line(s, ind, fmt::format("lm::vec<{}, {}> o{};", storage_type(plan.outputs[o].dtype), W, o));
    line(s, ind, "#pragma unroll");
    line(s, ind, fmt::format("for (int j = 0; j < {}; ++j) {{", W));
    std::vector<std::string> outs;
    for (std::size_t o = 0; o < plan.outputs.size(); ++o) {
        line(s, ind + 4, fmt::format("{} r{};", register_type(plan.outputs[o].dtype), o));
        outs.push_back(fmt::format("r{}", o));
    }
    line(s, ind + 4, body_call(args, outs, plan.gathers_per_vector()));
    for (std::size_t o = 0; o < plan.outputs.size(); ++o)
        line(s, ind + 4,
             fmt::format("o{}.v[j] = {};", o, store_expr(plan.outputs[o].dtype, fmt::format("r{}", o))));
    line(s, ind, "}");
    for (std::size_t o = 0; o < plan.outputs.size(); ++o) {
        const std::string_view st = storage_type(plan.outputs[o].dtype);
        line(s, ind, fmt::format("lm::store_vec<{}, {}>(p.out{} + i, o{});", st, W, o, o),
             fmt::format("store out{} ({} bytes)", o, W * static_cast<int>(itemsize(plan.outputs[o].dtype))));
    }
}

// The vector variant of an arithmetic-heavy flat kernel: a grid-stride loop over whole vectors; each
// thread issues its next vector's loads before this vector's arithmetic, so its memory traffic overlaps
// its math. Block 0's thread 0 computes the elements after the last whole vector. Every element is
// computed by the same body as in the other variants: the same bits.
std::string PointwiseEmitter::grid_stride_vector_kernel() const {
    const int W = plan.vector_width;
    std::string s = entry(fmt::format("{}_v{}", name, W));
    line(s, 4, fmt::format("const {} step = ({})gridDim.x * ({})blockDim.x * {};", idx, idx, idx, W),
         "elements per pass of the grid");
    line(s, 4,
         fmt::format("{} i = (({})blockIdx.x * ({})blockDim.x + ({})threadIdx.x) * {};", idx, idx, idx, idx,
                     W),
         "first element of this thread's first vector");
    line(s, 4, fmt::format("const {} nv = p.n - p.n % {};", idx, W), "elements in whole vectors");
    line(s, 4, "if (blockIdx.x == 0 && threadIdx.x == 0)");
    line(s, 8, fmt::format("for ({} e = nv; e < p.n; ++e) {}_element(p, e);", idx, name),
         "tail: fewer elements left than a vector");
    line(s, 4, "if (i >= nv) return;");
    std::vector<std::size_t> streamed;
    std::vector<std::string> args;
    for (std::size_t k = 0; k < g.sites.size(); ++k) {
        const OperandPlan& o = plan.loads[k];
        const int v = g.sites[k].value;
        if (o.access == Access::Scalar) {
            if (o.index)
                line(s, 4, fmt::format("const long long {} = p.in{}_base;", vname(v), k),
                     fmt::format("index in{} (scalar)", k));
            else
                line(s, 4,
                     fmt::format("const {} {} = lm::to_reg(p.in{}[0]);", register_type(o.dtype), vname(v), k),
                     fmt::format("load in{} once (scalar)", k));
            args.push_back(vname(v));
            continue;
        }
        if (o.access != Access::Contiguous)
            throw InternalError("emit_pointwise: a grid-stride variant reads a non-contiguous operand");
        if (o.index) {  // the element's own index: computed per lane (lane 0's a multiple of W:
                        // select_variant)
            args.push_back(fmt::format("lm::vector_lane<{}>(p.in{}_base + (long long)i, j)", W, k));
            continue;
        }
        const std::string_view st = storage_type(o.dtype);
        line(s, 4, fmt::format("lm::vec<{}, {}> a{} = lm::load_vec<{}, {}>(p.in{} + i);", st, W, k, st, W, k),
             fmt::format("load in{} (contiguous, {} bytes)", k, W * static_cast<int>(itemsize(o.dtype))));
        streamed.push_back(k);
        args.push_back(fmt::format("lm::to_reg(a{}.v[j])", k));
    }
    call_uniforms(s, 4);
    line(s, 4, "for (;;) {");
    line(s, 8, "const bool more = i < nv - step;", "this thread has another vector");
    for (std::size_t k : streamed)
        line(s, 8, fmt::format("lm::vec<{}, {}> b{};", storage_type(plan.loads[k].dtype), W, k));
    if (!streamed.empty()) {
        line(s, 8, "if (more) {", "the next vector's loads, in flight during this one's arithmetic");
        for (std::size_t k : streamed) {
            const std::string_view st = storage_type(plan.loads[k].dtype);
            line(s, 12, fmt::format("b{} = lm::load_vec<{}, {}>(p.in{} + (i + step));", k, st, W, k));
        }
        line(s, 8, "}");
    }
    compute_and_store_vector(s, 8, args);
    line(s, 8, "if (!more) break;");
    line(s, 8, "i += step;");
    for (std::size_t k : streamed) line(s, 8, fmt::format("a{} = b{};", k, k));
    line(s, 4, "}");
    s += "}\n";
    return s;
}

// The operands of the vector of W elements at flat element `i` (one row's: the multi-index is decomposed
// once), at indentation 4: 16-byte loads of the streamed operands, one load of those that are the same in
// every lane, and for a matmul epilogue the accumulator site's lanes from `acc`. Returns the body's
// arguments, indexed by the lane j.
std::vector<std::string> PointwiseEmitter::vector_operands(std::string& s) const {
    const int W = plan.vector_width;
    const int R = plan.rank;
    std::uint32_t dims = 0;
    for (const auto& o : plan.loads) {
        if (o.access == Access::Strided || o.access == Access::Indirect) dims |= o.dim_mask;
        if (o.access == Access::RowBroadcast) dims |= 1u << (R - 1);
    }
    if (!plan.vector_flat) decompose(s, dims, "i");
    std::vector<std::string> args;
    for (std::size_t k = 0; k < g.sites.size(); ++k) {
        const OperandPlan& o = plan.loads[k];
        const int v = g.sites[k].value;
        const std::string_view st = storage_type(o.dtype);
        const std::string_view rt = register_type(o.dtype);
        if (static_cast<int>(k) == acc_site) {  // the product's W values, from the accumulators
            args.push_back("acc.v[j]");
            continue;
        }
        if (o.access == Access::Indirect) {  // loaded after its gathers' positions (gathered_operands)
            args.emplace_back();
            continue;
        }
        const bool inner_zero = o.access == Access::Strided && !(o.dim_mask >> (R - 1) & 1u);
        if (o.access == Access::Scalar || inner_zero) {
            const std::string off = o.access == Access::Scalar ? "0" : site_terms(k, true);
            if (o.index)
                line(s, 4,
                     fmt::format("const long long {} = p.in{}_base + (long long)({});", vname(v), k, off),
                     fmt::format("index in{} once ({})", k,
                                 o.access == Access::Scalar ? "scalar" : "same in every lane"));
            else
                line(s, 4, fmt::format("const {} {} = lm::to_reg(p.in{}[{}]);", rt, vname(v), k, off),
                     fmt::format("load in{} once ({})", k,
                                 o.access == Access::Scalar ? "scalar" : "same in every lane"));
            args.push_back(vname(v));
            continue;
        }
        std::string off;
        if (o.access == Access::Contiguous)
            off = "i";
        else if (o.access == Access::RowBroadcast)
            off = fmt::format("i{}", R - 1);
        else
            off = fmt::format("({})", site_terms(k, false));
        if (o.index) {  // consecutive along the vector: the lane's index (lane 0's a multiple of W:
                        // select_variant)
            args.push_back(fmt::format("lm::vector_lane<{}>(p.in{}_base + (long long)({}), j)", W, k, off));
            continue;
        }
        line(s, 4,
             fmt::format("const lm::vec<{}, {}> a{} = lm::load_vec<{}, {}>(p.in{} + {});", st, W, k, st, W, k,
                         off),
             fmt::format("load in{} ({}, {} bytes)", k, access_name(o.access),
                         W * static_cast<int>(itemsize(o.dtype))));
        args.push_back(fmt::format("lm::to_reg(a{}.v[j])", k));
    }
    return args;
}

std::string PointwiseEmitter::vector_kernel() const {
    if (plan.grid_stride_blocks > 0) return grid_stride_vector_kernel();
    const int W = plan.vector_width;
    std::string s = entry(fmt::format("{}_v{}", name, W));
    if (plan.index == IndexWidth::I32) {
        line(s, 4, fmt::format("const unsigned g = (blockIdx.x * blockDim.x + threadIdx.x) * {}u;", W),
             "first element of this thread's vector");
        line(s, 4, "if (g >= (unsigned)p.n) return;");
        line(s, 4, "const int i = (int)g;");
    } else {
        line(s, 4,
             fmt::format("const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * {};", W),
             "first element of this thread's vector");
        line(s, 4, "if (i >= p.n) return;");
    }
    line(s, 4, fmt::format("if (p.n - i < {}) {{", W), "tail: fewer elements left than a vector");
    line(s, 8, fmt::format("for ({} e = i; e < p.n; ++e) {}_element(p, e);", idx, name));
    line(s, 8, "return;");
    line(s, 4, "}");
    std::vector<std::string> args = vector_operands(s);
    call_uniforms(s, 4);
    if (plan.gathers_per_vector()) gathered_operands(s, args);
    compute_and_store_vector(s, 4, args);
    s += "}\n";
    return s;
}

}  // namespace detail

}  // namespace loom::codegen
