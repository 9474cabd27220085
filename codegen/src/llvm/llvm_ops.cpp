// The LLVM IR of elementwise ops and casts (llvm_ops.hpp). Every result equals the reference's
// (ir/include/loom/ir/elementwise_impl.hpp) bit for bit: + - * / sqrt fma are the correctly rounded IEEE
// instructions with no fast-math flag; integer rules that LLVM leaves undefined are selects; float -> integer
// conversions are the saturating intrinsics; the functions of rule FloatMath and the random numbers (rule
// Random) call the reference's own code.
#include "llvm_ops.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <optional>

#include "loom/ir/error.hpp"
#include "loom/ir/exp_core.hpp"

namespace loom::codegen::llvm_ir {

namespace {

using ir::Op;

int bits_of(DType t) {
    switch (t) {
        case DType::Bool:
        case DType::Int8:
        case DType::UInt8:
            return 8;
        case DType::Int32:
            return 32;
        case DType::Int64:
            return 64;
        default:
            return 0;
    }
}

bool is_unsigned(DType t) {
    return t == DType::UInt8 || t == DType::Bool;
}

// One op's emission context: the builder, the width, the result's name and comment (used once, on the
// instruction that defines the result).
struct Ops {
    Builder& b;
    int w;
    std::string hint;
    std::string comment;

    std::string ty(DType t) const { return type(t, w); }
    std::string i1() const { return vec("i1", w); }
    std::string cst(DType t, double v) const {
        ir::ScalarValue s = is_float(t) ? ir::ScalarValue::of_float(v)
                                        : ir::ScalarValue::of_int(static_cast<std::int64_t>(v));
        return splat_constant(scalar_type(t), literal(s, t), w);
    }
    std::string icst(DType t, std::int64_t v) const {
        return splat_constant(scalar_type(t), literal(ir::ScalarValue::of_int(v), t), w);
    }
    // An intermediate value (named after the result).
    std::string tmp(std::string_view what, const std::string& code) {
        return b.let(fmt::format("{}.{}", hint, what), code);
    }
    // The result.
    std::string out(const std::string& code) { return b.let(hint, code, comment); }
    std::string zext_bool(const std::string& c, bool final = true) {
        const std::string code = fmt::format("zext {} {} to {}", i1(), c, vec("i8", w));
        return final ? out(code) : tmp("b", code);
    }
    std::string select(const std::string& c, DType t, const std::string& x, const std::string& y,
                       bool final = false) {
        const std::string code = fmt::format("select {} {}, {} {}, {} {}", i1(), c, ty(t), x, ty(t), y);
        return final ? out(code) : tmp("sel", code);
    }
    std::string truthy(DType t, const std::string& v) {
        if (is_float(t)) return tmp("nz", fmt::format("fcmp une {} {}, zeroinitializer", ty(t), v));
        return tmp("nz", fmt::format("icmp ne {} {}, zeroinitializer", ty(t), v));
    }
    std::string intr(std::string_view base, DType t, const std::vector<std::string>& vals, bool final,
                     std::string_view ret = {}) {
        std::vector<std::string> args;
        for (const auto& v : vals) args.push_back(fmt::format("{} {}", ty(t), v));
        return b.intrinsic(final ? hint : fmt::format("{}.{}", hint, base.substr(base.rfind('.') + 1)), base,
                           scalar_type(t), w, args, final ? std::string_view(comment) : std::string_view(),
                           ret);
    }
    std::string intr_args(std::string_view base, DType t, const std::vector<std::string>& typed_args,
                          bool final) {
        return b.intrinsic(final ? hint : fmt::format("{}.{}", hint, base.substr(base.rfind('.') + 1)), base,
                           scalar_type(t), w, typed_args,
                           final ? std::string_view(comment) : std::string_view());
    }
    // The float result of an op at the compute type, rounded to a half dtype when needed.
    std::string finish_float(DType t, const std::string& code, bool exact) {
        if (!is_half(t) || exact) return out(code);
        const std::string v = tmp("f32", code);
        const std::string r = b.round_half(t, v, w);
        return out(fmt::format("bitcast {} {} to {}", ty(t), r, ty(t)));  // names the rounded value
    }

    // Integer division rules (docs/semantics.md, section 4): x / 0 = 0, INT_MIN / -1 = INT_MIN; remainders
    // x % 0 = x, INT_MIN % -1 = 0. The divisor is replaced by 1 where LLVM's division is undefined.
    std::string int_div(DType t, const std::string& a, const std::string& d, bool final) {
        const std::string T = ty(t);
        const std::string is0 = tmp("d0", fmt::format("icmp eq {} {}, zeroinitializer", T, d));
        if (is_unsigned(t)) {
            const std::string safe = select(is0, t, icst(t, 1), d);
            const std::string q = tmp("q", fmt::format("udiv {} {}, {}", T, a, safe));
            return select(is0, t, "zeroinitializer", q, final);
        }
        const std::string m1 = tmp("dm1", fmt::format("icmp eq {} {}, {}", T, d, icst(t, -1)));
        const std::string bad = tmp("bad", fmt::format("or {} {}, {}", i1(), is0, m1));
        const std::string safe = select(bad, t, icst(t, 1), d);
        const std::string q = tmp("q", fmt::format("sdiv {} {}, {}", T, a, safe));
        const std::string neg =
            tmp("neg", fmt::format("sub {} zeroinitializer, {}", T, a));  // wraps: -INT_MIN = INT_MIN
        const std::string r = select(m1, t, neg, q);
        return select(is0, t, "zeroinitializer", r, final);
    }
    std::string int_rem(DType t, const std::string& a, const std::string& d, bool final) {
        const std::string T = ty(t);
        const std::string is0 = tmp("d0", fmt::format("icmp eq {} {}, zeroinitializer", T, d));
        if (is_unsigned(t)) {
            const std::string safe = select(is0, t, icst(t, 1), d);
            const std::string r = tmp("r", fmt::format("urem {} {}, {}", T, a, safe));
            return select(is0, t, a, r, final);
        }
        const std::string m1 = tmp("dm1", fmt::format("icmp eq {} {}, {}", T, d, icst(t, -1)));
        const std::string bad = tmp("bad", fmt::format("or {} {}, {}", i1(), is0, m1));
        const std::string safe = select(bad, t, icst(t, 1), d);
        const std::string r = tmp("r", fmt::format("srem {} {}, {}", T, a, safe));
        const std::string r1 = select(m1, t, "zeroinitializer", r);
        return select(is0, t, a, r1, final);
    }
    std::string ltz(DType t, const std::string& v) {
        return tmp("neg", fmt::format("icmp slt {} {}, zeroinitializer", ty(t), v));
    }
    // Python's // and %: the quotient rounded down, the remainder with the divisor's sign.
    std::string int_floor_div(DType t, const std::string& a, const std::string& d) {
        if (is_unsigned(t)) return int_div(t, a, d, true);
        const std::string T = ty(t);
        const std::string q = int_div(t, a, d, false);
        const std::string r = int_rem(t, a, d, false);
        const std::string n0 = tmp("dn0", fmt::format("icmp ne {} {}, zeroinitializer", T, d));
        const std::string nm1 = tmp("dnm1", fmt::format("icmp ne {} {}, {}", T, d, icst(t, -1)));
        const std::string rnz = tmp("rnz", fmt::format("icmp ne {} {}, zeroinitializer", T, r));
        const std::string sd = tmp("sgn", fmt::format("xor {} {}, {}", i1(), ltz(t, a), ltz(t, d)));
        const std::string c1 = tmp("c", fmt::format("and {} {}, {}", i1(), n0, nm1));
        const std::string c2 = tmp("c", fmt::format("and {} {}, {}", i1(), c1, rnz));
        const std::string c3 = tmp("c", fmt::format("and {} {}, {}", i1(), c2, sd));
        const std::string qm = tmp("qm1", fmt::format("sub {} {}, {}", T, q, icst(t, 1)));
        return select(c3, t, qm, q, true);
    }
    std::string int_mod(DType t, const std::string& a, const std::string& d) {
        if (is_unsigned(t)) return int_rem(t, a, d, true);
        const std::string T = ty(t);
        const std::string r = int_rem(t, a, d, false);
        const std::string n0 = tmp("dn0", fmt::format("icmp ne {} {}, zeroinitializer", T, d));
        const std::string rnz = tmp("rnz", fmt::format("icmp ne {} {}, zeroinitializer", T, r));
        const std::string sd = tmp("sgn", fmt::format("xor {} {}, {}", i1(), ltz(t, r), ltz(t, d)));
        const std::string c1 = tmp("c", fmt::format("and {} {}, {}", i1(), n0, rnz));
        const std::string c2 = tmp("c", fmt::format("and {} {}, {}", i1(), c1, sd));
        const std::string rb = tmp("rb", fmt::format("add {} {}, {}", T, r, d));
        return select(c2, t, rb, r, true);
    }
    // Shifts by amounts outside [0, bits): 0 for <<, the sign fill for >> (docs/semantics.md, section 4).
    std::string shift(Op op, DType t, const std::string& a, const std::string& s) {
        const std::string T = ty(t);
        const int bits = bits_of(t);
        std::string inr;
        if (is_unsigned(t)) {
            inr = tmp("inr", fmt::format("icmp ult {} {}, {}", T, s, icst(t, bits)));
        } else {
            const std::string ge = tmp("ge0", fmt::format("icmp sge {} {}, zeroinitializer", T, s));
            const std::string lt = tmp("ltw", fmt::format("icmp slt {} {}, {}", T, s, icst(t, bits)));
            inr = tmp("inr", fmt::format("and {} {}, {}", i1(), ge, lt));
        }
        if (op == Op::Shr && !is_unsigned(t)) {  // out of range: shift by bits - 1, the sign fill
            const std::string amt = select(inr, t, s, icst(t, bits - 1));
            return out(fmt::format("ashr {} {}, {}", T, a, amt));
        }
        const std::string amt = select(inr, t, s, "zeroinitializer");
        const std::string sh =
            tmp("sh", fmt::format("{} {} {}, {}", op == Op::Shl ? "shl" : "lshr", T, a, amt));
        return select(inr, t, sh, "zeroinitializer", true);
    }
};

std::string fcmp_pred(Op op) {
    switch (op) {
        case Op::Eq:
            return "oeq";
        case Op::Ne:
            return "une";  // true for NaN
        case Op::Lt:
            return "olt";
        case Op::Le:
            return "ole";
        case Op::Gt:
            return "ogt";
        case Op::Ge:
            return "oge";
        default:
            throw InternalError("fcmp_pred: not a comparison");
    }
}

std::string icmp_pred(Op op, bool uns) {
    switch (op) {
        case Op::Eq:
            return "eq";
        case Op::Ne:
            return "ne";
        case Op::Lt:
            return uns ? "ult" : "slt";
        case Op::Le:
            return uns ? "ule" : "sle";
        case Op::Gt:
            return uns ? "ugt" : "sgt";
        case Op::Ge:
            return uns ? "uge" : "sge";
        default:
            throw InternalError("icmp_pred: not a comparison");
    }
}

bool library_op(Op op) {
    return ir::info(op).rule == ir::Rule::FloatMath && op != Op::Sqrt;
}

// 2^(j/16) for j = 0 .. 15, rounded to the nearest double: exp_core.hpp's table, which the reference's exp
// uses.
std::uint64_t exp2_sixteenths(int j) {
    return std::bit_cast<std::uint64_t>(ir::expc::kExp2Hi[j]);
}

std::string exp2_table_vector(int from, int count) {
    std::vector<std::string> e;
    for (int j = from; j < from + count; ++j)
        e.push_back(fmt::format("double 0x{:016X}", exp2_sixteenths(j)));
    return fmt::format("<{}>", fmt::join(e, ", "));
}

// Entry (kb mod 16) of the table, w lanes of i64 kb. AVX-512: the 16 entries are two registers and vpermi2pd
// picks one by the index's low 4 bits, 8 lanes at a time; elsewhere a load (a gather for vectors) from the
// table in the module. Either reads the same constants.
std::string exp2_table(Builder& b, const std::string& kb, int w, std::string_view hint) {
    const std::string D = vec("double", w);
    if (b.target.vector_bits >= 512 && w % 8 == 0) {
        const std::string fn = "llvm.x86.avx512.vpermi2var.pd.512";
        b.module().declare(
            fn, fmt::format("declare <8 x double> @{}(<8 x double>, <8 x i64>, <8 x double>)", fn));
        std::vector<std::string> parts;
        for (int h = 0; h < w / 8; ++h) {
            std::string idx = kb;
            if (w > 8) {
                std::vector<std::string> m;
                for (int l = 0; l < 8; ++l) m.push_back(fmt::format("i32 {}", 8 * h + l));
                idx = b.let(fmt::format("{}.j{}", hint, h),
                            fmt::format("shufflevector {} {}, {} poison, <8 x i32> <{}>", vec("i64", w), kb,
                                        vec("i64", w), fmt::join(m, ", ")));
            }
            parts.push_back(
                b.let(fmt::format("{}.t{}", hint, h),
                      fmt::format("call <8 x double> @{}(<8 x double> {}, <8 x i64> {}, <8 x double> {})", fn,
                                  exp2_table_vector(0, 8), idx, exp2_table_vector(8, 8))));
        }
        for (int n = 8; n < w; n *= 2) {  // concatenate pairs of parts of n lanes
            std::vector<std::string> next;
            for (std::size_t q = 0; q < parts.size(); q += 2) {
                std::vector<std::string> m;
                for (int l = 0; l < 2 * n; ++l) m.push_back(fmt::format("i32 {}", l));
                next.push_back(
                    b.let(fmt::format("{}.t", hint),
                          fmt::format("shufflevector {} {}, {} {}, <{} x i32> <{}>", vec("double", n),
                                      parts[q], vec("double", n), parts[q + 1], 2 * n, fmt::join(m, ", "))));
            }
            parts = next;
        }
        return parts[0];
    }
    if (b.module().define_once("loom.exp2.sixteenths")) {
        std::vector<std::string> e;
        for (int j = 0; j < 16; ++j) e.push_back(fmt::format("double 0x{:016X}", exp2_sixteenths(j)));
        b.module().declare(
            "loom.exp2.sixteenths",
            fmt::format("@loom.exp2.sixteenths = internal constant [16 x double] [{}]", fmt::join(e, ", ")));
    }
    const std::string j = b.let(fmt::format("{}.j", hint), fmt::format("and {} {}, {}", vec("i64", w), kb,
                                                                       splat_constant("i64", "15", w)));
    const std::string ptr = b.let(
        fmt::format("{}.tp", hint),
        fmt::format("getelementptr inbounds double, ptr @loom.exp2.sixteenths, {} {}", vec("i64", w), j));
    if (w == 1) return b.let(fmt::format("{}.t", hint), fmt::format("load double, ptr {}, align 8", ptr));
    const std::string nm = fmt::format("llvm.masked.gather.{}.v{}p0", mangle("double", w), w);
    b.module().declare(nm,
                       fmt::format("declare {} @{}(<{} x ptr>, i32 immarg, <{} x i1>, {})", D, nm, w, w, D));
    return b.let(fmt::format("{}.t", hint),
                 fmt::format("call {} @{}(<{} x ptr> {}, i32 8, <{} x i1> splat (i1 true), {} poison)", D, nm,
                             w, ptr, w, D));
}

// exp of float32 compute values (float32, and float16 / bfloat16, which compute in float32) with the contract
// value's bits for every argument: the correctly rounded float32 of exp(x), the reference's
// ir::expc::exp_f32 (ir/include/loom/ir/exp_core.hpp; docs/semantics.md, section 5), computed inline, `w`
// lanes at once, by exp_core's fast path with its constants:
//
//   K = the nearest integer to 16 x / ln 2 (in the low bits of 16 x / ln 2 + 1.5 * 2^52, one FMA), r = x - K
//   ln 2 / 16 (two FMAs with ln 2 split in two doubles; |r| <= ln 2 / 32), p = exp(r) by its Taylor
//   polynomial of degree 5 (Horner, FMAs), y = p * (2^(j/16) * 2^floor(K / 16)) with j = K mod 16 (a table of
//   16 doubles; the exponent bits built from K), then y rounded once to float32.
//
// The truncation error is below 2^-42.6 of the result and the roundings of the double steps add a few 2^-53,
// so y is within 2^-42.5 of exp(x), relative: at most 1450 units in the last place of the double (measured
// over every float32 x in [-104, 89]: 1289 units). The rounding of y to float32 is therefore the correct
// rounding of exp(x), except where a float32 rounding boundary lies within that error of y: y's 29 bits below
// float32's precision within exp_core's window (4096, about 3 times the error) of the halfway pattern 2^28.
// Such lanes (about one argument in 2^18 of [-87, 88]), and arguments outside [-87, 88] (subnormal,
// overflowing, infinite and NaN results), make the whole vector call the reference's own function instead,
// whose slow path decides them. tests/unit/test_llvm_backend.cpp checks the bits against the reference, every
// float32 argument with LOOM_TEST_EXHAUSTIVE=1.
std::string exp_float(Builder& b, const std::string& x, int w, std::string_view hint,
                      std::string_view comment) {
    Function& f = b.f;
    const std::string X = vec("float", w), D = vec("double", w), I = vec("i64", w), B = vec("i1", w);
    auto let = [&](std::string_view what, const std::string& code, std::string_view c = {}) {
        return b.let(fmt::format("{}.{}", hint, what), code, c);
    };
    auto dc = [&](double v) { return splat_constant("double", float_constant(v, "double"), w); };
    auto ic = [&](std::int64_t v) { return splat_constant("i64", fmt::format("{}", v), w); };
    auto fma = [&](std::string_view what, const std::string& a, const std::string& m, const std::string& c,
                   std::string_view note = {}) {
        return b.intrinsic(
            fmt::format("{}.{}", hint, what), "llvm.fma", "double", w,
            {fmt::format("{} {}", D, a), fmt::format("{} {}", D, m), fmt::format("{} {}", D, c)}, note);
    };
    const std::string fast = f.fresh_label(fmt::format("{}.inline", hint));
    const std::string slow = f.fresh_label(fmt::format("{}.library", hint));
    const std::string join = f.fresh_label(fmt::format("{}.done", hint));
    f.emit(fmt::format("br label %{}", fast));
    f.label(fast);
    const std::string xd = let("d", fmt::format("fpext {} {} to {}", X, x, D),
                               fmt::format("{}: in double, rounded once to float32", comment));
    // The constants and steps of exp_core.hpp's fast path (ir::expc::exp_fast), so that y is its double.
    namespace expc = ir::expc;
    const std::string kd = fma("kd", xd, dc(expc::kSixteenOverLn2), dc(expc::kShifter),
                               "K = nearest integer to 16 x / ln 2, in the low bits");
    const std::string k = let("k", fmt::format("fsub {} {}, {}", D, kd, dc(expc::kShifter)));
    const std::string r1 = fma("r1", k, dc(-expc::kLn2Over16Hi), xd);  // ln 2 / 16, high part
    const std::string r = fma("r", k, dc(-expc::kLn2Over16Lo), r1, "r = x - K ln 2 / 16");  // the rest
    std::string p = dc(expc::kInvFact5);
    p = fma("p4", p, r, dc(expc::kInvFact4));
    p = fma("p3", p, r, dc(expc::kInvFact3));
    p = fma("p2", p, r, dc(expc::kInvFact2));
    p = fma("p1", p, r, dc(1.0));
    p = fma("p0", p, r, dc(1.0));  // 1 / n!, correctly rounded
    const std::string kb = let("kb", fmt::format("bitcast {} {} to {}", D, kd, I));
    const std::string t = exp2_table(b, kb, w, hint);
    const std::string e4 = let("e4", fmt::format("lshr {} {}, {}", I, kb, ic(4)));
    const std::string eb = let("eb", fmt::format("add {} {}, {}", I, e4, ic(1023)));
    const std::string sb =
        let("sb", fmt::format("shl {} {}, {}", I, eb, ic(52)), "the bits of 2^floor(K / 16)");
    const std::string sc = let("s", fmt::format("bitcast {} {} to {}", I, sb, D));
    const std::string ts = let("ts", fmt::format("fmul {} {}, {}", D, t, sc), "2^(K / 16), exact");
    const std::string y = let("y", fmt::format("fmul {} {}, {}", D, p, ts), "exp(x) in double");
    const std::string fv = let("f", fmt::format("fptrunc {} {} to {}", D, y, X));
    const std::string yb = let("yb", fmt::format("bitcast {} {} to {}", D, y, I));
    const std::string low =
        let("low", fmt::format("and {} {}, {}", I, yb, ic(0x1FFFFFFF)), "the bits below float32's precision");
    constexpr auto window = static_cast<std::int64_t>(expc::kWindow);  // as exp_core.hpp's fast path
    const std::string off = let("off", fmt::format("sub {} {}, {}", I, low, ic(0x10000000 - window)));
    const std::string near = let("near", fmt::format("icmp ult {} {}, {}", I, off, ic(2 * window)),
                                 "within 4096 of halfway: the rounding is not certain");
    const std::string lo = let("lo", fmt::format("fcmp oge {} {}, {}", X, x,
                                                 splat_constant("float", float_constant(-87.0, "float"), w)));
    const std::string hi = let("hi", fmt::format("fcmp ole {} {}, {}", X, x,
                                                 splat_constant("float", float_constant(88.0, "float"), w)));
    const std::string in =
        let("in", fmt::format("and {} {}, {}", B, lo, hi), "x in [-87, 88] (false for NaN)");
    const std::string outside =
        let("out", fmt::format("xor {} {}, {}", B, in, splat_constant("i1", "true", w)));
    const std::string bad = let("bad", fmt::format("or {} {}, {}", B, near, outside));
    std::string any = bad;
    if (w > 1)
        any = b.intrinsic(fmt::format("{}.any", hint), "llvm.vector.reduce.or", "i1", w,
                          {fmt::format("{} {}", B, bad)}, {}, "i1");
    f.emit(fmt::format("br i1 {}, label %{}, label %{}", any, slow, join));
    f.label(slow);
    const std::string lib =
        b.scalar_call(fmt::format("{}.lib", hint), library_function(Op::Exp, DType::Float32), "float",
                      {"float"}, {x}, w, "the reference's function for these lanes");
    f.emit(fmt::format("br label %{}", join));
    f.label(join);
    return b.let(std::string(hint), fmt::format("phi {} [ {}, %{} ], [ {}, %{} ]", X, fv, fast, lib, slow),
                 comment);
}

}  // namespace

std::string float_min_max(Builder& b, bool max, std::string_view ty, const std::string& x,
                          const std::string& y, int w, std::string_view hint, std::string_view comment) {
    const std::string T = vec(ty, w), I1 = vec("i1", w), I = vec(ty == "double" ? "i64" : "i32", w);
    auto let = [&](std::string_view what, const std::string& code) {
        return b.let(fmt::format("{}.{}", hint, what), code);
    };
    const std::string xn = let("xnan", fmt::format("fcmp uno {} {}, {}", T, x, x));
    const std::string yn = let("ynan", fmt::format("fcmp uno {} {}, {}", T, y, y));
    const std::string eq = let("eq", fmt::format("fcmp oeq {} {}, {}", T, x, y));
    const std::string bits = let("xbits", fmt::format("bitcast {} {} to {}", T, x, I));
    const std::string xneg = let("xneg", fmt::format("icmp slt {} {}, zeroinitializer", I, bits));
    // min: y < x ? y : x; max: x < y ? y : x
    const std::string lt = let("ylt", fmt::format("fcmp olt {} {}, {}", T, max ? x : y, max ? y : x));
    const std::string r1 = let("pick", fmt::format("select {} {}, {} {}, {} {}", I1, lt, T, y, T, x));
    // equal (-0 and +0 included): the minimum is the negative one, the maximum the positive one
    const std::string z =
        let("signed", fmt::format("select {} {}, {} {}, {} {}", I1, xneg, T, max ? y : x, T, max ? x : y));
    const std::string r2 = let("ties", fmt::format("select {} {}, {} {}, {} {}", I1, eq, T, z, T, r1));
    const std::string r3 = let("ynanp", fmt::format("select {} {}, {} {}, {} {}", I1, yn, T, y, T, r2));
    return b.let(std::string(hint), fmt::format("select {} {}, {} {}, {} {}", I1, xn, T, x, T, r3), comment);
}

std::string library_function(Op op, DType compute) {
    return fmt::format("loom_{}_{}", ir::op_name(op), compute == DType::Float64 ? "f64" : "f32");
}

std::string library_random(Op op, DType result) {
    return fmt::format("loom_{}_{}", ir::op_name(op), short_name(result));
}

std::string library_cast(DType from, DType to) {
    return fmt::format("loom_cast_{}_to_{}", short_name(from), short_name(to));
}

std::string emit_cast(Builder& b, DType from, DType to, const std::string& v, int w, std::string_view hint,
                      std::string_view comment) {
    Ops o{b, w, std::string(hint), std::string(comment)};
    const std::string F = type(from, w), T = type(to, w);
    if (from == to)
        return o.out(fmt::format("bitcast {} {} to {}", F, v, T));  // a value of the dtype already
    if (to == DType::Bool) return o.zext_bool(o.truthy(from, v));
    if (!is_float(to)) {
        if (is_float(from)) {
            // Truncation toward zero, saturated to the target's range, NaN -> 0: exactly the saturating
            // conversions (LLVM's fptosi/fptoui are poison out of range).
            const std::string name =
                fmt::format("llvm.{}.sat.{}.{}", to == DType::UInt8 ? "fptoui" : "fptosi",
                            mangle(scalar_type(to), w), mangle(scalar_type(from), w));
            b.module().declare(name, fmt::format("declare {} @{}({})", T, name, F));
            return o.out(fmt::format("call {} @{}({} {})", T, name, F, v));
        }
        const int fb = bits_of(from), tb = bits_of(to);
        if (fb == tb)
            return o.out(fmt::format("bitcast {} {} to {}", F, v, T));  // int8 <-> uint8: the same bits
        if (fb > tb) return o.out(fmt::format("trunc {} {} to {}", F, v, T));  // wraps modulo 2^n
        return o.out(fmt::format("{} {} {} to {}", is_unsigned(from) ? "zext" : "sext", F, v, T));
    }
    // To a float dtype.
    if (!is_float(from)) {
        const std::string op = is_unsigned(from) ? "uitofp" : "sitofp";
        if (to == DType::Float32 || to == DType::Float64 || bits_of(from) == 8)
            // One rounding (int64 -> float32 included, which rounds the exact integer once); 8-bit integers
            // are exact in every float dtype, so no rounding to a half is needed.
            return o.out(fmt::format("{} {} {} to {}", op, F, v, T));
        // int32 / int64 -> float16 / bfloat16: rounded once from the exact value (through float32 it would
        // round twice); the reference's own conversion.
        return b.scalar_call(hint, library_cast(from, to), "float", {std::string(scalar_type(from))}, {v}, w,
                             comment);
    }
    if (from == DType::Float64) {
        if (to == DType::Float32) return o.out(fmt::format("fptrunc {} {} to {}", F, v, T));
        return b.scalar_call(hint, library_cast(from, to), "float", {"double"}, {v}, w,
                             comment);  // one rounding from double
    }
    // From float16, bfloat16 or float32 (held in float).
    if (to == DType::Float64) return o.out(fmt::format("fpext {} {} to {}", F, v, T));
    if (to == DType::Float32) return o.out(fmt::format("bitcast {} {} to {}", F, v, T));  // exact
    const std::string r = b.round_half(to, v, w);
    return o.out(fmt::format("bitcast {} {} to {}", T, r, T));
}

namespace {

// One elementwise op at its operand dtype `at` (the result's is `rt`): what every case reads, computed once.
struct Elementwise {
    Ops& o;
    Builder& b;
    Op op;
    DType rt, at;
    const std::vector<std::string>& args;
    int w;
    std::string_view hint, comment;
    std::string A = o.ty(at);         // the operand's IR type at the vector width
    std::string st{scalar_type(at)};  // its scalar type
    bool fl = is_float(at), uns = is_unsigned(at);
    const std::string& x = args.at(0);
    const std::string& y() const { return args.at(1); }

    // Each returns the op's result, or nothing when the op is not of its group.
    std::optional<std::string> unary() const;
    std::optional<std::string> arithmetic() const;
    std::optional<std::string> comparison_logic() const;
};

// Sign, magnitude, rounding and classification: one operand.
std::optional<std::string> Elementwise::unary() const {
    switch (op) {
        case Op::Neg:
            if (fl) return o.out(fmt::format("fneg {} {}", A, x));
            return o.out(fmt::format("sub {} zeroinitializer, {}", A, x));  // wraps
        case Op::Abs:
            if (fl) return o.intr("llvm.fabs", at, {x}, true);
            if (uns) return o.out(fmt::format("bitcast {} {} to {}", A, x, A));
            return o.intr_args("llvm.abs", at, {fmt::format("{} {}", A, x), "i1 false"},
                               true);  // abs(INT_MIN) = INT_MIN
        case Op::Sign:
            if (fl) {
                const std::string gt = o.tmp("gt", fmt::format("fcmp ogt {} {}, zeroinitializer", A, x));
                const std::string pm = o.select(gt, at, o.cst(at, 1.0), o.cst(at, -1.0));
                const std::string z = o.tmp(
                    "z", fmt::format("fcmp ueq {} {}, zeroinitializer", A, x));  // NaN or a zero: itself
                return o.select(z, at, x, pm, true);
            }
            if (uns) return o.zext_bool(o.truthy(at, x));
            {
                const std::string gt = o.tmp("gt", fmt::format("icmp sgt {} {}, zeroinitializer", A, x));
                const std::string lt = o.tmp("lt", fmt::format("icmp slt {} {}, zeroinitializer", A, x));
                const std::string m = o.select(lt, at, o.icst(at, -1), "zeroinitializer");
                return o.select(gt, at, o.icst(at, 1), m, true);
            }
        case Op::Relu:
            if (fl) {  // maximum(x, +0): x where x > 0 or x is NaN, else +0 (-0 and +0 give +0)
                const std::string keep = o.tmp("keep", fmt::format("fcmp ugt {} {}, zeroinitializer", A, x));
                return o.finish_float(
                    rt, fmt::format("select {} {}, {} {}, {} zeroinitializer", vec("i1", w), keep, A, x, A),
                    true);
            }
            if (uns) return o.out(fmt::format("bitcast {} {} to {}", A, x, A));
            return o.intr_args("llvm.smax", at,
                               {fmt::format("{} {}", A, x), fmt::format("{} zeroinitializer", A)}, true);
        case Op::Sqrt:
            return o.finish_float(rt, fmt::format("call {} @llvm.sqrt.{}({} {})", A, mangle(st, w), A, x),
                                  false);
        case Op::Floor:
        case Op::Ceil:
        case Op::Trunc:
        case Op::Round: {
            if (!fl) return o.out(fmt::format("bitcast {} {} to {}", A, x, A));  // integers are whole
            const std::string base = op == Op::Floor   ? "llvm.floor"
                                     : op == Op::Ceil  ? "llvm.ceil"
                                     : op == Op::Trunc ? "llvm.trunc"
                                                       : "llvm.roundeven";
            return o.intr(base, at, {x}, true);
        }
        case Op::LogicalNot:
            if (fl) return o.zext_bool(o.tmp("z", fmt::format("fcmp oeq {} {}, zeroinitializer", A, x)));
            return o.zext_bool(o.tmp("z", fmt::format("icmp eq {} {}, zeroinitializer", A, x)));
        case Op::IsNan:
            if (!fl)
                return o.out(fmt::format("bitcast {} zeroinitializer to {}", vec("i8", w), vec("i8", w)));
            return o.zext_bool(o.tmp("c", fmt::format("fcmp uno {} {}, {}", A, x, x)));
        case Op::IsInf:
        case Op::IsFinite: {
            if (!fl)
                return o.out(fmt::format("bitcast {} {} to {}", vec("i8", w),
                                         o.icst(DType::Int8, op == Op::IsFinite ? 1 : 0), vec("i8", w)));
            const std::string a = o.intr("llvm.fabs", at, {x}, false);
            const std::string inf =
                splat_constant(st, float_constant(std::numeric_limits<double>::infinity(), st), w);
            return o.zext_bool(
                o.tmp("c", fmt::format("fcmp {} {} {}, {}", op == Op::IsInf ? "oeq" : "olt", A, a, inf)));
        }
        default:
            return std::nullopt;
    }
}

// Arithmetic, division and its remainders, minimum and maximum.
std::optional<std::string> Elementwise::arithmetic() const {
    switch (op) {
        case Op::Add:
        case Op::Sub:
        case Op::Mul:
            if (fl) {
                const char* i = op == Op::Add ? "fadd" : op == Op::Sub ? "fsub" : "fmul";
                return o.finish_float(rt, fmt::format("{} {} {}, {}", i, A, x, y()), false);
            }
            return o.out(fmt::format("{} {} {}, {}",
                                     op == Op::Add   ? "add"
                                     : op == Op::Sub ? "sub"
                                                     : "mul",
                                     A, x, y()));  // wrap
        case Op::Div:
            if (fl) return o.finish_float(rt, fmt::format("fdiv {} {}, {}", A, x, y()), false);
            return o.int_div(at, x, y(), true);
        case Op::FloorDiv:
            if (fl) {
                const std::string q = o.tmp("q", fmt::format("fdiv {} {}, {}", A, x, y()));
                return o.finish_float(
                    rt, fmt::format("call {} @llvm.floor.{}({} {})", A, mangle(st, w), A, q), false);
            }
            return o.int_floor_div(at, x, y());
        case Op::Rem:
            if (fl) return o.out(fmt::format("frem {} {}, {}", A, x, y()));  // fmod: exact
            return o.int_rem(at, x, y(), true);
        case Op::Mod:
            if (fl) {
                // r = fmod(a, b); r != 0 with a sign other than b's: r + b (one rounding); r == 0:
                // copysign(0, b).
                const std::string r = o.tmp("fmod", fmt::format("frem {} {}, {}", A, x, y()));
                const std::string nz = o.tmp("nz", fmt::format("fcmp une {} {}, zeroinitializer", A, r));
                const std::string rn = o.tmp("rneg", fmt::format("fcmp olt {} {}, zeroinitializer", A, r));
                const std::string bn = o.tmp("bneg", fmt::format("fcmp olt {} {}, zeroinitializer", A, y()));
                const std::string diff = o.tmp("diff", fmt::format("xor {} {}, {}", o.i1(), rn, bn));
                const std::string move = o.tmp("move", fmt::format("and {} {}, {}", o.i1(), nz, diff));
                const std::string rb = o.tmp("rb", fmt::format("fadd {} {}, {}", A, r, y()));
                const std::string r1 = o.select(move, at, rb, r);
                const std::string z =
                    o.intr_args("llvm.copysign", at,
                                {fmt::format("{} zeroinitializer", A), fmt::format("{} {}", A, y())}, false);
                const std::string sel = fmt::format("select {} {}, {} {}, {} {}", o.i1(), nz, A, r1, A, z);
                return o.finish_float(rt, sel, false);
            }
            return o.int_mod(at, x, y());
        case Op::Minimum:
        case Op::Maximum: {
            if (fl)
                return float_min_max(b, op == Op::Maximum, st, x, y(), w, hint,
                                     comment);  // NaN propagates, -0 < +0
            const std::string base =
                op == Op::Minimum ? (uns ? "llvm.umin" : "llvm.smin") : (uns ? "llvm.umax" : "llvm.smax");
            return o.intr(base, at, {x, y()}, true);
        }
        default:
            return std::nullopt;
    }
}

// Comparisons, logic, bits, shifts, where, fma and clamp.
std::optional<std::string> Elementwise::comparison_logic() const {
    switch (op) {
        case Op::Eq:
        case Op::Ne:
        case Op::Lt:
        case Op::Le:
        case Op::Gt:
        case Op::Ge: {
            const std::string c =
                fl ? o.tmp("c", fmt::format("fcmp {} {} {}, {}", fcmp_pred(op), A, x, y()))
                   : o.tmp("c", fmt::format("icmp {} {} {}, {}", icmp_pred(op, uns), A, x, y()));
            return o.zext_bool(c);
        }
        case Op::LogicalAnd:
        case Op::LogicalOr:
        case Op::LogicalXor: {
            const std::string a = o.truthy(at, x), c = o.truthy(at, y());
            const char* i = op == Op::LogicalAnd ? "and" : op == Op::LogicalOr ? "or" : "xor";
            return o.zext_bool(o.tmp("l", fmt::format("{} {} {}, {}", i, o.i1(), a, c)));
        }
        case Op::BitAnd:
            return o.out(fmt::format("and {} {}, {}", A, x, y()));
        case Op::BitOr:
            return o.out(fmt::format("or {} {}, {}", A, x, y()));
        case Op::BitXor:
            return o.out(fmt::format("xor {} {}, {}", A, x, y()));
        case Op::Shl:
        case Op::Shr:
            return o.shift(op, at, x, y());
        case Op::Where: {
            const std::string c = o.tmp("c", fmt::format("icmp ne {} {}, zeroinitializer", vec("i8", w), x));
            return o.select(c, at, args.at(1), args.at(2), true);
        }
        case Op::Fma:
            return o.finish_float(rt,
                                  fmt::format("call {} @llvm.fma.{}({} {}, {} {}, {} {})", A, mangle(st, w),
                                              A, x, A, y(), A, args.at(2)),
                                  false);
        case Op::Clamp: {
            // minimum(maximum(x, lo), hi): NaN anywhere gives NaN, lo > hi gives hi.
            if (fl) {
                const std::string lo = float_min_max(b, true, st, x, y(), w, fmt::format("{}.lo", hint));
                return float_min_max(b, false, st, lo, args.at(2), w, hint, comment);
            }
            const std::string mx = uns ? "llvm.umax" : "llvm.smax", mn = uns ? "llvm.umin" : "llvm.smin";
            const std::string lo = o.intr(mx, at, {x, y()}, false);
            return o.intr(mn, at, {lo, args.at(2)}, true);
        }
        default:
            return std::nullopt;
    }
}

}  // namespace

std::string emit_elementwise(Builder& b, const ir::Node& n, const std::vector<std::string>& args, int w,
                             std::string_view hint, std::string_view comment) {
    const Op op = n.op();
    const DType rt = n.dtype();
    if (op == Op::Cast) return emit_cast(b, n.operand(0)->dtype(), rt, args.at(0), w, hint, comment);
    Ops o{b, w, std::string(hint), std::string(comment)};
    const DType at = op == Op::Where ? n.operand(1)->dtype() : n.operand(0)->dtype();  // operand dtype
    const Elementwise e{o, b, op, rt, at, args, w, hint, comment};
    if (ir::info(op).rule == ir::Rule::Random)  // the reference's function: a value of the dtype already
        return b.scalar_call(hint, library_random(op, rt), scalar_type(rt), {"i64", "i64"}, args, w, comment);
    if (library_op(op)) {
        const std::string& A = e.A;
        const std::string& st = e.st;
        const std::string& x = e.x;
        // The reference's function at the compute type (float for float16, bfloat16 and float32), then one
        // rounding to a half dtype.
        std::vector<std::string> tys(args.size(), st);
        const std::string name = library_function(op, at == DType::Float64 ? DType::Float64 : DType::Float32);
        const bool inline_exp = op == Op::Exp && st == "float";
        if (!is_half(rt))
            return inline_exp ? exp_float(b, x, w, hint, comment)
                              : b.scalar_call(hint, name, st, tys, args, w, comment);
        const std::string v =
            inline_exp ? exp_float(b, x, w, fmt::format("{}.f32", hint), comment)
                       : b.scalar_call(fmt::format("{}.f32", hint), name, st, tys, args, w, comment);
        const std::string r = b.round_half(rt, v, w);
        return o.out(fmt::format("bitcast {} {} to {}", A, r, A));
    }

    for (auto group : {&Elementwise::unary, &Elementwise::arithmetic, &Elementwise::comparison_logic})
        if (std::optional<std::string> v = (e.*group)()) return *v;
    throw InternalError(fmt::format("emit_elementwise: no LLVM IR for {} on {}", ir::op_name(op), name(at)));
}

}  // namespace loom::codegen::llvm_ir
