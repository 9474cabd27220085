// The slots of a run of a plan, shared by the GPU's and the host's run loops (run_slots.hpp).
#include "run_slots.hpp"

namespace loom::detail {

const void* address_of(const Tensor::Impl& t) {
    return static_cast<const char*>(t.storage->ptr) + t.offset * static_cast<std::int64_t>(itemsize(t.dtype));
}

namespace {

// The bytes [lo, hi) that the elements of `t` reach (lo == hi for a view with no element).
std::pair<std::uintptr_t, std::uintptr_t> byte_range(const Tensor::Impl& t) {
    const auto base = reinterpret_cast<std::uintptr_t>(address_of(t));
    std::int64_t lo = 0, hi = 0;  // element offsets from element 0
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
        if (t.shape[d] == 0) return {base, base};
        const std::int64_t reach = (t.shape[d] - 1) * t.strides[d];
        (reach < 0 ? lo : hi) += reach;
    }
    const auto item = static_cast<std::int64_t>(itemsize(t.dtype));
    return {base + static_cast<std::uintptr_t>(lo * item),
            base + static_cast<std::uintptr_t>((hi + 1) * item)};
}

}  // namespace

bool may_share_memory(const Tensor::Impl& a, const Tensor::Impl& b) {
    if (!a.storage || !b.storage || !a.storage->ptr || !b.storage->ptr) return false;
    const auto [alo, ahi] = byte_range(a);
    const auto [blo, bhi] = byte_range(b);
    return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

Tensor temporary_like(const Tensor& user, Device device) {
    const auto make = [&](const Shape& shape) {
        return device.is_cuda() ? Tensor::empty(shape, user.dtype(), device)
                                : Tensor::host(shape, user.dtype());
    };
    if (user.is_contiguous() || user.numel() == 0) return make(user.shape());
    std::int64_t lo = 0, hi = 0;
    for (std::size_t k = 0; k < user.shape().size(); ++k)
        (user.strides()[k] < 0 ? lo : hi) += user.strides()[k] * (user.shape()[k] - 1);
    const Tensor block = make({hi - lo + 1});
    return block.as_strided(user.shape(), user.strides(), -lo);
}

void* RunSlots::address(const codegen::Slot& s) const {
    const std::size_t i = static_cast<std::size_t>(s.index);
    switch (s.kind) {
        case codegen::Slot::Kind::Source:
            return const_cast<void*>(address_of(*sources[i]));
        case codegen::Slot::Kind::Temp:
            return temp_base + temps[i].offset;
        case codegen::Slot::Kind::Root:
            return roots[i];
        case codegen::Slot::Kind::Index:
            return nullptr;  // an iota: computed in the kernel
    }
    return nullptr;
}

}  // namespace loom::detail
