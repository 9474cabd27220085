// GPU tests of attention on tensor cores (codegen AttentionPath::Mma; docs/semantics.md, "Attention in
// float16 and bfloat16 on tensor cores"): float16 and bfloat16 results within reference::attention_bound of
// the CPU reference for T and S not multiples of the block, T != S under both causal alignments, D of 16, 64,
// 80 and 128, grouped heads, a bias with whole rows of -inf (0 there), q, k and v as views of one fused qkv
// tensor, NaN and Inf in q (propagated to their rows), and Inf and NaN values of masked keys (never in the
// output).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <loom/loom.hpp>
#include <string>

#include "loom/ir/build.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

const Device cuda0 = Device::cuda(0);
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// A float32 host tensor of normal values (edited in place by the tests, then cast).
Tensor host_normal(const Shape& s, std::uint64_t seed, double mean = 0.0) {
    return testing::random_tensor(s, float32, seed, testing::Random::normal(mean, 1.0));
}

float* data_of(Tensor& t) {
    return static_cast<float*>(t.data());
}

/// `t` (float32, host) in dtype `dt` on the GPU.
Tensor on_gpu(const Tensor& t, DType dt) {
    return reference::cast(t, dt).to(cuda0);
}

/// Evaluates attention(q, k, v, o) on the GPU and checks it against the reference within
/// reference::attention_bound: where the reference is NaN the GPU must be NaN, where it is +-Inf the same
/// Inf, elsewhere |gpu - ref| <= bound. Returns the GPU's result as float64 on the host.
Tensor check(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o, const Tensor* bias,
             const std::string& what) {
    const Array y = attention(q, k, v, o);
    const std::string plan = explain({y});
    CHECK_MESSAGE(plan.find("tensor cores (mma.sync") != std::string::npos, what << ": " << plan);
    Tensor out = Tensor::empty(y.shape(), y.dtype(), cuda0);
    testing::poison(out);
    assign(out, y);
    const Tensor ref = reference::cast(reference::evaluate(y.node()), DType::Float64);
    const Tensor got = reference::cast(out, DType::Float64);
    const reference::AttentionBound b = reference::attention_bound(
        q, k, v, bias, ir::attention_causal(*y.node()), ir::attention_scale(*y.node()));
    const auto* g = static_cast<const double*>(got.data());
    const auto* r = static_cast<const double*>(ref.data());
    const auto* bd = static_cast<const double*>(b.bound.data());
    std::int64_t bad = 0, worst = -1;
    double worst_ratio = 0.0;
    for (std::int64_t i = 0; i < got.numel(); ++i) {
        bool ok;
        if (std::isnan(r[i]))
            ok = std::isnan(g[i]);
        else if (std::isinf(r[i]))
            ok = g[i] == r[i];
        else
            ok = std::fabs(g[i] - r[i]) <= bd[i];
        const double ratio = !ok                                  ? kInf
                             : !std::isfinite(r[i]) || bd[i] <= 0 ? 0.0
                                                                  : std::fabs(g[i] - r[i]) / bd[i];
        if (!ok) ++bad;
        if (worst < 0 || ratio > worst_ratio) worst_ratio = ratio, worst = i;
    }
    CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << got.numel() << " outside the bound; at " << worst
                                 << ": got " << (worst >= 0 ? g[worst] : 0.0) << " reference "
                                 << (worst >= 0 ? r[worst] : 0.0) << " bound "
                                 << (worst >= 0 ? bd[worst] : 0.0));
    MESSAGE(what << ": worst error / bound = " << worst_ratio);
    return got;
}

AttentionOptions causal_of(CausalMask c) {
    AttentionOptions o;
    o.causal = c;
    return o;
}

}  // namespace

TEST_CASE("attention on tensor cores: T and S off the block, T != S, both causal alignments, D, dtypes") {
    for (DType dt : {float16, bfloat16}) {
        for (std::int64_t D : {16, 64, 80, 128}) {
            for (auto [T, S] : {std::pair<std::int64_t, std::int64_t>{100, 70}, {37, 300}, {200, 131}}) {
                for (CausalMask c : {CausalMask::None, CausalMask::TopLeft, CausalMask::BottomRight}) {
                    const std::string what = fmt::format("{} D {} T {} S {} causal {}", name(dt), D, T, S,
                                                         ir::causal_mask_name(c));
                    CAPTURE(what);
                    const Tensor q = on_gpu(host_normal({2, 3, T, D}, 1), dt);
                    const Tensor k = on_gpu(host_normal({2, 3, S, D}, 2), dt);
                    const Tensor v = on_gpu(host_normal({2, 3, S, D}, 3, 0.5), dt);
                    check(q, k, v, causal_of(c), nullptr, what);
                }
            }
        }
    }
}

TEST_CASE("attention on tensor cores: grouped heads (H = 8, Hkv = 2), a scale, D = 256") {
    for (DType dt : {float16, bfloat16}) {
        const Tensor q = on_gpu(host_normal({2, 8, 300, 64}, 4), dt);
        const Tensor k = on_gpu(host_normal({2, 2, 257, 64}, 5), dt);
        const Tensor v = on_gpu(host_normal({2, 2, 257, 64}, 6), dt);
        AttentionOptions o = causal_of(CausalMask::BottomRight);
        check(q, k, v, o, nullptr, fmt::format("{} grouped, bottom-right", name(dt)));
        o.scale = 0.3;
        check(q, k, v, o, nullptr, fmt::format("{} grouped, scale 0.3", name(dt)));
        const Tensor q2 = on_gpu(host_normal({1, 2, 150, 256}, 7), dt);
        const Tensor k2 = on_gpu(host_normal({1, 2, 90, 256}, 8), dt);
        const Tensor v2 = on_gpu(host_normal({1, 2, 90, 256}, 9), dt);
        check(q2, k2, v2, causal_of(CausalMask::TopLeft), nullptr, fmt::format("{} D 256", name(dt)));
    }
}

TEST_CASE("attention on tensor cores: a bias with -inf entries and whole rows of -inf (0 there)") {
    for (DType dt : {float16, bfloat16}) {
        const std::int64_t H = 4, T = 150, S = 100, D = 64;
        Tensor bh = host_normal({1, H, T, S}, 10);
        float* b = data_of(bh);
        for (std::int64_t i = 0; i < bh.numel(); i += 7) b[i] = -kInf;  // scattered masked keys
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t j = 0; j < S; ++j) {
                b[(h * T + 3) * S + j] = -kInf;    // row 3 of every head: no key
                b[(h * T + 140) * S + j] = -kInf;  // row 140, in the last query block
            }
        const Tensor bias = on_gpu(bh, dt);
        const Tensor q = on_gpu(host_normal({2, H, T, D}, 11), dt);
        const Tensor k = on_gpu(host_normal({2, H, S, D}, 12), dt);
        const Tensor v = on_gpu(host_normal({2, H, S, D}, 13), dt);
        for (CausalMask c : {CausalMask::None, CausalMask::BottomRight}) {
            AttentionOptions o = causal_of(c);
            o.bias = Array(bias);
            const Tensor got = check(q, k, v, o, &bias,
                                     fmt::format("{} bias, causal {}", name(dt), ir::causal_mask_name(c)));
            const auto* g = static_cast<const double*>(got.data());
            for (std::int64_t bh2 = 0; bh2 < 2 * H; ++bh2)
                for (std::int64_t t : {3, 140})
                    for (std::int64_t d = 0; d < D; ++d) REQUIRE(g[(bh2 * T + t) * D + d] == 0.0);
        }
    }
}

TEST_CASE("attention on tensor cores: q, k and v as views of one fused [B, T, 3, H, D] tensor") {
    for (DType dt : {float16, bfloat16}) {
        const Tensor qkv = on_gpu(host_normal({2, 133, 3, 4, 64}, 14), dt);
        const auto head = [&](std::int64_t i) {
            return qkv.slice({{}, {}, {i, i + 1}}).squeeze(2).permute({0, 2, 1, 3});  // [B, H, T, D]
        };
        const Tensor q = head(0), k = head(1), v = head(2);
        for (CausalMask c : {CausalMask::None, CausalMask::TopLeft})
            check(q, k, v, causal_of(c), nullptr,
                  fmt::format("{} fused qkv views, causal {}", name(dt), ir::causal_mask_name(c)));
    }
}

TEST_CASE("attention on tensor cores: NaN and Inf in q propagate to their rows") {
    for (DType dt : {float16, bfloat16}) {
        const std::int64_t T = 90, S = 80, D = 64;
        Tensor qh = host_normal({1, 2, T, D}, 15);
        data_of(qh)[(0 * T + 5) * D + 3] = kNaN;
        data_of(qh)[(1 * T + 7) * D + 0] = kInf;
        data_of(qh)[(1 * T + 60) * D + 9] = -kInf;
        const Tensor q = on_gpu(qh, dt);
        const Tensor k = on_gpu(host_normal({1, 2, S, D}, 16), dt);
        const Tensor v = on_gpu(host_normal({1, 2, S, D}, 17), dt);
        const Tensor got =
            check(q, k, v, causal_of(CausalMask::None), nullptr, fmt::format("{} NaN, Inf in q", name(dt)));
        const auto* g = static_cast<const double*>(got.data());
        CHECK(std::isnan(g[(0 * T + 5) * D]));
        CHECK(std::isfinite(g[(0 * T + 6) * D]));
    }
}

TEST_CASE("attention on tensor cores: Inf and NaN values of masked keys never reach the output") {
    for (DType dt : {float16, bfloat16}) {
        const std::int64_t H = 2, T = 130, S = 130, D = 64;
        // Causal (top-left): key 129 is visible to row 129 only, key 100 to rows 100 and on; both in tiles
        // that are masked for other rows of the same query block.
        Tensor vh = host_normal({1, H, S, D}, 18);
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t d = 0; d < D; ++d) {
                data_of(vh)[(h * S + 129) * D + d] = d % 2 ? kInf : kNaN;
                data_of(vh)[(h * S + 100) * D + d] = -kInf;
            }
        const Tensor q = on_gpu(host_normal({1, H, T, D}, 19), dt);
        const Tensor k = on_gpu(host_normal({1, H, S, D}, 20), dt);
        const Tensor v = on_gpu(vh, dt);
        const Tensor got =
            check(q, k, v, causal_of(CausalMask::TopLeft), nullptr, fmt::format("{} causal", name(dt)));
        const auto* g = static_cast<const double*>(got.data());
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t t = 0; t < 100; ++t)
                for (std::int64_t d = 0; d < D; ++d) REQUIRE(std::isfinite(g[(h * T + t) * D + d]));
        // A bias masking key 10 for every row and key 20 for half the rows, their values NaN and Inf.
        Tensor bh = host_normal({1, H, T, S}, 21);
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t t = 0; t < T; ++t) {
                data_of(bh)[(h * T + t) * S + 10] = -kInf;
                if (t % 2) data_of(bh)[(h * T + t) * S + 20] = -kInf;
            }
        Tensor vh2 = host_normal({1, H, S, D}, 22);
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t d = 0; d < D; ++d) {
                data_of(vh2)[(h * S + 10) * D + d] = kNaN;
                data_of(vh2)[(h * S + 20) * D + d] = kInf;
            }
        const Tensor bias = on_gpu(bh, dt);
        AttentionOptions o;
        o.bias = Array(bias);
        const Tensor got2 = check(q, k, on_gpu(vh2, dt), o, &bias, fmt::format("{} bias", name(dt)));
        const auto* g2 = static_cast<const double*>(got2.data());
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t t = 1; t < T; t += 2)
                for (std::int64_t d = 0; d < D; ++d) REQUIRE(std::isfinite(g2[(h * T + t) * D + d]));
    }
}

TEST_CASE("attention on tensor cores: product_path = CudaCores keeps the reference's bits") {
    const Tensor q = on_gpu(host_normal({1, 2, 70, 64}, 23), float16);
    const Tensor k = on_gpu(host_normal({1, 2, 90, 64}, 24), float16);
    const Tensor v = on_gpu(host_normal({1, 2, 90, 64}, 25), float16);
    OptionsScope scope({.product_path = ProductPath::CudaCores});
    const Array y = attention(q, k, v, causal_of(CausalMask::BottomRight));
    const std::string plan = explain({y});
    CHECK_MESSAGE(plan.find("CUDA cores, float32 in the reference's order") != std::string::npos, plan);
    Tensor out = Tensor::empty(y.shape(), y.dtype(), cuda0);
    assign(out, y);
    const testing::Comparison c =
        testing::compare(out, reference::evaluate(y.node()), testing::Tolerance::exact(), "CUDA cores");
    CHECK_MESSAGE(c.ok, c.message);
}
