// Hot/cold split arithmetic against direct sums over sorted counts and a brute-force search of
// hot counts under a budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "engine/core/error.h"
#include "predictor/hot_cold_split.h"
#include "predictor/neuron_skew.h"

namespace {

strata::LayerActivationStats random_layer(int64_t n_ff, std::mt19937& rng) {
    strata::LayerActivationStats l;
    l.n_ff = n_ff;
    l.neuron_tokens = 400;
    for (size_t g = 0; g < strata::kNeuronCountSparsity.size(); ++g) {
        std::vector<uint32_t> c(static_cast<size_t>(n_ff));
        std::exponential_distribution<double> e(1.0 / 60);
        for (auto& v : c) v = static_cast<uint32_t>(std::min(400.0, e(rng)));
        l.neuron_counts.push_back(std::move(c));
    }
    return l;
}

TEST(HotColdSplit, BytesAreDirectSumsOverSortedCounts) {
    std::mt19937 rng(21);
    const auto l = random_layer(1000, rng);
    const size_t g = strata::neuron_count_index(0.5);
    const auto r = strata::layer_rates(l, g);
    std::vector<uint32_t> c = l.neuron_counts[g];
    std::sort(c.begin(), c.end(), std::greater<>());
    const strata::NeuronBytes b{3.0, 5.0, 7.0, 11.0};
    for (int64_t hot : {0, 1, 137, 500, 1000}) {
        double cold = 0, all = 0;
        for (size_t i = 0; i < c.size(); ++i) {
            all += c[i];
            if (static_cast<int64_t>(i) >= hot) cold += c[i];
        }
        const auto s = strata::split_bytes(r, b, hot);
        EXPECT_NEAR(s.gpu, hot * 19.0, 1e-9);
        EXPECT_NEAR(s.cpu, (1000 - hot) * 3.0 + cold / 400.0 * 12.0, 1e-6);
        EXPECT_NEAR(strata::activation_share(r, hot), all > 0 ? (all - cold) / all : 0.0, 1e-12);
    }
    double first = 0, all = 0;
    for (size_t i = 0; i < 1000; ++i) {
        all += l.neuron_counts[g][i];
        if (i < 300) first += l.neuron_counts[g][i];
    }
    EXPECT_NEAR(strata::file_order_share(l, g, 300), first / all, 1e-12);
    EXPECT_THROW(strata::split_bytes(r, b, 1001), strata::ArgumentError);
    EXPECT_THROW(strata::activation_share(r, -1), strata::ArgumentError);
    EXPECT_THROW(strata::file_order_share(l, g, 1001), strata::ArgumentError);
}

// The cold neurons' active fraction: the mean rate of the coldest n_ff - hot counts (sorted
// directly), scaled so the layer's mean is the run's 1 - S.
TEST(HotColdSplit, ColdActiveFractionIsTheColdMeanScaledToTheRunsSparsity) {
    std::mt19937 rng(8);
    const auto l = random_layer(1000, rng);
    const size_t g = strata::neuron_count_index(0.5);
    const auto r = strata::layer_rates(l, g);
    std::vector<uint32_t> c = l.neuron_counts[g];
    std::sort(c.begin(), c.end(), std::greater<>());
    double all = 0;
    for (uint32_t v : c) all += v;
    for (double s : {0.5, 0.4}) {
        for (int64_t hot : {0, 256, 999}) {
            double cold = 0;
            for (size_t i = static_cast<size_t>(hot); i < c.size(); ++i) cold += c[i];
            const double expected = std::min(1.0, cold / static_cast<double>(1000 - hot) * (1 - s) * 1000 / all);
            EXPECT_NEAR(strata::cold_active_fraction(r, hot, s), expected, 1e-12) << s << " " << hot;
        }
    }
    // Hot-first: the coldest half is less active than the layer's mean.
    EXPECT_LT(strata::cold_active_fraction(r, 500, 0.5), 0.5);
    EXPECT_EQ(strata::cold_active_fraction(r, 1000, 0.5), 0.0);
    strata::LayerActivationStats silent = l;
    for (auto& counts : silent.neuron_counts) std::fill(counts.begin(), counts.end(), 0u);
    EXPECT_DOUBLE_EQ(strata::cold_active_fraction(strata::layer_rates(silent, g), 100, 0.3), 0.7);
    EXPECT_THROW(strata::cold_active_fraction(r, 1001, 0.5), strata::ArgumentError);
}

TEST(HotColdSplit, ChosenCountsMatchBruteForce) {
    std::mt19937 rng(5);
    const size_t g = strata::neuron_count_index(0.25);
    std::vector<strata::NeuronRates> rates;
    std::vector<strata::NeuronBytes> bytes;
    for (int il = 0; il < 3; ++il) {
        rates.push_back(strata::layer_rates(random_layer(64, rng), g));
        bytes.push_back({2.0, 2.0, 4.0, 4.0});  // equal per-neuron bytes: greedy is exact
    }
    const int64_t granule = 8;
    for (uint64_t budget : {0ull, 100ull, 800ull, 1500ull, 5000ull}) {
        strata::HotCountRequest req{budget, granule};
        const auto hot = strata::choose_hot_counts(rates, bytes, req);
        double got = 0, used = 0;
        for (size_t il = 0; il < 3; ++il) {
            got += strata::split_bytes(rates[il], bytes[il], hot[il]).cpu;
            used += strata::split_bytes(rates[il], bytes[il], hot[il]).gpu;
        }
        EXPECT_LE(used, static_cast<double>(budget));
        double best = 1e300;
        for (int64_t a = 0; a <= 64; a += granule) {
            for (int64_t b = 0; b <= 64; b += granule) {
                for (int64_t c = 0; c <= 64; c += granule) {
                    if ((a + b + c) * 8.0 > static_cast<double>(budget)) continue;
                    best = std::min(best, strata::split_bytes(rates[0], bytes[0], a).cpu +
                                              strata::split_bytes(rates[1], bytes[1], b).cpu +
                                              strata::split_bytes(rates[2], bytes[2], c).cpu);
                }
            }
        }
        EXPECT_NEAR(got, best, 1e-9) << "budget " << budget;
    }
    EXPECT_THROW(strata::choose_hot_counts(rates, {}, {}), strata::ArgumentError);
    EXPECT_THROW(strata::choose_hot_counts(rates, bytes, {100, 0}), strata::ArgumentError);
}

}  // namespace
