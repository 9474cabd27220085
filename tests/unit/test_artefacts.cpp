// The artefacts of a traced function's specialization from the API: f.cuda_source(args...), f.ptx(args...)
// and f.llvm_source(args...) give every kernel the specialization for those arguments runs, without running
// it; ptx() of Arrays; CompileReport lists every kernel. No GPU: host arguments, the GPU kernels planned for
// the current GPU or an H200, PTX through NVRTC.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <loom/loom.hpp>
#include <set>
#include <source_location>
#include <string>

#include "../common/needs_cuda.hpp"
#include "loom/ir/build.hpp"
#include "loom/runtime/nvrtc.hpp"

using namespace loom;

namespace {

std::size_t count(const std::string& text, std::string_view what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
        ++n;
    return n;
}

// A body of two kernels on both back ends: the columns' sums of an array divided by its total (a value
// reduced over the whole array, broadcast back, then reduced again). One function, so that the traced graph
// and the graph built directly have the same source lines.
Array column_shares(Array x) {
    return sum(x / sum(x), 0);
}

// `t` as the traced function's placeholder for argument 0 is labelled and placed: "arg0", at the function's
// definition `where`. Generated code names inputs so, so the direct graph's text equals the traced one's.
Array as_argument0(const Tensor& t, std::source_location where) {
    return Array(
        ir::input(t.dtype(), t.shape(), "arg0", std::static_pointer_cast<const void>(t.impl()), where));
}

}  // namespace

TEST_CASE("a traced function's cuda_source, ptx and llvm_source give every kernel of its specialization" *
          loom_test::needs_cuda()) {
    const std::source_location where = std::source_location::current();
    auto f = loom::function(
        "column_shares", [](Array x) { return column_shares(x); }, where);
    const Tensor x = testing::random_tensor({96, 64}, float32, 3);
    const Array direct = column_shares(as_argument0(x, where));

    const std::string cuda = f.cuda_source(x);
    CHECK(cuda == cuda_source({direct}, "column_shares"));     // the kernels an evaluation plans
    const std::size_t kernels = count(cuda, "// ---- Loom ");  // one translation unit per kernel
    CHECK(kernels == 2);

    const std::string ptx_text = f.ptx(x);
    CHECK(count(ptx_text, ".version ") == kernels);                  // one PTX module per kernel
    CHECK(count(ptx_text, ".entry ") == count(cuda, "__global__"));  // every entry point of every kernel
    CHECK(ptx_text.find(cuda_available() ? ".target sm_" : ".target sm_90\n") != std::string::npos);
    CHECK(ptx_text == ptx({direct}, "column_shares"));

    const std::string ir = f.llvm_source(x);
    CHECK(count(ir, "define void @column_shares") >= 2);
    CHECK(ir == llvm_source({direct}, "column_shares"));
    // Nothing ran: no call was counted, and the specialization is the one a call then uses.
    CHECK(f.stats().calls == 0);
    CHECK(f.stats().specializations == 1);
    const Tensor y = f(x);
    CHECK(f.stats().specializations == 1);
    CHECK(y.shape() == Shape{64});
}

TEST_CASE("a traced function's artefacts need no run and follow the arguments' kind" *
          loom_test::needs_cuda()) {
    auto f = loom::function("scaled", [](Array x) { return x * 2.0; });
    const Tensor contiguous = testing::random_tensor({32, 48}, float32, 4);
    const Tensor transposed = contiguous.transposed();
    CHECK(f.cuda_source(contiguous).find("contiguous") != std::string::npos);
    CHECK(f.cuda_source(transposed) != f.cuda_source(contiguous));
    CHECK(f.llvm_source(transposed) != f.llvm_source(contiguous));
    CHECK(f.stats().specializations == 2);
    CHECK(f.stats().calls == 0);
    // A half-precision specialization: its PTX too.
    const Tensor h = testing::random_tensor({256}, bfloat16, 5);
    CHECK(count(f.ptx(h), ".entry ") == count(f.cuda_source(h), "__global__"));
}

TEST_CASE("compile() reports every kernel, in launch order" * loom_test::needs_cuda()) {
    const Tensor x = testing::random_tensor({96, 64}, float32, 6);
    const Array y = column_shares(x);
    const CompileReport rep = compile({y}, "column_shares");
    REQUIRE(rep.per_kernel.size() == 2);
    CHECK(rep.kernels == 2);
    CHECK(rep.kernel == rep.per_kernel[0].name);
    CHECK(rep.per_kernel[0].name != rep.per_kernel[1].name);
    std::size_t bytes = 0;
    int from_disk = 0;
    for (const KernelCompile& k : rep.per_kernel) {
        CHECK(k.image_kind == "cubin");
        CHECK(k.image_bytes > 0);
        CHECK(k.name.starts_with("column_shares"));
        CHECK(cuda_source({y}, "column_shares").find(k.name) != std::string::npos);
        bytes += k.image_bytes;
        from_disk += k.from_disk ? 1 : 0;
    }
    CHECK(bytes == rep.image_bytes);
    CHECK(from_disk == rep.disk_hits);
    const std::string text = rep.to_string();
    CHECK(text.find(fmt::format("kernel {}: cubin", rep.per_kernel[1].name)) != std::string::npos);
    CHECK(text.find("2 kernel(s)") != std::string::npos);
}

TEST_CASE("nvrtc::ptx gives the virtual arch of the cubin target, arch-specific kernels included" *
          loom_test::needs_cuda()) {
    const std::string src = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }\n";
    nvrtc::Options o;
    o.cc_major = 9;
    o.cc_minor = 0;
    const std::string plain = nvrtc::ptx("k", src, o);
    CHECK(plain.find(".target sm_90\n") != std::string::npos);
    CHECK(plain.find(".entry k(") != std::string::npos);
    CHECK(plain.back() != '\0');
    o.arch_specific = true;
    CHECK(nvrtc::ptx("k", src, o).find(".target sm_90a") != std::string::npos);
    CHECK_THROWS_AS(nvrtc::ptx("bad", "this is not CUDA", o), CompileError);
}

TEST_CASE("ptx() of an empty Array names the API") {
    CHECK_THROWS_WITH_AS(ptx({Array()}), doctest::Contains("ptx(): empty Array"), Error);
}
