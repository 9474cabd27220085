// GPU tests of pointwise kernels on arrays past the 32-bit limits: more than 2^31 elements (int8), and a
// float32 array whose byte size (not element count) passes 2^31. One run each into poisoned outputs,
// checked in full against the multi-threaded CPU reference; device memory is returned afterwards.
#include <doctest/doctest.h>

#include "loom/runtime/device.hpp"
#include "test_pointwise_util.hpp"

using namespace pwtest;

namespace {

/// Enough free device memory for `bytes` (with room to spare), else the case is skipped with a message.
bool have_device_memory(std::size_t bytes) {
    if (!dev().is_cuda()) return true;
    const PoolStats s = pool_stats(current_device());
    if (s.device_free_bytes + s.reserved_bytes - s.used_bytes >= bytes + (std::size_t{1} << 30)) return true;
    MESSAGE("skipped: needs " << bytes << " bytes of device memory, " << s.device_free_bytes << " free");
    return false;
}

}  // namespace

TEST_CASE("pointwise large: 2^31 + 5 int8 elements use 64-bit indexing and every element is written") {
    const std::int64_t n = (std::int64_t{1} << 31) + 5;
    if (!have_device_memory(2 * static_cast<std::size_t>(n))) return;
    {
        Tensor x = rand({n}, int8, 9001);
        const Array e = x * 3 + 1;  // wraps modulo 2^8
        Tensor out = Tensor::empty({n}, int8, dev());
        const Launch l = plan_of({e}, {out});
        CHECK(l.plan.index == codegen::IndexWidth::I64);
        CHECK(l.variant == codegen::Variant::Vector);
        testing::poison(out);
        assign(out, e);
        wait_device();
        require_reference({e}, {out}, "int8 x * 3 + 1 over 2^31 + 5 elements");
        // The last elements, past 2^31, by hand.
        const Tensor xt = x.as_strided({16}, {1}, n - 16).to_host(),
                     ot = out.as_strided({16}, {1}, n - 16).to_host();
        for (std::int64_t i = 0; i < 16; ++i)
            CHECK(ot.get_int(i) ==
                  static_cast<std::int8_t>(static_cast<std::uint8_t>(xt.get_int(i) * 3 + 1)));
        // A logical op over the same input, scalar variant (the view starts at an odd byte).
        const Array odd = logical_not(Array(x).slice({{1, kNone}}));
        Tensor ob = Tensor::empty({n - 1}, bool_, dev());
        CHECK(plan_of({odd}, {ob}).variant == codegen::Variant::Scalar);
        testing::poison(ob);
        assign(ob, odd);
        wait_device();
        require_reference({odd}, {ob}, "bool logical_not(x[1:]) over 2^31 + 4 elements");
    }
    wait_device();
    if (dev().is_cuda()) trim_pool(current_device());
}

TEST_CASE("pointwise large: float32 of 2^29 + 7 elements, byte offsets past 2^31") {
    const std::int64_t n = (std::int64_t{1} << 29) + 7;
    if (!have_device_memory(3 * 4 * static_cast<std::size_t>(n))) return;
    {
        Tensor x = rand({n}, float32, 9002);
        const Array e = x * 2.0f - 1.0f;
        Tensor out = Tensor::empty({n}, float32, dev());
        const Launch l = plan_of({e}, {out});
        CHECK(l.plan.index == codegen::IndexWidth::I64);
        CHECK(l.variant == codegen::Variant::Vector);
        testing::poison(out);
        assign(out, e);
        wait_device();
        require_reference({e}, {out}, "float32 x * 2 - 1 over 2^29 + 7 elements");
        // Reversed and misaligned: every load computes a byte offset near 2^31 from the far end.
        const Array rev = Array(x).slice({{kNone, 0, -1}}) + 1.0f;  // elements n-1 .. 1
        Tensor orev = Tensor::empty({n - 1}, float32, dev());
        CHECK(plan_of({rev}, {orev}).plan.index == codegen::IndexWidth::I64);
        testing::poison(orev);
        assign(orev, rev);
        wait_device();
        require_reference({rev}, {orev}, "float32 x[:0:-1] + 1 over 2^29 + 6 elements");
        const Tensor xt = x.as_strided({4}, {1}, 1).to_host(),
                     ot = orev.as_strided({4}, {1}, n - 5).to_host();
        for (std::int64_t i = 0; i < 4; ++i)  // orev[n-2-j] = x[1+j] + 1
            CHECK(ot.get_double(i) == static_cast<double>(static_cast<float>(xt.get_double(3 - i)) + 1.0f));
    }
    wait_device();
    if (dev().is_cuda()) trim_pool(current_device());
}
