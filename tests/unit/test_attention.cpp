// Attention (loom::attention; docs/semantics.md, "Attention") on host tensors: the reference against a plain
// float64 evaluation of softmax(q kᵀ · scale + bias) v; both causal alignments with T != S; grouped heads
// equal to repeated kv heads bit for bit; masked keys absent (an Inf or NaN in a masked value never reaches
// the output; a row whose every key is masked gives 0, where softmax gives NaN); NaN in q propagates; views
// as operands read in place (one attention kernel, no copy); the host back end and an unfused run equal the
// reference bit for bit; the errors of building one.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "loom/codegen/plan/partition.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

Tensor random_of(const Shape& s, DType t, std::uint64_t seed) {
    return testing::random_tensor(s, t, seed, testing::Random::normal());
}

bool same_bits(const Tensor& a, const Tensor& b) {
    const Tensor x = a.clone(), y = b.clone();
    return x.dtype() == y.dtype() && x.shape() == y.shape() &&
           std::memcmp(x.data(), y.data(), x.nbytes()) == 0;
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

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
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
    CHECK(same_bits(grouped, repeated));
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
    CHECK(same_bits(clean, dirty));
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
    CHECK(same_bits(out, reference::evaluate(y.node())));
}

TEST_CASE("attention: errors of building one name attention, the shapes and the caller's line") {
    const Tensor q = random_of({2, 4, 8, 16}, float32, 18), k = random_of({2, 2, 10, 16}, float32, 19);
    const std::string file = "test_attention.cpp";
    const auto has = [&](const std::string& msg, const std::string& part) {
        CHECK_MESSAGE(msg.find(part) != std::string::npos, msg);
        CHECK_MESSAGE(msg.find(file) != std::string::npos, msg);
        CHECK_MESSAGE(msg.find("attention()") != std::string::npos, msg);
    };
    has(error_of([&] { (void)attention(random_of({8, 16}, float32, 1), k, k); }), "rank of 3 or more");
    const Tensor q64 = random_of({2, 4, 8, 16}, float64, 1), k64 = random_of({2, 2, 10, 16}, float64, 2);
    has(error_of([&] { (void)attention(q64, k64, k64); }), "float32, float16");
    has(error_of([&] { (void)attention(q, random_of({2, 2, 10, 16}, bfloat16, 1), k); }), "differ in dtype");
    has(error_of([&] {
            (void)attention(q, random_of({2, 3, 10, 16}, float32, 1), random_of({2, 3, 10, 16}, float32, 2));
        }),
        "not a multiple");
    has(error_of([&] { (void)attention(q, random_of({2, 2, 10, 8}, float32, 1), k); }), "[B..., Hkv, S, D]");
    has(error_of([&] {
            (void)attention(q, k, k, {.bias = Array(random_of({3, 10}, float32, 1))});
        }),
        "does not broadcast");
    has(error_of([&] { (void)attention(q, k, k, {.scale = INFINITY}); }), "not a finite");
    const Tensor big = random_of({1, 1, 2, 257}, float32, 1);
    has(error_of([&] { (void)attention(big, big, big); }), "outside 1 to 256");
    // The IR prints the op with its attributes.
    const std::string text =
        ir::print({attention(q, k, k, {.causal = CausalMask::TopLeft, .scale = 0.5}).node()});
    CHECK_MESSAGE(text.find("attention") != std::string::npos, text);
    CHECK_MESSAGE(text.find("scale=0.5 causal=top_left") != std::string::npos, text);
}
