// Random programs for the differential fuzzer: a program is a list of instructions whose shapes all derive
// from one base shape, so that it can be rebuilt after shrinking (fewer nodes, smaller shapes, simpler
// layouts). Building turns a program into IR roots over freshly filled tensors. Three generators: pointwise
// programs (elementwise ops, casts and views), reduction programs (reductions over random axis sets with
// prologues and epilogues, several reductions of one operand, normalizations such as softmax, layernorm and
// rmsnorm that broadcast reduced values back, reductions of reductions) and product programs (small matrix
// products of inputs or computed values with elementwise epilogues and the consumers that end them; a share
// of them attention instead: q, k and v of small random heads, masks, scales and biases, with epilogues).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "loom/ir/node.hpp"
#include "loom/ir/op.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::fuzz {

/// How the tensor bound to an Input is laid out in memory.
enum class Layout : std::uint8_t {
    Contiguous,  // row-major, 16-byte aligned
    Offset1,     // row-major, starting one element into its storage (misaligned for 16-byte vectors)
    ColMajor,    // column-major strides (a transposed storage)
    Padded,      // rows padded by 3 elements
    Stride0,     // one dimension has stride 0 (the tensor itself broadcasts)
};
std::string_view layout_name(Layout l);

/// An IR view between an Input and the shape it takes part in: the Input has the pre-image shape.
/// Halo: the Input has the shape plus 2 in every dimension and no view; only Shift views of it take part.
enum class PreView : std::uint8_t { None, Permute, Slice, Reshape, Halo };

/// A view applied to a computed node (changes its shape).
/// Shift: of a Halo input, the window at offsets 0, 1 or 2 per dimension (from `key`): a stencil's tap.
enum class ViewKind : std::uint8_t {
    Permute,
    Transpose,
    Slice,
    Flatten,
    MergeLast,
    SplitFirst,
    InsertUnit,
    Broadcast,
    Shift
};
std::string_view view_name(ViewKind v);

struct Instr {
    // Gather: take_along_axis(args[0], args[1], key % rank, mode), args[1] cast to int32 unless it is int32
    // or int64. Key bit 40 picks the mode: clamped (the fuzzer's data holds indices of any value), or checked
    // (the default) with the indices brought into range, mod n, and by key bit 41 minus n (from the end).
    // Attention: ir::attention(args[0], args[1], args[2], args[3] or none, causal, scale): q, k, v and an
    // optional bias.
    // Scan: ir::scan(op, args[0], key % rank, keepdims as exclusive): cumsum, cumprod, cummax, cummin or
    // logcumsumexp along one axis.
    // Scatter: ir::scatter or ir::scatter_add (op) of x = args[0], indices args[1] (cast to int32 unless
    // int32 or int64) and values args[2] (cast to x's dtype) along key % rank, IndexMode::Clamp.
    enum class Kind : std::uint8_t {
        Input,
        Scalar,
        Constant,
        Elementwise,
        Cast,
        View,
        Reduce,
        MatMul,
        Gather,
        Attention,
        Scan,
        Scatter
    };
    Kind kind = Kind::Input;
    DType dtype = DType::Float32;  // leaves: their dtype; Cast: the target dtype; random ops: their values'
    ir::Op op = ir::Op::Add;       // Elementwise and Reduce
    std::vector<int> args;         // operand instructions (earlier ones); MatMul: the two operands
    // Input: shape = base shape with the dims of `ones` (bit d = base dim d) set to 1 and the first `drop`
    // dims removed; `pre` is the IR view from the pre-image; `layout` the tensor's memory layout.
    // With `pick` (product programs, whose operands take some of the base dims: [M, K] and [K, N] of a base
    // [M, K, N]): the shape is the base dims whose bits are set, in order, those of `ones` set to 1, and
    // `drop` unused; `swap` exchanges the last two (an operand stored transposed, for a Transpose view).
    std::uint32_t ones = 0;
    int drop = 0;
    std::uint32_t pick = 0;
    bool swap = false;
    PreView pre = PreView::None;
    Layout layout = Layout::Contiguous;
    // Scalar and Constant: the value (a value of `dtype`).
    ir::ScalarValue value;
    // View and PreView parameters: a key that picks the dimension / permutation for the operand's rank,
    // a slice step and start, a broadcast extent.
    ViewKind view = ViewKind::Permute;
    std::uint64_t key = 0;
    int step = 1;
    bool start1 = false;
    std::int64_t extent = 2;
    // Reduce: the reduced axes as a bit mask over the operand's dimensions (bits at or above its rank are
    // ignored; when none is left, all axes, written as an empty axis list), whether they are written as
    // negative axes, and keepdims.
    std::uint32_t axes = 0;
    bool negative = false;
    bool keepdims = false;
    // Attention: the causal mask and the scale (rounded to float32 by ir::attention).
    ir::CausalMask causal = ir::CausalMask::None;
    double scale = 1.0;
};

struct Program {
    Shape base;
    std::vector<Instr> code;
    std::vector<int> outputs;
    std::uint64_t data_seed = 0;
    // Made by the reduction generator: input data without values near the overflow threshold and fewer
    // special values, and the wider rules for approximate values of fuzz_program.cpp ("approximation
    // levels"), which rely on that data.
    bool reductions = false;
    // Made by the product generator: the reduction programs' input data (products of rows that nearly all
    // held a special value would be NaN almost everywhere), the pointwise programs' approximation levels.
    bool products = false;
};

struct GenOptions {
    // Base shape elements (1/32 of pointwise and 1/16 of reduction graphs up to 64x this).
    std::int64_t max_numel = 1 << 14;
    int max_ops = 16;
    double reduce_share = 0.5;  // the share of seeds that make reduction programs
    // The share of seeds that make product programs, taken first (the others split by reduce_share). Small
    // products are cheap to check, but each is a kernel of its own to compile.
    double product_share = 0.125;
    // The share of the product seeds that make attention programs instead (drawn from a generator of its
    // own, so that the other product seeds make the programs they made before attention was drawn).
    double attention_share = 0.1;
};

/// Whether `seed` makes a reduction program (a hash of the seed against options.reduce_share).
bool is_reduction_seed(std::uint64_t seed, const GenOptions& options);
/// Whether `seed` makes a product program (another hash of the seed, against options.product_share).
bool is_product_seed(std::uint64_t seed, const GenOptions& options);
/// Whether a product seed makes an attention program (a third hash, against options.attention_share).
bool is_attention_seed(std::uint64_t seed, const GenOptions& options);

/// A random program from `seed` (deterministic): a product program when is_product_seed(), else a
/// reduction program when is_reduction_seed(), else a pointwise one. Every program it returns builds (see
/// build()).
Program generate(std::uint64_t seed, const GenOptions& options);

/// A built program: IR roots over bound tensors (on `device`), kept alive with the nodes.
struct Built {
    std::vector<ir::NodePtr> nodes;  // one per instruction
    std::vector<ir::NodePtr> roots;
    std::vector<std::string>
        input_lines;  // "in3: int8 [4, 7] strides [1, 4] offset 0 (colmajor, pre permute)"
};

/// Builds `p` with input tensors on `device`, filled from p.data_seed (random values with each dtype's
/// special values mixed in). Returns nothing when the program is not valid: a constructor rejects it
/// (loom::Error), an approximate value feeds an op whose comparison would not be sound (see
/// fuzz_program.cpp, "approximation levels"), or an output depends on no input.
std::optional<Built> build(const Program& p, Device device);

/// Removes instructions that no output reaches and renumbers the rest.
Program collect(const Program& p);

/// One line per instruction (for messages).
std::string describe(const Program& p);

}  // namespace loom::fuzz
