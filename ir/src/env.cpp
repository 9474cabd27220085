// Environment switches.
#include "loom/ir/env.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace loom {

bool env_list_contains(const char* var, std::string_view word) {
    const char* v = std::getenv(var);
    if (!v) return false;
    std::string_view s(v);
    std::size_t pos = 0;
    while (pos <= s.size()) {
        std::size_t end = s.find(',', pos);
        if (end == std::string_view::npos) end = s.size();
        const std::string_view item = s.substr(pos, end - pos);
        if (item == word || item == "all" || item == "1") return true;
        pos = end + 1;
    }
    return false;
}

bool env_switch(const char* var, bool otherwise) {
    const char* v = std::getenv(var);
    if (!v || !*v) return otherwise;
    std::string word(v);
    for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (word == "1" || word == "on" || word == "true" || word == "yes") return true;
    if (word == "0" || word == "off" || word == "false" || word == "no") return false;
    warn_once(std::string(var) + "=" + v, std::string("loom warning: ") + var + "=" + v +
                                              " is not on or off (1, on, true, yes; 0, off, false, no); " +
                                              (otherwise ? "on" : "off"));
    return otherwise;
}

void warn_once(const std::string& key, const std::string& message) {
    static std::mutex mu;
    static std::set<std::string> warned;
    {
        std::lock_guard lock(mu);
        if (!warned.insert(key).second) return;
    }
    std::fprintf(stderr, "%s\n", message.c_str());
}

}  // namespace loom
