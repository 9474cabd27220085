// Internal: the accumulators of the host reductions in LLVM IR, width-generic: their types, the identity,
// one element's contribution, the combination of two partials and the finished value, each exactly the
// reference's (runtime/src/reference_reduce.cpp, Reducer) so that every lane, butterfly step and tree node
// gives the reference's bits.
#pragma once

#include <string>

#include "llvm_ir.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"

namespace loom::codegen::llvm_ir {

/// A partial accumulator: its value and, for argmin/argmax, its index (i64; -1: no element yet).
struct Acc {
    std::string v;
    std::string i;
};

/// The accumulator of one reduction: A, its IR type (the operand's compute type for floats, min and max; i64
/// for sums, products and means of integers and bool; i8 for any and all).
struct LaneAccumulator {
    ReduceOpPlan op;
    std::string a;  // scalar IR type of the value
    std::string c;  // scalar IR type of the operand's compute values
    bool arg = false;

    explicit LaneAccumulator(const ReduceOpPlan& op);
    std::string type(int w) const { return vec(a, w); }
    /// Bytes of one value lane.
    int bytes() const { return bytes_of(a); }

    Acc identity(int w) const;
    /// The contribution of operand values `x` (compute type of op.in, width w) at reduced indices `index`
    /// (i64 at width w; used by argmin/argmax only).
    Acc element(Builder& b, const std::string& x, const std::string& index, int w,
                std::string_view hint) const;
    /// a ⊕ b (a first: argmin/argmax prefer a on ties of index order).
    Acc combine(Builder& b, const Acc& x, const Acc& y, int w, std::string_view hint) const;
    /// The reduced value from the final accumulator (a compute value of op.out): the empty sum +0, the mean's
    /// one division, one rounding to a half dtype, the index of argmin/argmax. `count` is L (i64).
    std::string finish(Builder& b, const Acc& acc, const std::string& count, int w,
                       std::string_view hint) const;

    Acc load(Builder& b, const std::string& vptr, const std::string& iptr, int w,
             std::string_view hint) const;
    void store(Builder& b, const Acc& x, const std::string& vptr, const std::string& iptr, int w) const;
};

}  // namespace loom::codegen::llvm_ir
