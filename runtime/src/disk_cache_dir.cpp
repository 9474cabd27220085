// The disk kernel cache's directory: created private (0700), refused when a link, shared or another user's.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "disk_cache_internal.hpp"

namespace loom::disk_cache_detail {

namespace {

std::string sys_error(const char* call, const std::filesystem::path& p) {
    return fmt::format("{}(\"{}\") failed: {}", call, p.string(), std::strerror(errno));
}

// mkdir -p with mode 0700 for every folder it creates (existing ones are left as they are).
bool make_directories(const std::filesystem::path& dir, std::string& reason) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0) return true;
    if (errno != ENOENT) {
        reason = sys_error("lstat", dir);
        return false;
    }
    const auto parent = dir.parent_path();
    if (!parent.empty() && parent != dir && !make_directories(parent, reason)) return false;
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        reason = sys_error("mkdir", dir);
        return false;
    }
    return true;
}

}  // namespace

int open_private_directory(const std::filesystem::path& dir, std::string& reason) {
    if (dir.empty()) {
        reason = "no cache directory (set LOOM_CACHE_DIR, XDG_CACHE_HOME or HOME)";
        return -1;
    }
    std::filesystem::path d = dir;
    while (d.has_parent_path() && d.filename().empty()) d = d.parent_path();  // "dir/" -> "dir"
    if (!make_directories(d, reason)) return -1;
    struct stat st {};
    if (::lstat(d.c_str(), &st) != 0) {
        reason = sys_error("lstat", d);
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        reason = fmt::format("{} is a symbolic link; a cache directory must be a real directory", d.string());
        return -1;
    }
    const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        reason = errno == ENOTDIR ? fmt::format("{} is not a directory", d.string()) : sys_error("open", d);
        return -1;
    }
    // Checked on the opened directory, so that a rename between the checks and the use changes nothing.
    if (::fstat(fd, &st) != 0) {
        reason = sys_error("fstat", d);
        ::close(fd);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        reason = fmt::format("{} is not a directory", d.string());
    } else if (st.st_uid != ::geteuid()) {
        reason = fmt::format(
            "{} belongs to user id {}, not to this process's user id {}; a kernel image found "
            "there is code that would run in this process",
            d.string(), st.st_uid, ::geteuid());
    } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        reason = fmt::format(
            "{} is writable by {} (mode {:04o}); others could plant kernel images that would run "
            "in this process (make it private: chmod 700 {})",
            d.string(), (st.st_mode & S_IWOTH) ? "others" : "its group", st.st_mode & 07777, d.string());
    } else {
        return fd;
    }
    ::close(fd);
    return -1;
}

}  // namespace loom::disk_cache_detail
