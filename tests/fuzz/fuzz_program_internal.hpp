// Internals of the fuzzer's random programs, shared by fuzz_program.cpp (building, approximation levels),
// fuzz_program_inputs.cpp (input tensors), fuzz_program_generate.cpp (the draws the generators share, the
// pointwise generator), fuzz_program_reduce.cpp (the reduction generator) and fuzz_program_matmul.cpp (the
// product generator). Not for the fuzzers' drivers, which use fuzz_program.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fuzz_program.hpp"
#include "loom/ir/node.hpp"
#include "loom/ir/op.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::fuzz {

using Rng = std::mt19937_64;

inline int uniform(Rng& g, int lo, int hi) {
    return lo + static_cast<int>(g() % static_cast<std::uint64_t>(hi - lo + 1));
}
inline bool chance(Rng& g, double p) {
    return static_cast<double>(g() >> 11) * 0x1.0p-53 < p;
}
template <class T>
const T& pick(Rng& g, const std::vector<T>& v) {
    return v[static_cast<std::size_t>(g() % v.size())];
}

// fuzz_program_generate.cpp: draws the generators share.

/// A random value of `t`; `tame` (reduction programs): floats rarely special and never near the overflow
/// threshold.
ir::ScalarValue random_value(Rng& g, DType t, bool tame = false);
/// Every elementwise op but Cast.
std::vector<ir::Op> elementwise_ops();
/// An operand index among the first `n` instructions, biased towards recent ones.
int operand(Rng& g, std::size_t n);

// fuzz_program_inputs.cpp.

/// A tensor of `shape` laid out as `layout` over freshly filled storage on `device`.
Tensor make_tensor(const Shape& shape, DType d, Layout layout, std::uint64_t key, std::uint64_t seed,
                   bool tame, Device device, Layout* used);

// fuzz_program_reduce.cpp.

/// A random reduction program from `seed` (generate() for the seeds of is_reduction_seed()).
Program generate_reductions(std::uint64_t seed, const GenOptions& opt);

// fuzz_program_matmul.cpp.

/// A random product program from `seed` (generate() for the seeds of is_product_seed()).
Program generate_products(std::uint64_t seed, const GenOptions& opt);
/// A random attention program from `seed` (generate() for the product seeds of is_attention_seed()).
Program generate_attention(std::uint64_t seed, const GenOptions& opt);

// fuzz_program.cpp: the build state, and the facts the approximation levels of reduction programs rely on.

/// What the rules for approximate values of reduction programs know about a float node's values (NaN is
/// allowed in each).
struct Facts {
    bool nonneg = false;  // every value >= 0
    bool nonpos = false;  // every value <= 0
    bool unit = false;    // every value in [-1, 1]
    bool norm = false;    // a * rsqrt(mean(a * a, keepdims) + s) with s > 0, possibly times level-0 values
    bool steady = false;  // approximate, but never 0 on one side only (rsqrt and products of such values)
};

/// Incremental build state (generation adds instructions one by one; build() adds them all).
struct State {
    std::vector<ir::NodePtr> nodes;
    std::vector<int> level;
    std::vector<Facts> facts;
    std::vector<bool> has_input;
    std::vector<bool> has_reduce;  // a reduction on some path from the inputs
    std::vector<std::string> input_lines;
    int inputs = 0;

    /// Adds instruction `i` of `p`; false when it is not valid. `bind`: make tensors on `device`.
    bool add(const Program& p, std::size_t i, bool bind, Device device);

    /// Forgets instructions from `n` on (generation backs out of a pattern that did not build).
    void truncate(const Program& p, std::size_t n);

  private:
    static bool is(const Program& p, int i, Instr::Kind k, ir::Op op);
    static bool is_ew(const Program& p, int i, ir::Op op) { return is(p, i, Instr::Kind::Elementwise, op); }
    static bool is_red(const Program& p, int i, ir::Op op);
    static bool is_positive_leaf(const Program& p, int i);
    const Instr& at(const Program& p, int i) const { return p.code[static_cast<std::size_t>(i)]; }
    const Facts& f(int i) const { return facts[static_cast<std::size_t>(i)]; }
    bool exact(int i) const { return level[static_cast<std::size_t>(i)] == 0; }
    const ir::Node& node(int i) const { return *nodes[static_cast<std::size_t>(i)]; }

    bool softmax_sum(const Program& p, int s) const;
    bool normalized(const Program& p, std::size_t i) const;
    Facts facts_of(const Program& p, std::size_t i) const;
    int wide_level(const Program& p, std::size_t i, const std::vector<int>& lv,
                   const std::vector<DType>& dts) const;
};

/// What the reduction and product generators share: the program under generation and its build state.
/// Instructions are kept only when they build and make no node larger than `cap_`; a move that fails backs
/// out to the length it started at.
class GenBase {
  protected:
    Program p_;
    State st_;
    std::int64_t cap_ = std::numeric_limits<std::int64_t>::max();  // the largest node a move may make

    int size() const { return static_cast<int>(p_.code.size()); }
    const ir::Node& node(int i) const { return *st_.nodes[static_cast<std::size_t>(i)]; }
    /// Appends `ins`: its index, or -1 (nothing appended) when it does not build or is larger than the cap.
    int emit(Instr ins) {
        p_.code.push_back(std::move(ins));
        const std::size_t i = p_.code.size() - 1;
        if (st_.add(p_, i, false, Device::cpu()) && st_.nodes.back()->numel() <= cap_)
            return static_cast<int>(i);
        st_.truncate(p_, i);
        p_.code.pop_back();
        return -1;
    }
    void back_to(int n) {
        p_.code.resize(static_cast<std::size_t>(n));
        st_.truncate(p_, static_cast<std::size_t>(n));
    }
    /// An elementwise instruction over `args` (-1 when any of them is -1: a failed move's value).
    int ew(ir::Op op, std::vector<int> args) {
        for (int a : args)
            if (a < 0) return -1;
        Instr x;
        x.kind = Instr::Kind::Elementwise;
        x.op = op;
        x.args = std::move(args);
        return emit(x);
    }
};

}  // namespace loom::fuzz
