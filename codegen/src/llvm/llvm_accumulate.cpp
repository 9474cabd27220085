// Accumulators of the host reductions (llvm_accumulate.hpp), the reference's Reducer in LLVM IR.
#include "llvm_accumulate.hpp"

#include <fmt/format.h>

#include <limits>

#include "llvm_ops.hpp"
#include "loom/ir/error.hpp"

namespace loom::codegen::llvm_ir {

namespace {

using ir::Op;

bool sumlike(Op op) {
    return op == Op::Sum || op == Op::Prod || op == Op::Mean;
}
bool unsigned_in(DType t) {
    return t == DType::UInt8 || t == DType::Bool;
}

std::string int_limit(DType t, bool max) {
    switch (t) {
        case DType::Bool:
        case DType::UInt8:
            return max ? "-1" : "0";  // 255 (the reference's uint8 limits, also for bool) / 0
        case DType::Int8:
            return max ? "127" : "-128";
        case DType::Int32:
            return max ? "2147483647" : "-2147483648";
        case DType::Int64:
            return max ? "9223372036854775807" : "-9223372036854775808";
        default:
            throw InternalError("int_limit: not an integer dtype");
    }
}

}  // namespace

LaneAccumulator::LaneAccumulator(const ReduceOpPlan& o) : op(o) {
    c = std::string(scalar_type(o.in));
    arg = o.op == Op::ArgMin || o.op == Op::ArgMax;
    if (o.op == Op::Any || o.op == Op::All)
        a = "i8";
    else if (sumlike(o.op) && !is_float(o.in))
        a = "i64";
    else
        a = c;
}

Acc LaneAccumulator::identity(int w) const {
    const bool fl = is_float(op.in);
    auto k = [&](const std::string& s) { return splat_constant(a, s, w); };
    switch (op.op) {
        case Op::Sum:
        case Op::Mean:
            return {fl ? k(float_constant(-0.0, a)) : k("0"), {}};  // -0: the sum of only -0 is -0
        case Op::Prod:
            return {fl ? k(float_constant(1.0, a)) : k("1"), {}};
        case Op::Min:
            return {fl ? k(float_constant(std::numeric_limits<double>::infinity(), a))
                       : k(int_limit(op.in, true)),
                    {}};
        case Op::Max:
            return {fl ? k(float_constant(-std::numeric_limits<double>::infinity(), a))
                       : k(int_limit(op.in, false)),
                    {}};
        case Op::Any:
            return {k("0"), {}};
        case Op::All:
            return {k("1"), {}};
        case Op::ArgMin:
        case Op::ArgMax:
            return {"zeroinitializer", splat_constant("i64", "-1", w)};  // "no element yet"
        default:
            throw InternalError("LaneAccumulator::identity: not a reduction");
    }
}

Acc LaneAccumulator::element(Builder& b, const std::string& x, const std::string& index, int w,
                             std::string_view hint) const {
    if (arg) return {x, index};
    const std::string C = vec(c, w);
    if (op.op == Op::Any || op.op == Op::All) {
        const std::string nz =
            is_float(op.in)
                ? b.let(fmt::format("{}.nz", hint), fmt::format("fcmp une {} {}, zeroinitializer", C, x))
                : b.let(fmt::format("{}.nz", hint), fmt::format("icmp ne {} {}, zeroinitializer", C, x));
        return {b.let(std::string(hint), fmt::format("zext {} {} to {}", vec("i1", w), nz, vec("i8", w))),
                {}};
    }
    if (a == c) return {x, {}};
    // Integers and bool widen to int64 (exact).
    return {b.let(std::string(hint),
                  fmt::format("{} {} {} to {}", unsigned_in(op.in) ? "zext" : "sext", C, x, type(w))),
            {}};
}

Acc LaneAccumulator::combine(Builder& b, const Acc& x, const Acc& y, int w, std::string_view hint) const {
    const std::string A = type(w), I1 = vec("i1", w), I = vec("i64", w);
    const bool fl = is_float(op.in);
    const std::string h(hint);
    switch (op.op) {
        case Op::Sum:
        case Op::Mean:
            return {b.let(h, fmt::format("{} {} {}, {}", fl ? "fadd" : "add", A, x.v, y.v)), {}};
        case Op::Prod:
            return {b.let(h, fmt::format("{} {} {}, {}", fl ? "fmul" : "mul", A, x.v, y.v)), {}};
        case Op::Min:
        case Op::Max: {
            if (fl) return {float_min_max(b, op.op == Op::Max, a, x.v, y.v, w, h), {}};
            std::string base;
            if (unsigned_in(op.in))
                base = op.op == Op::Min ? "llvm.umin" : "llvm.umax";
            else
                base = op.op == Op::Min ? "llvm.smin" : "llvm.smax";
            return {b.intrinsic(h, base, a, w, {fmt::format("{} {}", A, x.v), fmt::format("{} {}", A, y.v)}),
                    {}};
        }
        case Op::Any:
            return {b.let(h, fmt::format("or {} {}, {}", A, x.v, y.v)), {}};
        case Op::All:
            return {b.let(h, fmt::format("and {} {}, {}", A, x.v, y.v)), {}};
        case Op::ArgMin:
        case Op::ArgMax: {
            // The reference's rule: no element yet loses; the first NaN wins; a better value wins; on equal
            // values
            // (-0 == +0 included) the smaller index wins.
            const bool mn = op.op == Op::ArgMin;
            auto let = [&](std::string_view what, const std::string& code) {
                return b.let(fmt::format("{}.{}", h, what), code);
            };
            const std::string xn = let("xnone", fmt::format("icmp slt {} {}, zeroinitializer", I, x.i));
            const std::string yn = let("ynone", fmt::format("icmp slt {} {}, zeroinitializer", I, y.i));
            const std::string first = let("xfirst", fmt::format("icmp sle {} {}, {}", I, x.i, y.i));
            const std::string later =
                let("yfirst", fmt::format("xor {} {}, {}", I1, first, splat_constant("i1", "true", w)));
            std::string yb, xb;
            if (fl) {
                yb = let("ybetter", fmt::format("fcmp {} {} {}, {}", mn ? "olt" : "ogt", A, y.v, x.v));
                xb = let("xbetter", fmt::format("fcmp {} {} {}, {}", mn ? "olt" : "ogt", A, x.v, y.v));
            } else {
                const char* p = unsigned_in(op.in) ? (mn ? "ult" : "ugt") : (mn ? "slt" : "sgt");
                yb = let("ybetter", fmt::format("icmp {} {} {}, {}", p, A, y.v, x.v));
                xb = let("xbetter", fmt::format("icmp {} {} {}, {}", p, A, x.v, y.v));
            }
            const std::string T = splat_constant("i1", "true", w);
            auto inv = [&](std::string_view what, const std::string& c) {
                return let(what, fmt::format("xor {} {}, {}", I1, c, T));
            };
            // By value: y is better, or neither is better and y comes first.
            const std::string tie =
                let("tie", fmt::format("and {} {}, {}", I1, inv("xnotbetter", xb), later));
            std::string pick = let("byvalue", fmt::format("or {} {}, {}", I1, yb, tie));
            if (fl) {
                const std::string xnan = let("xnan", fmt::format("fcmp uno {} {}, {}", A, x.v, x.v));
                const std::string ynan = let("ynan", fmt::format("fcmp uno {} {}, {}", A, y.v, y.v));
                const std::string both = let("bothnan", fmt::format("and {} {}, {}", I1, xnan, ynan));
                const std::string either = let("anynan", fmt::format("or {} {}, {}", I1, xnan, ynan));
                // Both NaN: the first index; one NaN: that one.
                const std::string nanpick = let("bynan", fmt::format("select {} {}, {} {}, {} {}", I1, both,
                                                                     I1, later, I1, inv("xnum", xnan)));
                pick =
                    let("pick", fmt::format("select {} {}, {} {}, {} {}", I1, either, I1, nanpick, I1, pick));
            }
            // x without an element: y; else y without one: x; else the pick.
            const std::string p1 = let("pickv", fmt::format("and {} {}, {}", I1, inv("yhas", yn), pick));
            const std::string py = let("picky", fmt::format("or {} {}, {}", I1, xn, p1));
            const std::string v = b.let(h, fmt::format("select {} {}, {} {}, {} {}", I1, py, A, y.v, A, x.v));
            const std::string i = let("i", fmt::format("select {} {}, {} {}, {} {}", I1, py, I, y.i, I, x.i));
            return {v, i};
        }
        default:
            throw InternalError("LaneAccumulator::combine: not a reduction");
    }
}

std::string LaneAccumulator::finish(Builder& b, const Acc& acc, const std::string& count, int w,
                                    std::string_view hint) const {
    const std::string h(hint);
    const std::string A = type(w);
    const bool fl = is_float(op.in);
    const DType out = op.out;
    auto rounded = [&](const std::string& v) {
        if (!is_half(out)) return v;
        const std::string r = b.round_half(out, v, w, fmt::format("one rounding to {}", name(out)));
        return b.let(h, fmt::format("bitcast {} {} to {}", A, r, A));
    };
    switch (op.op) {
        case Op::Sum: {
            if (!fl) return acc.v;
            const std::string empty =
                b.let(fmt::format("{}.empty", h), fmt::format("icmp eq i64 {}, 0", count));
            const std::string zero = splat_constant(a, float_constant(0.0, a), w);
            const std::string v = b.let(fmt::format("{}.sum", h),
                                        fmt::format("select i1 {}, {} {}, {} {}", empty, A, zero, A, acc.v),
                                        "the empty sum is +0");
            return rounded(v);
        }
        case Op::Prod:
            return fl ? rounded(acc.v) : acc.v;
        case Op::Mean: {
            if (fl) {  // one division at the accumulation type, then one rounding to the dtype
                const std::string n =
                    b.let(fmt::format("{}.n", h), fmt::format("sitofp i64 {} to {}", count, a));
                const std::string nv = b.splat(fmt::format("{}.nv", h), a, n, w);
                return rounded(b.let(fmt::format("{}.mean", h), fmt::format("fdiv {} {}, {}", A, acc.v, nv),
                                     "mean: sum / count"));
            }
            // The exact int64 sum / count in float64, rounded once to the result dtype.
            const std::string D = vec("double", w);
            const std::string s =
                b.let(fmt::format("{}.sd", h), fmt::format("sitofp {} {} to {}", A, acc.v, D));
            const std::string n =
                b.let(fmt::format("{}.n", h), fmt::format("sitofp i64 {} to double", count));
            const std::string nv = b.splat(fmt::format("{}.nv", h), "double", n, w);
            const std::string q = b.let(fmt::format("{}.mean", h), fmt::format("fdiv {} {}, {}", D, s, nv),
                                        "mean: sum / count in float64");
            if (out == DType::Float64) return q;
            return b.let(fmt::format("{}.f", h), fmt::format("fptrunc {} {} to {}", D, q, vec("float", w)));
        }
        case Op::Min:
        case Op::Max:
        case Op::Any:
        case Op::All:
            return acc.v;
        case Op::ArgMin:
        case Op::ArgMax:
            return acc.i;
        default:
            throw InternalError("LaneAccumulator::finish: not a reduction");
    }
}

Acc LaneAccumulator::load(Builder& b, const std::string& vptr, const std::string& iptr, int w,
                          std::string_view hint) const {
    Acc r;
    r.v = b.let(std::string(hint), fmt::format("load {}, ptr {}, align {}", type(w), vptr, bytes()));
    if (arg)
        r.i = b.let(fmt::format("{}.i", hint), fmt::format("load {}, ptr {}, align 8", vec("i64", w), iptr));
    return r;
}

void LaneAccumulator::store(Builder& b, const Acc& x, const std::string& vptr, const std::string& iptr,
                            int w) const {
    b.f.emit(fmt::format("store {} {}, ptr {}, align {}", type(w), x.v, vptr, bytes()));
    if (arg) b.f.emit(fmt::format("store {} {}, ptr {}, align 8", vec("i64", w), x.i, iptr));
}

}  // namespace loom::codegen::llvm_ir
