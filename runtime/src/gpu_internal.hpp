// Internal: what the GPU path (gpu_run.cpp) and traced programs (program.cpp) share.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/pointwise_plan.hpp"
#include "loom/ir/node.hpp"
#include "loom/runtime/gpu_executor.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::gpu {

/// The tensor bound to an Input node (its payload).
const Tensor::Impl& bound_tensor(const ir::Node& input);
/// Layout of the tensor bound to an Input node (strides, dtype, 16-byte alignment of element 0); throws
/// loom::Error for a placeholder with no tensor bound.
codegen::InputLayout layout_of(const ir::Node& input);
/// Address of element 0 of a tensor.
const void* address_of(const Tensor::Impl& t);
/// Address of element 0 of the tensor bound to an Input node.
const void* address_of(const ir::Node& input);
/// Compiles `source` (through the disk cache) for `info`'s device under `options` (fast math, line info)
/// and loads its entry points, each declared with the parameter size `param_bytes` of the plan.
CompiledKernel load_kernel(codegen::KernelSource source, double codegen_ms, const codegen::DeviceInfo& info,
                           const Options& options, std::size_t param_bytes);

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

}  // namespace loom::gpu
