// The CPU reference of the scatters (scatter, scatter_add; docs/semantics.md, "Scatters"): the indices
// checked in row-major order of the values, then scatter's writes in that order (the largest position along
// the axis written last) and scatter_add's sums in the contract's order: per target, its values in ascending
// position, in chunks of kColumnChunk accumulated one after the other, the chunk partials combined by
// pairwise_tree, then added to x once.
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/half.hpp"
#include "loom/ir/reduce_order.hpp"
#include "reference_internal.hpp"

namespace loom::reference::detail {

namespace {

// How one dtype's elements load into the accumulator and the result stores: floats in float32 (halves too)
// or float64 starting from -0.0; integers and bool in int64, wrapping, the result converted as a cast does.
template <DType D>
struct Acc;
template <>
struct Acc<DType::Float32> {
    using T = float;
    static T load(const char* p) { return *reinterpret_cast<const float*>(p); }
    static void store(char* p, T v) { std::memcpy(p, &v, 4); }
    static T zero() { return -0.0f; }
    static T add(T a, T b) { return a + b; }
};
template <>
struct Acc<DType::Float64> {
    using T = double;
    static T load(const char* p) { return *reinterpret_cast<const double*>(p); }
    static void store(char* p, T v) { std::memcpy(p, &v, 8); }
    static T zero() { return -0.0; }
    static T add(T a, T b) { return a + b; }
};
template <>
struct Acc<DType::Float16> {
    using T = float;
    static T load(const char* p) { return half_bits_to_float(*reinterpret_cast<const std::uint16_t*>(p)); }
    static void store(char* p, T v) {
        const std::uint16_t b = float_to_half_bits(v);
        std::memcpy(p, &b, 2);
    }
    static T zero() { return -0.0f; }
    static T add(T a, T b) { return a + b; }
};
template <>
struct Acc<DType::BFloat16> {
    using T = float;
    static T load(const char* p) { return bf16_bits_to_float(*reinterpret_cast<const std::uint16_t*>(p)); }
    static void store(char* p, T v) {
        const std::uint16_t b = float_to_bf16_bits(v);
        std::memcpy(p, &b, 2);
    }
    static T zero() { return -0.0f; }
    static T add(T a, T b) { return a + b; }
};
template <class I>
struct IntAcc {
    using T = std::uint64_t;  // int64 arithmetic, wrapping
    static T load(const char* p) {
        I v;
        std::memcpy(&v, p, sizeof v);
        return static_cast<T>(static_cast<std::int64_t>(v));
    }
    static void store(char* p, T v) {
        const I r = static_cast<I>(v);  // modulo 2^bits, as cast does
        std::memcpy(p, &r, sizeof r);
    }
    static T zero() { return 0; }
    static T add(T a, T b) { return a + b; }
};
template <>
struct Acc<DType::Int8> : IntAcc<std::int8_t> {};
template <>
struct Acc<DType::UInt8> : IntAcc<std::uint8_t> {};
template <>
struct Acc<DType::Int32> : IntAcc<std::int32_t> {};
template <>
struct Acc<DType::Int64> : IntAcc<std::int64_t> {};
template <>
struct Acc<DType::Bool> : IntAcc<std::uint8_t> {
    static void store(char* p, T v) { *p = v != 0 ? 1 : 0; }  // truthiness, as cast to bool
};

// scatter_add over the values grouped by target: `order` lists the value elements target after target (each
// target's in ascending position), `begin` where each target's run starts (size targets + 1).
template <DType D>
void add_runs(const char* x, const char* v, char* out, std::size_t esz,
              const std::vector<std::int64_t>& order, const std::vector<std::int64_t>& begin) {
    using A = Acc<D>;
    using T = typename A::T;
    std::vector<T> partials;
    const std::size_t targets = begin.size() - 1;
    for (std::size_t t = 0; t < targets; ++t) {
        const std::int64_t b = begin[t], e = begin[t + 1];
        if (b == e) continue;  // no value lands: x's element, bit for bit (already in `out`)
        partials.clear();
        for (std::int64_t c = b; c < e; c += kColumnChunk) {
            T acc = A::zero();
            for (std::int64_t k = c; k < std::min(e, c + kColumnChunk); ++k)
                acc = A::add(acc,
                             A::load(v + static_cast<std::size_t>(order[static_cast<std::size_t>(k)]) * esz));
            partials.push_back(acc);
        }
        const T s = pairwise_tree(std::span<T>(partials), [](T a, T c) { return A::add(a, c); });
        A::store(out + t * esz, A::add(A::load(x + t * esz), s));
    }
}

}  // namespace

Tensor eval_scatter_node(const ir::Node& n, const Tensor& x, const Tensor& idx, const Tensor& values,
                         DType out) {
    if (x.dtype() != out || values.dtype() != out)
        throw InternalError(fmt::format("reference: {} of {} and {} into {}", ir::op_name(n.op()),
                                        name(x.dtype()), name(values.dtype()), name(out)));
    const auto axis = static_cast<std::size_t>(ir::scatter_axis(n));
    const ir::IndexMode mode = ir::scatter_mode(n);
    const Tensor xs = materialize(x), is = materialize(idx), vs = materialize(values);
    Tensor result = Tensor::host(n.shape(), out);
    const std::size_t esz = itemsize(out);
    if (result.nbytes() > 0) std::memcpy(result.data(), xs.data(), result.nbytes());
    const Shape& vsh = values.shape();
    const std::int64_t total = values.numel();
    if (total == 0) return result;
    std::int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= vsh[d];
    for (std::size_t d = axis + 1; d < vsh.size(); ++d) inner *= vsh[d];
    const std::int64_t m = vsh[axis], extent = x.shape()[axis];
    // Each value's target element of the result, checked in row-major order of the values.
    std::vector<std::int64_t> target(static_cast<std::size_t>(total));
    const bool wide = is.dtype() == DType::Int64;
    const auto* ib = static_cast<const char*>(is.data());
    for (std::int64_t e = 0; e < total; ++e) {
        std::int64_t v = 0;
        if (wide) {
            std::memcpy(&v, ib + e * 8, 8);
        } else {
            std::int32_t w = 0;
            std::memcpy(&w, ib + e * 4, 4);
            v = w;
        }
        const std::int64_t k = ir::gather_index(v, extent, mode);
        if (k < 0) throw Error(ir::gather_error_message(n, v));
        const std::int64_t o = e / (m * inner), c = e % inner;
        target[static_cast<std::size_t>(e)] = (o * extent + k) * inner + c;
    }
    const auto* vb = static_cast<const char*>(vs.data());
    auto* rb = static_cast<char*>(result.data());
    if (n.op() == ir::Op::Scatter) {
        // Row-major order visits a column's positions in ascending order: the largest is written last.
        for (std::int64_t e = 0; e < total; ++e)
            std::memcpy(rb + static_cast<std::size_t>(target[static_cast<std::size_t>(e)]) * esz,
                        vb + static_cast<std::size_t>(e) * esz, esz);
        return result;
    }
    // A stable counting sort of the values by target: each target's run in ascending position.
    const auto targets = static_cast<std::size_t>(n.numel());
    std::vector<std::int64_t> begin(targets + 1, 0), order(static_cast<std::size_t>(total));
    for (const std::int64_t t : target) ++begin[static_cast<std::size_t>(t) + 1];
    for (std::size_t t = 0; t < targets; ++t) begin[t + 1] += begin[t];
    std::vector<std::int64_t> next(begin.begin(), begin.end() - 1);
    for (std::int64_t e = 0; e < total; ++e)
        order[static_cast<std::size_t>(
            next[static_cast<std::size_t>(target[static_cast<std::size_t>(e)])]++)] = e;
    const auto* xb = static_cast<const char*>(xs.data());
    switch (out) {
        case DType::Bool:
            add_runs<DType::Bool>(xb, vb, rb, esz, order, begin);
            break;
        case DType::Int8:
            add_runs<DType::Int8>(xb, vb, rb, esz, order, begin);
            break;
        case DType::UInt8:
            add_runs<DType::UInt8>(xb, vb, rb, esz, order, begin);
            break;
        case DType::Int32:
            add_runs<DType::Int32>(xb, vb, rb, esz, order, begin);
            break;
        case DType::Int64:
            add_runs<DType::Int64>(xb, vb, rb, esz, order, begin);
            break;
        case DType::Float16:
            add_runs<DType::Float16>(xb, vb, rb, esz, order, begin);
            break;
        case DType::BFloat16:
            add_runs<DType::BFloat16>(xb, vb, rb, esz, order, begin);
            break;
        case DType::Float32:
            add_runs<DType::Float32>(xb, vb, rb, esz, order, begin);
            break;
        case DType::Float64:
            add_runs<DType::Float64>(xb, vb, rb, esz, order, begin);
            break;
    }
    return result;
}

}  // namespace loom::reference::detail
