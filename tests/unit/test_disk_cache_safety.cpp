// The disk kernel cache refuses directories and entries that others could have written: a directory that
// is a symbolic link, writable by group or others, or another user's disables the cache with one warning
// (kernels are then cached in memory only); an entry that is a link, another user's or writable by others
// is never loaded.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "disk_cache_test_util.hpp"
#include "loom/loom.hpp"
#include "loom/runtime/disk_cache.hpp"

using namespace loom;
using loom::test::TempDir;

namespace {

const std::vector<std::string> kOpts{"--gpu-architecture=sm_90", "-std=c++17", "--fmad=true"};

// Opens a cache on `dir`; returns the warnings it printed.
std::string open_warnings(const std::filesystem::path& dir, bool* enabled, std::string* reason = nullptr) {
    test::StderrCapture cap;
    DiskCache c(dir, 0);
    *enabled = c.enabled();
    if (reason) *reason = c.reason();
    const DiskCacheKey k = make_disk_cache_key("x", kOpts, false, 0);
    c.store(k, "image", false);  // a disabled cache writes nothing
    CHECK_FALSE(c.load(k).has_value());
    return cap.text();
}

}  // namespace

TEST_CASE("cache directory: created with mode 0700, parents too") {
    TempDir t;
    const auto dir = t.path / "a" / "b" / "loom";
    DiskCache c(dir, 0);
    REQUIRE(c.enabled());
    for (const auto& p : {t.path / "a", t.path / "a" / "b", dir}) {
        struct stat st {};
        REQUIRE(::stat(p.c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0700);
    }
}

TEST_CASE("cache directory writable by group or others: disabled with one warning") {
    TempDir t;
    const auto dir = t.path / "shared";
    std::filesystem::create_directory(dir);
    for (mode_t mode : {0770, 0707, 0777}) {
        ::chmod(dir.c_str(), mode);
        bool enabled = true;
        std::string reason;
        const std::string err = open_warnings(dir, &enabled, &reason);
        CHECK_FALSE(enabled);
        CHECK(reason.find("writable by") != std::string::npos);
        CHECK(test::count(err, "loom: warning:") == 1);
        CHECK(err.find("disk kernel cache is disabled") != std::string::npos);
        CHECK(err.find(dir.string()) != std::string::npos);
        CHECK(std::distance(std::filesystem::directory_iterator(dir),
                            std::filesystem::directory_iterator()) == 0);
    }
}

TEST_CASE("cache directory that is a symbolic link: disabled") {
    TempDir t;
    std::filesystem::create_directory(t.path / "real");
    ::chmod((t.path / "real").c_str(), 0700);
    std::filesystem::create_directory_symlink(t.path / "real", t.path / "link");
    bool enabled = true;
    std::string reason;
    const std::string err = open_warnings(t.path / "link", &enabled, &reason);
    CHECK_FALSE(enabled);
    CHECK(reason.find("symbolic link") != std::string::npos);
    CHECK(test::count(err, "loom: warning:") == 1);
    CHECK(std::filesystem::is_empty(t.path / "real"));
}

TEST_CASE("cache directory that is a file: disabled") {
    TempDir t;
    test::write_all(t.path / "file", "x");
    bool enabled = true;
    open_warnings(t.path / "file", &enabled);
    CHECK_FALSE(enabled);
}

TEST_CASE("cache directory of another user: disabled (needs root to make one)") {
    if (::geteuid() != 0) return;  // only root can give a directory away
    TempDir t;
    const auto dir = t.path / "theirs";
    std::filesystem::create_directory(dir);
    ::chmod(dir.c_str(), 0700);
    REQUIRE(::chown(dir.c_str(), 12345, 12345) == 0);
    bool enabled = true;
    std::string reason;
    const std::string err = open_warnings(dir, &enabled, &reason);
    CHECK_FALSE(enabled);
    CHECK(reason.find("belongs to user id 12345") != std::string::npos);
    CHECK(test::count(err, "loom: warning:") == 1);
}

TEST_CASE("entries: a link, another user's or a writable entry is never loaded") {
    TempDir t;
    DiskCache c(t.path / "cache", 0);
    REQUIRE(c.enabled());
    const DiskCacheKey k = make_disk_cache_key("kernel", kOpts, false, 0);
    const auto path = c.directory() / disk_cache_entry_name(k.digest);
    const DiskCacheKey good = make_disk_cache_key("other", kOpts, false, 0);
    c.store(good, "image", false);
    const auto good_path = c.directory() / disk_cache_entry_name(good.digest);

    SUBCASE("symbolic link to a valid entry of the same key elsewhere") {
        DiskCache elsewhere(t.path / "elsewhere", 0);
        elsewhere.store(k, "planted", false);
        std::filesystem::create_symlink(elsewhere.directory() / disk_cache_entry_name(k.digest), path);
    }
    SUBCASE("writable by others") {
        c.store(k, "image", false);
        ::chmod(path.c_str(), 0666);
    }
    SUBCASE("another user's (root only)") {
        if (::geteuid() != 0) return;
        c.store(k, "image", false);
        REQUIRE(::chown(path.c_str(), 12345, 12345) == 0);
    }
    SUBCASE("a FIFO does not block the lookup") {
        REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    }
    test::StderrCapture cap;
    CHECK_FALSE(c.load(k).has_value());
    CHECK(test::count(cap.text(), "loom: warning: kernel cache entry") == 1);
    CHECK(c.stats().rejected == 1);
    CHECK(c.load(good).has_value());  // the directory stays usable
    // Publishing replaces the untrusted name itself (rename never writes through a link).
    c.store(k, "fresh", false);
    const auto got = c.load(k);
    REQUIRE(got.has_value());
    CHECK(std::string(got->begin(), got->end()) == "fresh");
    CHECK(std::filesystem::exists(good_path));
}

TEST_CASE("LOOM_CACHE_DIR, XDG_CACHE_HOME and HOME choose the directory") {
    TempDir t;
    ::unsetenv("LOOM_CACHE_DIR");
    ::setenv("XDG_CACHE_HOME", (t.path / "xdg").c_str(), 1);
    reset_disk_cache();
    CHECK(disk_cache().directory() == t.path / "xdg" / "loom");
    ::setenv("LOOM_CACHE_DIR", (t.path / "explicit").c_str(), 1);
    reset_disk_cache();
    CHECK(disk_cache().directory() == t.path / "explicit");
    CHECK(disk_cache().enabled());
    ::unsetenv("LOOM_CACHE_DIR");
    ::unsetenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    reset_disk_cache();
    if (home && *home) CHECK(disk_cache().directory() == std::filesystem::path(home) / ".cache" / "loom");
    reset_disk_cache();
}
