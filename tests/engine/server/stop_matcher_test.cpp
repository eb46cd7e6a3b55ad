// StopMatcher against a direct oracle: the whole text cut at the first occurrence of any stop
// string. Random texts over a small alphabet (so stop strings occur and straddle pieces), split
// into random pieces; what push() and flush() return, concatenated, must equal the cut text.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/server/stop_matcher.h"

namespace strata::server {
namespace {

std::string random_text(std::mt19937& rng, size_t n, std::string_view alphabet) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    return s;
}

TEST(StopMatcher, MatchesTheWholeTextOracleOnRandomSplits) {
    std::mt19937 rng(1234);
    int n_stopped = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        const std::string text = random_text(rng, 1 + rng() % 60, "abc d");
        std::vector<std::string> stops;
        for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) stops.push_back(random_text(rng, 1 + rng() % 4, "abc d"));
        size_t cut = std::string::npos;
        for (const std::string& s : stops) cut = std::min(cut, text.find(s));
        const std::string expected = text.substr(0, cut);

        StopMatcher m(stops);
        std::string got;
        size_t pos = 0;
        while (pos < text.size() && !m.stopped()) {
            const size_t n = std::min(text.size() - pos, static_cast<size_t>(1 + rng() % 5));
            const std::string out = m.push(std::string_view(text).substr(pos, n));
            // Whatever is released is final: it is a prefix of the answer.
            got += out;
            ASSERT_EQ(expected.compare(0, got.size(), got), 0) << "text " << text << " released " << got;
            pos += n;
        }
        got += m.flush();
        ASSERT_EQ(got, expected) << "text '" << text << "' stops '" << stops[0] << "'";
        EXPECT_EQ(m.stopped(), cut != std::string::npos);
        n_stopped += m.stopped() ? 1 : 0;
    }
    EXPECT_GT(n_stopped, 500);  // the trials exercised both outcomes
    EXPECT_LT(n_stopped, 2900);
}

TEST(StopMatcher, HoldsOnlyWhatCouldStartAStop) {
    StopMatcher m({"</end>"});
    EXPECT_EQ(m.push("hello </"), "hello ");
    EXPECT_EQ(m.push("en"), "");
    EXPECT_EQ(m.push("x more"), "</enx more");
    EXPECT_EQ(m.push(" done</end> tail"), " done");
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ(m.push("after"), "");
    EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, MultiByteTextAndNoStops) {
    StopMatcher none({});
    EXPECT_EQ(none.push("día "), "día ");
    EXPECT_EQ(none.flush(), "");
    StopMatcher m({"ñu"});
    EXPECT_EQ(m.push("año ñ"), "año ");
    EXPECT_EQ(m.push("u!"), "");
    EXPECT_TRUE(m.stopped());
}

}  // namespace
}  // namespace strata::server
