// Dump files for review.
#include "loom/runtime/dump.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <string>

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
    static std::mutex mu;
    static std::set<std::string> warned;
    bool first = false;
    {
        std::lock_guard lock(mu);
        first = warned.insert(dir.string()).second;
    }
    if (first)
        std::fprintf(stderr, "loom warning: cannot write dump files into %s (%s); those dumps are dropped\n",
                     dir.string().c_str(), ec ? ec.message().c_str() : "cannot open a file there");
    return {};
}

std::string write(std::string_view file, std::string_view text) {
    return write_to(directory(), file, text);
}

}  // namespace loom::dump
