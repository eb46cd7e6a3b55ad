// Rotary position embedding, in place, NORM (adjacent pairs) and NEOX (halves) styles, with
// linear freq_scale, optional per-dim freq_factors (docs/FORMATS.md §3.1) and YaRN's ramp and
// magnitude (engine/core/rope_yarn.h).
#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/rope_yarn.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/row_ops.h"

namespace strata::cpu {
namespace {

void check_rope(const Tensor& x, const int32_t* positions, const RopeParams& p) {
    check_f32("rope", "x", x);
    if (x.ne[3] != 1) {
        throw ArgumentError(
            cat("rope: x must be [head_dim, n_heads, n_tokens], got ", x.shape_string()));
    }
    if (p.n_rot <= 0 || p.n_rot % 2 != 0 || p.n_rot > x.ne[0]) {
        throw ArgumentError(
            cat("rope: n_rot = ", p.n_rot, " must be even and in (0, head_dim = ", x.ne[0], "]"));
    }
    if (!(p.freq_base > 0.0f) || !(p.freq_scale > 0.0f)) {
        throw ArgumentError(cat("rope: freq_base = ", p.freq_base,
                                " and freq_scale = ", p.freq_scale, " must be > 0"));
    }
    if (x.ne[2] > 0 && positions == nullptr) throw ArgumentError("rope: positions is null");
    check_rope_yarn(p);
}

}  // namespace

// x [head_dim, n_heads, n_tokens], in place; dims >= n_rot pass through.
void rope(Tensor& x, const int32_t* positions, const RopeParams& params, int n_threads) {
    check_rope(x, positions, params);
    const int64_t n_heads = x.ne[1];
    const int64_t n_tokens = x.ne[2];
    const int64_t half = params.n_rot / 2;
    if (n_heads == 0 || n_tokens == 0) return;

    // inv_freq [half] = base^(-2i/n_rot), in float as ggml computes it.
    std::vector<float> inv_freq(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i) {
        inv_freq[i] = std::pow(params.freq_base,
                               -2.0f * static_cast<float>(i) / static_cast<float>(params.n_rot));
    }
    const std::vector<float> ramp = rope_yarn_ramp(params);  // weight of the unscaled angle
    const float mscale = rope_magnitude(params);
    // cos/sin [half, n_tokens], shared by every head of a token.
    std::vector<float> cos_t(static_cast<size_t>(half * n_tokens));
    std::vector<float> sin_t(static_cast<size_t>(half * n_tokens));
#pragma omp parallel for num_threads(n_threads) schedule(static) if (half * n_tokens > 4096)
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float pos = static_cast<float>(positions[t]);
        for (int64_t i = 0; i < half; ++i) {
            float theta_x = pos * inv_freq[i];  // unscaled (extrapolated)
            if (params.freq_factors != nullptr) theta_x /= params.freq_factors[i];
            float theta = theta_x * params.freq_scale;
            if (ramp[i] != 0.0f) theta = theta * (1.0f - ramp[i]) + theta_x * ramp[i];
            cos_t[t * half + i] = std::cos(theta) * mscale;
            sin_t[t * half + i] = std::sin(theta) * mscale;
        }
    }

    const RowOps& ops = row_ops();
    const auto rotate = params.style == RopeStyle::Neox ? ops.rope_neox : ops.rope_norm;
    const int64_t n_items = n_heads * n_tokens;
#pragma omp parallel for num_threads(n_threads) schedule(static) if (n_items * half > 8192)
    for (int64_t item = 0; item < n_items; ++item) {
        const int64_t t = item / n_heads;
        // row `item` = head item % n_heads of token t
        rotate(f32_row(x, item), cos_t.data() + t * half, sin_t.data() + t * half, half);
    }
}

}  // namespace strata::cpu
