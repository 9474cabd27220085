// IR nodes: immutable, interned (building an existing node returns it), reference counted.
//
// A node is plain data: op, dtype, shape, operands, attributes and the source location of the DSL call
// that made it. Equality is identity: two nodes with the same op, dtype, shape, attributes and operands
// are the same object, so common subexpressions are shared by construction. The intern table holds no
// reference: a node lives exactly as long as some Array, graph or consumer holds it, and destruction is
// iterative, so chains of any depth free without recursion.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "loom/ir/dtype.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/shape.hpp"

namespace loom::ir {

class Node;
using NodePtr = std::shared_ptr<const Node>;

/// A scalar value as the IR stores it: already converted to the node's dtype (floats as the exact double
/// of the dtype's value, integers and bool as int64; uint8 fits). Compared and hashed by bits, so -0.0 and
/// +0.0 differ and NaN equals itself.
struct ScalarValue {
    double f = 0.0;
    std::int64_t i = 0;
    bool is_float = false;

    static ScalarValue of_float(double v) { return {v, 0, true}; }
    static ScalarValue of_int(std::int64_t v) { return {0.0, v, false}; }
    double as_double() const { return is_float ? f : static_cast<double>(i); }
    bool operator==(const ScalarValue& o) const;
};

/// Everything that identifies a node except its operands' identity; the intern key.
struct NodeDesc {
    Op op{};
    DType dtype{};
    Shape shape;
    std::vector<NodePtr> operands;
    /// Op-specific integers: Input: {input id}; Permute: the permutation; Slice: {start, step} per axis;
    /// reductions: the reduced axes, sorted; Reshape/BroadcastTo: empty (the shape is the node's shape).
    std::vector<std::int64_t> ints;
    ScalarValue value;      // Scalar and Constant
    bool keepdims = false;  // reductions
    std::string label;      // Input: the user's name for printing (not part of identity; ids are unique)
    /// Input: what the input is bound to (the runtime stores its tensor here, which keeps the tensor's
    /// memory alive as long as any graph uses it). Opaque to the IR and not part of identity.
    std::shared_ptr<const void> payload;
    std::source_location loc;
};

class Node {
  public:
    Op op() const { return d_.op; }
    DType dtype() const { return d_.dtype; }
    const Shape& shape() const { return d_.shape; }
    int rank() const { return static_cast<int>(d_.shape.size()); }
    std::int64_t numel() const { return loom::numel(d_.shape); }
    const std::vector<NodePtr>& operands() const { return d_.operands; }
    const Node* operand(int k) const { return d_.operands[static_cast<std::size_t>(k)].get(); }
    const NodePtr& operand_ptr(int k) const { return d_.operands[static_cast<std::size_t>(k)]; }
    const std::vector<std::int64_t>& ints() const { return d_.ints; }
    const ScalarValue& value() const { return d_.value; }
    bool keepdims() const { return d_.keepdims; }
    const std::string& label() const { return d_.label; }
    const std::shared_ptr<const void>& payload() const { return d_.payload; }
    const std::source_location& loc() const { return d_.loc; }
    /// Structural hash: op, dtype, shape, attributes and the operands' structural hashes. Stable across
    /// runs and processes for the same graph (inputs hash by their id, which counts from 1 per process).
    std::uint64_t hash() const { return hash_; }
    /// Unique per live node in this process, increasing in creation order; never reused.
    std::uint64_t id() const { return id_; }
    /// Input id (Input nodes only).
    std::uint64_t input_id() const { return static_cast<std::uint64_t>(d_.ints.at(0)); }
    /// An upper bound of the number of nodes reachable from this one (itself included): 1 plus the bounds
    /// of its distinct operands, saturating at 2^32 - 1. Exact for trees; a subexpression shared by several
    /// nodes counts once per use. Computed once at construction (O(operands)); the DSL's lazy graph size
    /// limit reads it.
    std::uint32_t size_bound() const { return size_bound_; }
    /// True when an Input reachable from this node has no payload (a placeholder, e.g. while tracing).
    bool reads_placeholder() const { return reads_placeholder_; }

    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

  private:
    friend NodePtr intern(NodeDesc desc);
    friend struct NodeDeleter;
    explicit Node(NodeDesc d) : d_(std::move(d)) {}
    ~Node() = default;

    NodeDesc d_;
    std::uint64_t hash_ = 0;
    std::uint64_t id_ = 0;
    std::uint32_t size_bound_ = 1;
    bool reads_placeholder_ = false;
};

/// Returns the unique node equal to `desc`, creating it if none is alive. Thread-safe. Performs no
/// checking or folding: use the constructors of build.hpp, which do both.
NodePtr intern(NodeDesc desc);

/// Number of live interned nodes (for tests: the table must not keep nodes alive).
std::size_t live_node_count();

/// A new, process-unique input id.
std::uint64_t next_input_id();

}  // namespace loom::ir
