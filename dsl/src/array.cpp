// Lazy arrays and operands: turning C++ values and expressions into IR nodes.
#include "loom/dsl/array.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>

#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/runtime/executor.hpp"
#include "settle.hpp"

namespace loom {

namespace {

// The input node that stands for `t`: one per tensor handle, so `x + x` reads x once. The lookup and
// the store are one critical section: Tensor::Impl::input_node is a plain weak_ptr, and two threads
// building expressions over one tensor must neither race on it nor make two inputs for it.
ir::NodePtr input_node_of(const Tensor& t, const Loc& loc) {
    if (!t.defined()) throw Error(fmt::format("Array(): undefined (empty) Tensor ({})", short_location(loc)));
    static std::mutex mutex;
    const std::lock_guard<std::mutex> lock(mutex);
    const auto& impl = t.impl();
    if (auto n = std::static_pointer_cast<const ir::Node>(impl->input_node.lock())) return n;
    std::shared_ptr<const void> payload = std::static_pointer_cast<const Tensor::Impl>(impl);
    ir::NodePtr n = ir::input(t.dtype(), t.shape(), "", std::move(payload), loc);
    impl->input_node = n;
    return n;
}

}  // namespace

std::uint32_t lazy_node_limit() {
    return detail::lazy_limit().load(std::memory_order_relaxed);
}
std::uint32_t set_lazy_node_limit(std::uint32_t nodes) {
    return detail::lazy_limit().exchange(nodes);
}

Array::Array(ir::NodePtr node) : node_(detail::settle(std::move(node), input_node_of)) {}

Operand::Operand(const Array& a, Loc loc)
    : kind_(a.node() ? Kind::Array : Kind::EmptyArray), node_(a.node()), loc_(loc) {}
Operand::Operand(const Tensor& t, Loc loc)
    : kind_(t.defined() ? Kind::Array : Kind::UndefinedTensor),
      node_(t.defined() ? input_node_of(t, loc) : nullptr),
      loc_(loc) {}

void Operand::check(std::string_view api) const {
    switch (kind_) {
        case Kind::EmptyArray:
            throw Error(fmt::format("{}(): empty Array operand ({})", api, short_location(loc_)));
        case Kind::UndefinedTensor:
            throw Error(
                fmt::format("{}(): undefined (empty) Tensor operand ({})", api, short_location(loc_)));
        case Kind::UnsignedOutOfRange:
            throw Error(fmt::format(
                "{}(): unsigned scalar {} is above the int64 range that Loom's integer scalars take "
                "({})",
                api, static_cast<unsigned long long>(i_), short_location(loc_)));
        default:
            return;
    }
}
Operand::Operand(Constant c, Loc loc) : constant_(true), f_(c.f), i_(c.i), loc_(loc) {
    switch (c.kind) {
        case Constant::Kind::Bool:
            kind_ = Kind::Bool;
            break;
        case Constant::Kind::Int:
            kind_ = Kind::Int;
            break;
        case Constant::Kind::Float:
            kind_ = Kind::Float;
            break;
    }
}

ir::NodePtr Operand::resolve(const Operand& other, std::string_view api) const {
    if (kind_ == Kind::Array) return node_;
    check(api);
    if (other.kind_ != Kind::Array) return resolve_alone(api);
    const ScalarKind sk = kind_ == Kind::Float ? ScalarKind::Float
                          : kind_ == Kind::Int ? ScalarKind::Int
                                               : ScalarKind::Bool;
    const DType dt = promote_weak(other.node_->dtype(), sk);
    const ir::ScalarValue v = kind_ == Kind::Float ? ir::make_scalar_value(f_, dt, api, loc_)
                                                   : ir::make_scalar_value(i_, dt, api, loc_);
    return constant_ ? ir::constant(v, dt, loc_) : ir::scalar(v, dt, loc_);
}

ir::NodePtr Operand::resolve_alone(std::string_view api) const {
    if (kind_ == Kind::Array) return node_;
    check(api);
    const DType dt = kind_ == Kind::Float ? DType::Float32 : kind_ == Kind::Int ? DType::Int64 : DType::Bool;
    const ir::ScalarValue v = kind_ == Kind::Float ? ir::make_scalar_value(f_, dt, api, loc_)
                                                   : ir::make_scalar_value(i_, dt, api, loc_);
    return constant_ ? ir::constant(v, dt, loc_) : ir::scalar(v, dt, loc_);
}

Array::Array(const Tensor& t, Loc loc) : node_(input_node_of(t, loc)) {}

const ir::Node& Array::checked() const {
    if (!node_) throw Error("Array: use of an empty (default-constructed) Array");
    return *node_;
}

void throw_constant_out_of_range(unsigned long long v) {
    throw Error(
        fmt::format("constant(): unsigned value {} is above the int64 range of Loom's integer scalars", v));
}

Tensor Array::eval(Loc loc) const {
    if (!node_) throw Error(fmt::format("eval(): empty Array ({})", short_location(loc)));
    return evaluate({node_}, loc).at(0);
}

Array::operator Tensor() const {
    if (!node_) throw Error("eval(): empty Array (converted to a Tensor)");
    return eval(node_->loc());
}

template <CppScalar T>
T Array::item(Loc loc) const {
    if (!node_) throw Error(fmt::format("item(): empty Array ({})", short_location(loc)));
    if (numel() != 1)
        throw Error(fmt::format("item(): array {} {} has {} elements, not 1 ({})", to_string(shape()),
                                name(dtype()), numel(), short_location(loc)));
    Tensor h = eval(loc).to_host(loc);
    if constexpr (std::is_floating_point_v<T>) {
        return static_cast<T>(h.get_double(0));
    } else if constexpr (std::is_same_v<T, bool>) {
        return h.get_double(0) != 0.0;  // truthiness: NaN is true
    } else if (is_float(h.dtype())) {
        // Like a float -> integer cast (docs/semantics.md): truncate, saturate, NaN -> 0; never a C++ cast
        // of an out-of-range value (undefined behaviour).
        const double v = std::trunc(h.get_double(0));
        if (std::isnan(v)) return T{0};
        if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
        if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
        return static_cast<T>(v);
    } else {
        return static_cast<T>(h.get_int(0));
    }
}
template float Array::item<float>(Loc) const;
template double Array::item<double>(Loc) const;
template long double Array::item<long double>(Loc) const;
template bool Array::item<bool>(Loc) const;
template char Array::item<char>(Loc) const;
template signed char Array::item<signed char>(Loc) const;
template unsigned char Array::item<unsigned char>(Loc) const;
template short Array::item<short>(Loc) const;
template unsigned short Array::item<unsigned short>(Loc) const;
template int Array::item<int>(Loc) const;
template unsigned Array::item<unsigned>(Loc) const;
template long Array::item<long>(Loc) const;
template unsigned long Array::item<unsigned long>(Loc) const;
template long long Array::item<long long>(Loc) const;
template unsigned long long Array::item<unsigned long long>(Loc) const;

namespace {
// The node of an Array that a method is called on: an empty Array is an error naming the method.
const ir::NodePtr& operand_node(const ir::NodePtr& n, std::string_view api, const Loc& loc) {
    if (!n) throw Error(fmt::format("{}(): empty Array ({})", api, short_location(loc)));
    return n;
}
}  // namespace

Array Array::astype(DType dtype, Loc loc) const {
    return Array(ir::cast(operand_node(node_, "astype", loc), dtype, loc));
}
Array Array::reshape(Shape shape, Loc loc) const {
    return Array(ir::reshape(operand_node(node_, "reshape", loc), std::move(shape), loc));
}
Array Array::broadcast_to(const Shape& shape, Loc loc) const {
    return Array(ir::broadcast_to(operand_node(node_, "broadcast_to", loc), shape, loc));
}
Array Array::permute(std::vector<std::int64_t> perm, Loc loc) const {
    return Array(ir::permute(operand_node(node_, "permute", loc), std::move(perm), loc));
}
Array Array::transposed(Loc loc) const {
    return Array(ir::transpose(operand_node(node_, "transpose", loc), loc));
}
Array Array::slice(const std::vector<ir::SliceSpec>& spec, Loc loc) const {
    return Array(ir::slice(operand_node(node_, "slice", loc), spec, loc));
}
std::string Array::ir_text() const {
    return ir::print({node_});
}

std::vector<Tensor> eval(const std::vector<Array>& arrays, Loc loc) {
    std::vector<ir::NodePtr> roots;
    roots.reserve(arrays.size());
    for (const auto& a : arrays) {
        if (!a.node()) throw Error(fmt::format("eval(): empty Array ({})", short_location(loc)));
        roots.push_back(a.node());
    }
    return evaluate(roots, loc);
}

}  // namespace loom
