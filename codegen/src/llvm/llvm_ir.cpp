// Writing LLVM IR as text: types, exact literals, modules and function bodies (llvm_ir.hpp).
#include "llvm_ir.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cmath>

#include "loom/ir/error.hpp"

namespace loom::codegen::llvm_ir {

std::string_view scalar_type(DType t) {
    switch (t) {
        case DType::Bool:
        case DType::Int8:
        case DType::UInt8:
            return "i8";
        case DType::Int32:
            return "i32";
        case DType::Int64:
            return "i64";
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32:
            return "float";
        case DType::Float64:
            return "double";
    }
    throw InternalError("llvm scalar_type: bad dtype");
}

std::string_view storage_type(DType t) {
    return is_half(t) ? "i16" : scalar_type(t);
}

std::string vec(std::string_view ty, int w) {
    return w == 1 ? std::string(ty) : fmt::format("<{} x {}>", w, ty);
}

std::string mangle(std::string_view ty, int w) {
    std::string s = ty == "float" ? "f32" : ty == "double" ? "f64" : ty == "half" ? "f16" : std::string(ty);
    return w == 1 ? s : fmt::format("v{}{}", w, s);
}

int bytes_of(std::string_view ty) {
    if (ty == "i8") return 1;
    if (ty == "i16" || ty == "half") return 2;
    if (ty == "i32" || ty == "float") return 4;
    if (ty == "i64" || ty == "double" || ty == "ptr") return 8;
    throw InternalError(fmt::format("llvm bytes_of: {}", ty));
}

std::string decimal(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    if (d == 0.0) return std::signbit(d) ? "-0" : "0";
    return fmt::format("{}", d);
}

std::string float_constant(double d, std::string_view ty) {
    // IR spells float and double constants as the bits of the double of the value; a NaN of type float must
    // be a double NaN whose payload fits a float: use the quiet NaN of either.
    if (std::isnan(d)) return "0x7FF8000000000000";
    if (ty == "float") d = static_cast<double>(static_cast<float>(d));
    return fmt::format("0x{:016X}", std::bit_cast<std::uint64_t>(d));
}

std::string literal(const ir::ScalarValue& v, DType t) {
    switch (t) {
        case DType::Bool:
            return v.as_double() != 0.0 ? "1" : "0";
        case DType::Int8:
            return fmt::format("{}", static_cast<std::int8_t>(v.i));
        case DType::UInt8:
            return fmt::format("{}", static_cast<std::int8_t>(static_cast<std::uint8_t>(v.i)));
        case DType::Int32:
            return fmt::format("{}", static_cast<std::int32_t>(v.i));
        case DType::Int64:
            return fmt::format("{}", v.i);
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32:
            return float_constant(static_cast<float>(v.as_double()), "float");
        case DType::Float64:
            return float_constant(v.as_double(), "double");
    }
    throw InternalError("llvm literal: bad dtype");
}

std::string splat_constant(std::string_view ty, const std::string& c, int w) {
    if (w == 1) return c;
    return fmt::format("splat ({} {})", ty, c);
}

void Module::declare(const std::string& name, const std::string& declaration) {
    declarations_.emplace(name, declaration);
}

bool Module::define_once(const std::string& name) {
    return defined_.insert(name).second;
}

std::string Module::text(std::string_view header) const {
    std::string s(header);
    for (const auto& f : functions_) {
        s += '\n';
        s += f;
    }
    if (!declarations_.empty()) s += '\n';
    for (const auto& [name, d] : declarations_) s += d + '\n';
    // #0: every kernel. No fast-math attribute is set anywhere: no contraction, no reassociation, IEEE
    // denormals (docs/semantics.md, sections 1 and 5); nounwind: generated code never throws.
    s += "\nattributes #0 = { nounwind \"denormal-fp-math\"=\"ieee,ieee\" \"no-trapping-math\"=\"true\" }\n";
    s += "attributes #1 = { nounwind alwaysinline \"denormal-fp-math\"=\"ieee,ieee\" "
         "\"no-trapping-math\"=\"true\" }\n";
    return s;
}

std::string Function::fresh(std::string_view hint) {
    // `%hint`, else `%hint.N` for the first N not produced yet (a hint may itself end in `.N`).
    int& next = used_[std::string(hint)];
    std::string n = next == 0 ? fmt::format("%{}", hint) : fmt::format("%{}.{}", hint, next);
    while (!names_.insert(n).second) n = fmt::format("%{}.{}", hint, ++next);
    ++next;
    return n;
}

std::string Function::fresh_label(std::string_view hint) {
    return fresh(hint).substr(1);
}

void Function::emit(std::string_view code, std::string_view comment) {
    std::string l = fmt::format("  {}", code);
    if (!comment.empty()) l = fmt::format("{:<76} ; {}", l, comment);
    body_ += l;
    body_ += '\n';
}

void Function::note(std::string_view comment) {
    body_ += fmt::format("  ; {}\n", comment);
}

void Function::label(std::string_view name) {
    body_ += fmt::format("{}:\n", name);
}

std::string Function::alloca_(std::string_view hint, std::string_view ty, int align) {
    const std::string n = fresh(hint);
    allocas_ += align > 0 ? fmt::format("  {} = alloca {}, align {}\n", n, ty, align)
                          : fmt::format("  {} = alloca {}\n", n, ty);
    return n;
}

std::string Function::finish(std::string_view header, std::string_view first_comment) const {
    std::string s;
    if (!first_comment.empty()) s += first_comment;
    s += fmt::format("define {} {{\n", header);
    s += "entry:\n";
    s += allocas_;
    s += body_;
    s += "}\n";
    return s;
}

std::string Builder::let(std::string_view hint, const std::string& code, std::string_view comment) {
    const std::string n = f.fresh(hint);
    f.emit(fmt::format("{} = {}", n, code), comment);
    return n;
}

void Builder::loop(std::string_view tag, const std::string& slot,
                   const std::function<std::string(const std::string&)>& more,
                   const std::function<void(const std::string&)>& body,
                   const std::function<std::string(const std::string&)>& next) {
    const std::string cond = f.fresh_label(fmt::format("{}.cond", tag));
    const std::string lbody = f.fresh_label(fmt::format("{}.body", tag));
    const std::string done = f.fresh_label(fmt::format("{}.done", tag));
    f.emit(fmt::format("br label %{}", cond));
    f.label(cond);
    const std::string i = let(tag, fmt::format("load i64, ptr {}", slot));
    f.emit(fmt::format("br i1 {}, label %{}, label %{}", more(i), lbody, done));
    f.label(lbody);
    body(i);
    f.emit(fmt::format("store i64 {}, ptr {}", next(i), slot));
    f.emit(fmt::format("br label %{}", cond));
    f.label(done);
}

void Builder::loop_from(std::string_view tag, const std::string& from,
                        const std::function<std::string(const std::string&)>& more,
                        const std::function<void(const std::string&)>& body,
                        const std::function<std::string(const std::string&)>& next) {
    const std::string slot = f.alloca_(fmt::format("{}.slot", tag), "i64");
    f.emit(fmt::format("store i64 {}, ptr {}", from, slot));
    loop(tag, slot, more, body, next);
}

void Builder::for_range(std::string_view tag, const std::string& from, const std::string& end, int step,
                        const std::function<void(const std::string&)>& body) {
    loop_from(
        tag, from,
        [&](const std::string& i) {
            return let(fmt::format("{}.more", tag), fmt::format("icmp ult i64 {}, {}", i, end));
        },
        body,
        [&](const std::string& i) {
            return let(fmt::format("{}.next", tag), fmt::format("add i64 {}, {}", i, step));
        });
}

void Builder::steps(std::string_view tag, const std::string& slot, const std::string& end,
                    std::initializer_list<int> widths,
                    const std::function<void(const std::string&, int)>& body) {
    for (const int w : widths) {
        const std::string t = w > 1 ? fmt::format("{}.w{}", tag, w) : fmt::format("{}.tail", tag);
        std::string next;  // i + w, computed once by the condition
        loop(
            t, slot,
            [&](const std::string& i) {
                next = let(fmt::format("{}.next", t), fmt::format("add i64 {}, {}", i, w));
                return let(fmt::format("{}.more", t), fmt::format("icmp ule i64 {}, {}", next, end),
                           w > 1 ? fmt::format("a whole step of {} left", w) : "an element left");
            },
            [&](const std::string& i) { body(i, w); }, [&](const std::string&) { return next; });
    }
}

std::string Builder::intrinsic(std::string_view hint, std::string_view base, std::string_view ty, int w,
                               const std::vector<std::string>& args, std::string_view comment,
                               std::string_view ret_ty) {
    const std::string vt = vec(ty, w);
    const std::string rt = ret_ty.empty() ? vt : std::string(ret_ty);
    const std::string name = fmt::format("{}.{}", base, mangle(ty, w));
    std::vector<std::string> arg_tys;
    // Each argument is "<type> <value>": the type is "<N x T>" or one token (the value may hold spaces).
    for (const auto& a : args)
        arg_tys.push_back(a.front() == '<' ? a.substr(0, a.find('>') + 1) : a.substr(0, a.find(' ')));
    module().declare(name, fmt::format("declare {} @{}({})", rt, name, fmt::join(arg_tys, ", ")));
    return let(hint, fmt::format("call {} @{}({})", rt, name, fmt::join(args, ", ")), comment);
}

std::string Builder::scalar_call(std::string_view hint, const std::string& name, std::string_view ret,
                                 const std::vector<std::string>& arg_tys,
                                 const std::vector<std::string>& args, int w, std::string_view comment) {
    // The host's scalar library (runtime/src/host_scalar_library.cpp): the reference's own per-element code.
    if (w == 1) {
        // nounwind, willreturn, no memory: LICM may hoist a call on loop-invariant arguments.
        module().declare(name, fmt::format("declare {} @{}({}) nounwind willreturn memory(none)", ret, name,
                                           fmt::join(arg_tys, ", ")));
        std::vector<std::string> a;
        for (std::size_t k = 0; k < args.size(); ++k) a.push_back(fmt::format("{} {}", arg_tys[k], args[k]));
        return let(hint, fmt::format("call {} @{}({})", ret, name, fmt::join(a, ", ")), comment);
    }
    // A vector: the library's array form `<name>_v(const A* a, ..., R* out, i64 n)`, one call for the w lanes
    // (the lanes are stored to stack slots, the results loaded back), rather than w calls.
    const std::string vname = name + "_v";
    std::vector<std::string> ptr_tys(arg_tys.size() + 1, "ptr");
    ptr_tys.push_back("i64");
    module().declare(vname, fmt::format("declare void @{}({}) nounwind", vname, fmt::join(ptr_tys, ", ")));
    std::vector<std::string> call_args;
    for (std::size_t k = 0; k < args.size(); ++k) {
        const std::string slot = f.alloca_(fmt::format("{}.in{}", hint, k), vec(arg_tys[k], w), 64);
        f.emit(fmt::format("store {} {}, ptr {}, align 64", vec(arg_tys[k], w), args[k], slot));
        call_args.push_back(fmt::format("ptr {}", slot));
    }
    const std::string out = f.alloca_(fmt::format("{}.out", hint), vec(ret, w), 64);
    call_args.push_back(fmt::format("ptr {}", out));
    call_args.push_back(fmt::format("i64 {}", w));
    f.emit(fmt::format("call void @{}({})", vname, fmt::join(call_args, ", ")),
           comment.empty() ? std::string_view() : comment);
    return let(hint, fmt::format("load {}, ptr {}, align 64", vec(ret, w), out));
}

std::string Builder::splat(std::string_view hint, std::string_view ty, const std::string& v, int w) {
    if (w == 1) return v;
    const std::string one = let(fmt::format("{}.ins", hint),
                                fmt::format("insertelement <{} x {}> poison, {} {}, i64 0", w, ty, ty, v));
    return let(hint, fmt::format("shufflevector <{} x {}> {}, <{} x {}> poison, <{} x i32> zeroinitializer",
                                 w, ty, one, w, ty, w));
}

std::string Builder::iota(int w) {
    std::vector<std::string> e;
    for (int l = 0; l < w; ++l) e.push_back(fmt::format("i64 {}", l));
    return fmt::format("<{}>", fmt::join(e, ", "));
}

namespace {

std::string i32s(int w, std::uint32_t v) {
    return splat_constant("i32", fmt::format("{}", static_cast<std::int32_t>(v)), w);
}

}  // namespace

std::string Builder::half_to_bits(DType t, const std::string& v, int w) {
    const std::string i32 = vec("i32", w), i16 = vec("i16", w), fl = vec("float", w);
    if (t == DType::Float16) {
        if (!target.f16c) {  // no hardware conversion: the reference's own rounding
            if (w > 1) return scalar_call("f16", "loom_f32_to_f16_bits", "i16", {"float"}, {v}, w);
            const std::string b32 = scalar_call("f16w", "loom_f32_to_f16_bits", "i32", {"float"}, {v}, 1);
            return let("f16", fmt::format("trunc i32 {} to i16", b32));
        }
        const std::string h = let("h", fmt::format("fptrunc {} {} to {}", fl, v, vec("half", w)));
        return let("hb", fmt::format("bitcast {} {} to {}", vec("half", w), h, i16));
    }
    // bfloat16, round to nearest even on the bits (float_to_bf16_bits in ir/src/half.cpp): add 0x7fff plus
    // the lowest kept bit, keep the upper half; a NaN keeps its upper half with the quiet bit set. Written
    // out rather than `fptrunc float to bfloat`, which LLVM lowers to vcvtneps2bf16 (flushes subnormals) or a
    // library call.
    const std::string u = let("u", fmt::format("bitcast {} {} to {}", fl, v, i32));
    const std::string hi = let("hi", fmt::format("lshr {} {}, {}", i32, u, i32s(w, 16)));
    const std::string lsb = let("lsb", fmt::format("and {} {}, {}", i32, hi, i32s(w, 1)));
    const std::string bias = let("bias", fmt::format("add {} {}, {}", i32, lsb, i32s(w, 0x7fff)));
    const std::string sum = let("rnd", fmt::format("add {} {}, {}", i32, u, bias));
    const std::string rn = let("rne", fmt::format("lshr {} {}, {}", i32, sum, i32s(w, 16)));
    const std::string qn = let("qnan", fmt::format("or {} {}, {}", i32, hi, i32s(w, 0x40)));
    const std::string isnan = let("isnan", fmt::format("fcmp uno {} {}, {}", fl, v, v));
    const std::string sel =
        let("bfs", fmt::format("select {} {}, {} {}, {} {}", vec("i1", w), isnan, i32, qn, i32, rn));
    return let("bf", fmt::format("trunc {} {} to {}", i32, sel, i16));
}

std::string Builder::half_from_bits(DType t, const std::string& bits, int w) {
    const std::string i32 = vec("i32", w), i16 = vec("i16", w), fl = vec("float", w);
    if (t == DType::Float16) {
        if (!target.f16c) {
            if (w > 1) return scalar_call("f16x", "loom_f16_bits_to_f32", "float", {"i16"}, {bits}, w);
            const std::string b32 = let("f16w", fmt::format("zext i16 {} to i32", bits));
            return scalar_call("f16x", "loom_f16_bits_to_f32", "float", {"i32"}, {b32}, 1);
        }
        const std::string h = let("h", fmt::format("bitcast {} {} to {}", i16, bits, vec("half", w)));
        return let("hx", fmt::format("fpext {} {} to {}", vec("half", w), h, fl));  // exact
    }
    const std::string z = let("z", fmt::format("zext {} {} to {}", i16, bits, i32));
    const std::string s = let("sh", fmt::format("shl {} {}, {}", i32, z, i32s(w, 16)));
    return let("bfx", fmt::format("bitcast {} {} to {}", i32, s, fl));  // exact: the upper half of a float32
}

std::string Builder::round_half(DType t, const std::string& v, int w, std::string_view comment) {
    if (!is_half(t)) return v;
    if (!comment.empty()) f.note(comment);
    return half_from_bits(t, half_to_bits(t, v, w), w);
}

std::string Builder::from_storage(DType t, const std::string& v, int w) {
    if (is_half(t)) return half_from_bits(t, v, w);
    if (t == DType::Bool) {  // any nonzero byte is true: normalized to 1, as the reference's load does
        const std::string nz = let("nz", fmt::format("icmp ne {} {}, zeroinitializer", vec("i8", w), v));
        return let("b", fmt::format("zext {} {} to {}", vec("i1", w), nz, vec("i8", w)));
    }
    return v;
}

std::string Builder::to_storage(DType t, const std::string& v, int w) {
    if (is_half(t)) return half_to_bits(t, v, w);
    return v;
}

}  // namespace loom::codegen::llvm_ir
