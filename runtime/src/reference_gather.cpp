// The CPU reference of gathers (ir::Op::Gather; docs/semantics.md, "Gathers"): each result element, in
// row-major order, reads its index, checks or clamps it, and copies the element it names.
#include <cstring>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "reference_internal.hpp"

namespace loom::reference::detail {

Tensor eval_gather_node(const ir::Node& n, const Tensor& x, const Tensor& idx, DType out) {
    const int axis = static_cast<int>(n.ints().at(0));
    const auto mode = static_cast<ir::IndexMode>(n.ints().at(1));
    const int r = n.rank();
    const std::int64_t extent = x.shape()[static_cast<std::size_t>(axis)];
    Tensor result = Tensor::host(n.shape(), out);
    const std::int64_t total = n.numel();
    if (total == 0) return result;
    const std::size_t esz = itemsize(out);
    if (x.dtype() != out)
        throw InternalError(fmt::format("reference: gather of {} into {}", name(x.dtype()), name(out)));
    const auto* xb = static_cast<const char*>(x.data());
    const auto* ib = static_cast<const char*>(idx.data());
    const bool wide = idx.dtype() == DType::Int64;
    auto* dst = static_cast<char*>(result.data());
    std::int64_t coord[kMaxRank] = {};
    for (std::int64_t e = 0; e < total; ++e) {
        std::int64_t ioff = 0, xoff = 0;
        for (int d = 0; d < r; ++d) {
            ioff += coord[d] * idx.strides()[static_cast<std::size_t>(d)];
            if (d != axis) xoff += coord[d] * x.strides()[static_cast<std::size_t>(d)];
        }
        std::int64_t v = 0;
        if (wide) {
            std::memcpy(&v, ib + ioff * 8, 8);
        } else {
            std::int32_t w = 0;
            std::memcpy(&w, ib + ioff * 4, 4);
            v = w;
        }
        const std::int64_t k = ir::gather_index(v, extent, mode);
        if (k < 0) throw Error(ir::gather_error_message(n, v));
        xoff += k * x.strides()[static_cast<std::size_t>(axis)];
        std::memcpy(dst + static_cast<std::size_t>(e) * esz, xb + xoff * static_cast<std::int64_t>(esz), esz);
        for (int d = r - 1; d >= 0; --d) {
            if (++coord[d] < n.shape()[static_cast<std::size_t>(d)]) break;
            coord[d] = 0;
        }
    }
    return result;
}

}  // namespace loom::reference::detail
