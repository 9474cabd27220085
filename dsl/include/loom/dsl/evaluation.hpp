// Evaluating Arrays into tensors the user owns, and looking at the code Loom generates for them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "loom/dsl/array.hpp"
#include "loom/runtime/executor.hpp"
#include "loom/runtime/testing.hpp"

namespace loom {

/// Evaluates `a` into `out` (same shape and dtype, contiguous, on the inputs' device): no allocation for
/// the result. Asynchronous on the GPU (current stream). Throws loom::Error on a shape or dtype mismatch.
void assign(const Tensor& out, const Array& a, Loc loc = Loc::current());
/// Evaluates several arrays into preallocated outputs; arrays of one shape come out of one kernel.
void assign(const std::vector<Tensor>& outs, const std::vector<Array>& arrays, Loc loc = Loc::current());

/// The CUDA C++ Loom generates for `arrays` (complete translation units, prelude included), planned for
/// the current GPU or an H200 when none is present. `name` names the kernel. Needs no GPU.
std::string cuda_source(const std::vector<Array>& arrays, std::string_view name = {});

/// The PTX of every kernel of cuda_source(arrays, name), one module per kernel in launch order, for the
/// virtual arch of the cubin Loom would load (`compute_90` for an H100, H200 or no GPU). Runs NVRTC for
/// each kernel (no cache); launches nothing; needs no GPU. Throws loom::Error naming ptx() for an empty
/// Array, loom::CompileError.
std::string ptx(const std::vector<Array>& arrays, std::string_view name = {});

/// The LLVM IR Loom generates for `arrays` on the host: one module per host kernel (the text LOOM_DUMP=llvm
/// writes: a banner with the plan and schedule, each instruction commented with its op and the user's
/// `file:line`), concatenated in launch order, for the inputs' layouts and this machine's target (an
/// AVX-512 target when the LLVM back end's module is not loaded). Planned for the host whatever device
/// the inputs are on, as cuda_source() plans for the GPU. Kernels without LLVM code (matrix products,
/// which run on the CPU reference) add no text. `name` names the kernels. Needs no GPU and no LLVM.
/// Throws loom::Error naming llvm_source() for an empty Array.
std::string llvm_source(const std::vector<Array>& arrays, std::string_view name = {});

/// Generates and compiles the kernels of `arrays` with NVRTC without running them. Needs no GPU.
CompileReport compile(const std::vector<Array>& arrays, std::string_view name = {});

/// The fusion decisions of the plan that evaluating `arrays` runs (what LOOM_EXPLAIN=fusion prints then):
/// each kernel, the nodes in it with the user's lines, what it reads and writes, and why kernels are
/// separate. The device is decided as eval() decides it: arrays placed on a GPU (by their inputs, or, with
/// none, by their factories' device) get the GPU plan (threads per block, vector width, launches), planned
/// for the current GPU or an H200 when none is present; host arrays get the host plan (a `host     LLVM
/// back end: <cpu>` line, then each kernel's lanes per vector and tasks), or one line saying why every host
/// kernel runs on the CPU reference. Needs no GPU. Throws loom::Error for an empty Array, inputs on
/// different devices, an unbound placeholder, or a tile hint the GPU plan cannot take.
std::string explain(const std::vector<Array>& arrays, std::string_view name = {});

namespace testing {
/// Evaluates `arrays` (on their device) and checks every result against the CPU reference with the
/// contract's tolerance (bit-exact where it promises bits, ULP-aware elsewhere). The returned comparison
/// names the worst element, its index and both values on failure; discarding it would pass every test.
[[nodiscard]] Comparison check_against_reference(const std::vector<Array>& arrays, Loc loc = Loc::current());
}  // namespace testing

}  // namespace loom
