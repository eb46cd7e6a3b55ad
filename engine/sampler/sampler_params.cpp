// Validation of SamplerParams: every message carries the field, its value and what is allowed,
// so a CLI or server can pass it to the user unchanged.
#include "engine/sampler/sampler_params.h"

#include <cmath>

#include "engine/core/error.h"

namespace strata {
namespace {

void require_finite(const char* name, float value) {
    if (!std::isfinite(value)) {
        throw ArgumentError(cat("sampler: ", name, " = ", value, " is not a finite number"));
    }
}

void require_in_unit_interval(const char* name, float value) {
    require_finite(name, value);
    if (value < 0.0f || value > 1.0f) {
        throw ArgumentError(
            cat("sampler: ", name, " = ", value, " is outside the allowed range [0, 1]"));
    }
}

}  // namespace

void SamplerParams::validate() const {
    require_finite("temperature", temperature);
    if (temperature < 0.0f) {
        throw ArgumentError(cat("sampler: temperature = ", temperature,
                                " is negative; allowed: temperature >= 0 (0 means greedy)"));
    }
    if (top_k < 0) {
        throw ArgumentError(
            cat("sampler: top_k = ", top_k, " is negative; allowed: top_k >= 0 (0 means off)"));
    }
    require_in_unit_interval("top_p", top_p);
    require_in_unit_interval("min_p", min_p);
    require_finite("repeat_penalty", repeat_penalty);
    if (repeat_penalty <= 0.0f) {
        throw ArgumentError(cat("sampler: repeat_penalty = ", repeat_penalty,
                                " must be > 0 (1 means off)"));
    }
    if (repeat_last_n < -1) {
        throw ArgumentError(
            cat("sampler: repeat_last_n = ", repeat_last_n,
                " is out of range; allowed: -1 (all), 0 (off) or a positive count"));
    }
    require_finite("presence_penalty", presence_penalty);
    require_finite("frequency_penalty", frequency_penalty);
    for (const auto& [id, bias] : logit_bias) {
        if (id < 0) {
            throw ArgumentError(cat("sampler: logit_bias token id ", id, " is negative"));
        }
        if (std::isnan(bias) || bias == INFINITY) {
            throw ArgumentError(cat("sampler: logit_bias for token ", id, " = ", bias,
                                    "; allowed: a finite bias, or -inf to ban the token"));
        }
    }
}

}  // namespace strata
