// NVTX ranges (nvtx.hpp) through the CUDA toolkit's header-only NVTX3: nothing is linked; the header loads
// a profiler's injection library (NVTX_INJECTION64_PATH, which nsys sets) on the first call, else every
// call returns at once.
#include "nvtx.hpp"

#include <nvtx3/nvToolsExt.h>

#include "loom/ir/env.hpp"

namespace loom::detail {

namespace {

nvtxDomainHandle_t domain() {
    static const nvtxDomainHandle_t d = nvtxDomainCreateA("Loom");
    return d;
}

}  // namespace

bool nvtx_enabled() noexcept {
    static const bool on = env_switch("LOOM_NVTX", false);
    return on;
}

void nvtx_push(const std::string& name) noexcept {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name.c_str();
    nvtxDomainRangePushEx(domain(), &a);
}

void nvtx_pop() noexcept {
    nvtxDomainRangePop(domain());
}

}  // namespace loom::detail
