// Test helper: loading a TestModel must throw exactly error type E whose message contains
// every given fragment (the key or tensor named, the values involved).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "tests/engine/model/test_model_builder.h"

namespace strata::testing {

template <typename E>
void expect_load_error(const TestModel& model, std::initializer_list<std::string_view> fragments) {
    try {
        load_config(model);
        ADD_FAILURE() << "loading succeeded, expected an error mentioning " << *fragments.begin();
    } catch (const E& e) {
        std::string what = e.what();
        for (std::string_view f : fragments) {
            EXPECT_NE(what.find(f), std::string::npos) << "missing '" << f << "' in: " << what;
        }
        EXPECT_EQ(what.find('\n'), std::string::npos) << "message should be one line: " << what;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong exception type: " << e.what();
    }
}

}  // namespace strata::testing
