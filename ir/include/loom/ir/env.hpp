// Reading Loom's environment switches (LOOM_DUMP=ir,cuda,..., LOOM_EXPLAIN=fusion, LOOM_VERIFY=1).
#pragma once

#include <string>
#include <string_view>

namespace loom {

/// True when the comma-separated list in environment variable `var` contains `word` or "all".
bool env_list_contains(const char* var, std::string_view word);

/// Prints `message` (a whole line) on stderr the first time this process passes `key`; later calls with the
/// same key print nothing. Thread-safe.
void warn_once(const std::string& key, const std::string& message);

/// An on/off switch in environment variable `var`: 1, on, true or yes (any case) is on; 0, off, false or
/// no is off; unset or empty is `otherwise`; anything else is warned about on stderr (once per variable and
/// value) and is `otherwise` too.
bool env_switch(const char* var, bool otherwise);

}  // namespace loom
