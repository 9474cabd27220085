// DLPack interop: tensors of other libraries (PyTorch, CuPy, JAX, NumPy) as Loom tensors and Loom tensors
// handed to them, without a copy (docs/interop.md). Built on the header <dlpack/dlpack.h> of the system
// (Debian's libdlpack-dev: DLPack 0.6) or of any later release (1.x): the unversioned DLManagedTensor, which
// every release has. What a release lacks, Loom names here.
//
// Dtypes: bool, int8, uint8, int32, int64, float16, bfloat16 (kDLBfloat), float32 and float64, one lane
// each. Bool is kDLBool (code 6) from DLPack 0.8 on; DLPack 0.6 has no name for it, which Loom supplies: it
// exports and imports bool as code 6 with 8 bits whatever header it was built with, since the code's value
// is part of the ABI (PyTorch, CuPy and JAX read it as bool).
//
// Streams follow DLPack's convention: the consumer's stream waits for the producer's work, by an event, with
// no host synchronization.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <optional>
#include <source_location>

#include "loom/runtime/cuda_types.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom {

namespace dlpack {

/// The DLPack release of <dlpack/dlpack.h> as major * 100 + minor * 10: 60 for 0.6, 100 for 1.0.
#if defined(DLPACK_MAJOR_VERSION)
inline constexpr int kHeaderVersion = DLPACK_MAJOR_VERSION * 100 + DLPACK_MINOR_VERSION * 10;
#else
inline constexpr int kHeaderVersion = DLPACK_VERSION;
#endif

/// kDLBool's value (DLPack 0.8 and later; part of the ABI): what to_dlpack() exports bool as and
/// from_dlpack() takes as bool, with any header, also DLPack 0.6's, which does not name it.
inline constexpr std::uint8_t kBoolCode = 6;

/// Whether the header names the bool code itself (DLPack 0.8 and later); Loom uses kBoolCode either way.
inline constexpr bool kHeaderHasBool = kHeaderVersion >= 80;

/// DLPack 1.0's versioned managed tensor (a producer's `__dlpack__(max_version=(1, 0))` capsule
/// "dltensor_versioned"): the system header's when it has one (1.0 and later), else Loom's own declaration of
/// the same layout (version, manager_ctx, deleter, flags, dl_tensor), which the ABI fixes.
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
using Version = ::DLPackVersion;
using ManagedTensorVersioned = ::DLManagedTensorVersioned;
#else
struct Version {
    std::uint32_t major;
    std::uint32_t minor;
};
struct ManagedTensorVersioned {
    Version version;
    void* manager_ctx;
    void (*deleter)(ManagedTensorVersioned* self);
    std::uint64_t flags;
    DLTensor dl_tensor;
};
#endif
/// The flags of a versioned tensor (DLPack 1.0): the consumer must not write it; it is a copy made for
/// the exchange.
inline constexpr std::uint64_t kFlagReadOnly = 1ull << 0;
inline constexpr std::uint64_t kFlagIsCopied = 1ull << 1;
/// The versioned tensors Loom takes: major version 1 (any minor).
inline constexpr std::uint32_t kMajorVersion = 1;

/// The DLPack dtype Loom exports for `dtype` (one lane).
DLDataType dtype_to_dlpack(DType dtype);

/// The Loom dtype of a DLPack dtype, or none for one Loom has no dtype for (more than one lane, complex,
/// float8, opaque handles, other widths).
std::optional<DType> dtype_from_dlpack(DLDataType dtype);

}  // namespace dlpack

/// A Loom tensor over the memory of `managed` (a DLManagedTensor from PyTorch's torch.utils.dlpack.to_dlpack,
/// CuPy's toDlpack, JAX's jax.dlpack.to_dlpack, NumPy's __dlpack__, ...), without a copy. On success Loom
/// owns `managed`: its deleter is called exactly once, when the last Loom tensor (views included) over that
/// memory goes away; until then the producer keeps the memory alive. On error nothing is taken: the caller
/// still owns `managed` (and calls its deleter).
///
/// The shape and strides (in elements; null strides: contiguous row-major) are DLPack's; element 0 lies at
/// `data + byte_offset`. Negative and zero strides are views Loom reads as any other (a zero stride
/// broadcasts, so such a tensor cannot be written by assign()). Devices: kDLCPU and kDLCUDAHost (pinned)
/// give host tensors, kDLCUDA the CUDA device `device_id`, kDLCUDAManaged the device the pointer belongs to
/// (the host without a GPU).
///
/// Streams: with `producer_stream` (the stream on which the producer wrote the memory) the calling
/// thread's current Loom stream (loom::current_stream()) waits for the producer's work before anything Loom
/// issues next reads it (an event; for kDLCUDAHost memory the host waits for that stream; for kDLCPU memory
/// it is ignored). Without it Loom assumes
/// the producer has done that already, as Python's protocol does when the consumer passes its own stream to
/// `__dlpack__(stream=...)`: pass loom::current_stream() there.
///
/// Throws loom::Error naming from_dlpack(), the DLPack dtype or device and the caller's file:line for a null
/// `managed`, a null shape of a non-empty rank, a rank above 8, a negative extent, a dtype without a Loom
/// dtype (dlpack::dtype_from_dlpack), another device, a byte_offset that is not a multiple of the element
/// size, element 0 not aligned to the element size, a null data pointer to a non-empty tensor, or extents
/// and strides whose elements lie beyond a 64-bit byte count. loom::CudaError when a CUDA call of the stream
/// handshake fails, loom::NoDeviceError for it without a GPU.
Tensor from_dlpack(DLManagedTensor* managed, std::optional<cudaStream_t> producer_stream = std::nullopt,
                   std::source_location loc = std::source_location::current());

/// The same for DLPack 1.0's versioned tensor. Also refuses a major version other than 1 (naming it); a
/// read-only tensor (kFlagReadOnly) is taken, and writing into it (assign()) is the caller's responsibility,
/// as with PyTorch's from_dlpack.
Tensor from_dlpack(dlpack::ManagedTensorVersioned* managed,
                   std::optional<cudaStream_t> producer_stream = std::nullopt,
                   std::source_location loc = std::source_location::current());

/// `t` as DLPack 1.0's versioned tensor (version 1.0, flags 0), for a consumer that asks for one
/// (`__dlpack__(max_version=(1, 0))`): otherwise as Tensor::to_dlpack(), ownership, streams and errors
/// included (naming to_dlpack_versioned()).
dlpack::ManagedTensorVersioned* to_dlpack_versioned(
    const Tensor& t, std::optional<cudaStream_t> consumer_stream = std::nullopt,
    std::source_location loc = std::source_location::current());

}  // namespace loom
