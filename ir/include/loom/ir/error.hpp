// Error types: user errors (loom::Error and subclasses) and internal invariant failures
// (loom::InternalError).
#pragma once

#include <fmt/format.h>

#include <source_location>
#include <stdexcept>
#include <string>

namespace loom {

/// A user error: bad shapes, dtypes, axes, arguments. The message starts with the API name and names the
/// operands' shapes and dtypes and the user's `file:line`.
class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A failure inside Loom that no user input should cause: a bug. The message says so.
class InternalError : public std::logic_error {
  public:
    explicit InternalError(const std::string& what)
        : std::logic_error("loom internal error (this is a bug in Loom, please report it): " + what) {}
};

/// `file:line` of a source location, with the directory part stripped so output is stable across checkouts.
std::string short_location(const std::source_location& loc);

/// Throws InternalError with the formatted message when `cond` is false.
#define LOOM_CHECK(cond, ...)                                                                           \
    do {                                                                                                \
        if (!(cond))                                                                                    \
            throw ::loom::InternalError(fmt::format("{}:{}: check '{}' failed: {}", __FILE__, __LINE__, \
                                                    #cond, fmt::format(__VA_ARGS__)));                  \
    } while (0)

}  // namespace loom
