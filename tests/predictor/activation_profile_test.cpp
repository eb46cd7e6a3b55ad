// Magnitude histograms against exact sorted quantiles of random heavy-tailed samples, and the
// stats file's round trip and refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/core/error.h"
#include "predictor/activation_profile.h"
#include "predictor/activation_profile_file.h"

namespace {

using strata::ActivationProfile;
using strata::ActivationSite;
using strata::MagnitudeHistogram;

std::vector<float> laplace_samples(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::exponential_distribution<float> e(20.0f);
    std::vector<float> v(n);
    for (float& x : v) x = (rng() & 1 ? 1.0f : -1.0f) * e(rng);
    return v;
}

TEST(MagnitudeHistogram, QuantileMatchesSortedSamplesToHalfAPercentOfS) {
    const std::vector<float> v = laplace_samples(200000, 3);
    MagnitudeHistogram h;
    h.add(v.data(), static_cast<int64_t>(v.size()));
    std::vector<float> mag(v.size());
    std::transform(v.begin(), v.end(), mag.begin(), [](float x) { return std::fabs(x); });
    std::sort(mag.begin(), mag.end());
    for (double s : {0.1, 0.25, 0.4, 0.5, 0.6, 0.7, 0.9}) {
        const double t = h.quantile(s);
        // The fraction of samples the threshold actually skips.
        const double skipped = static_cast<double>(std::lower_bound(mag.begin(), mag.end(), static_cast<float>(t)) - mag.begin()) /
                               static_cast<double>(mag.size());
        EXPECT_NEAR(skipped, s, 0.005 * s) << "s = " << s << ", t = " << t;
        EXPECT_NEAR(h.fraction_below(t), s, 1e-9);
    }
    EXPECT_EQ(h.quantile(0.0), 0.0);
}

TEST(MagnitudeHistogram, MergeAddsCountsAndZerosGoToTheFirstBin) {
    MagnitudeHistogram a, b;
    const std::vector<float> va = laplace_samples(1000, 1), vb = laplace_samples(777, 2);
    a.add(va.data(), 1000);
    b.add(vb.data(), 777);
    b.add(0.0f);
    a.merge(b);
    EXPECT_EQ(a.total(), 1778u);
    EXPECT_EQ(MagnitudeHistogram::bin_of(0.0f), 0);
    EXPECT_EQ(MagnitudeHistogram::bin_of(1e9f), MagnitudeHistogram::kBins - 1);
    EXPECT_EQ(MagnitudeHistogram::bin_of(-1.0f), MagnitudeHistogram::bin_of(1.0f));
}

ActivationProfile random_profile() {
    ActivationProfile p;
    p.model_name = "m.gguf";
    p.model_file_bytes = 123456;
    p.model_header_hash = "abc";
    p.text_name = "genesis.txt";
    p.n_tokens = 900;
    std::mt19937 rng(5);
    for (int il = 0; il < 3; ++il) {
        strata::LayerActivationStats l;
        l.n_ff = 37 + il;
        for (auto& h : l.histograms) {
            const std::vector<float> v = laplace_samples(500, rng());
            h.add(v.data(), 500);
        }
        l.neuron_tokens = 700;
        for (size_t g = 0; g < strata::kNeuronCountSparsity.size(); ++g) {
            l.neuron_thresholds.push_back(0.01 * static_cast<double>(g + 1));
            std::vector<uint32_t> c(static_cast<size_t>(l.n_ff));
            for (auto& x : c) x = rng() % 701;
            l.neuron_counts.push_back(c);
        }
        p.layers.push_back(l);
    }
    return p;
}

TEST(ActivationProfileFile, RoundTripsEveryField) {
    const ActivationProfile p = random_profile();
    const ActivationProfile q = strata::activation_profile_from_json(strata::activation_profile_to_json(p), "x.stats");
    EXPECT_EQ(q.model_name, p.model_name);
    EXPECT_EQ(q.model_file_bytes, p.model_file_bytes);
    EXPECT_EQ(q.model_header_hash, p.model_header_hash);
    EXPECT_EQ(q.n_tokens, p.n_tokens);
    ASSERT_EQ(q.layers.size(), p.layers.size());
    for (size_t il = 0; il < p.layers.size(); ++il) {
        for (int s = 0; s < strata::kActivationSites; ++s) {
            EXPECT_EQ(q.layers[il].histograms[s].counts(), p.layers[il].histograms[s].counts());
        }
        EXPECT_EQ(q.layers[il].neuron_counts, p.layers[il].neuron_counts);
        EXPECT_EQ(q.layers[il].neuron_thresholds, p.layers[il].neuron_thresholds);
        EXPECT_DOUBLE_EQ(q.ffn_threshold(static_cast<int>(il), 0.5), p.ffn_threshold(static_cast<int>(il), 0.5));
    }
}

TEST(ActivationProfileFile, RefusesOtherVersionsAndBadFieldsNamingThem) {
    std::string text = strata::activation_profile_to_json(random_profile());
    auto expect_error = [](const std::string& t, const std::string& needle) {
        try {
            strata::activation_profile_from_json(t, "bad.stats");
            FAIL() << "accepted";
        } catch (const strata::FormatError& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    std::string v2 = text;
    v2.replace(v2.find("\"version\":1"), 11, "\"version\":2");
    expect_error(v2, "version 2");
    std::string bad = text;
    bad.replace(bad.find("\"n_ff\":37"), 9, "\"n_ff\":38");
    expect_error(bad, "$.layers[0].neuron_counts[0]");
    expect_error("{\"format\":\"other\"}", "not an activation stats file");
    expect_error("not json", "not valid JSON");
}

// The routing section of a mixture of experts: per layer, per expert the tokens routed to it.
TEST(ActivationProfileFile, RoundTripsExpertCountsAndRefusesCountsAboveTheTokens) {
    ActivationProfile p = random_profile();
    p.expert_tokens = 500;
    std::mt19937 rng(9);
    for (size_t il = 0; il < p.layers.size(); ++il) {
        std::vector<uint64_t> c(8);
        for (auto& x : c) x = rng() % 501;
        p.expert_counts.push_back(c);
    }
    const std::string text = strata::activation_profile_to_json(p);
    const ActivationProfile q = strata::activation_profile_from_json(text, "x.stats");
    EXPECT_EQ(q.expert_counts, p.expert_counts);
    EXPECT_EQ(q.expert_tokens, 500u);
    const std::vector<std::vector<double>> use = q.expert_use();
    ASSERT_EQ(use.size(), 3u);
    EXPECT_DOUBLE_EQ(use[1][5], static_cast<double>(p.expert_counts[1][5]) / 500.0);
    // A dense profile writes no routing section and reads back none.
    const std::string dense = strata::activation_profile_to_json(random_profile());
    EXPECT_EQ(dense.find("\"experts\""), std::string::npos);
    EXPECT_TRUE(strata::activation_profile_from_json(dense, "d.stats").expert_use().empty());
    std::string over = text;
    over.replace(over.find("\"tokens\":500"), 12, "\"tokens\":1");
    try {
        strata::activation_profile_from_json(over, "bad.stats");
        FAIL() << "accepted counts above the tokens";
    } catch (const strata::FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("$.experts.counts[0]"), std::string::npos) << e.what();
    }
}

TEST(ActivationProfile, ThresholdRefusesSparsityOutsideTheRange) {
    const ActivationProfile p = random_profile();
    EXPECT_THROW(p.ffn_threshold(0, 1.0), strata::ArgumentError);
    EXPECT_THROW(p.ffn_threshold(0, -0.1), strata::ArgumentError);
    EXPECT_THROW(p.ffn_threshold(3, 0.5), strata::ArgumentError);
    EXPECT_LT(p.ffn_threshold(0, 0.25), p.ffn_threshold(0, 0.5));
}

}  // namespace
