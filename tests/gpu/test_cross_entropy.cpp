// cross_entropy on the GPU: the losses against the CPU reference within the contract's tolerance (logsumexp's
// exp and log) for float32 and bfloat16 logits, mean, sum and none, with ignored rows; fused equals unfused
// bit for bit; a label out of range raises at the next synchronization naming cross_entropy and the label,
// and the runtime stays usable.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

const Device cuda0 = Device::cuda(0);

Tensor labels_of(std::int64_t rows, std::int64_t classes, std::uint64_t seed) {
    Tensor l = testing::random_tensor({rows}, int64, seed, testing::Random::uniform(0, double(classes - 1)));
    auto* p = static_cast<std::int64_t*>(l.data());
    for (std::int64_t i = 0; i < rows; i += 9) p[i] = -100;
    return l;
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("cross_entropy on the GPU: against the reference, every reduction, float32 and bfloat16") {
    for (const std::int64_t classes : {std::int64_t{7}, std::int64_t{1000}, std::int64_t{8192}}) {
        const std::int64_t rows = 131;
        const Tensor labels = labels_of(rows, classes, 2).to(cuda0);
        for (const DType dt : {float32, bfloat16}) {
            const Tensor x =
                testing::random_tensor({rows, classes}, dt, 1, testing::Random::normal(0.0, 4.0)).to(cuda0);
            for (const LossReduction r : {LossReduction::Mean, LossReduction::Sum, LossReduction::None}) {
                const Array y = cross_entropy(x, labels, {.reduction = r});
                Tensor out = Tensor::empty(y.shape(), y.dtype(), cuda0);
                testing::poison(out);
                assign(out, y);
                const testing::Comparison c = testing::check_against_reference({y.node()}, {out});
                CHECK_MESSAGE(c.ok, classes << " classes " << name(dt) << ": " << c.message);
                Tensor unfused;
                {
                    Options o = current_options();
                    o.fusion = false;
                    const OptionsScope scope(o);
                    unfused = Tensor(cross_entropy(x, labels, {.reduction = r}));
                }
                CHECK(testing::same_bits(out, unfused));
            }
        }
    }
}

TEST_CASE("cross_entropy on the GPU: a label out of range raises at the next synchronization, not sticky") {
    const Tensor x = testing::random_tensor({64, 10}, float32, 3).to(cuda0);
    Tensor l = labels_of(64, 10, 4);
    static_cast<std::int64_t*>(l.data())[17] = 10;
    Tensor out = Tensor::empty({}, float32, cuda0);
    const int line = __LINE__ + 1;
    assign(out, cross_entropy(x, l.to(cuda0)));
    const std::string msg = error_of([] { synchronize(); });
    CHECK_MESSAGE(msg.find("cross_entropy(): label 10 is out of range for 10 classes") != std::string::npos,
                  msg);
    CHECK_MESSAGE(msg.find(fmt::format("test_cross_entropy.cpp:{}", line)) != std::string::npos, msg);
    static_cast<std::int64_t*>(l.data())[17] = -2;
    assign(out, cross_entropy(x, l.to(cuda0)));
    CHECK(error_of([] { synchronize(); }).find("label -2 is out of range") != std::string::npos);
    static_cast<std::int64_t*>(l.data())[17] = 3;
    assign(out, cross_entropy(x, l.to(cuda0)));
    CHECK_NOTHROW(synchronize());
}
