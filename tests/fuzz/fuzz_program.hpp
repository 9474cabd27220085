// Random elementwise programs for the differential fuzzer: a program is a list of instructions whose
// shapes all derive from one base shape, so that it can be rebuilt after shrinking (fewer nodes, smaller
// shapes, simpler layouts). Building turns a program into IR roots over freshly filled tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "loom/ir/node.hpp"
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
enum class PreView : std::uint8_t { None, Permute, Slice, Reshape };

/// A view applied to a computed node (changes its shape).
enum class ViewKind : std::uint8_t { Permute, Transpose, Slice, Flatten, MergeLast, SplitFirst, InsertUnit, Broadcast };
std::string_view view_name(ViewKind v);

struct Instr {
    enum class Kind : std::uint8_t { Input, Scalar, Constant, Elementwise, Cast, View };
    Kind kind = Kind::Input;
    DType dtype = DType::Float32;  // leaves: their dtype; Cast: the target dtype
    ir::Op op = ir::Op::Add;       // Elementwise
    std::vector<int> args;         // operand instructions (earlier ones)
    // Input: shape = base shape with the dims of `ones` (bit d = base dim d) set to 1 and the first `drop`
    // dims removed; `pre` is the IR view from the pre-image; `layout` the tensor's memory layout.
    std::uint32_t ones = 0;
    int drop = 0;
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
};

struct Program {
    Shape base;
    std::vector<Instr> code;
    std::vector<int> outputs;
    std::uint64_t data_seed = 0;
};

struct GenOptions {
    std::int64_t max_numel = 1 << 14;  // base shape elements (1/32 of graphs up to 64x this)
    int max_ops = 16;
};

/// A random program from `seed` (deterministic). Every program it returns builds (see build()).
Program generate(std::uint64_t seed, const GenOptions& options);

/// A built program: IR roots over bound tensors (on `device`), kept alive with the nodes.
struct Built {
    std::vector<ir::NodePtr> nodes;  // one per instruction
    std::vector<ir::NodePtr> roots;
    std::vector<std::string> input_lines;  // "in3: int8 [4, 7] strides [1, 4] offset 0 (colmajor, pre permute)"
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
