// Disk cache keys (comment-stripped source, options, arch, versions) and NVRTC compilation through the
// process-wide disk cache.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include "cuda_internal.hpp"
#include "disk_cache_internal.hpp"
#include "loom/ir/env.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/dump.hpp"
#include "nvtx.hpp"
#include "stats_internal.hpp"

#ifndef LOOM_VERSION_STRING
#error "LOOM_VERSION_STRING (the project version) must be defined by the build"
#endif

namespace loom {

using namespace disk_cache_detail;

std::string strip_comments(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    auto trim_line_end = [&] {
        while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
    };
    std::size_t i = 0;
    while (i < s.size()) {
        const char c = s[i];
        if (c == '"' || c == '\'') {  // a literal: copied as is, escapes included
            out += c;
            ++i;
            while (i < s.size() && s[i] != c && s[i] != '\n') {
                if (s[i] == '\\' && i + 1 < s.size()) out += s[i++];
                out += s[i++];
            }
            if (i < s.size() && s[i] == c) out += s[i++];
        } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
            while (i < s.size() && s[i] != '\n') ++i;  // the newline stays
        } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
            const std::size_t end = s.find("*/", i + 2);
            const std::size_t stop = end == std::string_view::npos ? s.size() : end + 2;
            for (std::size_t k = i; k < stop; ++k)
                if (s[k] == '\n') {  // keep the line structure
                    trim_line_end();
                    out += '\n';
                }
            i = stop;
        } else if (c == '\n') {
            trim_line_end();
            out += c;
            ++i;
        } else {
            out += c;
            ++i;
        }
    }
    trim_line_end();
    return out;
}

std::string sha256_hex(std::string_view data) {
    return to_hex(sha256({data}));
}

DiskCacheKey make_disk_cache_key(std::string_view source, const std::vector<std::string>& options,
                                 bool is_ptx, int driver_version) {
    bool line_info = false;
    for (const auto& o : options)
        if (o == "-lineinfo" || o == "--generate-line-info" || o == "-G" || o == "--device-debug")
            line_info = true;
    const std::string body = line_info ? std::string(source) : strip_comments(source);
    std::string text = fmt::format(
        "loom kernel cache key\nformat {}\nloom {}\nnvrtc {}\nimage {}\ndriver {}\n", kFormatVersion,
        LOOM_VERSION_STRING, nvrtc::version(), is_ptx ? "ptx" : "cubin", is_ptx ? driver_version : 0);
    for (const auto& o : options) text += fmt::format("option {}\n", o);
    text += fmt::format("source {} bytes{}\n", body.size(), line_info ? " with comments" : "");
    text += body;
    DiskCacheKey key;
    key.digest = sha256_hex(text);
    key.text = std::move(text);
    return key;
}

namespace {

std::mutex g_mu;
std::unique_ptr<DiskCache> g_cache;
std::vector<std::unique_ptr<DiskCache>>
    g_retired;  // caches replaced by reset_disk_cache(): callers may hold them
std::uint64_t g_compiles = 0;
double g_compile_ms = 0;

// LOOM_CACHE_MAX_BYTES: a finite count of bytes, optionally with one K, M or G suffix and nothing after it;
// 0 is no cap. Anything else is warned about and the default used.
std::uint64_t parse_bytes(const char* s) {
    constexpr std::uint64_t kDefault = std::uint64_t{1} << 30;
    if (!s || !*s) return kDefault;
    char* end = nullptr;
    const double v = std::strtod(s, &end);
    double mul = 1;
    if (end != s && (*end == 'K' || *end == 'k'))
        mul = 1024.0, ++end;
    else if (end != s && (*end == 'M' || *end == 'm'))
        mul = 1024.0 * 1024, ++end;
    else if (end != s && (*end == 'G' || *end == 'g'))
        mul = 1024.0 * 1024 * 1024, ++end;
    const double bytes = v * mul;
    if (end == s || *end != '\0' || !(bytes >= 0) || bytes >= 0x1p64) {
        fmt::print(
            stderr,
            "loom: warning: LOOM_CACHE_MAX_BYTES={} is not a byte count (a number with an optional K, M "
            "or G suffix); using 1G\n",
            s);
        return kDefault;
    }
    return static_cast<std::uint64_t>(bytes);
}

std::filesystem::path cache_directory() {
    if (const char* d = std::getenv("LOOM_CACHE_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/')
        return std::filesystem::path(x) / "loom";
    if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "loom";
    return {};
}

bool dumping_cache() {
    return env_list_contains("LOOM_DUMP", "cache");
}

void print_summary() {
    const DiskCacheStats s = disk_cache_stats();
    fmt::print(stderr,
               "loom cache: {} hits, {} misses ({} rejected), {} stores ({} failed), {} evictions; "
               "{} NVRTC compiles in {:.1f} ms; lookups {:.2f} ms, stores {:.2f} ms\n",
               s.hits, s.misses, s.rejected, s.stores, s.store_failures, s.evictions, s.compiles,
               s.compile_ms, s.lookup_ms, s.store_ms);
}

}  // namespace

DiskCache& disk_cache() {
    std::lock_guard lock(g_mu);
    if (!g_cache) {
        const bool disabled = !env_switch("LOOM_DISK_CACHE", true);
        g_cache = std::make_unique<DiskCache>(disabled ? std::filesystem::path() : cache_directory(),
                                              parse_bytes(std::getenv("LOOM_CACHE_MAX_BYTES")), disabled);
        static bool registered = false;
        if (!registered && dumping_cache()) {
            registered = true;
            std::atexit(print_summary);
        }
    }
    return *g_cache;
}

void reset_disk_cache() {
    std::lock_guard lock(g_mu);
    if (g_cache) g_retired.push_back(std::move(g_cache));
    g_compiles = 0;
    g_compile_ms = 0;
}

DiskCacheStats disk_cache_stats() {
    DiskCacheStats s = disk_cache().stats();
    std::lock_guard lock(g_mu);
    s.compiles = g_compiles;
    s.compile_ms = g_compile_ms;
    return s;
}

CachedCompile compile_cached(std::string_view name, std::string_view source, const nvrtc::Options& options) {
    CachedCompile out;
    const std::vector<std::string> opts = nvrtc::option_list(options);
    const std::string arch = opts.front().substr(std::string_view("--gpu-architecture=").size());
    const bool is_ptx = arch.starts_with("compute_");
    DiskCache& cache = disk_cache();
    const bool dump = dumping_cache();
    std::optional<DiskCacheKey> key;
    const bool dump_ptx = env_list_contains("LOOM_DUMP", "ptx");  // every kernel is compiled to dump its PTX
    if (cache.enabled()) {
        key = make_disk_cache_key(source, opts, is_ptx, is_ptx ? detail::driver_version() : 0);
        if (!dump_ptx) {
            const detail::NvtxRange range([&] { return fmt::format("disk cache load {}", name); });
            const auto t0 = std::chrono::steady_clock::now();
            bool stored_ptx = false;
            if (auto image = cache.load(*key, &stored_ptx); image && stored_ptx == is_ptx) {
                out.lookup_ms =
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
                out.from_disk = true;
                out.result.binary = std::move(*image);
                out.result.is_ptx = is_ptx;
                out.result.arch = arch;
                out.result.options = opts;
                if (env_list_contains("LOOM_DUMP", "cuda")) dump::write(std::string(name) + ".cu", source);
                if (dump)
                    fmt::print(stderr, "loom cache: hit {} {} ({} bytes, {:.3f} ms)\n", name,
                               key->digest.substr(0, 16), out.result.binary.size(), out.lookup_ms);
                return out;
            }
            out.lookup_ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        }
    }
    out.result = nvrtc::compile(name, source, options);
    {
        std::lock_guard lock(g_mu);
        ++g_compiles;
        g_compile_ms += out.result.compile_ms;
    }
    detail::register_stats_dump();
    if (key) {
        const bool stored = cache.store(
            *key, std::string_view(out.result.binary.data(), out.result.binary.size()), out.result.is_ptx);
        if (dump)
            fmt::print(stderr, "loom cache: {} {} {}{}: compiled in {:.1f} ms, {} ({} bytes)\n",
                       dump_ptx ? "skipped" : "miss", name, key->digest.substr(0, 16),
                       dump_ptx ? " (LOOM_DUMP=ptx compiles every kernel, not a miss)" : "",
                       out.result.compile_ms, stored ? "stored" : "not stored (the store failed)",
                       out.result.binary.size());
    } else if (dump) {
        const char* off = std::getenv("LOOM_DISK_CACHE");
        fmt::print(
            stderr, "loom cache: disabled ({}); compiled {} in {:.1f} ms\n",
            !env_switch("LOOM_DISK_CACHE", true) ? fmt::format("LOOM_DISK_CACHE={}", off) : cache.reason(),
            name, out.result.compile_ms);
    }
    return out;
}

}  // namespace loom
