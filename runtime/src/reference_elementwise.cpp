// Whole-array loops of the CPU reference evaluator for every elementwise op, one loop per node, built from
// the same per-element templates as constant folding (loom/ir/elementwise_impl.hpp).
#include <fmt/format.h>

#include <vector>

#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/error.hpp"
#include "parallel.hpp"
#include "reference_internal.hpp"

namespace loom::reference::detail {
namespace {

using ir::Op;
using ir::Rule;
namespace ew = ir::ew;

/// A loop over n contiguous elements: in[k] points at operand k's storage elements, out at the result's.
using Kernel = void (*)(const void* const* in, void* out, std::int64_t n);

template <Op op, DType In, DType Out>
void kernel(const void* const* in, void* out, std::int64_t n) {
    using SI = ew::storage_t<In>;
    auto* o = static_cast<ew::storage_t<Out>*>(out);
    const auto* a = static_cast<const SI*>(in[0]);
    constexpr Rule rule = ew::rule_of(op);
    if constexpr (op == Op::Cast) {
        for (std::int64_t i = 0; i < n; ++i) o[i] = ew::store<Out>(ew::cast<Out, In>(ew::load<In>(a[i])));
    } else if constexpr (rule == Rule::ToBool) {
        for (std::int64_t i = 0; i < n; ++i) o[i] = ew::unary_to_bool<op>(ew::load<In>(a[i])) ? 1 : 0;
    } else if constexpr (ew::kind_of(op) == ir::OpKind::Unary) {
        for (std::int64_t i = 0; i < n; ++i) o[i] = ew::store<Out>(ew::unary<op>(ew::load<In>(a[i])));
    } else if constexpr (rule == Rule::Compare) {
        const auto* b = static_cast<const SI*>(in[1]);
        for (std::int64_t i = 0; i < n; ++i)
            o[i] = ew::compare<op>(ew::load<In>(a[i]), ew::load<In>(b[i])) ? 1 : 0;
    } else if constexpr (rule == Rule::Random) {
        const auto* b = static_cast<const SI*>(in[1]);
        for (std::int64_t i = 0; i < n; ++i) o[i] = ew::store<Out>(ew::random<op, Out>(a[i], b[i]));
    } else if constexpr (op == Op::Where) {
        const auto* c = static_cast<const std::uint8_t*>(in[0]);
        const auto* x = static_cast<const SI*>(in[1]);
        const auto* y = static_cast<const SI*>(in[2]);
        for (std::int64_t i = 0; i < n; ++i) o[i] = ew::where(c[i], x[i], y[i]);
    } else if constexpr (rule == Rule::FloatArith || rule == Rule::Clamp) {
        const auto* b = static_cast<const SI*>(in[1]);
        const auto* c = static_cast<const SI*>(in[2]);
        for (std::int64_t i = 0; i < n; ++i)
            o[i] =
                ew::store<Out>(ew::ternary<op>(ew::load<In>(a[i]), ew::load<In>(b[i]), ew::load<In>(c[i])));
    } else {
        const auto* b = static_cast<const SI*>(in[1]);
        for (std::int64_t i = 0; i < n; ++i)
            o[i] = ew::store<Out>(ew::binary<op>(ew::load<In>(a[i]), ew::load<In>(b[i])));
    }
}

/// Whether op is defined on operand dtype D (per its typing rule); only those loops are instantiated.
template <Op op, DType D>
constexpr bool defined_on() {
    switch (ew::rule_of(op)) {
        case Rule::Numeric:
        case Rule::Arith:
        case Rule::Clamp:
            return D != DType::Bool;
        case Rule::FloatMath:
        case Rule::FloatArith:
        case Rule::Rounding:
            return is_float(D);
        case Rule::ToBool:
        case Rule::Compare:
        case Rule::Select:
        case Rule::Cast:
            return true;
        case Rule::Logical:
            return D == DType::Bool;
        case Rule::Bitwise:
            return !is_float(D);
        case Rule::Shift:
            return is_integer(D);
        case Rule::Random:
            return D == DType::Int64;
        case Rule::None:
        case Rule::SumProd:
        case Rule::MinMax:
        case Rule::Mean:
        case Rule::ArgMinMax:
        case Rule::AnyAll:
        case Rule::MatMul:
            return false;
    }
    return false;
}

template <Op op>
Kernel select_op(DType in, DType out) {
    if constexpr (op == Op::Cast) {
        return ew::visit_dtype(in, [&]<DType I>() {
            return ew::visit_dtype(out, [&]<DType O>() -> Kernel { return &kernel<op, I, O>; });
        });
    } else if constexpr (ew::rule_of(op) == Rule::Random) {
        if (in != DType::Int64) return nullptr;
        return ew::visit_dtype(out, [&]<DType O>() -> Kernel {
            if constexpr (is_float(O))
                return &kernel<op, DType::Int64, O>;
            else
                return nullptr;
        });
    } else {
        return ew::visit_dtype(in, [&]<DType I>() -> Kernel {
            if constexpr (defined_on<op, I>()) {
                constexpr Rule rule = ew::rule_of(op);
                constexpr DType O = (rule == Rule::ToBool || rule == Rule::Compare) ? DType::Bool : I;
                if (out != O) return nullptr;
                return &kernel<op, I, O>;
            } else {
                return nullptr;
            }
        });
    }
}

Kernel select(Op op, DType in, DType out) {
    switch (op) {
#define LOOM_LEAF(Id, name) case Op::Id:
#define LOOM_VIEW(Id, name) case Op::Id:
#define LOOM_REDUCE(Id, name, Rule) case Op::Id:
#define LOOM_PRODUCT(Id, name, Rule) case Op::Id:
#define LOOM_GATHER(Id, name) case Op::Id:
#define LOOM_ATTENTION(Id, name) case Op::Id:
#define LOOM_SCAN(Id, name) case Op::Id:
#define LOOM_SCATTER(Id, name) case Op::Id:
#include "loom/ir/ops.def"
        return nullptr;
#define LOOM_UNARY(Id, name, Rule, cuda) \
    case Op::Id:                         \
        return select_op<Op::Id>(in, out);
#define LOOM_BINARY(Id, name, Rule, cuda) \
    case Op::Id:                          \
        return select_op<Op::Id>(in, out);
#define LOOM_TERNARY(Id, name, Rule, cuda) \
    case Op::Id:                           \
        return select_op<Op::Id>(in, out);
#include "loom/ir/ops.def"
    }
    return nullptr;
}

/// Runs `k` over every element: contiguous operands are read in place, others gathered block by block.
Tensor run(Kernel k, const Shape& shape, const std::vector<Tensor>& args, DType out_dtype) {
    Tensor out = Tensor::host(shape, out_dtype);
    const std::int64_t n = out.numel();
    std::vector<Layout> layouts;
    for (const auto& a : args) {
        if (a.numel() != n)
            throw InternalError("reference: elementwise operand of another size than its node");
        layouts.push_back(Layout::of(a));
    }
    char* dst = static_cast<char*>(out.data());
    const auto out_esz = static_cast<std::int64_t>(itemsize(out_dtype));
    loom::detail::parallel_for(n, kBlock, [&](std::int64_t b, std::int64_t e) {
        thread_local std::vector<std::uint64_t> scratch[3];
        const void* in[3] = {nullptr, nullptr, nullptr};
        for (std::size_t k = 0; k < layouts.size(); ++k) {
            const Layout& l = layouts[k];
            if (l.contiguous) {
                in[k] = l.base + b * static_cast<std::int64_t>(l.esz);
            } else {
                scratch[k].resize(static_cast<std::size_t>(kBlock));
                gather(l, b, e - b, scratch[k].data());
                in[k] = scratch[k].data();
            }
        }
        k(in, dst + b * out_esz, e - b);
    });
    return out;
}

}  // namespace

Tensor eval_elementwise_node(const ir::Node& n, const std::vector<Tensor>& args, DType out) {
    const DType in = n.op() == Op::Where ? args.at(1).dtype() : args.at(0).dtype();
    Kernel k = select(n.op(), in, out);
    if (!k)
        throw InternalError(fmt::format("reference: no loop for {} on {} giving {}", ir::op_name(n.op()),
                                        name(in), name(out)));
    return run(k, n.shape(), args, out);
}

Tensor cast_tensor(const Tensor& t, DType to) {
    Kernel k = select(Op::Cast, t.dtype(), to);
    return run(k, t.shape(), {t}, to);
}

}  // namespace loom::reference::detail
