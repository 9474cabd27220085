// The pointwise plan: how one fused elementwise kernel walks its iteration space and touches memory.
//
// Input: output nodes that share one iteration space (the same shape), whose graph holds only elementwise
// ops (Cast included), views (BroadcastTo, Reshape, Permute, Slice) and leaves (Input, Scalar, Constant),
// plus the layout of the tensor bound to each Input. Views are index remappings: the planner composes them
// symbolically down to every Input, so each load is `base[sum_k idx_k * coef_k]` over the (coalesced)
// output multi-index; a Reshape that is not a strided view goes through a linear index and a division
// ("derived index"). The plan is plain data (==, hash, to_string) and holds no sizes: the sizes, strides,
// offsets and scalar values of one call are a PointwiseBinding, packed into the kernel parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loom/codegen/plan/target.hpp"
#include "loom/ir/node.hpp"
#include "loom/ir/op.hpp"

namespace loom::codegen {

/// Layout of the tensor bound to one Input node, as the runtime knows it before launch.
struct InputLayout {
    DType dtype = DType::Float32;
    /// Strides in elements, one per dimension of the Input's shape; 0 for broadcast dimensions.
    Strides strides;
    /// Alignment class: true when the data pointer (element 0) is 16-byte aligned. The runtime decides;
    /// false rules the 16-byte vector variant out for this specialization.
    bool aligned16 = true;
    bool operator==(const InputLayout&) const = default;
};

/// How one operand is read (or written) as the iteration space is walked.
enum class Access : std::uint8_t {
    Contiguous,    // element index == flat index of the iteration space (coalesced, vectorizable)
    RowBroadcast,  // index == innermost index (stride 1), stride 0 on every outer dimension: a row vector
    Scalar,        // the same element everywhere: loaded once
    Strided,       // general affine index over the iteration space's dimensions
    Gathered,      // affine over derived indices too (a reshape that is not a strided view)
    Indirect,      // affine, plus gathers' positions (values of the kernel) times strides: loaded after them
};
std::string_view access_name(Access a);

/// One load site (an Input read in one view context) or one output.
struct OperandPlan {
    int input = -1;  // canonical input number (order of pointwise_inputs()); -1 for outputs
    DType dtype = DType::Float32;
    Access access = Access::Contiguous;
    /// Strided/Gathered: bit d set when the coefficient of iteration dimension d is nonzero.
    std::uint32_t dim_mask = 0;
    /// Strided/Gathered: the innermost coefficient is exactly 1 (then it is not a parameter).
    bool unit_inner = false;
    /// Gathered: indices of the derived indices with a nonzero coefficient.
    std::vector<int> derived;
    /// Indirect: the gathers (PointwisePlan::gathers) whose position has a nonzero coefficient.
    std::vector<int> positions;
    /// Bytes moved per element of the iteration space (itemsize; 0 for Scalar and RowBroadcast, which
    /// are read once per row or once, and for an index).
    int bytes_per_element = 0;
    /// An iota site: the value is the site's index (its offset expression, an int64), computed in the
    /// kernel instead of loaded; no memory, no pointer.
    bool index = false;
    bool operator==(const OperandPlan&) const = default;
};

/// A derived index t = ((off + sum coef * idx) / div) % mod, computed per element (reshape decomposition).
struct DerivedPlan {
    std::uint32_t dim_mask = 0;  // iteration dimensions with a nonzero coefficient
    std::vector<int> derived;    // earlier derived indices with a nonzero coefficient
    bool has_div = false;
    bool has_mod = false;
    bool operator==(const DerivedPlan&) const = default;
};

/// A gather of the kernel (ir::Op::Gather): its position along the axis is computed from its index value,
/// normalized and checked (an out-of-range index is reported through the error word and position 0 read
/// instead) or clamped (docs/semantics.md, "Gathers").
struct GatherPlan {
    ir::IndexMode mode = ir::IndexMode::Checked;
    bool operator==(const GatherPlan&) const = default;
};

enum class IndexWidth : std::uint8_t { I32, I64 };
enum class Variant : std::uint8_t { Vector, Scalar };

/// The launch configuration of every kernel family: grid (x, and y for reductions: blocks per row), block,
/// and whether the vector entry point runs (reductions decide it from the pointers; pointwise plans take
/// the Variant). grid_x == 0 means there is nothing to do (skip the launch).
struct LaunchConfig {
    std::uint32_t grid_x = 0;
    std::uint32_t grid_y = 1;
    std::uint32_t grid_z = 1;  // matmul split_k plans: groups of chunks
    std::uint32_t block_x = 0;
    bool vector = false;
    bool operator==(const LaunchConfig&) const = default;
};

/// The type of a kernel parameter field, named for no back end: each emitter spells it (the CUDA
/// emitter: `int` / `long long`, `const lm::bf16*`, a nested struct, an aligned byte array).
enum class ParamType : std::uint8_t {
    Index,         // the plan's index type (IndexWidth: 4 or 8 bytes)
    Int64,         // a 64-bit count or size
    ConstPointer,  // to elements of `dtype` that the kernel reads
    Pointer,       // to elements of `dtype` that the kernel writes
    RawPointer,    // to a workspace of no element type (split counters and partials)
    Scalar,        // a value of `dtype` in its register type (float16 and bfloat16 values as float32)
    Struct,        // a nested parameter struct: the element (a = 0) or row (a = 1) space of a reduction
    Opaque,        // `size` bytes aligned to `align` (a 64-byte aligned tensor map)
};

/// One kernel parameter: a field of the generated parameter struct.
struct ParamField {
    enum class Kind : std::uint8_t {
        InputPointer,    // a = load site
        OutputPointer,   // a = output
        NumElements,     // n
        Extent,          // a = iteration dimension
        SiteCoef,        // a = load site, b = iteration dimension
        SiteDerived,     // a = load site, b = derived index
        DerivedOffset,   // a = derived index
        DerivedCoef,     // a = derived index, b = iteration dimension
        DerivedDerived,  // a = derived index, b = earlier derived index
        DerivedDiv,      // a = derived index
        DerivedMod,      // a = derived index
        Scalar,          // a = scalar number (order of pointwise_scalars())
        OutputCoef,      // a = output, b = iteration dimension: a strided output's stride
        SitePosition,    // a = load site, b = gather: the stride of the gather's position
        GatherExtent,    // a = gather: the extent of its axis
        GatherId,        // a = gather: its number in the process's table of checked gathers (errors)
        ErrorWord,       // the error word a checked gather's out-of-range index is recorded in (RawPointer)
        // Reduction kernels (reduce_plan.hpp): the element and row spaces, then the numbers of the order.
        ElementSpace,    // the element space's pointwise parameters (Struct)
        RowSpace,        // the row space's pointwise parameters (Struct)
        Rows,            // O: output elements
        Length,          // L: elements reduced per output
        Chunks,          // ceil(L / chunk)
        ChunksPerBlock,  // split: chunks per block
        BlocksPerRow,    // split: blocks per row
        Counters,        // split: integer counters
        Partials,        // split: a = reduction, its partial accumulators
        // Matmul kernels (matmul_plan.hpp).
        Product,   // a = MatmulField, b = axis (strides, batch extents)
        Epilogue,  // a pointwise part's parameters (Struct): a = 2 the epilogue, 3 / 4 the prologue of A / B
    };
    Kind kind{};
    int a = 0;
    int b = 0;
    std::string name;  // field name in the generated struct
    ParamType type = ParamType::Index;
    DType dtype = DType::Float32;  // ConstPointer, Pointer, Scalar: the element dtype
    std::size_t offset = 0;        // bytes
    std::size_t size = 0;          // bytes
    std::size_t align = 1;         // bytes (the natural alignment, 64 for a tensor map)
    bool operator==(const ParamField&) const = default;
};

/// Byte layout of a kernel parameter struct: the fields in order, each at the next multiple of its alignment.
struct ParamLayout {
    std::vector<ParamField> fields;
    std::size_t size = 0;  // bytes, a multiple of `align`
    std::size_t align = 1;
    /// Appends `f` (its size and alignment set) at the next offset it allows; call finish() after the last.
    void add(ParamField f);
    /// Rounds the size up to the struct's alignment.
    void finish();
    /// The field of kind `k` and number `a` (InternalError when there is none).
    const ParamField& field(ParamField::Kind k, int a = 0) const;
    bool operator==(const ParamLayout&) const = default;
};

/// What a pointwise plan is for (see plan_pointwise).
enum class PointwiseUse : std::uint8_t { Kernel, ReductionSpace };

/// 32-bit registers that one value of dtype `t` takes in a thread (its register type: two for 8-byte types).
inline int register_words(DType t) {
    return itemsize(t) == 8 ? 2 : 1;
}

/// Transcendental functions and divisions per element from which a flat kernel is arithmetic-heavy and its
/// vector variant becomes a pipelined grid-stride loop (PointwisePlan::grid_stride_blocks): Black-Scholes
/// call and put (two divisions, log, exp, sqrt, two erf) runs faster so, its loads overlapping its math
/// (docs/performance.md, E3); kernels with one or two such ops are memory-bound and keep one vector per
/// thread.
inline constexpr int kGridStrideCostlyOps = 4;
/// It also takes at least as many such ops as the arrays it reads and writes element by element (ops counted
/// per element: rank-0 values are computed once per thread). An Adam step (four per element over seven
/// arrays) needs the memory parallelism of one vector per thread: as a grid-stride loop it held 64 registers
/// and lost a third of its bandwidth. Blocks per SM of a grid-stride vector variant: 16 were faster than 8
/// (docs/performance.md, E3).
inline constexpr int kGridStrideBlocksPerSM = 16;
/// Registers per thread the vector variant's loaded vectors and outputs may take (see plan_pointwise). At
/// 256 threads per block, 128 registers per thread still let 2 blocks share an SM (65,536 registers); a
/// kernel of more would run one block per SM or spill (ptxas caps a thread at 255 under
/// __launch_bounds__(256)), where the scalar variant, whose loads the compiler schedules one element at a
/// time, stays coalesced (a warp reads 128 contiguous bytes per 4-byte operand).
inline constexpr int kVectorRegisterBudget = 128;

/// The specialization of one pointwise kernel. Sizes are not part of it (see PointwiseBinding).
struct PointwisePlan {
    int rank = 1;              // iteration-space rank after coalescing dimensions (>= 1)
    int block = 256;           // threads per block
    int vector_width = 1;      // elements per thread in the vector variant; 1: no vector variant
    bool vector_flat = false;  // vector variant needs no multi-index (every streamed operand contiguous)
    /// Arithmetic-heavy flat kernels (kGridStrideCostlyOps or more transcendental functions and divisions
    /// per element): the vector variant is a grid-stride loop over at most this many blocks, each thread
    /// issuing its next vector's loads before this vector's arithmetic, so memory and math overlap within a
    /// thread. 0: one vector per thread, a block per 256 vectors.
    int grid_stride_blocks = 0;
    /// The register estimate of a vector variant that was ruled out for exceeding kVectorRegisterBudget
    /// (0: none was ruled out for registers).
    int vector_registers = 0;
    IndexWidth index = IndexWidth::I32;
    std::vector<OperandPlan> loads;    // load sites, in emission order
    std::vector<OperandPlan> outputs;  // Contiguous (row-major), or Strided: a view the user writes into
    std::vector<DerivedPlan> derived;
    std::vector<GatherPlan> gathers;   // one per gather position of the graph, in emission order
    std::vector<DType> scalar_dtypes;  // one per Scalar node (order of pointwise_scalars())
    ParamLayout params;
    /// The Params struct exceeds the device's kernel parameter limit (PlanTarget::param_limit_bytes): the
    /// kernels take `const NAME_params* __restrict__ pp` instead of the struct, and the runtime uploads the
    /// packed bytes to device memory before each launch (runtime/src/param_buffer.cpp).
    bool params_in_memory = false;

    bool has_vector_variant() const { return vector_width > 1; }
    /// Whether the vector variant computes its gathers' positions once per vector: they are the same in
    /// every lane (nothing in their indices' cones moves along the last dimension), so each indirect site
    /// reads the W consecutive elements of a gathered row in one 16-byte load, or one element for every lane.
    /// A plan with a gather has a vector variant only so.
    bool gathers_per_vector() const { return has_vector_variant() && !gathers.empty(); }
    /// Whether a gather checks its indices: the kernel takes the error word.
    bool checks_indices() const;
    /// Grid and block for `numel` elements and a variant: grid_x = ceil(numel / (block * elements per
    /// thread)), at most grid_stride_blocks for a grid-stride vector variant. Throws loom::Error when the
    /// grid would exceed 2^31 - 1 blocks.
    LaunchConfig launch(std::int64_t numel, Variant v) const;
    /// Bytes moved per element of the iteration space (sum over operands).
    int bytes_per_element() const;
    bool operator==(const PointwisePlan&) const = default;
    std::uint64_t hash() const;
    /// Multi-line description (the kernel banner).
    std::string to_string() const;
    /// The same without the grid line when `kernel_grid` is false: the description of a reduction kernel's
    /// element or row space, whose grid the reduction plan gives.
    std::string describe(bool kernel_grid) const;
};

/// The run-time numbers of one call: sizes, strides, offsets, scalar values. Packed by pack_params.
struct PointwiseBinding {
    std::int64_t numel = 0;
    std::vector<std::int64_t> extents;  // coalesced iteration space, plan.rank entries
    struct Site {
        std::int64_t offset = 0;           // elements from the bound tensor's element 0
        std::vector<std::int64_t> coefs;   // per iteration dimension
        std::vector<std::int64_t> dcoefs;  // per derived index
        std::vector<std::int64_t> pcoefs;  // per gather position
    };
    std::vector<Site> sites;                         // parallel to plan.loads
    std::vector<std::vector<std::int64_t>> outputs;  // per output: its stride per iteration dimension
    struct Derived {
        std::int64_t offset = 0, div = 1, mod = 0;
        std::vector<std::int64_t> coefs, dcoefs;
    };
    std::vector<Derived> derived;
    std::vector<std::int64_t> gather_extents;  // per gather: the extent of its axis
    std::vector<std::int64_t> gather_ids;      // per gather: ir::gather_error_id (checked gathers; else 0)
    std::vector<ir::ScalarValue> scalars;      // order of pointwise_scalars()
};

struct PlannedPointwise {
    PointwisePlan plan;
    PointwiseBinding binding;
};

/// Input nodes of the graph of `outputs` in canonical order (first appearance in ir::topo_order): the
/// order of `layouts` for plan_pointwise and of the input pointers for pack_params.
std::vector<const ir::Node*> pointwise_inputs(const std::vector<ir::NodePtr>& outputs);
/// Scalar nodes in canonical order (first appearance in ir::topo_order).
std::vector<const ir::Node*> pointwise_scalars(const std::vector<ir::NodePtr>& outputs);

/// Plans one fused pointwise kernel. `layouts` has one entry per pointwise_inputs(outputs), dtype equal to
/// the Input's and one stride per dimension. Parameters beyond target.param_limit_bytes set
/// plan.params_in_memory. Throws loom::Error when the outputs' shapes differ or the graph holds a
/// reduction; InternalError for a malformed layout list.
///
/// Register estimate: the vector variant loads the vector of every streamed operand before it computes, so
/// it holds vector_width values per streamed operand and per output at once (two registers for an 8-byte
/// value). Above kVectorRegisterBudget registers per thread the plan has no vector variant
/// (plan.vector_registers records the estimate that ruled it out).
///
/// Gathers: a pointwise kernel of its own whose gathers' positions are the same in every lane of a vector
/// (nothing in their indices' cones moves along the last dimension: an embedding lookup's row ids) has a
/// vector variant when each indirect site moves along the last dimension at unit stride or not at all, its
/// input is 16-byte aligned, and its offset, its coefficients of the other dimensions and its gathers'
/// strides are multiples of the vector width (gathers_per_vector()). Any other gather rules the vector
/// variant out.
///
/// `use`: PointwiseUse::Kernel plans a pointwise kernel of its own (the register estimate above, the
/// grid-stride variant of arithmetic-heavy kernels, gathers once per vector); PointwiseUse::ReductionSpace
/// plans the element or row space of a reduction kernel, which has its own loops, grid and register budgets,
/// so none of these applies.
///
/// `output_strides` (empty: every output contiguous) gives each output's strides in elements: an output
/// into a strided view (a column, a strided slice, a transposed view; the caller checks that it does not
/// overlap itself) is written element by element at its own index map, and rules the vector variant out.
PlannedPointwise plan_pointwise(const std::vector<ir::NodePtr>& outputs,
                                const std::vector<InputLayout>& layouts, const PlanTarget& target,
                                PointwiseUse use = PointwiseUse::Kernel,
                                std::span<const Strides> output_strides = {});

/// Writes the kernel parameter bytes for one call into `out` (at least plan.params.size bytes).
/// `inputs`: address of element 0 of each bound tensor (order of pointwise_inputs()); `outputs`: the
/// contiguous output buffers. Load-site offsets (from slices and views) are folded into the pointers.
/// `error_word`: where checked gathers record an out-of-range index (ErrorWord; the runtime's, see
/// loom/codegen/plan/gather_error.hpp); null for a plan without one.
void pack_params(const PointwisePlan& plan, const PointwiseBinding& binding,
                 std::span<const void* const> inputs, std::span<void* const> outputs,
                 std::span<std::byte> out, void* error_word = nullptr);
std::vector<std::byte> pack_params(const PointwisePlan& plan, const PointwiseBinding& binding,
                                   std::span<const void* const> inputs, std::span<void* const> outputs,
                                   void* error_word = nullptr);

/// The address load site `s` reads at the iteration space's element 0: its input's element 0 plus the site's
/// offset (from slices and views).
const void* site_pointer(const PointwisePlan& plan, const PointwiseBinding& binding,
                         std::span<const void* const> inputs, std::size_t s);

/// The variant to launch for these pointers: Vector when the plan has one and every pointer that the
/// vector variant streams (after folding the load-site offsets) is 16-byte aligned; else Scalar.
Variant select_variant(const PointwisePlan& plan, const PointwiseBinding& binding,
                       std::span<const void* const> inputs, std::span<void* const> outputs);

}  // namespace loom::codegen
