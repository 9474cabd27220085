// Rank-0 results beside data-sized ones on the GPU: an Adam step with its step counter written in place over
// what every element reads; a rank-0 result reading a source that the elements overwrite in place; the
// scalar variant; a captured graph replayed; a bfloat16 counter. Fused against unfused bit for bit, and
// against the reference.
#include <doctest/doctest.h>

#include <string>

#include "test_graph_util.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;

namespace {

constexpr double kLr = 1e-3, kB1 = 0.9, kB2 = 0.999, kEps = 1e-8;

struct AdamState {
    Tensor p, g, m, v, t;
};

// A fresh state of n parameters, nine steps taken (t = 9), the same for equal seeds.
AdamState adam_state(std::int64_t n, std::uint64_t seed, DType counter = float32) {
    AdamState s;
    s.p = rand({n}, float32, seed);
    s.g = rand({n}, float32, seed + 1);
    s.m = rand({n}, float32, seed + 2);
    s.v = rand({n}, float32, seed + 3, testing::Random::uniform(0.0, 0.01));
    s.t = full({}, 9.0, counter, dev()).eval();
    return s;
}

// (p, m, v, t) after one step.
std::vector<Array> adam(const Array& p, const Array& g, const Array& m, const Array& v, const Array& t) {
    const Array t1 = t + 1.0;
    const Array m1 = kB1 * m + (1.0 - kB1) * g;
    const Array v1 = kB2 * v + (1.0 - kB2) * g * g;
    const Array tf = t1.dtype() == float32 ? t1 : t1.astype(float32);
    const Array p1 = p - kLr * (m1 / (1.0 - pow(kB1, tf))) / (sqrt(v1 / (1.0 - pow(kB2, tf))) + kEps);
    return {p1, m1, v1, t1};
}

void step_in_place(AdamState& s) {
    assign({s.p, s.m, s.v, s.t}, adam(s.p, s.g, s.m, s.v, s.t));
}

void require_same_state(const AdamState& a, const AdamState& b, const std::string& what) {
    require_same_bits(a.p, b.p, what + ": p");
    require_same_bits(a.m, b.m, what + ": m");
    require_same_bits(a.v, b.v, what + ": v");
    require_same_bits(a.t, b.t, what + ": t");
}

}  // namespace

TEST_CASE(
    "rank-0 results: an Adam step with its counter in place, 40 steps equal the unfused steps bit for bit") {
    const std::int64_t n = (std::int64_t{1} << 22) + 3;  // 4097 blocks of the vector variant, and a tail
    AdamState a = adam_state(n, 0x0a00), b = adam_state(n, 0x0a00);
    // One step into fresh outputs against the reference.
    Tensor p1 = Tensor::empty({n}, float32, dev()), m1 = Tensor::empty({n}, float32, dev());
    Tensor v1 = Tensor::empty({n}, float32, dev()), t1 = Tensor::empty({}, float32, dev());
    for (Tensor* o : {&p1, &m1, &v1, &t1}) testing::poison(*o);
    const std::vector<Array> one = adam(a.p, a.g, a.m, a.v, a.t);
    assign({p1, m1, v1, t1}, one);
    wait_device();
    require_reference(one, {p1, m1, v1, t1}, "one Adam step with its counter");
    for (int k = 0; k < 40; ++k) step_in_place(a);
    {
        const OptionsScope off({.fusion = false});
        for (int k = 0; k < 40; ++k) step_in_place(b);
    }
    wait_device();
    CHECK(a.t.to_host().get_double(0) == 49.0);
    require_same_state(a, b, "40 fused steps against 40 unfused");
}

TEST_CASE(
    "rank-0 results: a traced Adam step, 100 calls in place, counts its steps and matches the lazy steps") {
    const std::int64_t n = 300001;
    auto f = loom::function("adam_counter", [](Array p, Array g, Array m, Array v, Array t) {
        const auto r = adam(p, g, m, v, t);
        return std::tuple{r[0], r[1], r[2], r[3]};
    });
    AdamState a = adam_state(n, 0x0b00), b = adam_state(n, 0x0b00);
    for (int k = 0; k < 100; ++k) f(a.p, a.g, a.m, a.v, a.t, a.p, a.m, a.v, a.t);
    for (int k = 0; k < 100; ++k) step_in_place(b);
    wait_device();
    CHECK(a.t.to_host().get_double(0) == 109.0);
    CHECK(f.stats().specializations == 1);
    require_same_state(a, b, "100 traced steps against 100 lazy steps");
}

TEST_CASE(
    "rank-0 results: a rank-0 result reads what the elements overwrite in place: it sees the value of before "
    "the call") {
    const std::int64_t n = (1 << 20) + 7;
    Tensor p = rand({n}, float32, 0x0c00);
    Tensor first = Tensor::empty({}, float32, dev());
    testing::poison(first);
    const double before = p.to_host().get_double(0);
    const Array head = reshape(Array(p).slice({{0, 1}}), {}) + 1.0;  // rank 0, from p[0]
    assign({p, first}, {Array(p) * 2.0, head});
    wait_device();
    CHECK(first.to_host().get_double(0) == static_cast<double>(static_cast<float>(before) + 1.0f));
    CHECK(p.to_host().get_double(0) == static_cast<double>(static_cast<float>(before) * 2.0f));
}

TEST_CASE("rank-0 results: the scalar variant (operands off 16-byte alignment), and a bfloat16 counter") {
    const std::int64_t n = 200003;
    AdamState a = adam_state(n + 1, 0x0d00), b = adam_state(n + 1, 0x0d00);
    auto shifted = [&](AdamState& s) {  // element 1 on: 4 bytes past the allocation's alignment
        AdamState v = s;
        for (Tensor* x : {&v.p, &v.g, &v.m, &v.v}) *x = x->slice({{1, kNone}});
        return v;
    };
    AdamState sa = shifted(a), sb = shifted(b);
    for (int k = 0; k < 5; ++k) step_in_place(sa);
    {
        const OptionsScope off({.fusion = false});
        for (int k = 0; k < 5; ++k) step_in_place(sb);
    }
    wait_device();
    CHECK(sa.t.to_host().get_double(0) == 14.0);
    require_same_state(sa, sb, "5 steps of the scalar variant, fused against unfused");

    AdamState c = adam_state(n, 0x0e00, bfloat16), d = adam_state(n, 0x0e00, bfloat16);
    for (int k = 0; k < 3; ++k) step_in_place(c);
    {
        const OptionsScope off({.fusion = false});
        for (int k = 0; k < 3; ++k) step_in_place(d);
    }
    wait_device();
    CHECK(c.t.to_host().get_double(0) == 12.0);
    require_same_state(c, d, "3 steps with a bfloat16 counter, fused against unfused");
}

TEST_CASE("rank-0 results: a captured Adam step replayed 5 times counts 5 steps and equals 5 eager steps") {
    Stream s;
    StreamGuard on(s);
    const std::int64_t n = (1 << 21) + 1;
    AdamState a = adam_state(n, 0x0f00), b = adam_state(n, 0x0f00);
    step_in_place(a);  // warm-up: compiled
    step_in_place(b);
    s.synchronize();
    graphtest::Graph g;
    graphtest::capture(s, g, [&] { step_in_place(a); });
    for (int k = 0; k < 5; ++k) CUDA_OK(cudaGraphLaunch(g.exec, s));
    for (int k = 0; k < 5; ++k) step_in_place(b);
    s.synchronize();
    CHECK(a.t.to_host().get_double(0) == 15.0);
    require_same_state(a, b, "5 replays against 5 eager steps");
}
