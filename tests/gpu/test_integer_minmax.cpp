// Integer maxima and minima of negated values on the GPU: the reference's values. On sm_90, ptxas fuses a
// chain of integer min/max whose operands are negations into one three-input VIMNMX3 and drops a negation;
// Loom's integer minimum and maximum compile to a compare and a select instead
// (codegen/src/cuda/prelude.cuh). A max reduction of the negated int8 product below gave 4165 for 7990
// before. Rows of 4 (one 16-byte load per lane), 32, 1000 and 70000; reductions, elementwise chains, clamp,
// relu and scans; int8, int32, int64.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>
#include <loom/loom.hpp>
#include <string>

#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"
#include "test_pointwise_util.hpp"

using namespace loom;

namespace {

const Device cuda0 = Device::cuda(0);

// Integers of the whole range of t (random_tensor's integers are small: the products of negations need
// large ones), on the GPU.
Tensor wide_integers(const Shape& s, DType t, std::uint64_t seed) {
    const Tensor u = testing::random_tensor(s, DType::Float64, seed, testing::Random::uniform(0.0, 1.0));
    const double lo = t == DType::Int8 ? -128.0 : t == DType::Int32 ? -2147483648.0 : -9.2e18;
    const double span = t == DType::Int8 ? 256.0 : t == DType::Int32 ? 4294967296.0 : 1.84e19;
    return floor(Array(u) * span + lo).astype(t).eval().to(cuda0);
}

// Evaluates `y` into poisoned, then random-filled outputs on the GPU and checks it against the reference
// (exact for these integer ops): pwtest::run_one.
void check_exact(const Array& y, const std::string& what) {
    INFO(what);
    (void)pwtest::run_one(y);
}

}  // namespace

TEST_CASE("integer min and max of negated values on the GPU: the reference's values") {
    for (DType t : {DType::Int8, DType::Int32, DType::Int64})
        for (std::int64_t n : {4, 32, 1000, 70000}) {
            const Tensor x = wide_integers({3, n}, t, static_cast<std::uint64_t>(n) + 7);
            const Array a(x);
            const std::string s = fmt::format("{} [3, {}]", name(t), n);
            check_exact(max(-a, 1), "max of -x, " + s);
            check_exact(min(-a, 1), "min of -x, " + s);
            check_exact(max(a * -1, 1, true) - a, "max of x * -1, then minus x, " + s);
            check_exact(maximum(maximum(-a, -(a + 1)), -(a * 3)), "maximum of three negations, " + s);
            check_exact(minimum(minimum(-a, -(a + 1)), -(a * 3)), "minimum of three negations, " + s);
            check_exact(clamp(-a, -5, 5), "clamp of -x, " + s);
            check_exact(max(relu(-a), 1), "max of relu(-x), " + s);
            if (t != DType::Int8) {  // int8 scans accumulate in int64: no negated int8 reaches a min/max
                check_exact(cummax(-a, 1), "cummax of -x, " + s);
                check_exact(cummin(-a, 1), "cummin of -x, " + s);
            }
        }
}

TEST_CASE("the max of a negated int8 product on the GPU (a fuzz case)") {
    // a = -85 times b = [37, 49, 94, 39]: the max of the negated products is 85 * 94 = 7990.
    Tensor a = Tensor::host({1, 1}, DType::Int8), b = Tensor::host({1, 4}, DType::Int8);
    const signed char av = -85, bv[4] = {37, 49, 94, 39};
    std::memcpy(a.data(), &av, 1);
    std::memcpy(b.data(), bv, 4);
    const Array p = reshape(matmul(a.to(cuda0), b.to(cuda0)), {4});
    check_exact(max(p * -1, 0), "max of -(a b)");
    const Tensor got = max(p * -1, 0).eval().to_host();
    CHECK(*static_cast<const int*>(got.data()) == 7990);
    const Tensor x = wide_integers({17, 5}, DType::Int8, 11), y = wide_integers({5, 32}, DType::Int8, 12);
    const Array q = matmul(x, y) * -1;
    check_exact(q - max(q, 1, true), "the fuzz program's shape: -(x y) - max(-(x y))");
}
