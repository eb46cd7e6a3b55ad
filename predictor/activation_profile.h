// ActivationProfile: what a calibration run (`strata profile`) records about a model's
// activations — per layer, magnitude histograms of the FFN's act(gate·x) (CATS thresholds) and
// of the input of each weight matrix (TEAL thresholds), and how often each FFN neuron is active
// at a few thresholds (hot-first ordering, issue 19). Thresholds for a target skipped fraction S
// come from the histograms. Plain data; the file format is activation_profile_file.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "predictor/magnitude_histogram.h"

namespace strata {

// Where a histogram is taken, per layer.
enum class ActivationSite : uint8_t {
    FfnGateAct,       // |act(gate·x)| [n_ff]: the CATS score of each neuron
    AttnInput,        // normed x entering q, k, v [n_embd]
    AttnOutputInput,  // attention output entering attn_output [n_head·hd_v]
    FfnInput,         // normed x entering gate and up [n_embd]
    FfnDownInput,     // act(gate)·up entering down [n_ff]
};
inline constexpr int kActivationSites = 5;
std::string_view activation_site_name(ActivationSite s);  // "ffn_gate_act", ...

// Skipped fractions at which each neuron's activity is counted.
inline constexpr std::array<double, 5> kNeuronCountSparsity = {0.25, 0.4, 0.5, 0.6, 0.7};

struct LayerActivationStats {
    int64_t n_ff = 0;
    std::array<MagnitudeHistogram, kActivationSites> histograms;
    // Per entry of kNeuronCountSparsity: the |act(gate·x)| threshold used (fixed from the first
    // part of the run) and per neuron the tokens where |act(gate·x)| > threshold, counted over
    // neuron_tokens tokens (the rest of the run).
    std::vector<double> neuron_thresholds;
    std::vector<std::vector<uint32_t>> neuron_counts;  // [grid][n_ff]
    uint64_t neuron_tokens = 0;

    const MagnitudeHistogram& histogram(ActivationSite s) const {
        return histograms[static_cast<size_t>(s)];
    }
};

struct ActivationProfile {
    // The model it was measured on (engine/runtime checks these against a model it loads).
    std::string model_name;        // file name, for messages
    uint64_t model_file_bytes = 0;
    std::string model_header_hash;
    std::string text_name;         // the calibration text, for the record
    uint64_t n_tokens = 0;         // tokens evaluated
    std::vector<LayerActivationStats> layers;
    // Mixture of experts: per layer, per expert the tokens routed to it, over expert_tokens
    // tokens (each token counts once per expert it uses). Empty for dense models.
    std::vector<std::vector<uint64_t>> expert_counts;  // [n_layer][n_expert]
    uint64_t expert_tokens = 0;

    // Per layer, per expert: the share of tokens routed to it (a layer's shares sum to its
    // top-k), as the planner reads it (offload TensorTable::expert_use). Empty without counts.
    std::vector<std::vector<double>> expert_use() const;

    // The |act(gate·x)| threshold of layer il that skips a fraction s of neuron evaluations
    // (0 <= s < 1): the s-quantile of its histogram. ArgumentError outside that range or on a
    // layer the profile lacks.
    double ffn_threshold(int il, double s) const;
    // The same for any site's histogram: the |x| threshold of layer il at `site` that skips a
    // fraction s of its values (TEAL: the FfnInput site's skips that share of the FFN's inputs).
    double site_threshold(int il, ActivationSite site, double s) const;
};

}  // namespace strata
