// The type-independent engine of traced functions: specializations and their explain log.
#include "loom/dsl/function.hpp"

#include <fmt/format.h>

#include <typeinfo>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/runtime/kernel_cache.hpp"

namespace loom::detail {

namespace {

bool fits(const Program& p, std::span<const Tensor* const> args,
          std::span<const Tensor* const> outs) noexcept {
    const auto& specs = p.specs();
    bool ok = specs.size() == args.size();
    for (std::size_t k = 0; ok && k < args.size(); ++k) ok = specs[k].matches(*args[k]);
    return ok && p.outputs_match(outs);
}

}  // namespace

const Program* FunctionCore::find(std::span<const Tensor* const> args,
                                  std::span<const Tensor* const> outs) const noexcept {
    const std::size_t n = count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i)
        if (fits(*programs_[i], args, outs)) return programs_[i].get();
    return nullptr;
}

namespace {

// Why a new specialization: the first argument that differs from the closest earlier one.
std::string reason(const std::vector<const Program*>& earlier, std::span<const Tensor* const> args,
                   std::span<const Tensor* const> outs) {
    if (earlier.empty()) return "first call";
    const auto& s = earlier.back()->specs();
    for (std::size_t k = 0; k < args.size() && k < s.size(); ++k) {
        const Tensor& t = *args[k];
        if (t.dtype() != s[k].dtype)
            return fmt::format("argument {}: dtype {} -> {}", k, name(s[k].dtype), name(t.dtype()));
        if (t.shape() != s[k].shape)
            return fmt::format("argument {}: shape {} -> {}", k, to_string(s[k].shape), to_string(t.shape()));
        if (t.strides() != s[k].strides)
            return fmt::format("argument {}: strides {} -> {}", k, to_string(s[k].strides),
                               to_string(t.strides()));
        if (ArgSpec::of(t).aligned16 != s[k].aligned16)
            return fmt::format("argument {}: element 0 {} 16-byte aligned", k,
                               s[k].aligned16 ? "no longer" : "now");
        if (!(t.device() == s[k].device))
            return fmt::format("argument {}: device {} -> {}", k, s[k].device.to_string(),
                               t.device().to_string());
    }
    for (std::size_t r = 0; r < outs.size(); ++r)
        if (outs[r]->defined() && !outs[r]->is_contiguous())
            return fmt::format("output {}: a view with strides {}", r, to_string(outs[r]->strides()));
    if (!earlier.back()->outputs_match(outs)) return "outputs: contiguous";
    return "arguments differ";
}

}  // namespace

const Program& FunctionCore::specialize(
    std::span<const Tensor* const> args, std::span<const Tensor* const> outs, std::source_location call,
    const std::function<std::vector<ir::NodePtr>(const std::vector<ir::NodePtr>&)>& trace) {
    std::lock_guard lock(mu_);
    if (const Program* p = find(args, outs)) return *p;  // another thread built it while we waited
    for (const auto& p : overflow_)
        if (fits(*p, args, outs)) return *p;
    std::vector<ir::NodePtr> placeholders;
    for (std::size_t k = 0; k < args.size(); ++k) {
        if (!args[k]->defined())
            throw Error(
                fmt::format("{}(): argument {} is an undefined Tensor ({}; the function is defined at {})",
                            name_, k, short_location(call), short_location(loc_)));
        if (!(args[k]->device() == args[0]->device()))
            throw Error(fmt::format(
                "{}(): argument {} is on {} but argument 0 is on {} ({}; the function is defined at {})",
                name_, k, args[k]->device().to_string(), args[0]->device().to_string(), short_location(call),
                short_location(loc_)));
        placeholders.push_back(
            ir::input(args[k]->dtype(), args[k]->shape(), fmt::format("arg{}", k), {}, loc_));
    }
    std::vector<ir::NodePtr> roots;
    try {
        roots = trace(placeholders);
    } catch (const Error& e) {
        // An error of the body (shapes that do not broadcast, a bad axis) names the body's line; the call
        // that traced it, with these arguments, is named too. Subclasses keep their type as thrown.
        if (typeid(e) != typeid(Error)) throw;
        throw Error(fmt::format("{} (while tracing {}() for the call at {}; the function is defined at {})",
                                e.what(), name_, short_location(call), short_location(loc_)));
    }
    for (std::size_t k = 0; k < roots.size(); ++k)
        if (!roots[k])
            throw Error(
                fmt::format("{}(): result {} of the body is an empty Array ({}; the function is "
                            "defined at {})",
                            name_, k, short_location(call), short_location(loc_)));
    if (const ir::Node* n = Program::foreign_input(roots, placeholders))
        throw Error(fmt::format(
            "{}(): the function reads a tensor that is not one of its arguments ({} made at "
            "{}); pass it as an argument ({}; the function is defined at {})",
            name_, ir::describe(*n), short_location(n->loc()), short_location(call), short_location(loc_)));
    ++traces_;
    std::vector<const Program*> earlier;
    const std::size_t n = count_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) earlier.push_back(programs_[i].get());
    std::vector<Strides> out_strides;  // views among the outputs: their strides enter the specialization
    for (const Tensor* o : outs) {
        if (!o->defined()) {
            out_strides.clear();  // Program::run names the undefined output
            break;
        }
        out_strides.push_back(o->is_contiguous() ? Strides{} : o->strides());
    }
    auto prog = std::make_unique<const Program>(std::move(roots), std::move(placeholders), args, name_, loc_,
                                                options_, std::move(out_strides));
    if (env_list_contains("LOOM_EXPLAIN", "recompile"))
        std::fprintf(stderr,
                     "%s: specialization %zu (%s): %zu kernel(s); kernel cache: %llu compiled so far\n",
                     name_.c_str(), n + overflow_.size() + 1, reason(earlier, args, outs).c_str(),
                     prog->kernels(), static_cast<unsigned long long>(kernel_cache_stats().compiles));
    const Program& ref = *prog;
    if (n < kMaxSpecializations) {
        programs_[n] = std::move(prog);
        count_.store(n + 1, std::memory_order_release);
    } else {
        overflow_.push_back(std::move(prog));
    }
    return ref;
}

FunctionStats FunctionCore::stats() const {
    std::lock_guard lock(mu_);
    FunctionStats s;
    s.calls = calls_.load(std::memory_order_relaxed);
    s.specializations = count_.load(std::memory_order_relaxed) + overflow_.size();
    s.traces = traces_;
    const std::size_t n = count_.load(std::memory_order_relaxed);
    auto add = [&](const Program& p) {
        const GraphStats g = p.graph_stats();
        s.graph_captures += g.captures;
        s.graph_replays += g.replays;
        s.graph_patched += g.patched;
        s.graph_fallbacks += g.fallbacks;
    };
    for (std::size_t i = 0; i < n; ++i) add(*programs_[i]);
    for (const auto& p : overflow_) add(*p);
    return s;
}

}  // namespace loom::detail
