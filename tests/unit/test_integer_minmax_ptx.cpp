// Integer maxima and minima of negated values compile to PTX in which no negation feeds an integer min or
// max instruction. On sm_90, ptxas fuses a chain of such min/max into one three-input VIMNMX3 and drops a
// negation (a wrong result, silently; codegen/src/cuda/prelude.cuh, "Integers: a compare and a select"), so
// Loom's integer minimum and maximum compile to a compare and a select. The programs are those of
// tests/gpu/test_integer_minmax.cpp, which checks their values on the GPU. No GPU: PTX through NVRTC.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <loom/loom.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../common/needs_cuda.hpp"

using namespace loom;

namespace {

// The PTX lines where an integer min/max instruction reads a register that a neg instruction wrote.
std::vector<std::string> negations_into_min_max(const std::string& ptx) {
    static const std::regex neg(R"(^\s*neg\.[su](16|32|64)\s+(%[a-z]+[0-9]+),)");
    static const std::regex minmax(
        R"(^\s*(min|max)\.[su](16|32|64)\s+%[a-z]+[0-9]+,\s*(%?[a-z0-9]+),\s*(%?[a-z0-9]+);)");
    std::set<std::string> negated;
    std::vector<std::string> hazards;
    std::istringstream lines(ptx);
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (line.find(".entry ") != std::string::npos) negated.clear();  // registers are per function
        if (std::regex_search(line, m, neg)) negated.insert(m[2]);
        if (std::regex_search(line, m, minmax) && (negated.count(m[3]) || negated.count(m[4])))
            hazards.push_back(line);
    }
    return hazards;
}

}  // namespace

TEST_CASE("PTX: no integer negation feeds an integer min or max (the ptxas VIMNMX3 miscompile)" *
          loom_test::needs_cuda()) {
    // The scanner finds the pattern where it is.
    CHECK(negations_into_min_max("\tneg.s32 \t%r89, %r81;\n\tmax.s32 \t%r90, %r268, %r89;\n").size() == 1);
    CHECK(negations_into_min_max("\tneg.s32 \t%r89, %r81;\n\tmax.s32 \t%r90, %r268, %r88;\n").empty());

    const Tensor i32 = testing::random_tensor({5, 1000}, int32, 1);
    const Tensor i64 = testing::random_tensor({5, 1000}, int64, 2);
    const Tensor i8 = testing::random_tensor({5, 1000}, int8, 3);
    const Tensor a8 = testing::random_tensor({1, 5}, int8, 4);
    const Tensor b8 = testing::random_tensor({5, 32}, int8, 5);
    const Array p = matmul(a8, b8);  // int32
    const struct {
        const char* what;
        Array y;
    } cases[] = {
        {"max of -x, int32", max(-Array(i32), 1)},
        {"min of x * -1, int32", min(Array(i32) * -1, 1)},
        {"max of -x, int64", max(-Array(i64), 1)},
        {"max of -x, int8", max(-Array(i8), 1)},
        {"maximum chain of negations, int32",
         maximum(maximum(-Array(i32), -(Array(i32) + 1)), -(Array(i32) * 3))},
        {"minimum chain of negations, int8",
         minimum(minimum(-Array(i8), -(Array(i8) + 1)), -(Array(i8) * 3))},
        {"clamp of -x, int32", clamp(-Array(i32), -5, 5)},
        {"relu of -x then max, int32", max(relu(-Array(i32)), 1)},
        {"cummax of -x, int32", cummax(-Array(i32), 1)},
        {"cummin of -x, int64", cummin(-Array(i64), 1)},
        {"max of -(int8 product)", max(-p, 1)},
    };
    for (const auto& c : cases) {
        const std::vector<std::string> hazards = negations_into_min_max(ptx({c.y}, "minmax"));
        CHECK_MESSAGE(hazards.empty(), std::string(c.what)
                                           << ": " << hazards.size() << " negations feed a min/max, first: "
                                           << (hazards.empty() ? "" : hazards[0]));
    }
}
