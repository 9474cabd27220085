// The environment's on/off switches (loom::env_switch; docs/options.md): the words each way in any case, the
// default for unset or empty, and a warning, with the default, for anything else (LOOM_FUSION=OFF once fused
// in silence).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "disk_cache_test_util.hpp"
#include "loom/codegen/options.hpp"
#include "loom/ir/env.hpp"

using namespace loom;

namespace {

/// Sets `var` for the scope, restoring what it was.
struct EnvScope {
    std::string var, saved;
    bool had = false;
    EnvScope(const char* v, const char* value) : var(v) {
        if (const char* old = std::getenv(v)) had = true, saved = old;
        ::setenv(v, value, 1);
    }
    ~EnvScope() {
        if (had)
            ::setenv(var.c_str(), saved.c_str(), 1);
        else
            ::unsetenv(var.c_str());
    }
};

}  // namespace

TEST_CASE("env_switch: on and off in any case, the default when unset or empty, a warning otherwise") {
    for (const char* on : {"1", "on", "ON", "true", "True", "yes"}) {
        EnvScope e("LOOM_TEST_SWITCH", on);
        CHECK_MESSAGE(env_switch("LOOM_TEST_SWITCH", false), on);
    }
    for (const char* off : {"0", "off", "OFF", "false", "No"}) {
        EnvScope e("LOOM_TEST_SWITCH", off);
        CHECK_MESSAGE(!env_switch("LOOM_TEST_SWITCH", true), off);
    }
    {
        EnvScope e("LOOM_TEST_SWITCH", "");
        CHECK(env_switch("LOOM_TEST_SWITCH", true));
        CHECK_FALSE(env_switch("LOOM_TEST_SWITCH", false));
    }
    EnvScope e("LOOM_TEST_SWITCH", "banana");
    test::StderrCapture cap;
    CHECK(env_switch("LOOM_TEST_SWITCH", true));
    CHECK(env_switch("LOOM_TEST_SWITCH", true));  // warned once
    const std::string err = cap.text();
    const std::size_t first = err.find("LOOM_TEST_SWITCH=banana is not on or off");
    CHECK(first != std::string::npos);
    CHECK(err.find("LOOM_TEST_SWITCH=banana", first + 1) == std::string::npos);
}

TEST_CASE("LOOM_FUSION=OFF and LOOM_FAST_MATH=yes are read as the words they are") {
    {
        EnvScope e("LOOM_FUSION", "OFF");
        CHECK_FALSE(environment_options().fusion);
    }
    {
        EnvScope e("LOOM_FUSION", "false");
        CHECK_FALSE(environment_options().fusion);
    }
    {
        EnvScope e("LOOM_FAST_MATH", "yes");
        CHECK(environment_options().fast_math);
    }
    EnvScope e("LOOM_FUSION", "banana");
    CHECK(environment_options().fusion);  // warned about, the default kept
}
