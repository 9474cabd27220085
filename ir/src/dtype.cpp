// DType facts and the promotion lattice (docs/semantics.md, "Type promotion").
#include "loom/ir/dtype.hpp"

#include "loom/ir/error.hpp"

namespace loom {

std::size_t itemsize(DType t) {
    switch (t) {
        case DType::Bool:
        case DType::Int8:
        case DType::UInt8:
            return 1;
        case DType::Float16:
        case DType::BFloat16:
            return 2;
        case DType::Int32:
        case DType::Float32:
            return 4;
        case DType::Int64:
        case DType::Float64:
            return 8;
    }
    throw InternalError("itemsize: bad dtype");
}

std::string_view name(DType t) {
    switch (t) {
        case DType::Bool:
            return "bool";
        case DType::Int8:
            return "int8";
        case DType::UInt8:
            return "uint8";
        case DType::Int32:
            return "int32";
        case DType::Int64:
            return "int64";
        case DType::Float16:
            return "float16";
        case DType::BFloat16:
            return "bfloat16";
        case DType::Float32:
            return "float32";
        case DType::Float64:
            return "float64";
    }
    throw InternalError("name: bad dtype");
}

std::string_view short_name(DType t) {
    switch (t) {
        case DType::Bool:
            return "b8";
        case DType::Int8:
            return "i8";
        case DType::UInt8:
            return "u8";
        case DType::Int32:
            return "i32";
        case DType::Int64:
            return "i64";
        case DType::Float16:
            return "f16";
        case DType::BFloat16:
            return "bf16";
        case DType::Float32:
            return "f32";
        case DType::Float64:
            return "f64";
    }
    throw InternalError("short_name: bad dtype");
}

namespace {
int int_width(DType t) {
    return static_cast<int>(itemsize(t));
}
int float_rank(DType t) {
    return t == DType::Float64 ? 3 : t == DType::Float32 ? 2 : 1;
}
}  // namespace

DType promote(DType a, DType b) {
    if (a == b) return a;
    if (a == DType::Bool) return b;
    if (b == DType::Bool) return a;
    if (is_integer(a) && is_integer(b)) {
        // A signed and an unsigned type: the smallest signed type that holds both (int8/uint8 -> int32,
        // since Loom has no int16).
        int w = std::max(int_width(a), int_width(b));
        if (w <= 1) return DType::Int32;
        return w == 4 ? DType::Int32 : DType::Int64;
    }
    if (is_integer(a)) return b;
    if (is_integer(b)) return a;
    // both floats, different
    if (is_half(a) && is_half(b)) return DType::Float32;
    return float_rank(a) >= float_rank(b) ? a : b;
}

DType promote_weak(DType array, ScalarKind scalar) {
    switch (scalar) {
        case ScalarKind::Float:
            return is_float(array) ? array : DType::Float32;
        case ScalarKind::Int:
            return array == DType::Bool ? DType::Int32 : array;
        case ScalarKind::Bool:
            return array;
    }
    throw InternalError("promote_weak: bad scalar kind");
}

}  // namespace loom
