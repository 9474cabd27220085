// The decorator of test cases that need the CUDA toolkit (an NVRTC compile, the CUDA runtime):
// `TEST_CASE("..." * loom_test::needs_cuda())` skips them in a host-only build (LOOM_CUDA=OFF), where doctest
// then does not list them, so CTest has no such test.
#pragma once

#include <doctest/doctest.h>

#include "loom/runtime/config.hpp"

namespace loom_test {

inline doctest::skip needs_cuda() {
    return doctest::skip(LOOM_HAS_CUDA == 0);
}

}  // namespace loom_test
