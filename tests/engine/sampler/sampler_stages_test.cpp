// Each filtering stage alone against the brute-force reference, on random logits of odd sizes,
// plus the edge cases: ties, -inf, k beyond the vocabulary, p at its bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "engine/sampler/sampler_stages.h"
#include "tests/engine/sampler/sampler_reference.h"

namespace {

using strata::CandidateList;

constexpr size_t kSizes[] = {1, 2, 7, 33, 257, 1001, 4099};

CandidateList make_list(const std::vector<float>& logits) {
    CandidateList list;
    list.assign(logits);
    return list;
}

std::set<int32_t> ids_of(const CandidateList& list) {
    std::set<int32_t> ids;
    for (const auto& c : list.tokens) ids.insert(c.id);
    EXPECT_EQ(ids.size(), list.tokens.size()) << "a token appears twice";
    return ids;
}

void expect_sorted(const CandidateList& list) {
    ASSERT_TRUE(list.sorted);
    for (size_t i = 1; i < list.tokens.size(); ++i) {
        ASSERT_TRUE(strata::candidate_before(list.tokens[i - 1], list.tokens[i])) << i;
    }
}

TEST(SamplerStages, SoftmaxMatchesReference) {
    for (size_t n : kSizes) {
        const auto logits = strata::ref::random_logits(n, static_cast<uint32_t>(n));
        auto list = make_list(logits);
        strata::softmax(list);
        const auto want = strata::ref::probabilities(strata::ref::to_double(logits),
                                                     strata::ref::all_ids(n));
        for (const auto& c : list.tokens) EXPECT_NEAR(c.p, want[c.id], 1e-6) << n << " " << c.id;
    }
}

TEST(SamplerStages, TopKMatchesReference) {
    uint32_t seed = 1;
    for (size_t n : kSizes) {
        for (int k : {1, 2, 5, 40, 1000, 5000}) {
            const auto logits = strata::ref::random_logits(n, seed++);
            auto list = make_list(logits);
            strata::apply_top_k(list, k);
            const auto want = strata::ref::top_k(strata::ref::to_double(logits),
                                                 strata::ref::all_ids(n), k);
            EXPECT_EQ(ids_of(list), want) << "n=" << n << " k=" << k;
            EXPECT_EQ(list.tokens.size(), std::min<size_t>(n, static_cast<size_t>(k)));
            expect_sorted(list);
        }
    }
}

TEST(SamplerStages, TopKZeroIsOffAndTiesGoToLowestIds) {
    const std::vector<float> logits = {1, 3, 3, 0, 3, -INFINITY, 3};
    auto off = make_list(logits);
    strata::apply_top_k(off, 0);
    EXPECT_EQ(off.tokens.size(), logits.size());
    EXPECT_FALSE(off.sorted);

    auto two = make_list(logits);
    strata::apply_top_k(two, 2);
    EXPECT_EQ(ids_of(two), (std::set<int32_t>{1, 2}));
    auto all = make_list(logits);
    strata::apply_top_k(all, 100);  // clamped; -inf sorts last
    ASSERT_EQ(all.tokens.size(), logits.size());
    EXPECT_EQ(all.tokens.back().id, 5);
}

// assign_top_k keeps what assign + apply_top_k keep, in the same order: random logits, logits
// rounded to few values (ties across the threshold), and many -inf (the threshold itself -inf).
TEST(SamplerStages, AssignTopKEqualsAssignThenTopK) {
    uint32_t seed = 7;
    for (size_t n : kSizes) {
        for (int shape = 0; shape < 3; ++shape) {
            auto logits = strata::ref::random_logits(n, seed++);
            for (size_t i = 0; i < n; ++i) {
                if (shape == 1) logits[i] = std::round(logits[i] / 4);
                if (shape == 2 && i % 3 != 0) logits[i] = -INFINITY;
            }
            for (size_t k : {size_t{1}, size_t{2}, size_t{5}, size_t{40}, n > 1 ? n - 1 : 1, n, n + 3}) {
                auto want = make_list(logits);
                strata::apply_top_k(want, static_cast<int32_t>(k));
                CandidateList got;
                got.assign_top_k(logits, k);
                const std::string where = "n=" + std::to_string(n) + " shape=" + std::to_string(shape) +
                                          " k=" + std::to_string(k);
                ASSERT_EQ(got.tokens.size(), want.tokens.size()) << where;
                for (size_t i = 0; i < got.tokens.size(); ++i) {
                    EXPECT_EQ(got.tokens[i].id, want.tokens[i].id) << where << " at " << i;
                    EXPECT_EQ(got.tokens[i].logit, want.tokens[i].logit) << where << " at " << i;
                }
                expect_sorted(got);
            }
        }
    }
}

// The kept ids must be the best |kept| by rank, and |kept| must lie between the nucleus
// lengths at p -/+ slack.
void expect_nucleus(const CandidateList& list, const strata::ref::Ranked& ref, double p,
                    const std::string& where) {
    const size_t kept = list.tokens.size();
    const size_t shortest = strata::ref::top_p_length(ref, std::max(0.0, p - strata::ref::kSlack));
    const size_t longest = strata::ref::top_p_length(ref, p + strata::ref::kSlack);
    EXPECT_GE(kept, shortest) << where;
    EXPECT_LE(kept, longest) << where;
    std::vector<bool> seen(ref.rank.size(), false);
    for (const auto& c : list.tokens) {
        ASSERT_LT(ref.rank[c.id], kept) << where << ": token " << c.id << " is not in the top";
        ASSERT_FALSE(seen[c.id]) << where << ": token " << c.id << " appears twice";
        seen[c.id] = true;
    }
}

TEST(SamplerStages, TopPMatchesReference) {
    uint32_t seed = 100;
    for (size_t n : kSizes) {
        for (float p : {0.0f, 0.1f, 0.5f, 0.9f, 0.95f, 0.999f}) {
            for (bool presorted : {false, true}) {
                const auto logits = strata::ref::random_logits(n, seed++);
                auto list = make_list(logits);
                if (presorted) strata::apply_top_k(list, static_cast<int32_t>(n));
                strata::apply_top_p(list, p);
                const auto ref = strata::ref::rank_all(strata::ref::to_double(logits));
                expect_nucleus(list, ref, p, "n=" + std::to_string(n) + " p=" + std::to_string(p));
                if (presorted || n < 2048) expect_sorted(list);
            }
        }
    }
}

// Large unsorted lists take the histogram path: wide and narrow logit ranges, many exact ties
// (which straddle the cut), and banned tokens.
TEST(SamplerStages, TopPOnLargeVocabulariesMatchesReference) {
    uint32_t seed = 300;
    for (size_t n : {2048u, 65537u, 262144u}) {
        for (auto [lo, hi] : {std::pair{-10.0f, 20.0f}, {-40.0f, 40.0f}, {-1.0f, 1.0f}}) {
            auto logits = strata::ref::random_logits(n, seed++, lo, hi);
            for (size_t i = 0; i < n; i += 5) logits[i] = std::round(logits[i]);  // ties
            for (size_t i = 3; i < n; i += 11) logits[i] = -INFINITY;
            const auto ref = strata::ref::rank_all(strata::ref::to_double(logits));
            for (float p : {0.0f, 0.05f, 0.5f, 0.95f, 0.99999f}) {
                auto list = make_list(logits);
                strata::apply_top_p(list, p);
                expect_nucleus(list, ref, p,
                               "n=" + std::to_string(n) + " p=" + std::to_string(p) +
                                   " range=" + std::to_string(hi));
            }
        }
    }
}

TEST(SamplerStages, TopPOneIsOffAndZeroKeepsTheBest) {
    const auto logits = strata::ref::random_logits(99, 7);
    auto off = make_list(logits);
    strata::apply_top_p(off, 1.0f);
    EXPECT_EQ(off.tokens.size(), 99u);
    auto zero = make_list(logits);
    strata::apply_top_p(zero, 0.0f);
    ASSERT_EQ(zero.tokens.size(), 1u);
    EXPECT_EQ(zero.tokens[0].id, strata::ref::sorted_ids(strata::ref::to_double(logits))[0]);
}

TEST(SamplerStages, TopPIgnoresNegInfTokens) {
    std::vector<float> logits = strata::ref::random_logits(301, 8);
    for (size_t i = 0; i < logits.size(); i += 3) logits[i] = -INFINITY;
    auto list = make_list(logits);
    strata::apply_top_p(list, 0.999999f);
    for (const auto& c : list.tokens) EXPECT_NE(c.id % 3, 0) << c.id;
}

TEST(SamplerStages, MinPMatchesReference) {
    uint32_t seed = 200;
    for (size_t n : kSizes) {
        for (float m : {0.001f, 0.01f, 0.05f, 0.3f, 0.9f, 1.0f}) {
            const auto logits = strata::ref::random_logits(n, seed++);
            auto list = make_list(logits);
            strata::apply_min_p(list, m);
            const auto x = strata::ref::to_double(logits);
            const auto all = strata::ref::all_ids(n);
            const auto got = ids_of(list);
            const auto loose = strata::ref::min_p(x, all, m * (1 - strata::ref::kSlack));
            const auto tight = strata::ref::min_p(x, all, m * (1 + strata::ref::kSlack));
            EXPECT_TRUE(std::includes(loose.begin(), loose.end(), got.begin(), got.end()))
                << "n=" << n << " min_p=" << m;
            EXPECT_TRUE(std::includes(got.begin(), got.end(), tight.begin(), tight.end()))
                << "n=" << n << " min_p=" << m;
            if (m < 1.0f) {
                EXPECT_EQ(got, strata::ref::min_p(x, all, m));  // no token sits at the edge
            }
        }
    }
}

TEST(SamplerStages, MinPZeroIsOffAndOneKeepsAllMaxima) {
    const std::vector<float> logits = {2, 5, 5, -INFINITY, 4.999f};
    auto off = make_list(logits);
    strata::apply_min_p(off, 0.0f);
    EXPECT_EQ(off.tokens.size(), logits.size());
    auto one = make_list(logits);
    strata::apply_min_p(one, 1.0f);
    EXPECT_EQ(ids_of(one), (std::set<int32_t>{1, 2}));
}

TEST(SamplerStages, TemperatureThenSoftmaxMatchesReference) {
    const auto logits = strata::ref::random_logits(513, 9);
    for (float t : {0.01f, 0.5f, 1.0f, 3.0f}) {
        auto list = make_list(logits);
        strata::apply_temperature(list, t);
        strata::softmax(list);
        const auto want = strata::ref::probabilities(strata::ref::to_double(logits),
                                                     strata::ref::all_ids(513), t);
        for (const auto& c : list.tokens) EXPECT_NEAR(c.p, want[c.id], 2e-6) << t << " " << c.id;
    }
}

TEST(SamplerStages, TemperatureDoesNotOverflowHugeLogits) {
    auto list = make_list({3e38f, 2.9e38f, -3e38f});
    strata::apply_temperature(list, 0.01f);
    strata::softmax(list);
    EXPECT_FLOAT_EQ(list.tokens[0].p, 1.0f);
    EXPECT_FLOAT_EQ(list.tokens[1].p, 0.0f);
    EXPECT_FLOAT_EQ(list.tokens[2].p, 0.0f);
}

TEST(SamplerStages, PickIndexIsInverseCdfAndSkipsZeroProbability) {
    CandidateList list;
    list.tokens = {{0, 0, 0.25f}, {1, 0, 0.0f}, {2, 0, 0.5f}, {3, 0, 0.25f}, {4, 0, 0.0f}};
    EXPECT_EQ(strata::pick_index(list, 0.0), 0u);
    EXPECT_EQ(strata::pick_index(list, 0.2499), 0u);
    EXPECT_EQ(strata::pick_index(list, 0.25), 2u);
    EXPECT_EQ(strata::pick_index(list, 0.7499), 2u);
    EXPECT_EQ(strata::pick_index(list, 0.75), 3u);
    EXPECT_EQ(strata::pick_index(list, 0.9999999999), 3u);
}

}  // namespace
