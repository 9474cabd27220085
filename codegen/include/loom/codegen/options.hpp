// The one options value of a compilation: what a user may ask of the planner and the compiler for a traced
// function, a scope or (tile hints) one op. It enters the fusion plan and every kernel key, so two
// evaluations under different options never share a kernel. docs/options.md documents every field.
#pragma once

#include <cstdint>
#include <string>

namespace loom {

/// A tile shape hint in elements (0 in a field: the planner chooses). Rows, columns and the reduced
/// (K) extent of a product's tile, or rows and columns of a tiled transpose or stencil; a family that
/// cannot honour a hint raises loom::Error naming the limit it breaks.
struct TileHint {
    int rows = 0;
    int cols = 0;
    int depth = 0;
    bool empty() const { return rows == 0 && cols == 0 && depth == 0; }
    bool operator==(const TileHint&) const = default;
};

/// `tile(128, 128, 32)`: a tile hint for `Options::tile` (and the products' per-op hint).
inline TileHint tile(int rows, int cols, int depth = 0) {
    return {rows, cols, depth};
}

/// When Loom itself captures a traced function's kernels into a CUDA graph and replays it
/// (docs/graph-capture.md, "Automatic graphs"; graphs a user captures around Loom's calls are described there
/// too).
enum class CapturePolicy : std::uint8_t {
    /// Every call launches its kernels one by one.
    Never,
    /// A traced function whose plan has several kernels runs as one CUDA graph per stream once its kernels
    /// are
    /// compiled: the first call captures it, later calls patch the pointers that changed into its kernel
    /// nodes
    /// and launch it (one cudaGraphLaunch instead of a launch per kernel). Calls that a graph cannot replay
    /// (an output sharing memory with an argument, parameters in device memory) launch kernel by kernel.
    Auto,
};

/// The units a matrix product runs on (docs/semantics.md, section 12; matmul_plan.hpp).
enum class ProductPath : std::uint8_t {
    /// float16, bfloat16 and int8 products on tensor cores where the device has them (compute capability 8.0
    /// and newer), as TensorCores; float32 and float64 products on CUDA cores (the reference's bits), except
    /// float32 under a product_precision of TF32 or 3xTF32 (tensor cores). A half-precision product's bits
    /// are then fixed per device and plan (docs/semantics.md, section 12), within the stated bound.
    Auto,
    /// Every product on CUDA cores: one fma per k in the contract's order, the reference's bits (half
    /// precision included).
    CudaCores,
    /// float16, bfloat16 and int8 products on tensor cores (compute capability 8.0 and newer): half precision
    /// within the stated componentwise bound, int8 exact; float32 products stay on CUDA cores unless
    /// product_precision asks for TF32 or 3xTF32, float64 products always (the explain log says so). On
    /// Hopper (compute capability 9.0) float16 and bfloat16 products whose operands the tensor memory
    /// accelerator can copy run as warpgroup MMAs (wgmma, matmul_plan.hpp); the rest, and int8, run on
    /// mma.sync.
    TensorCores,
    /// Tensor cores through mma.sync only (the Ampere path), on Hopper too: the fallback, forceable.
    MmaSync,
};
/// "auto", "cuda_cores", "tensor_cores", "mma_sync".
const char* product_path_name(ProductPath p);

/// How float32 matrix products may use tensor cores (docs/semantics.md, section 12, "TF32"): an opt-in that
/// trades the contract's bits for speed, each choice with a stated componentwise bound. Other dtypes ignore
/// it.
enum class ProductPrecision : std::uint8_t {
    /// float32 products in float32 on CUDA cores, in the contract's order: the reference's bits (the
    /// default).
    Float32,
    /// Single-pass TF32: each operand read as TF32 (10 explicit mantissa bits, float32's exponent range; the
    /// low 13 bits dropped, as wgmma reads them), one TF32 MMA per 8 k, float32 accumulators.
    /// Bound: (2^-10 + 2^-22 + gamma(K, 2^-22) (1 + 2^-10 + 2^-22)) |A||B|.
    TF32,
    /// 3xTF32: each operand split as big = tf32(x) plus small = tf32(x - big), and a b taken as
    /// a_small b_big + a_big b_small + a_big b_big (three MMAs per step), which recovers float32's order of
    /// accuracy at a third of TF32's rate. Bound: (3 2^-22 + gamma(3K, 2^-22)) (1 + 2^-9) |A||B|.
    TF32x3,
};
/// "float32", "tf32", "3xtf32".
const char* product_precision_name(ProductPrecision p);

/// Where a stencil's taps find their neighbours (tile_plan.hpp): each tap loaded from global memory, the
/// taps shared between neighbouring outputs served again by L1; or the block's tile of the input plus its
/// halo staged once in shared memory, every tap read from there.
enum class StencilReuse : std::uint8_t {
    /// The planner's choice (L1 today; docs/tiling.md).
    Auto,
    L1,
    SharedHalo,
};
/// "auto", "l1", "shared_halo".
const char* stencil_reuse_name(StencilReuse r);

struct Options {
    /// Fast math (opt-in): NVRTC's --use_fast_math for the kernel: the float functions become the hardware
    /// intrinsics (__expf, __logf, __sinf, ... with their own ulp bounds), division and square root are
    /// approximate, and subnormals flush to zero. docs/semantics.md, "Fast math", says what is given up;
    /// testing::check_against_reference widens its tolerances for such kernels and says so.
    bool fast_math = false;
    /// Line information in the cubin (NVRTC -lineinfo), for profilers and compute-sanitizer.
    bool line_info = false;
    /// Fusion (the default) or, for debugging, none: every op runs as its own kernel, every value is
    /// materialized in its dtype. Results are the same bits either way (docs/semantics.md, section 1).
    bool fusion = true;
    CapturePolicy capture = CapturePolicy::Auto;
    /// The tile shape for families that tile: the tiled transposes and stencils (tile_plan.hpp) take rows and
    /// columns; matrix products (matmul_plan.hpp) rows, columns and depth of a block's tile, unless the
    /// product has a hint of its own (matmul(a, b, tile(...))); an impossible hint raises loom::Error naming
    /// the limit it breaks.
    TileHint tile;
    /// CUDA cores or tensor cores for matrix products (ProductPath).
    ProductPath product_path = ProductPath::Auto;
    /// float32 products on tensor cores in TF32 or 3xTF32 (ProductPrecision; off by default). With TF32 or
    /// 3xTF32 a float32 product of GPU tensors runs on mma.sync whatever product_path says (on devices of
    /// compute capability 8.0 and newer; older ones keep CUDA cores), except CudaCores, which conflicts
    /// (loom::Error naming matmul, both operands and both options). Host tensors compute float32 products in
    /// float32 (the LLVM back end's product kernels, in the contract's order) whatever this says.
    ProductPrecision product_precision = ProductPrecision::Float32;
    /// How a tiled stencil reuses its taps (StencilReuse). Every choice gives the same bits.
    StencilReuse stencil_reuse = StencilReuse::Auto;
    /// Attention written out as matmul(softmax(q kᵀ · scale, causal mask), v) rewritten as one attention()
    /// kernel before partitioning (off by default: it changes the order of the sums from the written one).
    /// Only unmasked scores and causal masks of index comparisons that keep a key in every row are
    /// rewritten; the explain log names each pattern and says what it did (docs/semantics.md, "Attention").
    bool attention_rewrite = false;

    bool operator==(const Options&) const = default;
    std::uint64_t hash() const;
    /// "fast_math=off line_info=off fusion=on capture=auto tile=auto product_path=auto
    /// product_precision=float32 stencil_reuse=auto attention_rewrite=off".
    std::string to_string() const;
};

/// The options of code compiled now: the innermost OptionsScope of this thread, else the defaults read
/// once from the environment (LOOM_FAST_MATH=1, LOOM_LINEINFO=1, LOOM_FUSION=off, LOOM_CAPTURE=never,
/// LOOM_TILE=64x64, LOOM_PRODUCT_PATH=cuda_cores, tensor_cores or mma_sync, LOOM_PRODUCT_PRECISION=float32,
/// tf32 or 3xtf32, LOOM_STENCIL_REUSE=l1 or shared_halo).
const Options& current_options();

/// Options for the code compiled while it lives, on this thread: `OptionsScope s({.fusion = false});`.
/// Scopes nest; a traced function's own options (loom::function(name, f, options)) replace them for its
/// compilations.
class OptionsScope {
  public:
    explicit OptionsScope(const Options& options);
    ~OptionsScope();
    OptionsScope(const OptionsScope&) = delete;
    OptionsScope& operator=(const OptionsScope&) = delete;

  private:
    const Options* previous_;
    Options options_;
};

/// The defaults from the environment (what current_options() returns outside every scope).
Options environment_options();

}  // namespace loom
