// lm::expc::exp_f32 on the device (ir/include/loom/ir/exp_core.hpp, in the device prelude) gives the bits of
// the host's exp_f32, which the CPU reference and the host back end use, for every one of the 2^32 float32
// arguments, compiled with Loom's options and with fast math (flush-to-zero: subnormal results are kept all
// the same). The host's values are computed on every core, chunk by chunk.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <string_view>
#include <thread>
#include <vector>

#include "../common/exp_core_kernel.hpp"
#include "loom/ir/exp_core.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/module.hpp"
#include "loom/runtime/nvrtc.hpp"
#include "loom/runtime/tensor.hpp"

using namespace loom;

namespace {

/// The arguments in [first, first + n) whose device bits `dev` differ from the host's exp_f32, counted on
/// every core; the first few are kept in `examples`.
std::uint64_t count_differences(const std::uint32_t* dev, std::uint32_t first, std::uint32_t n,
                                std::vector<std::uint32_t>& examples) {
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    std::atomic<std::uint64_t> bad{0};
    std::vector<std::vector<std::uint32_t>> found(threads);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            const std::uint32_t lo = static_cast<std::uint32_t>(std::uint64_t{n} * t / threads);
            const std::uint32_t hi = static_cast<std::uint32_t>(std::uint64_t{n} * (t + 1) / threads);
            for (std::uint32_t i = lo; i < hi; ++i) {
                const std::uint32_t b = first + i;
                if (dev[i] == std::bit_cast<std::uint32_t>(ir::expc::exp_f32(std::bit_cast<float>(b))))
                    continue;
                bad.fetch_add(1);
                if (found[t].size() < 4) found[t].push_back(b);
            }
        });
    for (std::thread& t : pool) t.join();
    for (const auto& f : found)
        for (std::uint32_t b : f)
            if (examples.size() < 10) examples.push_back(b);
    return bad.load();
}

}  // namespace

TEST_CASE("exp core on the GPU: lm::expc::exp_f32 gives the host's bits for all 2^32 float32 arguments") {
    const auto& info = device_info();
    constexpr std::uint32_t kChunk = 1u << 26;
    Tensor out = Tensor::empty({kChunk}, float32, Device::cuda());
    for (bool fast_math : {false, true}) {
        CAPTURE(fast_math);
        nvrtc::Options o;
        o.cc_major = info.cc_major;
        o.cc_minor = info.cc_minor;
        o.fast_math = fast_math;
        const nvrtc::Result r = nvrtc::compile(loom_test::kExpCoreKernel, loom_test::exp_core_source(), o);
        Module m = Module::load(std::string_view(r.binary.data(), r.binary.size()),
                                fast_math ? "exp_core_fast_math" : "exp_core");
        Kernel k = m.kernel(loom_test::kExpCoreKernel, sizeof(loom_test::ExpCoreArgs));
        std::uint64_t bad = 0;
        std::vector<std::uint32_t> examples;
        for (std::uint64_t first = 0; first < (std::uint64_t{1} << 32); first += kChunk) {
            loom_test::ExpCoreArgs a{static_cast<unsigned int*>(out.data()),
                                     static_cast<std::uint32_t>(first), kChunk};
            LaunchConfig cfg;
            cfg.grid.x = static_cast<unsigned>(info.sm_count) * 8;
            cfg.block.x = 256;
            k.launch(cfg, &a, sizeof a, "test_exp_core.cpp");
            const Tensor host = out.to_host();
            bad += count_differences(static_cast<const std::uint32_t*>(host.data()),
                                     static_cast<std::uint32_t>(first), kChunk, examples);
        }
        for (std::uint32_t b : examples)
            MESSAGE(
                "argument 0x" << std::hex << b << ": host 0x"
                              << std::bit_cast<std::uint32_t>(ir::expc::exp_f32(std::bit_cast<float>(b))));
        CHECK(bad == 0);
    }
}
