// What the GPU's and the host's run loops share (gpu_run.cpp, host_run.cpp), written once: which outputs go
// through a temporary because a source the plan reads shares their memory, the address of every slot (a
// source, a temporary in the plan's one block, a root's target), and each kernel's pointer arrays.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "loom/codegen/plan/schedule.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::detail {

// Up to N values on the stack, more on the heap: the pointer arrays of one launch.
template <class T, std::size_t N>
class SmallArray {
  public:
    explicit SmallArray(std::size_t n) : size_(n) {
        if (n > N) heap_.resize(n);
    }
    T& operator[](std::size_t i) { return data()[i]; }
    std::span<T> span() { return {data(), size_}; }
    std::span<T> span(std::size_t from, std::size_t count) { return {data() + from, count}; }

  private:
    T* data() { return size_ > N ? heap_.data() : stack_; }
    T stack_[N];
    std::vector<T> heap_;
    std::size_t size_;
};

/// Address of element 0 of a tensor.
const void* address_of(const Tensor::Impl& t);

/// Whether two views may share memory: their byte ranges (from the lowest to the highest byte an element of
/// each reaches) intersect. By address, not by storage: handles made separately over one buffer
/// (Tensor::view of a pointer, a DLPack import of Loom's own export, two imports of one producer's slices)
/// have storages of their own, and disjoint slices of one storage share nothing. Conservative: interleaved
/// views that share no element (x[0::2] and x[1::2]) count as sharing. A view with no element shares nothing.
bool may_share_memory(const Tensor::Impl& a, const Tensor::Impl& b);

/// A temporary with the layout of `user` on `device`: contiguous, or the same strides over a storage of the
/// view's span.
Tensor temporary_like(const Tensor& user, Device device);

/// Whether root `r`, written into `out`, must go through a temporary: a source the plan reads shares its
/// memory, and a kernel from the root's writer on reads that source, other than the writer itself reading it
/// in place (`in_place(k, s, r)`: kernel k reads source s only at the element it writes root r to, and the
/// source has the output's exact layout: each element is read before it is written, in one thread).
template <class Plan, class InPlace>
bool needs_temporary(const Plan& plan, std::span<const Tensor::Impl* const> sources, const Tensor& out,
                     std::size_t r, InPlace&& in_place) {
    const std::size_t n = plan.kernels.size();
    for (int s : plan.reads) {
        const Tensor::Impl& src = *sources[static_cast<std::size_t>(s)];
        if (!may_share_memory(src, *out.impl())) continue;
        std::size_t writer = n;
        for (std::size_t k = 0; k < n && writer == n; ++k)
            for (const codegen::Slot& w : plan.partition.kernels[k].writes)
                if (w.kind == codegen::Slot::Kind::Root && static_cast<std::size_t>(w.index) == r) writer = k;
        for (std::size_t k = writer; k < n; ++k) {
            bool reads = false;
            for (const codegen::Slot& in : plan.kernels[k].reads)
                reads = reads || (in.kind == codegen::Slot::Kind::Source && in.index == s);
            if (!reads) continue;
            const bool same_layout = address_of(src) == address_of(*out.impl()) &&
                                     itemsize(src.dtype) == itemsize(out.dtype()) &&
                                     src.strides == out.strides() && src.shape == out.shape();
            if (!(k == writer && same_layout && in_place(k, s, r))) return true;
        }
    }
    return false;
}

/// The slots of one run: the sources' tensors, each root's target and the temporary block.
struct RunSlots {
    std::span<const Tensor::Impl* const> sources;
    std::span<void* const> roots;
    char* temp_base = nullptr;
    std::span<const codegen::TempBuffer> temps;

    /// The address a slot names (null for an index the kernel computes).
    void* address(const codegen::Slot& s) const;
};

/// The pointers of kernel `k` of `plan` for one run: `ins` in the kernel's input order (its reads), `outs` in
/// its writes order; both sized by the caller.
template <class Plan>
codegen::KernelPointers kernel_pointers(const Plan& plan, std::size_t k, const RunSlots& slots,
                                        std::span<const void*> ins, std::span<void*> outs) {
    const auto& reads = plan.kernels[k].reads;
    const auto& writes = plan.partition.kernels[k].writes;
    for (std::size_t j = 0; j < reads.size(); ++j) ins[j] = slots.address(reads[j]);
    for (std::size_t j = 0; j < writes.size(); ++j) outs[j] = slots.address(writes[j]);
    return {ins, outs};
}

}  // namespace loom::detail
