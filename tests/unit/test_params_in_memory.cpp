// Kernels whose parameters exceed the kernel parameter limit (32,764 bytes): the plan says so, the kernels
// take a pointer to the struct in device memory, and both they and the upload kernel compile with NVRTC
// (no GPU). Also: the DSL evaluates a graph reading hundreds of inputs on the host.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "../../runtime/src/param_buffer.hpp"
#include "../common/needs_cuda.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/graph.hpp"
#include "loom/runtime/nvrtc.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

std::vector<codegen::InputLayout> contiguous_layouts(const std::vector<ir::NodePtr>& outs) {
    std::vector<codegen::InputLayout> l;
    for (const ir::Node* in : codegen::pointwise_inputs(outs))
        l.push_back({in->dtype(), contiguous_strides(in->shape()), true});
    return l;
}

nvrtc::Result compile_sm90(const std::string& name, const std::string& source) {
    nvrtc::Options o;
    o.arch = "sm_90";
    return nvrtc::compile(name, source, o);
}

}  // namespace

namespace {

/// The sum of `inputs` float32 inputs of shape [8, 16], each read through a transpose (a strided load site:
/// a pointer and its strides, 16 bytes of parameters).
std::vector<ir::NodePtr> transposed_sum(int inputs) {
    ir::NodePtr sum;
    for (int k = 0; k < inputs; ++k) {
        ir::NodePtr x = ir::transpose(ir::input(float32, {8, 16}, fmt::format("x{}", k)));
        sum = sum ? ir::binary(ir::Op::Add, sum, x) : x;
    }
    return {sum};
}

}  // namespace

TEST_CASE("a graph reading 3,000 inputs plans its parameters in device memory, the kernel takes a pointer") {
    constexpr int kInputs = 3000;
    const std::vector<ir::NodePtr> outs = transposed_sum(kInputs);
    const auto planned =
        codegen::plan_pointwise(outs, contiguous_layouts(outs), codegen::DeviceInfo::h200().plan_target());
    const codegen::PointwisePlan& plan = planned.plan;
    REQUIRE(plan.loads.size() == kInputs);
    CHECK(plan.params.size > 32764);
    CHECK(plan.params_in_memory);

    const codegen::KernelSource ks = codegen::emit_pointwise("many_inputs", outs, plan);
    const std::string params = ks.name + "_params";
    CHECK(contains(ks.kernel, "(const " + params + "* __restrict__ pp)"));
    CHECK(contains(ks.kernel, "const " + params + "& p = *pp;"));
    // The parameters were written by the upload kernel just before, which lets this kernel start early
    // (programmatic dependent launch): every entry point waits before it binds, let alone reads, *pp.
    for (std::size_t at = ks.kernel.find("* __restrict__ pp)"); at != std::string::npos;
         at = ks.kernel.find("* __restrict__ pp)", at + 1)) {
        const std::size_t wait = ks.kernel.find("lm::await_prior_grids();", at);
        REQUIRE(wait != std::string::npos);
        CHECK(wait < ks.kernel.find("= *pp;", at));
    }
    CHECK_FALSE(contains(ks.kernel, "__grid_constant__ " + params));
    CHECK(contains(ks.kernel, "in device memory"));  // the banner says so
    CHECK(contains(ks.kernel, fmt::format("static_assert(sizeof({}) == {}", params, plan.params.size)));

    // The packed bytes are laid out as the struct says: the first input pointer at offset 0.
    std::vector<float> buffers(kInputs);
    std::vector<const void*> in;
    for (int k = 0; k < kInputs; ++k) in.push_back(&buffers[static_cast<std::size_t>(k)]);
    float out_buf = 0;
    std::vector<void*> out{&out_buf};
    const std::vector<std::byte> bytes = codegen::pack_params(plan, planned.binding, in, out);
    CHECK(bytes.size() == plan.params.size);
    const void* first = nullptr;
    std::memcpy(&first, bytes.data(), sizeof(first));
    CHECK(first == in[0]);
}

TEST_CASE("a kernel taking its parameters by pointer compiles with NVRTC" * loom_test::needs_cuda()) {
    // NVRTC's time grows faster than linearly with the kernel (minutes for the 3,000 inputs above), so the
    // compiled kernel is one of 300 inputs planned for a device with the old 4,096-byte limit: the same
    // emission path, in seconds.
    codegen::DeviceInfo old_limit = codegen::DeviceInfo::h200();
    old_limit.param_limit_bytes = 4096;
    const std::vector<ir::NodePtr> outs = transposed_sum(300);
    const auto planned = codegen::plan_pointwise(outs, contiguous_layouts(outs), old_limit.plan_target());
    REQUIRE(planned.plan.params_in_memory);
    const codegen::KernelSource ks = codegen::emit_pointwise("by_pointer", outs, planned.plan);
    CHECK(contains(ks.kernel, "* __restrict__ pp)"));
    const nvrtc::Result r = compile_sm90(ks.name, ks.source);
    CHECK_FALSE(r.binary.empty());
    CHECK_FALSE(r.is_ptx);
    MESSAGE(fmt::format("{} bytes of parameters; NVRTC compiled the kernel in {:.0f} ms",
                        planned.plan.params.size, r.compile_ms));
}

TEST_CASE("the parameter upload kernel compiles for both parameter limits" * loom_test::needs_cuda()) {
    CHECK(gpu::param_upload_words(32764) == 4093);  // 16 + 8 * 4093 = 32,760 bytes
    CHECK(gpu::param_upload_words(4096) == 510);
    for (std::size_t limit : {std::size_t{32764}, std::size_t{4096}}) {
        const std::size_t words = gpu::param_upload_words(limit);
        const std::string src = gpu::param_upload_source(words);
        CHECK(contains(src, "loom_param_upload"));
        CHECK(contains(src, fmt::format("data[{}]", words)));
        // Launched with programmatic dependent launch like every Loom kernel: it waits before its first
        // store.
        REQUIRE(contains(src, "griddepcontrol.wait;"));
        CHECK(src.find("griddepcontrol.wait;") < src.find("c.dst[i] = c.data[i];"));
        const nvrtc::Result r = compile_sm90("loom_param_upload", src);
        CHECK_FALSE(r.binary.empty());
    }
}

TEST_CASE("cuda_source of a DSL graph over 4,200 host tensors takes its parameters by pointer") {
    const std::uint32_t old_limit = set_lazy_node_limit(0);  // one graph: no evaluation at 1,024 nodes
    std::vector<Tensor> xs;
    for (int k = 0; k < 4200; ++k) xs.push_back(Tensor::host({4}, float32));
    Array sum = xs[0];
    for (std::size_t k = 1; k < xs.size(); ++k) sum = sum + xs[k];
    set_lazy_node_limit(old_limit);
    const std::string src = cuda_source({sum}, "sum_4200");
    CHECK(contains(src, "* __restrict__ pp)"));
    CHECK(contains(src, "in device memory"));
}

TEST_CASE("the DSL evaluates a sum of 300 products (600 host inputs) against the same sums in float32") {
    constexpr int kPairs = 300;
    constexpr std::int64_t n = 1000;
    std::vector<Tensor> a, b;
    for (int k = 0; k < kPairs; ++k) {
        a.push_back(testing::random_tensor({n}, float32, 1000 + static_cast<std::uint64_t>(k)));
        b.push_back(testing::random_tensor({n}, float32, 5000 + static_cast<std::uint64_t>(k)));
    }
    Array acc = Array(a[0]) * b[0];
    for (int k = 1; k < kPairs; ++k)
        acc = acc + Array(a[static_cast<std::size_t>(k)]) * b[static_cast<std::size_t>(k)];
    CHECK(ir::topo_order({acc.node()}).size() <= lazy_node_limit());  // 1,199 nodes: evaluated in two pieces
    const Tensor out = acc;
    for (std::int64_t i = 0; i < n; ++i) {
        auto at = [i](const Tensor& t) { return static_cast<const float*>(t.data())[i]; };
        float want = at(a[0]) * at(b[0]);
        for (std::size_t k = 1; k < a.size(); ++k) want = want + at(a[k]) * at(b[k]);
        REQUIRE(static_cast<const float*>(out.data())[i] == want);  // + and * are correctly rounded: exact
    }
}
