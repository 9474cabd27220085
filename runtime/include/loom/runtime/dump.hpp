// Dump files for review (LOOM_DUMP=ir,cuda,ptx,plans): where they go and how they are written.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace loom::dump {

/// LOOM_DUMP_DIR, else ./dump.
std::filesystem::path directory();
/// Writes `text` to directory()/file (creating the directory); returns the path, or "" when it could not
/// be written (a dump never fails an evaluation).
std::string write(std::string_view file, std::string_view text);
/// Writes `text` to dir/file (creating dir); returns the path or "".
std::string write_to(const std::filesystem::path& dir, std::string_view file, std::string_view text);

}  // namespace loom::dump
