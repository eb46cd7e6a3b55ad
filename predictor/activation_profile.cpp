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

double ActivationProfile::ffn_threshold(int il, double s) const {
    if (!(s >= 0.0 && s < 1.0)) throw ArgumentError(cat("sparsity ", s, " is outside [0, 1)"));
    if (il < 0 || il >= static_cast<int>(layers.size())) {
        throw ArgumentError(cat("layer ", il, " is outside the profile's ", layers.size(), " layers"));
    }
    const MagnitudeHistogram& h = layers[static_cast<size_t>(il)].histogram(ActivationSite::FfnGateAct);
    if (h.total() == 0) throw ArgumentError(cat("the profile has no FFN activations for layer ", il));
    return h.quantile(s);
}

}  // namespace strata
