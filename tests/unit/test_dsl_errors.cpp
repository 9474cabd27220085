// DSL misuse errors: loom::Error messages start with the API name, give shapes and dtypes, and name the
// user's file:line (operators through the Operand conversion, free functions through their Loc argument).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <loom/loom.hpp>
#include <string>

#include "error_message.hpp"

using namespace loom;

namespace {

/// " (test_dsl_errors.cpp:<line>)": the location suffix every message ends with.
std::string at(int line) {
    return fmt::format(" (test_dsl_errors.cpp:{})", line);
}

bool starts_with(const std::string& s, const std::string& p) {
    return s.rfind(p, 0) == 0;
}
bool ends_with(const std::string& s, const std::string& p) {
    return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

}  // namespace

TEST_CASE("shapes that do not broadcast: operators and free functions name the user's line") {
    Tensor x = Tensor::host({4096, 512}, float32);
    Tensor y = Tensor::host({4096}, float32);
    const Array ax = x, ay = y;

    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { (void)(x + y); });
    CHECK(msg == "add(): shapes [4096, 512] float32 and [4096] float32 do not broadcast" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)(ax * ay); });
    CHECK(msg == "mul(): shapes [4096, 512] float32 and [4096] float32 do not broadcast" + at(line));

    // The left operand being a temporary from another op still reports this line.
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)(relu(ax) - ay); });
    CHECK(msg == "sub(): shapes [4096, 512] float32 and [4096] float32 do not broadcast" + at(line));

    // A weak scalar on the left: the location comes from the scalar's conversion.
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)(2.0 * ax / ay); });
    CHECK(msg == "div(): shapes [4096, 512] float32 and [4096] float32 do not broadcast" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)maximum(x, y); });
    CHECK(msg == "maximum(): shapes [4096, 512] float32 and [4096] float32 do not broadcast" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)(ax < ay); });
    CHECK(msg == "lt(): shapes [4096, 512] float32 and [4096] float32 do not broadcast" + at(line));

    // Ternary ops list all three operands.
    Tensor c = Tensor::host({4096, 512}, bool_);
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)where(c, x, y); });
    CHECK(starts_with(msg, "where(): shapes "));
    CHECK(msg.find("[4096] float32") != std::string::npos);
    CHECK(ends_with(msg, at(line)));

    // Row broadcasting is fine: [4096, 512] with [512].
    Tensor row = Tensor::host({512}, float32);
    CHECK((x + row).shape() == Shape{4096, 512});
}

TEST_CASE("reductions: axes out of range and repeated axes") {
    Tensor x = Tensor::host({4096, 512}, float32);

    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { (void)sum(x, {0, 0}); });
    CHECK(msg == "sum(): axis 0 repeated in [0, 0] for operand [4096, 512] float32" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)max(x, 2); });
    CHECK(msg == "max(): axis 2 out of range for operand [4096, 512] float32" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)mean(x, {-3}); });
    CHECK(starts_with(msg, "mean(): axis -3 out of range for operand [4096, 512] float32"));
    CHECK(ends_with(msg, at(line)));

    // -1 and 1 name the same axis.
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)argmax(x, {1, -1}, true); });
    CHECK(starts_with(msg, "argmax(): axis "));
    CHECK(msg.find("repeated") != std::string::npos);
    CHECK(ends_with(msg, at(line)));

    // Valid axes, for contrast.
    CHECK(sum(x, {0, 1}).shape() == Shape{});
    CHECK(sum(x, -1, true).shape() == Shape{4096, 1});
}

TEST_CASE("views: reshape of the wrong size, bad permutations, transpose of a vector") {
    Tensor x = Tensor::host({4096, 512}, float32);
    const Array a = x;

    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { (void)reshape(x, {1000}); });
    CHECK(msg ==
          "reshape(): cannot reshape [4096, 512] float32 (2097152 elements) to [1000] (1000 elements)" +
              at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)a.reshape({512, 512}); });
    CHECK(starts_with(msg, "reshape(): cannot reshape [4096, 512] float32"));
    CHECK(ends_with(msg, at(line)));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)a.reshape({-1, -1}); });
    CHECK(starts_with(msg, "reshape(): more than one -1"));
    CHECK(ends_with(msg, at(line)));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)permute(a, {0, 0}); });
    CHECK(starts_with(msg, "permute(): [0, 0] is not a permutation of the axes of [4096, 512] float32"));
    CHECK(ends_with(msg, at(line)));

    Tensor v = Tensor::host({8}, float32);
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)transpose(v); });
    CHECK(msg == "transpose(): operand [8] float32 has rank below 2" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)broadcast_to(x, {4096, 3}); });
    CHECK(msg == "broadcast_to(): operand [4096, 512] float32 does not broadcast to [4096, 3]" + at(line));
}

TEST_CASE("slicing: index out of range and step 0") {
    Tensor x = Tensor::host({10, 6}, float32);
    const Array a = x;
    using S = ir::SliceSpec;

    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { (void)a.slice({S{0, 10, 0}}); });
    CHECK(msg == "slice(): step 0 on axis 0 of [10, 6] float32" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)a.slice({S{}, S{0, 7, 1}}); });
    CHECK(starts_with(msg, "slice(): "));
    CHECK(msg.find("7 out of range on axis 1 of [10, 6] float32") != std::string::npos);
    CHECK(ends_with(msg, at(line)));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)a.slice({S{-11, S::kNone, 1}}); });
    CHECK(msg.find("-11 out of range on axis 0") != std::string::npos);
    CHECK(ends_with(msg, at(line)));

    // In range, including negative indices and steps (Python semantics).
    CHECK(a.slice({S{1, -1, 1}}).shape() == Shape{8, 6});
    CHECK(a.slice({S{S::kNone, S::kNone, -2}, S{0, 6, 3}}).shape() == Shape{5, 2});
}

TEST_CASE("bitwise and shift ops on floats, arithmetic on bool") {
    Tensor x = Tensor::host({4}, float32);
    Tensor y = Tensor::host({4}, float32);
    Tensor i = Tensor::host({4}, int32);
    Tensor b = Tensor::host({4}, bool_);

    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { (void)(x & y); });
    CHECK(msg == "bitwise_and(): operands [4] float32 and [4] float32: bitwise ops take integers or bool" +
                     at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)(i | x); });
    CHECK(msg ==
          "bitwise_or(): operands [4] int32 and [4] float32: bitwise ops take integers or bool" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)bitwise_xor(x, 1); });
    CHECK(starts_with(
        msg, "bitwise_xor(): operands [4] float32 and [] float32: bitwise ops take integers or bool"));
    CHECK(ends_with(msg, at(line)));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)(x << i); });
    CHECK(msg == "shift_left(): operands [4] float32 and [4] int32: shifts take integers" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)(b + b); });
    CHECK(msg == "add(): operands [4] bool and [4] bool: arithmetic on bool; cast first" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)neg(b); });
    CHECK(starts_with(msg, "neg(): operand [4] bool is bool"));
    CHECK(ends_with(msg, at(line)));

    // Integers and bool are fine.
    CHECK((i & 6).dtype() == int32);
    CHECK((b ^ b).dtype() == bool_);
}

TEST_CASE("a weak scalar outside an integer dtype's range") {
    Tensor i8 = Tensor::host({4}, int8);
    Tensor u8 = Tensor::host({4}, uint8);
    Tensor i32 = Tensor::host({4}, int32);

    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { (void)(i8 + 300); });
    CHECK(msg == "add(): scalar 300 is out of range for int8 [-128, 127]" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)(u8 + (-1)); });
    CHECK(msg == "add(): scalar -1 is out of range for uint8 [0, 255]" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)(-129 * i8); });
    CHECK(msg == "mul(): scalar -129 is out of range for int8 [-128, 127]" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)minimum(i32, 3000000000LL); });
    CHECK(starts_with(msg, "minimum(): scalar 3000000000 is out of range for int32"));
    CHECK(ends_with(msg, at(line)));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)clamp(u8, 0, 256); });
    CHECK(starts_with(msg, "clamp(): scalar 256 is out of range for uint8"));
    CHECK(ends_with(msg, at(line)));

    // Edges of the range are values of the dtype; a float scalar promotes an integer array to float32.
    CHECK((i8 + 127).dtype() == int8);
    CHECK((i8 + (-128)).dtype() == int8);
    CHECK((u8 + 255).dtype() == uint8);
    CHECK((i32 * 0.5).dtype() == float32);
    CHECK((i8 + 300.0).dtype() == float32);
}

TEST_CASE("evaluation misuse: item() of many elements, assign() into the wrong tensor, empty arrays") {
    Tensor x = Tensor::host({2, 3}, float32);
    testing::fill_random(x, 7);
    const Array a = x * 2.0;

    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { (void)a.item<float>(); });
    CHECK(msg == "item(): array [2, 3] float32 has 6 elements, not 1" + at(line));

    Tensor wrong_shape = Tensor::host({3, 2}, float32);
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(wrong_shape, a); });
    CHECK(msg == "assign(): output [3, 2] float32 does not match the array [2, 3] float32" + at(line));

    Tensor wrong_dtype = Tensor::host({2, 3}, float64);
    msg = loom_test::error_message([&] { assign(wrong_dtype, a); });
    CHECK(starts_with(msg, "assign(): output [2, 3] float64 does not match the array [2, 3] float32"));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign({x}, {a, a}); });
    CHECK(msg == "assign(): 1 outputs for 2 arrays" + at(line));

    const Array empty;
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)(empty + 1.0); });
    CHECK(msg == "add(): empty Array operand" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)eval(std::vector<Array>{a, empty}); });
    CHECK(msg == "eval(): empty Array" + at(line));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)eval(a, empty); });
    CHECK(msg == "eval(): empty Array" + at(line));  // the pack form names the caller's line too
    line = __LINE__ + 2;
    msg = loom_test::error_message([&] {
        auto [p, q, r] = eval(a, a * 2.0, empty);
        (void)p;
    });
    CHECK(msg == "eval(): empty Array" + at(line));

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)empty.eval(); });
    CHECK(msg == "eval(): empty Array" + at(line));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)empty.item<float>(); });
    CHECK(msg == "item(): empty Array" + at(line));
    msg = loom_test::error_message([&] { Tensor t = empty; });
    CHECK(msg == "eval(): empty Array (converted to a Tensor)");

    const Tensor undefined;
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)Array(undefined); });
    CHECK(msg == "Array(): undefined (empty) Tensor" + at(line));
}
TEST_CASE("an expression over several lines names the line of the failing operator or call") {
    Tensor x = Tensor::host({4096, 512}, float32);
    Tensor y = Tensor::host({4096}, float32);
    const Array ax = x, ay = y;
    // g++ places an operator call (and the default arguments of its operand conversions) at the operator.
    int line = __LINE__ + 6;
    // The expressions' lines are the test:
    // clang-format off
    std::string msg = loom_test::error_message([&] {
        (void)(relu(ax)
               * 2.0
               + ay);
    });
    CHECK(msg == "add(): shapes [4096, 512] float32 and [4096] float32 do not broadcast" + at(line));
    // A free function: the line where the call starts.
    msg = loom_test::error_message([&] {
        line = __LINE__; (void)add(ax,
                                   ay);
    });
    // clang-format on
    CHECK(msg == "add(): shapes [4096, 512] float32 and [4096] float32 do not broadcast" + at(line));
}
