// An NVTX injection library for tests: what a profiler such as Nsight Systems receives, printed. NVTX3 (the
// header-only library Loom's ranges use) loads the library that NVTX_INJECTION64_PATH names at the first NVTX
// call and lets it replace the entry points; this one prints each pushed range to stderr as "[nvtx] <name>",
// indented by its depth, and each created domain as "[nvtx] domain <name>". tests/nvtx/check_ranges.sh reads
// the lines.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>

namespace {

thread_local int depth = 0;

int push(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
    const char* name = a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "(not ASCII)";
    std::fprintf(stderr, "[nvtx] %*s%s\n", 2 * depth, "", name);
    ++depth;
    return depth - 1;
}

int pop(nvtxDomainHandle_t) {
    if (depth > 0) --depth;
    return depth;
}

nvtxDomainHandle_t create(const char* name) {
    std::fprintf(stderr, "[nvtx] domain %s\n", name ? name : "(null)");
    static int token;
    return reinterpret_cast<nvtxDomainHandle_t>(&token);
}

}  // namespace

extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
    const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
    NvtxFunctionTable table = nullptr;
    unsigned int size = 0;
    if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
    if (size <= NVTX_CBID_CORE2_DomainCreateA) return 0;
    *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&push);
    *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
    *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&create);
    return 1;
}
