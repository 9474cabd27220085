// GPU tests of whole programs: a kernel whose parameters exceed the kernel parameter limit (they travel in
// device memory), lazily built chains split by the lazy graph size limit, and graphs reading hundreds of
// inputs, each against the CPU reference.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "loom/ir/graph.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;

namespace {

/// Sets the lazy graph size limit for a scope.
struct LazyLimit {
    std::uint32_t old;
    explicit LazyLimit(std::uint32_t nodes) : old(set_lazy_node_limit(nodes)) {}
    ~LazyLimit() { set_lazy_node_limit(old); }
};

constexpr int kPairs = 415;  // 830 inputs read through a rank-8 permutation: 40 bytes of parameters each

/// sum_k a_k^P * b_k^P over `a` and `b`, each of shape [2, 3, 2, 3, 2, 3, 2, 3] read through the reversed
/// axis order P (a strided load site with 8 strides: no two axes coalesce), built as one graph.
Array sum_of_permuted_products(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    LazyLimit off(0);  // one graph: 2,489 nodes
    const std::vector<std::int64_t> reversed{7, 6, 5, 4, 3, 2, 1, 0};
    Array acc;
    for (std::size_t k = 0; k < a.size(); ++k) {
        Array p = Array(a[k]).permute(reversed) * Array(b[k]).permute(reversed);
        acc = k == 0 ? p : acc + p;
    }
    return acc;
}

std::vector<Tensor> permuted_inputs(std::uint64_t seed) {
    std::vector<Tensor> v;
    for (int k = 0; k < kPairs; ++k)
        v.push_back(rand({2, 3, 2, 3, 2, 3, 2, 3}, float32, seed + static_cast<std::uint64_t>(k)));
    return v;
}

}  // namespace

TEST_CASE("830 inputs: the parameters travel in device memory and the result matches the reference") {
    const std::vector<Tensor> a = permuted_inputs(0x5000), b = permuted_inputs(0x6000);
    const Array sum = sum_of_permuted_products(a, b);
    const Tensor out = Tensor::empty(sum.shape(), float32, dev());
    const Launch l = plan_of({sum}, {out});
    CHECK(l.kernels == 1);
    CHECK(l.plan.params.size > device_info().param_limit_bytes);
    CHECK(l.plan.params_in_memory);
    MESSAGE(fmt::format("{} bytes of kernel parameters for {} load sites", l.plan.params.size,
                        l.plan.loads.size()));
    run_checked({sum});  // twice: into poisoned outputs, then into outputs holding random values
    // Again with new inputs: the kernel comes from the cache, the parameters are uploaded anew.
    const std::vector<Tensor> c = permuted_inputs(0x7000), d = permuted_inputs(0x8000);
    run_checked({sum_of_permuted_products(c, d)}, false);
}

TEST_CASE("limit 8 on the GPU: a chain of 100 ops gives the bits of the unsplit graph's reference") {
    const Tensor x = rand({257, 33}, float32, 0x9100);
    const Tensor y = rand({33}, float32, 0x9101);
    // Every op correctly rounded (the GPU's bits are the reference's), with casts to float16 and back.
    auto chain = [&] {
        Array v = x;
        for (int k = 0; k < 100; ++k) {
            switch (k % 6) {
                case 0:
                    v = v * 1.0009765625;
                    break;
                case 1:
                    v = v + y;
                    break;
                case 2:
                    v = sqrt(abs(v)) * 3.0;
                    break;
                case 3:
                    v = v.astype(float16).astype(float32);
                    break;
                case 4:
                    v = v / 3.0;
                    break;
                default:
                    v = v - y * 0.25;
                    break;
            }
        }
        return v;
    };
    Array whole;
    {
        LazyLimit off(0);
        whole = chain();
    }
    const Tensor want = reference::evaluate(whole.node());
    Array split;
    {
        LazyLimit eight(8);
        split = chain();  // evaluated on the GPU every few ops
        CHECK(ir::topo_order({split.node()}).size() <= 8);
    }
    const Tensor got = split;
    wait_device();
    CHECK(got.device().is_cuda());
    require_same_bits(got.to_host(), want, "split chain against the unsplit reference");
}

TEST_CASE("a lazily built chain of 10,000 ops evaluates on the GPU under the default limit") {
    const Tensor x = rand({1 << 16}, float32, 0x9200);
    const Tensor xh = x.to_host();
    auto chain = [](Array a) {
        for (int k = 0; k < 10000; ++k) a = k % 2 == 0 ? a * 0.5 : a + 1.0;  // exact ops
        return a;
    };
    const Array a = chain(x);
    CHECK(ir::topo_order({a.node()}).size() <= lazy_node_limit());
    const Tensor got = a;
    const Tensor want = chain(xh);  // the same chain on the host reference
    wait_device();
    require_same_bits(got.to_host(), want, "10,000-op chain");
}

TEST_CASE("a graph reading 600 inputs evaluates on the GPU, split by the default limit, exactly") {
    std::vector<Tensor> a, b;
    for (int k = 0; k < 300; ++k) {
        a.push_back(rand({4099}, float32, 0xa000 + static_cast<std::uint64_t>(k)));
        b.push_back(rand({4099}, float32, 0xb000 + static_cast<std::uint64_t>(k)));
    }
    auto build = [&] {
        Array acc = Array(a[0]) * b[0];
        for (std::size_t k = 1; k < a.size(); ++k) acc = acc + Array(a[k]) * b[k];
        return acc;
    };
    Array whole;
    {
        LazyLimit off(0);
        whole = build();  // 1,199 nodes, one kernel
    }
    const Array split = build();  // evaluated once on the way at the default limit of 1,024 nodes
    CHECK(split.node()->size_bound() < whole.node()->size_bound());
    const Tensor got_whole = whole, got_split = split;
    wait_device();
    const Tensor want = reference::evaluate(whole.node());
    require_same_bits(got_whole.to_host(), want, "600 inputs, one kernel");
    require_same_bits(got_split.to_host(), want, "600 inputs, split");
}
