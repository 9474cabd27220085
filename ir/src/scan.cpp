// Scans: the ops cumsum, cumprod, cummax, cummin and logcumsumexp (kind Scan) and their constructor's
// checks. docs/semantics.md, "Scans".
#include <fmt/format.h>

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
