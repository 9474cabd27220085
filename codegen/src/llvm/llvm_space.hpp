// Internal: one pointwise plan's iteration space inside a generated host function: its parameters (read
// from the packed parameter struct, codegen::pack_params), the address of every load site at a point of the
// space (views composed into index arithmetic by plan_pointwise: coefficients and derived indices), its
// graph's values at a width (one instruction per node, commented with the op and the user's file:line) and
// the stores of its outputs. Serves pointwise kernels and the element and row spaces of reductions.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../plan/pointwise_graph.hpp"
#include "../plan/pointwise_vector.hpp"
#include "llvm_ir.hpp"
#include "loom/codegen/plan/pointwise_plan.hpp"

namespace loom::codegen::llvm_ir {

/// A point (or `w` points along the innermost dimension, `stride` apart) of a space of rank R: the indices of
/// dimensions 0 .. R-2 (`outer`, i64 scalars), the innermost index of the first lane (`inner`) and the
/// row-major flat index of the first lane (`flat`). Rank 1: `outer` is empty and inner == flat. Lane l is at
/// innermost index inner + l * stride (consecutive elements: stride 1; the runs of the reduction order: 4).
struct Point {
    std::vector<std::string> outer;
    std::string inner;
    std::string flat;
    int stride = 1;
};

class Space {
  public:
    Space(Builder& b, const detail::PwGraph& g, const PointwisePlan& plan, std::string tag);

    /// Loads every parameter field of the plan from the struct at `base` + `offset` bytes (call once, where
    /// the values dominate every use: at the start of the function).
    void load_params(const std::string& base, std::size_t offset);
    /// The loaded field (an i64 for index fields, ptr for pointers, the compute value for scalars).
    const std::string& field(ParamField::Kind kind, int a = 0, int b = 0) const;
    /// Extent of dimension d (d >= 1), as i64.
    const std::string& extent(int d) const { return field(ParamField::Kind::Extent, d); }

    /// Values of inputs that are not read from memory (a reduction's row values): given the input number and
    /// the width, the compute value; empty string for inputs read from memory.
    std::function<std::string(int input, int w)> external;

    /// Emits the values that `outputs` (indices into the graph's outputs) need at `pt`, `w` lanes wide, and
    /// returns the outputs' compute values. `tag` prefixes the names (v<k>) of this emission. `known` holds
    /// values the caller already has at this point and width, by graph output (a reduction's operand kept in
    /// an output between passes): they are used as given, and what only they need is not emitted.
    std::vector<std::string> evaluate(const std::vector<int>& outputs, const Point& pt, int w,
                                      std::string_view tag, const std::map<int, std::string>& known = {});
    /// Stores output `o`'s compute value `v` (w lanes) at flat index `flat` of its contiguous buffer. A
    /// non-temporal store bypasses the caches; the caller guarantees that the address is aligned to the
    /// vector's size (w * itemsize bytes), which the store then states.
    void store_output(int o, const std::string& v, const std::string& flat, int w,
                      std::string_view comment = {}, bool nontemporal = false);
    /// Output `o`'s stored elements at flat index `flat` of its contiguous buffer (w lanes), as compute
    /// values.
    std::string load_output(int o, const std::string& flat, int w, std::string_view comment = {});
    /// The address of output `o`'s element at flat index `flat` of its contiguous buffer.
    std::string output_address(int o, const std::string& flat);
    /// Stores output `o`'s compute value `v` (w lanes along the innermost dimension) at point `pt`: at the
    /// flat index of a contiguous output (non-temporal as store_output says), or at a strided output's own
    /// index map (a view the user writes into: consecutive lanes for a unit innermost stride, else a
    /// scatter).
    void store_output_at(int o, const std::string& v, const Point& pt, int w, bool nontemporal = false);

    const detail::PwGraph& graph() const { return g_; }
    const PointwisePlan& plan() const { return plan_; }

  private:
    // Where a site's lanes are: w consecutive elements from `off` (Run), one element `off` in every lane
    // (One), or one offset per lane (Lanes: `off` is an i64 vector). Offsets in elements from the site's
    // pointer.
    struct Address {
        enum Kind { Run, One, Lanes } kind;
        std::string off;
    };
    Address site_address(int site, const Point& pt, int w, std::string_view name);
    std::string site_value(int site, const Point& pt, int w, std::string_view name);
    std::vector<std::string> derived_indices(const Point& pt, int w, std::string_view tag);
    std::string index_vector(const Point& pt, int d, int w);
    /// Whether a strided, gathered or indirect site's offset, less its innermost term, is the same in every
    /// lane (detail::lane_uniform_values, shared with the GPU's vector plan): a gather whose position is
    /// uniform then reads a run of its operand's row (an embedding lookup) rather than one address per lane.
    /// With `external` values (a reduction's rows) every such site counts as moving.
    bool row_parts_uniform(int site);
    /// Gather q's position from its index value `v` (w lanes): normalized, then checked (an out-of-range
    /// lane reads position 0 and the first one is recorded through loom_gather_error) or clamped.
    std::string gather_position(int q, const std::string& v, DType index_dtype, int w, std::string_view name,
                                std::string_view comment);

    Builder& b_;
    const detail::PwGraph& g_;
    const PointwisePlan& plan_;
    std::string tag_;
    std::map<std::tuple<int, int, int>, std::string> fields_;
    std::map<int, std::string> positions_;        // per gather, its position in the current evaluate()
    std::optional<detail::LaneUniform> uniform_;  // filled on the first row_parts_uniform()
};

}  // namespace loom::codegen::llvm_ir
