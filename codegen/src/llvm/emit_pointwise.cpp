// The LLVM emitter of pointwise kernels (codegen/llvm/emit.hpp): one function over a task's range of the
// flat iteration space, walked row by row (the innermost dimension of the coalesced space), each row in
// vector steps of `lanes` elements and a scalar tail computed by the same instructions at width 1.
#include <fmt/format.h>

#include "llvm_ir.hpp"
#include "llvm_space.hpp"
#include "loom/codegen/llvm/emit.hpp"
#include "loom/codegen/plan/names.hpp"
#include "loom/ir/error.hpp"

namespace loom::codegen {

namespace {

using namespace llvm_ir;

// The banner: the plan as the host runs it.
std::string banner(std::string_view kind, const std::string& name, std::string_view user,
                   const std::string& lines) {
    std::string shown(user);
    for (char& c : shown)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    std::string s =
        fmt::format("; ---- Loom {} kernel {} (from \"{}\"), LLVM IR for the host ----\n", kind, name, shown);
    for (std::size_t b = 0, e; b < lines.size(); b = e + 1) {
        e = lines.find('\n', b);
        if (e == std::string::npos) e = lines.size();
        if (e > b) s += fmt::format("; {}\n", std::string_view(lines).substr(b, e - b));
    }
    return s;
}

// The walk over a task's elements [begin, end), row by row: the function's stack slots, the current row's
// values and the parts that emit the walk's blocks, called in the order of the function's text.
struct RowWalk {
    Module& m;
    Function& f;
    Builder& b;
    Space& sp;
    const PointwisePlan& plan;
    const int R, W;              // the iteration space's rank, the vector steps' lanes
    std::vector<int> all;        // every output, in order
    std::vector<bool> streamed;  // the outputs whose vector steps may store non-temporally
    std::string e_slot, j_slot, k_slot;
    std::vector<std::string> i_slot;
    // The current row: its first element's flat index (e) and innermost index (j0), its outer indices, its
    // elements in the task (cnt) and the innermost index past them (jend).
    std::string e, j0, cnt, jend;
    std::vector<std::string> outer;

    RowWalk(Module& m, Function& f, Builder& b, Space& sp, const detail::PwGraph& g,
            const PointwisePlan& plan, const HostSchedule& schedule)
        : m(m), f(f), b(b), sp(sp), plan(plan), R(plan.rank), W(schedule.lanes), streamed(g.outputs.size()) {
        for (std::size_t o = 0; o < g.outputs.size(); ++o) all.push_back(static_cast<int>(o));
        for (std::size_t o = 0; o < g.outputs.size(); ++o)
            streamed[o] = schedule.stream && host_streamed_output(plan.outputs[o], W);
    }

    // The stack slots of the walk's indices, in the function's entry block.
    void stack_slots() {
        e_slot = f.alloca_("e.slot", "i64");  // flat index of the current row's first element
        j_slot = f.alloca_("j.slot", "i64");  // innermost index of the current row's first element
        k_slot = f.alloca_("k.slot", "i64");  // innermost index of the current step
        for (int d = 0; d + 1 < R; ++d) i_slot.push_back(f.alloca_(fmt::format("i{}.slot", d), "i64"));
    }

    // The task's first element, %begin, as a multi-index of the iteration space.
    void first_element() {
        f.note("the task's first element as a multi-index of the iteration space");
        f.emit(fmt::format("store i64 %begin, ptr {}", e_slot));
        if (R == 1) {
            f.emit(fmt::format("store i64 %begin, ptr {}", j_slot));
        } else {
            std::string q = b.let("q", fmt::format("udiv i64 %begin, {}", sp.extent(R - 1)));
            const std::string j = b.let("j0", fmt::format("urem i64 %begin, {}", sp.extent(R - 1)));
            f.emit(fmt::format("store i64 {}, ptr {}", j, j_slot));
            for (int d = R - 2; d >= 1; --d) {
                const std::string id =
                    b.let(fmt::format("i{}.0", d), fmt::format("urem i64 {}, {}", q, sp.extent(d)));
                f.emit(fmt::format("store i64 {}, ptr {}", id, i_slot[static_cast<std::size_t>(d)]));
                q = b.let("q", fmt::format("udiv i64 {}, {}", q, sp.extent(d)));
            }
            f.emit(fmt::format("store i64 {}, ptr {}", q, i_slot[0]));
        }
        f.emit("br label %row");
    }

    // A row: the elements of the task on one line of the innermost dimension.
    void row_head() {
        f.label("row");
        e = b.let("e", fmt::format("load i64, ptr {}", e_slot));
        j0 = b.let("j", fmt::format("load i64, ptr {}", j_slot));
        for (int d = 0; d + 1 < R; ++d)
            outer.push_back(b.let(fmt::format("i{}", d),
                                  fmt::format("load i64, ptr {}", i_slot[static_cast<std::size_t>(d)])));
        const std::string left = b.let("left", "sub i64 %end, " + e);
        cnt = left;
        if (R > 1) {
            const std::string room = b.let("room", fmt::format("sub i64 {}, {}", sp.extent(R - 1), j0));
            cnt = b.let("cnt", fmt::format("call i64 @llvm.umin.i64(i64 {}, i64 {})", left, room),
                        "elements of this row in the task");
            m.declare("llvm.umin.i64", "declare i64 @llvm.umin.i64(i64, i64)");
        }
        jend = b.let("jend", fmt::format("add i64 {}, {}", j0, cnt));
        f.emit(fmt::format("store i64 {}, ptr {}", j0, k_slot));
    }

    // The flat index of innermost index k of this row.
    std::string flat_at(const std::string& k, std::string_view tag) {
        if (R == 1) return k;
        const std::string dk = b.let(fmt::format("{}dk", tag), fmt::format("sub i64 {}, {}", k, j0));
        return b.let(fmt::format("{}flat", tag), fmt::format("add i64 {}, {}", e, dk));
    }

    // Steps of width w from the position in k.slot while a whole step fits before `end`.
    void steps(std::string_view loop, std::string_view tag, int w, const std::string& end, bool nontemporal) {
        std::string next;
        b.loop(
            loop, k_slot,
            [&](const std::string& k) {
                next = b.let(fmt::format("{}k.next", tag), fmt::format("add i64 {}, {}", k, w));
                return b.let(
                    fmt::format("{}more", tag), fmt::format("icmp ule i64 {}, {}", next, end),
                    w > 1 ? fmt::format("a whole vector of {} elements left", w) : "an element left");
            },
            [&](const std::string& k) {
                const Point pt{outer, k, flat_at(k, tag)};
                const std::vector<std::string> vals = sp.evaluate(all, pt, w, tag);
                for (std::size_t o = 0; o < vals.size(); ++o)
                    sp.store_output_at(static_cast<int>(o), vals[o], pt, w, nontemporal && streamed[o]);
            },
            [&](const std::string&) { return next; });
    }

    // Non-temporal stores need addresses aligned to the vector: width-1 steps up to the first position where
    // the first streamed output is aligned, then vector steps that stream, when every streamed output is
    // aligned there (outputs of other alignments, or not aligned to their elements, store as usual).
    void streaming_steps() {
        f.note(
            "streaming: width-1 steps up to the first position where every streamed output is aligned to its "
            "vector, "
            "then vector steps with non-temporal stores");
        std::size_t s0 = 0;
        while (!streamed[s0]) ++s0;
        const std::size_t esz0 = itemsize(plan.outputs[s0].dtype);
        const std::string a0 =
            b.let("st.a0",
                  fmt::format("ptrtoint ptr {} to i64",
                              sp.output_address(static_cast<int>(s0), flat_at(j0, "st0."))),
                  fmt::format("out{} at the row's first element", s0));
        const std::string mis = b.let("st.mis", fmt::format("and i64 {}, {}", a0, W * esz0 - 1));
        const std::string gap0 = b.let("st.gap0", fmt::format("sub i64 {}, {}", W * esz0, mis));
        const std::string gap = b.let("st.gap", fmt::format("and i64 {}, {}", gap0, W * esz0 - 1),
                                      "bytes to the next aligned vector");
        const std::string peel =
            b.let("st.peel", fmt::format("udiv i64 {}, {}", gap, esz0), "elements before it");
        const std::string kstart = b.let("st.k", fmt::format("add i64 {}, {}", j0, peel));
        const std::string kfit = b.let("st.kw", fmt::format("add i64 {}, {}", kstart, W));
        std::string ok =
            b.let("st.room", fmt::format("icmp ule i64 {}, {}", kfit, jend), "a whole vector after it");
        if (esz0 > 1) {
            const std::string el = b.let("st.el", fmt::format("and i64 {}, {}", a0, esz0 - 1));
            const std::string el0 = b.let("st.el0", fmt::format("icmp eq i64 {}, 0", el),
                                          fmt::format("out{} aligned to its elements", s0));
            ok = b.let("st.ok", fmt::format("and i1 {}, {}", ok, el0));
        }
        const std::string fstart = flat_at(kstart, "st.");
        for (std::size_t o = s0 + 1; o < streamed.size(); ++o) {
            if (!streamed[o]) continue;
            const std::size_t v = static_cast<std::size_t>(W) * itemsize(plan.outputs[o].dtype);
            const std::string ao =
                b.let(fmt::format("st.a{}", o),
                      fmt::format("ptrtoint ptr {} to i64", sp.output_address(static_cast<int>(o), fstart)));
            const std::string mo = b.let(fmt::format("st.m{}", o), fmt::format("and i64 {}, {}", ao, v - 1));
            const std::string zo = b.let(fmt::format("st.z{}", o), fmt::format("icmp eq i64 {}, 0", mo),
                                         fmt::format("out{} aligned there too", o));
            ok = b.let("st.ok", fmt::format("and i1 {}, {}", ok, zo));
        }
        f.emit(fmt::format("br i1 {}, label %stream, label %stream.done", ok));
        f.label("stream");
        steps("stream.peel", "p.", 1, kstart, false);
        steps(fmt::format("stream.w{}", W), "nt.", W, jend, true);
        f.emit("br label %stream.done");
        f.label("stream.done");
    }

    // The row's end: the next row's first element, or the exit after the task's last.
    void next_row() {
        f.label("row.end");
        const std::string en = b.let("e.next", fmt::format("add i64 {}, {}", e, cnt));
        f.emit(fmt::format("store i64 {}, ptr {}", en, e_slot));
        if (R == 1) {
            f.emit(fmt::format("br label %exit"));
            return;
        }
        const std::string done =
            b.let("done", fmt::format("icmp uge i64 {}, %end", en), "the task's last element done");
        f.emit(fmt::format("br i1 {}, label %exit, label %row.next", done));
        f.label("row.next");
        f.note(
            "the next row: the outer multi-index advances (with carries), the innermost index restarts at 0");
        f.emit(fmt::format("store i64 0, ptr {}", j_slot));
        std::string carry_in = "1";
        for (int d = R - 2; d >= 0; --d) {
            const std::string inc =
                b.let(fmt::format("i{}.inc", d),
                      fmt::format("add i64 {}, {}", outer[static_cast<std::size_t>(d)], carry_in));
            if (d == 0) {
                f.emit(fmt::format("store i64 {}, ptr {}", inc, i_slot[0]));
                break;
            }
            const std::string wrap =
                b.let(fmt::format("i{}.wrap", d), fmt::format("icmp eq i64 {}, {}", inc, sp.extent(d)));
            const std::string nv =
                b.let(fmt::format("i{}.new", d), fmt::format("select i1 {}, i64 0, i64 {}", wrap, inc));
            f.emit(fmt::format("store i64 {}, ptr {}", nv, i_slot[static_cast<std::size_t>(d)]));
            carry_in = b.let(fmt::format("i{}.carry", d), fmt::format("zext i1 {} to i64", wrap));
        }
        f.emit("br label %row");
    }
};

}  // namespace

namespace detail {

/// The host description of a pointwise plan's space (its loads, outputs, derived indices and scalars).
std::string host_space_text(const PointwisePlan& plan) {
    std::string s;
    auto out = std::back_inserter(s);
    fmt::format_to(out, "space: rank {}, {} indices in the parameters\n", plan.rank,
                   plan.index == IndexWidth::I32 ? "32-bit" : "64-bit");
    for (std::size_t k = 0; k < plan.loads.size(); ++k) {
        const OperandPlan& o = plan.loads[k];
        std::string dims;
        if (o.access == Access::Strided || o.access == Access::Gathered || o.access == Access::Indirect) {
            for (int d = 0; d < plan.rank; ++d)
                if (o.dim_mask >> d & 1u) dims += fmt::format("{}{}", dims.empty() ? " dims {" : ",", d);
            if (!dims.empty()) dims += "}";
            for (int t : o.derived) dims += fmt::format(" t{}", t);
            for (int q : o.positions) dims += fmt::format(" g{}", q);
            if (o.unit_inner) dims += " unit-inner";
        }
        if (o.index)
            fmt::format_to(out, "in{}: input {}, an index (iota), computed, {}{}\n", k, o.input,
                           access_name(o.access), dims);
        else
            fmt::format_to(out, "in{}: input {}, {}, {}{}\n", k, o.input, name(o.dtype),
                           access_name(o.access), dims);
    }
    for (std::size_t k = 0; k < plan.outputs.size(); ++k) {
        const OperandPlan& o = plan.outputs[k];
        std::string dims;
        if (o.access == Access::Strided) {
            for (int d = 0; d < plan.rank; ++d)
                if (o.dim_mask >> d & 1u) dims += fmt::format("{}{}", dims.empty() ? " dims {" : ",", d);
            if (!dims.empty()) dims += "}";
            if (o.unit_inner) dims += " unit-inner";
        }
        fmt::format_to(out, "out{}: {}, {}{}\n", k, name(o.dtype), access_name(o.access), dims);
    }
    for (std::size_t m = 0; m < plan.derived.size(); ++m)
        fmt::format_to(out, "t{}: derived index{}{}\n", m, plan.derived[m].has_div ? " div" : "",
                       plan.derived[m].has_mod ? " mod" : "");
    if (!plan.scalar_dtypes.empty()) {
        std::string ts;
        for (std::size_t k = 0; k < plan.scalar_dtypes.size(); ++k)
            ts += fmt::format("{}{}", k ? ", " : "", name(plan.scalar_dtypes[k]));
        fmt::format_to(out, "scalars: {}\n", ts);
    }
    return s;
}

std::string llvm_banner(std::string_view kind, const std::string& name, std::string_view user,
                        const std::string& lines) {
    return banner(kind, name, user, lines);
}

}  // namespace detail

LlvmKernelSource emit_pointwise_llvm(std::string_view user_name, const std::vector<ir::NodePtr>& outputs,
                                     const PointwisePlan& plan, const HostSchedule& schedule,
                                     const HostTarget& target) {
    const detail::PwGraph g = detail::build_pw_graph(outputs);
    LlvmKernelSource src;
    src.user_name = std::string(user_name);
    src.name = kernel_name(user_name);
    src.entry = src.name;

    Module m;
    m.target = &target;
    Function f(m);
    for (const char* a : {"p", "begin", "end"}) f.reserve(a);
    Builder b{f, target};
    Space sp(b, g, plan, "");
    const int W = schedule.lanes;
    if (W < 1) throw InternalError("emit_pointwise_llvm: a schedule of no lanes");

    f.note("parameters (the packed struct of pack_params)");
    sp.load_params("%p", 0);
    RowWalk walk(m, f, b, sp, g, plan, schedule);
    walk.stack_slots();
    walk.first_element();
    walk.row_head();
    if (schedule.stream) walk.streaming_steps();
    if (W > 1) {
        f.note(fmt::format("vector steps: {} elements per operand at once", W));
        walk.steps("vector", "", W, walk.jend, false);
    }
    f.note("the row's tail: one element at a time, the same instructions at width 1");
    walk.steps("tail", "t.", 1, walk.jend, false);
    f.emit("br label %row.end");
    walk.next_row();
    f.label("exit");
    f.emit("ret void");

    m.add_function(
        f.finish(fmt::format("void @{}(ptr noalias readonly %p, i64 %begin, i64 %end) #0", src.name),
                 fmt::format("; elements [begin, end) of the iteration space\n")));
    const std::string text = fmt::format(
        "host schedule: {}\nbytes per element: {}; parameters: {} bytes (pack_params)\n{}entry point: "
        "@{}(params, begin, end), one call per task\n",
        schedule.to_string(), plan.bytes_per_element(), plan.params.size, detail::host_space_text(plan),
        src.name);
    src.ir = m.text(banner("pointwise", src.name, user_name, text));
    return src;
}

std::string strip_llvm_comments(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    bool quoted = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '"') quoted = !quoted;
        if (c == ';' && !quoted) {
            while (i < s.size() && s[i] != '\n') ++i;
            while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
            if (i < s.size()) out += '\n';
            continue;
        }
        if (c == '\n') {
            quoted = false;
            while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
        }
        out += c;
    }
    return out;
}

}  // namespace loom::codegen
