// The LLVM emitter of reduction kernels (codegen/llvm/emit.hpp): the documented reduction order
// (docs/semantics.md, "Reduction order") written out lane by lane, so that it never depends on LLVM's
// vectorizer, the vector width or the number of threads.
//
// Row order (the innermost axis reduced): a chunk function computes one chunk's partial for every reduction
// of a stage: 256 lanes held in a stack array; blocks of 4 W consecutive elements, whose values are computed
// as 4 vectors of W consecutive elements and deinterleaved so that each of W lanes takes its run of 4 in
// order; a scalar tail; then the butterfly over the active lanes. Column order (the innermost axis kept): a
// chunk function accumulates a chunk of 256 reduced positions in sequence, W output columns at once. A driver
// combines the chunk partials of a row by the pairwise tree, as a binary counter (push a partial; while the
// count is even, combine the top two; at the end fold from the top: the same tree with the odd partial
// carried up), finishes the reduced values (mean's division, one rounding to a half dtype), and writes the
// element and row outputs. An element output that holds a reduction's operand between passes
// (HostSchedule::keep) is written in that reduction's pass and read back, instead of computed again, in the
// output pass.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>

#include "llvm_accumulate.hpp"
#include "llvm_ir.hpp"
#include "llvm_space.hpp"
#include "loom/codegen/llvm/emit.hpp"
#include "loom/codegen/plan/names.hpp"
#include "loom/ir/error.hpp"

namespace loom::codegen {

namespace {

using namespace llvm_ir;
using K = ParamField::Kind;

// Byte layout of the two stack buffers a driver shares with its chunk functions: row values (`rv`: per
// reduction 256 bytes, up to 32 lanes of the result's compute type) and partials (`part`: per reduction 512
// bytes, the value lanes then the index lanes of argmin/argmax).
constexpr int kRowValueBytes = 256;
constexpr int kPartialBytes = 512;
// Split workspaces: per (row, chunk) pair and reduction, 16 bytes: the value, then the index at +8.
constexpr int kSlotBytes = 16;

// A partial's value pointer and, for argmin/argmax, its index pointer (empty otherwise).
struct Ptrs {
    std::string v, i;
};

std::string gep(std::string_view ty, const std::string& base, const std::string& at) {
    return fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", ty, base, at);
}

// The runs of a block of 4 W consecutive values (`part`: 4 vectors of W): run position q of lane m is element
// 4 m + q of the block. Two levels of two-source shuffles: run positions {0, 1} and {2, 3} of each pair of
// vectors, then each position alone.
std::array<std::string, 4> deinterleave(Builder& b, const std::array<std::string, 4>& part,
                                        std::string_view ty, int W, std::string_view hint) {
    const std::string V = vec(ty, W);
    auto mask = [&](auto pick) {
        std::vector<std::string> m;
        for (int l = 0; l < W; ++l) m.push_back(fmt::format("i32 {}", pick(l)));
        return fmt::format("<{} x i32> <{}>", W, fmt::join(m, ", "));
    };
    std::array<std::string, 4> u, run;
    for (int h = 0; h < 2; ++h)
        for (int half = 0; half < 2; ++half)  // lanes of positions 2 half, 2 half + 1 of vectors 2h, 2h+1
            u[static_cast<std::size_t>(2 * h + half)] =
                b.let(fmt::format("{}.u{}", hint, 2 * h + half),
                      fmt::format("shufflevector {} {}, {} {}, {}", V, part[static_cast<std::size_t>(2 * h)],
                                  V, part[static_cast<std::size_t>(2 * h + 1)],
                                  mask([&](int l) { return 4 * (l / 2) + 2 * half + (l % 2); })));
    for (int pos = 0; pos < 4; ++pos) {
        const int half = pos / 2, odd = pos % 2;
        run[static_cast<std::size_t>(pos)] = b.let(
            fmt::format("{}.run{}", hint, pos),
            fmt::format("shufflevector {} {}, {} {}, {}", V, u[static_cast<std::size_t>(half)], V,
                        u[static_cast<std::size_t>(2 + half)], mask([&](int l) { return 2 * l + odd; })),
            pos == 0 ? fmt::format("run positions 0-3 of {} lanes", W) : "");
    }
    return run;
}

struct ReduceEmitter {
    const PlannedReduce& pr;
    const HostSchedule& sch;
    const HostTarget& target;
    std::string name;
    Module m;
    detail::PwGraph el_g, row_g;
    bool has_row = false;
    bool inner = true;
    int W = 16;
    std::size_t nred = 0;
    std::vector<LaneAccumulator> acc;
    std::size_t el_off = 0, row_off = 0;

    ReduceEmitter(const PlannedReduce& p, const HostSchedule& s, const HostTarget& t, std::string nm)
        : pr(p), sch(s), target(t), name(std::move(nm)), el_g(detail::build_pw_graph(p.element_roots)) {
        m.target = &target;
        has_row = !p.row_roots.empty();
        if (has_row) row_g = detail::build_pw_graph(p.row_roots);
        inner = p.plan.schedule == ReduceSchedule::Inner;
        W = s.lanes;
        nred = p.plan.ops.size();
        for (const auto& op : p.plan.ops) acc.emplace_back(op);
        el_off = p.plan.params.field(K::ElementSpace).offset;
        if (has_row) row_off = p.plan.params.field(K::RowSpace, 1).offset;
        m.declare("llvm.umin.i64", "declare i64 @llvm.umin.i64(i64, i64)");
    }

    const LaneAccumulator& A(int j) const { return acc[static_cast<std::size_t>(j)]; }
    std::vector<int> stage_members(int s) const {
        std::vector<int> r;
        for (std::size_t j = 0; j < nred; ++j)
            if (pr.plan.ops[j].stage == s) r.push_back(static_cast<int>(j));
        return r;
    }
    bool any_arg(const std::vector<int>& members) const {
        return std::any_of(members.begin(), members.end(), [&](int j) { return A(j).arg; });
    }
    // The element outputs that hold the operand of reduction j between passes (HostSchedule::keep).
    std::vector<int> keepers(int j) const {
        std::vector<int> r;
        for (std::size_t e = 0; e < sch.keep.size(); ++e)
            if (sch.keep[e] == j) r.push_back(static_cast<int>(e));
        return r;
    }
    std::string op_text(std::size_t j) const {
        const ReduceOpPlan& o = pr.plan.ops[j];
        return fmt::format("{} {} -> {} ({})", ir::op_name(o.op), loom::name(o.in), loom::name(o.out),
                           short_location(pr.element_roots[j]->loc()));
    }
    std::string rv_type(std::size_t j) const { return std::string(scalar_type(pr.plan.ops[j].out)); }

    // ---- shared pieces
    // -------------------------------------------------------------------------------------

    // The reduction-level parameters of the plan's struct (the spaces' own fields are loaded by Space).
    struct Params {
        std::string rows, len, chunks;
        std::vector<std::string> partials;
    };
    Params load_params(Builder& b) {
        Params P;
        for (const ParamField& f : pr.plan.params.fields) {
            std::string* dst = nullptr;
            std::string comment;
            switch (f.kind) {
                case K::Rows:
                    dst = &P.rows;
                    comment = "O: output elements (rows)";
                    break;
                case K::Length:
                    dst = &P.len;
                    comment = "L: elements reduced per output";
                    break;
                case K::Chunks:
                    dst = &P.chunks;
                    comment = "chunks per row";
                    break;
                case K::Partials:
                    P.partials.emplace_back();
                    dst = &P.partials.back();
                    comment = fmt::format("split workspace of reduction {}", f.a);
                    break;
                default:
                    continue;
            }
            const std::string at = b.let(fmt::format("{}.at", f.name),
                                         fmt::format("getelementptr inbounds i8, ptr %p, i64 {}", f.offset));
            *dst = b.let(
                f.name,
                fmt::format("load {}, ptr {}, align 8", f.type == ParamType::RawPointer ? "ptr" : "i64", at),
                comment);
        }
        return P;
    }

    // Row values as the element and row graphs read them: lane `lane` (w == 1) or lanes 0 .. w-1 of reduction
    // j's slot in `rv`.
    std::function<std::string(int, int)> row_values(Builder& b, const std::vector<int>& row_value,
                                                    const std::string& rv, const std::string& lane) {
        return [&b, &row_value, rv, lane, this](int input, int w) -> std::string {
            const int j = row_value.at(static_cast<std::size_t>(input));
            if (j < 0) return {};
            const std::string ty = rv_type(static_cast<std::size_t>(j));
            const std::string base =
                b.let(fmt::format("rv{}.p", j),
                      fmt::format("getelementptr inbounds i8, ptr {}, i64 {}", rv, j * kRowValueBytes));
            const std::string p = lane == "0" ? base : b.let(fmt::format("rv{}.l", j), gep(ty, base, lane));
            // Row order: one row value for every element of the row (splat). Column order: each lane is an
            // output column with its own value (lanes 0 .. w-1 of the slot).
            if (!inner || w == 1)
                return b.let(fmt::format("rv{}", j),
                             fmt::format("load {}, ptr {}, align {}", vec(ty, w), p, bytes_of(ty)),
                             fmt::format("row value of reduction {}", j));
            const std::string v = b.let(fmt::format("rv{}.one", j),
                                        fmt::format("load {}, ptr {}, align {}", ty, p, bytes_of(ty)),
                                        fmt::format("row value of reduction {}", j));
            return b.splat(fmt::format("rv{}", j), ty, v, w);
        };
    }

    // The element space of a function, its parameters loaded from %p and its row values read from `rv`.
    std::unique_ptr<Space> element_space(Builder& b, const std::string& rv) {
        auto el = std::make_unique<Space>(b, el_g, pr.plan.element, "el.");
        el->load_params("%p", el_off);
        el->external = row_values(b, pr.plan.element_row_value, rv, "0");
        return el;
    }
    // The row space (row outputs), its parameters loaded from %p.
    std::unique_ptr<Space> row_space(Builder& b) {
        if (!has_row) return nullptr;
        auto row = std::make_unique<Space>(b, row_g, pr.plan.row, "row.");
        row->load_params("%p", row_off);
        return row;
    }

    // Element `at` (of w-wide elements) of the arrays `base` of reduction j: value `<w x A>`, index `<w x
    // i64>`.
    Ptrs element_ptrs(Builder& b, int j, const Ptrs& base, const std::string& at, int w,
                      std::string_view hint) {
        Ptrs p;
        p.v = b.let(hint, gep(A(j).type(w), base.v, at));
        if (A(j).arg) p.i = b.let(fmt::format("{}i", hint), gep(vec("i64", w), base.i, at));
        return p;
    }
    // Bytes `off` into `base` (and the index 8 bytes after it): a workspace slot of a split reduction.
    Ptrs workspace_ptrs(Builder& b, int j, const std::string& base, const std::string& off,
                        std::string_view hint) {
        Ptrs p;
        p.v = b.let(hint, fmt::format("getelementptr inbounds i8, ptr {}, i64 {}", base, off));
        if (A(j).arg)
            p.i =
                b.let(fmt::format("{}i", hint), fmt::format("getelementptr inbounds i8, ptr {}, i64 8", p.v));
        return p;
    }
    // Reduction j's slot in the partials buffer `part`: the value lanes, then the index lanes at +256 bytes.
    Ptrs part_ptrs(Builder& b, const std::string& part, int j) {
        Ptrs p;
        p.v = b.let(fmt::format("part{}.p", j),
                    fmt::format("getelementptr inbounds i8, ptr {}, i64 {}", part, j * kPartialBytes));
        if (A(j).arg)
            p.i = b.let(fmt::format("part{}i.p", j), fmt::format("getelementptr inbounds i8, ptr {}, i64 {}",
                                                                 part, j * kPartialBytes + 256));
        return p;
    }
    // Stack arrays of `count` w-wide accumulators of reduction j (and its index lanes).
    Ptrs arrays(Function& f, int j, int count, int w, std::string_view hint) {
        Ptrs p;
        p.v = f.alloca_(fmt::format("{}{}", hint, j), fmt::format("[{} x {}]", count, A(j).type(w)), 64);
        if (A(j).arg)
            p.i =
                f.alloca_(fmt::format("{}{}.i", hint, j), fmt::format("[{} x {}]", count, vec("i64", w)), 64);
        return p;
    }
    std::vector<Acc> read_part(Builder& b, const std::vector<int>& members, const std::string& part, int w) {
        std::vector<Acc> r;
        for (int j : members) {
            const Ptrs p = part_ptrs(b, part, j);
            r.push_back(A(j).load(b, p.v, p.i, w, fmt::format("p{}", j)));
        }
        return r;
    }
    void write_part(Builder& b, int j, const Acc& x, int w) {
        const Ptrs p = part_ptrs(b, "%part", j);
        A(j).store(b, x, p.v, p.i, w);
    }
    // `at` = at ⊕ (the contribution of operand values x at reduced indices `index`).
    void accumulate(Builder& b, int j, const Ptrs& at, const std::string& x, const std::string& index, int w,
                    std::string_view hint) {
        const LaneAccumulator& a = A(j);
        const Acc cur = a.load(b, at.v, at.i, w, fmt::format("{}acc{}", hint, j));
        const Acc e = a.element(b, x, index, w, fmt::format("{}e{}", hint, j));
        a.store(b, a.combine(b, cur, e, w, fmt::format("{}acc{}", hint, j)), at.v, at.i, w);
    }
    // A call of a chunk function for chunk k at output (column) o, with the driver's buffers %rv and %part.
    void call_chunk(Builder& b, const std::string& fn, const std::string& o, const std::string& k) {
        b.f.emit(fmt::format("call void @{}(ptr %p, i64 {}, i64 {}, ptr %rv, ptr %part)", fn, o, k));
    }
    // The driver's buffers, %rv and %part (each function that calls chunk functions holds them).
    void driver_buffers(Function& f, bool partials) {
        if (f.alloca_("rv", fmt::format("[{} x i8]", nred * kRowValueBytes), 64) != "%rv" ||
            (partials && f.alloca_("part", fmt::format("[{} x i8]", nred * kPartialBytes), 64) != "%part"))
            throw InternalError("emit_reduce_llvm: the driver's buffers are not %rv and %part");
    }
    // A loop over `count` indices from 0 (lanes of a vector of output columns).
    void for_lanes(Builder& b, std::string_view tag, int count,
                   const std::function<void(const std::string&)>& body) {
        b.for_range(tag, "0", fmt::format("{}", count), 1, body);
    }

    // ---- chunk functions
    // -----------------------------------------------------------------------------------

    Point point_inner(Builder& b, const std::string& o, const std::string& r, const std::string& rowbase,
                      std::string_view tag) {
        const std::string flat = b.let(fmt::format("{}flat", tag), fmt::format("add i64 {}, {}", rowbase, r));
        if (pr.plan.element.rank == 2) return Point{{o}, r, flat};
        return Point{{}, flat, flat};
    }

    // What the parts of a row-order chunk function share: the stage's reductions, their 256 lanes on the
    // stack, the element space, and the chunk's extent.
    struct RowChunk {
        std::vector<int> members;      // the reductions of the stage
        std::vector<Ptrs> lanes;       // lanes[q]: the 256 lane accumulators of reduction members[q]
        std::unique_ptr<Space> el;     // the element space, its row values read from %rv
        std::string first, n, active;  // the chunk's first element, its elements, the lanes holding elements
        std::string rowbase;           // the flat index of (o, 0)
    };

    // Row order: the partial of chunk k of row o for the reductions of stage s, into `part`.
    std::string chunk_function(int s) {
        Function f(m);
        for (const char* a : {"p", "o", "k", "rv", "part"}) f.reserve(a);
        Builder b{f, target};
        const RowChunk ch = chunk_setup(b, s);
        f.note("every lane starts at the identity");
        b.for_range("init", "0", "256", W, [&](const std::string& l) {
            for (std::size_t q = 0; q < ch.members.size(); ++q) {
                const int j = ch.members[q];
                const Ptrs p = element_ptrs(b, j, ch.lanes[q], l, 1, "init.p");
                A(j).store(b, A(j).identity(W), p.v, p.i, W);
            }
        });
        chunk_elements(b, ch);
        chunk_butterfly(b, ch);
        f.note("the chunk's partial is lane 0");
        for (std::size_t q = 0; q < ch.members.size(); ++q) {
            const int j = ch.members[q];
            write_part(b, j, A(j).load(b, ch.lanes[q].v, ch.lanes[q].i, 1, fmt::format("partial{}", j)), 1);
        }
        f.emit("ret void");
        const std::string fn = fmt::format("{}.chunk.s{}", name, s);
        std::string members_text;
        for (int j : ch.members)
            members_text += fmt::format("\n;   reduction {}: {}", j, op_text(static_cast<std::size_t>(j)));
        m.add_function(f.finish(
            fmt::format("internal void @{}(ptr noalias readonly %p, i64 %o, i64 %k, ptr noalias %rv, ptr "
                        "noalias %part) #0",
                        fn),
            fmt::format("; row order, stage {}: the partial of chunk k of row o{}\n", s, members_text)));
        return fn;
    }

    // The chunk function's entry: the parameters and the element space loaded, the lanes allocated, and the
    // extent of chunk k of row o computed (its elements, and the lanes they reach).
    RowChunk chunk_setup(Builder& b, int s) {
        RowChunk ch;
        ch.members = stage_members(s);
        const Params P = load_params(b);
        ch.el = element_space(b, "%rv");
        for (int j : ch.members) ch.lanes.push_back(arrays(b.f, j, 256, 1, "lanes"));
        m.declare("llvm.smin.i64", "declare i64 @llvm.smin.i64(i64, i64)");
        m.declare("llvm.smax.i64", "declare i64 @llvm.smax.i64(i64, i64)");
        b.f.note(
            fmt::format("chunk k of row o: elements [8192 k, min(L, 8192 (k + 1))); element i goes to lane "
                        "(i / 4) mod 256"));
        ch.first = b.let("first", "mul i64 %k, 8192");
        const std::string rest = b.let("rest", fmt::format("sub i64 {}, {}", P.len, ch.first));
        ch.n = b.let("n", fmt::format("call i64 @llvm.umin.i64(i64 {}, i64 8192)", rest),
                     "elements in this chunk");
        const std::string runs = b.let("runs", fmt::format("add i64 {}, 3", ch.n));
        const std::string r4 = b.let("runs4", fmt::format("lshr i64 {}, 2", runs));
        ch.active = b.let("active", fmt::format("call i64 @llvm.umin.i64(i64 {}, i64 256)", r4),
                          "lanes holding elements");
        ch.rowbase = b.let("rowbase", fmt::format("mul i64 %o, {}", P.len), "flat index of (o, 0)");
        return ch;
    }

    // Stores of the kept operands (HostSchedule::keep) into the element outputs that hold them, so that the
    // output pass reads them back instead of computing them again.
    void keep_operands(const RowChunk& ch, const std::vector<std::string>& vals, const std::string& flat,
                       int w) {
        for (std::size_t q = 0; q < ch.members.size(); ++q)
            for (int e : keepers(ch.members[q]))
                ch.el->store_output(
                    static_cast<int>(nred) + e, vals[q], flat, w,
                    fmt::format("out{} holds the operand of reduction {} until the output pass", e,
                                ch.members[q]));
    }

    // The chunk's elements into the lanes: whole blocks of 4 W elements, then the chunk's tail element by
    // element.
    void chunk_elements(Builder& b, const RowChunk& ch) {
        const int B = 4 * W;
        const std::string islot = b.f.alloca_("i.slot", "i64");
        b.f.emit(fmt::format("store i64 0, ptr {}", islot));
        b.f.note(fmt::format(
            "blocks of {} elements: {} lanes, each taking its run of 4 in order; the values are computed as "
            "4 vectors of {} consecutive elements and deinterleaved into runs",
            B, W, W));
        b.steps("block", islot, ch.n, {B, 1}, [&](const std::string& i, int w) {
            const std::string r =
                b.let(w > 1 ? "r" : "tr", fmt::format("add i64 {}, {}", ch.first, i), "reduced index");
            if (w == 1)
                chunk_tail_element(b, ch, i, r);
            else
                chunk_block(b, ch, i, r);
        });
    }

    // One element of the chunk's tail (element i, reduced index r) into its lane (i / 4) mod 256.
    void chunk_tail_element(Builder& b, const RowChunk& ch, const std::string& i, const std::string& r) {
        const Point pt = point_inner(b, "%o", r, ch.rowbase, "t.");
        const std::vector<std::string> vals = ch.el->evaluate(ch.members, pt, 1, "t.");
        keep_operands(ch, vals, pt.flat, 1);
        const std::string l4 = b.let("tl4", fmt::format("lshr i64 {}, 2", i));
        const std::string lane = b.let("tlane", fmt::format("and i64 {}, 255", l4), "lane (i / 4) mod 256");
        for (std::size_t q = 0; q < ch.members.size(); ++q)
            accumulate(
                b, ch.members[q],
                element_ptrs(b, ch.members[q], ch.lanes[q], lane, 1, fmt::format("tl{}.p", ch.members[q])),
                vals[q], r, 1, "t");
    }

    // The block of 4 W elements from element i (reduced index r): its values as 4 vectors of W, deinterleaved
    // so that each of the W lanes from (i / 4) mod 256 folds its run of 4 in order.
    void chunk_block(Builder& b, const RowChunk& ch, const std::string& i, const std::string& r) {
        std::array<std::vector<std::string>, 4> vals;
        for (int v = 0; v < 4; ++v) {
            const std::string tag = fmt::format("b{}.", v);
            const std::string rv =
                v == 0 ? r : b.let(fmt::format("{}r", tag), fmt::format("add i64 {}, {}", r, v * W));
            const Point pt = point_inner(b, "%o", rv, ch.rowbase, tag);
            vals[static_cast<std::size_t>(v)] = ch.el->evaluate(ch.members, pt, W, tag);
            keep_operands(ch, vals[static_cast<std::size_t>(v)], pt.flat, W);
        }
        const std::string l4 = b.let("l4", fmt::format("lshr i64 {}, 2", i));
        const std::string lo =
            b.let("lanes.at", fmt::format("and i64 {}, 255", l4), "first lane of the block: (i / 4) mod 256");
        const std::array<std::string, 4> idx = run_indices(b, ch, r);
        for (std::size_t q = 0; q < ch.members.size(); ++q) {
            const int j = ch.members[q];
            const LaneAccumulator& a = A(j);
            b.f.note(fmt::format("reduction {}: {}", j, op_text(static_cast<std::size_t>(j))));
            const std::array<std::string, 4> run = deinterleave(
                b, {vals[0][q], vals[1][q], vals[2][q], vals[3][q]}, a.c, W, fmt::format("x{}", j));
            const Ptrs p = element_ptrs(b, j, ch.lanes[q], lo, 1, fmt::format("lanes{}.p", j));
            Acc cur = a.load(b, p.v, p.i, W, fmt::format("acc{}", j));
            for (int pos = 0; pos < 4; ++pos) {
                const Acc e = a.element(b, run[static_cast<std::size_t>(pos)],
                                        idx[static_cast<std::size_t>(pos)], W, fmt::format("e{}", j));
                cur = a.combine(b, cur, e, W, fmt::format("acc{}", j));
            }
            a.store(b, cur, p.v, p.i, W);
        }
    }

    // Argmin/argmax in the stage: the reduced indices of run position pos of the W lanes of the block at r
    // (r + 4 l + pos for lane l); empty otherwise.
    std::array<std::string, 4> run_indices(Builder& b, const RowChunk& ch, const std::string& r) {
        std::array<std::string, 4> idx;
        if (!any_arg(ch.members)) return idx;
        const std::string rs = b.splat("r.all", "i64", r, W);
        for (int pos = 0; pos < 4; ++pos) {
            std::vector<std::string> offs;
            for (int l = 0; l < W; ++l) offs.push_back(fmt::format("i64 {}", 4 * l + pos));
            idx[static_cast<std::size_t>(pos)] =
                b.let(fmt::format("idx{}", pos),
                      fmt::format("add <{} x i64> {}, <{}>", W, rs, fmt::join(offs, ", ")),
                      pos == 0 ? "reduced indices of the lanes' elements" : "");
        }
        return idx;
    }

    // Butterfly over the active lanes: for s = 128, 64, ..., 1, lane l < s takes lane l + s (lanes past the
    // active ones hold the identity, which combines exactly: they are skipped, as the reference does). Whole
    // vectors of W lanes while s >= W, then lane by lane.
    void chunk_butterfly(Builder& b, const RowChunk& ch) {
        Function& f = b.f;
        const std::string aslot = f.alloca_("active.slot", "i64");
        f.emit(fmt::format("store i64 {}, ptr {}", ch.active, aslot));
        b.loop_from(
            "s", "128",
            [&](const std::string& sv) { return b.let("bf.more", fmt::format("icmp ne i64 {}, 0", sv)); },
            [&](const std::string& sv) {
                const std::string act = b.let("act", fmt::format("load i64, ptr {}", aslot));
                const std::string dd = b.let("bf.d", fmt::format("sub i64 {}, {}", act, sv));
                const std::string c1 =
                    b.let("bf.c", fmt::format("call i64 @llvm.smin.i64(i64 {}, i64 {})", dd, sv));
                const std::string cnt =
                    b.let("bf.n", fmt::format("call i64 @llvm.smax.i64(i64 {}, i64 0)", c1),
                          "lanes l < min(s, active - s)");
                const std::string wide =
                    b.let("bf.wide", fmt::format("icmp uge i64 {}, {}", sv, W), "s >= W: whole vectors");
                const std::string wcnt = b.let("bf.wn", fmt::format("select i1 {}, i64 {}, i64 0", wide, cnt),
                                               "the lanes in whole vectors");
                const std::string lslot = f.alloca_("bf.l.slot", "i64");
                f.emit(fmt::format("store i64 0, ptr {}", lslot));
                b.steps("bf", lslot, wcnt, {W}, [&](const std::string& l, int w) {
                    butterfly_step(b, ch.members, ch.lanes, l, sv, w);
                });
                b.steps("bf", lslot, cnt, {1}, [&](const std::string& l, int w) {
                    butterfly_step(b, ch.members, ch.lanes, l, sv, w);
                });
                const std::string na =
                    b.let("act.next", fmt::format("call i64 @llvm.umin.i64(i64 {}, i64 {})", act, sv));
                f.emit(fmt::format("store i64 {}, ptr {}", na, aslot));
            },
            [&](const std::string& sv) { return b.let("s.next", fmt::format("lshr i64 {}, 1", sv)); });
    }

    // One butterfly step on lanes [l, l + w): lane l takes lane l + s.
    void butterfly_step(Builder& b, const std::vector<int>& members, const std::vector<Ptrs>& lanes,
                        const std::string& l, const std::string& sv, int w) {
        const std::string ls = b.let("bf.ls", fmt::format("add i64 {}, {}", l, sv));
        for (std::size_t q = 0; q < members.size(); ++q) {
            const int j = members[q];
            const Ptrs x = element_ptrs(b, j, lanes[q], l, 1, fmt::format("bf.a{}", j));
            const Ptrs y = element_ptrs(b, j, lanes[q], ls, 1, fmt::format("bf.b{}", j));
            const Acc vx = A(j).load(b, x.v, x.i, w, fmt::format("bf.x{}", j));
            const Acc vy = A(j).load(b, y.v, y.i, w, fmt::format("bf.y{}", j));
            A(j).store(b, A(j).combine(b, vx, vy, w, fmt::format("bf.c{}", j)), x.v, x.i, w);
        }
    }

    // Column order: the partials of chunk k (256 reduced positions, in sequence) of the w output columns from
    // o0.
    std::string columns_function(int s, int w) {
        Function f(m);
        for (const char* a : {"p", "o0", "k", "rv", "part"}) f.reserve(a);
        Builder b{f, target};
        const std::vector<int> members = stage_members(s);
        const Params P = load_params(b);
        const std::unique_ptr<Space> el = element_space(b, "%rv");
        std::vector<Ptrs> slots;
        for (int j : members) slots.push_back(arrays(f, j, 1, w, "acc"));
        const std::string first = b.let("first", "mul i64 %k, 256");
        const std::string rest = b.let("rest", fmt::format("sub i64 {}, {}", P.len, first));
        const std::string n = b.let("n", fmt::format("call i64 @llvm.umin.i64(i64 {}, i64 256)", rest),
                                    "positions in this chunk");
        const std::string last = b.let("last", fmt::format("add i64 {}, {}", first, n));
        for (std::size_t q = 0; q < members.size(); ++q)
            A(members[q]).store(b, A(members[q]).identity(w), slots[q].v, slots[q].i, w);
        b.for_range("pos", first, last, 1, [&](const std::string& r) {
            const std::string flat = b.let("flat", fmt::format("mul i64 {}, {}", r, P.rows));
            const std::string fo = b.let("flat.o", fmt::format("add i64 {}, %o0", flat),
                                         "flat index of (r, o0) in the (L, O) space");
            const Point pt = pr.plan.element.rank == 2 ? Point{{r}, "%o0", fo} : Point{{}, fo, fo};
            const std::vector<std::string> vals = el->evaluate(members, pt, w, "");
            const std::string rs = w > 1 ? b.splat("r.all", "i64", r, w) : r;
            for (std::size_t q = 0; q < members.size(); ++q) {
                f.note(fmt::format("reduction {}: {}", members[q],
                                   op_text(static_cast<std::size_t>(members[q]))));
                accumulate(b, members[q], slots[q], vals[q], rs, w, "");
            }
        });
        for (std::size_t q = 0; q < members.size(); ++q) {
            const int j = members[q];
            write_part(b, j, A(j).load(b, slots[q].v, slots[q].i, w, fmt::format("partial{}", j)), w);
        }
        f.emit("ret void");
        const std::string fn = fmt::format("{}.columns.s{}.w{}", name, s, w);
        m.add_function(f.finish(
            fmt::format("internal void @{}(ptr noalias readonly %p, i64 %o0, i64 %k, ptr noalias %rv, ptr "
                        "noalias %part) #0",
                        fn),
            fmt::format(
                "; column order, stage {}: the partials of chunk k of the {} output column(s) from o0\n", s,
                w)));
        return fn;
    }

    // ---- drivers
    // -------------------------------------------------------------------------------------------

    // The pairwise tree over chunks as a binary counter, for the reductions `members` at width w; `partial`
    // emits the code that gives chunk k's partials, and the finished row values are written to `rv`.
    void tree(Builder& b, const std::vector<int>& members, int w, const std::string& chunks,
              const std::string& count, const std::function<std::vector<Acc>(const std::string& k)>& partial,
              const std::string& rv, std::string_view tag) {
        Function& f = b.f;
        std::vector<Ptrs> stack;
        for (int j : members) stack.push_back(arrays(f, j, 64, w, fmt::format("{}stack", tag)));
        const std::string dslot = f.alloca_(fmt::format("{}depth", tag), "i64");
        const std::string kslot = f.alloca_(fmt::format("{}k.slot", tag), "i64");
        const std::string nslot = f.alloca_(fmt::format("{}count.slot", tag), "i64");
        auto slot = [&](std::size_t q, const std::string& d) {
            return element_ptrs(b, members[q], stack[q], d, w, fmt::format("{}s{}", tag, members[q]));
        };
        // Slot 0 holds the identity, the result when the row has no chunk (the empty sum, product, any, all).
        for (std::size_t q = 0; q < members.size(); ++q)
            A(members[q]).store(b, A(members[q]).identity(w), stack[q].v, stack[q].i, w);
        f.emit(fmt::format("store i64 0, ptr {}", dslot));
        f.emit(fmt::format("store i64 0, ptr {}", kslot));
        const std::string L_head = f.fresh_label(fmt::format("{}tree.head", tag)),
                          L_push = f.fresh_label(fmt::format("{}tree.push", tag));
        const std::string L_mc = f.fresh_label(fmt::format("{}merge.cond", tag)),
                          L_mb = f.fresh_label(fmt::format("{}merge.body", tag));
        const std::string L_next = f.fresh_label(fmt::format("{}tree.next", tag)),
                          L_inc = f.fresh_label(fmt::format("{}tree.inc", tag));
        const std::string L_done = f.fresh_label(fmt::format("{}tree.done", tag));
        f.emit(fmt::format("br label %{}", L_head));
        f.label(L_head);
        const std::string k = b.let(fmt::format("{}k", tag), fmt::format("load i64, ptr {}", kslot));
        const std::string more =
            b.let(fmt::format("{}more", tag), fmt::format("icmp ult i64 {}, {}", k, chunks),
                  "a chunk left (else: the final fold)");
        f.emit(fmt::format("br i1 {}, label %{}, label %{}", more, L_push, L_mc));
        f.label(L_push);
        {
            const std::vector<Acc> parts = partial(k);
            const std::string d = b.let(fmt::format("{}d", tag), fmt::format("load i64, ptr {}", dslot));
            for (std::size_t q = 0; q < members.size(); ++q) {
                const Ptrs p = slot(q, d);
                A(members[q]).store(b, parts[q], p.v, p.i, w);
            }
            const std::string d1 = b.let(fmt::format("{}d.push", tag), fmt::format("add i64 {}, 1", d),
                                         "push chunk k's partial");
            f.emit(fmt::format("store i64 {}, ptr {}", d1, dslot));
            const std::string cnt = b.let(fmt::format("{}pushed", tag), fmt::format("add i64 {}, 1", k));
            f.emit(fmt::format("store i64 {}, ptr {}", cnt, nslot));
            f.emit(fmt::format("br label %{}", L_mc));
        }
        f.label(L_mc);
        {
            // After a push: while the count of pushed partials is even, the top two are a pair of the tree.
            // After the last chunk: the partials left (the odd ones carried up) are folded from the top.
            const std::string c = b.let(fmt::format("{}c", tag), fmt::format("load i64, ptr {}", nslot));
            const std::string odd = b.let(fmt::format("{}odd", tag), fmt::format("and i64 {}, 1", c));
            const std::string even = b.let(fmt::format("{}even", tag), fmt::format("icmp eq i64 {}, 0", odd));
            const std::string d = b.let(fmt::format("{}fd", tag), fmt::format("load i64, ptr {}", dslot));
            const std::string two = b.let(fmt::format("{}two", tag), fmt::format("icmp ugt i64 {}, 1", d));
            const std::string go = b.let(fmt::format("{}merge", tag),
                                         fmt::format("select i1 {}, i1 {}, i1 {}", more, even, two));
            f.emit(fmt::format("br i1 {}, label %{}, label %{}", go, L_mb, L_next));
            f.label(L_mb);
            const std::string d1 = b.let(fmt::format("{}md1", tag), fmt::format("sub i64 {}, 1", d));
            const std::string d2 = b.let(fmt::format("{}md2", tag), fmt::format("sub i64 {}, 2", d));
            for (std::size_t q = 0; q < members.size(); ++q) {
                const int j = members[q];
                const Ptrs pa = slot(q, d2), pb = slot(q, d1);
                const Acc x = A(j).load(b, pa.v, pa.i, w, fmt::format("{}tx{}", tag, j));
                const Acc y = A(j).load(b, pb.v, pb.i, w, fmt::format("{}ty{}", tag, j));
                A(j).store(b, A(j).combine(b, x, y, w, fmt::format("{}tc{}", tag, j)), pa.v, pa.i, w);
            }
            f.emit(fmt::format("store i64 {}, ptr {}", d1, dslot));
            const std::string ch = b.let(fmt::format("{}c.half", tag), fmt::format("lshr i64 {}, 1", c));
            f.emit(fmt::format("store i64 {}, ptr {}", ch, nslot));
            f.emit(fmt::format("br label %{}", L_mc));
        }
        f.label(L_next);
        f.emit(fmt::format("br i1 {}, label %{}, label %{}", more, L_inc, L_done));
        f.label(L_inc);
        {
            const std::string kn = b.let(fmt::format("{}k.next", tag), fmt::format("add i64 {}, 1", k));
            f.emit(fmt::format("store i64 {}, ptr {}", kn, kslot));
            f.emit(fmt::format("br label %{}", L_head));
        }
        f.label(L_done);
        for (std::size_t q = 0; q < members.size(); ++q) {
            const int j = members[q];
            const Acc a = A(j).load(b, stack[q].v, stack[q].i, w, fmt::format("{}total{}", tag, j));
            const std::string v = A(j).finish(b, a, count, w, fmt::format("{}value{}", tag, j));
            const std::string ty = rv_type(static_cast<std::size_t>(j));
            const std::string p =
                b.let(fmt::format("{}rv{}.p", tag, j),
                      fmt::format("getelementptr inbounds i8, ptr {}, i64 {}", rv, j * kRowValueBytes));
            f.emit(fmt::format("store {} {}, ptr {}, align {}", vec(ty, w), v, p, bytes_of(ty)),
                   fmt::format("row value of reduction {}: {}", j, op_text(static_cast<std::size_t>(j))));
        }
    }

    // Element outputs of row o (inner schedule): positions [0, L) in vector steps and a scalar tail. Outputs
    // that hold a reduction's operand (HostSchedule::keep) read it back from themselves instead of computing
    // it.
    void element_outputs(Builder& b, Space& el, const Params& P, const std::string& o) {
        Function& f = b.f;
        std::vector<int> outs;
        for (int e = 0; e < pr.plan.element_outputs; ++e) outs.push_back(static_cast<int>(nred) + e);
        const std::string rslot = f.alloca_("eo.slot", "i64");
        const std::string rowbase = b.let("eo.rowbase", fmt::format("mul i64 {}, {}", o, P.len));
        f.emit(fmt::format("store i64 0, ptr {}", rslot));
        f.note("element outputs of row o: the last pass over the row, reading the row values");
        b.steps("eo", rslot, P.len, {W, 1}, [&](const std::string& r, int w) {
            const std::string tag = w > 1 ? "eo." : "eot.";
            const Point pt = point_inner(b, o, r, rowbase, tag);
            std::map<int, std::string> known;
            for (std::size_t e = 0; e < sch.keep.size(); ++e)
                if (sch.keep[e] >= 0 && !known.count(sch.keep[e]))
                    known[sch.keep[e]] = el.load_output(
                        static_cast<int>(nred + e), pt.flat, w,
                        fmt::format("the operand of reduction {}, kept in out{}", sch.keep[e], e));
            const std::vector<std::string> vals = el.evaluate(outs, pt, w, tag, known);
            for (std::size_t e = 0; e < outs.size(); ++e)
                el.store_output(outs[e], vals[e], pt.flat, w, fmt::format("store element output {}", e));
        });
    }

    // Row outputs of row (output) o, reading row values at lane `lane` of `rv`.
    void row_outputs(Builder& b, Space& row, const std::string& o, const std::string& lane,
                     std::string_view tag) {
        row.external = row_values(b, pr.plan.row_row_value, "%rv", lane);
        std::vector<int> outs;
        for (std::size_t k = 0; k < row_g.outputs.size(); ++k) outs.push_back(static_cast<int>(k));
        const Point pt{{}, o, o};
        const std::vector<std::string> vals = row.evaluate(outs, pt, 1, tag);
        for (std::size_t k = 0; k < vals.size(); ++k)
            row.store_output(static_cast<int>(k), vals[k], o, 1, fmt::format("store row output {}", k));
    }

    // The rows [begin, end) of an entry point.
    void for_rows(Builder& b, const std::function<void(const std::string& o)>& body) {
        b.for_range("o", "%begin", "%end", 1, body);
    }

    // `<name>_rows`: whole rows (inner) or output columns (outer), every stage, the element and row outputs.
    void rows_entry(const std::vector<std::string>& chunk_fns,
                    const std::vector<std::array<std::string, 2>>& column_fns) {
        Function f(m);
        for (const char* a : {"p", "begin", "end"}) f.reserve(a);
        Builder b{f, target};
        driver_buffers(f, true);
        const std::string rv = "%rv", part = "%part";
        const Params P = load_params(b);
        const std::unique_ptr<Space> el = element_space(b, rv);
        const std::unique_ptr<Space> row = row_space(b);
        if (inner) {
            for_rows(b, [&](const std::string& o) {
                for (int s = 0; s < pr.plan.stages; ++s) {
                    const std::vector<int> members = stage_members(s);
                    f.note(fmt::format("stage {}: every chunk of row o, combined by the pairwise tree", s));
                    tree(
                        b, members, 1, P.chunks, P.len,
                        [&](const std::string& k) {
                            call_chunk(b, chunk_fns[static_cast<std::size_t>(s)], o, k);
                            return read_part(b, members, part, 1);
                        },
                        rv, fmt::format("s{}.", s));
                }
                if (pr.plan.element_outputs > 0) element_outputs(b, *el, P, o);
                if (row) row_outputs(b, *row, o, "0", "ro.");
            });
        } else {
            // Vectors of W output columns, then the last columns one by one.
            const std::string oslot = f.alloca_("o.slot", "i64");
            f.emit(fmt::format("store i64 %begin, ptr {}", oslot));
            b.steps("cols", oslot, "%end", {W, 1}, [&](const std::string& o0, int w) {
                const int pass = w > 1 ? 0 : 1;
                for (int s = 0; s < pr.plan.stages; ++s) {
                    const std::vector<int> members = stage_members(s);
                    f.note(fmt::format(
                        "stage {}: every chunk of {} output column(s), combined by the pairwise tree", s, w));
                    tree(
                        b, members, w, P.chunks, P.len,
                        [&](const std::string& k) {
                            call_chunk(
                                b, column_fns[static_cast<std::size_t>(s)][static_cast<std::size_t>(pass)],
                                o0, k);
                            return read_part(b, members, part, w);
                        },
                        rv, fmt::format("w{}s{}.", w, s));
                }
                if (row)  // the row outputs of each column
                    for_lanes(b, "lane", w, [&](const std::string& lane) {
                        const std::string o = b.let("o", fmt::format("add i64 {}, {}", o0, lane));
                        row_outputs(b, *row, o, lane, fmt::format("ro{}.", w));
                    });
            });
        }
        f.emit("ret void");
        m.add_function(
            f.finish(fmt::format("void @{}_rows(ptr noalias readonly %p, i64 %begin, i64 %end) #0", name),
                     fmt::format("; {} [begin, end): every stage, the element outputs and the row outputs\n",
                                 inner ? "rows" : "output columns")));
    }

    // Split: `<name>_partials` over (row, chunk) pairs into the workspaces, then `<name>_finish` over rows.
    void split_entries(const std::string& chunk_fn, const std::array<std::string, 2>& column_fns) {
        const std::vector<int> members = stage_members(0);
        // The workspace slot of (output o, chunk k): bytes (o * chunks + k) * 16.
        auto slot_offset = [&](Builder& b, const Params& P, const std::string& o, const std::string& k) {
            const std::string slot = b.let("slot", fmt::format("mul i64 {}, {}", o, P.chunks));
            const std::string sk = b.let("slot.k", fmt::format("add i64 {}, {}", slot, k));
            return b.let("slot.at", fmt::format("mul i64 {}, {}", sk, kSlotBytes));
        };
        {
            Function f(m);
            for (const char* a : {"p", "begin", "end"}) f.reserve(a);
            Builder b{f, target};
            driver_buffers(f, true);
            const Params P = load_params(b);
            // Partial lane `lane` of output o, chunk k -> its workspace slot.
            auto save = [&](const std::string& o, const std::string& k, const std::string& lane) {
                const std::string off = slot_offset(b, P, o, k);
                for (int j : members) {
                    const Ptrs part = part_ptrs(b, "%part", j);
                    const Ptrs l = element_ptrs(b, j, part, lane, 1, "pv.l");
                    const Acc x = A(j).load(b, l.v, l.i, 1, fmt::format("x{}", j));
                    const Ptrs ws = workspace_ptrs(b, j, P.partials.at(static_cast<std::size_t>(j)), off,
                                                   fmt::format("ws{}", j));
                    A(j).store(b, x, ws.v, ws.i, 1);
                }
            };
            b.for_range("t", "%begin", "%end", 1, [&](const std::string& t) {
                const std::string u = b.let("unit", fmt::format("udiv i64 {}, {}", t, P.chunks),
                                            inner ? "row" : "vector of output columns");
                const std::string k = b.let("k", fmt::format("urem i64 {}, {}", t, P.chunks), "chunk");
                if (inner) {
                    call_chunk(b, chunk_fn, u, k);
                    save(u, k, "0");
                    return;
                }
                const std::string o0 = b.let("o0", fmt::format("mul i64 {}, {}", u, W));
                const std::string oe = b.let("o0.end", fmt::format("add i64 {}, {}", o0, W));
                const std::string whole = b.let("whole", fmt::format("icmp ule i64 {}, {}", oe, P.rows));
                f.emit(fmt::format("br i1 {}, label %vec, label %one", whole));
                f.label("vec");
                call_chunk(b, column_fns[0], o0, k);
                for_lanes(b, "lane", W, [&](const std::string& lane) {
                    save(b.let("o", fmt::format("add i64 {}, {}", o0, lane)), k, lane);
                });
                f.emit("br label %pair.next");
                f.label("one");
                b.for_range("o1", o0, P.rows, 1, [&](const std::string& o) {
                    call_chunk(b, column_fns[1], o, k);
                    save(o, k, "0");
                });
                f.emit("br label %pair.next");
                f.label("pair.next");
            });
            f.emit("ret void");
            m.add_function(f.finish(
                fmt::format("void @{}_partials(ptr noalias readonly %p, i64 %begin, i64 %end) #0", name),
                "; (row, chunk) pairs [begin, end), pair t = row * chunks + chunk: chunk partials into the "
                "workspaces\n"));
        }
        {
            Function f(m);
            for (const char* a : {"p", "begin", "end"}) f.reserve(a);
            Builder b{f, target};
            driver_buffers(f, false);
            const Params P = load_params(b);
            const std::unique_ptr<Space> row = row_space(b);
            for_rows(b, [&](const std::string& o) {
                tree(
                    b, members, 1, P.chunks, P.len,
                    [&](const std::string& k) {
                        const std::string off = slot_offset(b, P, o, k);
                        std::vector<Acc> r;
                        for (int j : members) {
                            const Ptrs ws = workspace_ptrs(b, j, P.partials.at(static_cast<std::size_t>(j)),
                                                           off, fmt::format("ws{}", j));
                            r.push_back(A(j).load(b, ws.v, ws.i, 1, fmt::format("p{}", j)));
                        }
                        return r;
                    },
                    "%rv", "");
                if (row) row_outputs(b, *row, o, "0", "ro.");
            });
            f.emit("ret void");
            m.add_function(f.finish(
                fmt::format("void @{}_finish(ptr noalias readonly %p, i64 %begin, i64 %end) #0", name),
                fmt::format("; {} [begin, end): the pairwise tree over the chunk partials, the finish and "
                            "the row outputs\n",
                            inner ? "rows" : "output columns")));
        }
    }
};

}  // namespace

LlvmKernelSource emit_reduce_llvm(std::string_view user_name, const PlannedReduce& pr,
                                  const HostSchedule& schedule, const HostTarget& target) {
    LlvmKernelSource src;
    src.user_name = std::string(user_name);
    src.name = kernel_name(user_name);
    ReduceEmitter em(pr, schedule, target, src.name);
    const ReducePlan& p = pr.plan;
    if (256 % em.W != 0)
        throw InternalError(fmt::format("emit_reduce_llvm: {} lanes do not tile the 256 lanes", em.W));
    if (!schedule.keep.empty() &&
        (!em.inner || schedule.split || schedule.keep.size() != static_cast<std::size_t>(p.element_outputs)))
        throw InternalError("emit_reduce_llvm: kept operands need the inner schedule's element outputs");
    std::vector<std::string> chunk_fns;
    std::vector<std::array<std::string, 2>> column_fns;
    for (int s = 0; s < p.stages; ++s) {
        if (em.inner)
            chunk_fns.push_back(em.chunk_function(s));
        else
            column_fns.push_back({em.columns_function(s, em.W), em.columns_function(s, 1)});
    }
    if (schedule.split) {
        em.split_entries(em.inner ? chunk_fns[0] : std::string(),
                         em.inner ? std::array<std::string, 2>{} : column_fns[0]);
        src.partials_entry = src.name + "_partials";
        src.finish_entry = src.name + "_finish";
    } else {
        em.rows_entry(chunk_fns, column_fns);
        src.entry = src.name + "_rows";
    }
    std::string text = fmt::format("host schedule: {}\n", schedule.to_string());
    text +=
        fmt::format("reduction: {} order, {} stage(s), {} element output(s)\n",
                    em.inner ? "row (chunks of 8192, 256 lanes of runs of 4, butterfly, pairwise over chunks)"
                             : "column (chunks of 256 in sequence, pairwise over chunks)",
                    p.stages, p.element_outputs);
    for (std::size_t j = 0; j < p.ops.size(); ++j)
        text += fmt::format("reduction {}: {}, stage {}\n", j, em.op_text(j), p.ops[j].stage);
    text += "element space:\n" + detail::host_space_text(p.element);
    if (em.has_row) text += "row space:\n" + detail::host_space_text(p.row);
    src.ir = em.m.text(detail::llvm_banner("reduction", src.name, user_name, text));
    return src;
}

}  // namespace loom::codegen
