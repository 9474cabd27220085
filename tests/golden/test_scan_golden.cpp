// Scan kernels (Family::Scan; docs/semantics.md, "Scans"): a float32 cumsum over long rows is one kernel on
// the single-pass tree path, whose text is the golden file; the kernels of every op and dtype, on both paths,
// inclusive and exclusive, compile with NVRTC for sm_90 (no GPU needed); elementwise producers and consumers
// are the scan kernel's prologue and epilogue.
#include <cstdlib>
#include <loom/loom.hpp>

#include "golden_util.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

std::vector<codegen::KernelSource> compile_plan(const std::vector<Array>& arrays, bool compile = true) {
    std::vector<ir::NodePtr> roots;
    for (const Array& a : arrays) roots.push_back(a.node());
    const codegen::FusionPlan plan = gpu::plan_bound(ir::run_pipeline(roots, ir::standard_passes()),
                                                     codegen::DeviceInfo::h200(), {}, "", nullptr, {});
    std::vector<codegen::KernelSource> sources = gpu::emit_kernels(plan);
    REQUIRE(!sources.empty());
    if (compile)
        for (const codegen::KernelSource& ks : sources) golden::compile_sm90(ks);
    return sources;
}

using ScanFn = Array (*)(const Operand&, std::int64_t, ScanOptions, Loc);

}  // namespace

TEST_CASE("golden: a float32 cumsum over rows of many tiles is one single-pass kernel") {
    const Tensor x = Tensor::host({4, 3 * 2048 + 5}, float32);
    const auto ks = compile_plan({cumsum(x, 1)});
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].kernel.find("lm::scan::scan_kernel<lm::scan::Sum, float, float, float, false, true, 8, 4>") !=
          std::string::npos);
    golden::check_text("sc1_cumsum_tree_f32", ks[0].kernel);
}

TEST_CASE("golden: the scan kernel of every op and dtype compiles, on both paths") {
    // Each kernel takes about a second of NVRTC: by default each op with a sample of dtypes that covers every
    // dtype and both paths; LOOM_TEST_EXHAUSTIVE=1 compiles every op, dtype and path, inclusive and
    // exclusive.
    const bool all = std::getenv("LOOM_TEST_EXHAUSTIVE") != nullptr;
    const ScanFn ops[] = {cumsum, cumprod, cummax, cummin, logcumsumexp};
    int k = 0;
    for (int o = 0; o < 5; ++o)
        for (DType t : kAllDTypes) {
            if (o == 4 && !is_float(t)) continue;
            for (std::int64_t n : {100, 1000, 5000})
                for (bool exclusive : {false, true}) {
                    if (!all && (k++ % 7) != 0) continue;
                    CAPTURE(o);
                    CAPTURE(name(t));
                    CAPTURE(n);
                    CAPTURE(exclusive);
                    const Tensor x = Tensor::host({3, n}, t);
                    const auto ks = compile_plan({ops[o](x, -1, {.exclusive = exclusive}, Loc::current())});
                    REQUIRE(ks.size() == 1);
                    const char* entry = n > 256 ? "lm::scan::scan_kernel<" : "lm::scan::scan_warp_rows<";
                    CHECK(ks[0].kernel.find(entry) != std::string::npos);
                    if (n > 256)
                        CHECK(ks[0].kernel.find(n > 2048 ? ", true, 8, " : ", false, 4>(p);") !=
                              std::string::npos);
                }
        }
}

TEST_CASE("golden: a scan's elementwise producer and consumer are its prologue and epilogue") {
    // The Monte Carlo path: log-prices by a cumsum over in-kernel normals, the prices by exp: one kernel,
    // whose text is the golden file, compiled with NVRTC.
    const Tensor x0 = Tensor::host({1}, float32);
    const Array z = random_normal({64, 252}, 7);
    const Array paths = exp(cumsum(z * 0.0126 + 0.0002, 1) + Array(x0));
    const auto ks = compile_plan({paths});
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].kernel.find("_pro_element(p.pro, ") != std::string::npos);
    CHECK(ks[0].kernel.find("_ep_element(p.ep, ") != std::string::npos);
    CHECK(ks[0].kernel.find("static constexpr bool kLoads = true;") != std::string::npos);
    // The normals in vectors of 4 consecutive elements (rows of 252 start on multiples of 4): one block of
    // random words per vector.
    CHECK(ks[0].kernel.find("static constexpr int kLoadWidth = 4;") != std::string::npos);
    CHECK(ks[0].kernel.find("lm::vector_lane<4>(p.in0_base + (long long)(i), j)") != std::string::npos);
    golden::check_text("sc2_cumsum_fused_f32", ks[0].kernel);
    // The Asian option's average: the mean of each row of exp(log-prices) in the same kernel, the prices
    // never stored.
    const Array average = mean(exp(cumsum(z * 0.0126 + 0.0002, 1) + Array(x0)), {1});
    const auto ka = compile_plan({average});
    REQUIRE(ka.size() == 1);
    CHECK(ka[0].kernel.find("static constexpr bool kReducesRows = true;") != std::string::npos);
    CHECK(ka[0].kernel.find("static constexpr bool kMean = true;") != std::string::npos);
    golden::check_text("sc3_cumsum_row_mean_f32", ka[0].kernel);
    // A row reduction's kernel is not fused again with a reader of its own results (it writes the reduced
    // rows, not the scan): rz + ru reads rz from memory, rz * 3 stays the kernel's; a keepdims sum reduced
    // again plans (it threw std::out_of_range when the merged kernel was taken for a scan).
    const Tensor zx = Tensor::host({6, 40}, float32), zy = Tensor::host({6, 7}, float32);
    const Array rz = sum(cumsum(Array(zx), 1), {1}), ru = sum(Array(zy), {1});
    for (const std::vector<Array>& roots :
         {std::vector<Array>{rz + ru, rz * 3.0}, std::vector<Array>{rz * 3.0, rz + ru}}) {
        const auto kz = compile_plan(roots, false);
        REQUIRE(kz.size() >= 2);
        CHECK(kz[0].kernel.find("static constexpr bool kReducesRows = true;") != std::string::npos);
        CHECK(kz[0].kernel.find("lm::mul(") != std::string::npos);  // rz * 3 in the row outputs
    }
    const Array zk = sum(cumsum(Array(zx), 1), {1}, true);
    CHECK(compile_plan({sum(zk * 2.0, {1})}, false).size() == 2);
    // Row reductions of other dtypes compile too: a float64 mean, a float16 scan summed in float32, an int32
    // scan (int64 accumulator) averaged in float64.
    const Tensor rd = Tensor::host({16, 100}, float64), rh = Tensor::host({16, 100}, float16),
                 ri = Tensor::host({16, 100}, DType::Int32);
    const Tensor rt = Tensor::host({16, 1000}, float32);  // the tile path's 4 warps per row
    for (const Array& y :
         {mean(cumsum(Array(rd), 1) * 2.0, 1), sum(cumsum(Array(rh), 1).astype(float32), 1),
          mean(cumsum(Array(ri), 1).astype(float64), 1, true), sum(cumsum(Array(rt), 1), 1)}) {
        const auto k = compile_plan({y});
        REQUIRE(k.size() == 1);
        CHECK(k[0].kernel.find("static constexpr bool kReducesRows = true;") != std::string::npos);
    }
    // bfloat16 through the warp path, the tile path and the tree path, inclusive and exclusive: the prologue
    // alone, the epilogue alone, both.
    const Tensor h = Tensor::host({8, 300}, bfloat16);
    const auto kp = compile_plan({cummax(Array(h) * 2.0, 0)});
    REQUIRE(kp.size() == 1);
    CHECK(kp[0].kernel.find("static constexpr bool kStores = false;") != std::string::npos);
    const auto ke = compile_plan({cumsum(h, 1, {.exclusive = true}) - Array(h)});
    REQUIRE(ke.size() == 1);
    CHECK(ke[0].kernel.find("static constexpr bool kLoads = false;") != std::string::npos);
    const Tensor l = Tensor::host({3, 5000}, float64);
    const auto kl = compile_plan({logcumsumexp(Array(l) * 0.5, 1, {.exclusive = true}) * 2.0});
    REQUIRE(kl.size() == 1);
    CHECK(kl[0].kernel.find(", true, 8, ") != std::string::npos);
    // A transposed input is read in place (strided loads): one kernel, no prologue.
    const Tensor xt = Tensor::host({300, 8}, float64).transposed();
    const auto kt = compile_plan({logcumsumexp(xt, 1, {.exclusive = true})}, false);
    REQUIRE(kt.size() == 1);
    CHECK(kt[0].kernel.find("_io") == std::string::npos);
    // A reduction below the scan is computed first; a sum of the scan's rows of at most 1024 is its row
    // reduction (2 kernels), a sum of longer rows or over another axis reads the scan from memory (3).
    const Tensor m = Tensor::host({16, 100}, float32), m2 = Tensor::host({16, 1100}, float32);
    CHECK(compile_plan({sum(cumsum(Array(m) - mean(Array(m), 1, true), 1), 1)}, false).size() == 2);
    CHECK(compile_plan({sum(cumsum(Array(m2) - mean(Array(m2), 1, true), 1), 1)}, false).size() == 3);
    CHECK(compile_plan({sum(cumsum(Array(m) - mean(Array(m), 1, true), 1), 0)}, false).size() == 3);
}

TEST_CASE("golden: the scan plan's path, strides and explain text") {
    const auto plan_of = [](const Array& y) {
        return gpu::plan_bound(ir::run_pipeline({y.node()}, ir::standard_passes()),
                               codegen::DeviceInfo::h200(), {}, "", nullptr, {});
    };
    // A permuted [4, 3000, 5] input scanned along its axis of 3000 (stride 1 in memory): the tree path; the
    // other two axes follow each other in the input (strides 15000 and 3000) but not in the contiguous result
    // (15000 and 1), so they stay two.
    const Tensor x = Tensor::host({4, 5, 3000}, float32);
    const codegen::FusionPlan p = plan_of(cumsum(x.permute({0, 2, 1}), 1));
    REQUIRE(p.kernels.size() == 1);
    const auto& s = std::get<codegen::PlannedScan>(p.kernels[0].schedule);
    CHECK(s.plan.path == codegen::ScanPath::Tree);
    CHECK(s.length == 3000);
    CHECK(s.tiles() == 2);
    CHECK(s.in_step == 1);
    CHECK(s.outer == std::vector<std::int64_t>{4, 5});
    CHECK(s.in_outer == std::vector<std::int64_t>{15000, 3000});
    CHECK(s.out_outer == std::vector<std::int64_t>{15000, 1});
    CHECK(s.rows() == 20);
    const std::string text = p.to_string();
    CHECK(text.find("cumsum") != std::string::npos);
    CHECK(text.find("20 rows of 2 tiles in chunks of 1, a block per chunk") != std::string::npos);
    // Chunks: the tiles a thread's 32 registers hold (4 float32 tiles, 32 KiB), halved while the blocks are
    // fewer than a wave (3 per multiprocessor, 132 of them here), at most the row.
    CHECK(s.chunk_shift == 0);  // 20 rows of 2 chunks of one tile
    CHECK(s.chunks() == 2);
    const Tensor row = Tensor::host({1, (std::int64_t{1} << 21) + 1}, float32);  // 1025 tiles
    const codegen::FusionPlan rp = plan_of(cumsum(row, 1));
    const auto& r = std::get<codegen::PlannedScan>(rp.kernels.at(0).schedule);
    CHECK(r.plan.chunk_tiles() == 4);
    CHECK(r.plan.to_string().find("at most 4 tiles a chunk); 3 blocks per multiprocessor") !=
          std::string::npos);
    CHECK(r.chunk_shift == 1);  // 257 chunks of 4 tiles would be less than a wave
    CHECK(r.chunks() == 513);
    const Tensor big = Tensor::host({1, std::int64_t{1} << 24}, float32);  // 8192 tiles
    const codegen::FusionPlan gp = plan_of(cumsum(big, 1));
    const auto& g = std::get<codegen::PlannedScan>(gp.kernels.at(0).schedule);
    CHECK(g.chunk_shift == 2);
    CHECK(g.chunks() == 2048);
    CHECK(g.counter_words() ==
          2048 + 2 * 64 + 2 * 2);  // flags of 2048 chunks; of, and arrivals into, 64 and 2 units
    const Tensor bytes =
        Tensor::host({1, std::int64_t{1} << 24}, int8);  // int64 accumulators: 2 tiles to a chunk
    const codegen::FusionPlan bp = plan_of(cumsum(bytes, 1));
    const auto& b = std::get<codegen::PlannedScan>(bp.kernels.at(0).schedule);
    CHECK(b.plan.chunk_tiles() == 2);
    CHECK(b.chunk_shift == 1);
    const Tensor rows = Tensor::host({600, 2 * 2048 + 1}, float32);  // more rows than a wave: a chunk each
    const codegen::FusionPlan rsp = plan_of(cumsum(rows, 1));
    const auto& rs = std::get<codegen::PlannedScan>(rsp.kernels.at(0).schedule);
    CHECK(rs.chunk_shift == 2);
    CHECK(rs.chunks() == 1);
    // A row of 2048: the tile path; int8 cumsum accumulates and stores int64.
    const codegen::FusionPlan q = plan_of(cumsum(Tensor::host({7, 2048}, int8), -1, {.exclusive = true}));
    const auto& t = std::get<codegen::PlannedScan>(q.kernels[0].schedule);
    CHECK(t.plan.path == codegen::ScanPath::Tile);
    CHECK(t.plan.acc == int64);
    CHECK(t.plan.out == int64);
    CHECK(t.plan.exclusive);
}
