// The draft-length chooser (engine/runtime/draft_length.h): its acceptance estimate from
// verdicts, its pass-cost line from observed passes, and the k it picks against the expected
// tokens per second worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/runtime/draft_length.h"

namespace strata {
namespace {

TEST(DraftLength, EstimatesAcceptanceFromTheTokensTried) {
    DraftLengthPrior prior;
    prior.weight = 0;  // the verdicts alone
    DraftLength d(8, prior);
    // 8 drafted, 3 kept: 4 positions tried (the 4th rejected), 3 kept.
    d.observe_verdict(8, 3);
    EXPECT_NEAR(d.acceptance(), 0.75, 1e-12);
    // Every drafted token kept: 4 tried, 4 kept (decayed counts of the first verdict).
    d.observe_verdict(4, 4);
    EXPECT_NEAR(d.acceptance(), (3 * 0.97 + 4) / (4 * 0.97 + 4), 1e-12);
}

TEST(DraftLength, FitsALineThroughThePassTimes) {
    DraftLength d(8);
    for (int i = 0; i < 5; ++i) {
        d.observe_pass(1, 0.010);
        d.observe_pass(5, 0.030);
    }
    EXPECT_NEAR(d.pass_seconds(1), 0.010, 1e-9);
    EXPECT_NEAR(d.pass_seconds(3), 0.020, 1e-9);
    EXPECT_NEAR(d.pass_seconds(9), 0.050, 1e-9);
}

TEST(DraftLength, PicksTheLengthOfTheMostTokensPerSecond) {
    DraftLengthPrior prior;
    prior.weight = 0;
    // Flat pass costs (memory-bound) and a good draft: the longest draft wins.
    DraftLength flat(8, prior);
    for (int i = 0; i < 4; ++i) flat.observe_verdict(10, 9);  // a = 0.9 per position
    flat.observe_pass(1, 0.1);
    flat.observe_pass(9, 0.1);
    EXPECT_EQ(flat.choose(), 8);
    // Steep pass costs, 0.1 s + 0.05 s per extra token, a = 0.5: E(k) / T(k) by hand.
    DraftLength steep(8, prior);
    steep.observe_verdict(2, 1);  // 1 kept of 2 tried
    steep.observe_pass(1, 0.1);
    steep.observe_pass(3, 0.2);
    int best = 1;
    double best_rate = 0;
    for (int k = 1; k <= 8; ++k) {
        const double e = (1 - std::pow(0.5, k + 1)) / 0.5;
        const double rate = e / (0.1 + 0.05 * k);
        EXPECT_NEAR(steep.rate(k), rate, 1e-9) << "k " << k;
        if (rate > best_rate) best_rate = rate, best = k;
    }
    EXPECT_EQ(steep.choose(), best);
    EXPECT_LT(best, 8);
    EXPECT_THROW(DraftLength(0), ArgumentError);
}

}  // namespace
}  // namespace strata
