// The message of the loom::Error a callable throws: the helper every error-message test uses.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "loom/ir/error.hpp"

namespace loom_test {

/// Runs `fn` and returns the message of the loom::Error it throws. When it throws none, records a failed
/// check and returns "<no error>" (so the caller's own checks on the message fail too).
template <class F>
std::string error_message(F&& fn) {
    try {
        fn();
    } catch (const loom::Error& e) {
        return e.what();
    }
    FAIL_CHECK("no loom::Error thrown");
    return "<no error>";
}

}  // namespace loom_test
