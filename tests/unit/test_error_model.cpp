// The error model of docs/semantics.md, section 11 ("Errors"), on host tensors (no GPU; the CPU reference
// evaluates): which exception types exist, that an error raised at the call leaves every preallocated
// output's bytes as they were and Loom usable, that messages name the API, the shapes and dtypes and the
// caller's file:line, out of memory at allocation, NVRTC's CompileError, and how LOOM_SYNC is read. The GPU
// half (device outputs, asynchronous faults, LOOM_SYNC=1 in processes of their own) is
// tests/gpu/test_error_model.cpp.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <loom/loom.hpp>
#include <loom/runtime/host_backend.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../common/needs_cuda.hpp"
#include "error_message.hpp"

using namespace loom;

namespace {

/// " (test_error_model.cpp:<line>)": the location suffix of a message raised for that line.
std::string at(int line) {
    return fmt::format(" (test_error_model.cpp:{})", line);
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}
bool starts_with(const std::string& s, const std::string& p) {
    return s.rfind(p, 0) == 0;
}
bool ends_with(const std::string& s, const std::string& p) {
    return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

/// The bytes of a contiguous host tensor.
std::vector<unsigned char> bytes_of(const Tensor& t) {
    REQUIRE(!t.device().is_cuda());
    REQUIRE(t.is_contiguous());
    const auto* p = static_cast<const unsigned char*>(t.data());
    return {p, p + t.nbytes()};
}

/// A host tensor filled with testing::poison()'s pattern, and a copy of its bytes to compare with later.
struct Poisoned {
    Tensor t;
    std::vector<unsigned char> before;
    Poisoned(const Shape& shape, DType dtype) : t(Tensor::host(shape, dtype)) {
        testing::poison(t);
        before = bytes_of(t);
    }
    bool untouched() const { return bytes_of(t) == before; }
};

}  // namespace

TEST_CASE("error model: the exception types (user errors are loom::Error, bugs are InternalError)") {
    // Every error a user can cause is a loom::Error (a std::runtime_error); the runtime's kinds derive from
    // it.
    static_assert(std::is_base_of_v<std::runtime_error, Error>);
    static_assert(std::is_base_of_v<Error, CompileError>);
    static_assert(std::is_base_of_v<Error, OutOfMemory>);
    static_assert(std::is_base_of_v<Error, NoDeviceError>);
    static_assert(std::is_base_of_v<Error, CudaError>);
    // A failed internal check is not a loom::Error: `catch (const loom::Error&)` does not swallow a bug.
    static_assert(!std::is_base_of_v<Error, InternalError>);
    static_assert(std::is_base_of_v<std::logic_error, InternalError>);
    const std::string bug = InternalError("x").what();
    CHECK(bug == "loom internal error (this is a bug in Loom, please report it): x");
    try {
        LOOM_CHECK(1 + 1 == 3, "arithmetic is {}", "broken");
        FAIL("LOOM_CHECK did not throw");
    } catch (const InternalError& e) {
        const std::string msg = e.what();
        CHECK(starts_with(msg, "loom internal error (this is a bug in Loom, please report it): "));
        CHECK(contains(msg, "test_error_model.cpp:"));
        CHECK(contains(msg, "check '1 + 1 == 3' failed: arithmetic is broken"));
    }
}

TEST_CASE("error model: an error while building an expression is raised by the op, before any evaluation") {
    Tensor x = testing::random_tensor({4096, 512}, float32, 1);
    Tensor y = testing::random_tensor({4096}, float32, 2);
    Poisoned out({4096, 512}, float32);
    // assign() never runs: `x + y` throws first, naming the operator's line, shapes and dtypes.
    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { assign(out.t, x + y); });
    CHECK(msg == "add(): shapes [4096, 512] float32 and [4096] float32 do not broadcast" + at(line));
    CHECK(out.untouched());
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(out.t, sum(x, 2) + 1.0); });
    CHECK(msg == "sum(): axis 2 out of range for operand [4096, 512] float32" + at(line));
    CHECK(out.untouched());
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(out.t, Array(x).reshape({512, 512}) * 2.0); });
    CHECK(starts_with(msg, "reshape(): cannot reshape [4096, 512] float32"));
    CHECK(ends_with(msg, at(line)));
    CHECK(out.untouched());
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(out.t, Array(x).slice({ir::SliceSpec{0, 4097, 1}}) * 2.0); });
    CHECK(starts_with(msg, "slice(): "));
    CHECK(contains(msg, "4097 out of range on axis 0 of [4096, 512] float32"));
    CHECK(ends_with(msg, at(line)));
    CHECK(out.untouched());
    Tensor flags = testing::random_tensor({4096, 512}, bool_, 3);
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(out.t, astype(flags + flags, float32)); });
    CHECK(msg ==
          "add(): operands [4096, 512] bool and [4096, 512] bool: arithmetic on bool; cast first" + at(line));
    CHECK(out.untouched());
    Tensor empty_rows = Tensor::host({0, 512}, float32);
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)max(empty_rows, 0); });
    CHECK(
        starts_with(msg, "max(): reduction of operand [0, 512] float32 over axes [0]: axis 0 has length 0"));
    CHECK(ends_with(msg, at(line)));
}

TEST_CASE("error model: an array whose bytes overflow a 64-bit count is refused where it is made") {
    // Elements that fit but bytes that do not: refused by the factory under its own name, not later by an
    // allocation inside eval() that knows neither the API nor the line.
    const Shape huge = {std::int64_t{1} << 62};
    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { (void)zeros(huge, float32, Device::cpu()); });
    CHECK(msg == "zeros(): shape [4611686018427387904] float32 has more bytes than a 64-bit count can hold" +
                     at(line));
    const Shape square = {std::int64_t{1} << 40, std::int64_t{1} << 40};
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)ones(square, int8, Device::cpu()); });
    CHECK(msg ==
          "ones(): shape [1099511627776, 1099511627776] has more elements than a 64-bit count can hold" +
              at(line));
    // An op whose result is wider than its operand: the int8 array fits, its float64 cast does not.
    const Array wide = full({std::int64_t{1} << 61}, 1.0, int8, Device::cpu());
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)astype(wide, float64); });
    CHECK(starts_with(msg, "cast(): shape [2305843009213693952] float64 has more elements or bytes"));
    CHECK(ends_with(msg, at(line)));
}

TEST_CASE("error model: bernoulli() refuses a probability outside [0, 1], NaN included") {
    for (const double p : {1.5, -0.25, std::nan("")}) {
        const int line = __LINE__ + 1;
        const std::string msg = loom_test::error_message([&] { (void)bernoulli(p, {4}, 7, Device::cpu()); });
        CHECK(msg == fmt::format("bernoulli(): probability {} is not in [0, 1]", p) + at(line));
    }
    CHECK(Tensor(bernoulli(1.0, {64}, 7, Device::cpu())).to_vector<int>() == std::vector<int>(64, 1));
    CHECK(Tensor(bernoulli(0.0, {64}, 7, Device::cpu())).to_vector<int>() == std::vector<int>(64, 0));
}

TEST_CASE(
    "error model: assign() checks every output before anything runs, and the outputs keep their bytes") {
    Tensor x = testing::random_tensor({2, 3}, float32, 11);
    const Array a = x * 2.0;
    const Array b = x - 1.0;
    Poisoned out({2, 3}, float32), other({2, 3}, float32);

    Poisoned wrong_shape({3, 2}, float32);
    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { assign(wrong_shape.t, a); });
    CHECK(msg == "assign(): output [3, 2] float32 does not match the array [2, 3] float32" + at(line));
    CHECK(wrong_shape.untouched());

    Poisoned wrong_dtype({2, 3}, float64);
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(wrong_dtype.t, a); });
    CHECK(msg == "assign(): output [2, 3] float64 does not match the array [2, 3] float32" + at(line));
    CHECK(wrong_dtype.untouched());

    // With several outputs, a later mismatch is found before the first output is written.
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign({out.t, wrong_dtype.t}, {a, b}); });
    CHECK(msg == "assign(): output [2, 3] float64 does not match the array [2, 3] float32" + at(line));
    CHECK(out.untouched());
    CHECK(wrong_dtype.untouched());

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign({out.t}, {a, b}); });
    CHECK(msg == "assign(): 1 outputs for 2 arrays" + at(line));
    CHECK(out.untouched());

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign({out.t, out.t}, {a, b}); });
    CHECK(msg == "assign(): outputs 0 and 1 share memory; each result needs its own" + at(line));
    CHECK(out.untouched());

    const Tensor undefined;
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign({out.t, undefined}, {a, b}); });
    CHECK(msg == "assign(): output <undefined> does not match the array [2, 3] float32" + at(line));
    CHECK(out.untouched());

    // A placeholder (an input with no tensor bound, as a traced function's arguments are while tracing).
    const Array p(ir::input(float32, {2, 3}, "p"));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign({other.t, out.t}, {b, p * 2.0}); });
    CHECK(msg == "assign(): input p ([2, 3] float32) is a placeholder with no tensor bound" + at(line));
    CHECK(out.untouched());
    CHECK(other.untouched());

    // An output that overlaps itself (a broadcast view: a stride 0) is checked with the others, before
    // anything runs: with two outputs, the first one keeps its bytes too. (A transposed view is a valid
    // output.)
    Poisoned storage({1, 3}, float32);
    const Tensor broadcast = storage.t.as_strided({2, 3}, {0, 1}, 0);
    REQUIRE_FALSE(broadcast.is_non_overlapping());
    const std::string overlap =
        "assign(): output [2, 3] float32 with strides [0, 1] overlaps itself (a broadcast view); each "
        "element needs memory of its own";
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(broadcast, a); });
    CHECK(msg == overlap + at(line));
    CHECK(storage.untouched());
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign({out.t, broadcast}, {a, b}); });
    CHECK(msg == overlap + at(line));
    CHECK(out.untouched());
    CHECK(storage.untouched());

    // Nothing was left half done: the same outputs take correct results now.
    assign({out.t, other.t}, {a, b});
    for (std::int64_t i = 0; i < 6; ++i) {
        const float xi = static_cast<float>(x.get_double(i));
        CHECK(static_cast<float>(out.t.get_double(i)) == xi * 2.0f);
        CHECK(static_cast<float>(other.t.get_double(i)) == xi - 1.0f);
    }
}

TEST_CASE("error model: inputs and outputs on different devices are raised at the call, naming the devices") {
    // A non-owning "cuda" view of host memory, never dereferenced: the placement checks come before any GPU
    // work, so this runs the same with or without a GPU.
    std::vector<float> buf(6, 0.0f);
    const Tensor g = Tensor::view(buf.data(), {2, 3}, float32, {}, Device::cuda(0));
    Tensor h = testing::random_tensor({2, 3}, float32, 21);
    Poisoned out({2, 3}, float32);

    const Array mixed = g + h;
    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { assign(out.t, mixed); });
    CHECK(starts_with(msg, "assign(): inputs on different devices: "));  // the API called
    CHECK(contains(msg, "[2, 3] float32 on cuda:0"));
    CHECK(contains(msg, "[2, 3] float32 on cpu"));
    CHECK(ends_with(msg, at(line)));
    CHECK(out.untouched());

    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { assign(out.t, g * 2.0); });
    CHECK(msg == "assign(): output on cpu but the inputs are on cuda:0" + at(line));
    CHECK(out.untouched());
    CHECK(std::all_of(buf.begin(), buf.end(), [](float v) { return v == 0.0f; }));
}

TEST_CASE("error model: a traced function checks its outputs at the call, and the outputs keep their bytes") {
    auto f = loom::function("error_model_scale", [](Array x) { return x * 3.0 + 1.0; });
    const int def_line = __LINE__ - 1;
    Tensor x = testing::random_tensor({4, 3}, float32, 31);
    Poisoned wrong({4, 3}, float64), right({4, 3}, float32);
    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { f(x, wrong.t); });
    CHECK(starts_with(
        msg, "error_model_scale(): output 0 is [4, 3] float64 on cpu but the result is [4, 3] float32"));
    CHECK(contains(
        msg, fmt::format("(test_error_model.cpp:{}; the function is defined at test_error_model.cpp:{})",
                         line, def_line)));
    CHECK(wrong.untouched());
    f(x, right.t);
    CHECK_FALSE(right.untouched());
    for (std::int64_t i = 0; i < 12; ++i) {
        const float product = static_cast<float>(x.get_double(i)) * 3.0f;
        CHECK(static_cast<float>(right.t.get_double(i)) == product + 1.0f);
    }
}

TEST_CASE(
    "error model: out of memory at allocation is an OutOfMemory raised at the call, outputs untouched") {
    // 2^60 bytes: beyond any address space, so the allocation fails whatever the overcommit policy. The input
    // is one byte broadcast by a zero stride; the output is the sum of its elements times 3, whose operand
    // the reference materializes (an output may not overlap itself, so the huge array is an intermediate).
    // The LLVM back end fuses the product into the reduction and materializes nothing of n bytes; it shares
    // the one long row's chunks of 8192 among tasks, whose partials (16 bytes per chunk, 2^51 bytes) are its
    // first and only allocation.
    const std::int64_t n = std::int64_t{1} << 60;
    const bool llvm = host_backend_info().llvm;
    const std::int64_t requested = llvm ? n / 8192 * 16 : n;
    unsigned char in_byte = 7;
    std::int64_t out_value = 0x5a5a5a5a;
    const Tensor in = Tensor::view(&in_byte, {n}, uint8, {0}, Device::cpu());
    const Tensor out = Tensor::view(&out_value, {}, int64, {}, Device::cpu());
    try {
        assign(out, sum(Array(in) * 3));
        FAIL("no OutOfMemory");
    } catch (const OutOfMemory& e) {
        const std::string msg = e.what();
        MESSAGE(msg);
        CHECK(e.requested() == static_cast<std::size_t>(requested));
        CHECK(starts_with(msg, fmt::format("out of memory: allocating {} bytes ({}) of host memory failed",
                                           requested, llvm ? "2.0 PiB" : "1.0 EiB")));
    }
    CHECK(out_value ==
          0x5a5a5a5a);  // the reference evaluates into its own memory first: nothing reached the output
    CHECK(in_byte == 7);
    CHECK_THROWS_AS((void)(Array(in) * 3).eval(), OutOfMemory);
    // OutOfMemory is a loom::Error; Loom is usable afterwards.
    CHECK_THROWS_AS((void)(Array(in) + 1).eval(), Error);
    Tensor small = testing::random_tensor({8}, uint8, 41);
    Tensor r = Array(small) * 3;
    for (std::int64_t i = 0; i < 8; ++i)
        CHECK(r.get_int(i) == static_cast<std::uint8_t>(small.get_int(i) * 3));
}

TEST_CASE(
    "error model: NVRTC rejecting a kernel is a CompileError raised at the call, with log, options and "
    "source" *
    loom_test::needs_cuda()) {
    // Loom's own kernels are generated from the IR and kernel names are sanitized (codegen/src/names.cpp), so
    // no input to assign(), eval(), compile() or a traced function reaches NVRTC as unchecked text: through
    // those a CompileError means a bug in Loom's code generator. The NVRTC wrapper is public API
    // (loom/runtime/nvrtc.hpp), and a source it rejects shows the error's contents. No GPU needed.
    const std::string source = "extern \"C\" __global__ void error_model_broken() { this is not C++; }\n";
    nvrtc::Options options;  // sm_90 (an H200), as without a GPU
    // A CompileError is a loom::Error.
    CHECK_THROWS_AS((void)nvrtc::compile("error_model_broken", source, options), Error);
    try {
        (void)nvrtc::compile("error_model_broken", source, options);
        FAIL("no CompileError");
    } catch (const CompileError& e) {
        const std::string msg = e.what();
        MESSAGE(msg);
        CHECK(starts_with(msg, "NVRTC failed for kernel error_model_broken (source saved to "));
        CHECK(contains(msg, "options: --gpu-architecture=sm_90 -std=c++17 --fmad=true"));
        CHECK(!e.log().empty());
        CHECK(contains(msg, e.log()));
        CHECK(e.options() == nvrtc::option_list(options));
        REQUIRE(!e.source_path().empty());
        std::ifstream saved(e.source_path());
        const std::string text((std::istreambuf_iterator<char>(saved)), std::istreambuf_iterator<char>());
        CHECK(text == source);
        std::error_code ec;
        std::filesystem::remove(e.source_path(),
                                ec);  // the same path both times: the name and the source's hash
    }
}

TEST_CASE("nvrtc: arch-specific kernels compile for sm_XYa, and a PTX-only target for them is an Error" *
          loom_test::needs_cuda()) {
    nvrtc::Options options;  // compute capability 9.0 (an H200)
    options.arch_specific = true;
    CHECK(nvrtc::option_list(options).front() == "--gpu-architecture=sm_90a");
    options.arch = "sm_90";
    CHECK(nvrtc::option_list(options).front() == "--gpu-architecture=sm_90a");
    options.arch = "compute_90";
    CHECK_THROWS_AS((void)nvrtc::option_list(options), Error);
    options.arch_specific = false;
    CHECK(nvrtc::option_list(options).front() == "--gpu-architecture=compute_90");
}

TEST_CASE(
    "error model: a device evaluation without a GPU is a NoDeviceError at the call, outputs untouched") {
    if (cuda_available()) {
        MESSAGE("a CUDA device is present: the no-GPU behaviour is not tested here");
        return;
    }
    std::vector<float> in(16, 1.0f), out(16, -3.0f);
    const Tensor g = Tensor::view(in.data(), {16}, float32, {}, Device::cuda(0));
    const Tensor o = Tensor::view(out.data(), {16}, float32, {}, Device::cuda(0));
    const int line = __LINE__ + 1;
    const std::string msg = loom_test::error_message([&] { assign(o, relu(g * 2.0)); });
    CHECK(starts_with(
        msg, fmt::format("no CUDA device found: eval() (test_error_model.cpp:{}) needs a GPU", line)));
    CHECK_THROWS_AS(assign(o, relu(g * 2.0)), NoDeviceError);
    CHECK(std::all_of(out.begin(), out.end(), [](float v) { return v == -3.0f; }));
    CHECK_FALSE(runtime_poisoned());
}

TEST_CASE("error model: LOOM_SYNC is on when set to anything but empty or 0") {
    const char* v = std::getenv("LOOM_SYNC");
    CHECK(sync_after_launch() == (v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0));
}
