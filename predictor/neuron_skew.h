// Skew of FFN neuron activity (issue 19): how much of a layer's activations its most often active
// neurons carry. From a stats file's per-neuron counts at one of its thresholds (S in
// kNeuronCountSparsity): order the neurons hot-first, and report the share of all activations
// the top p of them cover. A steep curve (ReLU models: the top 20% carry ~80%) makes a small
// GPU share of neurons do most of the work; a flat one (p of neurons carry ~p of activations)
// makes hot/cold placement worth little. The order may come from another profile (another
// text), to measure whether the hot set transfers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "predictor/activation_profile.h"

namespace strata {

// Index of s in kNeuronCountSparsity; ArgumentError listing the values when s is not one.
size_t neuron_count_index(double s);

// Share of the total of `counts` covered by the first ceil(p * n) neurons of `order`, for each
// p in `fractions` (each in [0, 1]). 0 when the counts are all zero. ArgumentError when the
// order is not the counts' size or a fraction is outside [0, 1].
std::vector<double> top_share(std::span<const uint32_t> counts, std::span<const int32_t> order,
                              std::span<const double> fractions);

// The hot-first order of one layer's counts at grid index `grid` (ties: lower index first).
std::vector<int32_t> layer_hot_order(const LayerActivationStats& layer, size_t grid);

struct LayerSkew {
    int layer = 0;
    int64_t n_ff = 0;
    double active_fraction = 0;   // activations / (neurons x tokens): about 1 - S
    std::vector<double> covered;  // per fraction: share of activations of the top neurons
};

struct SkewRequest {
    double sparsity = 0.5;                       // one of kNeuronCountSparsity
    std::vector<double> fractions{0.1, 0.2, 0.5};  // top shares of neurons
    const ActivationProfile* order_from = nullptr;  // null: order by `profile` itself
};

// One row per layer. ArgumentError: S not in the grid, an order profile of other layer shapes.
std::vector<LayerSkew> neuron_skew(const ActivationProfile& profile, const SkewRequest& request);

}  // namespace strata
