// Written-out attention (ir::find_attention_patterns, the rewrite_attention pass, Options::attention_rewrite;
// docs/semantics.md, "Attention", "The written-out form"): matmul(softmax(q kᵀ · scale, causal mask), v) is
// named by explain() with its line; under the option it runs as one attention node with attention()'s bits
// (both causal alignments, a scale written as a product or a quotient, row >= col and col < row + 1 masks,
// bfloat16 with softmax's float32 casts, traced functions); patterns that could mask a whole row, carry a
// bias or do not fit attention() are reported and run as written.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <loom/loom.hpp>
#include <string>

#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

Tensor random_of(const Shape& s, DType t, std::uint64_t seed) {
    return testing::random_tensor(s, t, seed, testing::Random::normal());
}

Tensor run(const Array& y) {
    Tensor out = Tensor::host(y.shape(), y.dtype());
    testing::poison(out);
    assign(out, y);
    return out;
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

Options rewriting() {
    Options o = current_options();
    o.attention_rewrite = true;
    return o;
}

struct Heads {
    std::int64_t B = 2, H = 3, T = 37, S = 37, D = 16;
    DType dtype = float32;
    Tensor q, k, v;
    Heads(std::int64_t t, std::int64_t s, DType dt = float32) : T(t), S(s), dtype(dt) {
        q = random_of({B, H, T, D}, dt, 1);
        k = random_of({B, H, S, D}, dt, 2);
        v = random_of({B, H, S, D}, dt, 3);
    }
    Array row() const { return arange(T, int64, Device::cpu()).reshape({T, 1}); }
    Array col() const { return arange(S, int64, Device::cpu()).reshape({1, S}); }
    Array scores() const { return matmul(Array(q), Array(k).transposed()) * (1.0 / std::sqrt(double(D))); }
    // softmax(scores masked where `mask` is false) · v, as a user writes it.
    Array written(const Array& mask) const {
        return matmul(softmax(where(mask, scores(), -INFINITY), -1).astype(dtype), Array(v));
    }
};

}  // namespace

TEST_CASE("attention rewrite: a top-left causal softmax(q kT) v becomes attention(), with its bits") {
    const Heads h(37, 37);
    const Array y = h.written(h.col() <= h.row());
    const Tensor as_written = run(y);
    const std::string off = explain({y}, "written");
    CHECK(has(off, "could run as one attention() kernel (scale=0.25 causal=top_left)"));
    CHECK(has(off, "test_attention_rewrite.cpp:"));
    const Tensor fused = run(attention(h.q, h.k, h.v, {.causal = CausalMask::TopLeft}));
    {
        const OptionsScope scope(rewriting());
        const std::string on = explain({y}, "written");
        CHECK(has(on, "rewritten as one attention() kernel"));
        CHECK(has(on, "attention"));
        const Tensor rewritten = run(y);
        CHECK(testing::same_bits(rewritten, fused));
        // The rewrite changes the order of the sums: the outputs, weighted means of values below 6 in
        // magnitude, move by a few float32 roundings of such values (an ulp of 4 is 4.8e-7).
        const testing::Tolerance order{0.0, 1e-5, "a few roundings of values below 6"};
        const testing::Comparison c = testing::compare(rewritten, as_written, order, "rewrite");
        CHECK_MESSAGE(c.ok, c.message);
    }
    CHECK(testing::same_bits(run(y), as_written));  // off again: the written order
}

TEST_CASE("attention rewrite: the IR pass replaces the product by one attention node") {
    const Heads h(20, 20);
    const Array y = h.written(h.row() >= h.col());
    const std::vector<ir::NodePtr> out = ir::rewrite_attention({y.node()});
    REQUIRE(out.size() == 1);
    CHECK(out[0]->op() == ir::Op::Attention);
    CHECK(ir::attention_causal(*out[0]) == ir::CausalMask::TopLeft);
    CHECK(ir::attention_scale(*out[0]) == 0.25f);
    CHECK(out[0]->shape() == y.shape());
    const auto patterns = ir::find_attention_patterns({y.node()});
    REQUIRE(patterns.size() == 1);
    CHECK(patterns[0].rewritable);
}

TEST_CASE("attention rewrite: bottom-right masks, a quotient scale, col < row + 1, no mask") {
    const OptionsScope scope(rewriting());
    const Heads h(9, 41);  // S > T: decoding against a cache
    const Array br = h.written(h.col() <= h.row() + (h.S - h.T));
    CHECK(testing::same_bits(run(br), run(attention(h.q, h.k, h.v, {.causal = CausalMask::BottomRight}))));

    const Heads sq(33, 33);
    const Array lt = sq.written(sq.col() < sq.row() + 1);
    CHECK(testing::same_bits(run(lt), run(attention(sq.q, sq.k, sq.v, {.causal = CausalMask::TopLeft}))));

    const Array quotient =
        matmul(softmax(matmul(Array(sq.q), Array(sq.k).transposed()) / 4.0, -1), Array(sq.v));
    CHECK(has(explain({quotient}), "rewritten"));
    CHECK(testing::same_bits(run(quotient), run(attention(sq.q, sq.k, sq.v, {.scale = 0.25}))));

    const Array bare = matmul(softmax(matmul(Array(sq.q), Array(sq.k).transposed()), -1), Array(sq.v));
    CHECK(testing::same_bits(run(bare), run(attention(sq.q, sq.k, sq.v, {.scale = 1.0}))));
}

TEST_CASE("attention rewrite: bfloat16 through softmax's float32 casts") {
    const OptionsScope scope(rewriting());
    const Heads h(24, 24, bfloat16);
    const Array y = h.written(h.col() <= h.row());
    CHECK(has(explain({y}), "rewritten"));
    CHECK(testing::same_bits(run(y), run(attention(h.q, h.k, h.v, {.causal = CausalMask::TopLeft}))));
}

TEST_CASE("attention rewrite: patterns that could mask a whole row or do not fit run as written") {
    const Heads h(16, 16);
    const Tensor bias = random_of({16, 16}, float32, 9);
    struct Case {
        Array y;
        const char* reason;
    };
    const Case cases[] = {
        {h.written(h.col() <= h.row() - 1), "hides every key of the first rows"},
        {h.written(h.col() <= h.row() + 2), "neither 0 (top-left) nor S - T"},
        {h.written(h.col() != h.row()), "not a comparison of key and query indices"},
        {matmul(softmax(h.scores() + Array(bias), -1), Array(h.v)), "bias"},
        {matmul(softmax(Array(h.q) * 2.0, -1), Array(h.v).transposed()), "are not matmul(q, k"},
    };
    for (const Case& c : cases) {
        const Tensor as_written = run(c.y);
        const OptionsScope scope(rewriting());
        const std::string text = explain({c.y});
        CHECK_MESSAGE(has(text, "run as written"), text);
        CHECK_MESSAGE(has(text, c.reason), text);
        CHECK(testing::same_bits(run(c.y), as_written));
    }
}

TEST_CASE("attention rewrite: a traced function takes the option it was made with") {
    const Heads h(21, 21);
    const auto block = [&](const Array& q, const Array& k, const Array& v) {
        const std::int64_t T = q.shape()[2];
        const Array row = arange(T, int64, Device::cpu()).reshape({T, 1});
        const Array col = arange(T, int64, Device::cpu()).reshape({1, T});
        const Array s = matmul(q, k.transposed()) * 0.25;
        return matmul(softmax(where(col <= row, s, -INFINITY), -1), v);
    };
    auto f = function("written_attention", block, rewriting());
    const Tensor out = f(h.q, h.k, h.v);
    CHECK(testing::same_bits(out, run(attention(h.q, h.k, h.v, {.causal = CausalMask::TopLeft}))));
}
