// The disk kernel cache: compiled images (cubin or PTX) kept between processes, keyed by a SHA-256 of
// everything that determines the image, verified on load, published atomically, in a private directory.
// docs/kernel-cache.md describes the key, the entry format, the safety checks and the eviction.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/runtime/nvrtc.hpp"

namespace loom {

/// Counters of a disk cache (and, for the process-wide cache, of the compilations done after its misses).
struct DiskCacheStats {
    std::uint64_t hits = 0;      // entries found, verified and returned
    std::uint64_t misses = 0;    // lookups that found no usable entry (absent, rejected, or cache disabled)
    std::uint64_t rejected = 0;  // entries present but corrupt, truncated, of another key or untrusted
    std::uint64_t stores = 0;    // entries published
    std::uint64_t store_failures = 0;  // entries that could not be written (disk full, permissions)
    std::uint64_t evictions = 0;       // entries removed to keep the directory under its size cap
    std::uint64_t compiles = 0;  // NVRTC compilations done by compile_cached() (process-wide cache only)
    double compile_ms = 0;       // their total NVRTC time, milliseconds
    double lookup_ms = 0;        // total time of lookups (hits and misses): open, read, verify
    double store_ms = 0;         // total time of publishing entries
};

/// What a disk cache key is made of. `text` is the complete key (stored in the entry and compared on
/// load); `digest` its SHA-256 in lowercase hex (the entry's file name).
struct DiskCacheKey {
    std::string text;
    std::string digest;
};

/// The source text that enters a key: `source` without its comments (`// ...` and `/* ... */` outside
/// string and character literals, each comment replaced by nothing, newlines kept) and without the
/// spaces left at the end of a line, so that two call sites of one graph (whose annotations name
/// different file:line) share an entry.
std::string strip_comments(std::string_view source);

/// The key of compiling `source` with `options` (nvrtc::option_list; the resolved arch is the first).
/// Comments are stripped unless the options ask for line information (-lineinfo, -G), where the source as
/// written is what the image describes. `driver_version` (cudaDriverGetVersion) enters only when the
/// image is PTX, which the driver finishes; pass 0 for a cubin. Also in the key: the NVRTC version,
/// Loom's version and the entry format version. Nothing that varies from run to run enters it.
DiskCacheKey make_disk_cache_key(std::string_view source, const std::vector<std::string>& options,
                                 bool is_ptx, int driver_version);

/// SHA-256 of `data` in lowercase hex (64 characters), FIPS 180-4, computed by Nettle.
std::string sha256_hex(std::string_view data);

/// One cache directory. Thread-safe; several processes may share the directory (entries are written to a
/// private temporary file and renamed into place, so a reader sees a whole entry or none).
class DiskCache {
  public:
    /// Opens `directory`, creating it and missing parents with mode 0700. The cache is disabled (every
    /// lookup misses, nothing is written; reason() says why, and one warning goes to stderr unless `quiet`)
    /// when the directory cannot be created or opened, is a symbolic link, is not a directory, belongs to
    /// another user, or is writable by group or others. `max_bytes` caps the total size of the entries;
    /// the least recently used are removed beyond it (0: no cap).
    DiskCache(std::filesystem::path directory, std::uint64_t max_bytes, bool quiet = false);
    ~DiskCache();
    DiskCache(const DiskCache&) = delete;
    DiskCache& operator=(const DiskCache&) = delete;

    bool enabled() const;
    /// Why the cache is disabled; empty when enabled.
    const std::string& reason() const;
    const std::filesystem::path& directory() const;
    std::uint64_t max_bytes() const;

    /// The image stored under `key`, or nothing. An entry that is corrupt, truncated, of another key, not a
    /// regular file, a symbolic link, another user's or writable by others is never returned: it counts as
    /// rejected, one warning names it, and the caller's store() replaces it. A hit marks the entry used.
    std::optional<std::vector<char>> load(const DiskCacheKey& key, bool* is_ptx = nullptr);

    /// Publishes `image` under `key`: written to a private temporary file (0600) in the directory and
    /// renamed over the entry's name, then entries beyond the size cap are evicted, least recently used
    /// first. A failure to write is counted and reported once; it never fails the caller. Returns whether
    /// the entry was written (false: the cache is off, or this or an earlier store failed).
    bool store(const DiskCacheKey& key, std::string_view image, bool is_ptx);

    /// Total bytes of the entries now in the directory.
    std::uint64_t size_bytes() const;
    DiskCacheStats stats() const;

    struct State;

  private:
    std::unique_ptr<State> s_;
};

/// Entry file name of a key digest ("<digest>.lkc").
std::string disk_cache_entry_name(std::string_view digest);

/// The process-wide cache: LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom (when absolute), else
/// $HOME/.cache/loom; capped at LOOM_CACHE_MAX_BYTES (a byte count, with an optional K, M or G suffix;
/// default 1G). LOOM_DISK_CACHE=0 (or off) disables it. Made on first use from the environment.
DiskCache& disk_cache();
/// Re-reads the environment: the next disk_cache() call opens the directory it names. For tests and for
/// programs that set LOOM_CACHE_DIR after a first compilation.
void reset_disk_cache();
/// Counters of the process-wide cache, including its compiles and compile time.
DiskCacheStats disk_cache_stats();

/// An image compiled by compile_cached().
struct CachedCompile {
    nvrtc::Result result;  // binary, is_ptx, arch, options; log empty and compile_ms 0 for a disk hit
    bool from_disk = false;
    double lookup_ms = 0;  // disk lookup time (0 when the cache is disabled)
};

/// nvrtc::compile through the process-wide disk cache: the key of (`source`, the options, arch, versions)
/// is looked up; a hit returns the stored image without calling NVRTC; a miss compiles and publishes.
/// With LOOM_DUMP=ptx the lookup is skipped (the dump needs the compilation); with LOOM_DUMP=cuda a hit
/// still writes the source. LOOM_DUMP=cache prints each hit, miss and store to stderr, and the counters
/// when the process exits. Throws as nvrtc::compile.
CachedCompile compile_cached(std::string_view name, std::string_view source, const nvrtc::Options& options);

}  // namespace loom
