// A small shared library that Python loads with ctypes to hand PyTorch CUDA tensors to Loom and back through
// DLPack (torch_roundtrip.py), and host memory without torch (ctypes_host.py). Each function takes and
// returns DLManagedTensor pointers (the contents of PyTorch's "dltensor" capsules) and a CUDA stream handle
// (PyTorch's current stream); errors come back as null with the message in loom_shim_error().
#include <cstdint>
#include <exception>
#include <loom/loom.hpp>
#include <string>

namespace {

std::string g_error;

cudaStream_t stream_of(std::uintptr_t handle) {
    return reinterpret_cast<cudaStream_t>(handle);
}

}  // namespace

extern "C" {

/// The message of the last failed call ("" after a success).
const char* loom_shim_error() {
    return g_error.c_str();
}

/// Doubles the tensor of `managed` in place with Loom (one kernel on Loom's current stream, after the work
/// on `stream`) and returns a new DLManagedTensor over the same memory, which `stream` may use once Loom's
/// kernel is done. Loom owns `managed` from here on (its deleter runs when Loom's handles go); null on error
/// (then the caller still owns it).
DLManagedTensor* loom_shim_double(DLManagedTensor* managed, std::uintptr_t stream) {
    try {
        g_error.clear();
        const loom::Tensor t = loom::from_dlpack(managed, stream_of(stream));
        loom::assign(t, loom::Array(t) * 2.0);
        return t.to_dlpack(stream_of(stream));
    } catch (const std::exception& e) {
        g_error = e.what();
        return nullptr;
    }
}

/// The same through DLPack 1.0's versioned tensor (a "dltensor_versioned" capsule's contents, from
/// `__dlpack__(max_version=(1, 0))`): doubles it in place and returns a versioned tensor over the same
/// memory.
loom::dlpack::ManagedTensorVersioned* loom_shim_double_versioned(
    loom::dlpack::ManagedTensorVersioned* managed, std::uintptr_t stream) {
    try {
        g_error.clear();
        const loom::Tensor t = loom::from_dlpack(managed, stream_of(stream));
        loom::assign(t, loom::Array(t) * 2.0);
        return loom::to_dlpack_versioned(t, stream_of(stream));
    } catch (const std::exception& e) {
        g_error = e.what();
        return nullptr;
    }
}

/// A new Loom tensor on CUDA device `device`: float32 values 0, 1, ..., n - 1 times 0.5, handed out through
/// DLPack with `stream` ordered after Loom's kernel.
DLManagedTensor* loom_shim_halves(std::int64_t n, int device, std::uintptr_t stream) {
    try {
        g_error.clear();
        loom::DeviceGuard guard(device);
        const loom::Tensor t =
            loom::arange(0, static_cast<double>(n), 1.0, loom::float32, loom::Device::cuda(device)) * 0.5;
        return t.to_dlpack(stream_of(stream));
    } catch (const std::exception& e) {
        g_error = e.what();
        return nullptr;
    }
}

}  // extern "C"
