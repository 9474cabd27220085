// Tensor maps for Hopper's bulk tensor copies (tensor_map.hpp): cuTensorMapEncodeTiled reached through the
// runtime's driver entry point (Loom never links libcuda), and a cache of encoded maps, so that a traced call
// whose buffers and shapes repeat encodes nothing.
#include "tensor_map.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cstring>
#include <list>
#include <mutex>
#include <unordered_map>

#include "loom/ir/hash.hpp"
#include "loom/runtime/errors.hpp"

namespace loom::detail {

namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*,
                                 CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                 CUtensorMapFloatOOBfill);

// The driver's cuTensorMapEncodeTiled (CUDA 12.0's signature), resolved once.
EncodeTiled encode_tiled() {
    static const EncodeTiled fn = [] {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
        LOOM_CUDA_CHECK(
            cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found));
        if (found != cudaDriverEntryPointSuccess || f == nullptr)
            throw Error(fmt::format("tensor maps: the driver has no cuTensorMapEncodeTiled (query result {})",
                                    static_cast<int>(found)));
        return reinterpret_cast<EncodeTiled>(f);
    }();
    return fn;
}

std::uint64_t key_of(const codegen::TensorMapSpec& s) {
    Hasher h;
    h.add(static_cast<std::uint64_t>(s.dtype));
    h.add(static_cast<std::uint64_t>(s.rank));
    for (int d = 0; d < 5; ++d) h.add(s.dims[d]), h.add(static_cast<std::uint64_t>(s.box[d]));
    for (int d = 0; d < 4; ++d) h.add(s.strides[d]);
    h.add(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(s.address)));
    return h.digest();
}

struct Entry {
    codegen::TensorMapSpec spec;
    CUtensorMap map;
};

// The most recently used maps, keyed by their spec (the address included): a bounded list and an index.
constexpr std::size_t kCachedMaps = 1024;
std::mutex g_mu;
std::list<Entry> g_lru;
std::unordered_map<std::uint64_t, std::list<Entry>::iterator> g_index;
std::size_t g_encodes = 0;

}  // namespace

void encode_tensor_map(const codegen::TensorMapSpec& spec,
                       std::span<std::byte, codegen::kTensorMapBytes> out) {
    static_assert(sizeof(CUtensorMap) == codegen::kTensorMapBytes, "CUtensorMap is not 128 bytes");
    const std::uint64_t key = key_of(spec);
    {
        std::lock_guard lock(g_mu);
        if (auto it = g_index.find(key); it != g_index.end() && it->second->spec == spec) {
            g_lru.splice(g_lru.begin(), g_lru, it->second);
            std::memcpy(out.data(), &it->second->map, sizeof(CUtensorMap));
            return;
        }
    }
    if (spec.dtype != DType::BFloat16 && spec.dtype != DType::Float16 && spec.dtype != DType::Float32)
        throw InternalError(
            fmt::format("encode_tensor_map(): {} maps only 16-bit and float32 elements", spec.to_string()));
    if (spec.rank < 2 || spec.rank > 5)
        throw InternalError(
            fmt::format("encode_tensor_map(): {} has rank {}, not 2 to 5", spec.to_string(), spec.rank));
    Entry e{spec, {}};
    cuuint64_t dims[5], strides[4];
    cuuint32_t box[5], element_strides[5];
    for (int d = 0; d < 5; ++d) dims[d] = spec.dims[d], box[d] = spec.box[d], element_strides[d] = 1;
    for (int d = 0; d < 4; ++d) strides[d] = spec.strides[d];
    const CUresult r = encode_tiled()(
        &e.map,
        spec.dtype == DType::BFloat16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
        : spec.dtype == DType::Float16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                       : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,  // copied as is: see semantics.md
        static_cast<cuuint32_t>(spec.rank), const_cast<void*>(spec.address), dims, strides, box,
        element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw Error(fmt::format("tensor maps: cuTensorMapEncodeTiled({}) failed with CUresult {}",
                                spec.to_string(), static_cast<int>(r)));
    std::memcpy(out.data(), &e.map, sizeof(CUtensorMap));
    std::lock_guard lock(g_mu);
    ++g_encodes;
    if (auto it = g_index.find(key); it != g_index.end()) {  // a colliding key or a racing encoder: replace
        g_lru.erase(it->second);
        g_index.erase(it);
    }
    g_lru.push_front(std::move(e));
    g_index[key] = g_lru.begin();
    if (g_lru.size() > kCachedMaps) {
        g_index.erase(key_of(g_lru.back().spec));
        g_lru.pop_back();
    }
}

std::size_t tensor_map_encodes() {
    std::lock_guard lock(g_mu);
    return g_encodes;
}

}  // namespace loom::detail
