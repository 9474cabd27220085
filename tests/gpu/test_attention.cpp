// GPU tests of attention on CUDA cores (docs/semantics.md, "Attention"): the kernel's bits equal the CPU
// reference's in float32, and in float16 and bfloat16 on the CUDA-core path (ProductPath::CudaCores), for T
// and S not multiples of the block, T != S with both causal alignments, D of 16, 64, 80 and 128, grouped
// heads, a bias with whole rows of -inf, views of a fused qkv tensor as operands, NaN and Inf in q, Inf and
// NaN in masked values; the result written into a permuted view (the layout the next product reads); one
// kernel. Decoding (T <= 16 over more than 512 keys, the keys split in chunks among blocks): the reference's
// bits in every dtype under the default options, a KV cache read through a view, a masked chunk.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <loom/loom.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

const Device cuda0 = Device::cuda(0);

Tensor random_of(const Shape& s, DType t, std::uint64_t seed) {
    return testing::random_tensor(s, t, seed, testing::Random::normal()).to(cuda0);
}

// Evaluates `y` on the GPU into a poisoned output, on CUDA cores, and checks it against the reference bit for
// bit.
void check_bits(const Array& y, const std::string& what) {
    const OptionsScope cores(Options{.product_path = ProductPath::CudaCores});
    Tensor out = Tensor::empty(y.shape(), y.dtype(), cuda0);
    testing::poison(out);
    assign(out, y);
    const Tensor expected = reference::evaluate(y.node());
    const testing::Comparison c = testing::compare(out, expected, testing::Tolerance::exact(), what);
    CHECK_MESSAGE(c.ok, what << ": " << c.message);
}

}  // namespace

TEST_CASE("attention on CUDA cores: the reference's bits, every dtype, D, mask and ragged T and S") {
    for (DType t : {float32, bfloat16, float16}) {
        for (std::int64_t D : {16, 64, 80, 128}) {
            for (auto [T, S] :
                 {std::pair<std::int64_t, std::int64_t>{64, 64}, {70, 131}, {129, 40}, {1, 300}}) {
                const Tensor q = random_of({2, 3, T, D}, t, 1 + D), k = random_of({2, 3, S, D}, t, 2 + D),
                             v = random_of({2, 3, S, D}, t, 3 + D);
                for (CausalMask m : {CausalMask::None, CausalMask::TopLeft, CausalMask::BottomRight}) {
                    const std::string what =
                        fmt::format("{} D={} T={} S={} causal={}", name(t), D, T, S, ir::causal_mask_name(m));
                    check_bits(attention(q, k, v, {.causal = m}), what);
                }
            }
        }
    }
}

TEST_CASE("attention on CUDA cores: grouped heads, a bias with masked rows, NaN and Inf") {
    const std::int64_t B = 2, H = 8, Hkv = 2, T = 77, S = 95, D = 64;
    const Tensor q = random_of({B, H, T, D}, float32, 10), k = random_of({B, Hkv, S, D}, float32, 11),
                 v = random_of({B, Hkv, S, D}, float32, 12);
    check_bits(attention(q, k, v, {.causal = CausalMask::TopLeft}), "grouped heads");
    // A padding bias [B, 1, 1, S] of -inf past each batch's length, and a [T, S] bias with whole rows of
    // -inf.
    Tensor pad = Tensor::host({B, 1, 1, S}, float32);
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t s = 0; s < S; ++s)
            static_cast<float*>(pad.data())[b * S + s] = s < 50 + 30 * b ? 0.0f : -INFINITY;
    check_bits(attention(q, k, v, {.bias = Array(pad.to(cuda0))}), "a padding mask");
    Tensor rows = testing::random_tensor({T, S}, float32, 13);
    for (std::int64_t s = 0; s < S; ++s)
        static_cast<float*>(rows.data())[s] = static_cast<float*>(rows.data())[40 * S + s] = -INFINITY;
    check_bits(attention(q, k, v, {.bias = Array(rows.to(cuda0))}), "whole rows of -inf give 0");
    // Inf and NaN in values no query sees (keys past T under the top-left mask), NaN and Inf in q.
    Tensor vh = v.to_host().clone();
    for (std::int64_t s = T; s < S; ++s) static_cast<float*>(vh.data())[s * D + 3] = (s % 2) ? INFINITY : NAN;
    Tensor qh = q.to_host().clone();
    static_cast<float*>(qh.data())[5 * D] = NAN;
    static_cast<float*>(qh.data())[9 * D + 1] = INFINITY;
    check_bits(attention(qh.to(cuda0), k, vh.to(cuda0), {.causal = CausalMask::TopLeft}),
               "masked Inf and NaN values, NaN and Inf in q");
}

TEST_CASE("attention on CUDA cores: heads sliced from a fused qkv, the result into a permuted view") {
    for (DType t : {float32, bfloat16}) {
        const std::int64_t B = 2, T = 100, H = 4, D = 64;
        const Tensor qkv = random_of({B, T, 3, H, D}, t, 20);
        const Array x(qkv);
        const auto head = [&](std::int64_t j) {
            return x.slice({{}, {}, {j, j + 1}}).reshape({B, T, H, D}).permute({0, 2, 1, 3});
        };
        const Array y = attention(head(0), head(1), head(2), {.causal = CausalMask::TopLeft});
        check_bits(y, fmt::format("{} heads of qkv", name(t)));
        // Written into [B, T, H, D] through a permuted view: the layout the output projection reads.
        const OptionsScope cores(Options{.product_path = ProductPath::CudaCores});
        Tensor out = Tensor::empty({B, T, H, D}, t, cuda0);
        testing::poison(out);
        assign(out.permute({0, 2, 1, 3}), y);
        const Tensor expected = reference::evaluate(y.node());
        const testing::Comparison c = testing::compare(Tensor(out.permute({0, 2, 1, 3})), expected,
                                                       testing::Tolerance::exact(), "permuted store");
        CHECK_MESSAGE(c.ok, c.message);
    }
}

TEST_CASE("attention's result in several places: a view with negative strides, a second root, a consumer") {
    // One attention value written to two outputs (one a view with negative strides) and read by an
    // elementwise consumer: the kernel stores it once, copies store the rest; every output holds the
    // reference's bits.
    const OptionsScope cores(Options{.product_path = ProductPath::CudaCores});
    for (auto [T, S] : {std::pair<std::int64_t, std::int64_t>{7, 7}, {3, 1100}, {100, 130}}) {
        const std::int64_t B = 3, H = 2, D = 16;
        const Array q(random_of({B, H, T, D}, float32, 50)), k(random_of({B, H, S, D}, float32, 51)),
            v(random_of({B, H, S, D}, float32, 52));
        const Array a = attention(q, k, v, {.scale = 0.25});
        const Array y = maximum(a, -0.9375) * 0.21875;
        // out1: [B, H, T, D] over a base twice as long along T, read backwards along H and T.
        Tensor base = Tensor::empty({B, H, 2 * T, D}, float32, cuda0);
        Tensor out0 = Tensor::empty(y.shape(), float32, cuda0),
               out2 = Tensor::empty(a.shape(), float32, cuda0);
        for (Tensor* t : {&base, &out0, &out2}) testing::poison(*t);
        const Tensor out1 = base.as_strided({B, H, T, D}, {H * 2 * T * D, -2 * T * D, -2 * D, 1},
                                            (H - 1) * 2 * T * D + (2 * T - 2) * D);
        assign({out0, out1, out2}, {y, a, a});
        const Tensor expected = reference::evaluate(a.node());
        for (auto [out, what] :
             {std::pair<Tensor, const char*>{out1, "the view"}, {out2, "the second root"}}) {
            const testing::Comparison c = testing::compare(out, expected, testing::Tolerance::exact(), what);
            CHECK_MESSAGE(c.ok, "T=" << T << " S=" << S << ", " << what << ": " << c.message);
        }
        const testing::Comparison c =
            testing::compare(out0, reference::evaluate(y.node()), testing::Tolerance::exact(), "consumer");
        CHECK_MESSAGE(c.ok, "T=" << T << " S=" << S << ", the consumer: " << c.message);
    }
}

TEST_CASE("attention decoding: long rows' keys split among blocks, the reference's bits in every dtype") {
    // T <= 16 over more than 512 keys: chunks of 512 keys, a block each, combined in the pairwise tree by the
    // last block of each row block (docs/semantics.md, "Decoding"). Halves take the CUDA-core kernel by
    // default here, so the default options give the reference's bits too.
    const auto check_default = [](const Array& y, const std::string& what) {
        Tensor out = Tensor::empty(y.shape(), y.dtype(), cuda0);
        for (int run = 0; run < 2; ++run) {  // twice: the counters are zero again after a launch
            testing::poison(out);
            assign(out, y);
            const testing::Comparison c =
                testing::compare(out, reference::evaluate(y.node()), testing::Tolerance::exact(), what);
            CHECK_MESSAGE(c.ok, what << " (run " << run << "): " << c.message);
        }
    };
    for (DType t : {float32, bfloat16, float16}) {
        for (auto [T, S, D] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 513, 64},
                               {1, 8192 + 37, 128},
                               {3, 1100, 80},
                               {16, 2049, 64},
                               {9, 4000, 16}}) {
            const std::int64_t B = 2, H = 8, Hkv = 2;
            const Tensor q = random_of({B, H, T, D}, t, 30 + D), k = random_of({B, Hkv, S, D}, t, 31 + D),
                         v = random_of({B, Hkv, S, D}, t, 32 + D);
            for (CausalMask m : {CausalMask::None, CausalMask::BottomRight, CausalMask::TopLeft})
                check_default(
                    attention(q, k, v, {.causal = m}),
                    fmt::format("{} T={} S={} D={} causal={}", name(t), T, S, D, ir::causal_mask_name(m)));
        }
    }
    // A KV cache of 6000 slots read to its first 3333 (a view), 33 chunks of one query, and more heads than
    // fill the GPU without the split.
    const Tensor cache_k = random_of({4, 12, 6000, 64}, float32, 40),
                 cache_v = random_of({4, 12, 6000, 64}, float32, 41);
    const Tensor q = random_of({4, 12, 1, 64}, float32, 42);
    const std::vector<ir::SliceSpec> first{{}, {}, {0, 3333, 1}};
    check_default(attention(q, Array(cache_k).slice(first), Array(cache_v).slice(first),
                            {.causal = CausalMask::BottomRight}),
                  "a KV cache's first 3333 slots");
    const Tensor q2 = random_of({1, 2, 1, 32}, float32, 43),
                 k2 = random_of({1, 2, 33 * 512 - 7, 32}, float32, 44),
                 v2 = random_of({1, 2, 33 * 512 - 7, 32}, float32, 45);
    check_default(attention(q2, k2, v2), "33 chunks");
    // A bias masking a whole chunk (an absent state), a row with no visible key (0), Inf and NaN in masked
    // values (never read), NaN in one query (its row only).
    const std::int64_t T = 4, S = 2000, D = 64;
    Tensor qh = testing::random_tensor({1, 2, T, D}, float32, 46),
           vh = testing::random_tensor({1, 2, S, D}, float32, 47);
    Tensor bias = testing::random_tensor({T, S}, float32, 48);
    float* bb = static_cast<float*>(bias.data());
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t s = 512; s < 1024; ++s) bb[t * S + s] = -INFINITY;
    for (std::int64_t s = 0; s < S; ++s) bb[2 * S + s] = -INFINITY;
    for (std::int64_t s = 600; s < 700; ++s)
        static_cast<float*>(vh.data())[s * D + 7] = (s % 2) ? INFINITY : NAN;
    static_cast<float*>(qh.data())[3 * D + 1] = NAN;
    const Tensor k = random_of({1, 2, S, D}, float32, 49);
    const Array y = attention(qh.to(cuda0), k, vh.to(cuda0), {.bias = Array(bias.to(cuda0))});
    check_default(y, "masked chunk, masked row, NaN query");
    const auto got = [&] {
        Tensor out = Tensor::empty(y.shape(), y.dtype(), cuda0);
        assign(out, y);
        return out.to_host().to_vector<float>();
    }();
    for (std::int64_t h = 0; h < 2; ++h)
        for (std::int64_t d = 0; d < D; ++d) {
            CHECK(got[static_cast<std::size_t>((h * T + 2) * D + d)] == 0.0f);
            CHECK(std::isnan(got[static_cast<std::size_t>((0 * T + 3) * D + d)]));
            CHECK(std::isfinite(got[static_cast<std::size_t>((0 * T + 0) * D + d)]));
        }
}
