// Matrix products of the CPU reference evaluator, in the order of docs/semantics.md, section 12: the
// contraction axis cut into chunks of kProductChunk (8192, so one chunk for K <= 8192), each output
// accumulating a chunk as acc = fma(a[i, k], b[k, j], acc) in ascending k from +0, the chunk partials
// combined by the pairwise tree.
//
// Blocked and vectorized over j without changing any output's order: a task owns a block of rows and columns
// of one batch entry and walks each chunk in K blocks of kKBlock. Per K block it packs the operands' block
// (converted to the compute type) into contiguous panels and runs micro tiles whose j lanes are independent
// accumulators (each lane one std::fma per k, no reassociation, -ffp-contract=off); a micro tile starts from
// +0 in the chunk's first K block and from the accumulator the previous K block left otherwise, so each
// output still accumulates its chunk as one ascending fma chain. The chunk partials go onto the pairwise
// tree. Operands are read in place through their strides (transposed, sliced and broadcast views need no
// copy). On x86-64 CPUs with AVX2 and FMA the micro tiles run in a variant compiled for them; both variants
// compute the same correctly rounded fma, so the bits do not depend on the CPU.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu_features.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/error.hpp"
#include "parallel.hpp"
#include "reference_internal.hpp"

namespace loom::reference::detail {
namespace {

namespace ew = ir::ew;

/// Rows and columns of outputs per task (one batch entry), and the values of k packed at a time: the packed
/// B panel is kKBlock x kColBlock values, 256 KiB of float32, about an L2's share (a whole chunk, up to
/// kProductChunk = 8192 values of k, would be 8 MiB).
constexpr std::int64_t kRowBlock = 64;
constexpr std::int64_t kColBlock = 256;
constexpr std::int64_t kKBlock = 256;

/// The accumulation type of a product of operands of dtype In: float for float16, bfloat16 and float32,
/// double for float64, and for int8 the int32 sum computed in uint32 (two's-complement wrapping, no
/// undefined behaviour; the order of an integer sum does not change it).
template <DType In>
using acc_t = std::conditional_t<In == DType::Int8, std::uint32_t, ew::compute_t<In>>;

template <class C>
inline C mul_add(C a, C b, C acc) {
    if constexpr (std::is_floating_point_v<C>)
        return std::fma(a, b, acc);  // one rounding
    else
        return acc + a * b;  // uint32: wraps
}

/// One micro tile: R rows x J columns of outputs, each accumulating kn products in ascending k, from +0 if
/// `start` (the first K block of a chunk) and otherwise from the accumulator `out` holds (carried from the
/// previous K block). The J lanes of a row are independent, so the compiler vectorizes over them without
/// reordering any sum.
template <class C, int R, int J>
[[gnu::always_inline]] inline void micro_tile(const C* a, std::int64_t lda, const C* b, std::int64_t ldb,
                                              std::int64_t kn, bool start, C* out, std::int64_t ldo) {
    C acc[R][J];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < J; ++j) acc[r][j] = start ? C(0) : out[r * ldo + j];
    for (std::int64_t k = 0; k < kn; ++k) {
        const C* bk = b + k * ldb;
        for (int r = 0; r < R; ++r) {
            const C ark = a[r * lda + k];
            for (int j = 0; j < J; ++j) acc[r][j] = mul_add(ark, bk[j], acc[r][j]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < J; ++j) out[r * ldo + j] = acc[r][j];
}

/// The packed operands of one K block of a block: `a` rows x kn (row stride lda), `b` kn x cols (row stride
/// ldb), rows a multiple of R and cols of J (padded with zeros, whose outputs are discarded); `start` if the
/// K block is its chunk's first.
template <class C>
struct Panels {
    const C* a;
    std::int64_t lda;
    const C* b;
    std::int64_t ldb;
    std::int64_t kn, rows, cols;
    bool start;
};

/// One K block accumulated into the chunk partials of every output of a block, `out` (rows x cols, row stride
/// cols).
template <class C, int R, int J>
[[gnu::always_inline]] inline void k_block_body(const Panels<C>& p, C* out) {
    for (std::int64_t r = 0; r < p.rows; r += R)
        for (std::int64_t j = 0; j < p.cols; j += J)
            micro_tile<C, R, J>(p.a + r * p.lda, p.lda, p.b + j, p.ldb, p.kn, p.start, out + r * p.cols + j,
                                p.cols);
}

template <class C, int R, int J>
void k_block_generic(const Panels<C>& p, C* out) {
    k_block_body<C, R, J>(p, out);
}

#if defined(__x86_64__)
template <class C, int R, int J>
[[gnu::target("avx2,fma")]] void k_block_avx2(const Panels<C>& p, C* out) {
    k_block_body<C, R, J>(p, out);
}
#endif

template <class C>
using KBlockFn = void (*)(const Panels<C>&, C*);

template <class C, int R, int J>
KBlockFn<C> k_block_fn() {
#if defined(__x86_64__)
    if (loom::detail::cpu_has_avx2_fma()) return &k_block_avx2<C, R, J>;
#endif
    return &k_block_generic<C, R, J>;
}

/// The pairwise tree over the chunk partials of a block, combined as they arrive. Partial c enters as a
/// subtree of level 0; two subtrees of equal level on top of the stack merge (the older on the left) into one
/// a level up. A complete subtree of level l covers an aligned run of 2^l chunks, which the level-by-level
/// tree of loom::pairwise_tree combines the same way; at the end the stack holds the aligned runs of the
/// binary expansion of the chunk count, largest first, and the tree combines them right to left (an odd last
/// partial is carried up until it meets the run before it): finish() does the same. tests/unit/
/// test_matmul_reference.cpp checks the two against each other bit for bit.
template <class C>
class TileTree {
  public:
    explicit TileTree(std::size_t elements) : elements_(elements) {}

    /// A buffer for the next partial (its contents are overwritten by the caller).
    C* next() {
        if (used_ == buffers_.size()) buffers_.emplace_back(elements_);
        return buffers_[used_].data();
    }
    /// Pushes the partial written into next().
    void push() {
        levels_.push_back(0);
        ++used_;
        while (used_ >= 2 && levels_[used_ - 1] == levels_[used_ - 2]) {
            combine_top();
            ++levels_.back();
        }
    }
    /// The root of the tree (at least one partial pushed).
    const C* finish() {
        while (used_ >= 2) combine_top();
        return buffers_[0].data();
    }

  private:
    void combine_top() {
        C* left = buffers_[used_ - 2].data();
        const C* right = buffers_[used_ - 1].data();
        for (std::size_t e = 0; e < elements_; ++e)
            left[e] = left[e] + right[e];                 // floats: one rounding; uint32: wraps
        std::swap(buffers_[used_ - 1], buffers_.back());  // keep the freed buffer for reuse
        --used_;
        levels_.pop_back();
    }

    std::size_t elements_;
    std::vector<std::vector<C>> buffers_;
    std::vector<int> levels_;
    std::size_t used_ = 0;
};

/// An operand's strided view: element 0 and its strides in elements; the last two axes are the matrix.
struct View {
    const char* base;
    Strides strides;
};

template <DType In, DType Out>
void run_product(const View& a, const View& b, const Shape& shape, std::int64_t K, Tensor& out) {
    using C = acc_t<In>;
    using S = ew::storage_t<In>;
    const auto r = shape.size();
    const std::int64_t M = shape[r - 2], N = shape[r - 1];
    std::int64_t batches = 1;
    for (std::size_t d = 0; d + 2 < r; ++d) batches *= shape[d];
    const std::int64_t row_blocks = (M + kRowBlock - 1) / kRowBlock,
                       col_blocks = (N + kColBlock - 1) / kColBlock;
    const std::int64_t sam = a.strides[r - 2], sak = a.strides[r - 1], sbk = b.strides[r - 2],
                       sbn = b.strides[r - 1];
    auto* dst = static_cast<ew::storage_t<Out>*>(out.data());
    // Micro tiles of 4 x 16 outputs; a single row (a vector times a matrix) or column (a matrix times a
    // vector) gets tiles of one row or column instead of padding.
    const int R = M == 1 ? 1 : 4, J = N == 1 ? 1 : 16;
    const KBlockFn<C> k_block = R == 1 ? (J == 1 ? k_block_fn<C, 1, 1>() : k_block_fn<C, 1, 16>())
                                       : (J == 1 ? k_block_fn<C, 4, 1>() : k_block_fn<C, 4, 16>());
    const std::int64_t chunks = product_chunks(K);
    loom::detail::parallel_for(
        batches * row_blocks * col_blocks, 1, [&](std::int64_t begin, std::int64_t end) {
            std::vector<C> ap, bp;
            for (std::int64_t t = begin; t < end; ++t) {
                const std::int64_t batch = t / (row_blocks * col_blocks), rb = t / col_blocks % row_blocks,
                                   cb = t % col_blocks;
                std::int64_t a_off = 0, b_off = 0, rest = batch;
                for (std::size_t d = r - 2; d-- > 0;) {
                    const std::int64_t i = rest % shape[d];
                    rest /= shape[d];
                    a_off += i * a.strides[d];
                    b_off += i * b.strides[d];
                }
                const S* A = reinterpret_cast<const S*>(a.base) + a_off;
                const S* B = reinterpret_cast<const S*>(b.base) + b_off;
                const std::int64_t i0 = rb * kRowBlock, j0 = cb * kColBlock;
                const std::int64_t mb = std::min(kRowBlock, M - i0), nb = std::min(kColBlock, N - j0);
                const std::int64_t rows = (mb + R - 1) / R * R, cols = (nb + J - 1) / J * J;
                auto* o = dst + (batch * M + i0) * N + j0;
                if (chunks == 0) {  // K = 0: every output is the empty sum, +0
                    for (std::int64_t i = 0; i < mb; ++i)
                        for (std::int64_t j = 0; j < nb; ++j)
                            o[i * N + j] = ew::store<Out>(ew::compute_t<Out>(0));
                    continue;
                }
                TileTree<C> tree(static_cast<std::size_t>(rows * cols));
                for (std::int64_t c = 0; c < chunks; ++c) {
                    const std::int64_t c0 = c * kProductChunk, c1 = std::min(K, c0 + kProductChunk);
                    C* partial = tree.next();
                    for (std::int64_t k0 = c0; k0 < c1;
                         k0 += kKBlock) {  // the chunk's K blocks, in ascending k
                        const std::int64_t kn = std::min(kKBlock, c1 - k0);
                        ap.assign(static_cast<std::size_t>(rows * kn), C(0));
                        bp.assign(static_cast<std::size_t>(kn * cols), C(0));
                        for (std::int64_t i = 0; i < mb; ++i) {
                            const S* ai = A + (i0 + i) * sam + k0 * sak;
                            C* pi = ap.data() + i * kn;
                            for (std::int64_t k = 0; k < kn; ++k)
                                pi[k] = static_cast<C>(ew::load<In>(ai[k * sak]));
                        }
                        for (std::int64_t k = 0; k < kn; ++k) {
                            const S* bk = B + (k0 + k) * sbk + j0 * sbn;
                            C* pk = bp.data() + k * cols;
                            for (std::int64_t j = 0; j < nb; ++j)
                                pk[j] = static_cast<C>(ew::load<In>(bk[j * sbn]));
                        }
                        k_block(Panels<C>{ap.data(), kn, bp.data(), cols, kn, rows, cols, k0 == c0}, partial);
                    }
                    tree.push();
                }
                const C* sum = tree.finish();
                for (std::int64_t i = 0; i < mb; ++i)
                    for (std::int64_t j = 0; j < nb; ++j) {
                        const C v = sum[i * cols + j];
                        if constexpr (In == DType::Int8)
                            o[i * N + j] = static_cast<std::int32_t>(v);  // modular, C++20
                        else
                            o[i * N + j] = ew::store<Out>(v);  // float16, bfloat16: rounded once
                    }
            }
        });
}

template <DType In, DType Out>
constexpr bool valid_product() {
    if constexpr (In == DType::Int8)
        return Out == DType::Int32;
    else
        return is_float(In) && Out == In;
}

}  // namespace

Tensor eval_product_node(const ir::Node& n, const Tensor& a, const Tensor& b, DType out) {
    if (a.dtype() != b.dtype() || a.rank() != n.rank() || b.rank() != n.rank() || n.rank() < 2)
        throw InternalError(fmt::format("reference: matmul operands {} {} and {} {} for a result {}",
                                        to_string(a.shape()), name(a.dtype()), to_string(b.shape()),
                                        name(b.dtype()), ir::describe(n)));
    Tensor result = Tensor::host(n.shape(), out);
    if (result.numel() == 0) return result;
    const std::int64_t K = a.shape().back();
    const View va{static_cast<const char*>(a.data()), a.strides()},
        vb{static_cast<const char*>(b.data()), b.strides()};
    ew::visit_dtype(a.dtype(), [&]<DType In>() {
        ew::visit_dtype(out, [&]<DType Out>() {
            if constexpr (valid_product<In, Out>()) {
                run_product<In, Out>(va, vb, n.shape(), K, result);
            } else {
                throw InternalError(fmt::format("reference: no matmul of {} giving {}", name(In), name(Out)));
            }
        });
    });
    return result;
}

}  // namespace loom::reference::detail

namespace loom::reference {

double product_gamma(std::int64_t K, double u) {
    const double ku = static_cast<double>(K) * u;
    return ku >= 1.0 ? std::numeric_limits<double>::infinity() : ku / (1.0 - ku);
}

double product_bound_factor(std::int64_t K, ProductPrecision precision) {
    switch (precision) {
        case ProductPrecision::Float32:
            return product_gamma(K, kMmaUnit);
        case ProductPrecision::TF32:
            return 0x1p-9 + 0x1p-20 + product_gamma(K, kMmaUnit) * (1.0 + 0x1p-9 + 0x1p-20);
        case ProductPrecision::TF32x3:
            return (3.0 * 0x1p-22 + product_gamma(3 * K, kMmaUnit)) * (1.0 + 0x1p-9);
    }
    return product_gamma(K, kMmaUnit);
}

ProductBound product_bound(const Tensor& a, const Tensor& b, ProductPrecision precision) {
    // The reference's own product over float64 operands (their values exactly; NumPy's shapes, vectors and
    // batch broadcasting from ir::matmul): C, and |A||B| as the product of the magnitudes. Each sum is the
    // contract's fma chain in float64, within gamma(K + 1, 2^-53) (|A||B|) of the exact value.
    const ir::NodePtr x = ir::input(DType::Float64, a.shape(), "a"),
                      y = ir::input(DType::Float64, b.shape(), "b");
    ir::NodePtr c, magnitudes;
    try {
        c = ir::matmul(x, y);
        magnitudes = ir::matmul(ir::unary(ir::Op::Abs, x), ir::unary(ir::Op::Abs, y));
    } catch (const Error& e) {
        throw Error(fmt::format("reference::product_bound(): {}", e.what()));
    }
    std::vector<Tensor> r = evaluate({c, magnitudes}, {{x->input_id(), cast(a, DType::Float64)},
                                                       {y->input_id(), cast(b, DType::Float64)}});
    const std::int64_t K = a.shape().back();
    const double gamma = product_bound_factor(K, precision) + product_gamma(K + 1, 0x1p-53);
    auto* m = static_cast<double*>(r[1].data());
    for (std::int64_t i = 0; i < r[1].numel(); ++i) m[i] *= gamma;  // the bound, in place of |A||B|
    return {std::move(r[0]), std::move(r[1])};
}

}  // namespace loom::reference
