// The LLVM emitter of matrix products on the host (codegen/llvm/emit.hpp, emit_product_llvm; the plan is
// HostProduct, host_plan.hpp). Three functions:
//   <name>_micro  one micro tile: mr rows x nr columns of accumulators (nr / lanes vectors per row, each lane
//                 its own output column) over kc values of k of a packed A panel and a packed B panel, one
//                 fma per k and output in ascending k, from +0 or from the tile's scratch (the previous K
//                 step's accumulators), stored back to the scratch;
//   <name>_pack   the first pass: panels of A (mr rows, k-major) and of B (nr columns), converted to the
//                 accumulation type, the rows and columns past M and N zero;
//   <name>        the second pass: one block of outputs of one batch entry per task: its chunks, their K
//                 steps and micro tiles, the pairwise tree over the chunk partials of a K longer than a
//                 chunk, then the epilogue (the kernel's outputs over the final accumulators) and the stores.
// The order is docs/semantics.md's, section 12: whatever the block, the micro tile or the vector width, each
// output accumulates each chunk as one fma chain in ascending k from +0, and the chunks combine in the
// pairwise tree, so the bits are the CPU reference's.
#include <fmt/format.h>

#include "llvm_ir.hpp"
#include "llvm_space.hpp"
#include "loom/codegen/llvm/emit.hpp"
#include "loom/codegen/plan/names.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/reduce_order.hpp"

namespace loom::codegen {

namespace {

using namespace llvm_ir;

// The fields of the parameter header (host_plan.hpp, kProductHeaderFields), in order.
enum Field : int {
    kA,
    kB,
    kApacked,
    kBpacked,
    kPartials,
    kM,
    kN,
    kK,
    kSam,
    kSak,
    kSbk,
    kSbn,
    kRowBlocks,
    kColBlocks,
    kRowPanels,
    kColPanels,
};

std::string gep(std::string_view ty, const std::string& base, const std::string& at) {
    return fmt::format("getelementptr inbounds {}, ptr {}, i64 {}", ty, base, at);
}

struct ProductEmitter {
    const HostProduct& p;
    const HostTarget& target;
    Module& m;
    std::string name;
    // Types: the accumulation scalar (T), a vector of it (VT), the stored operand element (S).
    std::string T, VT, S;
    int W, V, MR, NR;
    bool is_int;

    ProductEmitter(const HostProduct& p, const HostTarget& t, Module& m, std::string name)
        : p(p), target(t), m(m), name(std::move(name)) {
        T = std::string(scalar_type(p.acc));
        W = p.lanes;
        V = p.nr / p.lanes;
        MR = p.mr;
        NR = p.nr;
        VT = vec(T, W);
        S = std::string(storage_type(p.in));
        is_int = p.acc == DType::Int32;
    }

    int acc_bytes() const { return static_cast<int>(itemsize(p.acc)); }

    // Loads header field `f` (i64 or ptr) of the parameters at %p.
    std::string field(Builder& b, int f, std::string_view hint) const {
        const bool ptr = f <= kPartials;
        const std::string at = b.let(fmt::format("{}.at", hint),
                                     fmt::format("getelementptr inbounds i8, ptr %p, i64 {}", f * 8));
        return b.let(hint, fmt::format("load {}, ptr {}, align 8", ptr ? "ptr" : "i64", at));
    }
    // Batch axis d's extent (which 0), A's stride (1), B's stride (2).
    std::string batch_field(Builder& b, std::size_t d, int which, std::string_view hint) const {
        const std::size_t off = kProductHeaderFields * 8 + d * 24 + static_cast<std::size_t>(which) * 8;
        const std::string at =
            b.let(fmt::format("{}.at", hint), fmt::format("getelementptr inbounds i8, ptr %p, i64 {}", off));
        return b.let(hint, fmt::format("load i64, ptr {}, align 8", at));
    }

    // acc + a * b at width W: fma for floats (one rounding), mul and add (wrapping) for int32.
    std::string mul_add(Builder& b, const std::string& a, const std::string& x, const std::string& acc,
                        std::string_view hint) {
        if (is_int) {
            const std::string prod =
                b.let(fmt::format("{}.mul", hint), fmt::format("mul {} {}, {}", VT, a, x));
            return b.let(hint, fmt::format("add {} {}, {}", VT, acc, prod));
        }
        return b.intrinsic(
            hint, "llvm.fma", T, W,
            {fmt::format("{} {}", VT, a), fmt::format("{} {}", VT, x), fmt::format("{} {}", VT, acc)});
    }

    // An operand element (storage S at width w) as the accumulation type.
    std::string widen(Builder& b, const std::string& v, int w) {
        if (p.in == DType::Int8)
            return b.let("sx", fmt::format("sext {} {} to {}", vec("i8", w), v, vec("i32", w)));
        return b.from_storage(p.in, v, w);
    }

    // <name>_micro(a, b, c, ldc, kc, start). The accumulators live in stack slots, which SROA turns into
    // registers (phis): mr x nr / lanes vectors, 12 of the 16 vector registers of AVX2 for 6 x 2.
    void micro() {
        Function f(m);
        for (const char* a : {"a", "b", "c", "ldc", "kc", "start", "k4"}) f.reserve(a);
        Builder b{f, target};
        std::vector<std::string> slots;
        for (int r = 0; r < MR; ++r)
            for (int v = 0; v < V; ++v)
                slots.push_back(f.alloca_(fmt::format("acc{}.{}.slot", r, v), VT, 64));
        auto slot = [&](int r, int v) { return slots[static_cast<std::size_t>(r * V + v)]; };
        auto c_ptr = [&](int r, int v) {
            const std::string row = b.let(fmt::format("c.row{}", r), fmt::format("mul i64 %ldc, {}", r));
            const std::string at =
                b.let(fmt::format("c.at{}.{}", r, v), fmt::format("add i64 {}, {}", row, v * W));
            return b.let(fmt::format("c.p{}.{}", r, v), gep(T, "%c", at));
        };
        f.emit("br i1 %start, label %zero, label %reload",
               "a chunk's first K step starts from +0, the others from the scratch");
        f.label("reload");
        for (int r = 0; r < MR; ++r)
            for (int v = 0; v < V; ++v) {
                const std::string c =
                    b.let(fmt::format("c.{}.{}", r, v),
                          fmt::format("load {}, ptr {}, align {}", VT, c_ptr(r, v), acc_bytes()),
                          "the accumulators the previous K step stored");
                f.emit(fmt::format("store {} {}, ptr {}, align 64", VT, c, slot(r, v)));
            }
        f.emit("br label %pre");
        f.label("zero");
        for (int r = 0; r < MR; ++r)
            for (int v = 0; v < V; ++v)
                f.emit(fmt::format("store {} zeroinitializer, ptr {}, align 64", VT, slot(r, v)), "+0");
        f.emit("br label %pre");
        f.label("pre");
        f.emit("%k4 = and i64 %kc, -4", "the steps taken four at a time");

        // One step of k: B's vectors of row k, then per row of A its value broadcast and one fma per vector.
        auto step = [&](const std::string& k, std::vector<std::string>& acc) {
            const std::string bo = b.let("b.off", fmt::format("mul i64 {}, {}", k, NR));
            std::vector<std::string> bv;
            for (int v = 0; v < V; ++v) {
                const std::string at = v == 0 ? bo : b.let("b.at", fmt::format("add i64 {}, {}", bo, v * W));
                const std::string ptr = b.let("b.p", gep(T, "%b", at));
                bv.push_back(b.let(fmt::format("b{}", v),
                                   fmt::format("load {}, ptr {}, align {}", VT, ptr, acc_bytes()),
                                   fmt::format("B[k, j + {} .. j + {}]", v * W, v * W + W - 1)));
            }
            const std::string ao = b.let("a.off", fmt::format("mul i64 {}, {}", k, MR));
            for (int r = 0; r < MR; ++r) {
                const std::string at = r == 0 ? ao : b.let("a.at", fmt::format("add i64 {}, {}", ao, r));
                const std::string ptr = b.let("a.p", gep(T, "%a", at));
                const std::string ar = b.let(fmt::format("a{}", r),
                                             fmt::format("load {}, ptr {}, align {}", T, ptr, acc_bytes()),
                                             fmt::format("A[i + {}, k]", r));
                const std::string sp = b.splat(fmt::format("a{}.s", r), T, ar, W);
                for (int v = 0; v < V; ++v) {
                    std::string& x = acc[static_cast<std::size_t>(r * V + v)];
                    x = mul_add(b, sp, bv[static_cast<std::size_t>(v)], x, fmt::format("acc{}.{}", r, v));
                }
            }
        };
        // `steps` steps of k from k, the accumulators loaded from and stored to their slots.
        auto body = [&](const std::string& k, int steps) {
            std::vector<std::string> acc;
            for (int r = 0; r < MR; ++r)
                for (int v = 0; v < V; ++v)
                    acc.push_back(b.let(fmt::format("acc{}.{}", r, v),
                                        fmt::format("load {}, ptr {}, align 64", VT, slot(r, v))));
            for (int u = 0; u < steps; ++u)
                step(u == 0 ? k : b.let("k.u", fmt::format("add i64 {}, {}", k, u)), acc);
            for (int r = 0; r < MR; ++r)
                for (int v = 0; v < V; ++v)
                    f.emit(fmt::format("store {} {}, ptr {}, align 64", VT,
                                       acc[static_cast<std::size_t>(r * V + v)], slot(r, v)));
        };
        const std::string kslot = f.alloca_("k.slot", "i64");
        f.emit(fmt::format("store i64 0, ptr {}", kslot));
        f.note("four steps of k at a time, then one at a time: each output's fma chain in ascending k");
        b.loop(
            "main", kslot,
            [&](const std::string& k) { return b.let("main.more", fmt::format("icmp slt i64 {}, %k4", k)); },
            [&](const std::string& k) { body(k, 4); },
            [&](const std::string& k) { return b.let("main.next", fmt::format("add i64 {}, 4", k)); });
        b.loop(
            "tail", kslot,
            [&](const std::string& k) { return b.let("tail.more", fmt::format("icmp slt i64 {}, %kc", k)); },
            [&](const std::string& k) { body(k, 1); },
            [&](const std::string& k) { return b.let("tail.next", fmt::format("add i64 {}, 1", k)); });
        for (int r = 0; r < MR; ++r)
            for (int v = 0; v < V; ++v) {
                const std::string x = b.let(fmt::format("out{}.{}", r, v),
                                            fmt::format("load {}, ptr {}, align 64", VT, slot(r, v)));
                f.emit(fmt::format("store {} {}, ptr {}, align {}", VT, x, c_ptr(r, v), acc_bytes()));
            }
        f.emit("ret void");
        m.add_function(f.finish(
            fmt::format(
                "internal void @{}_micro(ptr noalias readonly %a, ptr noalias readonly %b, ptr noalias "
                "%c, i64 %ldc, i64 %kc, i1 %start) #0",
                name),
            fmt::format("; one micro tile: {} x {} accumulators over kc values of k, one fma per k in "
                        "ascending k\n",
                        MR, NR)));
    }

    // The element offset of batch entry `batch` in an operand whose batch strides are `which` (1: A's, 2:
    // B's).
    std::string batch_offset(Builder& b, const std::string& batch, int which) {
        const std::size_t nb = static_cast<std::size_t>(p.rank - 2);
        std::string off = "0", rest = batch;
        for (std::size_t d = nb; d-- > 0;) {
            const std::string ext = batch_field(b, d, 0, fmt::format("bx{}", d));
            const std::string st = batch_field(b, d, which, fmt::format("bs{}", d));
            const std::string idx =
                d == 0 ? rest : b.let(fmt::format("bi{}", d), fmt::format("urem i64 {}, {}", rest, ext));
            if (d > 0) rest = b.let(fmt::format("br{}", d), fmt::format("udiv i64 {}, {}", rest, ext));
            const std::string term = b.let(fmt::format("bt{}", d), fmt::format("mul i64 {}, {}", idx, st));
            off = b.let(fmt::format("boff{}", d), fmt::format("add i64 {}, {}", off, term));
        }
        return off;
    }

    // The batch entries: the product of the batch extents.
    std::string batch_count(Builder& b) {
        std::string n = "1";
        for (std::size_t d = 0; d + 2 < static_cast<std::size_t>(p.rank); ++d)
            n = b.let("batches",
                      fmt::format("mul i64 {}, {}", n, batch_field(b, d, 0, fmt::format("bx{}", d))));
        return n;
    }

    std::string zero() const { return is_int ? "0" : "0.0"; }

    // The packed layout (host_plan.hpp, HostProduct): an operand's panels of `width` values per k, K step by
    // K step: step s (k in [256 s, 256 s + kc)) holds every panel's kc values of k, panel after panel, so
    // that the panels a block walks in one step lie one after the other. The element offset of (panel, k)
    // within a batch entry's panels.
    std::string packed_at(Builder& b, const std::string& K, const std::string& panels,
                          const std::string& panel, const std::string& k, int width) {
        const std::string k0 = b.let("pk.k0", fmt::format("and i64 {}, {}", k, -kHostProductDepth));
        const std::string kk = b.let("pk.kk", fmt::format("and i64 {}, {}", k, kHostProductDepth - 1));
        const std::string left = b.let("pk.left", fmt::format("sub i64 {}, {}", K, k0));
        const std::string kc = b.intrinsic("pk.kc", "llvm.umin", "i64", 1,
                                           {"i64 " + left, fmt::format("i64 {}", kHostProductDepth)});
        return step_panel(b, panels, panel, k0, kc, kk, width);
    }
    // The element offset of panel `panel`'s value k0 + kk in the K step from k0 (kc values of k).
    std::string step_panel(Builder& b, const std::string& panels, const std::string& panel,
                           const std::string& k0, const std::string& kc, const std::string& kk, int width) {
        const std::string s0 = b.let("pk.s0", fmt::format("mul i64 {}, {}", k0, panels));
        const std::string s1 = b.let("pk.s1", fmt::format("mul i64 {}, {}", panel, kc));
        const std::string s2 = b.let("pk.s2", fmt::format("add i64 {}, {}", s0, s1));
        const std::string s3 = kk == "0" ? s2 : b.let("pk.s3", fmt::format("add i64 {}, {}", s2, kk));
        return b.let("pk.at", fmt::format("mul i64 {}, {}", s3, width));
    }

    // <name>_pack(p, begin, end): panels [begin, end) of A's panels, then B's.
    void pack() {
        Function f(m);
        for (const char* a : {"p", "begin", "end"}) f.reserve(a);
        Builder b{f, target};
        f.note("parameters (host_plan.hpp, kProductHeaderFields)");
        const std::string A = field(b, kA, "A"), B = field(b, kB, "B"), Ap = field(b, kApacked, "Ap"),
                          Bp = field(b, kBpacked, "Bp"), M = field(b, kM, "M"), N = field(b, kN, "N"),
                          K = field(b, kK, "K"), sam = field(b, kSam, "sam"), sak = field(b, kSak, "sak"),
                          sbk = field(b, kSbk, "sbk"), sbn = field(b, kSbn, "sbn"),
                          rowp = field(b, kRowPanels, "rowp"), colp = field(b, kColPanels, "colp");
        const std::string batches = batch_count(b);
        const std::string a_units =
            p.a_batched ? b.let("a.units", fmt::format("mul i64 {}, {}", batches, rowp)) : rowp;
        const std::string M1 = b.let("M1", fmt::format("sub i64 {}, 1", M)),
                          N1 = b.let("N1", fmt::format("sub i64 {}, 1", N));
        b.for_range("u", "%begin", "%end", 1, [&](const std::string& u) {
            const std::string is_a = b.let("is.a", fmt::format("icmp ult i64 {}, {}", u, a_units));
            const std::string la = f.fresh_label("pack.a"), lb = f.fresh_label("pack.b"),
                              lbv = f.fresh_label("pack.b.vec"), lbs = f.fresh_label("pack.b.any"),
                              next = f.fresh_label("pack.next");
            f.emit(fmt::format("br i1 {}, label %{}, label %{}", is_a, la, lb));
            // A's panel: mr rows (those past M read row M - 1 and store +0), k-major.
            f.label(la);
            {
                const std::string batch =
                    p.a_batched ? b.let("a.batch", fmt::format("udiv i64 {}, {}", u, rowp)) : "0";
                const std::string ip =
                    p.a_batched ? b.let("a.ip", fmt::format("urem i64 {}, {}", u, rowp)) : u;
                const std::string off = batch_offset(b, batch, 1);
                const std::string src = b.let("a.src", gep(S, A, off));
                const std::string po = b.let("a.po", fmt::format("mul i64 {}, {}", batch, rowp));
                const std::string po1 = b.let("a.po1", fmt::format("mul i64 {}, {}", po, K));
                const std::string po2 = b.let("a.po2", fmt::format("mul i64 {}, {}", po1, MR));
                const std::string dst = b.let("a.dst", gep(T, Ap, po2), "the batch entry's A panels");
                const std::string row0 = b.let("row0", fmt::format("mul i64 {}, {}", ip, MR));
                std::vector<std::string> valid, roff;
                for (int r = 0; r < MR; ++r) {
                    const std::string row =
                        b.let(fmt::format("row{}", r), fmt::format("add i64 {}, {}", row0, r));
                    valid.push_back(
                        b.let(fmt::format("row{}.in", r), fmt::format("icmp slt i64 {}, {}", row, M)));
                    const std::string rc =
                        b.let(fmt::format("row{}.c", r),
                              fmt::format("select i1 {}, i64 {}, i64 {}", valid.back(), row, M1));
                    roff.push_back(
                        b.let(fmt::format("row{}.off", r), fmt::format("mul i64 {}, {}", rc, sam)));
                }
                b.for_range("ak", "0", K, 1, [&](const std::string& k) {
                    const std::string ko = b.let("ak.off", fmt::format("mul i64 {}, {}", k, sak));
                    const std::string dk = packed_at(b, K, rowp, ip, k, MR);
                    for (int r = 0; r < MR; ++r) {
                        const std::string at = b.let(
                            "a.at", fmt::format("add i64 {}, {}", roff[static_cast<std::size_t>(r)], ko));
                        const std::string ptr = b.let("a.ptr", gep(S, src, at));
                        const std::string x =
                            b.let("a.x", fmt::format("load {}, ptr {}, align {}", S, ptr, itemsize(p.in)));
                        const std::string w = widen(b, x, 1);
                        const std::string v =
                            b.let("a.v", fmt::format("select i1 {}, {} {}, {} {}",
                                                     valid[static_cast<std::size_t>(r)], T, w, T, zero()));
                        const std::string d = b.let("a.d", fmt::format("add i64 {}, {}", dk, r));
                        const std::string dp = b.let("a.dp", gep(T, dst, d));
                        f.emit(fmt::format("store {} {}, ptr {}, align {}", T, v, dp, acc_bytes()));
                    }
                });
                f.emit(fmt::format("br label %{}", next));
            }
            // B's panel: nr columns, k-major; whole vectors where the columns are contiguous and all exist.
            f.label(lb);
            std::string u2, dst, src, col0, jpanel;
            {
                u2 = b.let("b.u", fmt::format("sub i64 {}, {}", u, a_units));
                const std::string batch =
                    p.b_batched ? b.let("b.batch", fmt::format("udiv i64 {}, {}", u2, colp)) : "0";
                const std::string jp =
                    p.b_batched ? b.let("b.jp", fmt::format("urem i64 {}, {}", u2, colp)) : u2;
                const std::string off = batch_offset(b, batch, 2);
                src = b.let("b.src", gep(S, B, off));
                const std::string po = b.let("b.po", fmt::format("mul i64 {}, {}", batch, colp));
                const std::string po1 = b.let("b.po1", fmt::format("mul i64 {}, {}", po, K));
                const std::string po2 = b.let("b.po2", fmt::format("mul i64 {}, {}", po1, NR));
                dst = b.let("b.dst", gep(T, Bp, po2), "the batch entry's B panels");
                jpanel = jp;
                col0 = b.let("col0", fmt::format("mul i64 {}, {}", jp, NR));
                const std::string colend = b.let("col.end", fmt::format("add i64 {}, {}", col0, NR));
                const std::string whole = b.let("b.whole", fmt::format("icmp sle i64 {}, {}", colend, N));
                const std::string unit = b.let("b.unit", fmt::format("icmp eq i64 {}, 1", sbn));
                const std::string vec_ok = b.let("b.vec", fmt::format("and i1 {}, {}", whole, unit));
                f.emit(fmt::format("br i1 {}, label %{}, label %{}", vec_ok, lbv, lbs));
            }
            f.label(lbv);
            b.for_range("bkv", "0", K, 1, [&](const std::string& k) {
                const std::string ko = b.let("bk.off", fmt::format("mul i64 {}, {}", k, sbk));
                const std::string base = b.let("bk.base", fmt::format("add i64 {}, {}", ko, col0));
                const std::string dk = packed_at(b, K, colp, jpanel, k, NR);
                for (int v = 0; v < V; ++v) {
                    const std::string at = b.let("b.at", fmt::format("add i64 {}, {}", base, v * W));
                    const std::string ptr = b.let("b.ptr", gep(S, src, at));
                    const std::string x = b.let(
                        "b.x", fmt::format("load {}, ptr {}, align {}", vec(S, W), ptr, itemsize(p.in)));
                    const std::string w = widen(b, x, W);
                    const std::string d = b.let("b.d", fmt::format("add i64 {}, {}", dk, v * W));
                    const std::string dp = b.let("b.dp", gep(T, dst, d));
                    f.emit(fmt::format("store {} {}, ptr {}, align {}", VT, w, dp, acc_bytes()));
                }
            });
            f.emit(fmt::format("br label %{}", next));
            f.label(lbs);
            f.note("any other B: one column at a time (those past N read column N - 1 and store +0)");
            b.for_range("bc", "0", std::to_string(NR), 1, [&](const std::string& c) {
                const std::string col = b.let("col", fmt::format("add i64 {}, {}", col0, c));
                const std::string valid = b.let("col.in", fmt::format("icmp slt i64 {}, {}", col, N));
                const std::string cc =
                    b.let("col.c", fmt::format("select i1 {}, i64 {}, i64 {}", valid, col, N1));
                const std::string coff = b.let("col.off", fmt::format("mul i64 {}, {}", cc, sbn));
                b.for_range("bk", "0", K, 1, [&](const std::string& k) {
                    const std::string ko = b.let("bk.off", fmt::format("mul i64 {}, {}", k, sbk));
                    const std::string at = b.let("b.at", fmt::format("add i64 {}, {}", coff, ko));
                    const std::string ptr = b.let("b.ptr", gep(S, src, at));
                    const std::string x =
                        b.let("b.x", fmt::format("load {}, ptr {}, align {}", S, ptr, itemsize(p.in)));
                    const std::string w = widen(b, x, 1);
                    const std::string v =
                        b.let("b.v", fmt::format("select i1 {}, {} {}, {} {}", valid, T, w, T, zero()));
                    const std::string dk = packed_at(b, K, colp, jpanel, k, NR);
                    const std::string d = b.let("b.d", fmt::format("add i64 {}, {}", dk, c));
                    const std::string dp = b.let("b.dp", gep(T, dst, d));
                    f.emit(fmt::format("store {} {}, ptr {}, align {}", T, v, dp, acc_bytes()));
                });
            });
            f.emit(fmt::format("br label %{}", next));
            f.label(next);
        });
        f.emit("ret void");
        m.add_function(
            f.finish(fmt::format("void @{}_pack(ptr noalias readonly %p, i64 %begin, i64 %end) #0", name),
                     "; the first pass: panels [begin, end) of A (row panels), then of B (column panels)\n"));
    }

    // The point of the epilogue's space at flat index `flat` of the product's elements.
    Point point_at(Builder& b, Space& sp, const std::string& flat) {
        const int R = p.epilogue.plan.rank;
        if (R <= 1) return Point{{}, flat, flat};
        Point pt;
        pt.flat = flat;
        pt.outer.assign(static_cast<std::size_t>(R - 1), "");
        pt.inner = b.let("ep.j", fmt::format("urem i64 {}, {}", flat, sp.extent(R - 1)));
        std::string rest = b.let("ep.r", fmt::format("udiv i64 {}, {}", flat, sp.extent(R - 1)));
        for (int d = R - 2; d >= 1; --d) {
            pt.outer[static_cast<std::size_t>(d)] =
                b.let("ep.i", fmt::format("urem i64 {}, {}", rest, sp.extent(d)));
            rest = b.let("ep.r", fmt::format("udiv i64 {}, {}", rest, sp.extent(d)));
        }
        pt.outer[0] = rest;
        return pt;
    }

    // <name>(p, begin, end): blocks [begin, end) of outputs.
    void blocks(const detail::PwGraph& g) {
        Function f(m);
        for (const char* a : {"p", "begin", "end"}) f.reserve(a);
        Builder b{f, target};
        const int BR = p.block_rows(), BC = p.block_cols();
        const std::string add = is_int ? "add" : "fadd";
        f.note("parameters (host_plan.hpp, kProductHeaderFields), then the epilogue's (pack_params)");
        const std::string Ap = field(b, kApacked, "Ap"), Bp = field(b, kBpacked, "Bp"),
                          P = field(b, kPartials, "P"), M = field(b, kM, "M"), N = field(b, kN, "N"),
                          K = field(b, kK, "K"), rb = field(b, kRowBlocks, "rb"),
                          cb = field(b, kColBlocks, "cb"), rowp = field(b, kRowPanels, "rowp"),
                          colp = field(b, kColPanels, "colp");
        const std::string batches = batch_count(b);
        Space sp(b, g, p.epilogue.plan, "ep.");
        sp.load_params("%p", host_product_epilogue_offset(p));
        std::string acc_value;  // the accumulators at the epilogue's current point and width
        sp.external = [&](int input, int) -> std::string {
            return g.inputs[static_cast<std::size_t>(input)] == p.accumulators.get() ? acc_value
                                                                                     : std::string();
        };
        const std::string scratch = f.alloca_("scratch", fmt::format("[{} x {}]", BR * BC, T), 64);
        const std::string KMR = b.let("K.mr", fmt::format("mul i64 {}, {}", K, MR)),
                          KNR = b.let("K.nr", fmt::format("mul i64 {}, {}", K, NR));
        const std::string chunks0 = b.let("chunks.k", fmt::format("add i64 {}, {}", K, kProductChunk - 1));
        const std::string chunks = b.let("chunks", fmt::format("udiv i64 {}, {}", chunks0, kProductChunk));
        const std::string many = b.let("many", fmt::format("icmp ugt i64 {}, 1", chunks));
        const std::string nch = b.let("nch", fmt::format("select i1 {}, i64 {}, i64 1", many, chunks),
                                      "K = 0: one empty chunk, every output +0");
        const std::string MN = b.let("MN", fmt::format("mul i64 {}, {}", M, N));
        const std::string plane =
            b.let("plane", fmt::format("mul i64 {}, {}", batches, MN), "elements of one chunk's partials");
        const std::string per = b.let("per", fmt::format("mul i64 {}, {}", rb, cb));
        b.for_range("t", "%begin", "%end", 1, [&](const std::string& t) {
            const std::string batch = b.let("batch", fmt::format("udiv i64 {}, {}", t, per));
            const std::string rem = b.let("rem", fmt::format("urem i64 {}, {}", t, per));
            const std::string ib = b.let("ib", fmt::format("udiv i64 {}, {}", rem, cb));
            const std::string jb = b.let("jb", fmt::format("urem i64 {}, {}", rem, cb));
            const std::string i0 = b.let("i0", fmt::format("mul i64 {}, {}", ib, BR));
            const std::string j0 = b.let("j0", fmt::format("mul i64 {}, {}", jb, BC));
            const std::string mleft = b.let("m.left", fmt::format("sub i64 {}, {}", M, i0));
            const std::string nleft = b.let("n.left", fmt::format("sub i64 {}, {}", N, j0));
            const std::string mb =
                b.intrinsic("mb", "llvm.umin", "i64", 1, {"i64 " + mleft, fmt::format("i64 {}", BR)});
            const std::string nb =
                b.intrinsic("nb", "llvm.umin", "i64", 1, {"i64 " + nleft, fmt::format("i64 {}", BC)});
            const std::string ipn0 = b.let("ipn.x", fmt::format("add i64 {}, {}", mb, MR - 1));
            const std::string ipn = b.let("ipn", fmt::format("udiv i64 {}, {}", ipn0, MR));
            const std::string jpn0 = b.let("jpn.x", fmt::format("add i64 {}, {}", nb, NR - 1));
            const std::string jpn = b.let("jpn", fmt::format("udiv i64 {}, {}", jpn0, NR));
            const std::string ab =
                p.a_batched ? b.let("a.b", fmt::format("mul i64 {}, {}", batch, rowp)) : "0";
            const std::string ap2 = p.a_batched ? b.let("a.p2", fmt::format("mul i64 {}, {}", ab, KMR)) : "0";
            const std::string abase = b.let("a.base", gep(T, Ap, ap2), "the batch entry's A panels");
            const std::string ap0 = b.let("a.p0", fmt::format("mul i64 {}, {}", ib, kHostProductBlockPanels),
                                          "the block's first A panel");
            const std::string bb =
                p.b_batched ? b.let("b.b", fmt::format("mul i64 {}, {}", batch, colp)) : "0";
            const std::string bp2 = p.b_batched ? b.let("b.p2", fmt::format("mul i64 {}, {}", bb, KNR)) : "0";
            const std::string bbase = b.let("b.base", gep(T, Bp, bp2), "the batch entry's B panels");
            const std::string bp0 = b.let("b.p0", fmt::format("mul i64 {}, {}", jb, kHostProductBlockPanels),
                                          "the block's first B panel");
            const std::string bm = b.let("b.m", fmt::format("mul i64 {}, {}", batch, M));
            const std::string bmi = b.let("b.mi", fmt::format("add i64 {}, {}", bm, i0));
            const std::string out0 = b.let("out0", fmt::format("mul i64 {}, {}", bmi, N));
            const std::string out00 =
                b.let("out00", fmt::format("add i64 {}, {}", out0, j0), "the block's first output, flat");
            f.note(fmt::format("the chunks of {} values of k, each in K steps of {}", kProductChunk,
                               kHostProductDepth));
            b.for_range("c", "0", nch, 1, [&](const std::string& c) {
                const std::string k0 = b.let("k0", fmt::format("mul i64 {}, {}", c, kProductChunk));
                const std::string kend0 = b.let("kend.x", fmt::format("add i64 {}, {}", k0, kProductChunk));
                const std::string c1 = b.intrinsic("c1", "llvm.umin", "i64", 1, {"i64 " + K, "i64 " + kend0});
                const std::string kslot = f.alloca_("kb.slot", "i64");
                f.emit(fmt::format("store i64 {}, ptr {}", k0, kslot));
                b.loop(
                    "kb", kslot,
                    [&](const std::string& kb) {
                        const std::string first =
                            b.let("kb.first", fmt::format("icmp eq i64 {}, {}", kb, k0));
                        const std::string left = b.let("kb.left", fmt::format("icmp ult i64 {}, {}", kb, c1));
                        return b.let("kb.more", fmt::format("or i1 {}, {}", first, left));
                    },
                    [&](const std::string& kb) {
                        const std::string rest = b.let("kc.x", fmt::format("sub i64 {}, {}", c1, kb));
                        const std::string kc =
                            b.intrinsic("kc", "llvm.umin", "i64", 1,
                                        {"i64 " + rest, fmt::format("i64 {}", kHostProductDepth)});
                        const std::string start = b.let("start", fmt::format("icmp eq i64 {}, {}", kb, k0),
                                                        "the chunk's first K step: from +0");
                        b.for_range("jj", "0", jpn, 1, [&](const std::string& jj) {
                            const std::string jp = b.let("jp", fmt::format("add i64 {}, {}", bp0, jj));
                            const std::string bo2 = step_panel(b, colp, jp, kb, kc, "0", NR);
                            const std::string bptr = b.let("bptr", gep(T, bbase, bo2));
                            const std::string co = b.let("co", fmt::format("mul i64 {}, {}", jj, NR));
                            b.for_range("ii", "0", ipn, 1, [&](const std::string& ii) {
                                const std::string ip = b.let("ip", fmt::format("add i64 {}, {}", ap0, ii));
                                const std::string ao2 = step_panel(b, rowp, ip, kb, kc, "0", MR);
                                const std::string aptr = b.let("aptr", gep(T, abase, ao2));
                                const std::string cr =
                                    b.let("cr", fmt::format("mul i64 {}, {}", ii, MR * BC));
                                const std::string cc = b.let("cc", fmt::format("add i64 {}, {}", cr, co));
                                const std::string cptr = b.let("cptr", gep(T, scratch, cc));
                                f.emit(
                                    fmt::format(
                                        "call void @{}_micro(ptr {}, ptr {}, ptr {}, i64 {}, i64 {}, i1 {})",
                                        name, aptr, bptr, cptr, BC, kc, start),
                                    "one micro tile of the block");
                            });
                        });
                    },
                    [&](const std::string& kb) {
                        return b.let("kb.next", fmt::format("add i64 {}, {}", kb, kHostProductDepth));
                    });
                // Several chunks: this chunk's partials into the workspace.
                const std::string keep = f.fresh_label("keep"), kept = f.fresh_label("kept");
                f.emit(fmt::format("br i1 {}, label %{}, label %{}", many, keep, kept));
                f.label(keep);
                const std::string cplane = b.let("c.plane", fmt::format("mul i64 {}, {}", c, plane));
                b.for_range("pi", "0", mb, 1, [&](const std::string& i) {
                    const std::string ro = b.let("p.ro", fmt::format("mul i64 {}, {}", i, N));
                    const std::string r1 = b.let("p.r1", fmt::format("add i64 {}, {}", ro, out00));
                    const std::string r2 = b.let("p.r2", fmt::format("add i64 {}, {}", r1, cplane));
                    const std::string so = b.let("s.ro", fmt::format("mul i64 {}, {}", i, BC));
                    b.for_range("pj", "0", nb, 1, [&](const std::string& j) {
                        const std::string sa = b.let("s.at", fmt::format("add i64 {}, {}", so, j));
                        const std::string sptr = b.let("s.ptr", gep(T, scratch, sa));
                        const std::string x =
                            b.let("s.x", fmt::format("load {}, ptr {}, align {}", T, sptr, acc_bytes()));
                        const std::string pa = b.let("p.at", fmt::format("add i64 {}, {}", r2, j));
                        const std::string pptr = b.let("p.ptr", gep(T, P, pa));
                        f.emit(fmt::format("store {} {}, ptr {}, align {}", T, x, pptr, acc_bytes()),
                               "chunk c's partial");
                    });
                });
                f.emit(fmt::format("br label %{}", kept));
                f.label(kept);
            });
            // Several chunks: the pairwise tree over each output's partials, into the scratch.
            const std::string tree = f.fresh_label("tree"), treed = f.fresh_label("treed");
            f.emit(fmt::format("br i1 {}, label %{}, label %{}", many, tree, treed));
            f.label(tree);
            b.for_range("ti", "0", mb, 1, [&](const std::string& i) {
                const std::string ro = b.let("t.ro", fmt::format("mul i64 {}, {}", i, N));
                const std::string r1 = b.let("t.r1", fmt::format("add i64 {}, {}", ro, out00));
                const std::string so = b.let("t.so", fmt::format("mul i64 {}, {}", i, BC));
                b.for_range("tj", "0", nb, 1, [&](const std::string& j) {
                    const std::string e = b.let("t.e", fmt::format("add i64 {}, {}", r1, j));
                    auto part = [&](const std::string& c) {
                        const std::string o = b.let("t.o", fmt::format("mul i64 {}, {}", c, plane));
                        const std::string a = b.let("t.a", fmt::format("add i64 {}, {}", o, e));
                        return b.let("t.ptr", gep(T, P, a));
                    };
                    const std::string nslot = f.alloca_("n.slot", "i64");
                    f.emit(fmt::format("store i64 {}, ptr {}", nch, nslot));
                    b.loop(
                        "lvl", nslot,
                        [&](const std::string& n) {
                            return b.let("lvl.more", fmt::format("icmp ugt i64 {}, 1", n));
                        },
                        [&](const std::string& n) {
                            const std::string n1 = b.let("n1", fmt::format("sub i64 {}, 1", n));
                            b.for_range("pair", "0", n1, 2, [&](const std::string& k) {
                                const std::string k1 = b.let("k1", fmt::format("add i64 {}, 1", k));
                                const std::string h = b.let("h", fmt::format("lshr i64 {}, 1", k));
                                const std::string l = b.let(
                                    "l", fmt::format("load {}, ptr {}, align {}", T, part(k), acc_bytes()));
                                const std::string r = b.let(
                                    "r", fmt::format("load {}, ptr {}, align {}", T, part(k1), acc_bytes()));
                                const std::string sum =
                                    b.let("pair.sum", fmt::format("{} {} {}, {}", add, T, l, r),
                                          "(0, 1), (2, 3), ...: one rounding each");
                                f.emit(fmt::format("store {} {}, ptr {}, align {}", T, sum, part(h),
                                                   acc_bytes()));
                            });
                            const std::string odd = b.let("odd", fmt::format("trunc i64 {} to i1", n));
                            const std::string carry = f.fresh_label("carry"),
                                              carried = f.fresh_label("carried");
                            f.emit(fmt::format("br i1 {}, label %{}, label %{}", odd, carry, carried));
                            f.label(carry);
                            const std::string h = b.let("h", fmt::format("lshr i64 {}, 1", n1));
                            const std::string x = b.let(
                                "last", fmt::format("load {}, ptr {}, align {}", T, part(n1), acc_bytes()),
                                "an odd last partial, carried up unchanged");
                            f.emit(fmt::format("store {} {}, ptr {}, align {}", T, x, part(h), acc_bytes()));
                            f.emit(fmt::format("br label %{}", carried));
                            f.label(carried);
                        },
                        [&](const std::string& n) {
                            const std::string n2 = b.let("n2", fmt::format("add i64 {}, 1", n));
                            return b.let("lvl.next", fmt::format("lshr i64 {}, 1", n2));
                        });
                    const std::string root =
                        b.let("root", fmt::format("load {}, ptr {}, align {}", T, part("0"), acc_bytes()));
                    const std::string sa = b.let("s.at", fmt::format("add i64 {}, {}", so, j));
                    const std::string sptr = b.let("s.ptr", gep(T, scratch, sa));
                    f.emit(fmt::format("store {} {}, ptr {}, align {}", T, root, sptr, acc_bytes()));
                });
            });
            f.emit(fmt::format("br label %{}", treed));
            f.label(treed);
            // The epilogue on the block's final accumulators, row by row, and the stores.
            f.note("the epilogue on the final accumulators: vectors of lanes, then one element at a time");
            std::vector<int> all;
            for (std::size_t o = 0; o < g.outputs.size(); ++o) all.push_back(static_cast<int>(o));
            b.for_range("ei", "0", mb, 1, [&](const std::string& i) {
                const std::string ro = b.let("e.ro", fmt::format("mul i64 {}, {}", i, N));
                const std::string rowflat = b.let("e.flat", fmt::format("add i64 {}, {}", ro, out00));
                const std::string so = b.let("e.so", fmt::format("mul i64 {}, {}", i, BC));
                const std::string jslot = f.alloca_("ej.slot", "i64");
                f.emit(fmt::format("store i64 0, ptr {}", jslot));
                b.steps("ej", jslot, nb, {W, 1}, [&](const std::string& j, int w) {
                    const std::string sa = b.let("e.at", fmt::format("add i64 {}, {}", so, j));
                    const std::string sptr = b.let("e.ptr", gep(T, scratch, sa));
                    acc_value =
                        b.let("acc", fmt::format("load {}, ptr {}, align {}", vec(T, w), sptr, acc_bytes()),
                              "the final accumulators");
                    const std::string flat = b.let("e.f", fmt::format("add i64 {}, {}", rowflat, j));
                    const Point pt = point_at(b, sp, flat);
                    const std::vector<std::string> vals = sp.evaluate(all, pt, w, "ep");
                    for (std::size_t o = 0; o < all.size(); ++o)
                        sp.store_output_at(static_cast<int>(o), vals[o], pt, w);
                });
            });
        });
        f.emit("ret void");
        m.add_function(
            f.finish(fmt::format("void @{}(ptr noalias readonly %p, i64 %begin, i64 %end) #0", name),
                     "; the second pass: blocks [begin, end) of outputs\n"));
    }
};

}  // namespace

LlvmKernelSource emit_product_llvm(std::string_view user_name, const HostProduct& p,
                                   const HostTarget& target) {
    LlvmKernelSource src;
    src.user_name = std::string(user_name);
    src.name = kernel_name(user_name);
    src.entry = src.name;
    src.partials_entry = src.name + "_pack";
    const detail::PwGraph g = detail::build_pw_graph(p.epilogue_outputs);
    Module m;
    m.target = &target;
    ProductEmitter e(p, target, m, src.name);
    e.micro();
    e.pack();
    e.blocks(g);
    const std::string text = fmt::format(
        "matmul {}: {}\nepilogue: {} output(s); parameters: {} header bytes, the epilogue's {} at {}\n{}"
        "entry points: @{}_pack(params, begin, end) over panels, then @{}(params, begin, end) over blocks, "
        "one "
        "call per task\n",
        name(p.in), p.to_string(), g.outputs.size(), host_product_header_bytes(p),
        p.epilogue.plan.params.size, host_product_epilogue_offset(p),
        detail::host_space_text(p.epilogue.plan), src.name, src.name);
    src.ir = m.text(detail::llvm_banner("matmul", src.name, user_name, text));
    return src;
}

}  // namespace loom::codegen
