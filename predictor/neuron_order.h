// Hot-first ordering of FFN neurons from activation statistics: the permutation that puts the
// most often active neurons first, so a prefix of the FFN can live on the fastest tier.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata {

// Per-neuron activation counts of one FFN layer, gathered over a calibration run.
struct ActivationStats {
    uint64_t n_tokens = 0;               // tokens observed
    std::vector<uint64_t> active_count;  // [n_ff] times neuron i was active

    double activation_rate(size_t neuron) const;  // active_count / n_tokens (0 if no tokens)
};

// Permutation p with p[0] the hottest neuron; ties keep the original order (stable), so the
// order is deterministic for equal counts.
std::vector<int32_t> hot_first_order(const ActivationStats& stats);

// Smallest prefix of `order` whose neurons cover at least `fraction` of all activations.
size_t prefix_covering(const ActivationStats& stats, const std::vector<int32_t>& order,
                       double fraction);

}  // namespace strata
