// Log-spaced magnitude histograms (magnitude_histogram.h).
#include "predictor/magnitude_histogram.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/core/error.h"

namespace strata {

int MagnitudeHistogram::bin_of(float v) {
    const double a = std::fabs(static_cast<double>(v));
    if (std::isnan(a)) return kBins - 1;
    if (a < 1e-8) return 0;
    const double pos = (std::log10(a) - kMinLog10) * kBinsPerDecade;
    return static_cast<int>(std::clamp(pos, 0.0, static_cast<double>(kBins - 1)));
}

double MagnitudeHistogram::lower_edge(int b) {
    if (b <= 0) return 0.0;
    return std::pow(10.0, kMinLog10 + static_cast<double>(b) / kBinsPerDecade);
}

void MagnitudeHistogram::add(const float* v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) ++counts_[static_cast<size_t>(bin_of(v[i]))];
    total_ += static_cast<uint64_t>(n);
}

void MagnitudeHistogram::merge(const MagnitudeHistogram& other) {
    for (size_t b = 0; b < counts_.size(); ++b) counts_[b] += other.counts_[b];
    total_ += other.total_;
}

void MagnitudeHistogram::set_counts(std::vector<uint64_t> counts) {
    if (counts.size() != static_cast<size_t>(kBins)) {
        throw ArgumentError(cat("a magnitude histogram has ", kBins, " bins, got ", counts.size()));
    }
    counts_ = std::move(counts);
    total_ = std::accumulate(counts_.begin(), counts_.end(), uint64_t{0});
}

double MagnitudeHistogram::quantile(double q) const {
    if (!(q >= 0.0 && q <= 1.0)) throw ArgumentError(cat("quantile ", q, " is outside [0, 1]"));
    if (total_ == 0 || q == 0.0) return 0.0;
    const double target = q * static_cast<double>(total_);
    double below = 0;
    for (int b = 0; b < kBins; ++b) {
        const double c = static_cast<double>(counts_[static_cast<size_t>(b)]);
        if (c > 0 && below + c >= target) {
            const double f = (target - below) / c;  // share of the bin below t
            const double lo = lower_edge(b), hi = lower_edge(b + 1);
            if (b == 0) return hi * f;
            return lo * std::pow(hi / lo, f);
        }
        below += c;
    }
    return lower_edge(kBins);
}

double MagnitudeHistogram::fraction_below(double t) const {
    if (total_ == 0 || t <= 0) return 0.0;
    const int b = bin_of(static_cast<float>(t));
    double below = 0;
    for (int i = 0; i < b; ++i) below += static_cast<double>(counts_[static_cast<size_t>(i)]);
    const double lo = lower_edge(b), hi = lower_edge(b + 1);
    const double f = b == 0 ? t / hi : std::log(t / lo) / std::log(hi / lo);
    below += std::clamp(f, 0.0, 1.0) * static_cast<double>(counts_[static_cast<size_t>(b)]);
    return below / static_cast<double>(total_);
}

}  // namespace strata
