// The disk kernel cache's entries: verified loads, atomic publication, least-recently-used eviction.
#include "loom/runtime/disk_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <nettle/sha2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>

#include "disk_cache_internal.hpp"
#include "faults_internal.hpp"

namespace loom {

using namespace disk_cache_detail;

namespace disk_cache_detail {

Digest sha256(std::initializer_list<std::string_view> parts) {
    sha256_ctx ctx;
    sha256_init(&ctx);
    for (std::string_view p : parts)
        sha256_update(&ctx, p.size(), reinterpret_cast<const std::uint8_t*>(p.data()));
    Digest d{};
    sha256_digest(&ctx, d.size(), d.data());
    return d;
}

std::string to_hex(const Digest& d) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string s(2 * d.size(), '0');
    for (std::size_t k = 0; k < d.size(); ++k) {
        s[2 * k] = hex[d[k] >> 4];
        s[2 * k + 1] = hex[d[k] & 15];
    }
    return s;
}

}  // namespace disk_cache_detail

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void put_u32(char* p, std::uint32_t v) {
    for (int k = 0; k < 4; ++k) p[k] = static_cast<char>((v >> (8 * k)) & 0xff);
}
void put_u64(char* p, std::uint64_t v) {
    for (int k = 0; k < 8; ++k) p[k] = static_cast<char>((v >> (8 * k)) & 0xff);
}
std::uint64_t get_u(const char* p, int bytes) {
    std::uint64_t v = 0;
    for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(p[k]);
    return v;
}

bool is_entry_name(std::string_view n) {
    if (n.size() != 64 + 4 || n.substr(64) != ".lkc") return false;
    return std::all_of(n.begin(), n.begin() + 64,
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Temporary files older than this are left by a process that died while writing; eviction removes them.
constexpr std::int64_t kStaleTemporarySeconds = 3600;

}  // namespace

std::string disk_cache_entry_name(std::string_view digest) {
    return fmt::format("{}.lkc", digest);
}

struct DiskCache::State {
    std::filesystem::path dir;
    std::uint64_t max_bytes = 0;
    bool quiet = false;
    int dirfd = -1;
    std::string reason;

    mutable std::mutex mu;
    DiskCacheStats stats;
    std::set<std::string> warned;  // entries already reported as rejected
    bool store_warned = false;
    bool stores_off = false;          // a store failed (disk full, read-only, ...): no more are tried
    std::uint64_t size_estimate = 0;  // bytes of entries: scanned, plus what this process wrote since
    bool size_known = false;
    unsigned stores_since_scan = 0;

    void warn(const std::string& what, const std::string& msg) {
        if (quiet) return;
        {
            std::lock_guard lock(mu);
            if (!warned.insert(what).second) return;
        }
        fmt::print(stderr, "loom: warning: {}\n", msg);
    }

    // Scans the directory: removes stale temporaries; when the entries exceed the cap, removes the least
    // recently used (oldest modification time; a hit touches its entry) until they fill at most 90% of it.
    // Each scan opens the directory anew: a descriptor of its own has a read position of its own (a dup() of
    // dirfd would share one position with every other scan, and threads storing at once would each read a
    // part of the entries).
    void scan_and_evict(std::uint64_t cap) {
        const int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return;
        DIR* d = ::fdopendir(fd);
        if (!d) {
            ::close(fd);
            return;
        }
        struct Item {
            std::int64_t mtime_ns;
            std::uint64_t bytes;
            std::string name;
        };
        std::vector<Item> items;
        std::uint64_t total = 0;
        const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
        while (const dirent* e = ::readdir(d)) {
            const std::string_view name = e->d_name;
            struct stat st {};
            if (::fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
            if (name.starts_with(".tmp-") && S_ISREG(st.st_mode) &&
                now - st.st_mtim.tv_sec > kStaleTemporarySeconds) {
                ::unlinkat(dirfd, e->d_name, 0);
                continue;
            }
            if (!is_entry_name(name) || !S_ISREG(st.st_mode)) continue;
            items.push_back({st.st_mtim.tv_sec * 1'000'000'000ll + st.st_mtim.tv_nsec,
                             static_cast<std::uint64_t>(st.st_size), std::string(name)});
            total += static_cast<std::uint64_t>(st.st_size);
        }
        ::closedir(d);
        std::uint64_t evicted = 0;
        if (cap > 0 && total > cap) {
            std::sort(items.begin(), items.end(),
                      [](const Item& a, const Item& b) { return a.mtime_ns < b.mtime_ns; });
            const std::uint64_t target = cap / 10 * 9;
            for (const Item& it : items) {
                if (total <= target) break;
                // ENOENT: another process evicted it first; the bytes are gone either way.
                if (::unlinkat(dirfd, it.name.c_str(), 0) == 0 || errno == ENOENT) {
                    total -= it.bytes;
                    ++evicted;
                }
            }
        }
        std::lock_guard lock(mu);
        size_estimate = total;
        size_known = true;
        stores_since_scan = 0;
        stats.evictions += evicted;
    }
};

DiskCache::DiskCache(std::filesystem::path directory, std::uint64_t max_bytes, bool quiet)
    : s_(std::make_unique<State>()) {
    s_->dir = std::move(directory);
    s_->max_bytes = max_bytes;
    s_->quiet = quiet;
    s_->dirfd = open_private_directory(s_->dir, s_->reason);
    if (s_->dirfd < 0 && !quiet)
        fmt::print(
            stderr,
            "loom: warning: the disk kernel cache is disabled: {}; kernels are cached in memory only\n",
            s_->reason);
}

DiskCache::~DiskCache() {
    if (s_->dirfd >= 0) ::close(s_->dirfd);
}

bool DiskCache::enabled() const {
    return s_->dirfd >= 0;
}
const std::string& DiskCache::reason() const {
    return s_->reason;
}
const std::filesystem::path& DiskCache::directory() const {
    return s_->dir;
}
std::uint64_t DiskCache::max_bytes() const {
    return s_->max_bytes;
}

DiskCacheStats DiskCache::stats() const {
    std::lock_guard lock(s_->mu);
    return s_->stats;
}

std::uint64_t DiskCache::size_bytes() const {
    if (!enabled()) return 0;
    s_->scan_and_evict(0);  // count without evicting
    std::lock_guard lock(s_->mu);
    return s_->size_estimate;
}

std::optional<std::vector<char>> DiskCache::load(const DiskCacheKey& key, bool* is_ptx) {
    const auto t0 = Clock::now();
    auto miss = [&](bool rejected) -> std::optional<std::vector<char>> {
        std::lock_guard lock(s_->mu);
        ++s_->stats.misses;
        if (rejected) ++s_->stats.rejected;
        s_->stats.lookup_ms += ms_since(t0);
        return std::nullopt;
    };
    if (!enabled()) return miss(false);
    const std::string name = disk_cache_entry_name(key.digest);
    const std::string path = (s_->dir / name).string();
    auto reject = [&](const std::string& why) {
        s_->warn(
            name,
            fmt::format("kernel cache entry {} {}; it is not loaded, the kernel is recompiled and the entry "
                        "replaced",
                        path, why));
        return miss(true);
    };
    // O_NONBLOCK: a FIFO planted under an entry's name must not block the open.
    const int fd = ::openat(s_->dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) return miss(false);
        if (errno == ELOOP) return reject("is a symbolic link");
        return reject(fmt::format("cannot be opened ({})", std::strerror(errno)));
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return reject(fmt::format("cannot be examined ({})", std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) return reject("is not a regular file");
    if (st.st_uid != ::geteuid()) return reject(fmt::format("belongs to user id {}", st.st_uid));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return reject(fmt::format("is writable by others (mode {:04o})", st.st_mode & 07777));
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size < kHeaderBytes)
        return reject(fmt::format("is truncated ({} bytes, less than its header)", size));
    std::vector<char> buf(size);
    std::uint64_t got = 0;
    while (got < size) {
        const ssize_t n = ::read(fd, buf.data() + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::uint64_t>(n);
    }
    if (got != size) return reject("could not be read whole");
    const char* h = buf.data();
    if (std::memcmp(h, kMagic, sizeof kMagic) != 0)
        return reject("is not a Loom kernel cache entry (bad magic)");
    const auto version = static_cast<std::uint32_t>(get_u(h + 8, 4));
    if (version != kFormatVersion)
        return reject(fmt::format("has format version {}, not {}", version, kFormatVersion));
    const auto flags = static_cast<std::uint32_t>(get_u(h + 12, 4));
    const std::uint64_t key_bytes = get_u(h + 16, 8), image_bytes = get_u(h + 24, 8);
    if (key_bytes > size || image_bytes > size || kHeaderBytes + key_bytes + image_bytes != size)
        return reject(fmt::format("is truncated or corrupt ({} bytes, header says {} + {} + {})", size,
                                  kHeaderBytes, key_bytes, image_bytes));
    const std::string_view stored_key(h + kHeaderBytes, key_bytes);
    const std::string_view image(h + kHeaderBytes + key_bytes, image_bytes);
    Digest sum;
    std::memcpy(sum.data(), h + 32, sum.size());
    if (sha256({std::string_view(h, 32), image}) != sum) return reject("is corrupt (checksum mismatch)");
    if (stored_key != key.text) return reject("holds another key (a different kernel under the same name)");
    ::futimens(fd, nullptr);  // used now: least-recently-used eviction keeps it longer
    if (is_ptx) *is_ptx = (flags & kFlagPtx) != 0;
    std::vector<char> out(image.begin(), image.end());
    std::lock_guard lock(s_->mu);
    ++s_->stats.hits;
    s_->stats.lookup_ms += ms_since(t0);
    return out;
}

bool DiskCache::store(const DiskCacheKey& key, std::string_view image, bool is_ptx) {
    if (!enabled()) return false;
    {
        // After a failed store (a full disk, a read-only directory) the process keeps compiled kernels in
        // memory only: writing more would fail the same way, at the cost of a compile-sized write each.
        std::lock_guard lock(s_->mu);
        if (s_->stores_off) {
            ++s_->stats.store_failures;
            return false;
        }
    }
    const auto t0 = Clock::now();
    std::string entry(kHeaderBytes, '\0');
    std::memcpy(entry.data(), kMagic, sizeof kMagic);
    put_u32(entry.data() + 8, kFormatVersion);
    put_u32(entry.data() + 12, is_ptx ? kFlagPtx : 0);
    put_u64(entry.data() + 16, key.text.size());
    put_u64(entry.data() + 24, image.size());
    const Digest sum = sha256({std::string_view(entry.data(), 32), image});
    std::memcpy(entry.data() + 32, sum.data(), sum.size());
    entry += key.text;
    entry += image;

    static std::atomic<std::uint64_t> counter{0};
    const std::string name = disk_cache_entry_name(key.digest);
    const std::string tmp = fmt::format(".tmp-{}-{}-{}", key.digest.substr(0, 16), ::getpid(), counter++);
    auto fail = [&](const char* call) {
        const int err = errno;
        ::unlinkat(s_->dirfd, tmp.c_str(), 0);
        bool first = false;
        {
            std::lock_guard lock(s_->mu);
            ++s_->stats.store_failures;
            first = !s_->store_warned;
            s_->store_warned = true;
            s_->stores_off = true;
        }
        if (first && !s_->quiet)
            fmt::print(stderr,
                       "loom: warning: cannot write kernel cache entry {}: {} failed: {}; compiled kernels "
                       "are kept in memory only from now on (this process writes no more entries to {})\n",
                       (s_->dir / name).string(), call, std::strerror(err), s_->dir.string());
        return false;
    };
    // Fault injection (tests): EROFS, EACCES or EPERM fail the creation, as a read-only directory does;
    // any other errno (ENOSPC by default) fails the write after half the entry, as a full disk does.
    int injected = 0;
    const bool inject = detail::should_fail(testing::FaultSite::DiskCacheWrite, &injected);
    if (inject && injected == 0) injected = ENOSPC;
    if (inject && (injected == EROFS || injected == EACCES || injected == EPERM)) {
        errno = injected;
        return fail("open");
    }
    const int fd =
        ::openat(s_->dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return fail("open");
    std::size_t done = 0;
    while (done < entry.size()) {
        if (inject && done >= entry.size() / 2) {
            ::close(fd);
            errno = injected;
            return fail("write");
        }
        const std::size_t chunk = inject ? entry.size() / 2 - done : entry.size() - done;
        const ssize_t n = ::write(fd, entry.data() + done, chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ::close(fd);
            return fail("write");
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) return fail("close");
    // rename() replaces the name atomically: a reader opens the old entry or the new one, never a part.
    if (::renameat(s_->dirfd, tmp.c_str(), s_->dirfd, name.c_str()) != 0) return fail("rename");
    bool scan = false;
    {
        std::lock_guard lock(s_->mu);
        ++s_->stats.stores;
        s_->size_estimate += entry.size();
        ++s_->stores_since_scan;
        // Other processes write too: rescan now and then, and whenever this process's count passes the cap.
        scan = s_->max_bytes > 0 &&
               (!s_->size_known || s_->size_estimate > s_->max_bytes || s_->stores_since_scan >= 64);
    }
    if (scan) s_->scan_and_evict(s_->max_bytes);
    std::lock_guard lock(s_->mu);
    s_->stats.store_ms += ms_since(t0);
    return true;
}

}  // namespace loom
