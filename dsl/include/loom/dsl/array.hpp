// Lazy arrays: C++ expressions that record IR instead of computing. Evaluation happens when an Array is
// read back or assigned to a Tensor; one fused kernel (or the CPU reference, for host tensors) runs then.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <source_location>
#include <type_traits>
#include <vector>

#include "loom/ir/build.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom {

using Loc = std::source_location;
class Array;

template <class T>
concept CppScalar = std::is_arithmetic_v<T>;

/// A compile-time constant: `x * constant(0.5)` bakes 0.5 into the generated code instead of passing it
/// as a kernel parameter. Weakly typed like any C++ scalar of its kind (bool, integer or floating point);
/// integers keep all 64 bits.
struct Constant {
    enum class Kind : std::uint8_t { Bool, Int, Float };
    Kind kind = Kind::Float;
    double f = 0.0;
    std::int64_t i = 0;
};
[[noreturn]] void throw_constant_out_of_range(unsigned long long v);
/// Throws loom::Error for an unsigned value above the int64 range.
template <CppScalar S>
Constant constant(S v) {
    if constexpr (std::is_integral_v<S> && std::is_unsigned_v<S> && sizeof(S) >= sizeof(std::int64_t)) {
        if (v > static_cast<S>(INT64_MAX)) throw_constant_out_of_range(static_cast<unsigned long long>(v));
    }
    if constexpr (std::is_same_v<S, bool>)
        return {Constant::Kind::Bool, 0.0, v ? 1 : 0};
    else if constexpr (std::is_integral_v<S>)
        return {Constant::Kind::Int, 0.0, static_cast<std::int64_t>(v)};
    else
        return {Constant::Kind::Float, static_cast<double>(v), 0};
}

/// One operand of an op at its call site: an Array, a Tensor, a C++ scalar (weakly typed: it takes the
/// other operand's dtype, see docs/semantics.md) or a Constant, with the user's source location. An operand
/// that cannot be used (an empty Array, an undefined Tensor, an unsigned scalar above the int64 range) is
/// an error of the op it is given to, naming that op: resolve() and check() throw it.
class Operand {
  public:
    Operand(const Array& a, Loc loc = Loc::current());
    Operand(const Tensor& t, Loc loc = Loc::current());
    template <CppScalar S>
    Operand(S s, Loc loc = Loc::current()) : loc_(loc) {
        if constexpr (std::is_same_v<S, bool>) {
            kind_ = Kind::Bool;
            i_ = s ? 1 : 0;
        } else if constexpr (std::is_integral_v<S>) {
            kind_ = Kind::Int;
            if constexpr (std::is_unsigned_v<S> && sizeof(S) >= sizeof(std::int64_t)) {
                if (s > static_cast<S>(INT64_MAX))
                    kind_ = Kind::UnsignedOutOfRange;  // its bits are kept in i_
            }
            i_ = static_cast<std::int64_t>(s);
        } else {
            kind_ = Kind::Float;
            f_ = static_cast<double>(s);
        }
    }
    Operand(Constant c, Loc loc = Loc::current());

    bool is_array() const { return kind_ == Kind::Array; }
    const ir::NodePtr& node() const { return node_; }
    const Loc& loc() const { return loc_; }
    /// The IR node of this operand when combined with `other` (weak scalars take `other`'s dtype).
    ir::NodePtr resolve(const Operand& other, std::string_view api) const;
    /// The IR node of this operand on its own (a C++ scalar alone becomes float32 / int64 / bool).
    ir::NodePtr resolve_alone(std::string_view api) const;
    /// Throws loom::Error naming `api` when the operand cannot be used (see the class comment).
    void check(std::string_view api) const;

  private:
    enum class Kind { Array, Bool, Int, Float, EmptyArray, UndefinedTensor, UnsignedOutOfRange };
    Kind kind_ = Kind::Array;
    bool constant_ = false;
    ir::NodePtr node_;
    double f_ = 0;
    std::int64_t i_ = 0;
    Loc loc_;
};

/// The lazy graph size limit (docs/semantics.md, "Inputs, laziness and memory"): when an op makes an Array
/// whose graph has more distinct nodes than this (ir::Node::size_bound(), an upper bound, and an exact count
/// where the bound passes the limit) and every input of that graph is a bound tensor, on one device, the
/// Array evaluates itself at once and holds the result, so that a long lazily built loop neither grows one
/// graph (and kernel) without end nor keeps every intermediate alive. Default 1024, or the environment
/// variable LOOM_LAZY_MAX_NODES (read once, at first use); 0 means no limit. Graphs over placeholders (traced
/// functions) are never split.
std::uint32_t lazy_node_limit();
/// Sets the lazy graph size limit for the whole process (every thread); 0 disables it. Returns the
/// previous limit.
std::uint32_t set_lazy_node_limit(std::uint32_t nodes);

/// A lazy array: an IR node (which keeps its input tensors alive). Cheap to copy.
class Array {
  public:
    Array() = default;
    /// Wraps `node`; evaluates it at once when it exceeds the lazy graph size limit (lazy_node_limit()).
    explicit Array(ir::NodePtr node);
    Array(const Tensor& t, Loc loc = Loc::current());

    const ir::NodePtr& node() const { return node_; }
    /// dtype, shape, rank, numel: throw loom::Error for an empty (default-constructed) Array.
    DType dtype() const { return checked().dtype(); }
    const Shape& shape() const { return checked().shape(); }
    int rank() const { return checked().rank(); }
    std::int64_t numel() const { return checked().numel(); }

    /// Evaluates now (one fused kernel where the data dependencies allow) and returns the result.
    /// Throws loom::Error for an empty Array, and what loom::evaluate() throws.
    Tensor eval(Loc loc = Loc::current()) const;
    /// `Tensor t = expr;` evaluates like eval(); errors name the line where the array's last op was built
    /// (a conversion has no call-site argument).
    operator Tensor() const;
    /// Evaluates a rank-0 or one-element array and returns its value on the host, converted to T like a
    /// cast (a float into an integer T truncates and saturates, NaN -> 0; into bool: nonzero). Throws
    /// loom::Error when the array has more than one element.
    template <CppScalar T>
    T item(Loc loc = Loc::current()) const;

    Array astype(DType dtype, Loc loc = Loc::current()) const;
    Array reshape(Shape shape, Loc loc = Loc::current()) const;
    Array broadcast_to(const Shape& shape, Loc loc = Loc::current()) const;
    Array permute(std::vector<std::int64_t> perm, Loc loc = Loc::current()) const;
    /// Swaps the last two axes.
    Array transposed(Loc loc = Loc::current()) const;
    /// Python-style slicing, one SliceSpec per leading axis: x.slice({{1, -1}, {0, kNone, 2}}).
    Array slice(const std::vector<ir::SliceSpec>& spec, Loc loc = Loc::current()) const;

    /// IR of this array in the printer's format.
    std::string ir_text() const;

  private:
    const ir::Node& checked() const;
    ir::NodePtr node_;
};

/// Evaluates one array now; the same as `a.eval()`.
inline Tensor eval(const Array& a, Loc loc = Loc::current()) {
    return a.eval(loc);
}

/// Evaluates several arrays together (outputs that share an iteration space come out of one kernel).
std::vector<Tensor> eval(const std::vector<Array>& arrays, Loc loc = Loc::current());
/// An Array argument that also records the caller's file:line: a function taking a pack cannot end with a
/// defaulted Loc, so its first parameter carries it (the default argument is evaluated where the
/// argument is converted, in the caller's code). A parameter type only: it refers to the argument.
struct ArrayAt {
    ArrayAt(const Array& a, Loc l = Loc::current()) : array(a), loc(l) {}
    const Array& array;
    Loc loc;
};

/// Evaluates two or more arrays together; `auto [call, put] = eval(call_a, put_a);`. Errors name the
/// caller's file:line, as eval(vector) does.
template <class... A>
requires(sizeof...(A) >= 1 &&
         (std::same_as<A, Array> && ...)) std::array<Tensor, sizeof...(A) + 1> eval(ArrayAt first,
                                                                                    const A&... rest) {
    auto v = eval(std::vector<Array>{first.array, rest...}, first.loc);
    std::array<Tensor, sizeof...(A) + 1> out;
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = std::move(v[k]);
    return out;
}

}  // namespace loom
