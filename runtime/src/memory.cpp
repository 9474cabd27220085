// Memory: 64-byte aligned host allocation (transparent huge pages asked for large ones), release and copies
// between host buffers; device memory goes to memory_cuda.cpp (a host-only build's throws NoDeviceError).
#include "loom/runtime/memory.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "faults_internal.hpp"
#include "loom/runtime/errors.hpp"
#include "memory_internal.hpp"

namespace loom {

namespace {

constexpr std::size_t kHostAlignment = 64;  // bytes: a cache line, and a multiple of every vector width

// Host allocations of at least this many bytes ask the kernel for transparent huge pages, as NumPy does for
// its arrays (from 4 MiB). Where THP is "madvise" (Debian's default) large host tensors would otherwise be
// backed by 4 KiB pages: a TLB miss every 4 KiB of a stream, and the hardware prefetchers stop at each page.
constexpr std::size_t kHugePageAdviceBytes = std::size_t{4} << 20;

void advise_huge_pages(void* p, std::size_t bytes) {
#ifdef MADV_HUGEPAGE
    if (bytes < kHugePageAdviceBytes) return;
    const std::uintptr_t page = 4096, begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
    const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(p) + bytes) / page * page;
    if (end > begin)
        (void)::madvise(reinterpret_cast<void*>(begin), end - begin,
                        MADV_HUGEPAGE);  // advice only: errors ignored
#else
    (void)p;
    (void)bytes;
#endif
}

}  // namespace

std::string detail::human_bytes(std::size_t bytes) {
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        ++u;
    }
    return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

namespace memory {

void* allocate(Device device, std::size_t bytes) {
    if (!device.is_cuda()) {
        const std::size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
        const bool injected = detail::should_fail(testing::FaultSite::HostAllocation);
        // A size that rounds past SIZE_MAX wraps to a small number: such a request fails as out of memory.
        void* p = injected || rounded < bytes
                      ? nullptr
                      : std::aligned_alloc(kHostAlignment, rounded == 0 ? kHostAlignment : rounded);
        if (!p)
            throw OutOfMemory(
                bytes, fmt::format("out of memory: allocating {} bytes ({}) of host memory failed{}", bytes,
                                   detail::human_bytes(bytes),
                                   injected ? " (a fault injected by loom::testing::inject_fault)" : ""));
        advise_huge_pages(p, rounded);
        detail::note_host_allocation(1);
        return p;
    }
    return detail::allocate_device(device.index, bytes);
}

void release(Device device, void* ptr) noexcept {
    if (!ptr) return;
    if (!device.is_cuda()) {
        std::free(ptr);
        detail::note_host_allocation(-1);
        return;
    }
    detail::release_device(device.index, ptr);
}

void copy(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
    if (bytes == 0) return;
    if (!dst_device.is_cuda() && !src_device.is_cuda()) {
        std::memcpy(dst, src, bytes);
        return;
    }
    detail::copy_device(dst, dst_device, src, src_device, bytes);
}

Device pointer_device(const void* ptr) {
    return detail::device_of_pointer(ptr);
}

}  // namespace memory

}  // namespace loom
