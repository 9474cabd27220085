// Internals of the disk kernel cache shared by disk_cache.cpp, disk_cache_dir.cpp and compile_cache.cpp:
// the entry format constants, SHA-256 and the directory checks.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

namespace loom::disk_cache_detail {

/// Version of the entry format and of the key text; it enters every key, so a change misses old entries.
inline constexpr std::uint32_t kFormatVersion = 1;
/// First 8 bytes of every entry.
inline constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'K', 'C', '\r', '\n'};
/// Bytes of the fixed header: magic, format version, flags, key bytes, image bytes, SHA-256.
inline constexpr std::size_t kHeaderBytes = 64;
inline constexpr std::uint32_t kFlagPtx = 1;

using Digest = std::array<unsigned char, 32>;
/// SHA-256 of the concatenation of `parts`.
Digest sha256(std::initializer_list<std::string_view> parts);
std::string to_hex(const Digest& d);

/// Opens `dir` as a private cache directory, creating it (and missing parents) with mode 0700. Returns the
/// directory's descriptor (opened without following a link), or -1 with `reason` saying why the directory
/// cannot be trusted or used: a symbolic link, not a directory, another user's, writable by group or
/// others, or an error of the system naming the call.
int open_private_directory(const std::filesystem::path& dir, std::string& reason);

}  // namespace loom::disk_cache_detail
