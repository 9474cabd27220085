// Helpers of the GPU pointwise tests: device inputs with random and special values, evaluation into
// poisoned preallocated outputs checked against the CPU reference, and the kernel variant a call launches.
#pragma once

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/loom.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/testing.hpp"

namespace pwtest {

using namespace loom;
inline constexpr std::int64_t kNone = ir::SliceSpec::kNone;

/// The device the tests run on. LOOM_POINTWISE_TESTS_ON_HOST (a debugging aid, never set by the build)
/// runs the same graphs on the host through the reference, to check the tests' own expectations.
#ifdef LOOM_POINTWISE_TESTS_ON_HOST
inline Device dev() {
    return Device::cpu();
}
#else
inline Device dev() {
    return Device::cuda(0);
}
#endif

/// Waits for the current stream (nothing to wait for on the host).
inline void wait_device() {
    if (dev().is_cuda()) synchronize();
}

/// Default random values per dtype: floats Normal(0, 3); integers uniform over a range that exercises
/// wrapping and signs; bool true with probability 1/2.
inline testing::Random default_dist(DType d) {
    switch (d) {
        case DType::Bool:
            return testing::Random::normal();
        case DType::Int8:
            return testing::Random::uniform(-128, 127);
        case DType::UInt8:
            return testing::Random::uniform(0, 255);
        case DType::Int32:
            return testing::Random::uniform(-100000, 100000);
        case DType::Int64:
            return testing::Random::uniform(-1e12, 1e12);
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32:
        case DType::Float64:
            return testing::Random::normal(0.0, 3.0);
    }
    return {};
}

/// A contiguous device tensor of random values (default_dist unless `dist` is given).
inline Tensor rand(const Shape& shape, DType d, std::uint64_t seed) {
    Tensor t = Tensor::empty(shape, d, dev());
    if (t.numel() > 0) testing::fill_random(t, seed, default_dist(d));
    return t;
}
inline Tensor rand(const Shape& shape, DType d, std::uint64_t seed, const testing::Random& dist) {
    Tensor t = Tensor::empty(shape, d, dev());
    if (t.numel() > 0) testing::fill_random(t, seed, dist);
    return t;
}

/// A host tensor of shape [n] holding `values` converted to `d` with the semantics of a Cast node
/// (saturating, NaN -> 0 for integers).
inline Tensor host_from(const std::vector<double>& values, DType d) {
    Tensor f = Tensor::host({static_cast<std::int64_t>(values.size())}, float64);
    if (!values.empty()) std::memcpy(f.data(), values.data(), values.size() * sizeof(double));
    return reference::cast(f, d);
}

/// A host tensor of raw values of C++ type T (whose size must be the dtype's item size).
template <class T>
Tensor host_raw(const std::vector<T>& values, DType d) {
    REQUIRE(sizeof(T) == itemsize(d));
    Tensor t = Tensor::host({static_cast<std::int64_t>(values.size())}, d);
    if (!values.empty()) std::memcpy(t.data(), values.data(), values.size() * sizeof(T));
    return t;
}

/// Special values of a dtype: NaN, infinities, signed zeros, subnormals, extremes and values at the edges
/// of casts (docs/semantics.md, "Casts"), as a host tensor of that dtype.
inline Tensor specials(DType d) {
    const double inf = std::numeric_limits<double>::infinity(),
                 nan = std::numeric_limits<double>::quiet_NaN();
    switch (d) {
        case DType::Bool:
            return host_from({0, 1, 1, 0}, d);
        case DType::Int8:
            return host_from({-128, 127, -1, 0, 1, 2, -127, 100, -7, 64}, d);
        case DType::UInt8:
            return host_from({0, 255, 1, 2, 128, 127, 44, 200, 7}, d);
        case DType::Int32:
            return host_from(
                {-2147483648.0, 2147483647.0, -1, 0, 1, 300, -300, 65520, 16777217, -2147483647.0, 255, 256},
                d);
        case DType::Int64:
            return host_raw<std::int64_t>(
                {INT64_MIN, INT64_MAX, -1, 0, 1, (std::int64_t{1} << 60) + (std::int64_t{1} << 52) + 1,
                 -((std::int64_t{1} << 53) + 1), 2147483648LL, -2147483649LL, 65519, 300, -129},
                d);
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32:
        case DType::Float64:
            return host_from({nan,   inf,  -inf,  -0.0,   0.0,   1.0,    -1.0,    0.5,     -0.5,
                              1.5,   2.5,  -2.5,  -0.9,   300.7, -300.7, 65519.0, 65520.0, 1e10,
                              -1e10, 3e38, 1e-40, -1e-40, 6e-8,  1e300,  127.5,   255.9,   -128.9},
                             d);
    }
    return {};
}

/// A device tensor of shape [n] and dtype `d`: random values (default_dist) with the dtype's specials
/// placed at every other element (cycling through them, starting at `phase`), so that each special meets
/// many different partners in a binary op.
inline Tensor with_specials(std::int64_t n, DType d, std::uint64_t seed, std::int64_t phase = 0) {
    Tensor t = testing::random_tensor({n}, d, seed, default_dist(d));
    const Tensor s = specials(d);
    const std::size_t w = itemsize(d);
    auto* dst = static_cast<unsigned char*>(t.data());
    const auto* src = static_cast<const unsigned char*>(s.data());
    for (std::int64_t i = 0; i < n; i += 2)
        std::memcpy(dst + i * static_cast<std::int64_t>(w),
                    src + ((i / 2 + phase) % s.numel()) * static_cast<std::int64_t>(w), w);
    return t.to(dev());
}

inline std::vector<ir::NodePtr> roots_of(const std::vector<Array>& arrays) {
    std::vector<ir::NodePtr> r;
    for (const auto& a : arrays) r.push_back(a.node());
    return r;
}

/// Compares each of `results` with the CPU reference of `arrays` (derived tolerances) and reports the
/// graph on failure.
inline void require_reference(const std::vector<Array>& arrays, const std::vector<Tensor>& results,
                              const std::string& what) {
    const auto roots = roots_of(arrays);
    const testing::Comparison c = testing::check_against_reference(roots, results);
    if (!c.ok) FAIL_CHECK(what << ": " << c.message << "\ngraph:\n" << ir::print(roots));
    CHECK(c.ok);
}

/// Evaluates `arrays` with assign() into new device outputs and checks them against the CPU reference,
/// twice: first into outputs poisoned with NaN / sentinel values (an unwritten element fails against any
/// non-NaN expected value), then into outputs holding random values (an unwritten element fails against
/// an expected NaN). `twice = false` does only the first run (for very large arrays). Returns the outputs.
inline std::vector<Tensor> run_checked(const std::vector<Array>& arrays, bool twice = true) {
    std::vector<Tensor> outs;
    for (const auto& a : arrays) outs.push_back(Tensor::empty(a.shape(), a.dtype(), dev()));
    for (int run = 0; run < (twice ? 2 : 1); ++run) {
        for (std::size_t k = 0; k < outs.size(); ++k) {
            if (outs[k].numel() == 0) continue;
            if (run == 0)
                testing::poison(outs[k]);
            else
                testing::fill_random(outs[k], 0x0f11 + k, default_dist(outs[k].dtype()));
        }
        assign(outs, arrays);
        wait_device();
        require_reference(arrays, outs,
                          run == 0 ? "into poisoned outputs" : "into outputs holding random values");
    }
    return outs;
}
/// run_checked() of one array.
inline Tensor run_one(const Array& a, bool twice = true) {
    return run_checked(std::vector<Array>{a}, twice).at(0);
}

/// Address of element 0 of the tensor bound to an Input node.
inline const void* bound_pointer(const ir::Node& input) {
    const auto* t = static_cast<const Tensor::Impl*>(input.payload().get());
    return static_cast<const char*>(t->storage->ptr) +
           t->offset * static_cast<std::int64_t>(itemsize(t->dtype));
}

/// What the GPU path plans and launches for `arrays` written into `outs` (mirrors gpu::evaluate: the
/// standard passes, one kernel group expected).
struct Launch {
    codegen::PointwisePlan plan;
    codegen::Variant variant = codegen::Variant::Scalar;
    std::size_t kernels = 0;
};
inline Launch plan_of(const std::vector<Array>& arrays, const std::vector<Tensor>& outs) {
    const auto graph = ir::run_pipeline(roots_of(arrays), ir::standard_passes());
    const codegen::DeviceInfo info = dev().is_cuda() ? device_info() : codegen::DeviceInfo::h200();
    std::vector<const ir::Node*> sources;
    const codegen::FusionPlan plan = gpu::plan_bound(graph, info, current_options(), "", &sources);
    Launch l;
    l.kernels = plan.kernels.size();
    REQUIRE(!plan.kernels.empty());
    const codegen::GpuKernel& g = plan.kernels[0];
    std::vector<const void*> in;
    for (const codegen::Slot& s : g.reads) {
        REQUIRE(s.kind == codegen::Slot::Kind::Source);
        in.push_back(bound_pointer(*sources.at(static_cast<std::size_t>(s.index))));
    }
    std::vector<void*> out;
    for (const codegen::Slot& s : plan.partition.kernels[0].writes)
        out.push_back(outs.at(static_cast<std::size_t>(s.index)).data());
    const codegen::PlannedPointwise& pw = g.as<codegen::PointwiseKernel>().planned;
    l.variant = codegen::select_variant(pw.plan, pw.binding, in, out);
    l.plan = pw.plan;
    return l;
}

/// Bit-for-bit equality of two results (any NaN equals any NaN; -0.0 differs from +0.0).
inline void require_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
    const testing::Comparison c = testing::compare(a, b, testing::Tolerance::exact(), what);
    if (!c.ok) FAIL_CHECK(c.message);
    CHECK(c.ok);
}

}  // namespace pwtest
