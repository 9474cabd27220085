// Spelling values, types and op calls in CUDA: exact literals, register and storage types.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cmath>
#include <limits>

#include "emit_internal.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/ir/error.hpp"

namespace loom::codegen {

std::string_view register_type(DType t) {
    switch (t) {
        case DType::Bool:
            return "bool";
        case DType::Int8:
            return "signed char";
        case DType::UInt8:
            return "unsigned char";
        case DType::Int32:
            return "int";
        case DType::Int64:
            return "long long";
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32:
            return "float";
        case DType::Float64:
            return "double";
    }
    throw InternalError("register_type: bad dtype");
}

std::string_view storage_type(DType t) {
    switch (t) {
        case DType::Float16:
            return "lm::f16";
        case DType::BFloat16:
            return "lm::bf16";
        case DType::Bool:
        case DType::Int8:
        case DType::UInt8:
        case DType::Int32:
        case DType::Int64:
        case DType::Float32:
        case DType::Float64:
            return register_type(t);
    }
    throw InternalError("storage_type: bad dtype");
}

namespace {

std::string float_literal(float f) {
    const auto bits = std::bit_cast<std::uint32_t>(f);
    if (std::isnan(f)) return fmt::format("__uint_as_float(0x{:08x}u) /* nan */", bits);
    if (std::isinf(f)) return fmt::format("__uint_as_float(0x{:08x}u) /* {}inf */", bits, f < 0 ? "-" : "");
    if (f == 0.0f) return std::signbit(f) ? "-0x0p+0f /* -0 */" : "0x0p+0f /* 0 */";
    return fmt::format("{:a}f /* {} */", static_cast<double>(f), f);
}

std::string double_literal(double d) {
    const auto bits = std::bit_cast<std::uint64_t>(d);
    if (std::isnan(d)) return fmt::format("__longlong_as_double((long long)0x{:016x}ull) /* nan */", bits);
    if (std::isinf(d))
        return fmt::format("__longlong_as_double((long long)0x{:016x}ull) /* {}inf */", bits,
                           d < 0 ? "-" : "");
    if (d == 0.0) return std::signbit(d) ? "-0x0p+0 /* -0 */" : "0x0p+0 /* 0 */";
    return fmt::format("{:a} /* {} */", d, d);
}

}  // namespace

std::string cuda_literal(const ir::ScalarValue& v, DType t) {
    switch (t) {
        case DType::Bool:
            return v.as_double() != 0.0 ? "true" : "false";
        case DType::Int8:
            return fmt::format("(signed char){}", v.i);
        case DType::UInt8:
            return fmt::format("(unsigned char){}", v.i);
        case DType::Int32:
            if (v.i == std::numeric_limits<std::int32_t>::min()) return "(-2147483647 - 1)";
            return fmt::format("{}", v.i);
        case DType::Int64:
            if (v.i == std::numeric_limits<std::int64_t>::min()) return "(-9223372036854775807ll - 1)";
            return fmt::format("{}ll", v.i);
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32:
            return float_literal(static_cast<float>(v.as_double()));
        case DType::Float64:
            return double_literal(v.as_double());
    }
    throw InternalError("cuda_literal: bad dtype");
}

namespace detail {

void write_line(std::string& s, int indent, std::string_view code, std::string_view comment, int column) {
    std::string l = fmt::format("{:{}}{}", "", indent, code);
    if (!comment.empty()) l = fmt::format("{:<{}} // {}", l, column, comment);
    s += l;
    s += '\n';
}

void write_kernel_prologue(std::string& s, bool release_dependents, int column) {
    write_line(s, 4, "lm::await_prior_grids();", "the stream's previous kernel complete", column);
    if (release_dependents)
        write_line(s, 4, "lm::launch_dependent_grids();", "the next kernel may be scheduled", column);
}

std::string store_expr(DType t, const std::string& r) {
    if (t == DType::Float16) return fmt::format("lm::to_f16({})", r);
    if (t == DType::BFloat16) return fmt::format("lm::to_bf16({})", r);
    return r;
}

std::string banner(std::string_view kind, std::string_view name, std::string_view user_name,
                   std::string_view plan_text) {
    std::string shown(user_name);  // the user's name in a comment: no line breaks or other control characters
    for (char& c : shown)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    std::string s = fmt::format("// ---- Loom {} kernel {} (from \"{}\") ----\n", kind, name, shown);
    for (std::size_t b = 0, e; b < plan_text.size(); b = e + 1) {
        e = plan_text.find('\n', b);
        if (e == std::string_view::npos) e = plan_text.size();
        s += fmt::format("// {}\n", plan_text.substr(b, e - b));
    }
    return s;
}

std::string param_ctype(const ParamField& f, IndexWidth index, std::string_view struct_prefix) {
    switch (f.type) {
        case ParamType::Index:
            return index == IndexWidth::I32 ? "int" : "long long";
        case ParamType::Int64:
            return "long long";
        case ParamType::ConstPointer:
            return fmt::format("const {}*", storage_type(f.dtype));
        case ParamType::Pointer:
            return fmt::format("{}*", storage_type(f.dtype));
        case ParamType::RawPointer:
            return "void*";
        case ParamType::Scalar:
            return std::string(register_type(f.dtype));
        case ParamType::Struct:
            return fmt::format("{}_{}_params", struct_prefix,
                               f.a == 0   ? "el"
                               : f.a == 1 ? "row"
                               : f.a == 2 ? "ep"
                               : f.a == 3 ? "pa"
                                          : "pb");
        case ParamType::Opaque:
            return "unsigned char";
    }
    throw InternalError("param_ctype: bad parameter type");
}

std::string param_declaration(const ParamField& f, IndexWidth index, std::string_view struct_prefix) {
    if (f.type == ParamType::Opaque)
        return fmt::format("alignas({}) unsigned char {}[{}];", f.align, f.name, f.size);
    return fmt::format("{} {};", param_ctype(f, index, struct_prefix), f.name);
}

namespace {
// Ops whose result is always a value of the operands' dtype (column Exactness of ops.def): no rounding for
// float16/bfloat16.
bool keeps_representable(ir::Op op) {
    return ir::is_exact(op);
}
}  // namespace

std::string op_expression(const ir::Node& n, const std::vector<std::string>& args) {
    const ir::OpInfo& oi = ir::info(n.op());
    if (n.op() == ir::Op::Cast) return fmt::format("lm::cast<{}>({})", storage_type(n.dtype()), args.at(0));
    // A random op's function takes the result's storage type (float16 and bfloat16 values in a float).
    std::string call =
        oi.rule == ir::Rule::Random
            ? fmt::format("{}<{}>({})", oi.cuda, storage_type(n.dtype()), fmt::join(args, ", "))
            : fmt::format("{}({})", oi.cuda, fmt::join(args, ", "));
    if (n.dtype() == DType::Float16 && !keeps_representable(n.op()))
        return fmt::format("lm::round_f16({})", call);
    if (n.dtype() == DType::BFloat16 && !keeps_representable(n.op()))
        return fmt::format("lm::round_bf16({})", call);
    return call;
}

}  // namespace detail

}  // namespace loom::codegen
