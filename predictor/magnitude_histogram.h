// MagnitudeHistogram: counts of |v| in log-spaced bins, for the calibrated thresholds of
// activation sparsity (CATS thresholds |act(gate·x)|, TEAL the input of each matrix). The bins
// are fixed for every histogram (kBinsPerDecade per decade from 10^kMinLog10 to 10^kMaxLog10),
// so histograms of any run merge by adding counts. With 128 bins per decade one bin is a ratio
// of 1.018; quantiles interpolate inside a bin (log-linear), so a threshold is set to far
// better than 0.5% of the skipped fraction wherever the distribution is smooth.
#pragma once

#include <cstdint>
#include <cstddef>
#include <vector>

namespace strata {

class MagnitudeHistogram {
  public:
    static constexpr int kBinsPerDecade = 128;
    static constexpr int kMinLog10 = -8;  // |v| below 1e-8 (and 0) count in the first bin
    static constexpr int kMaxLog10 = 4;   // |v| at or above 1e4 count in the last bin
    static constexpr int kBins = kBinsPerDecade * (kMaxLog10 - kMinLog10);

    MagnitudeHistogram() : counts_(kBins, 0) {}

    // Bin of |v| (NaN counts as the top bin).
    static int bin_of(float v);
    // Lower edge of bin b (b = kBins: the top of the range); bin 0's lower edge is 0.
    static double lower_edge(int b);

    void add(float v) { ++counts_[static_cast<size_t>(bin_of(v))]; ++total_; }
    void add(const float* v, int64_t n);
    void merge(const MagnitudeHistogram& other);

    uint64_t total() const { return total_; }
    const std::vector<uint64_t>& counts() const { return counts_; }
    // Replaces the counts (a file's); ArgumentError unless counts.size() == kBins.
    void set_counts(std::vector<uint64_t> counts);

    // The magnitude t with a fraction q of the values below it (0 <= q <= 1), interpolated
    // log-linearly inside its bin (linearly in bin 0). 0 when q == 0 or the histogram is empty.
    double quantile(double q) const;
    // The fraction of values with |v| < t (the inverse of quantile, same interpolation).
    double fraction_below(double t) const;

  private:
    std::vector<uint64_t> counts_;
    uint64_t total_ = 0;
};

}  // namespace strata
