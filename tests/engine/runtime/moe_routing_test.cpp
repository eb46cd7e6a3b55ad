// Top-k routing against independent formulations: Mixtral's softmax over the k largest logits
// (which renormalised routing must equal), and softmax-then-top-k without renormalisation
// (qwen2moe), in double precision; and the grouping of slots by expert.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "engine/runtime/moe_routing.h"

namespace strata {
namespace {

std::vector<float> random_logits(int64_t n_expert, int64_t n_tokens, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 3.0f);
    std::vector<float> v(static_cast<size_t>(n_expert * n_tokens));
    for (float& x : v) x = dist(rng);
    return v;
}

// The k (logit, expert) pairs with the largest logits of one token, largest first.
std::vector<std::pair<double, int>> top_logits(const float* l, int64_t n_expert, int64_t k) {
    std::vector<std::pair<double, int>> all;
    for (int e = 0; e < n_expert; ++e) all.emplace_back(l[e], e);
    std::sort(all.begin(), all.end(), [](auto a, auto b) { return a.first > b.first; });
    all.resize(static_cast<size_t>(k));
    return all;
}

struct Shape {
    int64_t n_expert, n_used, n_tokens;
};

class MoeRoutingTest : public ::testing::TestWithParam<Shape> {};

TEST_P(MoeRoutingTest, RenormalisedEqualsSoftmaxOverTopKLogits) {
    const Shape s = GetParam();
    const std::vector<float> logits = random_logits(s.n_expert, s.n_tokens, 7);
    MoeRouting r;
    route_tokens(logits.data(), s.n_tokens, {s.n_expert, s.n_used, true, 1.0f}, r);
    for (int64_t t = 0; t < s.n_tokens; ++t) {
        const auto top = top_logits(logits.data() + t * s.n_expert, s.n_expert, s.n_used);
        double z = 0;
        for (auto [l, e] : top) z += std::exp(l - top[0].first);
        for (int64_t j = 0; j < s.n_used; ++j) {
            const size_t slot = static_cast<size_t>(t * s.n_used + j);
            EXPECT_EQ(r.expert[slot], top[static_cast<size_t>(j)].second) << "token " << t << " choice " << j;
            const double want = std::exp(top[static_cast<size_t>(j)].first - top[0].first) / z;
            EXPECT_NEAR(r.weight[slot], want, 2e-6 * want + 1e-7);  // float softmax
        }
    }
}

TEST_P(MoeRoutingTest, UnnormalisedKeepsTheFullSoftmaxProbabilitiesScaled) {
    const Shape s = GetParam();
    const std::vector<float> logits = random_logits(s.n_expert, s.n_tokens, 11);
    MoeRouting r;
    route_tokens(logits.data(), s.n_tokens, {s.n_expert, s.n_used, false, 2.5f}, r);
    for (int64_t t = 0; t < s.n_tokens; ++t) {
        const float* l = logits.data() + t * s.n_expert;
        const double max = *std::max_element(l, l + s.n_expert);
        double z = 0;
        for (int64_t e = 0; e < s.n_expert; ++e) z += std::exp(l[e] - max);
        const auto top = top_logits(l, s.n_expert, s.n_used);
        for (int64_t j = 0; j < s.n_used; ++j) {
            const size_t slot = static_cast<size_t>(t * s.n_used + j);
            const double want = 2.5 * std::exp(top[static_cast<size_t>(j)].first - max) / z;
            EXPECT_NEAR(r.weight[slot], want, 2e-6 * want + 1e-7);
        }
    }
}

TEST_P(MoeRoutingTest, SlotsGroupedByExpertInTokenOrder) {
    const Shape s = GetParam();
    const std::vector<float> logits = random_logits(s.n_expert, s.n_tokens, 13);
    MoeRouting r;
    route_tokens(logits.data(), s.n_tokens, {s.n_expert, s.n_used, true, 1.0f}, r);
    ASSERT_EQ(r.offsets.size(), static_cast<size_t>(s.n_expert + 1));
    EXPECT_EQ(r.offsets.back(), s.n_tokens * s.n_used);
    std::vector<int> seen(static_cast<size_t>(s.n_tokens * s.n_used), 0);
    for (int64_t e = 0; e < s.n_expert; ++e) {
        int64_t last_token = -1;
        for (int32_t i = r.offsets[static_cast<size_t>(e)]; i < r.offsets[static_cast<size_t>(e) + 1]; ++i) {
            const int32_t slot = r.by_expert[static_cast<size_t>(i)];
            ++seen[static_cast<size_t>(slot)];
            EXPECT_EQ(r.expert[static_cast<size_t>(slot)], e);
            EXPECT_GT(r.token_of(slot), last_token);  // a token picks an expert at most once
            last_token = r.token_of(slot);
        }
    }
    for (int c : seen) EXPECT_EQ(c, 1);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MoeRoutingTest,
                         ::testing::Values(Shape{4, 2, 1}, Shape{8, 2, 37}, Shape{128, 8, 19}, Shape{5, 5, 3},
                                           Shape{3, 1, 64}));

TEST(MoeRouting, TiesGoToTheLowerExpert) {
    const std::vector<float> logits = {1.0f, 2.0f, 2.0f, 2.0f};
    MoeRouting r;
    route_tokens(logits.data(), 1, {4, 2, true, 1.0f}, r);
    EXPECT_EQ(r.expert[0], 1);
    EXPECT_EQ(r.expert[1], 2);
    EXPECT_FLOAT_EQ(r.weight[0], 0.5f);
}

}  // namespace
}  // namespace strata
