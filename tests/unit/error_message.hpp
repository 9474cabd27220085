// The message of the loom::Error a callable throws: the helper every error-message test uses.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "loom/ir/error.hpp"

namespace loom_test {

/// Runs `fn` and returns the message of the error of type E (loom::Error or one of its kinds) it throws. When
/// it throws none, records a failed check and returns "<no error>" (so the caller's own checks on the message
/// fail too).
template <class E = loom::Error, class F>
std::string error_message(F&& fn) {
    try {
        fn();
    } catch (const E& e) {
        return e.what();
    }
    FAIL_CHECK("no error of the expected kind thrown");
    return "<no error>";
}

}  // namespace loom_test
