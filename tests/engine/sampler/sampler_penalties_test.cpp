// Logit-bias and repeat / presence / frequency penalties against the brute-force reference,
// and the sliding window of TokenHistory.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/sampler/penalties.h"
#include "engine/sampler/sampler.h"
#include "tests/engine/sampler/sampler_reference.h"

namespace {

// A history with many repeats: ids drawn from a small range of a larger vocabulary.
std::vector<int32_t> random_history(size_t length, int32_t n_vocab, uint32_t seed) {
    std::mt19937 engine(seed);
    const uint32_t range = static_cast<uint32_t>(std::min(n_vocab, 23));
    std::vector<int32_t> history(length);
    const int32_t stride = n_vocab / 23 + 1;  // spread the few ids over the vocabulary
    for (auto& t : history) t = static_cast<int32_t>(engine() % range) * stride % n_vocab;
    return history;
}

TEST(SamplerHistory, SlidingWindowCounts) {
    strata::TokenHistory history(3);
    for (int32_t t : {5, 5, 7, 5, 9}) history.push(t);  // window holds 7, 5, 9
    EXPECT_EQ(history.size(), 3u);
    EXPECT_EQ(history.counts().size(), 3u);
    EXPECT_EQ(history.counts().at(5), 1);
    EXPECT_EQ(history.counts().at(7), 1);
    EXPECT_EQ(history.counts().at(9), 1);
    history.clear();
    EXPECT_EQ(history.size(), 0u);
    EXPECT_TRUE(history.counts().empty());
}

TEST(SamplerHistory, ZeroKeepsNothingAndMinusOneKeepsAll) {
    strata::TokenHistory none(0);
    strata::TokenHistory all(-1);
    for (int i = 0; i < 1000; ++i) {
        none.push(i % 10);
        all.push(i % 10);
    }
    EXPECT_TRUE(none.counts().empty());
    EXPECT_EQ(all.size(), 1000u);
    EXPECT_EQ(all.counts().at(3), 100);
}

TEST(SamplerPenalties, StageMatchesReference) {
    uint32_t seed = 1;
    for (int32_t n : {7, 101, 1003}) {
        for (int last_n : {-1, 1, 5, 64}) {
            for (strata::PenaltyParams pp : {strata::PenaltyParams{1.3f, 0.0f, 0.0f},
                                             strata::PenaltyParams{1.0f, 0.7f, 0.0f},
                                             strata::PenaltyParams{1.0f, 0.0f, 0.4f},
                                             strata::PenaltyParams{0.8f, -0.5f, 0.25f}}) {
                const auto logits = strata::ref::random_logits(static_cast<size_t>(n), seed++);
                const auto tokens = random_history(150, n, seed++);
                strata::TokenHistory history(last_n);
                for (int32_t t : tokens) history.push(t);
                std::vector<float> got = logits;
                strata::apply_penalties(got, history, pp);
                const auto want = strata::ref::penalize(strata::ref::to_double(logits), tokens,
                                                        last_n, pp.repeat, pp.presence,
                                                        pp.frequency);
                int changed = 0;
                for (int32_t i = 0; i < n; ++i) {
                    EXPECT_NEAR(got[i], want[i], 1e-5) << "n=" << n << " last_n=" << last_n;
                    changed += got[i] != logits[i];
                }
                EXPECT_GT(changed, 0);
            }
        }
    }
}

TEST(SamplerPenalties, RepeatPenaltyPushesBothSignsDown) {
    std::vector<float> logits = {2.0f, -2.0f, 0.0f, 5.0f};
    strata::TokenHistory history(64);
    for (int32_t t : {0, 1, 2}) history.push(t);
    strata::apply_penalties(logits, history, {2.0f, 0.0f, 0.0f});
    EXPECT_FLOAT_EQ(logits[0], 1.0f);
    EXPECT_FLOAT_EQ(logits[1], -4.0f);
    EXPECT_FLOAT_EQ(logits[2], 0.0f);
    EXPECT_FLOAT_EQ(logits[3], 5.0f);  // not in the history
}

// The whole chain with filters off and temperature 1: probabilities are the softmax of the
// reference-penalised, biased logits.
TEST(SamplerPenalties, SamplerAppliesBiasThenPenalties) {
    const int32_t n = 257;
    const auto logits = strata::ref::random_logits(n, 77);
    const auto tokens = random_history(40, n, 78);
    strata::SamplerParams params;
    params.temperature = 1.0f;
    params.top_k = 0;
    params.top_p = 1.0f;
    params.min_p = 0.0f;
    params.repeat_penalty = 1.5f;
    params.repeat_last_n = 16;
    params.presence_penalty = 0.3f;
    params.frequency_penalty = 0.2f;
    params.logit_bias = {{tokens.back(), 2.5f}, {3, -INFINITY}, {200, -1.0f}};
    strata::Sampler sampler(params, n);
    for (int32_t t : tokens) sampler.accept(t);

    auto biased = strata::ref::to_double(logits);
    for (const auto& [id, b] : params.logit_bias) biased[id] += b;
    const auto penalised = strata::ref::penalize(biased, tokens, 16, 1.5, 0.3, 0.2);
    std::set<int32_t> finite;
    for (int32_t i = 0; i < n; ++i) {
        if (std::isfinite(penalised[i])) finite.insert(i);
    }
    const auto want = strata::ref::probabilities(penalised, finite);
    const auto got = sampler.candidates(logits);
    ASSERT_EQ(got.size(), static_cast<size_t>(n));
    for (const auto& c : got) EXPECT_NEAR(c.p, want[c.id], 1e-6) << c.id;
    for (const auto& c : got) {
        if (c.id == 3) {
            EXPECT_EQ(c.p, 0.0f);  // banned by the -inf bias
        }
    }
}

}  // namespace
