// The LLVM host back end (docs/llvm-backend.md) against the CPU reference, bit for bit: sizes around the
// vector width and a large one, unaligned and strided views, every dtype, subnormals, the integer rules that
// LLVM leaves undefined, reductions in the documented order (row and column order, split rows, argmin/argmax
// ties and NaN), normalizations, traced functions, concurrent evaluations, and the disk cache. With
// LOOM_CPU_BACKEND=reference (the "unit-reference" run of CTest) the same checks run on the reference.
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <loom/loom.hpp>
#include <thread>

#include "loom/ir/build.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/host_backend.hpp"
#include "loom/runtime/host_backend_abi.h"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

// Exact comparison with the reference (the back end calls the reference's own functions for exp, log, ...).
void require_bits(const std::vector<Array>& ys, const std::vector<Tensor>& outs, const char* what) {
    std::vector<ir::NodePtr> roots;
    for (const auto& y : ys) roots.push_back(y.node());
    const std::vector<Tensor> expected = reference::evaluate(roots);
    for (std::size_t k = 0; k < outs.size(); ++k) {
        const testing::Comparison c =
            testing::compare(outs[k], expected[k], testing::Tolerance::exact(), what);
        CHECK_MESSAGE(c.ok, what << " output " << k << ": " << c.message);
    }
}

void check(const Array& y, const char* what) {
    Tensor out = y;
    require_bits({y}, {out}, what);
}

bool reference_requested() {
    const char* b = std::getenv("LOOM_CPU_BACKEND");
    return b && std::string_view(b) == "reference";
}

Tensor filled(const Shape& s, DType t, std::uint64_t seed) {
    return testing::random_tensor(s, t, seed);
}

template <class T>
Tensor from(const std::vector<T>& v, DType t) {
    Tensor x = Tensor::host({static_cast<std::int64_t>(v.size())}, t);
    std::memcpy(x.data(), v.data(), v.size() * sizeof(T));
    return x;
}

}  // namespace

TEST_CASE("llvm backend: placement and the module") {
    const HostBackendInfo& info = host_backend_info();
    if (reference_requested()) {
        CHECK(!info.llvm);
        CHECK(info.reason.find("LOOM_CPU_BACKEND=reference") != std::string::npos);
        return;
    }
#ifdef LOOM_TEST_EXPECT_LLVM
    REQUIRE_MESSAGE(info.llvm, "the LLVM back end module was built but not loaded: " << info.reason);
    CHECK(info.llvm_version.rfind("19.", 0) == 0);
    CHECK(!info.cpu.empty());
    CHECK(info.vector_bits >= 128);
    CHECK(info.features.find("+avx512bf16") == std::string::npos);  // flushes subnormals: never used
    CHECK(info.features.find("+avxneconvert") == std::string::npos);
#endif
}

TEST_CASE("llvm backend: E1 at sizes around the vector width and a large one") {
    for (std::int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 4097, (1 << 20) + 3}) {
        Tensor x = filled({n}, float32, 1 + static_cast<std::uint64_t>(n));
        check(relu(Array(x) * 1.5 + 0.25), "E1");
    }
}

TEST_CASE("llvm backend: unaligned, strided, transposed, sliced and broadcast views") {
    Tensor big = filled({4097 + 3}, float32, 2);
    Tensor off1 = big.as_strided({4097}, {1}, 1);
    Tensor off3 = big.as_strided({4097}, {1}, 3);
    check(Array(off1) * Array(off3) - 2.0, "offset views");
    Tensor m = filled({37, 53}, float32, 3);
    Tensor v = filled({53}, float32, 4);
    check(transpose(Array(m)) * 2.0 + 1.0, "transpose");
    check(Array(m) + Array(v), "row broadcast");
    check(Array(m).slice({{1, -1, 2}, {ir::SliceSpec::kNone, ir::SliceSpec::kNone, -3}}) * 3.0,
          "slices with steps");
    check(reshape(transpose(Array(m)), {53 * 37}) + 1.0, "reshape of a transpose (derived indices)");
    // Derived indices divide vectors as doubles (32-bit plans): dividends in the millions by divisors of 3
    // and of a million, quotients and remainders, in vector steps and tails.
    constexpr std::int64_t kM = (1 << 20) + 7;
    Tensor wide = filled({3, kM}, float32, 31), tall = filled({kM, 3}, float32, 32);
    check(reshape(transpose(Array(wide)), {3 * kM}) * 0.5, "derived indices: divisor 3");
    check(reshape(transpose(Array(tall)), {3 * kM}) * 0.5, "derived indices: divisor of a million");
    Tensor cube = filled({7, 1001, 13}, float32, 33);
    check(reshape(permute(Array(cube), {2, 0, 1}), {13 * 7, 1001}) - 1.0, "derived indices, div and mod");
    Tensor strided = big.as_strided({64, 32}, {64, 2}, 5);
    check(exp(Array(strided)) + sum(Array(m).slice({{0, 32}, {0, 32}})), "strided input with a reduction");
    // outputs that are misaligned views
    Tensor obig = Tensor::host({4098}, float32);
    Tensor o = obig.as_strided({4097}, {1}, 1);
    Array y = Array(off1) * 0.5;
    assign(o, y);
    require_bits({y}, {o}, "misaligned output");
}

TEST_CASE("llvm backend: every dtype through casts and arithmetic") {
    for (DType a : kAllDTypes)
        for (DType b : kAllDTypes) {
            Tensor x = filled({301}, a, 10 + static_cast<std::uint64_t>(a));
            Array c = astype(Array(x), b);
            check(c, "cast");
            if (b != DType::Bool) check(c * c + c, "arith");
            if (is_float(b)) check(sqrt(abs(c)) / (c + 1.0), "float arith");
        }
}

TEST_CASE("llvm backend: transcendental functions equal the reference's bits") {
    for (DType t : {float16, bfloat16, float32, float64}) {
        Tensor x = filled({1000}, t, 20 + static_cast<std::uint64_t>(t));
        Array a(x);
        check(exp(a) + log(abs(a) + 1.0) + sin(a) * tanh(a), "exp log sin tanh");
        check(sigmoid(a) + silu(a) + gelu(a) + gelu_tanh(a), "composite activations");
        check(pow(abs(a) + 0.5, a) + atan2(a, a + 1.0) + erf(a), "pow atan2 erf");
    }
}

// exp at float32 compute values is computed inline (codegen/src/llvm/llvm_ops.cpp, exp_float) and must give
// the reference's bits for every argument: every float16 and bfloat16 bit pattern, float32 patterns in steps
// of 4093 (about a million, with the neighbourhoods of the inline range's ends, of the reduction's switch
// points and of the special values), and with LOOM_TEST_EXHAUSTIVE=1 all 2^32 float32 patterns (about two
// minutes of CPU, mostly the reference's scalar exp).
TEST_CASE("llvm backend: exp equals the reference's bits for every argument") {
    for (DType t : {float16, bfloat16}) {
        std::vector<std::uint16_t> all(1 << 16);
        for (std::size_t u = 0; u < all.size(); ++u) all[u] = static_cast<std::uint16_t>(u);
        Tensor x = Tensor::host({1 << 16}, t);
        std::memcpy(x.data(), all.data(), all.size() * 2);
        check(exp(Array(x)), t == float16 ? "exp of every float16" : "exp of every bfloat16");
    }
    const char* ex = std::getenv("LOOM_TEST_EXHAUSTIVE");
    const bool exhaustive = ex && std::string_view(ex) == "1";
    std::vector<float> special;
    for (float c : {-87.0f, 88.0f, 0.0f, -0.0f, 1.0f, -1.0f, 0.34657359f, -0.34657359f, 1.0397208f, 88.72284f,
                    -103.97208f, -87.33655f}) {
        float a = c, b = c;
        for (int k = 0; k < 300; ++k) {
            special.push_back(a);
            special.push_back(b);
            a = std::nextafter(a, std::numeric_limits<float>::infinity());
            b = std::nextafter(b, -std::numeric_limits<float>::infinity());
        }
    }
    for (float c : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(),
                    -std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                    std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()})
        special.push_back(c);
    for (int k = -130; k <= 130; ++k)
        special.push_back(static_cast<float>((k + 0.5) * 0.69314718055994530942));  // switch points of k
    check(exp(Array(from(special, float32))), "exp near the ends and switch points");
    const std::uint64_t step = exhaustive ? 1 : 4093;
    constexpr std::uint64_t kBatch = std::uint64_t{1} << 24;
    std::vector<std::uint32_t> bits;
    bits.reserve(kBatch);
    for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += step) {
        bits.push_back(static_cast<std::uint32_t>(u));
        if (bits.size() == kBatch || u + step >= (std::uint64_t{1} << 32)) {
            Tensor x = Tensor::host({static_cast<std::int64_t>(bits.size())}, float32);
            std::memcpy(x.data(), bits.data(), bits.size() * 4);
            check(exp(Array(x)), "exp of float32 bit patterns");
            bits.clear();
        }
    }
}

TEST_CASE("llvm backend: subnormal inputs and results are kept") {
    std::vector<float> f;
    for (int k = 0; k < 40; ++k) f.push_back(std::ldexp(1.0f, -126 - (k % 24)) * (k % 2 ? -1.0f : 1.0f));
    Tensor x = from(f, float32);
    check(Array(x) * 0.75 + Array(x), "f32 subnormal arithmetic");
    check(sqrt(abs(Array(x))), "sqrt of subnormals");
    check(astype(Array(x) * 1e30, float16), "to float16");
    check(astype(Array(x) * 1e10, bfloat16), "to bfloat16");
    check(astype(astype(Array(x) * 1e30, bfloat16), float32) * 0.5, "bfloat16 subnormals");
    std::vector<std::uint16_t> h;
    for (std::uint16_t k = 1; k < 1024; k += 13) h.push_back(k);  // float16 subnormals
    Tensor hx = from(h, float16);
    check(Array(hx) * 0.5 + Array(hx), "f16 subnormal arithmetic");
    check(sum(Array(x)), "sum of subnormals");
}

TEST_CASE("llvm backend: integer edge cases") {
    const std::int32_t imin = std::numeric_limits<std::int32_t>::min();
    Tensor a = from(std::vector<std::int32_t>{imin, imin, 7, -7, 7, -7, 0, 5, imin, 100}, int32);
    Tensor b = from(std::vector<std::int32_t>{-1, 0, 0, 0, -2, 2, 0, 40, 33, -1}, int32);
    check(Array(a) / Array(b), "div");
    check(floor_div(Array(a), Array(b)), "floor_div");
    check(rem(Array(a), Array(b)), "rem");
    check(mod(Array(a), Array(b)), "mod");
    check(shift_left(Array(a), Array(b)), "shift_left");
    check(shift_right(Array(a), Array(b)), "shift_right");
    check(-Array(a) + abs(Array(a)), "neg abs wrap");
    Tensor i8 = from(std::vector<std::int8_t>{-128, -128, 127, 5, -5, 0}, int8);
    Tensor j8 = from(std::vector<std::int8_t>{-1, 0, 1, 9, -9, 0}, int8);
    check(Array(i8) / Array(j8) + Array(i8) * Array(j8), "int8 div mul");
    check(shift_right(Array(i8), Array(j8)), "int8 shift");
    Tensor u8 = from(std::vector<std::uint8_t>{0, 255, 3, 200, 9}, uint8);
    Tensor v8 = from(std::vector<std::uint8_t>{0, 2, 9, 1, 8}, uint8);
    check(Array(u8) / Array(v8) + mod(Array(u8), Array(v8)) + shift_left(Array(u8), Array(v8)), "uint8");
    Tensor f =
        from(std::vector<float>{NAN, INFINITY, -INFINITY, 3e9f, -3e9f, 300.7f, -0.9f, 1e20f, -1e20f, 127.9f},
             float32);
    for (DType t : {int8, uint8, int32, int64, bool_})
        check(astype(Array(f), t), "float to int: saturation, NaN -> 0");
    Tensor big = from(
        std::vector<std::int64_t>{(1LL << 60) + (1LL << 52) + 1, -(1LL << 62) - 1, 123456789012345LL}, int64);
    for (DType t : {float16, bfloat16, float32, float64})
        check(astype(Array(big), t), "int64 to float: one rounding");
    Tensor i32 = from(std::vector<std::int32_t>{(1 << 24) + (1 << 16) + 1, 65519, 65520, -70000}, int32);
    for (DType t : {float16, bfloat16}) check(astype(Array(i32), t), "int32 to half: one rounding");
}

TEST_CASE("llvm backend: integer edge cases in vector steps and tails, int64 and float64 too") {
    // Each pattern repeated to 53 elements: whole vectors of 8 and 16 lanes, then a scalar tail, so that the
    // explicit selects of both widths are checked (LLVM's division, shifts and fptosi are undefined or poison
    // on these operands; docs/semantics.md gives the results).
    auto tiled = []<class T>(std::vector<T> v, DType t) {
        std::vector<T> out;
        for (std::size_t k = 0; out.size() < 53; ++k) out.push_back(v[k % v.size()]);
        return from(out, t);
    };
    const std::int64_t lmin = std::numeric_limits<std::int64_t>::min();
    Tensor a = tiled(std::vector<std::int64_t>{lmin, lmin, 7, -7, 0, 5, lmin, -1,
                                               std::numeric_limits<std::int64_t>::max()},
                     int64);
    Tensor b = tiled(std::vector<std::int64_t>{-1, 0, 0, -2, 0, 64, 65, 63, -1, 3, 200}, int64);
    check(Array(a) / Array(b), "int64 div: x / 0 = 0, INT64_MIN / -1 = INT64_MIN");
    check(floor_div(Array(a), Array(b)) + mod(Array(a), Array(b)), "int64 floor_div and mod");
    check(rem(Array(a), Array(b)), "int64 rem: x % 0 = x, INT64_MIN % -1 = 0");
    check(shift_left(Array(a), Array(b)), "int64 shift_left by 64 and more, and negative");
    check(shift_right(Array(a), Array(b)), "int64 shift_right by 64 and more, and negative");
    const std::int32_t imin = std::numeric_limits<std::int32_t>::min();
    Tensor c = tiled(std::vector<std::int32_t>{imin, imin, 9, -9, 1, -1, imin}, int32);
    Tensor d = tiled(std::vector<std::int32_t>{-1, 0, 32, 33, 31, -1, 1000, -5}, int32);
    check(Array(c) / Array(d) + rem(Array(c), Array(d)), "int32 div and rem in vectors");
    check(shift_left(Array(c), Array(d)) + shift_right(Array(c), Array(d)), "int32 shifts in vectors");
    Tensor f = tiled(std::vector<double>{NAN, INFINITY, -INFINITY, 9.3e18, -9.3e18, 9.2e18, -2.5, 2.5, 1e300,
                                         -0.0, 255.9, -128.9, 4294967296.5},
                     float64);
    for (DType t : {bool_, int8, uint8, int32, int64})
        check(astype(Array(f), t), "float64 to int: saturation, NaN -> 0");
    Tensor g = tiled(
        std::vector<float>{NAN, 2.2e9f, -2.2e9f, 9.3e18f, -9.3e18f, 255.5f, 256.0f, -1.0f, 1e-40f}, float32);
    for (DType t : {bool_, int8, uint8, int32, int64})
        check(astype(Array(g), t), "float32 to int in vectors");
}

TEST_CASE("llvm backend: row sums in the documented order, bit for bit") {
    for (std::int64_t rows : {1, 3, 70})
        for (std::int64_t L : {1, 7, 8, 9, 63, 64, 65, 1023, 1025, 8191, 8192, 8193, 3 * 8192 + 5}) {
            Tensor x = filled({rows, L}, float32, static_cast<std::uint64_t>(rows * 100000 + L));
            check(sum(Array(x), 1), "row sum");
        }
    Tensor x = filled({1, (1 << 20) + 17}, float32, 5);  // few long rows: chunks shared among tasks
    check(sum(Array(x) * Array(x)), "sum(x*x) split");
    check(max(Array(x), 1) - min(Array(x), 1), "max and min split");
}

TEST_CASE("llvm backend: every reduction on every dtype, row and column order") {
    for (DType t : kAllDTypes) {
        Tensor x = filled({33, 47}, t, 40 + static_cast<std::uint64_t>(t));
        for (int axis : {0, 1}) {
            check(sum(Array(x), axis), "sum");
            check(prod(Array(x), axis), "prod");
            check(any(Array(x), axis), "any");
            check(all(Array(x), axis), "all");
            check(min(Array(x), axis), "min");
            check(max(Array(x), axis), "max");
            check(mean(Array(x), axis), "mean");
            check(argmin(Array(x), axis), "argmin");
            check(argmax(Array(x), axis), "argmax");
        }
        Tensor y = filled({300, 3, 20}, t, 60 + static_cast<std::uint64_t>(t));
        check(sum(Array(y), {0, 2}), "two axes, derived indices");
        check(max(Array(y), {0, 1}, true), "column order over two axes");
    }
}

TEST_CASE("llvm backend: argmin and argmax ties, NaN and signed zeros") {
    Tensor x = from(std::vector<float>{1.0f, -0.0f, 0.0f, -0.0f, NAN, 2.0f, NAN, -5.0f, -5.0f}, float32);
    check(argmin(Array(x)), "argmin with NaN");
    check(argmax(Array(x).slice({{0, 4}})), "argmax of zeros");
    check(argmin(Array(x).slice({{5, 9}})) + argmax(Array(x).slice({{7, 9}})), "ties: the first index");
    check(min(Array(x).slice({{1, 4}})) + max(Array(x).slice({{1, 4}})), "min/max of signed zeros");
}

TEST_CASE("llvm backend: softmax, layernorm, rmsnorm, var") {
    for (std::int64_t L : {5, 300, 4096, 8193}) {
        Tensor x = filled({9, L}, float32, 70 + static_cast<std::uint64_t>(L));
        Tensor w = filled({L}, float32, 71), bias = filled({L}, float32, 72);
        check(softmax(Array(x)), "softmax");
        check(layernorm(Array(x), Array(w), Array(bias), 1e-5), "layernorm");
        check(rmsnorm(Array(x), Array(w), 1e-6), "rmsnorm");
        check(var(Array(x), 1, 1.0), "var");
    }
    Tensor h = filled({17, 129}, bfloat16, 80);
    check(softmax(Array(h)), "bf16 softmax");
    Tensor one = filled({1, 50000}, float32, 81);  // one long row: partitioned strictly, each reduction split
    check(softmax(Array(one)), "softmax of one long row");
}

// A normalization whose output uses a reduction's costly operand keeps that operand in the output between
// passes (HostSchedule::keep): softmax computes exp(x - max) once per element, in the sum's pass, and scales
// it in place in the output pass. The bits are the reference's and the unfused graph's.
TEST_CASE("llvm backend: softmax keeps exp(x - max) in its output between passes") {
    Tensor x = filled({37, 1000}, float32, 95);
    const std::string ir = llvm_source({softmax(Array(x)).node()}, "sm");
    CHECK(ir.find("out0 holds the operand of reduction 1 between its pass and the output pass") !=
          std::string::npos);
    CHECK(ir.find("kept in out0") != std::string::npos);
    Tensor h = filled({37, 1000}, float16, 96);  // a float16 output cannot hold the float32 operand
    CHECK(llvm_source({softmax(Array(h)).node()}, "sm").find("holds the operand") == std::string::npos);
    Tensor w = filled({1000}, float32, 97), b = filled({1000}, float32, 98);
    CHECK(
        llvm_source({layernorm(Array(x), Array(w), Array(b), 1e-5).node()}, "ln").find("holds the operand") ==
        std::string::npos);
    for (std::int64_t L : {1, 15, 63, 64, 65, 1000, 8192, 8193, 20000}) {
        Tensor y = filled({5, L}, float32, 99 + static_cast<std::uint64_t>(L));
        const Array sm = softmax(Array(y));
        Tensor fused = sm;
        Options off = current_options();
        off.fusion = false;
        Tensor unfused;
        {
            const OptionsScope scope(off);
            unfused = sm;
        }
        CHECK(testing::compare(unfused, fused, testing::Tolerance::exact()).ok);
        require_bits({sm}, {fused}, "softmax");
        const Array e =
            exp(Array(y) - max(Array(y), 1, true));  // the kept operand as an output of its own too
        Tensor o1 = Tensor::host({5, L}, float32), o2 = Tensor::host({5, L}, float32);
        assign({o1, o2}, {e / sum(e, 1, true), e * 2.0});
        require_bits({e / sum(e, 1, true), e * 2.0}, {o1, o2}, "two outputs of one kept operand");
    }
}

// Pointwise kernels that move more bytes than the last-level cache holds write their contiguous outputs with
// non-temporal stores, from the first position where every such output is aligned to its vector (width-1
// steps before it); outputs that never align store as usual. The bits do not depend on it.
TEST_CASE("llvm backend: outputs larger than the last-level cache are streamed, at every alignment") {
    const HostBackendInfo& info = host_backend_info();
    const ir::NodePtr ph = ir::input(float32, {std::int64_t{1} << 26}, "x");
    CHECK(llvm_source({(relu(Array(ph) * 1.5 + 0.25)).node()}, "big").find("!nontemporal") !=
          std::string::npos);
    Tensor small = filled({4096}, float32, 3);
    CHECK(llvm_source({(Array(small) * 2.0).node()}, "small").find("!nontemporal") == std::string::npos);
    if (info.cache_bytes <= 0 || info.cache_bytes > (std::int64_t{256} << 20)) {
        MESSAGE("last-level cache of " << info.cache_bytes << " bytes: streamed results not run");
        return;
    }
    const std::int64_t n = info.cache_bytes / 8 + 4099;  // float32 in and out: more than the cache
    Tensor big = filled({n + 16}, float32, 7);
    for (std::int64_t off : {0, 1, 3, 15}) {
        Tensor in = big.as_strided({n}, {1}, off);
        Tensor obig = Tensor::host({n + 16}, float32);
        Tensor o = obig.as_strided({n}, {1}, (off * 5) % 16);
        Array y = relu(Array(in) * 1.5 + 0.25);
        assign(o, y);
        require_bits({y}, {o}, "streamed output");
        // Two outputs that align at different positions: the second stores as usual.
        Tensor o2big = Tensor::host({n + 16}, float32);
        Tensor o2 = o2big.as_strided({n}, {1}, 1 + off);
        assign({o, o2}, {y, Array(in) - 1.0});
        require_bits({y, Array(in) - 1.0}, {o, o2}, "streamed outputs of two alignments");
    }
    std::vector<char> raw(static_cast<std::size_t>(n) * 4 + 8);  // an output at an odd address: never aligned
    Tensor odd = Tensor::view(raw.data() + 1, {n}, float32, {}, Device::cpu());
    Array y = Array(big.as_strided({n}, {1}, 2)) * 3.0;
    assign(odd, y);
    require_bits({y}, {odd}, "output at an odd address");
}

TEST_CASE("llvm backend: fused and unfused give the same bits") {
    Tensor x = filled({123, 77}, float16, 90);
    Array y = exp(Array(x) - max(Array(x), 1, true)) * 3.0 + sum(Array(x));
    Tensor fused = y;
    Options off = current_options();
    off.fusion = false;
    Tensor unfused;
    {
        const OptionsScope scope(off);
        unfused = y;
    }
    CHECK(testing::compare(unfused, fused, testing::Tolerance::exact()).ok);
    require_bits({y}, {fused}, "fused");
}

TEST_CASE("llvm backend: traced functions on host tensors") {
    auto f = loom::function("scale_bias_act", [](Array x, Array s, Array b) { return gelu(x * s + b); });
    Tensor x = filled({64, 100}, float32, 100), s = filled({100}, float32, 101),
           b = filled({100}, float32, 102);
    Tensor out = Tensor::host({64, 100}, float32);
    for (int k = 0; k < 3; ++k) {
        f(x, s, b, out);
        require_bits({gelu(Array(x) * Array(s) + Array(b))}, {out}, "traced function");
    }
    auto g = loom::function("row_norm", [](Array x) { return x / sum(x * x, 1, true); });
    Tensor o2 = Tensor::host({64, 100}, float32);
    g(x, o2);
    require_bits({Array(x) / sum(Array(x) * Array(x), 1, true)}, {o2}, "traced reduction");
    // in place: the output is an argument
    Tensor y = filled({64, 100}, float32, 103);
    Tensor y0 = y.to_host();
    Tensor copy = Tensor::host({64, 100}, float32);
    std::memcpy(copy.data(), y.data(), y.nbytes());
    auto h = loom::function("inplace", [](Array a) { return a - sum(a, 1, true); });
    h(y, y);
    require_bits({Array(copy) - sum(Array(copy), 1, true)}, {y}, "in place");
}

TEST_CASE("llvm backend: concurrent evaluations from several threads give the reference's bits") {
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([t, &ok] {
            Tensor x = testing::random_tensor({200, 300}, float32, 200 + static_cast<std::uint64_t>(t));
            Array y = softmax(Array(x) * (1.0 + t)) + sum(Array(x) * Array(x), 1, true);
            int good = 1;
            for (int k = 0; k < 5; ++k) {
                Tensor out = y;
                const Tensor e = reference::evaluate(y.node());
                good &= testing::compare(out, e, testing::Tolerance::exact()).ok ? 1 : 0;
            }
            ok[static_cast<std::size_t>(t)] = good;
        });
    for (auto& th : threads) th.join();
    for (int v : ok) CHECK(v == 1);
}

TEST_CASE("llvm backend: the disk cache holds host objects, keyed with LLVM and the target") {
    if (!host_backend_info().llvm) return;
    const auto dir =
        std::filesystem::temp_directory_path() / fmt::format("loom_llvm_cache_test_{}", ::getpid());
    std::filesystem::remove_all(dir);
    ::setenv("LOOM_CACHE_DIR", dir.c_str(), 1);
    reset_disk_cache();
    clear_host_kernel_cache();
    Tensor x = filled({1000}, float32, 300);
    Array y = cos(Array(x)) * 7.25 - 0.125;  // a kernel no other test compiles
    {
        Tensor out = y;
        require_bits({y}, {out}, "cold");
    }
    const HostKernelCacheStats cold = host_kernel_cache_stats();
    CHECK(cold.compiles >= 1);
    CHECK(disk_cache_stats().stores >= 1);
    clear_host_kernel_cache();  // a new process, as far as the caches are concerned
    reset_disk_cache();
    {
        Tensor out = y;
        require_bits({y}, {out}, "warm");
    }
    const HostKernelCacheStats warm = host_kernel_cache_stats();
    CHECK(warm.compiles == 0);
    CHECK(warm.disk_hits >= 1);
    {
        Tensor out = y;  // the in-memory cache now
    }
    CHECK(host_kernel_cache_stats().hits >= 1);
    ::unsetenv("LOOM_CACHE_DIR");
    reset_disk_cache();
    std::filesystem::remove_all(dir);
}

TEST_CASE("llvm backend: a kernel whose IR is one already compiled shares its code") {
    if (!host_backend_info().llvm) return;
    clear_host_kernel_cache();
    auto built = [] {  // kernels LLVM compiled or the disk cache gave
        const HostKernelCacheStats s = host_kernel_cache_stats();
        return s.compiles + s.disk_hits;
    };
    Tensor a = filled({1000}, float32, 71);
    Options off = current_options();
    off.fusion = false;
    {
        Tensor out = atan(Array(a));
        require_bits({atan(Array(a))}, {out}, "fused");
    }
    CHECK(built() == 1);
    CHECK(host_kernel_cache_stats().shared == 0);
    {
        // Unfused, a plan of other options: a new plan key, but its one kernel has the fused kernel's IR.
        const OptionsScope scope(off);
        Tensor out = atan(Array(a));
        require_bits({atan(Array(a))}, {out}, "unfused");
        CHECK(built() == 1);
        CHECK(host_kernel_cache_stats().shared == 1);
        // Its second kernel (the product) is new IR, compiled.
        Tensor out2 = atan(Array(a)) * 2.75;
        require_bits({atan(Array(a)) * 2.75}, {out2}, "unfused, two kernels");
        CHECK(built() == 2);
        CHECK(host_kernel_cache_stats().shared == 1);
    }
    // Fused again, one new kernel of its own IR: nothing is shared by mistake.
    {
        Tensor out = atan(Array(a)) * 2.75;
        require_bits({atan(Array(a)) * 2.75}, {out}, "fused, one kernel");
    }
    CHECK(built() == 3);
    CHECK(host_kernel_cache_stats().shared == 1);
    clear_host_kernel_cache();
}

TEST_CASE("llvm backend: testing::build_host_kernels builds several graphs' kernels for their evaluations") {
    if (!host_backend_info().llvm) return;
    clear_host_kernel_cache();
    Tensor a = filled({300, 7}, float32, 81), b = filled({7}, float32, 82), c = filled({513}, int32, 83);
    const Array y0 = sinh(Array(a) + Array(b)) * 0.375;
    const Array y1 = sum(Array(a) * 1.5, {1});
    const Array y2 = Array(c) * 3 - 11;
    Options off = current_options();
    off.fusion = false;
    testing::build_host_kernels({{y0.node()}, {y0.node()}, {y1.node()}, {y2.node()}},
                                {current_options(), off, current_options(), current_options()});
    const HostKernelCacheStats built = host_kernel_cache_stats();
    CHECK(built.compiles + built.disk_hits + built.shared >=
          6);  // fused y0; unfused y0: add, sinh, mul; y1; y2
    {
        Tensor o0 = y0, o2 = y2;
        const OptionsScope scope(off);
        Tensor u0 = y0;
        require_bits({y0, y0, y2}, {o0, u0, o2}, "prebuilt");
    }
    Tensor o1 = Tensor::host({300}, float32);
    assign(o1, y1);
    require_bits({y1}, {o1}, "prebuilt reduction");
    const HostKernelCacheStats after = host_kernel_cache_stats();
    CHECK(after.compiles == built.compiles);  // every kernel was there
    CHECK(after.disk_hits == built.disk_hits);
    CHECK(after.shared == built.shared);
    CHECK(after.hits >= built.hits + 6);
    CHECK_THROWS_AS(testing::build_host_kernels({{y0.node()}}, {}), Error);
    clear_host_kernel_cache();
}

TEST_CASE("llvm backend: a compile failure is a CompileError carrying the saved IR (module interface)") {
    const HostBackendInfo& info = host_backend_info();
    if (!info.llvm) return;
    void* h = dlopen(info.module.c_str(), RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(h != nullptr);
    auto fn = reinterpret_cast<loom_llvm_backend_v1_fn>(dlsym(h, "loom_llvm_backend_v1"));
    REQUIRE(reinterpret_cast<void*>(fn) != nullptr);
    const loom_host_backend_v1* t = fn();
    const std::string bad = "define void @k(ptr %p) {\nentry:\n  %x = fadd float %nope, 1.0\n  ret void\n}\n";
    loom_hb_buffer obj{}, err{};
    CHECK(t->compile(bad.data(), bad.size(), "k", &obj, &err, nullptr) != 0);
    REQUIRE(err.data != nullptr);
    CHECK(std::string(err.data).find("nope") != std::string::npos);
    t->free_buffer(&err);
    dlclose(h);
}

TEST_CASE("llvm backend: llvm_source names the user's lines and keeps fast math off") {
    Tensor x = Tensor::host({100}, float32);
    const std::string ir = llvm_source({(Array(x) * 2.0 + 1.0).node()}, "k");
    CHECK(ir.find("define void @k(") != std::string::npos);
    CHECK(ir.find("test_llvm_backend.cpp:") != std::string::npos);
    CHECK(ir.find(" fast ") == std::string::npos);
    CHECK(ir.find("contract") == std::string::npos);
}
