// Hot-first ordering against a brute-force check on random counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/core/error.h"
#include "predictor/neuron_order.h"

namespace {

TEST(NeuronOrder, IsAPermutationSortedByCountAndStable) {
    std::mt19937 rng(7);
    strata::ActivationStats stats;
    stats.n_tokens = 1000;
    stats.active_count.resize(517);
    for (auto& c : stats.active_count) c = rng() % 50;  // many ties on purpose
    const auto order = strata::hot_first_order(stats);
    ASSERT_EQ(order.size(), stats.active_count.size());
    std::vector<int32_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], static_cast<int32_t>(i));
    for (size_t i = 1; i < order.size(); ++i) {
        const auto a = stats.active_count[order[i - 1]], b = stats.active_count[order[i]];
        ASSERT_GE(a, b);
        if (a == b) {
            ASSERT_LT(order[i - 1], order[i]) << "ties must keep the original order";
        }
    }
}

TEST(NeuronOrder, PrefixCoveringMatchesBruteForce) {
    strata::ActivationStats stats;
    stats.n_tokens = 10;
    stats.active_count = {1, 9, 0, 5, 5};  // total 20; order 1,3,4,0,2
    const auto order = strata::hot_first_order(stats);
    EXPECT_EQ(strata::prefix_covering(stats, order, 0.0), 0u);
    EXPECT_EQ(strata::prefix_covering(stats, order, 0.45), 1u);  // 9 >= 9
    EXPECT_EQ(strata::prefix_covering(stats, order, 0.5), 2u);   // 9 < 10 <= 14
    EXPECT_EQ(strata::prefix_covering(stats, order, 1.0), 4u);   // the zero neuron is not needed
    EXPECT_THROW(strata::prefix_covering(stats, order, 1.5), strata::ArgumentError);
    EXPECT_DOUBLE_EQ(stats.activation_rate(1), 0.9);
}

}  // namespace
