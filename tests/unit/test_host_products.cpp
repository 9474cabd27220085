// Matrix products on the LLVM host back end (docs/llvm-backend.md, "Matrix products") against the CPU
// reference, bit for bit: odd sizes around the micro tile and the block, K = 0, K across one and several
// chunks of kProductChunk (the pairwise tree), transposed, sliced, reversed and batch-broadcast operands,
// matrix-vector products, prologues computed first, fused epilogues (fused equals unfused), every dtype the
// contract gives products. Outputs are written into tensors poisoned with NaN (or a pattern) first.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <loom/loom.hpp>

#include "loom/runtime/host_backend.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;

namespace {

Tensor random(const Shape& s, DType t, std::uint64_t seed) {
    // Never zeros: a normal distribution (int8: uniform over the whole range).
    return testing::random_tensor(
        s, t, seed, t == DType::Int8 ? testing::Random::uniform(-128, 127) : testing::Random::normal());
}

// A host tensor of `shape` and `dtype` whose bytes are all 0xff (NaN for the float dtypes, -1 for integers).
Tensor poisoned(const Shape& shape, DType dtype) {
    Tensor t = Tensor::host(shape, dtype);
    if (t.nbytes() > 0) std::memset(t.data(), 0xff, t.nbytes());
    return t;
}

// Whether the host plan of `y` runs its product on the LLVM back end (not on the reference).
bool product_on_llvm(const Array& y) {
    const std::string plan = explain({y});
    return plan.find("micro tiles") != std::string::npos &&
           plan.find("runs on the CPU reference") == std::string::npos;
}

// `ys` evaluated into poisoned outputs, against the reference's evaluation of the same graphs, bit for bit.
void require_reference_bits(const std::vector<Array>& ys, const std::string& what) {
    std::vector<Tensor> outs;
    for (const Array& y : ys) outs.push_back(poisoned(y.shape(), y.dtype()));
    assign(outs, ys);
    std::vector<ir::NodePtr> roots;
    for (const Array& y : ys) roots.push_back(y.node());
    const std::vector<Tensor> expected = reference::evaluate(roots);
    for (std::size_t k = 0; k < outs.size(); ++k) {
        const testing::Comparison c =
            testing::compare(outs[k], expected[k], testing::Tolerance::exact(), what);
        CHECK_MESSAGE(c.ok, what << " output " << k << ": " << c.message);
    }
}

void require_reference_bits(const Array& y, const std::string& what) {
    require_reference_bits(std::vector<Array>{y}, what);
}

bool llvm() {
    return host_backend_info().llvm;
}

}  // namespace

TEST_CASE("host products: odd sizes, float32 and float64, against the reference bit for bit") {
    if (!llvm()) return;
    const std::int64_t sizes[] = {1, 7, 31, 33, 129};
    std::uint64_t seed = 1000;
    for (DType dt : {float32, float64})
        for (std::int64_t M : sizes)
            for (std::int64_t N : sizes) {
                const std::int64_t K = sizes[(M + N) % 5] + 2;  // K 3 .. 131: every remainder of 4
                const Array a(random({M, K}, dt, seed++)), b(random({K, N}, dt, seed++));
                const Array y = matmul(a, b);
                if (M == 7 && N == 33) CHECK(product_on_llvm(y));
                require_reference_bits(y, fmt::format("{} [{}, {}] x [{}, {}]", name(dt), M, K, K, N));
            }
    // Blocks and K steps: several blocks each way, K past one step of 256 values.
    for (DType dt : {float32, float64}) {
        const Array a(random({203, 517}, dt, seed++)), b(random({517, 301}, dt, seed++));
        require_reference_bits(matmul(a, b), fmt::format("{} [203, 517] x [517, 301]", name(dt)));
    }
}

TEST_CASE("host products: K = 0 gives +0, and K across one and several chunks (the pairwise tree)") {
    if (!llvm()) return;
    {
        const Array a(random({5, 0}, float32, 1)), b(random({0, 19}, float32, 2));
        Tensor out = poisoned({5, 19}, float32);
        assign(out, matmul(a, b));
        const float* o = static_cast<const float*>(out.data());
        bool all_plus_zero = true;
        for (std::int64_t e = 0; e < out.numel(); ++e)
            all_plus_zero = all_plus_zero && o[e] == 0.0f && !std::signbit(o[e]);
        CHECK(all_plus_zero);
    }
    // 8192 + 37: two chunks; 3 x 8192 + 5: three (the odd last partial carried up); 4 x 8192 + 1: five.
    std::uint64_t seed = 2000;
    for (const std::int64_t K :
         {std::int64_t{8192}, std::int64_t{8229}, std::int64_t{24581}, std::int64_t{32769}})
        for (DType dt : {float32, float64}) {
            const Array a(random({3, K}, dt, seed++)), b(random({K, 17}, dt, seed++));
            const Array y = matmul(a, b);
            CHECK(product_on_llvm(y));
            require_reference_bits(y, fmt::format("{} [3, {}] x [{}, 17]", name(dt), K, K));
        }
}

TEST_CASE("host products: transposed, sliced, reversed and batch-broadcast operands") {
    if (!llvm()) return;
    std::uint64_t seed = 3000;
    const Tensor A = random({40, 70}, float32, seed++), B = random({70, 45}, float32, seed++);
    // Tensor views as inputs (the layouts' strides): A^T's transpose, a strided slice, a reversed one.
    const Tensor At = random({70, 40}, float32, seed++).transposed();  // [40, 70], column-major
    const Tensor Bs = random({140, 45}, float32, seed++).slice({{0, ir::SliceSpec::kNone, 2}});  // [70, 45]
    const Tensor Br = B.slice({{ir::SliceSpec::kNone, ir::SliceSpec::kNone, -1}});  // rows reversed
    require_reference_bits(matmul(Array(At), Array(B)), "transposed A (a Tensor view)");
    require_reference_bits(matmul(Array(A), Array(Bs)), "B every other row (a Tensor view)");
    require_reference_bits(matmul(Array(A), Array(Br)), "B reversed (a Tensor view)");
    // The same as Array views (view nodes of the graph over contiguous inputs).
    require_reference_bits(matmul(transpose(Array(B)), transpose(Array(A))), "both transposed (Array views)");
    require_reference_bits(matmul(Array(A).slice({{3, 33}, {5, 65}}), Array(B).slice({{7, 67}, {1, 44, 3}})),
                           "sliced (Array views)");
    // A column slice of B: its rows are strided, its columns not contiguous with the next row.
    require_reference_bits(matmul(Array(A), Array(B).slice({{}, {2, 41}})), "B's columns 2 .. 40");
    // Batches: [3, M, K] x [K, N] (B broadcast), [2, 1, M, K] x [3, K, N], and a batch of transposed views.
    const Tensor A3 = random({3, 13, 70}, float32, seed++), B3 = random({3, 70, 45}, float32, seed++);
    const Tensor A21 = random({2, 1, 13, 70}, float32, seed++);
    require_reference_bits(matmul(Array(A3), Array(B)), "[3, 13, 70] x [70, 45]");
    require_reference_bits(matmul(Array(A21), Array(B3)), "[2, 1, 13, 70] x [3, 70, 45]");
    require_reference_bits(matmul(Array(A).slice({{0, 13}}), Array(B3)),
                           "[13, 70] x [3, 70, 45] (A broadcast)");
    require_reference_bits(matmul(Array(B3).permute({0, 2, 1}), Array(A3).permute({0, 2, 1})),
                           "[3, 45, 70] x [3, 70, 13] transposed views");
}

TEST_CASE("host products: matrix-vector and vector-matrix products") {
    if (!llvm()) return;
    std::uint64_t seed = 4000;
    for (DType dt : {float32, float64}) {
        const Array m(random({37, 300}, dt, seed++)), v(random({300}, dt, seed++)),
            w(random({37}, dt, seed++));
        const Array mv = matmul(m, v), vm = matmul(w, m), vv = matmul(v, v);
        CHECK(product_on_llvm(mv));
        CHECK(explain({mv}).find("computed as the vector times the matrix's transpose") != std::string::npos);
        require_reference_bits(mv, fmt::format("{} [37, 300] x [300]", name(dt)));
        require_reference_bits(vm, fmt::format("{} [37] x [37, 300]", name(dt)));
        require_reference_bits(vv, fmt::format("{} [300] x [300]", name(dt)));
        // A long K: a vector of 8192 + 100 values, two chunks.
        const Array lm(random({9, 8292}, dt, seed++)), lv(random({8292}, dt, seed++));
        require_reference_bits(matmul(lm, lv), fmt::format("{} [9, 8292] x [8292]", name(dt)));
    }
}

TEST_CASE("host products: fused epilogues equal the unfused kernels and the reference") {
    if (!llvm()) return;
    std::uint64_t seed = 5000;
    for (DType dt : {float32, float64}) {
        const Array x(random({45, 67}, dt, seed++)), w(random({67, 39}, dt, seed++)),
            bias(random({39}, dt, seed++));
        const Array y = gelu(matmul(x, w) + bias);
        const Array z = matmul(x, w) * 0.5 - bias;  // two outputs of one product
        CHECK(product_on_llvm(y));
        CHECK(explain({y}).find("gelu") != std::string::npos);
        Tensor fused = poisoned({45, 39}, dt), fused2 = poisoned({45, 39}, dt);
        assign({fused, fused2}, {y, z});
        Options off = current_options();
        off.fusion = false;
        Tensor unfused = poisoned({45, 39}, dt), unfused2 = poisoned({45, 39}, dt);
        {
            const OptionsScope scope(off);
            assign({unfused, unfused2}, {y, z});
        }
        for (const auto& [got, want] : {std::pair{fused, unfused}, std::pair{fused2, unfused2}}) {
            const testing::Comparison c = testing::compare(got, want, testing::Tolerance::exact(), "fused");
            CHECK_MESSAGE(c.ok, name(dt) << " fused against unfused: " << c.message);
        }
        require_reference_bits({y, z}, fmt::format("{} gelu(x w + bias), x w / 2 - bias", name(dt)));
        // A cast after the product, and the product itself beside its epilogue.
        require_reference_bits({astype(matmul(x, w), float16), matmul(x, w)},
                               fmt::format("{} cast", name(dt)));
    }
}

TEST_CASE("host products: prologues are computed first, half and int8 operands") {
    if (!llvm()) return;
    std::uint64_t seed = 6000;
    const Array a(random({33, 41}, float32, seed++)), b(random({41, 29}, float32, seed++));
    const Array y = matmul(a * 1.5 + 0.25, astype(b, float64) * 2.0);
    CHECK(product_on_llvm(y));
    require_reference_bits(y, "(a 1.5 + 0.25) x (float64(b) 2)");
    for (DType dt : {float16, bfloat16, int8}) {
        const Array h(random({31, 300}, dt, seed++)), g(random({300, 35}, dt, seed++));
        const Array p = matmul(h, g);
        CHECK(product_on_llvm(p));
        require_reference_bits(p, fmt::format("{} [31, 300] x [300, 35]", name(dt)));
        require_reference_bits(matmul(transpose(g), transpose(h)), fmt::format("{} transposed", name(dt)));
    }
}
