// NVTX ranges (runtime/src/nvtx.hpp): off unless LOOM_NVTX=1, read once; a disabled range builds no name;
// with LOOM_NVTX=1 (the "unit-nvtx" run of CTest) evaluations, traced calls, compiles and copies run through
// their ranges (no-ops without a profiler attached) and give the same results.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <loom/loom.hpp>
#include <string>

#include "../../runtime/src/nvtx.hpp"
#include "../common/needs_cuda.hpp"

using namespace loom;

TEST_CASE("nvtx: ranges follow LOOM_NVTX, and a disabled range builds no name") {
    const char* v = std::getenv("LOOM_NVTX");
    const bool want = v && std::strcmp(v, "1") == 0;
    CHECK(detail::nvtx_enabled() == want);
    int named = 0;
    {
        const detail::NvtxRange range([&] {
            ++named;
            return std::string("test range");
        });
    }
    CHECK(named == (want ? 1 : 0));
}

TEST_CASE("nvtx: evaluations, traced calls, compiles and copies under ranges give the same results" *
          loom_test::needs_cuda()) {
    const Tensor x = testing::random_tensor({1000}, float32, 9);
    const Tensor y = relu(Array(x) * 1.5 + 0.25);
    Tensor out = Tensor::host({1000}, float32);
    assign(out, relu(Array(x) * 1.5 + 0.25));
    auto f = loom::function("nvtx_probe", [](Array a) { return relu(a * 1.5 + 0.25); });
    const Tensor z = f(x);
    CHECK(std::memcmp(y.data(), out.data(), y.nbytes()) == 0);
    CHECK(std::memcmp(y.data(), z.data(), y.nbytes()) == 0);
    CHECK(compile({relu(Array(x) * 1.5 + 0.25)}, "nvtx_probe").kernels == 1);
    CHECK(x.clone().to_vector<float>() == x.to_vector<float>());
}
