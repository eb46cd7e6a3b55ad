// A/B switches read from the environment (engine/core/env_switch.h): which values turn a
// default-on behaviour off and a default-off behaviour on.
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine/core/env_switch.h"

namespace {

constexpr const char* kName = "STRATA_TEST_ENV_SWITCH";

TEST(EnvSwitch, OnlyZeroTurnsADefaultOnBehaviourOff) {
    unsetenv(kName);
    EXPECT_FALSE(strata::env_turned_off(kName));
    setenv(kName, "0", 1);
    EXPECT_TRUE(strata::env_turned_off(kName));
    for (const char* v : {"1", "", "00", "off"}) {
        setenv(kName, v, 1);
        EXPECT_FALSE(strata::env_turned_off(kName)) << "\"" << v << "\"";
    }
    unsetenv(kName);
}

TEST(EnvSwitch, AnyValueButEmptyOrZeroTurnsADefaultOffBehaviourOn) {
    unsetenv(kName);
    EXPECT_FALSE(strata::env_turned_on(kName));
    for (const char* v : {"", "0"}) {
        setenv(kName, v, 1);
        EXPECT_FALSE(strata::env_turned_on(kName)) << "\"" << v << "\"";
    }
    for (const char* v : {"1", "yes", "2"}) {
        setenv(kName, v, 1);
        EXPECT_TRUE(strata::env_turned_on(kName)) << "\"" << v << "\"";
    }
    unsetenv(kName);
}

}  // namespace
