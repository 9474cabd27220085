// Dump files for review.
#include "loom/runtime/dump.hpp"

#include <cstdlib>
#include <fstream>
#include <string>

#include "loom/ir/env.hpp"

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
    if (f) f.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (f) return path.string();
    // A dump the user asked for and does not get is said once per directory, not dropped in silence.
    warn_once("dump:" + dir.string(), "loom warning: cannot write dump files into " + dir.string() + " (" +
                                          (ec ? ec.message() : std::string("cannot open a file there")) +
                                          "); those dumps are dropped");
    return {};
}

std::string write(std::string_view file, std::string_view text) {
    return write_to(directory(), file, text);
}

}  // namespace loom::dump
