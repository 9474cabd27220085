// assign(), cuda_source(), ptx(), llvm_source(), compile(), explain() and check_against_reference() over
// Arrays.
#include "loom/dsl/evaluation.hpp"

#include <fmt/format.h>

#include "loom/ir/error.hpp"
#include "loom/runtime/host_backend.hpp"

namespace loom {

namespace {
std::vector<ir::NodePtr> roots_of(const std::vector<Array>& arrays, std::string_view api, const Loc& loc) {
    std::vector<ir::NodePtr> roots;
    roots.reserve(arrays.size());
    for (const auto& a : arrays) {
        if (!a.node()) throw Error(fmt::format("{}(): empty Array ({})", api, short_location(loc)));
        roots.push_back(a.node());
    }
    return roots;
}
}  // namespace

void assign(const Tensor& out, const Array& a, Loc loc) {
    evaluate_into(roots_of({a}, "assign", loc), {out}, loc);
}

void assign(const std::vector<Tensor>& outs, const std::vector<Array>& arrays, Loc loc) {
    evaluate_into(roots_of(arrays, "assign", loc), outs, loc);
}

std::string cuda_source(const std::vector<Array>& arrays, std::string_view name) {
    return cuda_source(roots_of(arrays, "cuda_source", Loc::current()), name);
}

std::string ptx(const std::vector<Array>& arrays, std::string_view name) {
    return ptx(roots_of(arrays, "ptx", Loc::current()), name);
}

std::string llvm_source(const std::vector<Array>& arrays, std::string_view name) {
    return llvm_source(roots_of(arrays, "llvm_source", Loc::current()), name);
}

CompileReport compile(const std::vector<Array>& arrays, std::string_view name) {
    return compile(roots_of(arrays, "compile", Loc::current()), name);
}

std::string explain(const std::vector<Array>& arrays, std::string_view name) {
    return explain(roots_of(arrays, "explain", Loc::current()), name);
}

namespace testing {
Comparison check_against_reference(const std::vector<Array>& arrays, Loc loc) {
    const auto roots = roots_of(arrays, "check_against_reference", loc);
    return check_against_reference(roots, evaluate(roots, loc));
}
}  // namespace testing

}  // namespace loom
