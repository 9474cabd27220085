// GPT-2 small's transformer block forward (samples/gpt2_block.cpp, bench row B1/B2): its weights and the
// block as Loom expressions, shared by the sample and the benchmark.
#pragma once

#include <cmath>
#include <cstdint>
#include <loom/loom.hpp>
#include <vector>

namespace gpt2 {

using namespace loom;

constexpr std::int64_t C = 768, NH = 12, HS = C / NH;

enum class Form { Attention, Written, Rewrite };

struct Weights {
    std::vector<Tensor> all;  // ln1w ln1b wqkv bqkv wproj bproj ln2w ln2b wfc bfc wfp bfp
};

inline Weights weights(DType dt, Device dev) {
    std::uint64_t seed = 100;
    const auto w = [&](const Shape& s, double scale = 0.02) {
        return Tensor(astype(random_normal(s, float32, seed++, dev) * scale, dt));
    };
    const auto gain = [&] {
        return Tensor(astype(1.0 + random_normal({C}, float32, seed++, dev) * 0.1, dt));
    };
    return {{gain(), w({C}), w({C, 3 * C}), w({3 * C}), w({C, C}), w({C}), gain(), w({C}), w({C, 4 * C}),
             w({4 * C}), w({4 * C, C}), w({C})}};
}

// The block on x [B, T, C] and the 12 parameters, with attention as `form` asks (the written-out mask's
// indices on `dev`).
inline Array block(const Array& x, const std::vector<Array>& p, Form form, Device dev) {
    const std::int64_t B = x.shape()[0], T = x.shape()[1];
    const Array h = layernorm(x, p[0], p[1], 1e-5);
    const Array qkv = matmul(h, p[2]) + p[3];
    const auto head = [&](std::int64_t j) {
        return qkv.slice({{}, {}, {j * C, (j + 1) * C}}).reshape({B, T, NH, HS}).permute({0, 2, 1, 3});
    };
    const Array q = head(0), k = head(1), v = head(2);
    Array y;
    if (form == Form::Attention) {
        y = attention(q, k, v, {.causal = CausalMask::TopLeft});
    } else {
        const Array row = arange(T, int64, dev).reshape({T, 1}), col = arange(T, int64, dev).reshape({1, T});
        const Array scores = matmul(q, k.transposed()) * (1.0 / std::sqrt(static_cast<double>(HS)));
        y = matmul(softmax(where(col <= row, scores, -INFINITY), -1).astype(x.dtype()), v);
    }
    const Array x2 = x + (matmul(y.permute({0, 2, 1, 3}).reshape({B, T, C}), p[4]) + p[5]);
    const Array h2 = gelu_tanh(matmul(layernorm(x2, p[6], p[7], 1e-5), p[8]) + p[9]);
    return x2 + (matmul(h2, p[10]) + p[11]);
}

inline Options options_for(Form form) {
    Options o = current_options();
    o.attention_rewrite = form == Form::Rewrite;
    return o;
}

// The block as a traced function of x and the 12 parameters, under the options current where it is made.
inline auto traced_block(Form form, Device dev) {
    return function("gpt2_block", [form, dev](Array x, Array ln1w, Array ln1b, Array wqkv, Array bqkv,
                                              Array wproj, Array bproj, Array ln2w, Array ln2b, Array wfc,
                                              Array bfc, Array wfp, Array bfp) {
        return block(x, {ln1w, ln1b, wqkv, bqkv, wproj, bproj, ln2w, ln2b, wfc, bfc, wfp, bfp}, form, dev);
    });
}

// One call of a traced block on x with the weights `w`.
template <class F>
Tensor call(F& f, const Tensor& x, const Weights& w) {
    const std::vector<Tensor>& p = w.all;
    return f(x, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11]);
}

}  // namespace gpt2
