// Reading Loom's environment switches (LOOM_DUMP=ir,cuda,..., LOOM_EXPLAIN=fusion, LOOM_VERIFY=1).
#pragma once

#include <string_view>

namespace loom {

/// True when the comma-separated list in environment variable `var` contains `word` or "all".
bool env_list_contains(const char* var, std::string_view word);

}  // namespace loom
