// Hot-first neuron ordering (neuron_order.h).
#include "predictor/neuron_order.h"

#include <algorithm>
#include <numeric>

#include "engine/core/error.h"

namespace strata {

double ActivationStats::activation_rate(size_t neuron) const {
    if (n_tokens == 0) return 0.0;
    return static_cast<double>(active_count.at(neuron)) / static_cast<double>(n_tokens);
}

std::vector<int32_t> hot_first_order(const ActivationStats& stats) {
    std::vector<int32_t> order(stats.active_count.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return stats.active_count[a] > stats.active_count[b];
    });
    return order;
}

size_t prefix_covering(const ActivationStats& stats, const std::vector<int32_t>& order,
                       double fraction) {
    if (fraction < 0.0 || fraction > 1.0) {
        throw ArgumentError(cat("coverage fraction ", fraction, " is outside [0, 1]"));
    }
    if (order.size() != stats.active_count.size()) {
        throw ArgumentError(cat("order has ", order.size(), " neurons, stats have ",
                                stats.active_count.size()));
    }
    const uint64_t total =
        std::accumulate(stats.active_count.begin(), stats.active_count.end(), uint64_t{0});
    const double target = fraction * static_cast<double>(total);
    uint64_t covered = 0;
    size_t n = 0;
    while (n < order.size() && static_cast<double>(covered) < target) {
        covered += stats.active_count.at(order[n]);
        ++n;
    }
    return n;
}

}  // namespace strata
