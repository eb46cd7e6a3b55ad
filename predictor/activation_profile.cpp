// Calibrated thresholds from activation statistics (activation_profile.h).
#include "predictor/activation_profile.h"

#include "engine/core/error.h"

namespace strata {

std::string_view activation_site_name(ActivationSite s) {
    switch (s) {
        case ActivationSite::FfnGateAct: return "ffn_gate_act";
        case ActivationSite::AttnInput: return "attn_input";
        case ActivationSite::AttnOutputInput: return "attn_output_input";
        case ActivationSite::FfnInput: return "ffn_input";
        case ActivationSite::FfnDownInput: return "ffn_down_input";
    }
    return "?";
}

std::vector<std::vector<double>> ActivationProfile::expert_use() const {
    std::vector<std::vector<double>> out;
    if (expert_tokens == 0) return out;
    for (const std::vector<uint64_t>& layer : expert_counts) {
        std::vector<double>& u = out.emplace_back();
        for (uint64_t c : layer) u.push_back(static_cast<double>(c) / static_cast<double>(expert_tokens));
    }
    return out;
}

double ActivationProfile::ffn_threshold(int il, double s) const {
    return site_threshold(il, ActivationSite::FfnGateAct, s);
}

double ActivationProfile::site_threshold(int il, ActivationSite site, double s) const {
    if (!(s >= 0.0 && s < 1.0)) throw ArgumentError(cat("sparsity ", s, " is outside [0, 1)"));
    if (il < 0 || il >= static_cast<int>(layers.size())) {
        throw ArgumentError(cat("layer ", il, " is outside the profile's ", layers.size(), " layers"));
    }
    const MagnitudeHistogram& h = layers[static_cast<size_t>(il)].histogram(site);
    if (h.total() == 0) {
        throw ArgumentError(cat("the profile has no ", activation_site_name(site), " values for layer ", il));
    }
    return h.quantile(s);
}

}  // namespace strata
