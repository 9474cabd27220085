// The LLVM emitter of reduction kernels (codegen/llvm/emit.hpp): the documented reduction order
// (docs/semantics.md, "Reduction order") written out lane by lane, so that it never depends on LLVM's
// vectorizer, the vector width or the number of threads.
//
// Row order (the innermost axis reduced): a chunk function computes one chunk's partial for every reduction
// of a stage: 256 lanes held in a stack array, blocks of 4 W consecutive elements evaluated W*4 wide and
// deinterleaved so that each of W lanes takes its run of 4 in order, a scalar tail, then the butterfly over
// the active lanes. Column order (the innermost axis kept): a chunk function accumulates a chunk of 256
// reduced positions in sequence, W output columns at once. A driver combines the chunk partials of a row by
// the pairwise tree, as a binary counter (push a partial; while the count is even, combine the top two; at
// the end fold from the top: the same tree with the odd partial carried up), finishes the reduced values
// (mean's division, one rounding to a half dtype), and writes the element and row outputs.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <functional>
#include <memory>

#include "llvm_accumulate.hpp"
#include "llvm_ir.hpp"
#include "llvm_space.hpp"
#include "loom/codegen/llvm/emit.hpp"
#include "loom/codegen/names.hpp"
#include "loom/ir/error.hpp"

namespace loom::codegen {

namespace detail {
std::string host_space_text(const PointwisePlan& plan);
std::string llvm_banner(std::string_view kind, const std::string& name, std::string_view user, const std::string& lines);
}  // namespace detail

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
    }

    std::vector<int> stage_members(int s) const {
        std::vector<int> r;
        for (std::size_t j = 0; j < nred; ++j)
            if (pr.plan.ops[j].stage == s) r.push_back(static_cast<int>(j));
        return r;
    }
    std::string op_text(std::size_t j) const {
        const ReduceOpPlan& o = pr.plan.ops[j];
        return fmt::format("{} {} -> {} ({})", ir::op_name(o.op), loom::name(o.in), loom::name(o.out),
                           short_location(pr.element_roots[j]->loc()));
    }
    std::string rv_type(std::size_t j) const { return std::string(scalar_type(pr.plan.ops[j].out)); }

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
                case K::Rows: dst = &P.rows; comment = "O: output elements (rows)"; break;
                case K::Length: dst = &P.len; comment = "L: elements reduced per output"; break;
                case K::Chunks: dst = &P.chunks; comment = "chunks per row"; break;
                case K::Partials: P.partials.emplace_back(); dst = &P.partials.back(); comment = fmt::format("split workspace of reduction {}", f.a); break;
                default: continue;
            }
            const std::string at = b.let(fmt::format("{}.at", f.name), fmt::format("getelementptr inbounds i8, ptr %p, i64 {}", f.offset));
            *dst = b.let(f.name, fmt::format("load {}, ptr {}, align 8", f.type == ParamType::RawPointer ? "ptr" : "i64", at), comment);
        }
        return P;
    }

    // Row values as the element and row graphs read them: lane `lane` (w == 1) or lanes 0 .. w-1 of reduction
    // j's slot in `rv`.
    std::function<std::string(int, int)> row_values(Builder& b, const std::vector<int>& row_value, const std::string& rv,
                                                    const std::string& lane) {
        return [&b, &row_value, rv, lane, this](int input, int w) -> std::string {
            const int j = row_value.at(static_cast<std::size_t>(input));
            if (j < 0) return {};
            const std::string ty = rv_type(static_cast<std::size_t>(j));
            const std::string base = b.let(fmt::format("rv{}.p", j), fmt::format("getelementptr inbounds i8, ptr {}, i64 {}", rv, j * kRowValueBytes));
            const std::string p = lane == "0" ? base : b.let(fmt::format("rv{}.l", j), fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", ty, base, lane));
            // Row order: one row value for every element of the row (splat). Column order: each lane is an
            // output column with its own value (lanes 0 .. w-1 of the slot).
            if (!inner || w == 1)
                return b.let(fmt::format("rv{}", j), fmt::format("load {}, ptr {}, align {}", vec(ty, w), p, bytes_of(ty)),
                             fmt::format("row value of reduction {}", j));
            const std::string v = b.let(fmt::format("rv{}.one", j), fmt::format("load {}, ptr {}, align {}", ty, p, bytes_of(ty)),
                                        fmt::format("row value of reduction {}", j));
            return b.splat(fmt::format("rv{}", j), ty, v, w);
        };
    }
    std::string part_ptr(Builder& b, const std::string& part, std::size_t j, bool index) {
        return b.let(fmt::format("part{}{}.p", j, index ? "i" : ""),
                     fmt::format("getelementptr inbounds i8, ptr {}, i64 {}", part, static_cast<int>(j) * kPartialBytes + (index ? 256 : 0)));
    }

    // ---- chunk functions -----------------------------------------------------------------------------------

    // Row order: the partial of chunk k of row o for the reductions of stage s, into `part`.
    std::string chunk_function(int s) {
        Function f(m);
        for (const char* a : {"p", "o", "o0", "k", "rv", "part"}) f.reserve(a);
        Builder b{f, target};
        const std::vector<int> members = stage_members(s);
        Space el(b, el_g, pr.plan.element, "el.");
        const Params P = load_params(b);
        el.load_params("%p", el_off);
        el.external = row_values(b, pr.plan.element_row_value, "%rv", "0");
        std::vector<std::string> lanes, index_lanes;
        for (int j : members) {
            lanes.push_back(f.alloca_(fmt::format("lanes{}", j), fmt::format("[256 x {}]", acc[static_cast<std::size_t>(j)].a), 64));
            index_lanes.push_back(acc[static_cast<std::size_t>(j)].arg ? f.alloca_(fmt::format("lanes{}.i", j), "[256 x i64]", 64) : "");
        }
        const std::string lslot = f.alloca_("l.slot", "i64");
        const std::string islot = f.alloca_("i.slot", "i64");
        const std::string aslot = f.alloca_("active.slot", "i64");
        f.note(fmt::format("chunk k of row o: elements [8192 k, min(L, 8192 (k + 1))); element i goes to lane (i / 4) mod 256"));
        const std::string first = b.let("first", "mul i64 %k, 8192");
        const std::string rest = b.let("rest", fmt::format("sub i64 {}, {}", P.len, first));
        m.declare("llvm.umin.i64", "declare i64 @llvm.umin.i64(i64, i64)");
        m.declare("llvm.smin.i64", "declare i64 @llvm.smin.i64(i64, i64)");
        m.declare("llvm.smax.i64", "declare i64 @llvm.smax.i64(i64, i64)");
        const std::string n = b.let("n", fmt::format("call i64 @llvm.umin.i64(i64 {}, i64 8192)", rest), "elements in this chunk");
        const std::string runs = b.let("runs", fmt::format("add i64 {}, 3", n));
        const std::string r4 = b.let("runs4", fmt::format("lshr i64 {}, 2", runs));
        const std::string active = b.let("active", fmt::format("call i64 @llvm.umin.i64(i64 {}, i64 256)", r4), "lanes holding elements");
        f.emit(fmt::format("store i64 {}, ptr {}", active, aslot));
        const std::string rowbase = b.let("rowbase", fmt::format("mul i64 %o, {}", P.len), "flat index of (o, 0)");

        // Every lane starts at the identity.
        f.emit(fmt::format("store i64 0, ptr {}", lslot));
        f.emit("br label %init.cond");
        f.label("init.cond");
        {
            const std::string l = b.let("init.l", fmt::format("load i64, ptr {}", lslot));
            const std::string more = b.let("init.more", fmt::format("icmp ult i64 {}, 256", l));
            f.emit(fmt::format("br i1 {}, label %init.body, label %blocks.start", more));
            f.label("init.body");
            for (std::size_t q = 0; q < members.size(); ++q) {
                const LaneAccumulator& A = acc[static_cast<std::size_t>(members[q])];
                const Acc id = A.identity(W);
                const std::string vp = b.let("init.vp", fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", A.a, lanes[q], l));
                const std::string ip = A.arg ? b.let("init.ip", fmt::format("getelementptr inbounds i64, ptr {}, i64 {}", index_lanes[q], l)) : "";
                A.store(b, id, vp, ip, W);
            }
            const std::string ln = b.let("init.next", fmt::format("add i64 {}, {}", l, W));
            f.emit(fmt::format("store i64 {}, ptr {}", ln, lslot));
            f.emit("br label %init.cond");
        }

        // Whole blocks of 4 W elements: W lanes, each taking its run of 4 in order. The sites that read runs of
        // consecutive elements are loaded 4 W at a time and deinterleaved (element 4 m + q of the block is run
        // position q of lane m); then the graph is evaluated once per run position q, W lanes wide.
        f.label("blocks.start");
        const int B = 4 * W;
        const std::string nb = b.let("nblocks", fmt::format("udiv i64 {}, {}", n, B), fmt::format("whole blocks of {} elements ({} lanes x runs of 4)", B, W));
        std::vector<int> run_sites;
        std::vector<std::string> run_buf;
        for (std::size_t q = 0; q < pr.plan.element.loads.size(); ++q) {
            const int si = static_cast<int>(q);
            if (pr.plan.element_row_value[static_cast<std::size_t>(pr.plan.element.loads[q].input)] >= 0 || !el.reads_runs(si)) continue;
            run_sites.push_back(si);
            run_buf.push_back(f.alloca_(fmt::format("runs{}", si), fmt::format("[{} x {}]", B, el.site_storage(si)), 64));
        }
        const std::string qslot = f.alloca_("q.slot", "i64");
        f.emit(fmt::format("store i64 0, ptr {}", islot));
        f.emit("br label %block.cond");
        f.label("block.cond");
        {
            const std::string bi = b.let("bi", fmt::format("load i64, ptr {}", islot));
            const std::string more = b.let("block.more", fmt::format("icmp ult i64 {}, {}", bi, nb));
            f.emit(fmt::format("br i1 {}, label %block.body, label %tail.start", more));
            f.label("block.body");
            const std::string i = b.let("i", fmt::format("mul i64 {}, {}", bi, B), "position in the chunk");
            const std::string r = b.let("r", fmt::format("add i64 {}, {}", first, i), "reduced index");
            const Point pt = point_inner(b, "%o", r, rowbase, "b.");
            for (std::size_t q = 0; q < run_sites.size(); ++q) {
                const int si = run_sites[q];
                const std::string st = el.site_storage(si);
                const std::string V = vec(st, W);
                const std::string off = el.run_offset(si, pt);
                const std::string p0 = b.let(fmt::format("in{}.block", si), fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", st, el.site_pointer(si), off));
                std::vector<std::string> part;
                for (int v = 0; v < 4; ++v) {
                    const std::string pv = b.let(fmt::format("in{}.p{}", si, v), fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", st, p0, v * W));
                    part.push_back(b.let(fmt::format("in{}.a{}", si, v), fmt::format("load {}, ptr {}, align {}", V, pv, bytes_of(st)),
                                         v == 0 ? fmt::format("in{}: {} elements, deinterleaved into runs", si, B) : ""));
                }
                // Two levels of two-source shuffles: run positions {0, 1} and {2, 3} of each pair of vectors, then
                // each position alone.
                auto mask = [&](auto pick) {
                    std::vector<std::string> m;
                    for (int l = 0; l < W; ++l) m.push_back(fmt::format("i32 {}", pick(l)));
                    return fmt::format("<{} x i32> <{}>", W, fmt::join(m, ", "));
                };
                std::string u[4];
                for (int h = 0; h < 2; ++h)
                    for (int half = 0; half < 2; ++half)  // lanes of positions 2 half, 2 half + 1 of vectors 2h, 2h+1
                        u[2 * h + half] = b.let(fmt::format("in{}.u{}", si, 2 * h + half),
                                                fmt::format("shufflevector {} {}, {} {}, {}", V, part[2 * h], V, part[2 * h + 1],
                                                            mask([&](int l) { return 4 * (l / 2) + 2 * half + (l % 2); })));
                for (int pos = 0; pos < 4; ++pos) {
                    const int half = pos / 2, odd = pos % 2;
                    const std::string d = b.let(fmt::format("in{}.run{}", si, pos),
                                                fmt::format("shufflevector {} {}, {} {}, {}", V, u[half], V, u[2 + half],
                                                            mask([&](int l) { return 2 * l + odd; })));
                    const std::string bp = b.let(fmt::format("in{}.bp{}", si, pos), fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", st, run_buf[q], pos * W));
                    f.emit(fmt::format("store {} {}, ptr {}, align {}", V, d, bp, bytes_of(st)));
                }
            }
            const std::string lg = b.let("lane0", fmt::format("mul i64 {}, {}", bi, W));
            const std::string lo = b.let("lanes.at", fmt::format("and i64 {}, 255", lg), "first lane of the block: (i / 4) mod 256");
            f.emit(fmt::format("store i64 0, ptr {}", qslot));
            f.emit("br label %run.cond");
            f.label("run.cond");
            const std::string qv = b.let("q", fmt::format("load i64, ptr {}", qslot));
            const std::string qmore = b.let("run.more", fmt::format("icmp ult i64 {}, 4", qv));
            f.emit(fmt::format("br i1 {}, label %run.body, label %block.next", qmore));
            f.label("run.body");
            const std::string rq = b.let("rq", fmt::format("add i64 {}, {}", r, qv), "run position q: elements r + q + 4 m of lanes m");
            Point ptq = point_inner(b, "%o", rq, rowbase, "q.");
            ptq.stride = 4;
            el.preloaded = [&](int si, int w) -> std::string {
                for (std::size_t q = 0; q < run_sites.size(); ++q) {
                    if (run_sites[q] != si) continue;
                    const std::string st = el.site_storage(si);
                    const std::string at = b.let(fmt::format("in{}.q", si), fmt::format("mul i64 {}, {}", qv, W));
                    const std::string bp = b.let(fmt::format("in{}.qp", si), fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", st, run_buf[q], at));
                    return b.let(fmt::format("in{}.runq", si), fmt::format("load {}, ptr {}, align {}", vec(st, w), bp, bytes_of(st)));
                }
                return {};
            };
            const std::vector<std::string> vals = el.evaluate(members, ptq, W, "b.");
            el.preloaded = nullptr;
            std::string idx;
            if (std::any_of(members.begin(), members.end(), [&](int j) { return acc[static_cast<std::size_t>(j)].arg; })) {
                const std::string rs = b.splat("rq.all", "i64", rq, W);
                std::vector<std::string> offs;
                for (int l = 0; l < W; ++l) offs.push_back(fmt::format("i64 {}", 4 * l));
                idx = b.let("rq.idx", fmt::format("add <{} x i64> {}, <{}>", W, rs, fmt::join(offs, ", ")), "reduced indices of the lanes' elements");
            }
            for (std::size_t q = 0; q < members.size(); ++q) {
                const int j = members[q];
                const LaneAccumulator& A = acc[static_cast<std::size_t>(j)];
                f.note(fmt::format("reduction {}: {}", j, op_text(static_cast<std::size_t>(j))));
                const std::string vp = b.let(fmt::format("lanes{}.p", j), fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", A.a, lanes[q], lo));
                const std::string ip = A.arg ? b.let(fmt::format("lanes{}.ip", j), fmt::format("getelementptr inbounds i64, ptr {}, i64 {}", index_lanes[q], lo)) : "";
                const Acc a = A.load(b, vp, ip, W, fmt::format("acc{}", j));
                const Acc e = A.element(b, vals[q], idx, W, fmt::format("e{}", j));
                A.store(b, A.combine(b, a, e, W, fmt::format("acc{}", j)), vp, ip, W);
            }
            const std::string qn = b.let("q.next", fmt::format("add i64 {}, 1", qv));
            f.emit(fmt::format("store i64 {}, ptr {}", qn, qslot));
            f.emit("br label %run.cond");
            f.label("block.next");
            const std::string bn = b.let("bi.next", fmt::format("add i64 {}, 1", bi));
            f.emit(fmt::format("store i64 {}, ptr {}", bn, islot));
            f.emit("br label %block.cond");
        }

        // The chunk's tail: element by element.
        f.label("tail.start");
        const std::string i0 = b.let("tail.i0", fmt::format("mul i64 {}, {}", nb, B));
        f.emit(fmt::format("store i64 {}, ptr {}", i0, islot));
        f.emit("br label %tail.cond");
        f.label("tail.cond");
        {
            const std::string i = b.let("ti", fmt::format("load i64, ptr {}", islot));
            const std::string more = b.let("tail.more", fmt::format("icmp ult i64 {}, {}", i, n));
            f.emit(fmt::format("br i1 {}, label %tail.body, label %butterfly", more));
            f.label("tail.body");
            const std::string r = b.let("tr", fmt::format("add i64 {}, {}", first, i));
            const Point pt = point_inner(b, "%o", r, rowbase, "t.");
            const std::vector<std::string> vals = el.evaluate(members, pt, 1, "t.");
            const std::string l4 = b.let("tl4", fmt::format("lshr i64 {}, 2", i));
            const std::string lane = b.let("tlane", fmt::format("and i64 {}, 255", l4), "lane (i / 4) mod 256");
            for (std::size_t q = 0; q < members.size(); ++q) {
                const int j = members[q];
                const LaneAccumulator& A = acc[static_cast<std::size_t>(j)];
                const std::string vp = b.let(fmt::format("tl{}.p", j), fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", A.a, lanes[q], lane));
                const std::string ip = A.arg ? b.let(fmt::format("tl{}.ip", j), fmt::format("getelementptr inbounds i64, ptr {}, i64 {}", index_lanes[q], lane)) : "";
                const Acc a = A.load(b, vp, ip, 1, fmt::format("tacc{}", j));
                const Acc e = A.element(b, vals[q], r, 1, fmt::format("te{}", j));
                A.store(b, A.combine(b, a, e, 1, fmt::format("tacc{}", j)), vp, ip, 1);
            }
            const std::string in = b.let("ti.next", fmt::format("add i64 {}, 1", i));
            f.emit(fmt::format("store i64 {}, ptr {}", in, islot));
            f.emit("br label %tail.cond");
        }

        // Butterfly over the active lanes: for s = 128, 64, ..., 1, lane l < s takes lane l + s (lanes past the
        // active ones hold the identity, which combines exactly: they are skipped, as the reference does). Whole
        // vectors of W lanes while s >= W, then lane by lane.
        f.label("butterfly");
        const std::string sslot = f.alloca_("s.slot", "i64");
        f.emit(fmt::format("store i64 128, ptr {}", sslot));
        f.emit("br label %bf.cond");
        f.label("bf.cond");
        const std::string sv = b.let("s", fmt::format("load i64, ptr {}", sslot));
        const std::string snz = b.let("bf.more", fmt::format("icmp ne i64 {}, 0", sv));
        f.emit(fmt::format("br i1 {}, label %bf.step, label %bf.done", snz));
        f.label("bf.step");
        const std::string act = b.let("act", fmt::format("load i64, ptr {}", aslot));
        const std::string dd = b.let("bf.d", fmt::format("sub i64 {}, {}", act, sv));
        const std::string c1 = b.let("bf.c", fmt::format("call i64 @llvm.smin.i64(i64 {}, i64 {})", dd, sv));
        const std::string cnt = b.let("bf.n", fmt::format("call i64 @llvm.smax.i64(i64 {}, i64 0)", c1), "lanes l < min(s, active - s)");
        const std::string wide = b.let("bf.wide", fmt::format("icmp uge i64 {}, {}", sv, W), "s >= W: whole vectors");
        f.emit(fmt::format("store i64 0, ptr {}", lslot));
        for (int pass = 0; pass < 2; ++pass) {
            const int w = pass == 0 ? W : 1;
            const std::string cond = fmt::format("bf.w{}.cond", w), body = fmt::format("bf.w{}.body", w), done = fmt::format("bf.w{}.done", w);
            f.emit(fmt::format("br label %{}", cond));
            f.label(cond);
            const std::string l = b.let("bf.l", fmt::format("load i64, ptr {}", lslot));
            const std::string ln = b.let("bf.lnext", fmt::format("add i64 {}, {}", l, w));
            std::string ok = b.let("bf.ok", fmt::format("icmp ule i64 {}, {}", ln, cnt));
            if (w > 1) ok = b.let("bf.okw", fmt::format("and i1 {}, {}", ok, wide));
            f.emit(fmt::format("br i1 {}, label %{}, label %{}", ok, body, done));
            f.label(body);
            const std::string ls = b.let("bf.ls", fmt::format("add i64 {}, {}", l, sv));
            for (std::size_t q = 0; q < members.size(); ++q) {
                const int j = members[q];
                const LaneAccumulator& A = acc[static_cast<std::size_t>(j)];
                auto ptrs = [&](const std::string& at, std::string_view what) {
                    std::pair<std::string, std::string> pp;
                    pp.first = b.let(fmt::format("bf.{}{}", what, j), fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", A.a, lanes[q], at));
                    if (A.arg) pp.second = b.let(fmt::format("bf.{}{}i", what, j), fmt::format("getelementptr inbounds i64, ptr {}, i64 {}", index_lanes[q], at));
                    return pp;
                };
                const auto pl = ptrs(l, "a"), ph = ptrs(ls, "b");
                const Acc x = A.load(b, pl.first, pl.second, w, fmt::format("bf.x{}", j));
                const Acc y = A.load(b, ph.first, ph.second, w, fmt::format("bf.y{}", j));
                A.store(b, A.combine(b, x, y, w, fmt::format("bf.c{}", j)), pl.first, pl.second, w);
            }
            f.emit(fmt::format("store i64 {}, ptr {}", ln, lslot));
            f.emit(fmt::format("br label %{}", cond));
            f.label(done);
        }
        const std::string na = b.let("act.next", fmt::format("call i64 @llvm.umin.i64(i64 {}, i64 {})", act, sv));
        f.emit(fmt::format("store i64 {}, ptr {}", na, aslot));
        const std::string sh = b.let("s.next", fmt::format("lshr i64 {}, 1", sv));
        f.emit(fmt::format("store i64 {}, ptr {}", sh, sslot));
        f.emit("br label %bf.cond");
        f.label("bf.done");
        // The chunk's partial is lane 0.
        for (std::size_t q = 0; q < members.size(); ++q) {
            const int j = members[q];
            const LaneAccumulator& A = acc[static_cast<std::size_t>(j)];
            const Acc x = A.load(b, lanes[q], index_lanes[q], 1, fmt::format("partial{}", j));
            A.store(b, x, part_ptr(b, "%part", static_cast<std::size_t>(j), false),
                    A.arg ? part_ptr(b, "%part", static_cast<std::size_t>(j), true) : "", 1);
        }
        f.emit("ret void");
        const std::string fn = fmt::format("{}.chunk.s{}", name, s);
        std::string members_text;
        for (int j : members) members_text += fmt::format("\n;   reduction {}: {}", j, op_text(static_cast<std::size_t>(j)));
        m.add_function(f.finish(fmt::format("internal void @{}(ptr noalias readonly %p, i64 %o, i64 %k, ptr noalias %rv, ptr noalias %part) #0", fn),
                                fmt::format("; row order, stage {}: the partial of chunk k of row o{}\n", s, members_text)));
        return fn;
    }

    // Column order: the partials of chunk k (256 reduced positions, in sequence) of the w output columns from o0.
    std::string columns_function(int s, int w) {
        Function f(m);
        for (const char* a : {"p", "o", "o0", "k", "rv", "part"}) f.reserve(a);
        Builder b{f, target};
        const std::vector<int> members = stage_members(s);
        Space el(b, el_g, pr.plan.element, "el.");
        const Params P = load_params(b);
        el.load_params("%p", el_off);
        el.external = row_values(b, pr.plan.element_row_value, "%rv", "0");
        std::vector<std::string> vslot, islot;
        for (int j : members) {
            vslot.push_back(f.alloca_(fmt::format("acc{}.slot", j), acc[static_cast<std::size_t>(j)].type(w)));
            islot.push_back(acc[static_cast<std::size_t>(j)].arg ? f.alloca_(fmt::format("acc{}.islot", j), vec("i64", w)) : "");
        }
        const std::string rslot = f.alloca_("r.slot", "i64");
        m.declare("llvm.umin.i64", "declare i64 @llvm.umin.i64(i64, i64)");
        const std::string first = b.let("first", "mul i64 %k, 256");
        const std::string rest = b.let("rest", fmt::format("sub i64 {}, {}", P.len, first));
        const std::string n = b.let("n", fmt::format("call i64 @llvm.umin.i64(i64 {}, i64 256)", rest), "positions in this chunk");
        const std::string last = b.let("last", fmt::format("add i64 {}, {}", first, n));
        for (std::size_t q = 0; q < members.size(); ++q) acc[static_cast<std::size_t>(members[q])].store(b, acc[static_cast<std::size_t>(members[q])].identity(w), vslot[q], islot[q], w);
        f.emit(fmt::format("store i64 {}, ptr {}", first, rslot));
        f.emit("br label %pos.cond");
        f.label("pos.cond");
        const std::string r = b.let("r", fmt::format("load i64, ptr {}", rslot));
        const std::string more = b.let("more", fmt::format("icmp ult i64 {}, {}", r, last));
        f.emit(fmt::format("br i1 {}, label %pos.body, label %done", more));
        f.label("pos.body");
        Point pt;
        const std::string flat = b.let("flat", fmt::format("mul i64 {}, {}", r, P.rows));
        const std::string fo = b.let("flat.o", fmt::format("add i64 {}, %o0", flat), "flat index of (r, o0) in the (L, O) space");
        if (pr.plan.element.rank == 2) pt = Point{{r}, "%o0", fo};
        else pt = Point{{}, fo, fo};
        const std::vector<std::string> vals = el.evaluate(members, pt, w, "");
        std::string rs = w > 1 ? b.splat("r.all", "i64", r, w) : r;
        for (std::size_t q = 0; q < members.size(); ++q) {
            const int j = members[q];
            const LaneAccumulator& A = acc[static_cast<std::size_t>(j)];
            f.note(fmt::format("reduction {}: {}", j, op_text(static_cast<std::size_t>(j))));
            const Acc a = A.load(b, vslot[q], islot[q], w, fmt::format("acc{}", j));
            const Acc e = A.element(b, vals[q], rs, w, fmt::format("e{}", j));
            A.store(b, A.combine(b, a, e, w, fmt::format("acc{}", j)), vslot[q], islot[q], w);
        }
        const std::string rn = b.let("r.next", fmt::format("add i64 {}, 1", r));
        f.emit(fmt::format("store i64 {}, ptr {}", rn, rslot));
        f.emit("br label %pos.cond");
        f.label("done");
        for (std::size_t q = 0; q < members.size(); ++q) {
            const int j = members[q];
            const LaneAccumulator& A = acc[static_cast<std::size_t>(j)];
            const Acc x = A.load(b, vslot[q], islot[q], w, fmt::format("partial{}", j));
            A.store(b, x, part_ptr(b, "%part", static_cast<std::size_t>(j), false), A.arg ? part_ptr(b, "%part", static_cast<std::size_t>(j), true) : "", w);
        }
        f.emit("ret void");
        const std::string fn = fmt::format("{}.columns.s{}.w{}", name, s, w);
        m.add_function(f.finish(fmt::format("internal void @{}(ptr noalias readonly %p, i64 %o0, i64 %k, ptr noalias %rv, ptr noalias %part) #0", fn),
                                fmt::format("; column order, stage {}: the partials of chunk k of the {} output column(s) from o0\n", s, w)));
        return fn;
    }

    Point point_inner(Builder& b, const std::string& o, const std::string& r, const std::string& rowbase, std::string_view tag) {
        const std::string flat = b.let(fmt::format("{}flat", tag), fmt::format("add i64 {}, {}", rowbase, r));
        if (pr.plan.element.rank == 2) return Point{{o}, r, flat};
        return Point{{}, flat, flat};
    }

    // ---- drivers -------------------------------------------------------------------------------------------

    // The pairwise tree over chunks as a binary counter, for the reductions `members` at width w; `partial`
    // emits the code that leaves chunk k's partials in `part` (or returns them), and `done` receives the finished
    // row values (written to `rv`).
    void tree(Builder& b, const std::vector<int>& members, int w, const std::string& chunks, const std::string& count,
              const std::function<std::vector<Acc>(const std::string& k)>& partial, const std::string& rv, std::string_view tag) {
        Function& f = b.f;
        std::vector<std::string> stack, istack;
        for (int j : members) {
            stack.push_back(f.alloca_(fmt::format("{}stack{}", tag, j), fmt::format("[64 x {}]", acc[static_cast<std::size_t>(j)].type(w)), 64));
            istack.push_back(acc[static_cast<std::size_t>(j)].arg ? f.alloca_(fmt::format("{}istack{}", tag, j), fmt::format("[64 x {}]", vec("i64", w)), 64) : "");
        }
        const std::string dslot = f.alloca_(fmt::format("{}depth", tag), "i64");
        const std::string kslot = f.alloca_(fmt::format("{}k.slot", tag), "i64");
        const std::string nslot = f.alloca_(fmt::format("{}count.slot", tag), "i64");
        auto slot = [&](std::size_t q, const std::string& d, bool index) {
            const LaneAccumulator& A = acc[static_cast<std::size_t>(members[q])];
            if (index && !A.arg) return std::string();
            return b.let(fmt::format("{}s{}{}", tag, members[q], index ? "i" : ""),
                         fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", index ? vec("i64", w) : A.type(w), index ? istack[q] : stack[q], d));
        };
        // Slot 0 holds the identity, the result when the row has no chunk (the empty sum, product, any, all).
        for (std::size_t q = 0; q < members.size(); ++q) {
            const LaneAccumulator& A = acc[static_cast<std::size_t>(members[q])];
            A.store(b, A.identity(w), stack[q], istack[q], w);
        }
        f.emit(fmt::format("store i64 0, ptr {}", dslot));
        f.emit(fmt::format("store i64 0, ptr {}", kslot));
        const std::string L_head = f.fresh_label(fmt::format("{}tree.head", tag)), L_push = f.fresh_label(fmt::format("{}tree.push", tag));
        const std::string L_mc = f.fresh_label(fmt::format("{}merge.cond", tag)), L_mb = f.fresh_label(fmt::format("{}merge.body", tag));
        const std::string L_next = f.fresh_label(fmt::format("{}tree.next", tag)), L_inc = f.fresh_label(fmt::format("{}tree.inc", tag));
        const std::string L_done = f.fresh_label(fmt::format("{}tree.done", tag));
        f.emit(fmt::format("br label %{}", L_head));
        f.label(L_head);
        const std::string k = b.let(fmt::format("{}k", tag), fmt::format("load i64, ptr {}", kslot));
        const std::string more = b.let(fmt::format("{}more", tag), fmt::format("icmp ult i64 {}, {}", k, chunks), "a chunk left (else: the final fold)");
        f.emit(fmt::format("br i1 {}, label %{}, label %{}", more, L_push, L_mc));
        f.label(L_push);
        {
            const std::vector<Acc> parts = partial(k);
            const std::string d = b.let(fmt::format("{}d", tag), fmt::format("load i64, ptr {}", dslot));
            for (std::size_t q = 0; q < members.size(); ++q) acc[static_cast<std::size_t>(members[q])].store(b, parts[q], slot(q, d, false), slot(q, d, true), w);
            const std::string d1 = b.let(fmt::format("{}d.push", tag), fmt::format("add i64 {}, 1", d), "push chunk k's partial");
            f.emit(fmt::format("store i64 {}, ptr {}", d1, dslot));
            const std::string cnt = b.let(fmt::format("{}pushed", tag), fmt::format("add i64 {}, 1", k));
            f.emit(fmt::format("store i64 {}, ptr {}", cnt, nslot));
            f.emit(fmt::format("br label %{}", L_mc));
        }
        f.label(L_mc);
        {
            // After a push: while the count of pushed partials is even, the top two are a pair of the tree. After
            // the last chunk: the partials left (the odd ones carried up) are folded from the top.
            const std::string c = b.let(fmt::format("{}c", tag), fmt::format("load i64, ptr {}", nslot));
            const std::string odd = b.let(fmt::format("{}odd", tag), fmt::format("and i64 {}, 1", c));
            const std::string even = b.let(fmt::format("{}even", tag), fmt::format("icmp eq i64 {}, 0", odd));
            const std::string d = b.let(fmt::format("{}fd", tag), fmt::format("load i64, ptr {}", dslot));
            const std::string two = b.let(fmt::format("{}two", tag), fmt::format("icmp ugt i64 {}, 1", d));
            const std::string go = b.let(fmt::format("{}merge", tag), fmt::format("select i1 {}, i1 {}, i1 {}", more, even, two));
            f.emit(fmt::format("br i1 {}, label %{}, label %{}", go, L_mb, L_next));
            f.label(L_mb);
            combine_top(b, members, w, dslot, slot, tag);
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
            const LaneAccumulator& A = acc[static_cast<std::size_t>(j)];
            const Acc a = A.load(b, stack[q], istack[q], w, fmt::format("{}total{}", tag, j));
            const std::string v = A.finish(b, a, count, w, fmt::format("{}value{}", tag, j));
            const std::string ty = rv_type(static_cast<std::size_t>(j));
            const std::string p = b.let(fmt::format("{}rv{}.p", tag, j), fmt::format("getelementptr inbounds i8, ptr {}, i64 {}", rv, j * kRowValueBytes));
            f.emit(fmt::format("store {} {}, ptr {}, align {}", vec(ty, w), v, p, bytes_of(ty)), fmt::format("row value of reduction {}: {}", j, op_text(static_cast<std::size_t>(j))));
        }
    }

    template <class Slot>
    void combine_top(Builder& b, const std::vector<int>& members, int w, const std::string& dslot, const Slot& slot, std::string_view tag) {
        const std::string d = b.let(fmt::format("{}md", tag), fmt::format("load i64, ptr {}", dslot));
        const std::string d1 = b.let(fmt::format("{}md1", tag), fmt::format("sub i64 {}, 1", d));
        const std::string d2 = b.let(fmt::format("{}md2", tag), fmt::format("sub i64 {}, 2", d));
        for (std::size_t q = 0; q < members.size(); ++q) {
            const LaneAccumulator& A = acc[static_cast<std::size_t>(members[q])];
            const std::string pa = slot(q, d2, false), pai = slot(q, d2, true), pb = slot(q, d1, false), pbi = slot(q, d1, true);
            const Acc x = A.load(b, pa, pai, w, fmt::format("{}tx{}", tag, members[q]));
            const Acc y = A.load(b, pb, pbi, w, fmt::format("{}ty{}", tag, members[q]));
            A.store(b, A.combine(b, x, y, w, fmt::format("{}tc{}", tag, members[q])), pa, pai, w);
        }
        b.f.emit(fmt::format("store i64 {}, ptr {}", d1, dslot));
    }

    std::vector<Acc> read_part(Builder& b, const std::vector<int>& members, const std::string& part, int w) {
        std::vector<Acc> r;
        for (int j : members) {
            const LaneAccumulator& A = acc[static_cast<std::size_t>(j)];
            r.push_back(A.load(b, part_ptr(b, part, static_cast<std::size_t>(j), false),
                               A.arg ? part_ptr(b, part, static_cast<std::size_t>(j), true) : "", w, fmt::format("p{}", j)));
        }
        return r;
    }

    // Element outputs of row o (inner schedule): positions [0, L) in vector steps and a scalar tail.
    void element_outputs(Builder& b, Space& el, const Params& P, const std::string& o) {
        Function& f = b.f;
        std::vector<int> outs;
        for (int e = 0; e < pr.plan.element_outputs; ++e) outs.push_back(static_cast<int>(nred) + e);
        const std::string rslot = f.alloca_("eo.slot", "i64");
        const std::string rowbase = b.let("eo.rowbase", fmt::format("mul i64 {}, {}", o, P.len));
        f.emit(fmt::format("store i64 0, ptr {}", rslot));
        f.note("element outputs of row o: the last pass over the row, reading the row values");
        for (int w : {W, 1}) {
            const std::string cond = f.fresh_label(fmt::format("eo.w{}.cond", w)), body = f.fresh_label(fmt::format("eo.w{}.body", w));
            const std::string done = f.fresh_label(fmt::format("eo.w{}.done", w));
            f.emit(fmt::format("br label %{}", cond));
            f.label(cond);
            const std::string r = b.let("eo.r", fmt::format("load i64, ptr {}", rslot));
            const std::string rn = b.let("eo.rnext", fmt::format("add i64 {}, {}", r, w));
            const std::string ok = b.let("eo.ok", fmt::format("icmp ule i64 {}, {}", rn, P.len));
            f.emit(fmt::format("br i1 {}, label %{}, label %{}", ok, body, done));
            f.label(body);
            const Point pt = point_inner(b, o, r, rowbase, w > 1 ? "eo." : "eot.");
            const std::vector<std::string> vals = el.evaluate(outs, pt, w, w > 1 ? "eo." : "eot.");
            for (std::size_t e = 0; e < outs.size(); ++e) el.store_output(outs[e], vals[e], pt.flat, w, fmt::format("store element output {}", e));
            f.emit(fmt::format("store i64 {}, ptr {}", rn, rslot));
            f.emit(fmt::format("br label %{}", cond));
            f.label(done);
        }
    }

    // Row outputs of row (output) o, reading row values at lane `lane` of `rv`.
    void row_outputs(Builder& b, Space& row, const std::string& o, const std::string& lane, std::string_view tag) {
        row.external = row_values(b, pr.plan.row_row_value, "%rv", lane);
        std::vector<int> outs;
        for (std::size_t k = 0; k < row_g.outputs.size(); ++k) outs.push_back(static_cast<int>(k));
        const Point pt{{}, o, o};
        const std::vector<std::string> vals = row.evaluate(outs, pt, 1, tag);
        for (std::size_t k = 0; k < vals.size(); ++k) row.store_output(static_cast<int>(k), vals[k], o, 1, fmt::format("store row output {}", k));
    }

    // `<name>_rows`: whole rows (inner) or output columns (outer), every stage, the element and row outputs.
    void rows_entry(const std::vector<std::string>& chunk_fns, const std::vector<std::array<std::string, 2>>& column_fns) {
        Function f(m);
        for (const char* a : {"p", "begin", "end"}) f.reserve(a);
        Builder b{f, target};
        const Params P = load_params(b);
        Space el(b, el_g, pr.plan.element, "el.");
        el.load_params("%p", el_off);
        std::unique_ptr<Space> row;
        if (has_row) {
            row = std::make_unique<Space>(b, row_g, pr.plan.row, "row.");
            row->load_params("%p", row_off);
        }
        const std::string rv = f.alloca_("rv", fmt::format("[{} x i8]", nred * kRowValueBytes), 64);
        const std::string part = f.alloca_("part", fmt::format("[{} x i8]", nred * kPartialBytes), 64);
        el.external = row_values(b, pr.plan.element_row_value, rv, "0");
        const std::string oslot = f.alloca_("o.slot", "i64");
        f.emit(fmt::format("store i64 %begin, ptr {}", oslot));
        if (inner) {
            f.emit("br label %row.cond");
            f.label("row.cond");
            const std::string o = b.let("o", fmt::format("load i64, ptr {}", oslot));
            const std::string more = b.let("more", fmt::format("icmp ult i64 {}, %end", o));
            f.emit(fmt::format("br i1 {}, label %row.body, label %exit", more));
            f.label("row.body");
            for (int s = 0; s < pr.plan.stages; ++s) {
                const std::vector<int> members = stage_members(s);
                f.note(fmt::format("stage {}: every chunk of row o, combined by the pairwise tree", s));
                tree(b, members, 1, P.chunks, P.len,
                     [&](const std::string& k) {
                         b.f.emit(fmt::format("call void @{}(ptr %p, i64 {}, i64 {}, ptr %rv, ptr %part)", chunk_fns[static_cast<std::size_t>(s)], o, k));
                         return read_part(b, members, "%part", 1);
                     },
                     "%rv", fmt::format("s{}.", s));
            }
            if (pr.plan.element_outputs > 0) element_outputs(b, el, P, o);
            if (row) row_outputs(b, *row, o, "0", "ro.");
            const std::string on = b.let("o.next", fmt::format("add i64 {}, 1", o));
            f.emit(fmt::format("store i64 {}, ptr {}", on, oslot));
            f.emit("br label %row.cond");
        } else {
            // Vectors of W output columns, then the last columns one by one.
            for (int pass = 0; pass < 2; ++pass) {
                const int w = pass == 0 ? W : 1;
                const std::string cond = f.fresh_label(fmt::format("cols.w{}.cond", w)), body = f.fresh_label(fmt::format("cols.w{}.body", w));
                const std::string done = pass == 0 ? f.fresh_label("cols.rest") : std::string("exit");
                f.emit(fmt::format("br label %{}", cond));
                f.label(cond);
                const std::string o0 = b.let("o0", fmt::format("load i64, ptr {}", oslot));
                const std::string on = b.let("o0.next", fmt::format("add i64 {}, {}", o0, w));
                const std::string ok = b.let("o.ok", fmt::format("icmp ule i64 {}, %end", on));
                f.emit(fmt::format("br i1 {}, label %{}, label %{}", ok, body, done));
                f.label(body);
                for (int s = 0; s < pr.plan.stages; ++s) {
                    const std::vector<int> members = stage_members(s);
                    f.note(fmt::format("stage {}: every chunk of {} output column(s), combined by the pairwise tree", s, w));
                    tree(b, members, w, P.chunks, P.len,
                         [&](const std::string& k) {
                             b.f.emit(fmt::format("call void @{}(ptr %p, i64 {}, i64 {}, ptr %rv, ptr %part)",
                                                  column_fns[static_cast<std::size_t>(s)][pass], o0, k));
                             return read_part(b, members, "%part", w);
                         },
                         "%rv", fmt::format("w{}s{}.", w, s));
                }
                if (row) {  // the row outputs of each column
                    const std::string lslot = f.alloca_(fmt::format("lane{}.slot", w), "i64");
                    f.emit(fmt::format("store i64 0, ptr {}", lslot));
                    const std::string lc = f.fresh_label("ro.cond"), lb = f.fresh_label("ro.body"), ld = f.fresh_label("ro.done");
                    f.emit(fmt::format("br label %{}", lc));
                    f.label(lc);
                    const std::string lane = b.let("lane", fmt::format("load i64, ptr {}", lslot));
                    const std::string lok = b.let("lane.ok", fmt::format("icmp ult i64 {}, {}", lane, w));
                    f.emit(fmt::format("br i1 {}, label %{}, label %{}", lok, lb, ld));
                    f.label(lb);
                    const std::string o = b.let("o", fmt::format("add i64 {}, {}", o0, lane));
                    row_outputs(b, *row, o, lane, fmt::format("ro{}.", w));
                    const std::string lnext = b.let("lane.next", fmt::format("add i64 {}, 1", lane));
                    f.emit(fmt::format("store i64 {}, ptr {}", lnext, lslot));
                    f.emit(fmt::format("br label %{}", lc));
                    f.label(ld);
                }
                f.emit(fmt::format("store i64 {}, ptr {}", on, oslot));
                f.emit(fmt::format("br label %{}", cond));
                if (pass == 0) f.label(done);
            }
        }
        f.label("exit");
        f.emit("ret void");
        m.add_function(f.finish(fmt::format("void @{}_rows(ptr noalias readonly %p, i64 %begin, i64 %end) #0", name),
                                fmt::format("; {} [begin, end): every stage, the element outputs and the row outputs\n",
                                            inner ? "rows" : "output columns")));
    }

    // Split: `<name>_partials` over (row, chunk) pairs into the workspaces, then `<name>_finish` over rows.
    void split_entries(const std::string& chunk_fn, const std::array<std::string, 2>& column_fns) {
        const std::vector<int> members = stage_members(0);
        {
            Function f(m);
            for (const char* a : {"p", "begin", "end"}) f.reserve(a);
            Builder b{f, target};
            const Params P = load_params(b);
            f.alloca_("rv", fmt::format("[{} x i8]", nred * kRowValueBytes), 64);
            f.alloca_("part", fmt::format("[{} x i8]", nred * kPartialBytes), 64);
            const std::string tslot = f.alloca_("t.slot", "i64");
            f.emit(fmt::format("store i64 %begin, ptr {}", tslot));
            f.emit("br label %pair.cond");
            f.label("pair.cond");
            const std::string t = b.let("t", fmt::format("load i64, ptr {}", tslot));
            const std::string more = b.let("more", fmt::format("icmp ult i64 {}, %end", t));
            f.emit(fmt::format("br i1 {}, label %pair.body, label %exit", more));
            f.label("pair.body");
            const std::string u = b.let("unit", fmt::format("udiv i64 {}, {}", t, P.chunks), inner ? "row" : "vector of output columns");
            const std::string k = b.let("k", fmt::format("urem i64 {}, {}", t, P.chunks), "chunk");
            auto save = [&](const std::string& o, const std::string& lane, int w) {
                // partial lane `lane` (of width-w parts) of output o, chunk k -> workspace slot o * chunks + k
                const std::string slot = b.let("slot", fmt::format("mul i64 {}, {}", o, P.chunks));
                const std::string sk = b.let("slot.k", fmt::format("add i64 {}, {}", slot, k));
                const std::string off = b.let("slot.at", fmt::format("mul i64 {}, {}", sk, kSlotBytes));
                for (int j : members) {
                    const LaneAccumulator& A = acc[static_cast<std::size_t>(j)];
                    const std::string vp = part_ptr(b, "%part", static_cast<std::size_t>(j), false);
                    const std::string vl = b.let("pv.l", fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", A.a, vp, lane));
                    std::string il;
                    if (A.arg) {
                        const std::string ip = part_ptr(b, "%part", static_cast<std::size_t>(j), true);
                        il = b.let("pi.l", fmt::format("getelementptr inbounds i64, ptr {}, i64 {}", ip, lane));
                    }
                    const Acc x = A.load(b, vl, il, 1, fmt::format("x{}", j));
                    const std::string ws = b.let(fmt::format("ws{}", j), fmt::format("getelementptr inbounds i8, ptr {}, i64 {}", P.partials.at(static_cast<std::size_t>(j)), off));
                    const std::string wsi = A.arg ? b.let(fmt::format("ws{}.i", j), fmt::format("getelementptr inbounds i8, ptr {}, i64 8", ws)) : "";
                    A.store(b, x, ws, wsi, 1);
                }
                (void)w;
            };
            if (inner) {
                f.emit(fmt::format("call void @{}(ptr %p, i64 {}, i64 {}, ptr %rv, ptr %part)", chunk_fn, u, k));
                save(u, "0", 1);
            } else {
                const std::string o0 = b.let("o0", fmt::format("mul i64 {}, {}", u, W));
                const std::string oe = b.let("o0.end", fmt::format("add i64 {}, {}", o0, W));
                const std::string whole = b.let("whole", fmt::format("icmp ule i64 {}, {}", oe, P.rows));
                f.emit(fmt::format("br i1 {}, label %vec, label %one.start", whole));
                f.label("vec");
                f.emit(fmt::format("call void @{}(ptr %p, i64 {}, i64 {}, ptr %rv, ptr %part)", column_fns[0], o0, k));
                const std::string lslot = f.alloca_("lane.slot", "i64");
                f.emit(fmt::format("store i64 0, ptr {}", lslot));
                f.emit("br label %lane.cond");
                f.label("lane.cond");
                const std::string lane = b.let("lane", fmt::format("load i64, ptr {}", lslot));
                const std::string lok = b.let("lane.ok", fmt::format("icmp ult i64 {}, {}", lane, W));
                f.emit(fmt::format("br i1 {}, label %lane.body, label %pair.next", lok));
                f.label("lane.body");
                save(b.let("o", fmt::format("add i64 {}, {}", o0, lane)), lane, W);
                const std::string ln = b.let("lane.next", fmt::format("add i64 {}, 1", lane));
                f.emit(fmt::format("store i64 {}, ptr {}", ln, lslot));
                f.emit("br label %lane.cond");
                f.label("one.start");
                const std::string oslot = f.alloca_("o.slot", "i64");
                f.emit(fmt::format("store i64 {}, ptr {}", o0, oslot));
                f.emit("br label %one.cond");
                f.label("one.cond");
                const std::string o = b.let("o1", fmt::format("load i64, ptr {}", oslot));
                const std::string ook = b.let("o1.ok", fmt::format("icmp ult i64 {}, {}", o, P.rows));
                f.emit(fmt::format("br i1 {}, label %one.body, label %pair.next", ook));
                f.label("one.body");
                f.emit(fmt::format("call void @{}(ptr %p, i64 {}, i64 {}, ptr %rv, ptr %part)", column_fns[1], o, k));
                save(o, "0", 1);
                const std::string on = b.let("o1.next", fmt::format("add i64 {}, 1", o));
                f.emit(fmt::format("store i64 {}, ptr {}", on, oslot));
                f.emit("br label %one.cond");
            }
            if (inner) f.emit("br label %pair.next");
            f.label("pair.next");
            const std::string tn = b.let("t.next", fmt::format("add i64 {}, 1", t));
            f.emit(fmt::format("store i64 {}, ptr {}", tn, tslot));
            f.emit("br label %pair.cond");
            f.label("exit");
            f.emit("ret void");
            m.add_function(f.finish(fmt::format("void @{}_partials(ptr noalias readonly %p, i64 %begin, i64 %end) #0", name),
                                    "; (row, chunk) pairs [begin, end), pair t = row * chunks + chunk: chunk partials into the workspaces\n"));
        }
        {
            Function f(m);
            for (const char* a : {"p", "begin", "end"}) f.reserve(a);
            Builder b{f, target};
            const Params P = load_params(b);
            std::unique_ptr<Space> row;
            if (has_row) {
                row = std::make_unique<Space>(b, row_g, pr.plan.row, "row.");
                row->load_params("%p", row_off);
            }
            f.alloca_("rv", fmt::format("[{} x i8]", nred * kRowValueBytes), 64);
            const std::string oslot = f.alloca_("o.slot", "i64");
            f.emit(fmt::format("store i64 %begin, ptr {}", oslot));
            f.emit("br label %row.cond");
            f.label("row.cond");
            const std::string o = b.let("o", fmt::format("load i64, ptr {}", oslot));
            const std::string more = b.let("more", fmt::format("icmp ult i64 {}, %end", o));
            f.emit(fmt::format("br i1 {}, label %row.body, label %exit", more));
            f.label("row.body");
            const std::string base = b.let("slot0", fmt::format("mul i64 {}, {}", o, P.chunks));
            tree(b, members, 1, P.chunks, P.len,
                 [&](const std::string& k) {
                     const std::string sk = b.let("slot", fmt::format("add i64 {}, {}", base, k));
                     const std::string off = b.let("slot.at", fmt::format("mul i64 {}, {}", sk, kSlotBytes));
                     std::vector<Acc> r;
                     for (int j : members) {
                         const LaneAccumulator& A = acc[static_cast<std::size_t>(j)];
                         const std::string ws = b.let(fmt::format("ws{}", j), fmt::format("getelementptr inbounds i8, ptr {}, i64 {}", P.partials.at(static_cast<std::size_t>(j)), off));
                         const std::string wsi = A.arg ? b.let(fmt::format("ws{}.i", j), fmt::format("getelementptr inbounds i8, ptr {}, i64 8", ws)) : "";
                         r.push_back(A.load(b, ws, wsi, 1, fmt::format("p{}", j)));
                     }
                     return r;
                 },
                 "%rv", "");
            if (row) row_outputs(b, *row, o, "0", "ro.");
            const std::string on = b.let("o.next", fmt::format("add i64 {}, 1", o));
            f.emit(fmt::format("store i64 {}, ptr {}", on, oslot));
            f.emit("br label %row.cond");
            f.label("exit");
            f.emit("ret void");
            m.add_function(f.finish(fmt::format("void @{}_finish(ptr noalias readonly %p, i64 %begin, i64 %end) #0", name),
                                    fmt::format("; {} [begin, end): the pairwise tree over the chunk partials, the finish and the row outputs\n",
                                                inner ? "rows" : "output columns")));
        }
    }
};

}  // namespace

LlvmKernelSource emit_reduce_llvm(std::string_view user_name, const PlannedReduce& pr, const HostSchedule& schedule,
                                  const HostTarget& target) {
    LlvmKernelSource src;
    src.user_name = std::string(user_name);
    src.name = kernel_name(user_name);
    ReduceEmitter em(pr, schedule, target, src.name);
    const ReducePlan& p = pr.plan;
    if (256 % em.W != 0) throw InternalError(fmt::format("emit_reduce_llvm: {} lanes do not tile the 256 lanes", em.W));
    std::vector<std::string> chunk_fns;
    std::vector<std::array<std::string, 2>> column_fns;
    for (int s = 0; s < p.stages; ++s) {
        if (em.inner) chunk_fns.push_back(em.chunk_function(s));
        else column_fns.push_back({em.columns_function(s, em.W), em.columns_function(s, 1)});
    }
    if (schedule.split) {
        em.split_entries(em.inner ? chunk_fns[0] : std::string(), em.inner ? std::array<std::string, 2>{} : column_fns[0]);
        src.partials_entry = src.name + "_partials";
        src.finish_entry = src.name + "_finish";
    } else {
        em.rows_entry(chunk_fns, column_fns);
        src.entry = src.name + "_rows";
    }
    std::string text = fmt::format("host schedule: {}\n", schedule.to_string());
    text += fmt::format("reduction: {} order, {} stage(s), {} element output(s)\n",
                        em.inner ? "row (chunks of 8192, 256 lanes of runs of 4, butterfly, pairwise over chunks)"
                                 : "column (chunks of 256 in sequence, pairwise over chunks)",
                        p.stages, p.element_outputs);
    for (std::size_t j = 0; j < p.ops.size(); ++j) text += fmt::format("reduction {}: {}, stage {}\n", j, em.op_text(j), p.ops[j].stage);
    text += "element space:\n" + detail::host_space_text(p.element);
    if (em.has_row) text += "row space:\n" + detail::host_space_text(p.row);
    src.ir = em.m.text(detail::llvm_banner("reduction", src.name, user_name, text));
    return src;
}

}  // namespace loom::codegen
