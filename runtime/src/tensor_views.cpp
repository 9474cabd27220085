// Views of tensors: slice, permute, transpose, reshape without a copy, squeeze, unsqueeze, view as another
// dtype; the overlap test for writes; to_vector's conversion.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/view.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom {

namespace {

std::string describe(const Tensor& t) {
    return fmt::format("{} {} (strides [{}])", to_string(t.shape()), name(t.dtype()),
                       fmt::join(t.strides(), ", "));
}

/// An IR stand-in for `t`'s shape: the view constructors check the arguments and give the result's shape
/// and attributes exactly as for a lazy Array.
ir::NodePtr stand_in(const Tensor& t) {
    return ir::input(t.dtype(), t.shape(), "tensor");
}

// A view's error, naming the caller's file:line.
[[noreturn]] void fail_at(const std::source_location& loc, const std::string& message) {
    throw Error(fmt::format("{} ({})", message, short_location(loc)));
}

}  // namespace

Tensor Tensor::slice(const std::vector<ir::SliceSpec>& spec, std::source_location loc) const {
    const ir::NodePtr v = ir::slice(stand_in(*this), spec, loc);
    if (v->op() != ir::Op::Slice) return *this;  // the whole tensor
    std::int64_t off = offset();
    Strides st(strides());
    for (std::size_t k = 0; k < st.size(); ++k) {
        const std::int64_t start = v->ints()[2 * k], step = v->ints()[2 * k + 1];
        if (v->shape()[k] > 0) off += start * st[k];
        st[k] *= step;
    }
    return as_strided(v->shape(), st, off);
}

Tensor Tensor::permute(const std::vector<std::int64_t>& perm, std::source_location loc) const {
    const ir::NodePtr v = ir::permute(stand_in(*this), perm, loc);
    if (v->op() != ir::Op::Permute) return *this;
    Strides st(strides().size());
    for (std::size_t k = 0; k < st.size(); ++k) st[k] = strides()[static_cast<std::size_t>(v->ints()[k])];
    return as_strided(v->shape(), st, offset());
}

Tensor Tensor::transposed(std::source_location loc) const {
    if (rank() < 2)
        fail_at(loc, fmt::format("transposed(): a tensor of rank {} ({}) has no two axes to swap", rank(),
                                 describe(*this)));
    std::vector<std::int64_t> perm(static_cast<std::size_t>(rank()));
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return permute(perm, loc);
}

Tensor Tensor::reshape(Shape shape, std::source_location loc) const {
    shape =
        ir::reshape(stand_in(*this), std::move(shape), loc)->shape();  // checks the element count, infers -1
    if (shape == this->shape()) return *this;
    // Strides without a copy (NumPy's attempt_nocopy_reshape, ir::reshape_strides).
    const std::optional<Strides> nst = ir::reshape_strides(this->shape(), strides(), shape);
    if (!nst)
        fail_at(loc,
                fmt::format("reshape(): {} cannot be viewed as {} without a copy (its dimensions are not "
                            "laid out one after the other); reshape a lazy Array instead, which copies",
                            describe(*this), to_string(shape)));
    return as_strided(shape, *nst, offset());
}

Tensor Tensor::squeeze() const {
    Shape s;
    Strides st;
    for (std::size_t k = 0; k < shape().size(); ++k)
        if (shape()[k] != 1) {
            s.push_back(shape()[k]);
            st.push_back(strides()[k]);
        }
    return as_strided(s, st, offset());
}

Tensor Tensor::squeeze(std::int64_t axis, std::source_location loc) const {
    const int a = normalize_axis(axis, rank());
    if (a < 0) fail_at(loc, fmt::format("squeeze(): axis {} is out of range for {}", axis, describe(*this)));
    if (shape()[static_cast<std::size_t>(a)] != 1)
        fail_at(loc, fmt::format("squeeze(): axis {} of {} has extent {}, not 1", axis, describe(*this),
                                 shape()[static_cast<std::size_t>(a)]));
    Shape s(shape());
    Strides st(strides());
    s.erase(s.begin() + a);
    st.erase(st.begin() + a);
    return as_strided(s, st, offset());
}

Tensor Tensor::unsqueeze(std::int64_t axis, std::source_location loc) const {
    const int a = normalize_axis(axis, rank() + 1);
    if (a < 0)
        fail_at(loc, fmt::format("unsqueeze(): axis {} is out of range for {} (0 to {})", axis,
                                 describe(*this), rank()));
    if (rank() + 1 > kMaxRank)
        fail_at(loc,
                fmt::format("unsqueeze(): {} has the maximum rank {} already", describe(*this), kMaxRank));
    Shape s(shape());
    Strides st(strides());
    const std::size_t k = static_cast<std::size_t>(a);
    s.insert(s.begin() + a, 1);
    st.insert(st.begin() + a, k < strides().size() ? strides()[k] * shape()[k] : 1);
    return as_strided(s, st, offset());
}

Tensor Tensor::view(DType to, std::source_location loc) const {
    const std::size_t from_size = itemsize(dtype()), to_size = itemsize(to);
    const auto misaligned = [&](std::size_t bytes) {
        return reinterpret_cast<std::uintptr_t>(data()) % bytes != 0;
    };
    if (from_size == to_size) {
        auto impl = std::make_shared<Impl>(*impl_);
        impl->dtype = to;
        impl->input_node.reset();
        return Tensor(std::move(impl));
    }
    if (rank() == 0 || strides().back() != 1 || shape().back() == 0)
        fail_at(loc,
                fmt::format("view(): {} as {} changes the element size, which needs a contiguous last axis",
                            describe(*this), name(to)));
    const std::size_t row_bytes = static_cast<std::size_t>(shape().back()) * from_size;
    const std::size_t off_bytes = static_cast<std::size_t>(offset()) * from_size;
    if (row_bytes % to_size != 0 || off_bytes % to_size != 0 || misaligned(to_size))
        fail_at(loc,
                fmt::format(
                    "view(): {} as {}: the last axis ({} bytes) and element 0 (byte {} of its storage) must "
                    "divide by {} bytes",
                    describe(*this), name(to), row_bytes, off_bytes, to_size));
    for (std::size_t k = 0; k + 1 < strides().size(); ++k)
        if ((static_cast<std::size_t>(strides()[k]) * from_size) % to_size != 0)
            fail_at(loc,
                    fmt::format(
                        "view(): {} as {}: the stride of axis {} is not a whole number of {}-byte elements",
                        describe(*this), name(to), k, to_size));
    auto impl = std::make_shared<Impl>();
    impl->storage = impl_->storage;
    impl->dtype = to;
    impl->shape = shape();
    impl->shape.back() = static_cast<std::int64_t>(row_bytes / to_size);
    impl->strides = strides();
    for (std::size_t k = 0; k + 1 < impl->strides.size(); ++k)
        impl->strides[k] =
            static_cast<std::int64_t>(static_cast<std::size_t>(strides()[k]) * from_size / to_size);
    impl->offset = static_cast<std::int64_t>(off_bytes / to_size);
    return Tensor(std::move(impl));
}

bool Tensor::is_non_overlapping() const {
    return loom::is_non_overlapping(shape(), strides());
}

void Tensor::copy_converted(void* dst, DType to) const {
    const Tensor h = reference::cast(*this, to);  // a contiguous host copy, converted as a cast converts
    if (numel() > 0) std::memcpy(dst, h.data(), h.nbytes());
}

}  // namespace loom
