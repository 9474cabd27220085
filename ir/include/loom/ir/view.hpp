// Chains of views (broadcast_to, permute, slice, reshape) composed into one strided view of the node below
// them: how a kernel reads a view in place, without a copy.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "loom/ir/node.hpp"
#include "loom/ir/shape.hpp"

namespace loom::ir {

/// The strides of `from` (elements, with `strides`) viewed as `to` without a copy (NumPy's
/// attempt_nocopy_reshape): the dimensions of more than one element are walked in groups of equal element
/// counts; each group of `from` must be laid out as one run (stride[k] = stride[k+1] * extent[k+1]), and its
/// new dimensions take the run's strides. Empty when no strides exist. Any strides do for no elements.
std::optional<Strides> reshape_strides(const Shape& from, const Strides& strides, const Shape& to);

/// A chain of views composed into one strided view of `base`: element i of the top view is element offset +
/// sum(i_d strides_d) of base's layout.
struct StridedView {
    const Node* base = nullptr;
    std::int64_t offset = 0;
    Strides strides;
};

/// Composes the views from `x` down to the first node that is not a view, or to `stop` when the chain meets
/// it first (`base`, laid out with `base_strides`); empty when a reshape among them has no strides for that
/// layout (reshape_strides). A node that is not a view is its own base.
std::optional<StridedView> compose_views(const Node& x, const Strides& base_strides,
                                         const Node* stop = nullptr);

/// The node below `x`'s chain of views.
const Node& view_base(const Node& x);

/// `x` as a strided view of the Input below its views, laid out with `strides_of(input)`: how a product's
/// kernel reads an operand in place. Empty when the node below is not an Input (a computed operand) or a
/// reshape has no strides for that layout.
std::optional<StridedView> view_of_input(const Node& x,
                                         const std::function<Strides(const Node&)>& strides_of);

}  // namespace loom::ir
