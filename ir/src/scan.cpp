// Scans: the ops cumsum, cumprod, cummax, cummin and logcumsumexp (kind Scan) and their constructor's
// checks. docs/semantics.md, "Scans".
#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"

namespace loom::ir {

namespace {

[[noreturn]] void fail(Op op, const Loc& loc, const std::string& msg) {
    throw Error(fmt::format("{}(): {} ({})", op_name(op), msg, short_location(loc)));
}

}  // namespace

DType scan_result_dtype(Op op, DType x) {
    if ((op == Op::CumSum || op == Op::CumProd) && !is_float(x)) return DType::Int64;
    return x;
}

ScalarValue scan_identity(Op op, DType out) {
    const bool ints = !is_float(out);
    const auto extreme = [&](bool highest) {
        switch (out) {
            case DType::Bool:
                return ScalarValue::of_int(highest ? 1 : 0);
            case DType::Int8:
                return ScalarValue::of_int(highest ? std::numeric_limits<std::int8_t>::max()
                                                   : std::numeric_limits<std::int8_t>::lowest());
            case DType::UInt8:
                return ScalarValue::of_int(highest ? std::numeric_limits<std::uint8_t>::max() : 0);
            case DType::Int32:
                return ScalarValue::of_int(highest ? std::numeric_limits<std::int32_t>::max()
                                                   : std::numeric_limits<std::int32_t>::lowest());
            default:
                return ScalarValue::of_int(highest ? std::numeric_limits<std::int64_t>::max()
                                                   : std::numeric_limits<std::int64_t>::lowest());
        }
    };
    const double inf = std::numeric_limits<double>::infinity();
    switch (op) {
        case Op::CumSum:
            return ints ? ScalarValue::of_int(0) : ScalarValue::of_float(0.0);
        case Op::CumProd:
            return ints ? ScalarValue::of_int(1) : ScalarValue::of_float(1.0);
        case Op::CumMax:
        case Op::LogCumSumExp:
            return ints ? extreme(false) : ScalarValue::of_float(-inf);
        case Op::CumMin:
            return ints ? extreme(true) : ScalarValue::of_float(inf);
        default:
            throw InternalError(fmt::format("scan_identity: {} is not a scan", op_name(op)));
    }
}

std::string scan_attributes(const Node& n) {
    return fmt::format("axis={}{}", scan_axis(n), scan_exclusive(n) ? " exclusive" : "");
}

NodePtr scan(Op op, NodePtr x, std::int64_t axis, bool exclusive, Loc loc) {
    if (!is_scan(op)) throw InternalError(fmt::format("scan(): {} is not a scan", op_name(op)));
    const int r = x->rank();
    const int a = normalize_axis(axis, r);
    if (a < 0) fail(op, loc, fmt::format("axis {} out of range for operand {}", axis, describe(*x)));
    if (op == Op::LogCumSumExp && !is_float(x->dtype()))
        fail(op, loc, fmt::format("operand {} must be float16, bfloat16, float32 or float64", describe(*x)));
    NodeDesc d;
    d.op = op;
    d.dtype = scan_result_dtype(op, x->dtype());
    d.shape = x->shape();
    d.operands = {std::move(x)};
    d.ints = {a, exclusive ? 1 : 0};
    d.loc = loc;
    return intern(std::move(d));
}

}  // namespace loom::ir
