// Host tensors as a user without a GPU meets them: views of host buffers default to the host, to() and
// clone() say whether they copy, item() reads one value, Tensor errors name the caller's line, and the timing
// helpers time host work.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "error_message.hpp"
#include "loom/loom.hpp"

using namespace loom;
using loom_test::error_message;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("Tensor::view of a host buffer without a device is a host tensor, and evaluates on the host") {
    std::vector<float> buffer = {1.5f, -2.0f, 3.25f, -4.0f};
    const Tensor v = Tensor::view(buffer.data(), {4}, float32);
    CHECK(v.device() == Device::cpu());
    const Tensor out = eval(relu(Array(v) * 2.0f));
    REQUIRE(out.device() == Device::cpu());
    CHECK(out.to_vector<float>() == std::vector<float>{3.0f, 0.0f, 6.5f, 0.0f});
    // Strided: every other element, still the caller's memory.
    const Tensor odd = Tensor::view(buffer.data() + 1, {2}, float32, {2});
    CHECK(odd.device() == Device::cpu());
    CHECK(odd.to_vector<float>() == std::vector<float>{-2.0f, -4.0f});
    // A device named explicitly is kept.
    CHECK(Tensor::view(buffer.data(), {4}, float32, {}, Device::cpu()).device() == Device::cpu());
}

TEST_CASE(
    "to() shares memory when the tensor is already there and contiguous, to(d, true) and clone() copy") {
    Tensor a = Tensor::host({3, 4}, float32);
    std::vector<float> values(12);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * static_cast<float>(i) - 2.0f;
    assign(a, Array(Tensor::view(values.data(), {3, 4}, float32)));
    const Tensor same = a.to(Device::cpu());
    CHECK(same.data() == a.data());  // PyTorch's to(): the same memory
    const Tensor copied = a.to(Device::cpu(), true);
    const Tensor cloned = a.clone();
    CHECK(copied.data() != a.data());
    CHECK(cloned.data() != a.data());
    CHECK(cloned.data() != copied.data());
    // Writes to the original leave the copies as they were.
    assign(a, Array(a) + 100.0f);
    CHECK(copied.to_vector<float>() == values);
    CHECK(cloned.to_vector<float>() == values);
    CHECK(a.to_vector<float>()[0] == doctest::Approx(98.0));
    // A strided view is copied even by to(): the result is contiguous.
    const Tensor column = a.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone}, {1, 2}});
    const Tensor packed = column.to(Device::cpu());
    CHECK(packed.is_contiguous());
    CHECK(packed.data() != column.data());
    // clone() of a strided view: contiguous, the same values.
    const Tensor cc = column.clone();
    CHECK(cc.is_contiguous());
    CHECK(cc.to_vector<float>() == column.to_vector<float>());
}

TEST_CASE(
    "Tensor::item reads the value of a one-element tensor, converted, and other sizes name the caller") {
    std::vector<double> one = {2.75};
    const Tensor t = Tensor::view(one.data(), {1, 1}, float64);
    CHECK(t.item<double>() == 2.75);
    CHECK(t.item<float>() == 2.75f);
    CHECK(t.item<std::int64_t>() == 2);  // a cast truncates toward zero
    const Tensor s = eval(sum(Array(Tensor::view(one.data(), {1}, float64)) * 4.0));
    CHECK(s.rank() == 0);
    CHECK(s.item<double>() == 11.0);
    std::vector<float> two = {1.0f, 2.0f};
    const std::string m = error_message([&] { (void)Tensor::view(two.data(), {2}, float32).item<float>(); });
    CHECK(contains(m, "Tensor::item()"));
    CHECK(contains(m, "2 elements"));
    CHECK(contains(m, "test_host_tensors.cpp"));
}

TEST_CASE("Tensor view errors name the caller's file and line, not Loom's") {
    Tensor a = Tensor::host({4, 6}, float32);
    const std::string tensor_line = std::to_string(__LINE__ + 1);
    const std::string slice = error_message([&] { (void)a.slice({{0, 9, 1}, {0, 2, 1}}); });
    CHECK(contains(slice, "test_host_tensors.cpp:" + tensor_line));
    CHECK(!contains(slice, "tensor_views.cpp"));
    const std::string reshape_line = std::to_string(__LINE__ + 1);
    const std::string reshape = error_message([&] { (void)a.reshape({5, 5}); });
    CHECK(contains(reshape, "test_host_tensors.cpp:" + reshape_line));
    const std::string permute = error_message([&] { (void)a.permute({0, 0}); });
    CHECK(contains(permute, "test_host_tensors.cpp:"));
    const std::string squeeze = error_message([&] { (void)a.squeeze(0); });
    CHECK(contains(squeeze, "test_host_tensors.cpp:"));
    const std::string unsqueeze = error_message([&] { (void)a.unsqueeze(7); });
    CHECK(contains(unsqueeze, "test_host_tensors.cpp:"));
    const std::string transposed = error_message([&] { (void)Tensor::host({4}, float32).transposed(); });
    CHECK(contains(transposed, "test_host_tensors.cpp:"));
    const std::string as_float64 = error_message([&] {
        (void)a.slice({{0, 4, 1}, {0, 3, 1}}).view(DType::Float64);
    });
    CHECK(contains(as_float64, "test_host_tensors.cpp:"));
    const std::string null_view = error_message([&] { (void)Tensor::view(nullptr, {3}, float32); });
    CHECK(contains(null_view, "Tensor::view()"));
    CHECK(contains(null_view, "test_host_tensors.cpp:"));
    const std::string strides = error_message([&] { (void)Tensor::view(a.data(), {4, 6}, float32, {6}); });
    CHECK(contains(strides, "test_host_tensors.cpp:"));
}

TEST_CASE("time_calls and median_ms time host work by the wall clock and say so") {
    int calls = 0;
    const auto work = [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::microseconds(300));
    };
    const Timing t = time_calls(work, Device::cpu(), 7, 2);
    CHECK(calls == 9);
    CHECK(t.reps == 7);
    CHECK(t.clock == TimingClock::HostWallClock);
    CHECK(t.median_ms >= 0.3);
    CHECK(t.min_ms <= t.median_ms);
    CHECK(contains(t.to_string(), "median of 7 calls"));
    CHECK(contains(t.to_string(), "wall time"));
    if (!cuda_available()) {
        calls = 0;
        CHECK(median_ms(work, 5, 1) >= 0.3);  // no GPU: the host's clock, not NoDeviceError
        CHECK(calls == 6);
        // GPU work named explicitly still needs a GPU.
        CHECK_THROWS_AS(time_calls(work, Device::cuda(0)), NoDeviceError);
    }
}

TEST_CASE("a refused host call leaves its outputs' bytes as they were") {
    Tensor out = testing::random_tensor({8, 12}, float32, 7);
    const Tensor before = out.clone();
    const Tensor x = testing::random_tensor({8, 12}, float32, 8);
    const auto untouched = [&](const char* what) {
        INFO(what);
        CHECK(testing::compare(out, before, testing::Tolerance::exact()).ok);
    };
    // A shape that does not match the view.
    CHECK_THROWS_AS(assign(out.slice({{0, 4, 1}}), relu(Array(x))), Error);
    untouched("assign() of [8, 12] into a [4, 12] view");
    // A dtype the output cannot hold without a cast.
    CHECK_THROWS_AS(assign(out, Array(x) > 0.0f), Error);
    untouched("assign() of bool into float32");
    // A traced function whose output overlaps itself, and one whose output has another shape.
    auto f = loom::function("scaled", [](Array a) { return a * 3.0f + 1.0f; });
    CHECK_THROWS_AS(f(x, out.slice({{0, 1, 1}}).as_strided({8, 12}, {0, 1}, out.offset())), Error);
    untouched("a traced output that overlaps itself");
    CHECK_THROWS_AS(f(x, out.transposed()), Error);
    untouched("a traced output of shape [12, 8]");
    // The same calls with good arguments do write.
    f(x, out);
    CHECK(!testing::compare(out, before, testing::Tolerance::exact()).ok);
}
