// Loading the host back end module (host_internal.hpp): LOOM_CPU_BACKEND picks the back end; the module is
// dlopen'ed from LOOM_LLVM_MODULE, else by name (the executable's run path: the build tree or the installed
// package's lib directory, LD_LIBRARY_PATH), else beside the executable; every failure is recorded, and the
// explain log and host_backend_info() say why host work then runs on the reference.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "host_internal.hpp"
#include "host_pool.hpp"

namespace loom::host {

namespace {

// Loads and initializes the module at `path` (a file name alone is searched by dlopen); on failure appends
// why to `why` and returns null.
const loom_host_backend_v1* try_load(const std::string& path, std::string& why, std::string& loaded_from) {
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* e = ::dlerror();
        why += fmt::format("{}{}", why.empty() ? "" : "; ", e ? e : path.c_str());
        return nullptr;
    }
    auto fn = reinterpret_cast<loom_llvm_backend_v1_fn>(::dlsym(h, "loom_llvm_backend_v1"));
    if (!fn) {
        why += fmt::format("{}{} has no symbol loom_llvm_backend_v1", why.empty() ? "" : "; ", path);
        ::dlclose(h);
        return nullptr;
    }
    const loom_host_backend_v1* t = fn();
    if (!t || t->abi != LOOM_HOST_BACKEND_ABI) {
        why += fmt::format("{}{} has interface version {}, not {}", why.empty() ? "" : "; ", path,
                           t ? t->abi : 0u, LOOM_HOST_BACKEND_ABI);
        ::dlclose(h);
        return nullptr;
    }
    const auto& syms = scalar_library();
    loom_hb_buffer err{};
    if (t->init(syms.data(), syms.size(), &err) != 0) {
        why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", path,
                           err.data ? err.data : "initialization failed");
        t->free_buffer(&err);
        return nullptr;  // the module stays loaded: a half-initialized LLVM is not safe to unload
    }
    Dl_info info{};
    if (::dladdr(reinterpret_cast<const void*>(fn), &info) != 0 && info.dli_fname)
        loaded_from = info.dli_fname;
    else
        loaded_from = path;
    return t;
}

// The size of the host's last-level cache: the cache of the highest level that sysfs lists for cpu0 (Linux:
// /sys/devices/system/cpu/cpu0/cache/index*/{level,size}, sizes as "32768K"), else sysconf's level-3 size,
// else 32 MiB. (sysfs first: glibc's sysconf decodes CPUID, which virtual machines report loosely.)
std::int64_t last_level_cache_bytes() {
    std::int64_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 16; ++i) {
        const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
        std::ifstream level(dir + "level"), size(dir + "size");
        int lv = 0;
        std::int64_t n = 0;
        std::string unit;
        if (!(level >> lv) || !(size >> n)) continue;
        size >> unit;
        if (unit == "K")
            n <<= 10;
        else if (unit == "M")
            n <<= 20;
        if (lv > best_level || (lv == best_level && n > best)) best_level = lv, best = n;
    }
    if (best > 0) return best;
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (const long l3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE); l3 > 0) return l3;
#endif
    return std::int64_t{32} << 20;
}

std::string executable_dir() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : exe.parent_path().string();
}

Backend load() {
    Backend b;
    b.info.threads = pool_threads();
    const char* choice = std::getenv("LOOM_CPU_BACKEND");
    const std::string_view c = choice ? choice : "";
    if (c == "reference") {
        b.info.reason = "LOOM_CPU_BACKEND=reference";
    } else {
        if (!c.empty() && c != "llvm")
            fmt::print(stderr,
                       "loom: warning: LOOM_CPU_BACKEND={} is neither llvm nor reference; using llvm\n", c);
        std::string why, from;
        const loom_host_backend_v1* t = nullptr;
        if (const char* m = std::getenv("LOOM_LLVM_MODULE"); m && *m) {
            t = try_load(m, why, from);
        } else {
            std::vector<std::string> candidates{"libloom_llvm.so"};
            if (const std::string d = executable_dir(); !d.empty()) {
                candidates.push_back(d + "/libloom_llvm.so");
                candidates.push_back(d + "/../lib/libloom_llvm.so");
            }
#ifdef LOOM_LLVM_MODULE_BUILD_PATH
            candidates.push_back(LOOM_LLVM_MODULE_BUILD_PATH);
#endif
            for (const auto& p : candidates) {
                std::string one;
                t = try_load(p, one, from);
                if (t) break;
                if (why.find(one) == std::string::npos)
                    why += fmt::format("{}{}", why.empty() ? "" : "; ", one);
            }
        }
        if (t) {
            b.table = t;
            b.target.triple = t->triple();
            b.target.cpu = t->cpu();
            b.target.features = t->features();
            b.target.vector_bits = t->vector_bits();
            b.target.f16c = t->has_f16c() != 0;
            b.target.cache_bytes = last_level_cache_bytes();
            b.info.llvm = true;
            b.info.module = from;
            b.info.llvm_version = t->llvm_version();
            b.info.triple = b.target.triple;
            b.info.cpu = b.target.cpu;
            b.info.features = b.target.features;
            b.info.vector_bits = b.target.vector_bits;
            b.info.cache_bytes = b.target.cache_bytes;
        } else {
            b.info.reason = fmt::format("the LLVM back end module could not be loaded ({})", why);
        }
    }
    if (!b.table) b.target = codegen::HostTarget::avx512();
    return b;
}

}  // namespace

const Backend& backend() {
    static const Backend b = load();  // thread-safe initialization
    return b;
}

codegen::HostTarget planning_target() {
    return backend().target;
}

}  // namespace loom::host

namespace loom {

const HostBackendInfo& host_backend_info() {
    return host::backend().info;
}

}  // namespace loom
