// Factories and writes into strided views on the GPU: the programs of the host tests
// (tests/common/views_checks.hpp) on device tensors, against the CPU reference and the memory around each
// view. They run under compute-sanitizer memcheck in the device run's sanitizer step.
#include <doctest/doctest.h>

#include <loom/loom.hpp>

#include "../common/views_checks.hpp"

using namespace loom;

TEST_CASE(
    "views on the GPU: writes into columns, strided slices, reversed and transposed views of 2-D to 4-D "
    "tensors") {
    views_checks::check_strided_writes(Device::cuda(0));
}

TEST_CASE("views on the GPU: writes at every alignment, steps 1, 2 and -1, sizes 0 to 4097") {
    views_checks::check_aligned_writes(Device::cuda(0));
}

TEST_CASE("views on the GPU: writes that overlap their inputs go through a temporary") {
    views_checks::check_overlapping_writes(Device::cuda(0));
}

TEST_CASE("views on the GPU: factories made on the device, lazy and fused") {
    views_checks::check_factories(Device::cuda(0));
    // A factory beside a device tensor fuses into its kernel: one kernel, nothing materialized.
    const Tensor x = testing::random_tensor({64, 1000}, float32, 3).to(Device::cuda(0));
    const Array y = Array(x) * arange(0.0, 1000.0, 1.0, float32, Device::cuda(0)) +
                    ones({64, 1000}, float32, Device::cuda(0));
    const Tensor got = y.eval();
    testing::require_matches_reference({y.node()}, {got});
    CHECK(cuda_source({y}).find("an index, computed") != std::string::npos);
}

TEST_CASE("views on the GPU: tensor views of device memory, read back") {
    const Tensor a =
        from_host(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}, float32, Device::cuda(0));
    CHECK(a.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, 1}, {2, 3, 1}}).to_vector<float>() ==
          std::vector<float>{2, 6, 10});
    CHECK(a.transposed().to_vector<float>() == std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
    CHECK(a.view(int32).to_vector<std::int32_t>()[1] == 0x3f800000);
    CHECK(a.reshape({2, -1}).unsqueeze(0).squeeze(0).to_vector<float>()[7] == 7.0f);
    // A Tensor view is an input like any other: evaluate an expression over a transposed slice.
    const Array e = Array(a.transposed().slice({{1, 3, 1}})) * 2.0;
    testing::require_matches_reference({e.node()}, {e.eval()});
}
