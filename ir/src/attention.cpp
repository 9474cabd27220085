// Attention: the one IR op (Op::Attention) and its constructor's checks. docs/semantics.md, "Attention".
#include <fmt/format.h>

#include <cmath>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"

namespace loom::ir {

namespace {

[[noreturn]] void fail(const Loc& loc, const std::string& msg) {
    throw Error(fmt::format("attention(): {} ({})", msg, short_location(loc)));
}

std::string operands_text(const Node& q, const Node& k, const Node& v) {
    return fmt::format("q {}, k {}, v {}", describe(q), describe(k), describe(v));
}

}  // namespace

std::string attention_attributes(const Node& n) {
    const CausalMask m = attention_causal(n);
    return fmt::format("scale={}{}{}", attention_scale(n),
                       m == CausalMask::None ? "" : fmt::format(" causal={}", causal_mask_name(m)),
                       n.operands().size() == 4 ? " bias" : "");
}

NodePtr attention(NodePtr q, NodePtr k, NodePtr v, NodePtr bias, CausalMask causal, double scale, Loc loc) {
    const std::string ops = operands_text(*q, *k, *v);
    const int r = q->rank();
    if (r < 3 || k->rank() != r || v->rank() != r)
        fail(loc,
             fmt::format("q, k and v must have one rank of 3 or more ([B..., H, T, D] and [B..., Hkv, S, "
                         "D]): {}",
                         ops));
    const DType dt = q->dtype();
    if (dt != DType::Float32 && dt != DType::Float16 && dt != DType::BFloat16)
        fail(loc, fmt::format("q, k and v must be float32, float16 or bfloat16: {}", ops));
    if (k->dtype() != dt || v->dtype() != dt) fail(loc, fmt::format("q, k and v differ in dtype: {}", ops));
    const auto ax = [&](const Node& n, int from_end) {
        return n.shape()[static_cast<std::size_t>(r - from_end)];
    };
    for (int d = 0; d + 3 < r; ++d)
        if (q->shape()[static_cast<std::size_t>(d)] != k->shape()[static_cast<std::size_t>(d)] ||
            q->shape()[static_cast<std::size_t>(d)] != v->shape()[static_cast<std::size_t>(d)])
            fail(loc, fmt::format("the batch axes of q, k and v differ: {}", ops));
    const std::int64_t H = ax(*q, 3), D = ax(*q, 1);
    const std::int64_t Hkv = ax(*k, 3), S = ax(*k, 2);
    if (ax(*v, 3) != Hkv || ax(*v, 2) != S || ax(*k, 1) != D || ax(*v, 1) != D)
        fail(loc, fmt::format("k and v must be [B..., Hkv, S, D] with q's D: {}", ops));
    if (D < 1 || D > kAttentionMaxHeadDim)
        fail(loc,
             fmt::format("the head dimension D = {} is outside 1 to {}: {}", D, kAttentionMaxHeadDim, ops));
    if (Hkv == 0 ? H != 0 : H % Hkv != 0)
        fail(loc, fmt::format("q's {} heads are not a multiple of k's and v's {}: {}", H, Hkv, ops));
    if (causal != CausalMask::None && causal != CausalMask::TopLeft && causal != CausalMask::BottomRight)
        fail(loc, fmt::format("causal mask {} is none of none, top_left and bottom_right",
                              static_cast<int>(causal)));
    const float s32 = static_cast<float>(scale);
    if (!std::isfinite(s32)) fail(loc, fmt::format("the scale {} is not a finite float32", scale));
    Shape scores = q->shape();
    scores.back() = S;
    std::vector<NodePtr> operands{std::move(q), std::move(k), std::move(v)};
    if (bias) {
        if (bias->dtype() != dt)
            fail(loc, fmt::format("the bias {} must have q's dtype {}", describe(*bias), name(dt)));
        Shape both;
        if (bias->rank() > r || !broadcast_shapes(bias->shape(), scores, both) || both != scores)
            fail(loc, fmt::format("the bias {} does not broadcast to the scores {} ([B..., H, T, S]); {}",
                                  describe(*bias), loom::to_string(scores), ops));
        operands.push_back(broadcast_to(std::move(bias), scores, loc));
    }
    NodeDesc d;
    d.op = Op::Attention;
    d.dtype = dt;
    d.shape = operands[0]->shape();
    d.operands = std::move(operands);
    d.ints = {static_cast<std::int64_t>(causal)};
    d.value = ScalarValue::of_float(static_cast<double>(s32));
    d.loc = loc;
    return intern(std::move(d));
}

}  // namespace loom::ir
