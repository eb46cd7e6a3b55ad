// Sampler end to end: greedy, the random draw (chi-square against the intended distribution),
// the full default chain against the reference, and reproducibility from the seed.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/sampler/sampler.h"
#include "tests/engine/sampler/sampler_reference.h"

namespace {

strata::SamplerParams unfiltered(float temperature, uint32_t seed) {
    strata::SamplerParams params;
    params.temperature = temperature;
    params.top_k = 0;
    params.top_p = 1.0f;
    params.min_p = 0.0f;
    params.seed = seed;
    return params;
}

// Draws `n_draws` tokens and checks the counts against `p`: every category within 4 sigma, and
// Pearson's chi-square below its 1e-4 upper quantile (approximated as df + 4.5 sqrt(2 df) + 4).
void expect_frequencies(strata::Sampler& sampler, const std::vector<float>& logits,
                        const std::vector<double>& p, int n_draws) {
    std::vector<int> count(p.size(), 0);
    for (int i = 0; i < n_draws; ++i) ++count[static_cast<size_t>(sampler.sample(logits))];
    double chi2 = 0;
    int df = -1;
    for (size_t i = 0; i < p.size(); ++i) {
        const double expected = n_draws * p[i];
        if (p[i] == 0) {
            EXPECT_EQ(count[i], 0) << "token " << i << " has probability 0";
            continue;
        }
        const double sigma = std::sqrt(n_draws * p[i] * (1 - p[i]));
        EXPECT_LT(std::abs(count[i] - expected), 4 * sigma) << "token " << i;
        chi2 += (count[i] - expected) * (count[i] - expected) / expected;
        ++df;
    }
    EXPECT_LT(chi2, df + 4.5 * std::sqrt(2.0 * df) + 4) << "df=" << df;
}

const std::vector<double> kProbs = {0.4, 0.25, 0.15, 0.1, 0.06, 0.04};

std::vector<float> log_of(const std::vector<double>& p) {
    std::vector<float> logits;
    for (double x : p) logits.push_back(static_cast<float>(std::log(x)));
    return logits;
}

TEST(SamplerGreedy, ArgmaxOnRandomLogits) {
    for (size_t n : {1u, 2u, 31u, 1001u, 65537u}) {
        const auto logits = strata::ref::random_logits(n, static_cast<uint32_t>(n) + 3);
        strata::Sampler sampler(unfiltered(0.0f, 1), static_cast<int32_t>(n));
        const int32_t want = strata::ref::sorted_ids(strata::ref::to_double(logits))[0];
        EXPECT_EQ(sampler.sample(logits), want) << n;
        const auto c = sampler.candidates(logits);
        ASSERT_EQ(c.size(), 1u);
        EXPECT_EQ(c[0].id, want);
        EXPECT_EQ(c[0].p, 1.0f);
    }
}

TEST(SamplerGreedy, TiesGoToLowestId) {
    const std::vector<float> logits = {-INFINITY, 1.0f, 4.0f, 2.0f, 4.0f, 4.0f};
    strata::SamplerParams params;  // default filters, greedy
    params.temperature = 0.0f;
    strata::Sampler sampler(params, 6);
    EXPECT_EQ(sampler.sample(logits), 2);
    EXPECT_EQ(sampler.candidates(logits)[0].id, 2);
}

TEST(SamplerGreedy, ArgmaxIsTakenAfterBiasAndPenalties) {
    const std::vector<float> logits = {1.0f, 3.0f, 2.5f, 0.0f};
    auto params = unfiltered(0.0f, 1);
    params.repeat_penalty = 1.5f;  // 3.0 -> 2.0 once token 1 was seen
    strata::Sampler sampler(params, 4);
    EXPECT_EQ(sampler.sample(logits), 1);
    sampler.accept(1);
    EXPECT_EQ(sampler.sample(logits), 2);
    params.repeat_penalty = 1.0f;
    params.logit_bias = {{3, 10.0f}, {1, -INFINITY}};
    strata::Sampler biased(params, 4);
    EXPECT_EQ(biased.sample(logits), 3);
}

TEST(SamplerDraw, FrequenciesMatchProbabilities) {
    strata::Sampler sampler(unfiltered(1.0f, 1234), static_cast<int32_t>(kProbs.size()));
    expect_frequencies(sampler, log_of(kProbs), kProbs, 200000);
}

TEST(SamplerDraw, TemperatureReshapesTheDistribution) {
    // temperature 2: p_i proportional to sqrt(p_i).
    std::vector<double> flat;
    double sum = 0;
    for (double x : kProbs) sum += std::sqrt(x);
    for (double x : kProbs) flat.push_back(std::sqrt(x) / sum);
    strata::Sampler sampler(unfiltered(2.0f, 99), static_cast<int32_t>(kProbs.size()));
    expect_frequencies(sampler, log_of(kProbs), flat, 200000);
}

TEST(SamplerDraw, TinyTemperatureIsAlmostGreedy) {
    strata::Sampler sampler(unfiltered(0.01f, 5), static_cast<int32_t>(kProbs.size()));
    const auto logits = log_of(kProbs);  // gap ln(0.4/0.25) / 0.01 = 47 nats
    for (int i = 0; i < 20000; ++i) ASSERT_EQ(sampler.sample(logits), 0);
}

TEST(SamplerDraw, DefaultChainMatchesReferenceAndDrawsFromIt) {
    const size_t n = 1001;
    const auto logits = strata::ref::random_logits(n, 4242, -3.0f, 3.0f);
    strata::SamplerParams params;  // defaults: top-k 40, top-p 0.95, min-p 0.05, temp 0.8
    params.seed = 17;
    strata::Sampler sampler(params, static_cast<int32_t>(n));

    const auto x = strata::ref::to_double(logits);
    auto kept = strata::ref::top_k(x, strata::ref::all_ids(n), 40);
    kept = strata::ref::top_p(x, kept, 0.95);
    kept = strata::ref::min_p(x, kept, 0.05);
    const auto want = strata::ref::probabilities(x, kept, 0.8);

    const auto got = sampler.candidates(logits);
    std::set<int32_t> got_ids;
    for (const auto& c : got) {
        got_ids.insert(c.id);
        EXPECT_NEAR(c.p, want[c.id], 1e-6) << c.id;
    }
    EXPECT_EQ(got_ids, kept);
    EXPECT_GT(kept.size(), 3u);
    EXPECT_LT(kept.size(), 40u);
    expect_frequencies(sampler, logits, want, 50000);
}

TEST(SamplerSeed, SameSeedSameSequenceDifferentSeedsDiffer) {
    const auto logits = strata::ref::random_logits(5003, 8, -2.0f, 2.0f);
    auto run = [&](uint32_t seed) {
        strata::SamplerParams params;
        params.seed = seed;
        strata::Sampler sampler(params, 5003);
        std::vector<int32_t> tokens;
        for (int i = 0; i < 64; ++i) tokens.push_back(sampler.sample(logits));
        return tokens;
    };
    EXPECT_EQ(run(42), run(42));
    EXPECT_NE(run(42), run(43));
    EXPECT_NE(run(0), run(1));
}

TEST(SamplerSeed, ResetReplaysTheSequence) {
    const auto logits = strata::ref::random_logits(300, 9, -2.0f, 2.0f);
    auto params = unfiltered(1.0f, strata::SamplerParams::kRandomSeed);
    params.repeat_penalty = 1.3f;
    strata::Sampler sampler(params, 300);
    EXPECT_NE(sampler.seed(), strata::SamplerParams::kRandomSeed);
    std::vector<int32_t> first, second;
    for (int i = 0; i < 50; ++i) sampler.accept(first.emplace_back(sampler.sample(logits)));
    sampler.reset();
    for (int i = 0; i < 50; ++i) sampler.accept(second.emplace_back(sampler.sample(logits)));
    EXPECT_EQ(first, second);

    params.seed = sampler.seed();  // a reported random seed reproduces the run
    strata::Sampler replay(params, 300);
    std::vector<int32_t> third;
    for (int i = 0; i < 50; ++i) replay.accept(third.emplace_back(replay.sample(logits)));
    EXPECT_EQ(first, third);
}

// Pins the draw to mt19937's standard-defined outputs: the same on every standard library.
TEST(SamplerSeed, UniformIsBuiltFromRawOutputs) {
    strata::SamplerRng rng(2024);
    std::mt19937 engine(2024);
    for (int i = 0; i < 1000; ++i) {
        const uint64_t high = engine() >> 5, low = engine() >> 6;
        const double u = rng.uniform01();
        EXPECT_EQ(u, static_cast<double>(high * 67108864 + low) / 9007199254740992.0);
        ASSERT_GE(u, 0.0);
        ASSERT_LT(u, 1.0);
    }
    std::mt19937 standard;  // [rand.predef]: the 10000th output of the default seed
    standard.discard(9999);
    EXPECT_EQ(standard(), 4123659995u);
}

}  // namespace
