// Constant folding's view of the elementwise semantics: eval_elementwise on ScalarValue, through the
// templates of elementwise_impl.hpp that the CPU reference evaluator also uses.
#include "loom/ir/elementwise.hpp"

#include <fmt/format.h>

#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/error.hpp"

namespace loom::ir {
namespace {

// A ScalarValue of dtype D as D's compute value (exact: the IR stores values already in the dtype).
template <DType D>
ew::compute_t<D> from_scalar(const ScalarValue& v) {
    using C = ew::compute_t<D>;
    if constexpr (D == DType::Bool)
        return (v.is_float ? v.f != 0.0 : v.i != 0) ? 1 : 0;
    else if constexpr (is_float(D))
        return static_cast<C>(v.is_float ? v.f : static_cast<double>(v.i));
    else if (v.is_float)
        return ew::float_to_int<C>(v.f);
    else
        return static_cast<C>(v.i);
}

// A compute value as a ScalarValue of dtype D, rounded to the dtype once.
template <DType D>
ScalarValue to_scalar(ew::compute_t<D> c) {
    if constexpr (is_float(D))
        return ScalarValue::of_float(static_cast<double>(ew::round_result<D>(c)));
    else
        return ScalarValue::of_int(static_cast<std::int64_t>(c));
}

ScalarValue of_bool(bool b) {
    return ScalarValue::of_int(b ? 1 : 0);
}

void check_same(Op op, DType out, DType in) {
    if (out != in)
        throw InternalError(fmt::format("eval_elementwise: {} with operand dtype {} and result dtype {}",
                                        op_name(op), name(in), name(out)));
}

template <Op op>
ScalarValue eval_unary(DType out, DType in, const ScalarValue* args) {
    if constexpr (op == Op::Cast) {
        return ew::visit_dtype(in, [&]<DType From>() {
            const auto x = from_scalar<From>(args[0]);
            return ew::visit_dtype(out, [&]<DType To>() { return to_scalar<To>(ew::cast<To, From>(x)); });
        });
    } else if constexpr (ew::rule_of(op) == Rule::ToBool) {
        return ew::visit_dtype(
            in, [&]<DType D>() { return of_bool(ew::unary_to_bool<op>(from_scalar<D>(args[0]))); });
    } else {
        check_same(op, out, in);
        return ew::visit_dtype(
            in, [&]<DType D>() { return to_scalar<D>(ew::unary<op>(from_scalar<D>(args[0]))); });
    }
}

template <Op op>
ScalarValue eval_binary(DType out, DType in, const ScalarValue* args) {
    if constexpr (ew::rule_of(op) == Rule::Random) {
        if (in != DType::Int64 || !is_float(out))
            throw InternalError(fmt::format("eval_elementwise: {} of {} operands giving {}", op_name(op),
                                            name(in), name(out)));
        const auto index = from_scalar<DType::Int64>(args[0]), seed = from_scalar<DType::Int64>(args[1]);
        return ew::visit_dtype(out, [&]<DType D>() {
            if constexpr (is_float(D))
                return to_scalar<D>(ew::random<op, D>(index, seed));
            else
                return ScalarValue{};  // not reached: checked above
        });
    }
    return ew::visit_dtype(in, [&]<DType D>() {
        const auto a = from_scalar<D>(args[0]);
        const auto b = from_scalar<D>(args[1]);
        if constexpr (ew::rule_of(op) == Rule::Compare) {
            return of_bool(ew::compare<op>(a, b));
        } else {
            check_same(op, out, in);
            return to_scalar<D>(ew::binary<op>(a, b));
        }
    });
}

template <Op op>
ScalarValue eval_ternary(DType out, DType in, const ScalarValue* args) {
    check_same(op, out, in);
    return ew::visit_dtype(in, [&]<DType D>() {
        if constexpr (op == Op::Where) {
            return to_scalar<D>(ew::where(from_scalar<DType::Bool>(args[0]), from_scalar<D>(args[1]),
                                          from_scalar<D>(args[2])));
        } else {
            return to_scalar<D>(
                ew::ternary<op>(from_scalar<D>(args[0]), from_scalar<D>(args[1]), from_scalar<D>(args[2])));
        }
    });
}

}  // namespace

ScalarValue eval_elementwise(Op op, DType out, DType in, const ScalarValue* args) {
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
        throw InternalError(fmt::format("eval_elementwise: {} is not an elementwise op", op_name(op)));
#define LOOM_UNARY(Id, name, Rule, cuda) \
    case Op::Id:                         \
        return eval_unary<Op::Id>(out, in, args);
#define LOOM_BINARY(Id, name, Rule, cuda) \
    case Op::Id:                          \
        return eval_binary<Op::Id>(out, in, args);
#define LOOM_TERNARY(Id, name, Rule, cuda) \
    case Op::Id:                           \
        return eval_ternary<Op::Id>(out, in, args);
#include "loom/ir/ops.def"
    }
    throw InternalError("eval_elementwise: bad op");
}

}  // namespace loom::ir
