// Traced functions: define a computation once as a C++ callable over Arrays; Loom traces it with
// placeholders, compiles one specialization per kind of arguments, and calls it again at the cost of
// about one kernel launch.
//
//   auto f = loom::function("scale_bias_act",
//       [](Array x, Array scale, Array bias) { return gelu(x * scale + bias); });
//   Tensor y = f(x, scale, bias);    // traced, planned, compiled and launched on the first call
//   f(x, scale, bias, y);            // into a preallocated output: the cached fast path
//
// Re-trace and recompile (docs/semantics.md, "Traced functions"): a call whose arguments differ from every
// earlier call in dtype, shape, strides, 16-byte alignment of element 0 or device gets a new
// specialization (counted in stats().specializations): the function is traced again (stats().traces) and
// planned; a kernel is compiled only when its plan and graph structure are new (the kernel cache key:
// dtypes, rank after coalescing, access pattern, vector width, index width), which other specializations
// and other functions share. Sizes alone never change the generated code. C++ scalars that the callable
// captures or computes are read when it is traced and keep that value afterwards. LOOM_EXPLAIN=recompile
// prints why each specialization was made.
#pragma once

#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/codegen/options.hpp"
#include "loom/dsl/array.hpp"
#include "loom/ir/env.hpp"
#include "loom/runtime/program.hpp"

namespace loom {

namespace detail {

template <class T>
struct callable_arity : callable_arity<decltype(&T::operator())> {};
template <class C, class R, class... A>
struct callable_arity<R (C::*)(A...) const> : std::integral_constant<std::size_t, sizeof...(A)> {};
template <class C, class R, class... A>
struct callable_arity<R (C::*)(A...)> : std::integral_constant<std::size_t, sizeof...(A)> {};
template <class R, class... A>
struct callable_arity<R (*)(A...)> : std::integral_constant<std::size_t, sizeof...(A)> {};

template <class R>
struct result_count : std::integral_constant<std::size_t, 1> {};  // one Array
template <class... A>
struct result_count<std::tuple<A...>> : std::integral_constant<std::size_t, sizeof...(A)> {};
template <class A, class B>
struct result_count<std::pair<A, B>> : std::integral_constant<std::size_t, 2> {};

template <class R>
std::vector<ir::NodePtr> result_nodes(const R& r) {
    if constexpr (std::is_convertible_v<R, Array>) {
        return {Array(r).node()};
    } else {
        std::vector<ir::NodePtr> v;
        std::apply([&](const auto&... a) { (v.push_back(Array(a).node()), ...); }, r);
        return v;
    }
}

/// Counters of a traced function.
struct FunctionStats {
    std::uint64_t calls = 0;            // calls that ran (fast or slow path)
    std::uint64_t specializations = 0;  // Programs built (distinct argument specializations)
    std::uint64_t traces = 0;           // times the callable ran on placeholders
    // Automatic CUDA graphs (Options::capture = Auto, specializations of several kernels;
    // docs/graph-capture.md):
    std::uint64_t graph_captures =
        0;  // graphs built (one per specialization and stream, again when a launch shape changes)
    std::uint64_t graph_replays = 0;  // calls that ran as one graph launch
    std::uint64_t graph_patched = 0;  // kernel nodes whose pointers a replay changed
    std::uint64_t graph_fallbacks =
        0;  // calls launched kernel by kernel (an output sharing memory with an argument)
};

/// The engine of loom::function, independent of the callable's type: specializations (lock-free to read,
/// append-only, under a mutex to add) and the explain log.
class FunctionCore {
  public:
    FunctionCore(std::string name, std::source_location loc, Options options)
        : name_(std::move(name)), loc_(loc), options_(std::move(options)) {}
    const std::string& name() const { return name_; }
    /// The program for `args` writing into `outs` (empty: new contiguous results), or nullptr when none
    /// matches. No lock, no allocation.
    const Program* find(std::span<const Tensor* const> args,
                        std::span<const Tensor* const> outs) const noexcept;
    /// Builds (or finds, under the lock) the program for `args` and the layouts of `outs` (outputs that are
    /// views are written at their strides); `trace` maps placeholders to result nodes.
    const Program& specialize(
        std::span<const Tensor* const> args, std::span<const Tensor* const> outs, std::source_location call,
        const std::function<std::vector<ir::NodePtr>(const std::vector<ir::NodePtr>&)>& trace);
    FunctionStats stats() const;
    void count_call() const noexcept { calls_.fetch_add(1, std::memory_order_relaxed); }

  private:
    static constexpr std::size_t kMaxSpecializations = 256;
    std::string name_;
    std::source_location loc_;
    Options options_;
    mutable std::mutex mu_;
    std::array<std::unique_ptr<const Program>, kMaxSpecializations> programs_;
    std::atomic<std::size_t> count_{0};
    std::vector<std::unique_ptr<const Program>> overflow_;  // beyond kMaxSpecializations, under mu_
    mutable std::atomic<std::uint64_t> calls_{0};
    std::uint64_t traces_ = 0;
};

}  // namespace detail

/// A Tensor argument that also records the caller's file:line (a call taking a pack of tensors cannot end
/// with a defaulted location; the default argument is evaluated where the argument is converted). A
/// parameter type only: it refers to the argument.
struct TensorAt {
    TensorAt(const Tensor& t, std::source_location l = std::source_location::current()) : tensor(t), loc(l) {}
    const Tensor& tensor;
    std::source_location loc;
};

/// A traced function over Arrays (see the file comment). Create it with loom::function(). Thread-safe:
/// calls from several threads share specializations; two threads needing the same new one build it once.
template <class F>
class Function {
  public:
    static constexpr std::size_t kInputs = detail::callable_arity<F>::value;
    using Result = decltype(std::apply(std::declval<F&>(), std::declval<std::array<Array, kInputs>>()));
    static constexpr std::size_t kOutputs = detail::result_count<std::decay_t<Result>>::value;
    /// Whether `first, T...` are the function's inputs (Tensors, one per parameter of the callable).
    template <class... T>
    static constexpr bool takes_inputs = (std::is_same_v<std::decay_t<T>, Tensor> && ...) &&
                                         sizeof...(T) + 1 == kInputs;

    Function(std::string name, F fn, std::source_location loc, Options options)
        : core_(std::make_shared<detail::FunctionCore>(std::move(name), loc, std::move(options))),
          fn_(std::move(fn)) {}

    /// f(inputs...): allocates the results and returns them (a Tensor, or std::array<Tensor, N> for N
    /// results). f(inputs..., outputs...): writes into preallocated outputs (same shape and dtype, on the
    /// inputs' device; contiguous, or views such as the interior of a grid, whose strides are part of the
    /// specialization) and returns nothing; asynchronous on the current stream.
    /// Throws loom::Error for arguments that do not fit the function, naming the function, the call's
    /// file:line and where it was defined (the first call also reports trace errors with the callable's
    /// file:line), and as loom::evaluate() does.
    template <class... T>
    requires((std::is_same_v<std::decay_t<T>, Tensor> && ...) &&
             (sizeof...(T) + 1 == kInputs || sizeof...(T) + 1 == kInputs + kOutputs)) auto
    operator()(TensorAt first, const T&... rest) const {
        const std::array<const Tensor*, sizeof...(T) + 1> all{&first.tensor, &rest...};
        const std::span<const Tensor* const> args(all.data(), kInputs);
        if constexpr (sizeof...(T) + 1 == kInputs + kOutputs) {
            const std::span<const Tensor* const> outs(all.data() + kInputs, kOutputs);
            const Program& p = program(args, outs, first.loc);
            core_->count_call();
            p.run(args, outs, first.loc);
        } else {
            const Program& p = program(args, {}, first.loc);
            core_->count_call();
            std::array<Tensor, kOutputs> outs;
            std::array<const Tensor*, kOutputs> out_ptrs{};
            for (std::size_t k = 0; k < kOutputs; ++k) {
                outs[k] = Tensor::empty(p.roots()[k]->shape(), p.roots()[k]->dtype(), p.device());
                out_ptrs[k] = &outs[k];
            }
            p.run(args, out_ptrs, first.loc);
            if constexpr (kOutputs == 1)
                return outs[0];
            else
                return outs;
        }
    }

    /// The kernels of the specialization for these arguments (inputs only, as in f(inputs...)), as text:
    /// every kernel, in launch order. The first use of a kind of arguments (dtype, shape, strides, 16-byte
    /// alignment, device) traces the function and builds its specialization as a call would (kept for
    /// later calls); nothing is launched. Throws as a call does for arguments that do not fit.
    ///
    /// cuda_source(): the generated CUDA C++, one complete translation unit per kernel (prelude included);
    /// for host arguments planned for the current GPU, or an H200 when there is none. Needs no GPU for host
    /// arguments.
    template <class... T>
    requires takes_inputs<T...> std::string cuda_source(TensorAt first, const T&... rest)
    const { return specialization(first, rest...).cuda_source(); }
    /// ptx(): the PTX of every kernel of cuda_source(), for the virtual arch of the cubin Loom loads
    /// (`compute_90` on an H100 or H200); runs NVRTC for each kernel (no cache). Throws loom::CompileError.
    template <class... T>
    requires takes_inputs<T...> std::string ptx(TensorAt first, const T&... rest)
    const { return specialization(first, rest...).ptx(); }
    /// llvm_source(): the LLVM IR of every host kernel (one module per kernel, the text LOOM_DUMP=llvm
    /// writes; matrix products run on the CPU reference and add none); for device arguments planned for this
    /// machine's host as if the arguments were host tensors. Needs no GPU and no LLVM for that planning.
    template <class... T>
    requires takes_inputs<T...> std::string llvm_source(TensorAt first, const T&... rest)
    const { return specialization(first, rest...).llvm_source(); }

    const std::string& name() const { return core_->name(); }
    detail::FunctionStats stats() const { return core_->stats(); }

  private:
    template <class... T>
    const Program& specialization(const TensorAt& first, const T&... rest) const {
        const std::array<const Tensor*, kInputs> all{&first.tensor, &rest...};
        return program(all, {}, first.loc);
    }

    const Program& program(std::span<const Tensor* const> args, std::span<const Tensor* const> outs,
                           std::source_location call) const {
        if (const Program* p = core_->find(args, outs)) return *p;
        return core_->specialize(args, outs, call, [this](const std::vector<ir::NodePtr>& placeholders) {
            std::array<Array, kInputs> in;
            for (std::size_t k = 0; k < kInputs; ++k) in[k] = Array(placeholders[k]);
            return detail::result_nodes(std::apply(fn_, in));
        });
    }

    std::shared_ptr<detail::FunctionCore> core_;
    F fn_;
};

/// Makes a traced function named `name` (kernel names, profilers and errors show it) from a callable
/// taking Arrays and returning an Array, or a std::tuple / std::pair of Arrays. Its kernels are compiled
/// under the options current where it is made (loom::OptionsScope, the environment), or under `options`:
/// `loom::function("fast_gelu", g, {.fast_math = true})` (docs/options.md).
template <class F>
Function<F> function(std::string name, F fn, std::source_location loc = std::source_location::current()) {
    return Function<F>(std::move(name), std::move(fn), loc, current_options());
}
template <class F>
Function<F> function(std::string name, F fn, Options options,
                     std::source_location loc = std::source_location::current()) {
    return Function<F>(std::move(name), std::move(fn), loc, std::move(options));
}

}  // namespace loom
