// The per-dimension parts of RoPE that every backend computes alike on the host: the YaRN ramp
// between the scaled and the unscaled angle, and the magnitude scale of cos and sin (the YaRN
// paper's NTK-by-parts interpolation and its 0.1·ln(s) + 1 attention factor, in the form GGUF
// files state it: rope.scaling.{factor, original_context_length, yarn_*}).
#pragma once

#include <vector>

#include "engine/core/backend.h"

namespace strata {

// For pair i of n_rot/2: the weight of the unscaled angle, theta = theta_s·(1 - r) + theta·r with
// theta_s = theta·freq_scale. All 0 without YaRN (ext_factor 0): plain linear scaling.
// r_i = ext_factor·(1 - clamp((i - low) / max(0.001, high - low), 0, 1)), where low and high are
// the dims (floor and ceil, clamped to [0, n_rot - 1]) at which the original context holds
// beta_fast and beta_slow full rotations: d(b) = n_rot·ln(n_ctx_orig / (2π·b)) / (2·ln(base)).
std::vector<float> rope_yarn_ramp(const RopeParams& p);

// What cos and sin are multiplied by: attn_factor, times 1 + 0.1·ln(1/freq_scale) with YaRN.
float rope_magnitude(const RopeParams& p);

// ArgumentError unless the YaRN fields are usable: ext_factor in [0, 1], attn_factor > 0, and
// with ext_factor > 0 a positive n_ctx_orig and beta_fast > beta_slow > 0.
void check_rope_yarn(const RopeParams& p);

}  // namespace strata
