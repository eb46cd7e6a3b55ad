// Rejection sampling of drafted chains (engine/runtime/spec_sampling.h), statistically: a
// Markov "target" and "draft" over five tokens, sequences of three tokens made pass by pass
// with judge_chain, and the sequence frequencies against the target's exact probabilities
// (chi-square at p = 0.001, critical value from the Wilson-Hilferty approximation). Drafts
// from a model (q given), from lookup (one-hot), and a draft that puts mass where the target
// has none. A deliberately wrong rule (keep every draft) must fail the same test.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/spec_sampling.h"

namespace strata {
namespace {

constexpr int kV = 5;
constexpr int kLen = 3;
using Table = std::array<std::array<float, kV>, kV>;  // [previous token][next token]

Table random_table(uint32_t seed, int banned) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.05f, 1.0f);
    Table t{};
    for (auto& row : t) {
        float sum = 0;
        for (int j = 0; j < kV; ++j) sum += row[static_cast<size_t>(j)] = (j == banned ? 0.0f : u(rng));
        for (float& x : row) x /= sum;
    }
    return t;
}

// Chi-square critical value at p = 0.001 (Wilson-Hilferty).
double chi2_critical(int df) {
    const double z = 3.090232;  // the standard normal's 0.999 quantile
    const double a = 2.0 / (9.0 * df);
    return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

enum class DraftKind { Model, Lookup };

struct Harness {
    Table p, q;
    DraftKind kind = DraftKind::Model;
    int k = 3;
    bool keep_everything = false;  // the wrong rule
    std::mt19937 draft_rng{11};
    SamplerRng rng{12};

    // One sequence of kLen tokens after token 0, pass by pass.
    std::vector<TokenId> sequence() {
        std::vector<TokenId> out;
        TokenId last = 0;
        std::vector<float> row(kV);
        while (static_cast<int>(out.size()) < kLen) {
            std::vector<TokenId> draft;
            std::vector<std::vector<float>> qs;
            TokenId prev = last;
            for (int i = 0; i < k; ++i) {
                if (kind == DraftKind::Lookup) {
                    draft.push_back((prev + 1) % kV);  // a fixed guess, as a lookup makes
                } else {
                    const auto& qrow = q[static_cast<size_t>(prev)];
                    std::discrete_distribution<int> d(qrow.begin(), qrow.end());
                    draft.push_back(d(draft_rng));
                    qs.emplace_back(qrow.begin(), qrow.end());
                }
                prev = draft.back();
            }
            const auto target_p = [&](int64_t i) -> std::span<const float> {
                const TokenId before = i == 0 ? last : draft[static_cast<size_t>(i - 1)];
                const auto& prow = p[static_cast<size_t>(before)];
                row.assign(prow.begin(), prow.end());
                return row;
            };
            ChainVerdict v = judge_chain(draft, target_p, qs, rng);
            if (keep_everything) v = {k, draft.back()};
            for (int64_t i = 0; i < v.accepted; ++i) out.push_back(draft[static_cast<size_t>(i)]);
            if (!keep_everything) out.push_back(v.next);
            last = out.back();
        }
        out.resize(kLen);
        return out;
    }

    // Chi-square of n sequences against the target's probabilities; cells with probability 0
    // must never occur.
    double chi_square(int n, int& df) {
        std::vector<int> count(kV * kV * kV, 0);
        for (int r = 0; r < n; ++r) {
            const std::vector<TokenId> s = sequence();
            ++count[static_cast<size_t>((s[0] * kV + s[1]) * kV + s[2])];
        }
        double chi = 0;
        df = -1;
        for (int a = 0; a < kV; ++a) {
            for (int b = 0; b < kV; ++b) {
                for (int c = 0; c < kV; ++c) {
                    const double pr = static_cast<double>(p[0][static_cast<size_t>(a)]) * p[static_cast<size_t>(a)][static_cast<size_t>(b)] *
                                      p[static_cast<size_t>(b)][static_cast<size_t>(c)];
                    const int got = count[static_cast<size_t>((a * kV + b) * kV + c)];
                    if (pr == 0.0) {
                        EXPECT_EQ(got, 0) << "a sequence the target never makes: " << a << " " << b << " " << c;
                        continue;
                    }
                    const double want = pr * n;
                    chi += (got - want) * (got - want) / want;
                    ++df;
                }
            }
        }
        return chi;
    }
};

TEST(SpecSampling, ModelDraftsKeepTheTargetsDistribution) {
    Harness h;
    h.p = random_table(1, /*banned=*/4);
    h.q = random_table(2, /*banned=*/-1);  // the draft proposes token 4, which the target never makes
    int df = 0;
    const double chi = h.chi_square(60000, df);
    EXPECT_EQ(df, 4 * 4 * 4 - 1);
    EXPECT_LT(chi, chi2_critical(df)) << "df " << df;
}

TEST(SpecSampling, LookupDraftsKeepTheTargetsDistribution) {
    Harness h;
    h.kind = DraftKind::Lookup;
    h.p = random_table(3, /*banned=*/-1);
    int df = 0;
    const double chi = h.chi_square(60000, df);
    EXPECT_EQ(df, kV * kV * kV - 1);
    EXPECT_LT(chi, chi2_critical(df)) << "df " << df;
}

TEST(SpecSampling, ADraftEqualToTheTargetIsAlwaysKept) {
    Harness h;
    h.p = h.q = random_table(4, /*banned=*/-1);
    const std::vector<TokenId> draft = {1, 2, 3};
    std::vector<float> row;
    int64_t kept = 0;
    for (int r = 0; r < 2000; ++r) {
        std::vector<std::vector<float>> qs;
        TokenId prev = 0;
        for (TokenId d : draft) {
            qs.emplace_back(h.q[static_cast<size_t>(prev)].begin(), h.q[static_cast<size_t>(prev)].end());
            prev = d;
        }
        const auto target_p = [&](int64_t i) -> std::span<const float> {
            const TokenId before = i == 0 ? 0 : draft[static_cast<size_t>(i - 1)];
            row.assign(h.p[static_cast<size_t>(before)].begin(), h.p[static_cast<size_t>(before)].end());
            return row;
        };
        kept += judge_chain(draft, target_p, qs, h.rng).accepted;
    }
    EXPECT_EQ(kept, 3 * 2000);  // p / q = 1: u < 1 always
}

TEST(SpecSampling, TheTestRejectsARuleThatKeepsEveryDraft) {
    Harness h;
    h.keep_everything = true;
    h.p = random_table(1, /*banned=*/-1);
    h.q = random_table(2, /*banned=*/-1);
    int df = 0;
    const double chi = h.chi_square(20000, df);
    EXPECT_GT(chi, chi2_critical(df)) << "the chi-square test has no power";
}

TEST(SpecSampling, DrawIndexFollowsTheWeightsAndRefusesAllZero) {
    const std::vector<float> w = {0.0f, 1.0f, 0.0f, 3.0f};
    EXPECT_EQ(draw_index(w, 0.0), 1);
    EXPECT_EQ(draw_index(w, 0.2499), 1);
    EXPECT_EQ(draw_index(w, 0.25), 3);
    EXPECT_EQ(draw_index(w, 0.999999), 3);
    EXPECT_THROW(draw_index(std::vector<float>{0.0f, 0.0f}, 0.5), Error);
}

}  // namespace
}  // namespace strata
