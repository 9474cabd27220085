// Internal: the CUDA emitter of one pointwise graph and plan, shared by emit_pointwise.cpp (the Params
// struct, the body, the element function, the scalar entry point, and the pieces other kernels take) and
// emit_pointwise_vector.cpp (the vector entry points and a matmul epilogue's vector of elements).
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../plan/pointwise_graph.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"

namespace loom::codegen::detail {

struct PointwiseEmitter {
    const PwGraph& g;
    const PointwisePlan& plan;
    std::string name;
    std::string idx;  // index type
    bool body_needs_params = false;
    /// A matmul epilogue: the load site whose value is the product's accumulator, passed in as `acc` (-1:
    /// none); a scan's epilogue: the scan's element.
    int acc_site = -1;
    /// A matmul prologue: the element function returns its one output's value instead of storing it.
    bool returns_value = false;
    /// A matmul epilogue with costly ops: its element function is called, not inlined into each of the
    /// thread's accumulators (64 inlined copies of, say, an erf would take NVRTC seconds).
    bool out_of_line = false;
    /// Values that are the same for every element (`uniform`: rank-0 values, scalars, constants, loads of
    /// scalar operands and what is computed from them alone) with a costly op among them are computed once
    /// per thread by {name}_uniforms, before the element loop, and passed to the body (`frontier`: those the
    /// rest of the body uses). Same ops in the same order: the same bits. Empty: the body computes all.
    std::vector<bool> uniform;
    std::vector<int> frontier;
    std::vector<bool> used_per_element;  // by a value computed per element, or an output
    /// What a returned value is, for its comment.
    std::string returns_what = "the operand's element: stored by the caller";
    /// What `acc` holds, for its comment.
    std::string acc_what = "the product, from the accumulators";

    std::string vname(int v) const { return fmt::format("v{}", v); }
    static std::string name_of(DType t) { return std::string(loom::name(t)); }
    bool indirect(int site) const {
        return site >= 0 && plan.loads[static_cast<std::size_t>(site)].access == Access::Indirect;
    }
    /// Value k is computed once per thread by {name}_uniforms and passed in.
    bool hoisted(std::size_t k) const;

    // emit_pointwise.cpp: the values hoisted out of the element loop, the Params struct, the body and its
    // statements, index arithmetic, the element function and the scalar entry point.
    void plan_uniforms();
    std::vector<std::size_t> uniform_sites() const;
    std::string uniforms() const;
    void call_uniforms(std::string& s, int ind) const;
    std::string params_struct() const;
    void value_line(std::string& s, std::size_t k) const;
    std::string site_param(const PwSite& site, std::size_t k, bool per_vector) const;
    std::vector<bool> body_values(bool per_vector) const;
    bool body_takes_params(const std::vector<bool>& keep, bool per_vector) const;
    /// {name}_body, or with `per_vector` {name}_vector_body: the vector variant's, when its gathers'
    /// positions are computed once per vector (PointwisePlan::gathers_per_vector) and its indirect sites
    /// passed as values.
    std::string body(bool per_vector = false) const;
    std::string site_terms(std::size_t s, bool skip_inner) const;
    void decompose(std::string& s, std::uint32_t needed, const std::string& flat) const;
    void derived_indices(std::string& s) const;
    std::string output_terms(std::size_t o) const;
    std::uint32_t element_dims() const;
    std::string body_call(const std::vector<std::string>& args, const std::vector<std::string>& outs,
                          bool per_vector = false) const;
    std::string element() const;
    std::string entry(const std::string& entry_name) const;
    std::string scalar_kernel() const;

    // emit_pointwise_vector.cpp: the vector variants, and the gathers of one vector.
    std::vector<bool> position_cones() const;
    void gathered_operands(std::string& s, std::vector<std::string>& args) const;
    std::string gathered_site(std::string& s, int k) const;
    std::string element_vector() const;
    std::string prologue_vector() const;
    void compute_and_store_vector(std::string& s, int ind, const std::vector<std::string>& args) const;
    std::string grid_stride_vector_kernel() const;
    std::vector<std::string> vector_operands(std::string& s) const;
    std::string vector_kernel() const;
};

}  // namespace loom::codegen::detail
