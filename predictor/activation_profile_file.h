// The activation statistics file (`strata profile -o M.stats`): JSON, versioned, with the
// fingerprint of the model it was measured on. Layout (version 1):
//   {"format": "strata-activation-stats", "version": 1,
//    "model": {"name", "file_bytes", "header_hash"}, "text": NAME, "n_tokens": N,
//    "histogram": {"bins_per_decade": 128, "min_log10": -8, "max_log10": 4},
//    "neuron_count_sparsity": [0.25, ...],
//    "layers": [{"n_ff": N,
//                "histograms": {SITE: {"first": B, "counts": [c_B, c_B+1, ...]}, ...},
//                "neuron_thresholds": [t per sparsity], "neuron_tokens": N,
//                "neuron_counts": [[count per neuron] per sparsity]}, ...]}
//   optional, for mixtures of experts: "experts": {"tokens": N, "counts": [[tokens routed to
//   each expert] per layer]}.
// A histogram lists the counts of bins first .. the last non-empty one. Later versions add
// sections (predictors, issue 19); readers refuse versions they do not know.
#pragma once

#include <string>

#include "predictor/activation_profile.h"

namespace strata {

inline constexpr int kActivationProfileVersion = 1;

std::string activation_profile_to_json(const ActivationProfile& profile);

// Strict: FormatError naming `what` (the file) and the JSON path of anything missing, of the
// wrong type or out of range, and the version when it is not one this reader knows.
ActivationProfile activation_profile_from_json(const std::string& text, const std::string& what);

}  // namespace strata
