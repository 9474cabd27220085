// Attention (loom::attention; docs/semantics.md, "Attention") on host tensors: the reference against a plain
// float64 evaluation of softmax(q kᵀ · scale + bias) v; both causal alignments with T != S; grouped heads
// equal to repeated kv heads bit for bit; masked keys absent (an Inf or NaN in a masked value never reaches
// the output; a row whose every key is masked gives 0, where softmax gives NaN); NaN in q propagates; views
// as operands read in place (one attention kernel, no copy); the host back end and an unfused run equal the
// reference bit for bit; decoding's split of the keys into chunks against the contract written out here; the
// errors of building one.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "loom/codegen/plan/partition.hpp"
#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

Tensor random_of(const Shape& s, DType t, std::uint64_t seed) {
    return testing::random_tensor(s, t, seed, testing::Random::normal());
}

// Evaluates `y` on the host back end into a poisoned output and checks it against the reference bit for bit.
void check_bits(const Array& y, const char* what) {
    Tensor out = Tensor::host(y.shape(), y.dtype());
    testing::poison(out);
    assign(out, y);
    const Tensor expected = reference::evaluate(y.node());
    const testing::Comparison c = testing::compare(out, expected, testing::Tolerance::exact(), what);
    CHECK_MESSAGE(c.ok, what << ": " << c.message);
}

// softmax(q kᵀ · scale + bias, masked) v in float64 for q [H, T, D], k and v [Hkv, S, D] (float32 values),
// `visible(h, t, s)` the mask; a row without a visible key gives 0.
std::vector<double> naive(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                          const std::function<bool(std::int64_t, std::int64_t, std::int64_t)>& visible,
                          const std::function<double(std::int64_t, std::int64_t, std::int64_t)>& bias = {}) {
    const auto qv = q.to_vector<float>(), kv = k.to_vector<float>(), vv = v.to_vector<float>();
    const std::int64_t H = q.shape()[0], T = q.shape()[1], D = q.shape()[2], Hkv = k.shape()[0],
                       S = k.shape()[1];
    std::vector<double> out(static_cast<std::size_t>(H * T * D), 0.0);
    for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t t = 0; t < T; ++t) {
            const std::int64_t hk = h / (H / Hkv);
            std::vector<double> s(static_cast<std::size_t>(S), -INFINITY);
            double m = -INFINITY;
            for (std::int64_t j = 0; j < S; ++j) {
                if (!visible(h, t, j)) continue;
                double acc = 0;
                for (std::int64_t d = 0; d < D; ++d)
                    acc += double(qv[static_cast<std::size_t>((h * T + t) * D + d)]) *
                           kv[static_cast<std::size_t>((hk * S + j) * D + d)];
                acc *= scale;
                if (bias) acc += bias(h, t, j);
                s[static_cast<std::size_t>(j)] = acc;
                m = std::max(m, acc);
            }
            if (m == -INFINITY) continue;
            double l = 0;
            for (std::int64_t j = 0; j < S; ++j) l += std::exp(s[static_cast<std::size_t>(j)] - m);
            for (std::int64_t j = 0; j < S; ++j) {
                const double p = std::exp(s[static_cast<std::size_t>(j)] - m) / l;
                if (p == 0) continue;
                for (std::int64_t d = 0; d < D; ++d)
                    out[static_cast<std::size_t>((h * T + t) * D + d)] +=
                        p * vv[static_cast<std::size_t>((hk * S + j) * D + d)];
            }
        }
    return out;
}

void check_near(const Tensor& got, const std::vector<double>& want, double tol, const char* what) {
    const auto g = got.to_vector<float>();
    REQUIRE(g.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
        REQUIRE_MESSAGE(std::isfinite(g[i]), what << ": element " << i << " is " << g[i]);
        worst = std::max(worst, std::abs(g[i] - want[i]));
    }
    CHECK_MESSAGE(worst <= tol, what << ": largest error " << worst);
}

// The contract's decoding order (docs/semantics.md, "Decoding") written out for q [H, T, D] and k, v
// [Hkv, S, D] of float32 with an optional bias [T, S]: each chunk of `chunk` keys runs the online order from
// the initial state; the chunks' states combine level by level, (0, 1), (2, 3), ..., an odd last one carried
// up. (The reference combines them as a binary counter, which must be the same tree.)
struct ContractState {
    float m = -INFINITY, l = 0.0f;
    std::vector<float> o;
    bool seen = false;
};
float exp_of(float x) {
    return ir::ew::unary<ir::Op::Exp>(x);
}
float max_nan(float a, float b) {
    return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
}
ContractState combine_of(const ContractState& a, const ContractState& b) {
    if (!b.seen) return a;
    if (!a.seen) return b;
    ContractState r = a;
    r.m = max_nan(a.m, b.m);
    const float c = std::isfinite(r.m) ? r.m : 0.0f;
    const float wa = exp_of(a.m - c), wb = exp_of(b.m - c);
    const float la = a.l * wa, lb = b.l * wb;
    r.l = la + lb;
    for (std::size_t d = 0; d < r.o.size(); ++d) {
        const float x = a.o[d] * wa, y = b.o[d] * wb;
        r.o[d] = x + y;
    }
    return r;
}
std::vector<float> decoding_contract(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                                     CausalMask causal, std::int64_t chunk, const Tensor* bias = nullptr) {
    const auto qv = q.to_vector<float>(), kv = k.to_vector<float>(), vv = v.to_vector<float>();
    const std::vector<float> bv = bias ? bias->to_vector<float>() : std::vector<float>();
    const std::int64_t H = q.shape()[0], T = q.shape()[1], D = q.shape()[2], Hkv = k.shape()[0],
                       S = k.shape()[1];
    std::vector<float> out(static_cast<std::size_t>(H * T * D));
    for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t t = 0; t < T; ++t) {
            const std::int64_t hk = h / (H / Hkv);
            std::vector<ContractState> states;
            for (std::int64_t c0 = 0; c0 < S; c0 += chunk) {
                ContractState st;
                st.o.assign(static_cast<std::size_t>(D), 0.0f);
                for (std::int64_t j0 = c0; j0 < std::min(S, c0 + chunk); j0 += 64) {
                    float sc[64], p[64];
                    bool vis[64];
                    float bm = -INFINITY;
                    bool any = false;
                    for (int jj = 0; jj < 64; ++jj) {
                        const std::int64_t j = j0 + jj;
                        vis[jj] = j < S && ir::attention_visible(causal, t, j, T, S);
                        const float b = vis[jj] && bias ? bv[static_cast<std::size_t>(t * S + j)] : 0.0f;
                        if (b == -INFINITY) vis[jj] = false;
                        if (!vis[jj]) continue;
                        float acc = 0.0f;
                        for (std::int64_t d = 0; d < D; ++d)
                            acc = std::fma(qv[static_cast<std::size_t>((h * T + t) * D + d)],
                                           kv[static_cast<std::size_t>((hk * S + j) * D + d)], acc);
                        acc = acc * scale;
                        if (bias) acc = acc + b;
                        sc[jj] = acc;
                        bm = any ? max_nan(bm, acc) : acc;
                        any = true;
                    }
                    if (!any) continue;
                    const float mn = max_nan(st.m, bm), c = std::isfinite(mn) ? mn : 0.0f;
                    const float alpha = exp_of(st.m - c);
                    for (int jj = 0; jj < 64; ++jj) p[jj] = vis[jj] ? exp_of(sc[jj] - c) : 0.0f;
                    float runs[16];
                    for (int r = 0; r < 16; ++r)
                        runs[r] = ((p[4 * r] + p[4 * r + 1]) + p[4 * r + 2]) + p[4 * r + 3];
                    for (int w = 8; w >= 1; w /= 2)
                        for (int r = 0; r < w; ++r) runs[r] = runs[r] + runs[r + w];
                    const float la = st.l * alpha;
                    st.l = la + runs[0];
                    for (float& x : st.o) x = x * alpha;
                    for (int jj = 0; jj < 64; ++jj)
                        if (vis[jj])
                            for (std::int64_t d = 0; d < D; ++d)
                                st.o[static_cast<std::size_t>(d)] =
                                    std::fma(p[jj], vv[static_cast<std::size_t>((hk * S + j0 + jj) * D + d)],
                                             st.o[static_cast<std::size_t>(d)]);
                    st.m = mn;
                    st.seen = true;
                }
                states.push_back(st);
            }
            while (states.size() > 1) {
                std::vector<ContractState> up;
                for (std::size_t i = 0; i < states.size(); i += 2)
                    up.push_back(i + 1 < states.size() ? combine_of(states[i], states[i + 1]) : states[i]);
                states = up;
            }
            for (std::int64_t d = 0; d < D; ++d)
                out[static_cast<std::size_t>((h * T + t) * D + d)] =
                    states[0].seen ? states[0].o[static_cast<std::size_t>(d)] / states[0].l : 0.0f;
        }
    return out;
}

void check_contract(const Tensor& got, const std::vector<float>& want, const char* what) {
    const auto g = got.to_vector<float>();
    REQUIRE(g.size() == want.size());
    std::int64_t differ = 0;
    for (std::size_t i = 0; i < g.size(); ++i)
        if (std::memcmp(&g[i], &want[i], sizeof(float)) != 0) ++differ;
    CHECK_MESSAGE(differ == 0, what << ": " << differ << " of " << g.size() << " elements differ in bits");
}

}  // namespace

TEST_CASE("attention: the reference is softmax(q kᵀ · scale) v, with and without causal masks") {
    const std::int64_t H = 3, T = 70, S = 131, D = 24;  // T and S not multiples of the key block
    const Tensor q = random_of({H, T, D}, float32, 1), k = random_of({H, S, D}, float32, 2),
                 v = random_of({H, S, D}, float32, 3);
    const double scale = 1.0 / std::sqrt(double(D));
    const auto all = [](std::int64_t, std::int64_t, std::int64_t) { return true; };
    check_near(reference::evaluate(attention(q, k, v).node()), naive(q, k, v, scale, all), 2e-5, "no mask");
    const auto top_left = [](std::int64_t, std::int64_t t, std::int64_t s) { return s <= t; };
    check_near(reference::evaluate(attention(q, k, v, {.causal = CausalMask::TopLeft}).node()),
               naive(q, k, v, scale, top_left), 2e-5, "causal, top-left");
    const auto bottom_right = [&](std::int64_t, std::int64_t t, std::int64_t s) { return s <= t + S - T; };
    check_near(reference::evaluate(attention(q, k, v, {.causal = CausalMask::BottomRight}).node()),
               naive(q, k, v, scale, bottom_right), 2e-5, "causal, bottom-right");
    // More queries than keys, bottom-right: the first T - S queries see no key and give 0.
    const Tensor q2 = random_of({H, 50, D}, float32, 4), k2 = random_of({H, 20, D}, float32, 5),
                 v2 = random_of({H, 20, D}, float32, 6);
    const auto br2 = [](std::int64_t, std::int64_t t, std::int64_t s) { return s <= t - 30; };
    check_near(
        reference::evaluate(attention(q2, k2, v2, {.causal = CausalMask::BottomRight, .scale = 0.3}).node()),
        naive(q2, k2, v2, 0.3, br2), 2e-5, "bottom-right, T > S");
}

TEST_CASE("attention: grouped heads read kv head h / (H / Hkv), bit for bit as repeated heads") {
    const Tensor q = random_of({2, 8, 33, 16}, float32, 7), k = random_of({2, 2, 65, 16}, float32, 8),
                 v = random_of({2, 2, 65, 16}, float32, 9);
    // Each kv head repeated for its 4 query heads: [2, 2, 1, S, D] broadcast to [2, 2, 4, S, D].
    const auto repeat = [](const Tensor& x) {
        return Array(x).reshape({2, 2, 1, 65, 16}).broadcast_to({2, 2, 4, 65, 16}).reshape({2, 8, 65, 16});
    };
    const Tensor grouped = reference::evaluate(attention(q, k, v, {.causal = CausalMask::TopLeft}).node());
    const Tensor repeated =
        reference::evaluate(attention(q, repeat(k), repeat(v), {.causal = CausalMask::TopLeft}).node());
    CHECK(testing::same_bits(grouped, repeated));
    check_bits(attention(q, k, v, {.causal = CausalMask::TopLeft}), "grouped heads on the host");
}

TEST_CASE("attention: masked keys are absent, a fully masked row gives 0, NaN in q propagates") {
    const std::int64_t T = 40, S = 70, D = 8;
    Tensor q = random_of({1, T, D}, float32, 10), k = random_of({1, S, D}, float32, 11),
           v = random_of({1, S, D}, float32, 12);
    // Values of keys no query sees under the top-left mask (s >= T) are Inf and NaN: never read.
    Tensor vbad = v.clone();
    float* vb = static_cast<float*>(vbad.data());
    for (std::int64_t s = T; s < S; ++s) vb[s * D] = (s % 2) ? INFINITY : NAN;
    const Tensor clean = reference::evaluate(attention(q, k, v, {.causal = CausalMask::TopLeft}).node());
    const Tensor dirty = reference::evaluate(attention(q, k, vbad, {.causal = CausalMask::TopLeft}).node());
    CHECK(testing::same_bits(clean, dirty));
    check_bits(attention(q, k, vbad, {.causal = CausalMask::TopLeft}), "masked Inf and NaN values, host");
    // A bias of -inf masks: rows 0 and 7 see nothing (0, where softmax gives NaN); key 3 is masked for all.
    Tensor bias = random_of({T, S}, float32, 13);
    float* bb = static_cast<float*>(bias.data());
    for (std::int64_t s = 0; s < S; ++s) bb[s] = bb[7 * S + s] = -INFINITY;
    for (std::int64_t t = 0; t < T; ++t) bb[t * S + 3] = -INFINITY;
    Tensor vbad3 = v.clone();
    static_cast<float*>(vbad3.data())[3 * D + 1] = NAN;
    const Tensor y = reference::evaluate(attention(q, k, vbad3, {.bias = Array(bias)}).node());
    const auto yv = y.to_vector<float>();
    for (std::int64_t d = 0; d < D; ++d) {
        CHECK(yv[static_cast<std::size_t>(d)] == 0.0f);
        CHECK(yv[static_cast<std::size_t>(7 * D + d)] == 0.0f);
    }
    for (float x : yv) CHECK(std::isfinite(x));
    const auto visible = [&](std::int64_t, std::int64_t t, std::int64_t s) {
        return bb[t * S + s] != -INFINITY;
    };
    const auto bias_of = [&](std::int64_t, std::int64_t t, std::int64_t s) { return double(bb[t * S + s]); };
    check_near(y, naive(q, k, v, 1.0 / std::sqrt(double(D)), visible, bias_of), 2e-5, "bias masks");
    check_bits(attention(q, k, vbad3, {.bias = Array(bias)}), "bias masks, host");
    // softmax of a fully masked row is NaN: the written-out form differs there, as documented.
    const Array scores = matmul(q, Array(k).transposed()) * (1.0 / std::sqrt(double(D))) + bias;
    const Tensor written = softmax(scores, -1);
    CHECK(std::isnan(written.to_vector<float>()[0]));
    // NaN in one query row gives NaN in that row only.
    Tensor qn = q.clone();
    static_cast<float*>(qn.data())[5 * D + 2] = NAN;
    const auto yn = reference::evaluate(attention(qn, k, v).node()).to_vector<float>();
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t d = 0; d < D; ++d)
            CHECK(std::isnan(yn[static_cast<std::size_t>(t * D + d)]) == (t == 5));
}

TEST_CASE("attention: halves compute in float32 and round once, views of a fused qkv are read in place") {
    for (DType t : {float16, bfloat16, float32}) {
        CAPTURE(name(t));
        const std::int64_t B = 2, T = 37, H = 4, D = 16;
        const Tensor qkv = random_of({B, T, 3, H, D}, t, 14);
        const Array x(qkv);
        const auto head = [&](std::int64_t j) {
            return x.slice({{}, {}, {j, j + 1}}).reshape({B, T, H, D}).permute({0, 2, 1, 3});
        };
        const Array y = attention(head(0), head(1), head(2), {.causal = CausalMask::TopLeft});
        CHECK(y.dtype() == t);
        check_bits(y, "heads sliced from qkv, host");
        // One kernel, reading qkv in place: no copy of the heads.
        const codegen::Partition P = codegen::partition(ir::run_pipeline({y.node()}, ir::standard_passes()));
        REQUIRE(P.kernels.size() == 1);
        CHECK(P.kernels[0].family == codegen::Family::Attention);
        CHECK(P.temps.empty());
        // The output permuted back to [B, T, H * D] for the next product: equal to the reference.
        check_bits(y.permute({0, 2, 1, 3}).reshape({B, T, H * D}) * 2.0, "the result permuted back");
    }
}

TEST_CASE("attention: fusion off and the host back end give the reference's bits") {
    const Tensor q = random_of({2, 3, 65, 32}, float32, 15), k = random_of({2, 3, 90, 32}, float32, 16),
                 v = random_of({2, 3, 90, 32}, float32, 17);
    const Array y = attention(Array(q) * 0.5, k, v, {.causal = CausalMask::BottomRight}) + 1.0;
    check_bits(y, "with a prologue and an epilogue");
    Tensor out = Tensor::host(y.shape(), y.dtype());
    {
        const OptionsScope unfused(Options{.fusion = false});
        assign(out, y);
    }
    CHECK(testing::same_bits(out, reference::evaluate(y.node())));
}

TEST_CASE("attention: errors of building one name attention, the shapes and the caller's line") {
    const Tensor q = random_of({2, 4, 8, 16}, float32, 18), k = random_of({2, 2, 10, 16}, float32, 19);
    const std::string file = "test_attention.cpp";
    const auto has = [&](const std::string& msg, const std::string& part) {
        CHECK_MESSAGE(msg.find(part) != std::string::npos, msg);
        CHECK_MESSAGE(msg.find(file) != std::string::npos, msg);
        CHECK_MESSAGE(msg.find("attention()") != std::string::npos, msg);
    };
    has(loom_test::error_message([&] {
            (void)attention(random_of({8, 16}, float32, 1), k, k);
        }),
        "rank of 3 or more");
    const Tensor q64 = random_of({2, 4, 8, 16}, float64, 1), k64 = random_of({2, 2, 10, 16}, float64, 2);
    has(loom_test::error_message([&] { (void)attention(q64, k64, k64); }), "float32, float16");
    has(loom_test::error_message([&] {
            (void)attention(q, random_of({2, 2, 10, 16}, bfloat16, 1), k);
        }),
        "differ in dtype");
    has(loom_test::error_message([&] {
            (void)attention(q, random_of({2, 3, 10, 16}, float32, 1), random_of({2, 3, 10, 16}, float32, 2));
        }),
        "not a multiple");
    has(loom_test::error_message([&] {
            (void)attention(q, random_of({2, 2, 10, 8}, float32, 1), k);
        }),
        "[B..., Hkv, S, D]");
    has(loom_test::error_message([&] {
            (void)attention(q, k, k, {.bias = Array(random_of({3, 10}, float32, 1))});
        }),
        "does not broadcast");
    has(loom_test::error_message([&] { (void)attention(q, k, k, {.scale = INFINITY}); }), "not a finite");
    const Tensor big = random_of({1, 1, 2, 257}, float32, 1);
    has(loom_test::error_message([&] { (void)attention(big, big, big); }), "outside 1 to 256");
    // The IR prints the op with its attributes.
    const std::string text =
        ir::print({attention(q, k, k, {.causal = CausalMask::TopLeft, .scale = 0.5}).node()});
    CHECK_MESSAGE(text.find("attention") != std::string::npos, text);
    CHECK_MESSAGE(text.find("scale=0.5 causal=top_left") != std::string::npos, text);
}

TEST_CASE("attention: decoding splits the keys in chunks whose states combine in the pairwise tree") {
    CHECK(ir::attention_key_chunks(1, 512) == 1);
    CHECK(ir::attention_key_chunks(1, 513) == 2);
    CHECK(ir::attention_key_chunks(16, 8192) == 16);
    CHECK(ir::attention_key_chunks(17, 8192) == 1);
    const std::int64_t D = 24, Hkv = 2;
    // One query over 2000 keys (4 chunks, the last of 464), grouped heads; 7 and 11 chunks (odd subtrees
    // carried up at two levels); 16 queries split, 17 not.
    struct Case {
        std::int64_t H, T, S;
        CausalMask causal;
    };
    for (const Case& c : {Case{4, 1, 2000, CausalMask::None}, Case{2, 3, 3500, CausalMask::BottomRight},
                          Case{2, 1, 5400, CausalMask::None}, Case{2, 16, 1100, CausalMask::BottomRight},
                          Case{2, 17, 1100, CausalMask::BottomRight}, Case{2, 5, 700, CausalMask::TopLeft}}) {
        CAPTURE(c.T);
        CAPTURE(c.S);
        const Tensor q = random_of({c.H, c.T, D}, float32, 20), k = random_of({Hkv, c.S, D}, float32, 21),
                     v = random_of({Hkv, c.S, D}, float32, 22);
        const Array y = attention(q, k, v, {.causal = c.causal});
        const Tensor got = reference::evaluate(y.node());
        const std::int64_t chunk = ir::attention_key_chunks(c.T, c.S) > 1 ? ir::kAttentionKeyChunk : c.S;
        check_contract(got, decoding_contract(q, k, v, ir::attention_scale(*y.node()), c.causal, chunk),
                       "the reference against the contract");
        const auto visible = [&](std::int64_t, std::int64_t t, std::int64_t s) {
            return ir::attention_visible(c.causal, t, s, c.T, c.S);
        };
        check_near(got, naive(q, k, v, ir::attention_scale(*y.node()), visible), 2e-5, "against float64");
        check_bits(y, "decoding, host back end");
    }
    // A bias that masks the whole second chunk (an absent state, skipped by the tree), a row that sees no key
    // (0), Inf and NaN values under the mask (never read), and NaN in one query (NaN in its row only).
    const std::int64_t T = 3, S = 1800;
    Tensor q = random_of({2, T, D}, float32, 23), k = random_of({2, S, D}, float32, 24),
           v = random_of({2, S, D}, float32, 25);
    Tensor bias = random_of({T, S}, float32, 26);
    float* bb = static_cast<float*>(bias.data());
    float* vb = static_cast<float*>(v.data());
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t s = 512; s < 1024; ++s) bb[t * S + s] = -INFINITY;
    for (std::int64_t s = 0; s < S; ++s) bb[1 * S + s] = -INFINITY;
    for (std::int64_t s = 600; s < 700; ++s) vb[s * D + 3] = (s % 2) ? INFINITY : NAN;
    static_cast<float*>(q.data())[2 * D + 5] = NAN;
    const Array y = attention(q, k, v, {.bias = Array(bias)});
    const Tensor got = reference::evaluate(y.node());
    check_contract(got,
                   decoding_contract(q, k, v, ir::attention_scale(*y.node()), CausalMask::None,
                                     ir::kAttentionKeyChunk, &bias),
                   "masked chunk, masked row, NaN query");
    const auto g = got.to_vector<float>();
    for (std::int64_t h = 0; h < 2; ++h)
        for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t d = 0; d < D; ++d) {
                const float x = g[static_cast<std::size_t>((h * T + t) * D + d)];
                if (t == 1)
                    CHECK(x == 0.0f);
                else if (t == 2 && h == 0)
                    CHECK(std::isnan(x));
                else
                    CHECK(std::isfinite(x));
            }
    check_bits(y, "decoding with masks, host back end");
}
