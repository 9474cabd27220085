// Factories (arange, linspace, full, zeros, ones, eye, from_host, to_vector), tensor views (slice, permute,
// transpose, reshape, squeeze, unsqueeze, view as another dtype) and writes into strided views, on host
// tensors: values against the contract (docs/semantics.md, "Factories, tensor views and writes into views"),
// errors, and that the lazy factories fuse instead of being materialized.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <loom/loom.hpp>

#include "../common/views_checks.hpp"
#include "error_message.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"

using namespace loom;

namespace {

const std::vector<std::int64_t> kSizes{0, 1, 31, 32, 33, 4097};

Tensor on_host(const Array& a) {
    Tensor t = Tensor::host(a.shape(), a.dtype());
    assign(t, a);
    return t;
}

/// `v` converted to `d` as a cast converts (int8 wraps, halves round), read back as double.
double cast_value(double v, DType d) {
    const Tensor one = Tensor::host({}, float64);
    *static_cast<double*>(one.data()) = v;
    return reference::cast(reference::cast(one, DType::Int64), d).get_double(0);
}

codegen::FusionPlan plan_of(const std::vector<Array>& arrays) {
    std::vector<ir::NodePtr> roots;
    for (const Array& a : arrays) roots.push_back(a.node());
    return gpu::plan_bound(ir::run_pipeline(roots, ir::standard_passes()), gpu::planning_device(), Options{},
                           "", nullptr);
}

}  // namespace

TEST_CASE("factories: arange's values are start + i * step in float64, rounded once, every size and dtype") {
    for (std::int64_t n : kSizes) {
        CAPTURE(n);
        const Tensor a = on_host(arange(n, int64, Device::cpu()));
        REQUIRE(a.shape() == Shape{n});
        const auto v = a.to_vector<std::int64_t>();
        for (std::int64_t i = 0; i < n; ++i) REQUIRE(v[static_cast<std::size_t>(i)] == i);
        for (DType d : {int8, uint8, int32, float16, bfloat16, float32, float64}) {
            CAPTURE(name(d));
            const Tensor b = on_host(arange(0.0, static_cast<double>(n), 1.0, d, Device::cpu()));
            const auto w = b.to_vector<double>();
            for (std::int64_t i = 0; i < n; ++i)
                REQUIRE(w[static_cast<std::size_t>(i)] == cast_value(static_cast<double>(i), d));
        }
    }
    // A fractional float step: element i is the float64 start + i * step rounded to float32 once.
    const auto f = on_host(arange(0.5, 3.0, 0.1, float32, Device::cpu())).to_vector<float>();
    REQUIRE(f.size() == 25);  // ceil((3 - 0.5) / 0.1) = 25
    for (std::size_t i = 0; i < f.size(); ++i)
        CHECK(f[i] == static_cast<float>(0.5 + static_cast<double>(i) * 0.1));
    // A negative step, and an empty range.
    const auto down = on_host(arange(5.0, 0.0, -2.0, int32, Device::cpu())).to_vector<std::int32_t>();
    CHECK(down == std::vector<std::int32_t>{5, 3, 1});
    CHECK(arange(3.0, 1.0, 1.0, float32, Device::cpu()).shape() == Shape{0});
}

TEST_CASE("factories: linspace, full, zeros, ones and eye") {
    const auto l = on_host(linspace(-1.0, 2.0, 7, float64, true, Device::cpu())).to_vector<double>();
    REQUIRE(l.size() == 7);
    for (std::size_t i = 0; i + 1 < l.size(); ++i) CHECK(l[i] == -1.0 + static_cast<double>(i) * 0.5);
    CHECK(l.back() == 2.0);  // the endpoint is stop itself
    const auto open = on_host(linspace(0.0, 1.0, 4, float32, false, Device::cpu())).to_vector<float>();
    CHECK(open == std::vector<float>{0.0f, 0.25f, 0.5f, 0.75f});
    CHECK(on_host(linspace(3.0, 4.0, 1, float32, true, Device::cpu())).to_vector<float>() ==
          std::vector<float>{3.0f});
    CHECK(linspace(3.0, 4.0, 0, float32, true, Device::cpu()).shape() == Shape{0});
    for (DType d : kAllDTypes) {
        CAPTURE(name(d));
        const auto z = on_host(zeros({3, 33}, d, Device::cpu())).to_vector<double>();
        const auto o = on_host(ones({2, 2, 5}, d, Device::cpu())).to_vector<double>();
        for (double v : z) REQUIRE(v == 0.0);
        for (double v : o) REQUIRE(v == 1.0);
    }
    CHECK(on_host(full({4}, 2.5, bfloat16, Device::cpu())).to_vector<float>() == std::vector<float>(4, 2.5f));
    const auto e = on_host(eye(3, 4, 1, int32, Device::cpu())).to_vector<std::int32_t>();
    CHECK(e == std::vector<std::int32_t>{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
    CHECK(on_host(eye(2, -1, 0, float32, Device::cpu())).to_vector<float>() ==
          std::vector<float>{1, 0, 0, 1});
}

TEST_CASE("factories: errors name the factory, the arguments and the caller's line") {
    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { (void)arange(0.0, 1.0, 0.0); });
    CHECK(msg == fmt::format("arange(): step is 0 (test_factories_views.cpp:{})", line));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)arange(0.0, 2.0, 0.5, int32); });
    CHECK(
        msg ==
        fmt::format("arange(): start 0 and step 0.5 must be integers for int32 (test_factories_views.cpp:{})",
                    line));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)linspace(0.0, 1.0, -1); });
    CHECK(msg == fmt::format("linspace(): num -1 is negative (test_factories_views.cpp:{})", line));
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)full({2}, 0.5, int8); });
    CHECK(msg.rfind("full(): ", 0) == 0);
    CHECK(msg.find(fmt::format("test_factories_views.cpp:{}", line)) != std::string::npos);
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)full({-1}, 1.0); });
    CHECK(msg.rfind("full(): negative extent", 0) == 0);
    const std::vector<double> three{1, 2, 3};
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)from_host(three, {2, 2}, float32, Device::cpu()); });
    CHECK(msg ==
          fmt::format("from_host(): 3 values for shape [2, 2] (4 elements) (test_factories_views.cpp:{})",
                      line));
    // Integer ranges are exact in int64: a start, step or last value beyond it is refused, not wrapped.
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)arange(0.0, 3e19, 1e19, int64, Device::cpu()); });
    CHECK(msg == fmt::format("arange(): start 0 and step 1e+19 give values beyond int64 for int64 "
                             "(test_factories_views.cpp:{})",
                             line));
    msg = loom_test::error_message([&] { (void)arange(-1e19, -1e19 + 3e4, 1e4, int32, Device::cpu()); });
    CHECK(msg.rfind("arange(): start -1e+19 and step 10000 give values beyond int64", 0) == 0);
    const double big = 9.0e18;
    msg = loom_test::error_message([&] { (void)arange(big, big + 3e18, 1e18, int64, Device::cpu()); });
    CHECK(msg.rfind("arange(): start 9e+18 and step 1e+18 give values beyond int64", 0) == 0);
    CHECK(Tensor(arange(-9.0e18, -8.0e18, 5.0e17, int64, Device::cpu())).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{-9000000000000000000, -8500000000000000000});
    // eye's m: -1 (the default) is n; any other negative is an error, as NumPy's.
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)eye(2, -5, 0, float32, Device::cpu()); });
    CHECK(msg == fmt::format("eye(): m -5 is negative (-1, the default, means m = n) "
                             "(test_factories_views.cpp:{})",
                             line));
    CHECK(Tensor(eye(2, -1, 0, float32, Device::cpu())).shape() == Shape{2, 2});
    // The internal index of linspace and one_hot is named by the factory, not as iota().
    const std::int64_t most = INT64_MAX;
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)linspace(0.0, 1.0, most, float32, true, Device::cpu()); });
    CHECK(msg.rfind("linspace(): shape [9223372036854775807]", 0) == 0);
    CHECK(msg.find(fmt::format("(test_factories_views.cpp:{})", line)) != std::string::npos);
    // A zero extent makes any other extents fine: no elements, no bytes.
    CHECK(Tensor(zeros({std::int64_t{1} << 62, 0, 4}, int8, Device::cpu())).numel() == 0);
}

TEST_CASE("factories are lazy: they fuse into the kernel that uses them, nothing is materialized") {
    Tensor x = testing::random_tensor({64, 1000}, float32, 3);
    const Array y = Array(x) * arange(0.0, 1000.0, 1.0, float32, Device::cpu()) +
                    ones({64, 1000}, float32, Device::cpu());
    const codegen::FusionPlan p = plan_of({y});
    REQUIRE(p.partition.kernels.size() == 1);
    CHECK(p.partition.temps.empty());
    CHECK(p.kernels[0].reads.size() == 2);  // x, and the index (computed: no memory)
    CHECK(p.kernels[0].reads[1].kind == codegen::Slot::Kind::Index);
    CHECK(cuda_source({y}).find("an index, computed") != std::string::npos);
    testing::require_matches_reference({y.node()}, {y.eval()});
    // A factory next to tensors takes their device; alone, it is made on the device it names.
    CHECK(Tensor(zeros({3}, float32, Device::cpu())).device() == Device::cpu());
}

TEST_CASE("from_host and to_vector convert as a cast does") {
    const std::vector<double> d{1.5, -2.25, 300.0, 1e10};
    const Tensor t = from_host(d, {2, 2}, float32, Device::cpu());
    CHECK(t.to_vector<double>() == std::vector<double>{1.5, -2.25, 300.0, 1e10f});
    CHECK(t.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, -2, 300, 2147483647});  // saturates
    CHECK(t.to_vector<std::uint8_t>() == std::vector<std::uint8_t>{1, 0, 255, 255});
    const std::vector<std::int64_t> i{1, 2, 3};
    CHECK(from_host(i, {3}, bfloat16, Device::cpu()).to_vector<float>() == std::vector<float>{1, 2, 3});
}

TEST_CASE("tensor views: the same memory, checked arguments, clear errors") {
    {  // Python's x[::None] and x[0::None]: a step of kNone is 1, on tensors and arrays alike.
        const std::vector<double> five{0, 1, 2, 3, 4};
        const Tensor x = from_host(five, {5}, float32, Device::cpu());
        constexpr auto N = ir::SliceSpec::kNone;
        CHECK(x.slice({{N, N, N}}).to_vector<double>() == five);
        CHECK(Tensor(Array(x).slice({{0, N, N}}) + 0.0).to_vector<double>() == five);
    }
    Tensor a =
        from_host(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}, float32, Device::cpu());
    const Tensor col = a.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, 1}, {2, 3, 1}});
    CHECK(col.shape() == Shape{3, 1});
    CHECK(col.data() == static_cast<float*>(a.data()) + 2);
    CHECK(col.to_vector<float>() == std::vector<float>{2, 6, 10});
    const Tensor rev = a.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, -2}});
    CHECK(rev.to_vector<float>() == std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3});
    const Tensor t = a.transposed();
    CHECK(t.shape() == Shape{4, 3});
    CHECK(t.strides() == Strides{1, 4});
    CHECK(t.to_vector<float>() == std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
    CHECK(a.permute({1, 0}).strides() == t.strides());
    CHECK(a.reshape({2, -1}).shape() == Shape{2, 6});
    CHECK(a.reshape({12}).data() == a.data());
    CHECK(a.unsqueeze(0).shape() == Shape{1, 3, 4});
    CHECK(a.unsqueeze(-1).shape() == Shape{3, 4, 1});
    CHECK(a.unsqueeze(1).squeeze().shape() == Shape{3, 4});
    CHECK(col.squeeze(1).shape() == Shape{3});
    const Tensor bits = a.view(int32);
    CHECK(bits.to_vector<std::int32_t>()[1] == 0x3f800000);  // 1.0f
    const Tensor halves = a.view(bfloat16);
    CHECK(halves.shape() == Shape{3, 8});
    CHECK(halves.to_vector<float>()[3] == 1.0f);  // the upper half of 1.0f, little-endian
    // Errors.
    std::string msg = loom_test::error_message([&] { (void)t.reshape({12}); });
    CHECK(msg.rfind("reshape(): [4, 3] float32 (strides [1, 4]) cannot be viewed as [12] without a copy",
                    0) == 0);
    msg = loom_test::error_message([&] { (void)a.permute({0, 0}); });
    CHECK(msg.rfind("permute(): ", 0) == 0);
    msg = loom_test::error_message([&] { (void)a.slice({{0, 9, 1}}); });
    CHECK(msg.rfind("slice(): stop 9 out of range on axis 0", 0) == 0);
    const std::string squeeze_line = std::to_string(__LINE__ + 1);
    msg = loom_test::error_message([&] { (void)a.squeeze(0); });
    CHECK(msg ==
          "squeeze(): axis 0 of [3, 4] float32 (strides [4, 1]) has extent 3, not 1 "
          "(test_factories_views.cpp:" +
              squeeze_line + ")");
    msg = loom_test::error_message([&] { (void)t.view(bfloat16); });
    CHECK(msg.rfind("view(): [4, 3] float32 (strides [1, 4]) as bfloat16 changes the element size", 0) == 0);
    msg = loom_test::error_message([&] {
        (void)a.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, 1}, {1, 4, 1}}).view(float64);
    });
    CHECK(msg.rfind("view(): ", 0) == 0);
    CHECK(!a.slice({{0, 1, 1}}).as_strided({3, 4}, {0, 1}, 0).is_non_overlapping());
    CHECK(t.is_non_overlapping());
}

TEST_CASE(
    "writes into strided views: columns, strided slices, reversed and transposed views of 2-D to 4-D "
    "tensors") {
    views_checks::check_strided_writes(Device::cpu());
}

TEST_CASE("writes into views at every alignment, steps 1, 2 and -1, sizes 0 to 4097") {
    views_checks::check_aligned_writes(Device::cpu());
}

TEST_CASE(
    "writes into views that overlap their inputs: a reduction into a column, x[::2] from itself, a shift, a "
    "transpose") {
    views_checks::check_overlapping_writes(Device::cpu());
}

TEST_CASE("factories on the host read back as the reference makes them") {
    views_checks::check_factories(Device::cpu());
}
