// The disk kernel cache: keys (comments stripped, every input of the image in the key), round trip,
// corrupt / truncated / planted entries rejected and replaced, LRU eviction, and compile_cached() skipping
// NVRTC on a hit and missing after a change of source or options.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <utime.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../common/needs_cuda.hpp"
#include "disk_cache_test_util.hpp"
#include "loom/loom.hpp"
#include "loom/runtime/disk_cache.hpp"

using namespace loom;
using loom::test::TempDir;

namespace {

const std::vector<std::string> kOpts{"--gpu-architecture=sm_90", "-std=c++17", "--fmad=true"};

DiskCacheKey key_of(const std::string& src, std::vector<std::string> opts = kOpts) {
    return make_disk_cache_key(src, opts, false, 0);
}

std::filesystem::path entry_path(const DiskCache& c, const DiskCacheKey& k) {
    return c.directory() / disk_cache_entry_name(k.digest);
}

// A small kernel that NVRTC compiles quickly.
std::string tiny_kernel(const std::string& body, const std::string& note = "a.cpp:1") {
    return "// kernel banner (" + note + ")\nextern \"C\" __global__ void tiny(float* p) {  // " + note +
           "\n    p[0] = " + body + ";  /* value */\n}\n";
}

}  // namespace

TEST_CASE("strip_comments removes annotations, keeps code, literals and lines") {
    const std::string a =
        "int x = 1;        // mul (test.cpp:12)\n/* banner\n   two lines */int y;\nconst char* s = \"a // "
        "b\";  // c\n";
    const std::string b =
        "int x = 1; // mul (other.cpp:99)\n/* another\n banner */int y;\nconst char* s = \"a // b\";\n";
    CHECK(strip_comments(a) == "int x = 1;\n\nint y;\nconst char* s = \"a // b\";\n");
    CHECK(strip_comments(a) == strip_comments(b));
    CHECK(strip_comments("char c = '/'; // x\n") == "char c = '/';\n");
    CHECK(strip_comments("a /* unterminated") == "a");
}

TEST_CASE("disk cache key: annotations do not matter, everything that shapes the image does") {
    const DiskCacheKey k1 = key_of(tiny_kernel("1.0f", "one.cpp:10"));
    const DiskCacheKey k2 = key_of(tiny_kernel("1.0f", "two.cpp:20"));
    CHECK(k1.digest == k2.digest);  // two call sites of one graph share an entry
    CHECK(k1.digest.size() == 64);
    CHECK(k1.text.find("loom 0.") != std::string::npos);
    CHECK(k1.text.find(fmt::format("nvrtc {}", nvrtc::version())) != std::string::npos);
    CHECK(k1.text.find("option --gpu-architecture=sm_90") != std::string::npos);
    // A changed code generator (other source), option or arch: another key.
    CHECK(key_of(tiny_kernel("2.0f")).digest != k1.digest);
    auto fast = kOpts;
    fast.push_back("--use_fast_math");
    CHECK(key_of(tiny_kernel("1.0f"), fast).digest != k1.digest);
    CHECK(key_of(tiny_kernel("1.0f"), {"--gpu-architecture=sm_100", "-std=c++17", "--fmad=true"}).digest !=
          k1.digest);
    // -lineinfo: the comments stay in the key.
    auto li = kOpts;
    li.push_back("-lineinfo");
    CHECK(key_of(tiny_kernel("1.0f", "one.cpp:10"), li).digest !=
          key_of(tiny_kernel("1.0f", "two.cpp:20"), li).digest);
    // PTX: the driver finishes it, so its version enters the key; a cubin's key ignores the driver.
    CHECK(make_disk_cache_key("x", kOpts, true, 13000).digest !=
          make_disk_cache_key("x", kOpts, true, 12080).digest);
    CHECK(make_disk_cache_key("x", kOpts, true, 13000).digest !=
          make_disk_cache_key("x", kOpts, false, 0).digest);
    // Deterministic: the same inputs give the same key (no time, pid or address in it).
    CHECK(key_of(tiny_kernel("1.0f")).text == key_of(tiny_kernel("1.0f")).text);
    CHECK(sha256_hex("abc") ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2 B.1
}

TEST_CASE("disk cache round trip: stored image loads byte for byte, in another cache object too") {
    TempDir t;
    const auto dir = t.path / "cache";
    const DiskCacheKey k = key_of(tiny_kernel("3.0f"));
    std::string image(5000, '\0');
    for (std::size_t i = 0; i < image.size(); ++i) image[i] = static_cast<char>(i * 31 + 7);
    {
        DiskCache c(dir, 0);
        REQUIRE(c.enabled());
        CHECK_FALSE(c.load(k).has_value());
        c.store(k, image, true);
        CHECK(c.stats().stores == 1);
    }
    struct stat st {};
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);  // created private
    DiskCache c(dir, 0);
    REQUIRE(::stat(entry_path(c, k).c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    bool is_ptx = false;
    const auto got = c.load(k, &is_ptx);
    REQUIRE(got.has_value());
    CHECK(std::string(got->begin(), got->end()) == image);
    CHECK(is_ptx);
    CHECK(c.stats().hits == 1);
    CHECK(c.stats().misses == 0);
    // No temporary file is left behind.
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        files += e.path().filename().string().starts_with(".tmp") ? 100 : 1;
    CHECK(files == 1);
}

TEST_CASE("corrupt, truncated and planted entries are rejected with one warning and replaced") {
    TempDir t;
    DiskCache c(t.path / "cache", 0);
    const DiskCacheKey k = key_of(tiny_kernel("4.0f"));
    const std::string image(3000, 'x');
    const auto path = entry_path(c, k);

    SUBCASE("a flipped bit in the image") {
        c.store(k, image, false);
        std::string bytes = test::read_all(path);
        bytes[bytes.size() - 10] ^= 0x10;
        test::write_all(path, bytes);
    }
    SUBCASE("truncated") {
        c.store(k, image, false);
        const std::string bytes = test::read_all(path);
        test::write_all(path, bytes.substr(0, bytes.size() / 2));
    }
    SUBCASE("shorter than the header") {
        test::write_all(path, "LOOMKC");
    }
    SUBCASE("not an entry at all") {
        test::write_all(path, std::string(4096, 'A'));
    }
    SUBCASE("the right name but another key's entry") {
        const DiskCacheKey other = key_of(tiny_kernel("5.0f"));
        c.store(other, image, false);
        std::filesystem::rename(entry_path(c, other), path);
    }
    ::chmod(path.c_str(), 0600);
    test::StderrCapture cap;
    CHECK_FALSE(c.load(k).has_value());
    CHECK_FALSE(c.load(k).has_value());  // the second look warns no more
    const std::string err = cap.text();
    CHECK(test::count(err, "loom: warning: kernel cache entry") == 1);
    CHECK(err.find(path.string()) != std::string::npos);
    CHECK(c.stats().rejected == 2);
    // The recompiled image replaces it.
    c.store(k, image, false);
    const auto got = c.load(k);
    REQUIRE(got.has_value());
    CHECK(std::string(got->begin(), got->end()) == image);
}

TEST_CASE("size cap: least recently used entries are evicted first") {
    TempDir t;
    const std::string image(10000, 'i');
    DiskCache c(t.path / "cache", 35000);  // room for three entries of about 10.5 KB
    std::vector<DiskCacheKey> keys;
    for (int i = 0; i < 3; ++i) {
        keys.push_back(key_of(tiny_kernel(fmt::format("{}.0f", 10 + i))));
        c.store(keys.back(), image, false);
        // Distinct, increasing use times (file systems may keep coarse times).
        const auto p = entry_path(c, keys.back());
        struct utimbuf tb {
            1000000 + i * 10, 1000000 + i * 10
        };
        ::utime(p.c_str(), &tb);
    }
    CHECK(c.stats().evictions == 0);
    CHECK(c.size_bytes() > 30000);
    REQUIRE(c.load(keys[0]).has_value());  // key 0 used now: newest
    keys.push_back(key_of(tiny_kernel("20.0f")));
    c.store(keys.back(), image, false);  // over the cap: evicts down to 90% of it, least recently used first
    CHECK(c.stats().evictions == 1);
    CHECK(c.load(keys[0]).has_value());        // stored first, but used since
    CHECK_FALSE(c.load(keys[1]).has_value());  // the least recently used
    CHECK(c.load(keys[2]).has_value());
    CHECK(c.load(keys[3]).has_value());
    CHECK(c.size_bytes() <= 35000);
}

TEST_CASE("size scans on several threads at once each count every entry") {
    // The scan that eviction is decided by: each opens the directory anew, so scans on threads storing at
    // once (concurrent compiles) do not share one read position and miss or double entries.
    TempDir t;
    DiskCache c(t.path / "cache", 0);
    const std::string image(100, 'i');
    for (int i = 0; i < 2000; ++i) c.store(key_of(tiny_kernel(fmt::format("{}.0f", i))), image, false);
    const std::uint64_t single = c.size_bytes();
    REQUIRE(single > 2000 * 100);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k)
        threads.emplace_back([&] {
            for (int i = 0; i < 25; ++i)
                if (c.size_bytes() != single) ++wrong;
        });
    for (auto& th : threads) th.join();
    CHECK(wrong.load() == 0);
}

TEST_CASE("LOOM_CACHE_MAX_BYTES: a number with an optional K, M or G suffix, else the default") {
    TempDir t;
    const char* old_dir = std::getenv("LOOM_CACHE_DIR");
    const std::string saved_dir = old_dir ? old_dir : "";
    ::setenv("LOOM_CACHE_DIR", (t.path / "cache").c_str(), 1);
    const std::uint64_t G = std::uint64_t{1} << 30;
    const std::vector<std::pair<const char*, std::uint64_t>> cases = {
        {"512", 512}, {"2M", 2 << 20}, {"3k", 3072}, {"0", 0},   {"1T", G},   {"10X", G},
        {"1 G", G},   {"4Gb", G},      {"nan", G},   {"inf", G}, {"1e30", G}, {"-1", G}};
    for (const auto& [text, bytes] : cases) {
        ::setenv("LOOM_CACHE_MAX_BYTES", text, 1);
        reset_disk_cache();
        CHECK_MESSAGE(disk_cache().max_bytes() == bytes, text);
    }
    ::unsetenv("LOOM_CACHE_MAX_BYTES");
    if (old_dir)
        ::setenv("LOOM_CACHE_DIR", saved_dir.c_str(), 1);
    else
        ::unsetenv("LOOM_CACHE_DIR");
    reset_disk_cache();
}

TEST_CASE("compile_cached: a second process finds the kernel without NVRTC, a change misses" *
          loom_test::needs_cuda()) {
    TempDir t;
    ::setenv("LOOM_CACHE_DIR", (t.path / "cache").c_str(), 1);
    reset_disk_cache();
    nvrtc::Options opt;
    const std::string src = tiny_kernel("6.0f", "first.cpp:1");
    const std::uint64_t n0 = nvrtc::compile_count();
    const CachedCompile a = compile_cached("tiny", src, opt);
    CHECK_FALSE(a.from_disk);
    CHECK(nvrtc::compile_count() == n0 + 1);
    CHECK(disk_cache_stats().stores == 1);
    CHECK(disk_cache_stats().compiles == 1);

    reset_disk_cache();  // as a new process would open it
    const CachedCompile b =
        compile_cached("tiny", tiny_kernel("6.0f", "second.cpp:2"), opt);  // other call site
    CHECK(b.from_disk);
    CHECK(nvrtc::compile_count() == n0 + 1);  // no NVRTC
    CHECK(b.result.binary == a.result.binary);
    CHECK(b.result.arch == a.result.arch);
    CHECK(disk_cache_stats().hits == 1);
    CHECK(disk_cache_stats().compiles == 0);

    // A changed generator (source) or option: a miss, never the stale image.
    const CachedCompile c = compile_cached("tiny", tiny_kernel("7.0f"), opt);
    CHECK_FALSE(c.from_disk);
    nvrtc::Options fast = opt;
    fast.fast_math = true;
    const CachedCompile d = compile_cached("tiny", src, fast);
    CHECK_FALSE(d.from_disk);
    CHECK(nvrtc::compile_count() == n0 + 3);
    ::unsetenv("LOOM_CACHE_DIR");
    reset_disk_cache();
}

TEST_CASE("LOOM_DISK_CACHE=off compiles every time and writes nothing" * loom_test::needs_cuda()) {
    TempDir t;
    ::setenv("LOOM_CACHE_DIR", (t.path / "cache").c_str(), 1);
    ::setenv("LOOM_DISK_CACHE", "off", 1);
    reset_disk_cache();
    CHECK_FALSE(disk_cache().enabled());
    const std::uint64_t n0 = nvrtc::compile_count();
    compile_cached("tiny", tiny_kernel("8.0f"), {});
    compile_cached("tiny", tiny_kernel("8.0f"), {});
    CHECK(nvrtc::compile_count() == n0 + 2);
    CHECK_FALSE(std::filesystem::exists(t.path / "cache"));
    ::unsetenv("LOOM_DISK_CACHE");
    ::unsetenv("LOOM_CACHE_DIR");
    reset_disk_cache();
}
