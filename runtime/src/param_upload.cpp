// The source of the parameter upload kernel (param_buffer.hpp) and its chunk size: text and arithmetic, in
// both builds (a host-only build has the text without NVRTC to compile it).
#include <fmt/format.h>

#include "param_buffer.hpp"

namespace loom::gpu {

std::string param_upload_source(std::size_t words) {
    return fmt::format(
        "// ---- Loom parameter upload: copies a kernel's parameters beyond the parameter limit into device\n"
        "// memory, {} 8-byte words per launch (runtime/src/param_buffer.cpp) ----\n"
        "struct loom_param_chunk {{\n"
        "    unsigned long long* dst;      // where this chunk goes\n"
        "    unsigned long long words;     // words of `data` to copy\n"
        "    unsigned long long data[{}];\n"
        "}};\n"
        "extern \"C\" __global__ void __launch_bounds__({}) {}(const __grid_constant__ loom_param_chunk c) "
        "{{\n"
        "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
        "    // Launched like every Loom kernel (programmatic dependent launch): the stream's previous "
        "kernel\n"
        "    // complete before the first store, since the buffer may be memory that kernel freed.\n"
        "    asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
        "    asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
        "#endif\n"
        "    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < "
        "c.words;\n"
        "         i += (unsigned long long)gridDim.x * blockDim.x)\n"
        "        c.dst[i] = c.data[i];\n"
        "}}\n",
        words, words, kUploadBlock, kUploadName);
}

std::size_t param_upload_words(std::size_t param_limit_bytes) {
    return (param_limit_bytes - kUploadHeaderBytes) / 8;
}

}  // namespace loom::gpu
