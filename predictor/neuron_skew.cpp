// Skew of FFN neuron activity (neuron_skew.h).
#include "predictor/neuron_skew.h"

#include <cmath>
#include <numeric>
#include <sstream>

#include "engine/core/error.h"
#include "predictor/neuron_order.h"

namespace strata {

size_t neuron_count_index(double s) {
    for (size_t i = 0; i < kNeuronCountSparsity.size(); ++i) {
        if (std::abs(kNeuronCountSparsity[i] - s) < 1e-9) return i;
    }
    std::ostringstream grid;
    for (size_t i = 0; i < kNeuronCountSparsity.size(); ++i) grid << (i ? ", " : "") << kNeuronCountSparsity[i];
    throw ArgumentError(cat("sparsity ", s, " has no neuron counts in the stats (counted at ", grid.str(), ")"));
}

std::vector<double> top_share(std::span<const uint32_t> counts, std::span<const int32_t> order,
                              std::span<const double> fractions) {
    if (order.size() != counts.size()) {
        throw ArgumentError(cat("neuron order has ", order.size(), " entries, the counts ", counts.size()));
    }
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    std::vector<double> out;
    for (double p : fractions) {
        if (!(p >= 0.0 && p <= 1.0)) throw ArgumentError(cat("top fraction ", p, " is outside [0, 1]"));
        const auto n = static_cast<size_t>(std::ceil(p * static_cast<double>(counts.size()) - 1e-9));
        double covered = 0;
        for (size_t i = 0; i < n; ++i) covered += counts[static_cast<size_t>(order[i])];
        out.push_back(total > 0 ? covered / total : 0.0);
    }
    return out;
}

std::vector<int32_t> layer_hot_order(const LayerActivationStats& layer, size_t grid) {
    if (grid >= layer.neuron_counts.size()) {
        throw ArgumentError(cat("neuron count index ", grid, " is outside the layer's ", layer.neuron_counts.size()));
    }
    ActivationStats stats;
    stats.n_tokens = layer.neuron_tokens;
    const std::vector<uint32_t>& c = layer.neuron_counts[grid];
    stats.active_count.assign(c.begin(), c.end());
    return hot_first_order(stats);
}

std::vector<LayerSkew> neuron_skew(const ActivationProfile& profile, const SkewRequest& request) {
    const size_t grid = neuron_count_index(request.sparsity);
    const ActivationProfile& by = request.order_from != nullptr ? *request.order_from : profile;
    if (by.layers.size() != profile.layers.size()) {
        throw ArgumentError(cat("the order's stats have ", by.layers.size(), " layers, the measured ones ",
                                profile.layers.size()));
    }
    std::vector<LayerSkew> rows;
    for (size_t il = 0; il < profile.layers.size(); ++il) {
        const LayerActivationStats& l = profile.layers[il];
        if (by.layers[il].n_ff != l.n_ff) {
            throw ArgumentError(cat("layer ", il, ": the order's stats have ", by.layers[il].n_ff,
                                    " neurons, the measured ones ", l.n_ff));
        }
        const std::vector<uint32_t>& counts = l.neuron_counts.at(grid);
        LayerSkew row;
        row.layer = static_cast<int>(il);
        row.n_ff = l.n_ff;
        const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
        const double cells = static_cast<double>(l.n_ff) * static_cast<double>(l.neuron_tokens);
        row.active_fraction = cells > 0 ? total / cells : 0.0;
        row.covered = top_share(counts, layer_hot_order(by.layers[il], grid), request.fractions);
        rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace strata
