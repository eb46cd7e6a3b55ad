// The vectorized logit scans against plain loops: every length from 0 to 70 (whole runs of 16
// lanes and tails), the largest value or a bad value placed at every index, ties, -inf, and
// the k-th largest against a sort.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "engine/sampler/sampler_stages.h"
#include "tests/engine/sampler/sampler_reference.h"

namespace {

size_t reference_first_max(const std::vector<float>& v) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i) {
        if (v[i] > v[best]) best = i;
    }
    return best;
}

TEST(LogitScan, FirstMaxIndexAtEveryPositionAndLength) {
    for (size_t n = 1; n <= 70; ++n) {
        const std::vector<float> base = strata::ref::random_logits(n, static_cast<uint32_t>(n));
        for (size_t at = 0; at < n; ++at) {
            std::vector<float> v = base;
            v[at] = 100.0f;
            EXPECT_EQ(strata::first_max_index(v), at) << "n " << n;
            // A tie later on keeps the first; a tie earlier takes that one.
            if (at + 1 < n) {
                v[n - 1] = 100.0f;
                EXPECT_EQ(strata::first_max_index(v), at) << "n " << n;
            }
        }
        EXPECT_EQ(strata::first_max_index(base), reference_first_max(base)) << "n " << n;
    }
}

TEST(LogitScan, FirstMaxIndexWithNegativeInfinity) {
    const float ninf = -std::numeric_limits<float>::infinity();
    std::vector<float> v(40, ninf);
    EXPECT_EQ(strata::first_max_index(v), 0u);  // all banned: the lowest id, as the loop had it
    v[37] = -1e30f;
    EXPECT_EQ(strata::first_max_index(v), 37u);
    std::vector<float> big = strata::ref::random_logits(262144, 7, -10.0f, 20.0f);
    for (size_t i = 0; i < big.size(); i += 3) big[i] = ninf;
    EXPECT_EQ(strata::first_max_index(big), reference_first_max(big));
}

TEST(LogitScan, ScanFindsNaNAndPlusInfAnywhereAndTheLargest) {
    const float bad[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                         std::numeric_limits<float>::infinity()};
    for (size_t n = 0; n <= 70; ++n) {
        std::vector<float> v = strata::ref::random_logits(n, static_cast<uint32_t>(n) + 100);
        if (n > 2) v[n / 2] = -std::numeric_limits<float>::infinity();
        const strata::LogitScan scan = strata::scan_logits(v);
        EXPECT_TRUE(scan.valid) << "n " << n;
        EXPECT_EQ(scan.max, n == 0 ? -INFINITY : *std::max_element(v.begin(), v.end())) << "n " << n;
        for (size_t at = 0; at < n; ++at) {
            for (const float b : bad) {
                std::vector<float> w = v;
                w[at] = b;
                EXPECT_FALSE(strata::scan_logits(w).valid) << "n " << n << " at " << at << " value " << b;
            }
        }
    }
    EXPECT_TRUE(strata::scan_logits(std::vector<float>{std::numeric_limits<float>::max(),
                                                       -std::numeric_limits<float>::max()}).valid);
}

TEST(LogitScan, KthLargestMatchesASort) {
    for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{70}, size_t{4099}}) {
        for (int shape = 0; shape < 2; ++shape) {
            std::vector<float> v = strata::ref::random_logits(n, static_cast<uint32_t>(n) + 7);
            if (shape == 1) {
                for (float& x : v) x = std::round(x / 4);  // many repeats
            }
            std::vector<float> sorted = v;
            std::sort(sorted.begin(), sorted.end(), std::greater<>{});
            std::vector<float> heap;  // reused across calls, as the sampler does
            for (size_t k : {size_t{1}, size_t{2}, size_t{40}, n / 2 + 1, n}) {
                if (k > n) continue;
                EXPECT_EQ(strata::kth_largest(v, k, heap), sorted[k - 1]) << "n " << n << " k " << k << " shape " << shape;
            }
        }
    }
}

}  // namespace
