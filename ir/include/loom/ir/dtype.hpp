// Element types (dtypes), their sizes and names, and the type-promotion lattice of docs/semantics.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace loom {

/// Element type of an array. Sizes in bytes: bool 1, int8 1, uint8 1, int32 4, int64 8, float16 2,
/// bfloat16 2, float32 4, float64 8.
enum class DType : std::uint8_t { Bool, Int8, UInt8, Int32, Int64, Float16, BFloat16, Float32, Float64 };

inline constexpr int kNumDTypes = 9;
inline constexpr DType kAllDTypes[kNumDTypes] = {DType::Bool,     DType::Int8,    DType::UInt8,
                                                 DType::Int32,    DType::Int64,   DType::Float16,
                                                 DType::BFloat16, DType::Float32, DType::Float64};

inline constexpr DType bool_ = DType::Bool;
inline constexpr DType int8 = DType::Int8;
inline constexpr DType uint8 = DType::UInt8;
inline constexpr DType int32 = DType::Int32;
inline constexpr DType int64 = DType::Int64;
inline constexpr DType float16 = DType::Float16;
inline constexpr DType bfloat16 = DType::BFloat16;
inline constexpr DType float32 = DType::Float32;
inline constexpr DType float64 = DType::Float64;

/// Size of one element in bytes.
std::size_t itemsize(DType t);
/// Lower-case name as in the docs: "float32", "bfloat16", "bool", ...
std::string_view name(DType t);
/// Short name used in generated identifiers and printed IR: "f32", "bf16", "i64", "b8", ...
std::string_view short_name(DType t);

constexpr bool is_float(DType t) {
    return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
constexpr bool is_integer(DType t) {
    return t == DType::Int8 || t == DType::UInt8 || t == DType::Int32 || t == DType::Int64;
}
constexpr bool is_signed_integer(DType t) {
    return t == DType::Int8 || t == DType::Int32 || t == DType::Int64;
}
/// float16 and bfloat16: stored in 2 bytes, computed in float32 and rounded once per op.
constexpr bool is_half(DType t) {
    return t == DType::Float16 || t == DType::BFloat16;
}

/// Result dtype of a binary op on two arrays (docs/semantics.md, "Type promotion"). A lattice in the
/// spirit of JAX's: bool < every type; integers promote to the widest, int8 with uint8 to int32; any
/// integer with a float gives the float; float16 with bfloat16 gives float32; floats to the widest.
DType promote(DType a, DType b);

/// Kinds of C++ scalars, which are weakly typed (docs/semantics.md, "Weak scalars").
enum class ScalarKind : std::uint8_t { Bool, Int, Float };

/// Result dtype of an array of dtype `array` combined with a weakly typed C++ scalar: the array's dtype,
/// except that a float scalar with an integer or bool array gives float32, and an integer scalar with a
/// bool array gives int32.
DType promote_weak(DType array, ScalarKind scalar);

}  // namespace loom
