// Dump files for review.
#include "loom/runtime/dump.hpp"

#include <cstdlib>
#include <fstream>

namespace loom::dump {

std::filesystem::path directory() {
    const char* d = std::getenv("LOOM_DUMP_DIR");
    return (d && *d) ? std::filesystem::path(d) : std::filesystem::path("dump");
}

std::string write_to(const std::filesystem::path& dir, std::string_view file, std::string_view text) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const auto path = dir / std::filesystem::path(file);
    std::ofstream f(path, std::ios::binary);
    if (!f) return {};
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    return f ? path.string() : std::string();
}

std::string write(std::string_view file, std::string_view text) {
    return write_to(directory(), file, text);
}

}  // namespace loom::dump
