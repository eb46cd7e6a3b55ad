// YaRN's per-dimension ramp and the RoPE magnitude (rope_yarn.h).
#include "engine/core/rope_yarn.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "engine/core/error.h"

namespace strata {
namespace {

// The dim at which n_ctx_orig positions make `rotations` full turns (fractional).
float correction_dim(const RopeParams& p, float rotations) {
    const float two_pi = 2.0f * std::numbers::pi_v<float>;
    return static_cast<float>(p.n_rot) * std::log(static_cast<float>(p.n_ctx_orig) / (rotations * two_pi)) /
           (2.0f * std::log(p.freq_base));
}

}  // namespace

std::vector<float> rope_yarn_ramp(const RopeParams& p) {
    const int half = p.n_rot / 2;
    std::vector<float> ramp(static_cast<size_t>(std::max(half, 0)), 0.0f);
    if (p.ext_factor == 0.0f) return ramp;
    const float low = std::max(0.0f, std::floor(correction_dim(p, p.beta_fast)));
    const float high = std::min(static_cast<float>(p.n_rot - 1), std::ceil(correction_dim(p, p.beta_slow)));
    for (int i = 0; i < half; ++i) {
        const float y = (static_cast<float>(i) - low) / std::max(0.001f, high - low);
        ramp[static_cast<size_t>(i)] = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
    }
    return ramp;
}

float rope_magnitude(const RopeParams& p) {
    if (p.ext_factor == 0.0f) return p.attn_factor;
    return p.attn_factor * (1.0f + 0.1f * std::log(1.0f / p.freq_scale));
}

void check_rope_yarn(const RopeParams& p) {
    if (!(p.ext_factor >= 0.0f && p.ext_factor <= 1.0f) || !(p.attn_factor > 0.0f)) {
        throw ArgumentError(cat("rope: YaRN ext_factor = ", p.ext_factor, " must be in [0, 1] and attn_factor = ",
                                p.attn_factor, " > 0"));
    }
    if (p.ext_factor > 0.0f && (p.n_ctx_orig <= 0 || !(p.beta_slow > 0.0f) || !(p.beta_fast > p.beta_slow))) {
        throw ArgumentError(cat("rope: YaRN needs the original context (got ", p.n_ctx_orig,
                                ") and beta_fast > beta_slow > 0 (got ", p.beta_fast, ", ", p.beta_slow, ")"));
    }
}

}  // namespace strata
