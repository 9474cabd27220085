// Lazy evaluation of DSL expressions over host tensors (through the CPU reference): values, several
// outputs, assign(), item(), the "reads memory when evaluated" contract, lifetimes, deep chains, and
// evaluation misuse (inputs on two devices, a CUDA graph without a GPU).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <loom/loom.hpp>
#include <memory>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/node.hpp"

using namespace loom;

namespace {

Tensor random_host(const Shape& shape, DType dt, std::uint64_t seed) {
    Tensor t = Tensor::host(shape, dt);
    testing::fill_random(t, seed);
    return t;
}

float* f32(const Tensor& t) {
    return static_cast<float*>(t.data());
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("Tensor out = expr evaluates on the host, values match C++ float arithmetic element by element") {
    Tensor x = random_host({3, 5}, float32, 1);
    Tensor b = random_host({5}, float32, 2);
    const Array y = relu(x * 1.5 + b);  // row broadcast of b
    Tensor out = y;
    CHECK(out.device() == Device::cpu());
    CHECK(out.dtype() == float32);
    CHECK(out.shape() == Shape{3, 5});
    CHECK(out.is_contiguous());
    const float* px = f32(x);
    const float* pb = f32(b);
    const float* po = f32(out);
    int positive = 0;
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 5; ++c) {
            const float prod = px[r * 5 + c] * 1.5f;  // rounded to float32 (no contraction)
            const float sum = prod + pb[c];
            const float expect = sum > 0.0f ? sum : 0.0f;
            CHECK(po[r * 5 + c] == expect);
            positive += expect > 0.0f;
        }
    }
    CHECK(positive > 0);  // the random values exercise both sides of relu
    CHECK(positive < 15);

    // A few elements checked by value.
    CHECK(out.get_double(7) == static_cast<double>(std::max(px[7] * 1.5f + pb[2], 0.0f)));
}

TEST_CASE("integer semantics through the DSL: truncating / and %, division by zero, wrapping") {
    Tensor a = Tensor::host({6}, int32);
    Tensor b = Tensor::host({6}, int32);
    const std::int32_t av[6] = {7, -7, 7, -7, 5, 2147483647};
    const std::int32_t bv[6] = {2, 2, -2, 0, 0, 1};
    std::memcpy(a.data(), av, sizeof av);
    std::memcpy(b.data(), bv, sizeof bv);
    const auto r = eval(a / b, a % b, a + 1);
    REQUIRE(r.size() == 3);
    CHECK(r[0].dtype() == int32);
    const std::int64_t q[6] = {3, -3, -3, 0, 0, 2147483647};
    const std::int64_t m[6] = {1, -1, 1, -7, 5, 0};
    for (int k = 0; k < 6; ++k) {
        CAPTURE(k);
        CHECK(r[0].get_int(k) == q[k]);
        CHECK(r[1].get_int(k) == m[k]);
    }
    CHECK(r[2].get_int(5) == -2147483647 - 1);  // INT_MAX + 1 wraps

    // floor_div / mod are Python's.
    CHECK(floor_div(a, b).eval().get_int(1) == -4);
    CHECK(mod(a, b).eval().get_int(1) == 1);
    // A float quotient needs a cast.
    CHECK((astype(a, float32) / 2).eval().get_double(0) == 3.5);
}

TEST_CASE("eval(a, b) evaluates several outputs together") {
    Tensor x = random_host({4, 8}, float32, 3);
    Tensor y = random_host({4, 8}, float32, 4);
    const Array s = x + y;
    const Array d = x - y;
    const auto [rs, rd] = eval(s, d);
    const std::vector<Tensor> r{rs, rd};
    REQUIRE(r.size() == 2);
    for (int k = 0; k < 32; ++k) {
        CHECK(f32(r[0])[k] == f32(x)[k] + f32(y)[k]);
        CHECK(f32(r[1])[k] == f32(x)[k] - f32(y)[k]);
    }
    // Outputs of different shapes and dtypes in one call.
    const std::vector<Tensor> r2 = eval(std::vector<Array>{sum(x, -1), x > 0.0});
    CHECK(r2[0].shape() == Shape{4});
    CHECK(r2[1].dtype() == bool_);
    CHECK(r2[1].get_int(0) == (f32(x)[0] > 0.0f ? 1 : 0));
}

TEST_CASE("assign(out, expr) writes into a preallocated host tensor") {
    Tensor x = random_host({16}, float32, 5);
    Tensor out = Tensor::host({16}, float32);
    testing::poison(out);
    void* const where = out.data();
    assign(out, x * x - 1.0);
    CHECK(out.data() == where);  // same memory, no new tensor
    for (int k = 0; k < 16; ++k) CHECK(f32(out)[k] == f32(x)[k] * f32(x)[k] - 1.0f);

    // Several outputs; an output may also be an input (the result is written after reading).
    Tensor o2 = Tensor::host({16}, float32);
    std::vector<float> before(f32(x), f32(x) + 16);
    assign({x, o2}, {x * 2.0, x + 1.0});
    for (int k = 0; k < 16; ++k) {
        CHECK(f32(x)[k] == before[static_cast<std::size_t>(k)] * 2.0f);
        CHECK(f32(o2)[k] == before[static_cast<std::size_t>(k)] + 1.0f);
    }
}

TEST_CASE("item<float>() of a reduction and of rank-0 arrays") {
    Tensor x = random_host({1000}, float32, 6);
    double expect = 0.0;
    for (int k = 0; k < 1000; ++k) expect += static_cast<double>(f32(x)[k]) * static_cast<double>(f32(x)[k]);
    const float norm = sum(x * x).item<float>();
    CHECK(norm == doctest::Approx(expect).epsilon(1e-5));
    CHECK(norm > 500.0f);  // about 1000 for N(0, 1) values
    CHECK(sum(x * x).eval().dtype() == float32);

    // The reduction over the last axis with keepdims, then item of one element.
    CHECK(max(x, -1, true).shape() == Shape{1});
    CHECK(max(x).item<double>() == static_cast<double>(*std::max_element(f32(x), f32(x) + 1000)));
    CHECK(argmax(x).item<std::int64_t>() == std::max_element(f32(x), f32(x) + 1000) - f32(x));
    CHECK(any(x > 3.5).item<bool>() == std::any_of(f32(x), f32(x) + 1000, [](float v) { return v > 3.5f; }));
    CHECK(all(abs(x) >= 0.0).item<bool>());

    // Integer reductions sum in int64; item into an integer type.
    Tensor i = Tensor::host({5}, int8);
    const std::int8_t iv[5] = {100, 100, 100, 100, -1};
    std::memcpy(i.data(), iv, sizeof iv);
    CHECK(sum(i).dtype() == int64);
    CHECK(sum(i).item<int>() == 399);
    CHECK(mean(i).item<double>() == doctest::Approx(79.8));

    // Float into integer: truncate and saturate, NaN -> 0 (like a cast).
    Tensor f = Tensor::host({1}, float32);
    f32(f)[0] = 3e9f;
    CHECK(Array(f).item<std::int32_t>() == 2147483647);
    f32(f)[0] = -2.75f;
    CHECK(Array(f).item<int>() == -2);
    CHECK(Array(f).item<unsigned>() == 0u);
    f32(f)[0] = std::nanf("");
    CHECK(Array(f).item<long>() == 0);
    CHECK(Array(f).item<bool>());
}

TEST_CASE("softmax over rows as written in the usage sketch") {
    Tensor x = random_host({4, 32}, float32, 8);
    const Array e = exp(x - max(x, -1, true));
    const Array p = e / sum(e, -1, true);
    Tensor out = p;
    CHECK(out.shape() == Shape{4, 32});
    for (int r = 0; r < 4; ++r) {
        double total = 0.0;
        for (int c = 0; c < 32; ++c) total += f32(out)[r * 32 + c];
        CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
    }
    CHECK(testing::check_against_reference({p, e}).ok);
}

TEST_CASE("an expression reads its inputs' memory when it is evaluated, not when it is built") {
    // docs/semantics.md, "Inputs, laziness and memory": writing into an input tensor after building an
    // expression and before evaluating it changes the result.
    Tensor x = Tensor::host({8}, float32);
    for (int k = 0; k < 8; ++k) f32(x)[k] = static_cast<float>(k);
    const Array y = x * 2.0 + 1.0;                                        // built over the current values...
    for (int k = 0; k < 8; ++k) f32(x)[k] = static_cast<float>(100 + k);  // ...then the input changes
    Tensor out = y;
    for (int k = 0; k < 8; ++k) CHECK(f32(out)[k] == static_cast<float>(2 * (100 + k) + 1));

    // Evaluating again after another write sees the newer values (nothing is cached by value).
    f32(x)[3] = -4.0f;
    Tensor again = y;
    CHECK(f32(again)[3] == -7.0f);
    CHECK(f32(out)[3] == 207.0f);  // the earlier result is its own tensor

    // The same holds for item() and for a user-owned view.
    std::vector<float> mine(4, 1.0f);
    Tensor v = Tensor::view(mine.data(), {4}, float32, {}, Device::cpu());
    const Array total = sum(v);
    mine[0] = 10.0f;
    CHECK(total.item<float>() == 13.0f);
}

TEST_CASE("arrays keep their input tensors alive, dropping the array frees them") {
    std::weak_ptr<Storage> storage;
    std::vector<float> expect(64);
    Array y;
    {
        Tensor x = random_host({64}, float32, 9);
        storage = x.storage();
        for (int k = 0; k < 64; ++k) expect[static_cast<std::size_t>(k)] = f32(x)[k] * 3.0f;
        y = x * 3.0;
    }  // the Tensor handle is gone
    CHECK_FALSE(storage.expired());
    Tensor out = y;
    for (int k = 0; k < 64; ++k) CHECK(f32(out)[k] == expect[static_cast<std::size_t>(k)]);
    y = Array();
    CHECK(storage.expired());  // the graph held the only reference
}

TEST_CASE("a chain of 10,000 ops evaluates on the host and frees without recursion") {
    // One graph of 10,000 ops: the lazy graph size limit is off here (test_lazy_limit.cpp tests it).
    struct NoLimit {
        std::uint32_t old = set_lazy_node_limit(0);
        ~NoLimit() { set_lazy_node_limit(old); }
    } no_limit;
    const std::size_t live_before = ir::live_node_count();
    std::weak_ptr<Storage> storage;
    {
        Tensor x = random_host({16}, float32, 10);
        storage = x.storage();
        std::vector<float> expect(f32(x), f32(x) + 16);
        Array a = x;
        for (int k = 0; k < 10000; ++k) {
            if (k % 2 == 0) {
                a = a * 0.5;
                for (float& v : expect) v = v * 0.5f;
            } else {
                a = a + 1.0;
                for (float& v : expect) v = v + 1.0f;
            }
        }
        CHECK(ir::topo_order({a.node()}).size() >= 10000);
        Tensor out = a;
        for (int k = 0; k < 16; ++k) CHECK(f32(out)[k] == expect[static_cast<std::size_t>(k)]);
        CHECK(mean(a).item<float>() == doctest::Approx(2.0));  // the chain converges to 2 whatever x is
    }
    CHECK(storage.expired());
    CHECK(ir::live_node_count() == live_before);
}

TEST_CASE("inputs on different devices are an error naming both devices") {
    std::vector<float> buf(16, 0.0f);
    // A non-owning "cuda" view: made without touching a GPU (the pointer is never dereferenced here).
    Tensor g = Tensor::view(buf.data(), {16}, float32, {}, Device::cuda(0));
    Tensor h = Tensor::host({16}, float32);
    const int line = __LINE__ + 1;
    const Array mixed = g + h;
    std::string msg;
    bool no_device = false;
    try {
        Tensor out = mixed;
    } catch (const NoDeviceError&) {
        no_device = true;
    } catch (const Error& e) {
        msg = e.what();
    }
    CHECK_FALSE(no_device);  // the placement error comes first, GPU or not
    const std::string here = fmt::format("(test_dsl_eval.cpp:{})", line);
    CHECK(msg ==
          fmt::format("eval(): inputs on different devices: [16] float32 on cuda:0 {0} and [16] float32 on "
                      "cpu {0} {0}",
                      here));
    // eval() names its own call site.
    const int eval_line = __LINE__ + 1;
    const std::string m2 = loom_test::error_message([&] { (void)mixed.eval(); });
    CHECK(contains(m2, "cuda:0"));
    CHECK(contains(m2, "cpu"));
    CHECK(contains(m2, fmt::format("(test_dsl_eval.cpp:{})", eval_line)));
    CHECK_THROWS_AS((void)eval(h * 2.0, g * 2.0), Error);

    // assign() of a cuda graph into a host tensor names both devices too.
    Tensor host_out = Tensor::host({16}, float32);
    std::string amsg;
    try {
        assign(host_out, g * 2.0);
    } catch (const NoDeviceError&) {
        amsg = "NoDeviceError";
    } catch (const Error& e) {
        amsg = e.what();
    }
    CHECK(contains(amsg, "assign(): output on cpu but the inputs are on cuda:0"));
}

TEST_CASE("evaluating a graph of CUDA tensors without a GPU throws NoDeviceError") {
    if (cuda_available()) {
        MESSAGE("a CUDA device is present: the no-GPU behaviour is not tested here");
        return;
    }
    std::vector<float> buf(16, 0.0f);
    Tensor g = Tensor::view(buf.data(), {16}, float32, {}, Device::cuda(0));
    const Array y = relu(g * 2.0 + 1.0);
    CHECK_THROWS_AS((void)y.eval(), NoDeviceError);
    CHECK_THROWS_AS((void)sum(g).item<float>(), NoDeviceError);
    CHECK_THROWS_AS((void)eval(y, g - 1.0), NoDeviceError);
    // Code generation still works without a GPU.
    CHECK(contains(cuda_source({y}), "__global__"));
    CHECK(std::all_of(buf.begin(), buf.end(), [](float v) { return v == 0.0f; }));  // untouched
}

TEST_CASE("check_against_reference over host arrays passes") {
    Tensor x = random_host({8, 16}, float32, 11);
    Tensor s = random_host({16}, float32, 12);
    const Array y = gelu(x * s + 0.5);
    const testing::Comparison c = testing::check_against_reference({y, sigmoid(x)});
    CHECK(c.ok);
    CHECK(c.count > 0);
}
