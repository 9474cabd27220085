// A pointwise plan's space inside a generated host function (llvm_space.hpp).
#include "llvm_space.hpp"

#include <fmt/format.h>

#include "llvm_ops.hpp"
#include "loom/ir/error.hpp"

namespace loom::codegen::llvm_ir {

namespace {

using K = ParamField::Kind;

// <0, s, 2s, ...> as an i64 vector constant.
std::string lane_offsets(int w, int stride) {
    std::string v = "<";
    for (int l = 0; l < w; ++l) v += fmt::format("{}i64 {}", l ? ", " : "", l * stride);
    return v + ">";
}

std::string where(const ir::Node& n) {
    return short_location(n.loc());
}

}  // namespace

Space::Space(Builder& b, const detail::PwGraph& g, const PointwisePlan& plan, std::string tag)
    : b_(b), g_(g), plan_(plan), tag_(std::move(tag)) {
    if (g.sites.size() != plan.loads.size() || g.outputs.size() != plan.outputs.size() ||
        g.scalars.size() != plan.scalar_dtypes.size())
        throw InternalError(
            fmt::format("llvm Space: the plan ({} loads, {} outputs) does not belong to this graph ({}, {})",
                        plan.loads.size(), plan.outputs.size(), g.sites.size(), g.outputs.size()));
}

void Space::load_params(const std::string& base, std::size_t offset) {
    for (const ParamField& pf : plan_.params.fields) {
        std::string ty, comment;
        bool index = false;
        switch (pf.type) {
            case ParamType::Index:
                ty = pf.size == 4 ? "i32" : "i64";
                index = true;
                break;
            case ParamType::Int64:
                ty = "i64";
                break;
            case ParamType::ConstPointer:
            case ParamType::Pointer:
            case ParamType::RawPointer:
                ty = "ptr";
                break;
            case ParamType::Scalar:
                ty = std::string(scalar_type(pf.dtype));
                break;
            case ParamType::Struct:
            case ParamType::Opaque:
                continue;
        }
        switch (pf.kind) {
            case K::InputPointer: {
                const auto& site = g_.sites[static_cast<std::size_t>(pf.a)];
                const ir::Node& in = *g_.inputs[static_cast<std::size_t>(site.input)];
                if (plan_.loads[static_cast<std::size_t>(pf.a)].index)
                    comment = fmt::format(
                        "input {}: iota along axis {}, an index, computed; its index at element 0 ({})",
                        site.input, in.ints().at(0), where(in));
                else
                    comment = fmt::format(
                        "input {}{} {}, {} ({})", site.input,
                        in.label().empty() ? std::string() : fmt::format(" \"{}\"", in.label()),
                        name(in.dtype()), access_name(plan_.loads[static_cast<std::size_t>(pf.a)].access),
                        where(in));
                break;
            }
            case K::OutputPointer:
                comment = fmt::format("output {}, {}", pf.a,
                                      access_name(plan_.outputs[static_cast<std::size_t>(pf.a)].access));
                break;
            case K::OutputCoef:
                comment = fmt::format("out{} stride of dimension {}", pf.a, pf.b);
                break;
            case K::NumElements:
                comment = "elements of the iteration space";
                break;
            case K::Extent:
                comment = fmt::format("extent of dimension {}", pf.a);
                break;
            case K::SiteCoef:
                comment = fmt::format("in{} stride of dimension {}", pf.a, pf.b);
                break;
            case K::SiteDerived:
                comment = fmt::format("in{} stride of t{}", pf.a, pf.b);
                break;
            case K::DerivedOffset:
                comment = fmt::format("t{} linear offset", pf.a);
                break;
            case K::DerivedCoef:
                comment = fmt::format("t{} stride of dimension {}", pf.a, pf.b);
                break;
            case K::DerivedDerived:
                comment = fmt::format("t{} stride of t{}", pf.a, pf.b);
                break;
            case K::DerivedDiv:
                comment = fmt::format("t{} divisor", pf.a);
                break;
            case K::DerivedMod:
                comment = fmt::format("t{} extent", pf.a);
                break;
            case K::Scalar: {
                const ir::Node& sc = *g_.scalars[static_cast<std::size_t>(pf.a)];
                comment = fmt::format("scalar {} ({})", name(sc.dtype()), where(sc));
                break;
            }
            default:
                comment = pf.name;
                break;
        }
        const std::string at =
            b_.let(fmt::format("{}{}.at", tag_, pf.name),
                   fmt::format("getelementptr inbounds i8, ptr {}, i64 {}", base, offset + pf.offset));
        std::string v = b_.let(fmt::format("{}{}", tag_, pf.name),
                               fmt::format("load {}, ptr {}, align {}", ty, at, pf.align), comment);
        if (index && ty == "i32")
            v = b_.let(fmt::format("{}{}.i64", tag_, pf.name), fmt::format("sext i32 {} to i64", v));
        fields_[{static_cast<int>(pf.kind), pf.a, pf.b}] = v;
    }
}

const std::string& Space::field(ParamField::Kind kind, int a, int b) const {
    const auto it = fields_.find({static_cast<int>(kind), a, b});
    if (it == fields_.end())
        throw InternalError(
            fmt::format("llvm Space: no parameter field of kind {} ({}, {})", static_cast<int>(kind), a, b));
    return it->second;
}

std::string Space::index_vector(const Point& pt, int d, int w) {
    const int R = plan_.rank;
    if (d < R - 1)
        return b_.splat(fmt::format("{}i{}.v", tag_, d), "i64", pt.outer.at(static_cast<std::size_t>(d)), w);
    if (w == 1) return pt.inner;
    const std::string s = b_.splat(fmt::format("{}i{}.s", tag_, d), "i64", pt.inner, w);
    return b_.let(fmt::format("{}i{}.v", tag_, d),
                  fmt::format("add <{} x i64> {}, {}", w, s, lane_offsets(w, pt.stride)));
}

std::vector<std::string> Space::derived_indices(const Point& pt, int w, std::string_view tag) {
    // t_m = ((offset + sum_d coef_d i_d + sum_j coef_j t_j) / div) % mod: a reshape that is not a strided
    // view, decomposed per element (pointwise_plan.hpp).
    std::vector<std::string> t;
    const std::string I = vec("i64", w);
    std::vector<std::string> idx(static_cast<std::size_t>(plan_.rank));
    // x86 has no vector integer division: a udiv of <16 x i64> becomes 16 scalar divisions, with the lanes
    // moved out and back (slow to run, and a large part of LLVM's time on such kernels). With 32-bit indices
    // every dividend and divisor is below 2^31, so vectors divide as doubles: a / d rounded to nearest
    // truncates to the integer quotient exactly whenever a + d <= 2^53 (the quotient q is exact, and
    // a / d <= q + 1 - 1/d stays below the midpoint between q + 1 and the double before it). The host runs
    // kernels rounding to nearest (docs/llvm-backend.md, "Threads").
    const bool fp_divide = w > 1 && plan_.index == IndexWidth::I32;
    auto quotient = [&](const std::string& name, const std::string& a, const std::string& d) {
        if (!fp_divide) return b_.let(name, fmt::format("udiv {} {}, {}", I, a, d));
        const std::string N = vec("i32", w), D = vec("double", w);
        const std::string af = b_.let(
            name + ".af", fmt::format("sitofp {} {} to {}", N,
                                      b_.let(name + ".a", fmt::format("trunc {} {} to {}", I, a, N)), D));
        const std::string df = b_.let(
            name + ".df", fmt::format("sitofp {} {} to {}", N,
                                      b_.let(name + ".d", fmt::format("trunc {} {} to {}", I, d, N)), D));
        const std::string q = b_.let(name + ".qf", fmt::format("fdiv {} {}, {}", D, af, df));
        return b_.let(name,
                      fmt::format("sext {} {} to {}", N,
                                  b_.let(name + ".q32", fmt::format("fptosi {} {} to {}", D, q, N)), I));
    };
    for (std::size_t m = 0; m < plan_.derived.size(); ++m) {
        const DerivedPlan& dp = plan_.derived[m];
        const int mi = static_cast<int>(m);
        std::string acc = b_.splat(fmt::format("{}t{}.off", tag, m), "i64", field(K::DerivedOffset, mi), w);
        for (int d = 0; d < plan_.rank; ++d) {
            if (!(dp.dim_mask >> d & 1u)) continue;
            if (idx[static_cast<std::size_t>(d)].empty())
                idx[static_cast<std::size_t>(d)] = index_vector(pt, d, w);
            const std::string c =
                b_.splat(fmt::format("{}t{}.c{}", tag, m, d), "i64", field(K::DerivedCoef, mi, d), w);
            const std::string p =
                b_.let(fmt::format("{}t{}.p{}", tag, m, d),
                       fmt::format("mul {} {}, {}", I, idx[static_cast<std::size_t>(d)], c));
            acc = b_.let(fmt::format("{}t{}.s", tag, m), fmt::format("add {} {}, {}", I, acc, p));
        }
        for (int j : dp.derived) {
            const std::string c =
                b_.splat(fmt::format("{}t{}.d{}", tag, m, j), "i64", field(K::DerivedDerived, mi, j), w);
            const std::string p =
                b_.let(fmt::format("{}t{}.q{}", tag, m, j),
                       fmt::format("mul {} {}, {}", I, t.at(static_cast<std::size_t>(j)), c));
            acc = b_.let(fmt::format("{}t{}.s", tag, m), fmt::format("add {} {}, {}", I, acc, p));
        }
        if (dp.has_div) {
            const std::string dv =
                b_.splat(fmt::format("{}t{}.div", tag, m), "i64", field(K::DerivedDiv, mi), w);
            acc = quotient(fmt::format("{}t{}.q", tag, m), acc, dv);
        }
        if (dp.has_mod) {
            const std::string md =
                b_.splat(fmt::format("{}t{}.mod", tag, m), "i64", field(K::DerivedMod, mi), w);
            if (fp_divide) {
                const std::string q = quotient(fmt::format("{}t{}.rq", tag, m), acc, md);
                const std::string qm =
                    b_.let(fmt::format("{}t{}.rm", tag, m), fmt::format("mul {} {}, {}", I, q, md));
                acc = b_.let(fmt::format("{}t{}.r", tag, m), fmt::format("sub {} {}, {}", I, acc, qm));
            } else {
                acc = b_.let(fmt::format("{}t{}.r", tag, m), fmt::format("urem {} {}, {}", I, acc, md));
            }
        }
        b_.f.note(fmt::format("t{} = reshape: index of the operand's dimension", m));
        t.push_back(acc);
    }
    return t;
}

Space::Address Space::site_address(int s, const Point& pt, int w, std::string_view name) {
    const OperandPlan& o = plan_.loads[static_cast<std::size_t>(s)];
    const int R = plan_.rank;
    const std::string I = vec("i64", w);
    switch (o.access) {
        case Access::Contiguous:
            return {Address::Run, pt.flat};
        case Access::RowBroadcast:
            return {Address::Run, pt.inner};
        case Access::Scalar:
            return {Address::One, "0"};
        case Access::Strided:
        case Access::Gathered:
        case Access::Indirect:
            break;
    }
    // The row part: the outer dimensions' terms (the same for every lane).
    std::string off = "0";
    for (int d = 0; d < R - 1; ++d) {
        if (!(o.dim_mask >> d & 1u)) continue;
        const std::string p = b_.let(fmt::format("{}.o{}", name, d),
                                     fmt::format("mul i64 {}, {}", pt.outer.at(static_cast<std::size_t>(d)),
                                                 field(K::SiteCoef, s, d)));
        off = off == "0" ? p : b_.let(fmt::format("{}.o", name), fmt::format("add i64 {}, {}", off, p));
    }
    const bool inner = o.dim_mask >> (R - 1) & 1u;
    if (o.access == Access::Strided) {
        if (!inner) return {Address::One, off};
        if (o.unit_inner)
            return {Address::Run, off == "0" ? pt.inner
                                             : b_.let(fmt::format("{}.off", name),
                                                      fmt::format("add i64 {}, {}", off, pt.inner))};
        const std::string iv = index_vector(pt, R - 1, w);
        const std::string c = b_.splat(fmt::format("{}.c", name), "i64", field(K::SiteCoef, s, R - 1), w);
        const std::string p = b_.let(fmt::format("{}.ip", name), fmt::format("mul {} {}, {}", I, iv, c));
        const std::string ob = b_.splat(fmt::format("{}.ob", name), "i64", off, w);
        return {Address::Lanes, b_.let(fmt::format("{}.offs", name), fmt::format("add {} {}, {}", I, ob, p))};
    }
    // Gathered: the derived indices too; Indirect: the gathers' positions. Where those are the same in every
    // lane (an index that does not move along the row: an embedding's row id), the row part is computed once,
    // from lane 0, and the lanes read a run of the row (unit inner stride) or one element, as a strided
    // view's lanes do.
    const bool uniform = w > 1 && (!inner || o.unit_inner) && row_parts_uniform(s);
    const int lw = uniform ? 1 : w;  // the width of the offset computed below
    const std::string L = vec("i64", lw);
    const auto at_width = [&](const std::string& v, const std::string& nm) {  // a w-lane value, at width lw
        return uniform ? b_.let(nm, fmt::format("extractelement {} {}, i64 0", I, v)) : v;
    };
    std::string offs = b_.splat(fmt::format("{}.ob", name), "i64", off, lw);
    if (inner && !uniform) {
        const std::string iv = index_vector(pt, R - 1, w);
        std::string p = iv;
        if (!o.unit_inner) {
            const std::string c = b_.splat(fmt::format("{}.c", name), "i64", field(K::SiteCoef, s, R - 1), w);
            p = b_.let(fmt::format("{}.ip", name), fmt::format("mul {} {}, {}", I, iv, c));
        }
        offs = b_.let(fmt::format("{}.offs", name), fmt::format("add {} {}, {}", I, offs, p));
    }
    const std::vector<std::string> t = derived_indices(pt, w, fmt::format("{}.", name));
    for (int m : o.derived) {
        const std::string c =
            b_.splat(fmt::format("{}.tc{}", name, m), "i64", field(K::SiteDerived, s, m), lw);
        const std::string tm = at_width(t.at(static_cast<std::size_t>(m)), fmt::format("{}.t{}", name, m));
        const std::string p = b_.let(fmt::format("{}.tp{}", name, m), fmt::format("mul {} {}, {}", L, tm, c));
        offs = b_.let(fmt::format("{}.offs", name), fmt::format("add {} {}, {}", L, offs, p));
    }
    for (int q : o.positions) {
        const std::string c =
            b_.splat(fmt::format("{}.gc{}", name, q), "i64", field(K::SitePosition, s, q), lw);
        const std::string pq = at_width(positions_.at(q), fmt::format("{}.g{}", name, q));
        const std::string p = b_.let(fmt::format("{}.gp{}", name, q), fmt::format("mul {} {}, {}", L, pq, c));
        offs = b_.let(fmt::format("{}.offs", name), fmt::format("add {} {}, {}", L, offs, p));
    }
    if (!uniform) return {Address::Lanes, offs};
    if (!inner) return {Address::One, offs};
    return {Address::Run, b_.let(fmt::format("{}.off", name), fmt::format("add i64 {}, {}", offs, pt.inner))};
}

bool Space::row_parts_uniform(int s) {
    if (!uniform_) uniform_ = detail::lane_uniform_values(g_, plan_, static_cast<bool>(external));
    return !external && detail::row_parts_uniform(*uniform_, g_, plan_.loads.at(static_cast<std::size_t>(s)));
}

std::string Space::gather_position(int q, const std::string& v, DType index_dtype, int w,
                                   std::string_view name, std::string_view comment) {
    const std::string I = vec("i64", w), B = vec("i1", w);
    const std::string nm(name);
    const std::string v64 = index_dtype == DType::Int64
                                ? v
                                : b_.let(nm + ".x", fmt::format("sext {} {} to {}", vec("i32", w), v, I));
    const std::string n = b_.splat(nm + ".n", "i64", field(K::GatherExtent, q), w);
    const std::string zero = splat_constant("i64", "0", w);
    const std::string neg = b_.let(nm + ".neg", fmt::format("icmp slt {} {}, {}", I, v64, zero));
    const std::string adj = b_.let(nm + ".adj", fmt::format("add {} {}, {}", I, v64, n));
    const std::string k =
        b_.let(nm + ".k", fmt::format("select {} {}, {} {}, {} {}", B, neg, I, adj, I, v64), comment);
    const bool checked = plan_.gathers.at(static_cast<std::size_t>(q)).mode == ir::IndexMode::Checked;
    if (!checked) {  // the nearer end
        const std::string low = b_.let(nm + ".low", fmt::format("icmp slt {} {}, {}", I, k, zero));
        const std::string k1 =
            b_.let(nm + ".k1", fmt::format("select {} {}, {} {}, {} {}", B, low, I, zero, I, k));
        const std::string last =
            b_.let(nm + ".last", fmt::format("sub {} {}, {}", I, n, splat_constant("i64", "1", w)));
        const std::string high = b_.let(nm + ".high", fmt::format("icmp sge {} {}, {}", I, k1, n));
        return b_.let(nm, fmt::format("select {} {}, {} {}, {} {}", B, high, I, last, I, k1), "clamped");
    }
    const std::string lo = b_.let(nm + ".lo", fmt::format("icmp sge {} {}, {}", I, k, zero));
    const std::string hi = b_.let(nm + ".hi", fmt::format("icmp slt {} {}, {}", I, k, n));
    const std::string ok = b_.let(nm + ".ok", fmt::format("and {} {}, {}", B, lo, hi));
    const std::string bad =
        b_.let(nm + ".bad", fmt::format("xor {} {}, {}", B, ok, splat_constant("i1", "true", w)));
    std::string any = bad;
    if (w > 1)
        any = b_.intrinsic(nm + ".any", "llvm.vector.reduce.or", "i1", w, {fmt::format("{} {}", B, bad)}, {},
                           "i1");
    const std::string err_label = b_.f.fresh_label(nm + ".err");
    const std::string cont_label = b_.f.fresh_label(nm + ".cont");
    b_.f.emit(fmt::format("br i1 {}, label %{}, label %{}", any, err_label, cont_label),
              "an index out of range: recorded, never read");
    b_.f.label(err_label);
    std::string first = v64;
    if (w > 1) {  // the first offending lane's index
        const std::string bits = b_.let(nm + ".bits", fmt::format("bitcast <{} x i1> {} to i{}", w, bad, w));
        const std::string cz = fmt::format("llvm.cttz.i{}", w);
        b_.module().declare(cz, fmt::format("declare i{} @{}(i{}, i1 immarg)", w, cz, w));
        const std::string lane =
            b_.let(nm + ".lane", fmt::format("call i{} @{}(i{} {}, i1 true)", w, cz, w, bits));
        first = b_.let(nm + ".first", fmt::format("extractelement <{} x i64> {}, i{} {}", w, v64, w, lane));
    }
    b_.module().declare("loom_gather_error", "declare void @loom_gather_error(ptr, i64, i64)");
    b_.f.emit(fmt::format("call void @loom_gather_error(ptr {}, i64 {}, i64 {})", field(K::ErrorWord),
                          field(K::GatherId, q), first));
    b_.f.emit(fmt::format("br label %{}", cont_label));
    b_.f.label(cont_label);
    return b_.let(nm, fmt::format("select {} {}, {} {}, {} {}", B, ok, I, k, I, zero), "checked");
}

std::string Space::site_value(int s, const Point& pt, int w, std::string_view name) {
    const OperandPlan& o = plan_.loads[static_cast<std::size_t>(s)];
    if (external) {
        std::string v = external(o.input, w);
        if (!v.empty()) return v;
    }
    const ir::Node& in = *g_.inputs[static_cast<std::size_t>(o.input)];
    Address a = site_address(s, pt, w, name);
    const std::string I = vec("i64", w);
    if (a.kind == Address::Run && pt.stride != 1 && w > 1) {  // lanes `stride` apart: one offset per lane
        const std::string first = b_.splat(fmt::format("{}.first", name), "i64", a.off, w);
        a = {Address::Lanes, b_.let(fmt::format("{}.lanes", name),
                                    fmt::format("add {} {}, {}", I, first, lane_offsets(w, pt.stride)))};
    }
    if (o.index) {
        // An iota: the value is the coordinate itself, base + offset, computed (no memory).
        const std::string what =
            fmt::format("index in{}: iota ({}, {})", s, access_name(o.access), where(in));
        const std::string& base = field(K::InputPointer, s);
        switch (a.kind) {
            case Address::Run: {
                const std::string first =
                    b_.let(fmt::format("{}.first", name), fmt::format("add i64 {}, {}", base, a.off));
                if (w == 1) return first;
                const std::string all = b_.splat(fmt::format("{}.all", name), "i64", first, w);
                return b_.let(std::string(name),
                              fmt::format("add {} {}, {}", I, all, lane_offsets(w, pt.stride)), what);
            }
            case Address::One: {
                const std::string v =
                    b_.let(fmt::format("{}.one", name), fmt::format("add i64 {}, {}", base, a.off), what);
                return b_.splat(std::string(name), "i64", v, w);
            }
            case Address::Lanes: {
                const std::string bv = b_.splat(fmt::format("{}.base", name), "i64", base, w);
                return b_.let(std::string(name), fmt::format("add {} {}, {}", I, bv, a.off), what);
            }
        }
    }
    const DType dt = o.dtype;
    const std::string st(storage_type(dt));
    const int esz = static_cast<int>(itemsize(dt));
    const std::string V = vec(st, w);
    const std::string& base = field(K::InputPointer, s);
    const std::string what =
        fmt::format("load in{}:{} {} ({}, {})", s,
                    in.label().empty() ? std::string() : fmt::format(" \"{}\"", in.label()), loom::name(dt),
                    access_name(o.access), where(in));
    std::string raw;
    switch (a.kind) {
        case Address::Run: {
            const std::string p =
                b_.let(fmt::format("{}.p", name),
                       fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", st, base, a.off));
            raw =
                b_.let(fmt::format("{}.m", name), fmt::format("load {}, ptr {}, align {}", V, p, esz), what);
            break;
        }
        case Address::One: {  // the same element in every lane
            const std::string p =
                b_.let(fmt::format("{}.p", name),
                       fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", st, base, a.off));
            const std::string v =
                b_.let(fmt::format("{}.m", name), fmt::format("load {}, ptr {}, align {}", st, p, esz), what);
            raw = b_.splat(fmt::format("{}.all", name), st, v, w);
            break;
        }
        case Address::Lanes: {
            if (w == 1) {
                const std::string p =
                    b_.let(fmt::format("{}.p", name),
                           fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", st, base, a.off));
                raw = b_.let(fmt::format("{}.m", name), fmt::format("load {}, ptr {}, align {}", st, p, esz),
                             what);
                break;
            }
            const std::string ptrs =
                b_.let(fmt::format("{}.ptrs", name),
                       fmt::format("getelementptr inbounds {}, ptr {}, {} {}", st, base, I, a.off));
            const std::string nm = fmt::format("llvm.masked.gather.{}.v{}p0", mangle(st, w), w);
            b_.module().declare(
                nm, fmt::format("declare {} @{}(<{} x ptr>, i32 immarg, <{} x i1>, {})", V, nm, w, w, V));
            raw =
                b_.let(fmt::format("{}.m", name),
                       fmt::format("call {} @{}(<{} x ptr> {}, i32 {}, <{} x i1> splat (i1 true), {} poison)",
                                   V, nm, w, ptrs, esz, w, V),
                       what);
            break;
        }
    }
    return b_.from_storage(dt, raw, w);
}

std::vector<std::string> Space::evaluate(const std::vector<int>& outputs, const Point& pt, int w,
                                         std::string_view tag, const std::map<int, std::string>& known) {
    std::vector<std::string> value(g_.values.size());
    for (const auto& [o, v] : known)
        value[static_cast<std::size_t>(g_.outputs.at(static_cast<std::size_t>(o)))] = v;
    std::vector<bool> needed(g_.values.size(), false);
    for (int o : outputs) needed[static_cast<std::size_t>(g_.outputs.at(static_cast<std::size_t>(o)))] = true;
    // A checked gather checks its index even where no load reads at its position (its operand a constant or
    // a scalar broadcast, every position giving the same value): the error is part of its result.
    for (std::size_t q = 0; q < g_.gathers.size(); ++q)
        if (plan_.gathers.at(q).mode == ir::IndexMode::Checked)
            needed[static_cast<std::size_t>(g_.gathers[q].value)] = true;
    for (std::size_t k = g_.values.size(); k-- > 0;) {
        if (!needed[k] || !value[k].empty()) continue;
        for (int a : g_.values[k].args) needed[static_cast<std::size_t>(a)] = true;
        const int site = g_.values[k].site;  // an indirect load needs its gathers' positions first
        if (site >= 0)
            for (int q : plan_.loads[static_cast<std::size_t>(site)].positions)
                needed[static_cast<std::size_t>(g_.gathers[static_cast<std::size_t>(q)].value)] = true;
    }
    for (std::size_t k = 0; k < g_.values.size(); ++k) {
        if (!needed[k] || !value[k].empty()) continue;
        const detail::PwValue& v = g_.values[k];
        const ir::Node& n = *v.node;
        const std::string nm = fmt::format("{}{}v{}", tag_, tag, k);
        switch (ir::info(n.op()).kind) {
            case ir::OpKind::Leaf:
                if (n.op() == ir::Op::Input || n.op() == ir::Op::Iota) {  // an iota's site computes its index
                    value[k] = site_value(v.site, pt, w, nm);
                } else if (n.op() == ir::Op::Scalar) {
                    value[k] =
                        b_.splat(nm, scalar_type(n.dtype()), field(K::Scalar, g_.scalar_number.at(&n)), w);
                } else {  // a constant: an operand, no instruction
                    value[k] = splat_constant(scalar_type(n.dtype()), literal(n.value(), n.dtype()), w);
                }
                break;
            case ir::OpKind::Unary:
            case ir::OpKind::Binary:
            case ir::OpKind::Ternary: {
                std::vector<std::string> args;
                for (int a : v.args) args.push_back(value[static_cast<std::size_t>(a)]);
                const std::string op = n.op() == ir::Op::Cast ? fmt::format("cast to {}", name(n.dtype()))
                                                              : std::string(ir::op_name(n.op()));
                value[k] = emit_elementwise(b_, n, args, w, nm, fmt::format("{} ({})", op, where(n)));
                break;
            }
            case ir::OpKind::Gather: {
                const std::string api(ir::gather_api_name(static_cast<ir::GatherApi>(n.ints().at(2))));
                value[k] = gather_position(v.gather, value[static_cast<std::size_t>(v.args.at(0))],
                                           n.operand(1)->dtype(), w, nm,
                                           fmt::format("{} position g{} ({})", api, v.gather, where(n)));
                positions_[v.gather] = value[k];
                break;
            }
            case ir::OpKind::View:
            case ir::OpKind::Reduce:
            case ir::OpKind::Product:
            case ir::OpKind::Attention:
            case ir::OpKind::Scan:
            case ir::OpKind::Scatter:
                throw InternalError(
                    "llvm Space: a view, reduction, product, attention, scan or scatter as a value");
        }
    }
    std::vector<std::string> out;
    for (int o : outputs)
        out.push_back(value[static_cast<std::size_t>(g_.outputs.at(static_cast<std::size_t>(o)))]);
    return out;
}

std::string Space::output_address(int o, const std::string& flat) {
    const std::string st(storage_type(plan_.outputs.at(static_cast<std::size_t>(o)).dtype));
    return b_.let(fmt::format("{}out{}.p", tag_, o), fmt::format("getelementptr inbounds {}, ptr {}, i64 {}",
                                                                 st, field(K::OutputPointer, o), flat));
}

void Space::store_output(int o, const std::string& v, const std::string& flat, int w,
                         std::string_view comment, bool nontemporal) {
    const DType dt = plan_.outputs.at(static_cast<std::size_t>(o)).dtype;
    const std::string st(storage_type(dt));
    const std::string sv = b_.to_storage(dt, v, w);
    const std::string p = output_address(o, flat);
    std::string note = comment.empty() ? fmt::format("store out{} ({})", o, name(dt)) : std::string(comment);
    if (nontemporal) {
        // An aligned non-temporal store (MOVNT on x86): the line goes to memory without being read first or
        // kept in the caches.
        b_.f.emit(fmt::format("store {} {}, ptr {}, align {}, !nontemporal !{{i32 1}}", vec(st, w), sv, p,
                              static_cast<std::size_t>(w) * itemsize(dt)),
                  note + ", bypassing the caches");
        return;
    }
    b_.f.emit(fmt::format("store {} {}, ptr {}, align {}", vec(st, w), sv, p, itemsize(dt)), note);
}

std::string Space::load_output(int o, const std::string& flat, int w, std::string_view comment) {
    const DType dt = plan_.outputs.at(static_cast<std::size_t>(o)).dtype;
    const std::string st(storage_type(dt));
    const std::string p = output_address(o, flat);
    const std::string raw =
        b_.let(fmt::format("{}out{}.m", tag_, o),
               fmt::format("load {}, ptr {}, align {}", vec(st, w), p, itemsize(dt)),
               comment.empty() ? fmt::format("load out{} ({})", o, name(dt)) : std::string(comment));
    return b_.from_storage(dt, raw, w);
}

void Space::store_output_at(int o, const std::string& v, const Point& pt, int w, bool nontemporal) {
    const OperandPlan& op = plan_.outputs.at(static_cast<std::size_t>(o));
    if (op.access != Access::Strided) {
        store_output(o, v, pt.flat, w, {}, nontemporal);
        return;
    }
    const int R = plan_.rank;
    const DType dt = op.dtype;
    const std::string st(storage_type(dt));
    const std::string I = vec("i64", w);
    const std::string nm = fmt::format("{}out{}", tag_, o);
    // The row part: the outer dimensions' terms (the same for every lane).
    std::string off = "0";
    for (int d = 0; d < R - 1; ++d) {
        if (!(op.dim_mask >> d & 1u)) continue;
        const std::string p = b_.let(fmt::format("{}.o{}", nm, d),
                                     fmt::format("mul i64 {}, {}", pt.outer.at(static_cast<std::size_t>(d)),
                                                 field(K::OutputCoef, o, d)));
        off = off == "0" ? p : b_.let(fmt::format("{}.o", nm), fmt::format("add i64 {}, {}", off, p));
    }
    const bool inner = op.dim_mask >> (R - 1) & 1u;
    const std::string sv = b_.to_storage(dt, v, w);
    const std::string note = fmt::format("store out{} ({}, strided: a view)", o, name(dt));
    const std::string& base = field(K::OutputPointer, o);
    if (!inner || (op.unit_inner && pt.stride == 1) || w == 1) {
        if (!inner && w > 1)
            throw InternalError("llvm Space: a vector of lanes stored to one element of a strided output");
        std::string at = off;
        if (inner) {
            std::string ip = pt.inner;
            if (!op.unit_inner)
                ip = b_.let(fmt::format("{}.ip", nm),
                            fmt::format("mul i64 {}, {}", pt.inner, field(K::OutputCoef, o, R - 1)));
            at = off == "0" ? ip : b_.let(fmt::format("{}.off", nm), fmt::format("add i64 {}, {}", off, ip));
        }
        const std::string p = b_.let(fmt::format("{}.p", nm),
                                     fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", st, base, at));
        b_.f.emit(fmt::format("store {} {}, ptr {}, align {}", vec(st, w), sv, p, itemsize(dt)), note);
        return;
    }
    // One offset per lane: a scatter.
    const std::string iv = index_vector(pt, R - 1, w);
    std::string ip = iv;
    if (!op.unit_inner) {
        const std::string c = b_.splat(fmt::format("{}.c", nm), "i64", field(K::OutputCoef, o, R - 1), w);
        ip = b_.let(fmt::format("{}.ip", nm), fmt::format("mul {} {}, {}", I, iv, c));
    }
    const std::string ob = b_.splat(fmt::format("{}.ob", nm), "i64", off, w);
    const std::string offs = b_.let(fmt::format("{}.offs", nm), fmt::format("add {} {}, {}", I, ob, ip));
    const std::string ptrs =
        b_.let(fmt::format("{}.ptrs", nm),
               fmt::format("getelementptr inbounds {}, ptr {}, {} {}", st, base, I, offs));
    const std::string V = vec(st, w);
    const std::string fn = fmt::format("llvm.masked.scatter.{}.v{}p0", mangle(st, w), w);
    b_.module().declare(fn,
                        fmt::format("declare void @{}({}, <{} x ptr>, i32 immarg, <{} x i1>)", fn, V, w, w));
    b_.f.emit(fmt::format("call void @{}({} {}, <{} x ptr> {}, i32 {}, <{} x i1> splat (i1 true))", fn, V, sv,
                          w, ptrs, itemsize(dt), w),
              note);
}

}  // namespace loom::codegen::llvm_ir
