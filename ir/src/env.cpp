// Environment switches.
#include "loom/ir/env.hpp"

#include <cstdlib>

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

}  // namespace loom
