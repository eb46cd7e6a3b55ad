// Neuron skew against sums of the largest counts (sorted values, not the order code), a
// transferred order, and refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "engine/core/error.h"
#include "predictor/neuron_skew.h"

namespace {

strata::ActivationProfile random_profile(int n_layer, int64_t n_ff, uint32_t seed) {
    std::mt19937 rng(seed);
    strata::ActivationProfile p;
    for (int il = 0; il < n_layer; ++il) {
        strata::LayerActivationStats l;
        l.n_ff = n_ff;
        l.neuron_tokens = 1000;
        for (size_t g = 0; g < strata::kNeuronCountSparsity.size(); ++g) {
            std::vector<uint32_t> c(static_cast<size_t>(n_ff));
            for (auto& v : c) v = rng() % 1001;
            l.neuron_counts.push_back(std::move(c));
        }
        p.layers.push_back(std::move(l));
    }
    return p;
}

double largest_share(std::vector<uint32_t> c, size_t k) {
    std::sort(c.begin(), c.end(), std::greater<>());
    double top = 0, total = 0;
    for (size_t i = 0; i < c.size(); ++i) (i < k ? top : total) += c[i];
    return top / (top + total);
}

TEST(NeuronSkew, TopSharesAreTheLargestCountsShare) {
    const auto p = random_profile(3, 997, 11);
    strata::SkewRequest r;
    r.sparsity = 0.5;
    const auto rows = strata::neuron_skew(p, r);
    ASSERT_EQ(rows.size(), 3u);
    const size_t g = strata::neuron_count_index(0.5);
    for (const auto& row : rows) {
        const auto& c = p.layers[static_cast<size_t>(row.layer)].neuron_counts[g];
        ASSERT_EQ(row.covered.size(), 3u);
        EXPECT_NEAR(row.covered[0], largest_share(c, 100), 1e-12);  // ceil(99.7)
        EXPECT_NEAR(row.covered[1], largest_share(c, 200), 1e-12);  // ceil(199.4)
        EXPECT_NEAR(row.covered[2], largest_share(c, 499), 1e-12);  // ceil(498.5)
        double total = 0;
        for (auto v : c) total += v;
        EXPECT_NEAR(row.active_fraction, total / (997.0 * 1000.0), 1e-12);
    }
}

TEST(NeuronSkew, OrderFromAnotherProfile) {
    auto measured = random_profile(2, 300, 3);
    auto order = measured;
    const size_t g = strata::neuron_count_index(0.25);
    // The other profile ranks neurons in reverse: its top 10% are the measured coldest.
    for (auto& l : order.layers) {
        for (auto& v : l.neuron_counts[g]) v = 1000 - v;
    }
    strata::SkewRequest r;
    r.sparsity = 0.25;
    r.fractions = {0.1, 1.0};
    r.order_from = &order;
    const auto rows = strata::neuron_skew(measured, r);
    for (const auto& row : rows) {
        std::vector<uint32_t> c = measured.layers[static_cast<size_t>(row.layer)].neuron_counts[g];
        std::sort(c.begin(), c.end());
        double low = 0, total = 0;
        for (size_t i = 0; i < c.size(); ++i) {
            total += c[i];
            if (i < 30) low += c[i];
        }
        EXPECT_NEAR(row.covered[0], low / total, 1e-12);
        EXPECT_NEAR(row.covered[1], 1.0, 1e-12);
    }
}

TEST(NeuronSkew, Refusals) {
    const auto p = random_profile(2, 64, 5);
    strata::SkewRequest r;
    r.sparsity = 0.33;
    EXPECT_THROW(strata::neuron_skew(p, r), strata::ArgumentError);
    r.sparsity = 0.5;
    r.fractions = {1.5};
    EXPECT_THROW(strata::neuron_skew(p, r), strata::ArgumentError);
    r.fractions = {0.1};
    const auto other = random_profile(3, 64, 5);
    r.order_from = &other;
    EXPECT_THROW(strata::neuron_skew(p, r), strata::ArgumentError);
    const auto narrow = random_profile(2, 32, 5);
    r.order_from = &narrow;
    EXPECT_THROW(strata::neuron_skew(p, r), strata::ArgumentError);
    const std::vector<uint32_t> c{1, 2};
    const std::vector<int32_t> o{0};
    EXPECT_THROW(strata::top_share(c, o, r.fractions), strata::ArgumentError);
}

}  // namespace
