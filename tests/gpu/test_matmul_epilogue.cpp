// Epilogues of matrix products on the GPU: elementwise consumers over the product's shape (a row bias [N]
// or a column bias [M, 1], a residual [M, N], scalars, activations, casts to a narrower dtype, several
// outputs of one product) run in the product's kernel, after its value is rounded to the product's dtype;
// a consumer that reads the product through a transposing view, a reduction of it, or another product of
// it starts another kernel. Kernels are counted in the plan (Family::MatMul); every result is checked
// against the CPU reference (the product exactly, the activations within their derived ulps) into
// poisoned outputs, and against the unfused evaluation bit for bit. The products alone are in
// test_matmul.cpp.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "test_matmul_util.hpp"

using namespace loom;
using pwtest::kNone;

namespace {

// LOOM_TEST_SMALL=1 (the compute-sanitizer step of scripts/device_run.sh, whose time boxes the kernel cases
// share): the largest products (several million multiply-adds) are smaller or left out, and K past a chunk is
// 8193 rather than 20000 (a sanitizer follows every K step of a block through shared memory).
using mmtest::small_shapes;

using mmtest::Kernels;
using mmtest::kernels_of;
using mmtest::on_gpu;
using mmtest::run_both;
using mmtest::tile_of;

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// `arrays` run as one kernel, the product's, with its epilogue: the plan, the explain text and the
// generated CUDA say so; then run_both.
std::vector<Tensor> run_fused(const std::vector<Array>& arrays, const std::string& what) {
    if (on_gpu()) {
        INFO(what);
        const Kernels k = kernels_of(arrays);
        CHECK(k.total == 1);
        CHECK(k.products == 1);
        CHECK(tile_of(explain(arrays)) != "");
        const std::string src = cuda_source(arrays, "mm_epilogue");
        CHECK(count_of(src, "---- Loom ") == 1);  // one kernel (its vector and scalar entry points)
        CHECK(count_of(src, "---- Loom matmul kernel") == 1);
        CHECK(tile_of(src) != "");
    }
    return run_both(arrays, what);
}
Tensor run_fused(const Array& a, const std::string& what) {
    return run_fused(std::vector<Array>{a}, what).at(0);
}

// `arrays` need a kernel boundary after the product: at least two kernels, `products` of them products.
std::vector<Tensor> run_split(const std::vector<Array>& arrays, std::size_t products,
                              const std::string& what) {
    if (on_gpu()) {
        INFO(what);
        const Kernels k = kernels_of(arrays);
        CHECK(k.total >= 2);
        CHECK(k.products == products);
    }
    return run_both(arrays, what);
}
Tensor run_split(const Array& a, std::size_t products, const std::string& what) {
    return run_split(std::vector<Array>{a}, products, what).at(0);
}

}  // namespace

TEST_CASE("matmul: gelu(a @ b + bias) with a row bias [N] or a column bias [M, 1] is one kernel") {
    std::uint64_t seed = 1;
    for (const auto& [m, n, k] : std::vector<std::array<std::int64_t, 3>>{
             {257, 129, 193}, {33, 520, 31}, {1, 64, 64}, {128, 128, 128}, {31, 1, 33}}) {
        if (small_shapes() && m * n * k > (std::int64_t{1} << 22)) continue;
        const Tensor a = pwtest::rand({m, k}, float32, seed++), b = pwtest::rand({k, n}, float32, seed++);
        const Tensor row = pwtest::rand({n}, float32, seed++), col = pwtest::rand({m, 1}, float32, seed++);
        const std::string mnk = fmt::format("[{}, {}] x [{}, {}]", m, k, k, n);
        run_fused(gelu(matmul(a, b) + row), "gelu(a @ b + bias[N]) " + mnk);
        run_fused(gelu(matmul(a, b) + col), "gelu(a @ b + bias[M, 1]) " + mnk);
        run_fused(relu(matmul(a, b) + row), "relu(a @ b + bias[N]) " + mnk);
        run_fused(gelu_tanh(row + matmul(a, b)), "gelu_tanh(bias[N] + a @ b) " + mnk);
        // The product before its bias, exactly: the epilogue starts from the reference's product bits.
        const Tensor p = run_fused(matmul(a, b) + row, "a @ b + bias[N] " + mnk);
        const Tensor q = run_both(matmul(a, b), "a @ b " + mnk);
        pwtest::require_same_bits(p, run_both(Array(q) + row, "the product's result + bias[N]"),
                                  "fused bias against a separate add");
    }
}

TEST_CASE("matmul: a residual add, scalars and a cast to a narrower dtype run in the product's kernel") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 100;
    const std::int64_t m = 129, n = 127, k = 96;
    const Tensor a = pwtest::rand({m, k}, float32, seed++), b = pwtest::rand({k, n}, float32, seed++);
    const Tensor r = pwtest::rand({m, n}, float32, seed++), bias = pwtest::rand({n}, float32, seed++);
    const Tensor s = pwtest::rand({}, float32, seed++);
    run_fused(matmul(a, b) + r, "a @ b + r[M, N]");
    run_fused(r - matmul(a, b) * 0.5, "r - (a @ b) * 0.5");
    run_fused(matmul(a, b) * s + 1.0, "(a @ b) * s + 1 (a 0-d tensor and a weak scalar)");
    run_fused(maximum(matmul(a, b) + bias, r), "maximum(a @ b + bias, r)");
    run_fused(where(matmul(a, b) > 0, r, bias), "where(a @ b > 0, r, bias)");
    run_fused(matmul(a, b).astype(float16), "(a @ b).astype(float16)");
    run_fused(matmul(a, b).astype(bfloat16), "(a @ b).astype(bfloat16)");
    run_fused(gelu(matmul(a, b) + bias).astype(float16), "gelu(a @ b + bias).astype(float16)");
    run_fused((relu(matmul(a, b) + bias) * 16.0).astype(int8), "int8 quantization of relu(a @ b + bias)");
    run_fused(sigmoid(matmul(a, b)) * r + bias, "sigmoid(a @ b) * r + bias");
    // The residual as a view: transposed storage, or a row broadcast over M.
    const Tensor rt = pwtest::rand({n, m}, float32, seed++);
    run_both(matmul(a, b) + rt.transposed(), "a @ b + r (a transposed view)");
    run_both(matmul(a, b) + Array(bias).broadcast_to({m, n}), "a @ b + bias broadcast to [M, N]");
}

TEST_CASE("matmul: several outputs of one product come out of its kernel") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 200;
    const std::int64_t m = small_shapes() ? 100 : 200, k = small_shapes() ? 75 : 150,
                       n = small_shapes() ? 150 : 300;
    const Tensor a = pwtest::rand({m, k}, float32, seed++), b = pwtest::rand({k, n}, float32, seed++);
    const Tensor bias = pwtest::rand({n}, float32, seed++);
    const Array p = matmul(a, b) + bias;
    const std::vector<Tensor> both = run_fused({p, gelu(p)}, "eval(p, gelu(p)) with p = a @ b + bias");
    // eval() with two results: the same bits as the checked run.
    auto [pre, act] = eval(p, gelu(p));
    pwtest::wait_device();
    pwtest::require_same_bits(pre, both[0], "eval: pre-activation");
    pwtest::require_same_bits(act, both[1], "eval: activation");
    run_fused({matmul(a, b), relu(matmul(a, b) + bias), (matmul(a, b) * 2.0).astype(float16)},
              "the product, relu(product + bias) and a float16 copy");
    // The product written twice, and a float64 and an int32 cast of it.
    run_fused({matmul(a, b), matmul(a, b).astype(float64), matmul(a, b).astype(int32)},
              "casts beside the product");
}

TEST_CASE("matmul: a transposed view, a reduction or another product of the result is a kernel boundary") {
    std::uint64_t seed = 300;
    const std::int64_t m = 65, n = 97, k = 40;
    const Tensor a = pwtest::rand({m, k}, float32, seed++), b = pwtest::rand({k, n}, float32, seed++);
    const Tensor c = pwtest::rand({n, m}, float32, seed++), w = pwtest::rand({n, 33}, float32, seed++);
    const Tensor bias = pwtest::rand({n}, float32, seed++);
    run_split(transpose(matmul(a, b)) + c, 1, "transpose(a @ b) + c");
    run_split(sum(matmul(a, b), 1), 1, "sum over the rows of a @ b");
    run_split(sum(matmul(a, b), 0, true), 1, "sum over the columns of a @ b");
    run_split(softmax(matmul(a, b) + bias), 1, "softmax(a @ b + bias)");
    run_split(matmul(a, b) - max(matmul(a, b), -1, true), 1, "a @ b - max(a @ b, -1)");
    run_split(matmul(relu(matmul(a, b) + bias), w), 2, "a two-layer MLP: relu(a @ b + bias) @ w");
    run_split(matmul(matmul(a, b), transpose(matmul(a, b))), 2, "p @ p.T");
    // The product and its transpose as two outputs.
    run_split({matmul(a, b), transpose(matmul(a, b))}, 1, "p and p.T");
    // A square product read twice in one kernel, once through a transpose of an activation of it (the
    // fuzzer's seed 1799177366: the transposed read once came from the accumulators' placeholder, an illegal
    // address).
    for (const DType d : {float32, int8}) {
        const Tensor s = pwtest::rand({48, 40}, d, seed++), t = pwtest::rand({40, 48}, d, seed++);
        const Array r = relu(matmul(s, t));
        const Tensor cc = pwtest::rand({48, 48}, r.dtype(), seed++);
        run_split({transpose(r) + cc, r}, 1, fmt::format("relu(p).T + c and relu(p), {}", name(d)));
    }
}

TEST_CASE("matmul: epilogues in every dtype round the product to its dtype first") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 400;
    const std::int64_t m = 67, n = 129, k = 80;
    for (DType d : {float16, bfloat16, float32, float64}) {
        const std::string dn(name(d));
        const Tensor a = pwtest::rand({m, k}, d, seed++), b = pwtest::rand({k, n}, d, seed++);
        const Tensor bias = pwtest::rand({n}, d, seed++), r = pwtest::rand({m, n}, d, seed++);
        // An exact add after the product: equal to the reference only when the product is rounded to d first.
        run_fused(matmul(a, b) + bias, "a @ b + bias " + dn);
        run_fused(matmul(a, b) + r, "a @ b + r " + dn);
        run_fused(matmul(a, b) * 3.0 - r, "(a @ b) * 3 - r " + dn);
        run_fused(gelu(matmul(a, b) + bias), "gelu(a @ b + bias) " + dn);
        run_fused(exp(matmul(a, b) * 0.01), "exp((a @ b) * 0.01) " + dn);
        run_fused(matmul(a, b).astype(float32) + 1.0, "(a @ b).astype(float32) + 1 " + dn);
    }
    // int8 x int8 -> int32: integer epilogues wrap, a float one dequantizes, a cast back saturates.
    const Tensor a = pwtest::rand({m, k}, int8, seed++), b = pwtest::rand({k, n}, int8, seed++);
    const Tensor ib = pwtest::rand({n}, int32, seed++), scale = pwtest::rand({n}, float32, seed++);
    run_fused(matmul(a, b) + ib, "int8: a @ b + bias (int32)");
    run_fused(matmul(a, b) * 3 - ib, "int8: (a @ b) * 3 - bias");
    run_fused(matmul(a, b).astype(float32) * scale, "int8: dequantized by a per-column scale");
    run_fused(relu(matmul(a, b).astype(float32) * scale + 0.5), "int8: relu(dequantized + 0.5)");
    run_fused(matmul(a, b).astype(int8), "int8: the int32 result cast back to int8 (saturating)");
    run_fused((matmul(a, b) >> 7).astype(int8), "int8: a requantizing shift");
    run_fused(matmul(a, b) > ib, "int8: a comparison (bool)");
}

TEST_CASE("matmul: batched and broadcast-batch products with epilogues") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 500;
    const Tensor a = pwtest::rand({4, 33, 31}, float32, seed++),
                 b = pwtest::rand({4, 31, 45}, float32, seed++);
    const Tensor b2 = pwtest::rand({31, 45}, float32, seed++), bias = pwtest::rand({45}, float32, seed++);
    const Tensor r = pwtest::rand({4, 33, 45}, float32, seed++),
                 per = pwtest::rand({4, 1, 45}, float32, seed++);
    run_fused(relu(matmul(a, b) + bias), "relu([4, M, K] @ [4, K, N] + bias[N])");
    run_fused(matmul(a, b2) + r, "[4, M, K] @ [K, N] + r[4, M, N]");
    run_fused(gelu(matmul(a, b) + per), "gelu([4, M, K] @ [4, K, N] + bias[4, 1, N])");
    const Tensor a4 = pwtest::rand({2, 1, 33, 31}, float16, seed++),
                 b4 = pwtest::rand({3, 31, 45}, float16, seed++);
    const Tensor bias4 = pwtest::rand({3, 1, 45}, float16, seed++);
    run_fused(matmul(a4, b4) + bias4, "[2, 1, M, K] @ [3, K, N] + bias[3, 1, N] float16");
    const Tensor many_a = pwtest::rand({1000, 8, 8}, float32, seed++),
                 many_b = pwtest::rand({1000, 8, 8}, float32, seed++);
    const Tensor many_r = pwtest::rand({1000, 8, 8}, float32, seed++);
    run_fused(tanh(matmul(many_a, many_b) + many_r), "tanh of 1000 products of 8 x 8 x 8 plus a residual");
    // Vectors: [K] x [B, K, N] -> [B, N] and [M, K] x [K] -> [M], with a bias of the result's shape.
    const Tensor v = pwtest::rand({31}, float32, seed++), bm = pwtest::rand({33}, float32, seed++);
    run_both(relu(matmul(v, b) + pwtest::rand({4, 45}, float32, seed++)), "relu([K] @ [4, K, N] + r[4, N])");
    run_both(relu(matmul(pwtest::rand({33, 31}, float32, seed++), v) + bm), "relu([M, K] @ [K] + bias[M])");
}

TEST_CASE("matmul: epilogues over transposed and misaligned operands, and over K past one chunk") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 600;
    const std::int64_t m = 96, n = 64, k = 128;
    const Tensor a = pwtest::rand({m, k}, float32, seed++), b = pwtest::rand({k, n}, float32, seed++);
    const Tensor bias = pwtest::rand({n}, float32, seed++);
    const Tensor c = run_fused(gelu(matmul(a, b) + bias), "contiguous operands");
    // The same values through views that take the scalar loads.
    // `wide` starts random: the view a1 leaves its column 0 out, and copying a1 to the host for the reference
    // reads the span between its rows (compute-sanitizer initcheck reports never-written bytes there).
    Tensor at = Tensor::empty({k, m}, float32, pwtest::dev()),
           wide = pwtest::rand({m, k + 1}, float32, seed++);
    assign(at, transpose(a));
    const Tensor a1 = wide.slice({{kNone, kNone}, {1, kNone}});
    assign(a1, Array(a));
    pwtest::wait_device();
    pwtest::require_same_bits(run_fused(gelu(matmul(at.transposed(), b) + bias), "a.T of a [K, M]"), c,
                              "transposed a");
    pwtest::require_same_bits(run_fused(gelu(matmul(a1, b) + bias), "a[:, 1:] of a [M, K + 1]"), c,
                              "misaligned a");
    // A matrix times a vector and a small product with K = 20000 (8193 small), in chunks: the epilogue
    // sees the tree's value.
    const std::int64_t kl = small_shapes() ? 8193 : 20000;
    const Tensor al = pwtest::rand({33, kl}, float32, seed++), v = pwtest::rand({kl}, float32, seed++);
    const Tensor bl = pwtest::rand({kl, 5}, float32, seed++), bm = pwtest::rand({33}, float32, seed++);
    const Tensor b5 = pwtest::rand({5}, float32, seed++);
    run_both(relu(matmul(al, v) + bm), "relu([33, K] @ [K] + bias), K past a chunk");
    run_fused(gelu(matmul(al, bl) + b5), "gelu([33, K] @ [K, 5] + bias), K past a chunk");
    run_fused(matmul(al, bl).astype(float16), "[33, K] @ [K, 5] cast to float16, K past a chunk");
    // K = 0: the epilogue sees +0.
    const Tensor a0 = pwtest::rand({7, 0}, float32, seed++), b0 = pwtest::rand({0, 9}, float32, seed++);
    const Tensor bias9 = pwtest::rand({9}, float32, seed++);
    run_both(gelu(matmul(a0, b0) + bias9), "gelu(a @ b + bias) with K = 0");
}

TEST_CASE("matmul: operands computed by elementwise prologues, and products of products") {
    const OptionsScope cores(mmtest::cuda_cores());  // halves with the reference's bits
    std::uint64_t seed = 700;
    const Tensor x = pwtest::rand({65, 40}, float32, seed++), w = pwtest::rand({33, 40}, float32, seed++);
    const Tensor bias = pwtest::rand({33}, float32, seed++), h = pwtest::rand({65, 40}, float16, seed++);
    // Computed operands: cheap ones computed as the tiles load, others (a division) materialized first; the
    // results stay the reference's either way.
    for (const Array& y :
         {matmul(Array(x) * 2.0, transpose(w)) + bias, matmul(relu(x), transpose(w)),
          relu(matmul(Array(h).astype(float32), transpose(w)) + bias), matmul(x + 1.0, transpose(w * 0.5)),
          matmul(Array(x) / 3.0, transpose(w)) + bias, matmul(abs(x) - h, transpose(w) / 7.0)}) {
        if (on_gpu()) CHECK(kernels_of({y}).products == 1);
        run_both(y, "a product of computed operands");
    }
    // Three layers.
    const Tensor w2 = pwtest::rand({33, 17}, float32, seed++), b2 = pwtest::rand({17}, float32, seed++);
    const Array l1 = relu(matmul(x, transpose(w)) + bias);
    const Array l2 = gelu(matmul(l1, w2) + b2);
    const Array l3 = matmul(l2, pwtest::rand({17, 3}, float32, seed++));
    if (on_gpu()) CHECK(kernels_of({l3}).products == 3);
    run_both(l3, "three layers");
    run_both({l1, l2, l3}, "three layers, every activation an output");
}

TEST_CASE("matmul: traced functions run a product and its epilogue as one kernel") {
    auto linear =
        loom::function("linear_gelu", [](Array x, Array w, Array b) { return gelu(matmul(x, w) + b); });
    const Tensor x = pwtest::rand({130, 96}, float32, 800), w = pwtest::rand({96, 72}, float32, 801);
    const Tensor b = pwtest::rand({72}, float32, 802);
    Tensor out = Tensor::empty({130, 72}, float32, pwtest::dev());
    testing::poison(out);
    linear(x, w, b, out);
    linear(x, w, b, out);  // the cached specialization
    pwtest::wait_device();
    CHECK(linear.stats().specializations == 1);
    const Array y = gelu(matmul(x, w) + b);
    pwtest::require_reference({y}, {out}, "traced linear_gelu");
    pwtest::require_same_bits(out, run_both(y, "the lazy expression"), "traced against lazy");
    if (on_gpu()) {
        const std::string src = linear.cuda_source(x, w, b);
        CHECK(count_of(src, "---- Loom ") == 1);  // one kernel (its vector and scalar entry points)
        CHECK(count_of(src, "---- Loom matmul kernel") == 1);
        CHECK(tile_of(src) != "");
    }
    // New data of the same layout: the same specialization.
    const Tensor x2 = pwtest::rand({130, 96}, float32, 803);
    const Tensor out2 = linear(x2, w, b);
    pwtest::wait_device();
    CHECK(linear.stats().specializations == 1);
    pwtest::require_reference({gelu(matmul(x2, w) + b)}, {out2}, "traced linear_gelu, new data");
}

TEST_CASE("matmul: results written into views of larger tensors, the memory around them untouched") {
    std::uint64_t seed = 900;
    const std::int64_t m = 70, n = 50, k = 33;
    const Tensor a = pwtest::rand({m, k}, float32, seed++), b = pwtest::rand({k, n}, float32, seed++);
    const Tensor bias = pwtest::rand({n}, float32, seed++);
    const Array y = gelu(matmul(a, b) + bias);
    // Columns 1 .. n of an [M, N + 2] tensor, and the transpose of an [N, M] tensor.
    Tensor big = Tensor::empty({m, n + 2}, float32, pwtest::dev());
    testing::poison(big);
    const Tensor before = big.to_host();
    const Tensor inner = big.slice({{kNone, kNone}, {1, n + 1}});
    assign(inner, y);
    pwtest::wait_device();
    pwtest::require_reference({y}, {inner}, "into columns 1 .. N");
    const Tensor after = big.to_host();
    for (std::int64_t col : {std::int64_t{0}, n + 1})
        pwtest::require_same_bits(after.slice({{kNone, kNone}, {col, col + 1}}),
                                  before.slice({{kNone, kNone}, {col, col + 1}}),
                                  fmt::format("column {} untouched", col));
    Tensor t = Tensor::empty({n, m}, float32, pwtest::dev());
    testing::poison(t);
    assign(t.transposed(), y);
    pwtest::wait_device();
    pwtest::require_reference({y}, {t.transposed()}, "into a transposed view");
    Tensor plain = Tensor::empty({m, n}, float32, pwtest::dev());
    assign(plain, matmul(a, b));
    Tensor tp = Tensor::empty({n, m}, float32, pwtest::dev());
    testing::poison(tp);
    assign(tp.transposed(), matmul(a, b));
    pwtest::wait_device();
    pwtest::require_same_bits(tp.transposed(), plain, "the bare product into a transposed view");
}

TEST_CASE(
    "matmul: epilogues store a thread's 4 columns together where N and the pointers allow, element by "
    "element else: the same bits") {
    std::uint64_t seed = 1000;
    // N = 132: a partial last column tile, whole vectors; M not whole tiles.
    const std::int64_t m = small_shapes() ? 70 : 260, n = 132, k = 96;
    const Tensor a = pwtest::rand({m, k}, float32, seed++), b = pwtest::rand({k, n}, float32, seed++);
    const Tensor bias = pwtest::rand({n}, float32, seed++), r = pwtest::rand({m, n}, float32, seed++);
    const Tensor v = run_fused(gelu(matmul(a, b) + bias), "gelu(a @ b + bias), N = 132: 4 columns at a time");
    run_fused(matmul(a, b) * 0.5 - r, "(a @ b) * 0.5 - r: a residual read 16 bytes at a time");
    // The same bias 4 bytes past a 16-byte boundary: its loads, and so the epilogue, go element by element.
    const Tensor wide = pwtest::rand({n + 1}, float32, seed++);
    const Tensor bias1 = wide.slice({{1, kNone}});
    assign(bias1, Array(bias));
    pwtest::wait_device();
    pwtest::require_same_bits(
        run_fused(gelu(matmul(a, b) + bias1), "gelu(a @ b + bias[1:]) (a misaligned bias)"), v,
        "misaligned bias against aligned");
    // Into columns 1 .. N of an [M, N + 4] tensor (a strided output: element stores).
    Tensor big = Tensor::empty({m, n + 4}, float32, pwtest::dev());
    testing::poison(big);
    const Tensor inner = big.slice({{kNone, kNone}, {1, n + 1}});
    assign(inner, gelu(matmul(a, b) + bias));
    pwtest::wait_device();
    pwtest::require_same_bits(inner, v, "into columns 1 .. N against a whole tensor");
    // A row length that is not whole vectors, with a flat epilogue (no bias): element by element.
    const Tensor b3 = pwtest::rand({k, 131}, float32, seed++);
    run_fused(relu(matmul(a, b3)) * 2.0, "relu(a @ b) * 2, N = 131");
    // Batched 64 x 64 products (M6's kernel, storing from its registers) with a bias, and with N = 62.
    const std::int64_t batches = small_shapes() ? 8 : 300;
    const Tensor ba = pwtest::rand({batches, 64, 64}, float32, seed++),
                 bb = pwtest::rand({batches, 64, 64}, float32, seed++);
    const Tensor b64 = pwtest::rand({64}, float32, seed++);
    run_fused(gelu(matmul(ba, bb) + b64), "gelu([B, 64, 64] @ [B, 64, 64] + bias)");
    const Tensor bb62 = pwtest::rand({batches, 64, 62}, float32, seed++),
                 b62 = pwtest::rand({62}, float32, seed++);
    run_fused(gelu(matmul(ba, bb62) + b62), "gelu([B, 64, 64] @ [B, 64, 62] + bias), N = 62");
}
