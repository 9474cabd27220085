// The op table of ops.def as an array of OpInfo.
#include "loom/ir/op.hpp"

#include <array>
#include <cstddef>

namespace loom::ir {
namespace {

// The Ulp column of a row: Ulp(f32, f64), or UlpAfter(part, steps) for a composite, resolved below.
constexpr UlpBound Ulp(double f32, double f64) {
    return UlpBound{f32, f64, false, Op{}, 0};
}
constexpr UlpBound UlpAfter(Op part, int steps) {
    return UlpBound{0.0, 0.0, true, part, steps};
}

// Leaves and views compute nothing: exact, no cost, a 0-ulp bound.
constexpr OpInfo kRows[] = {
#define LOOM_LEAF(Id, name) {name, -1, OpKind::Leaf, Rule::None, "", Cost::None, Exactness::Exact, Ulp(0, 0)},
#define LOOM_UNARY_ROW(Id, name, R, cuda, C, X, U) \
    {name, 1, OpKind::Unary, Rule::R, cuda, Cost::C, Exactness::X, U},
#define LOOM_BINARY_ROW(Id, name, R, cuda, C, X, U) \
    {name, 2, OpKind::Binary, Rule::R, cuda, Cost::C, Exactness::X, U},
#define LOOM_TERNARY_ROW(Id, name, R, cuda, C, X, U) \
    {name, 3, OpKind::Ternary, Rule::R, cuda, Cost::C, Exactness::X, U},
#define LOOM_VIEW(Id, name) {name, 1, OpKind::View, Rule::None, "", Cost::None, Exactness::Exact, Ulp(0, 0)},
#define LOOM_REDUCE_ROW(Id, name, R, X, U) \
    {name, 1, OpKind::Reduce, Rule::R, "", Cost::None, Exactness::X, U},
#define LOOM_PRODUCT_ROW(Id, name, R, X, U) \
    {name, 2, OpKind::Product, Rule::R, "", Cost::None, Exactness::X, U},
#define LOOM_GATHER(Id, name) \
    {name, 2, OpKind::Gather, Rule::None, "", Cost::None, Exactness::Exact, Ulp(0, 0)},
#define LOOM_ATTENTION(Id, name) \
    {name, -1, OpKind::Attention, Rule::None, "", Cost::None, Exactness::Rounded, Ulp(0, 0)},
#define LOOM_SCAN(Id, name) \
    {name, 1, OpKind::Scan, Rule::None, "", Cost::None, Exactness::Rounded, Ulp(0, 0)},
#define LOOM_SCATTER(Id, name) \
    {name, 3, OpKind::Scatter, Rule::None, "", Cost::None, Exactness::Rounded, Ulp(0, 0)},
#include "loom/ir/ops.def"
};
constexpr std::size_t kCount = std::size(kRows);

// A composite's bound: its part's plus one ulp per rounded step after it.
constexpr std::array<OpInfo, kCount> resolve() {
    std::array<OpInfo, kCount> out{};
    for (std::size_t k = 0; k < kCount; ++k) {
        out[k] = kRows[k];
        UlpBound& b = out[k].gpu_ulp;
        if (b.composite) {
            const UlpBound& p = kRows[static_cast<std::size_t>(b.part)].gpu_ulp;
            b.f32 = p.f32 + static_cast<double>(b.steps);
            b.f64 = p.f64 + static_cast<double>(b.steps);
        }
    }
    return out;
}
constexpr std::array<OpInfo, kCount> kInfos = resolve();

// What every row must state.
constexpr bool rows_are_complete() {
    for (const OpInfo& r : kRows) {
        const bool elementwise =
            r.kind == OpKind::Unary || r.kind == OpKind::Binary || r.kind == OpKind::Ternary;
        if (elementwise != (r.cost != Cost::None))
            return false;  // elementwise ops, and only they, have a cost class
        const UlpBound& b = r.gpu_ulp;
        if (b.composite) {
            const std::size_t p = static_cast<std::size_t>(b.part);
            if (p >= kCount || kRows[p].gpu_ulp.composite || b.steps < 0) return false;
        } else if (!(b.f32 >= 0.0 && b.f64 >= 0.0)) {
            return false;
        }
        if (r.exactness == Exactness::Exact && (b.composite || b.f32 != 0.0 || b.f64 != 0.0)) return false;
    }
    return true;
}
static_assert(rows_are_complete(), "ops.def: a row lacks a cost class, or states a bad ulp bound");

}  // namespace

const OpInfo& info(Op op) {
    return kInfos[static_cast<std::size_t>(op)];
}
std::string_view causal_mask_name(CausalMask m) {
    switch (m) {
        case CausalMask::None:
            return "none";
        case CausalMask::TopLeft:
            return "top_left";
        case CausalMask::BottomRight:
            return "bottom_right";
    }
    return "causal";
}
std::string_view gather_api_name(GatherApi api) {
    switch (api) {
        case GatherApi::Take:
            return "take";
        case GatherApi::TakeAlongAxis:
            return "take_along_axis";
        case GatherApi::IndexSelect:
            return "index_select";
        case GatherApi::OneHot:
            return "one_hot";
        case GatherApi::CrossEntropy:
            return "cross_entropy";
        case GatherApi::Scatter:
            return "scatter";
        case GatherApi::ScatterAdd:
            return "scatter_add";
        case GatherApi::IndexAdd:
            return "index_add";
    }
    return "gather";
}
int num_ops() {
    return static_cast<int>(kCount);
}

}  // namespace loom::ir
