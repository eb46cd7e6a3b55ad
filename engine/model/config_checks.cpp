// Range and cross-field checks of a ModelConfig (see config_checks.h).
#include "engine/model/config_checks.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/model/arch_spec.h"
#include "engine/model/gguf_keys.h"
#include "engine/model/key_reader.h"

namespace strata {

void check_range(const KeyReader& keys, std::string_view what, int64_t value, int64_t lo,
                 int64_t hi) {
    if (value < lo || value > hi) {
        keys.fail(cat(what, " is ", value, ", expected ", lo, "..", hi));
    }
}

namespace {

void check_positive_finite(const KeyReader& keys, std::string_view what, double value) {
    if (!(value > 0.0) || !std::isfinite(value)) {
        keys.fail(cat(what, " is ", value, ", expected a finite value > 0"));
    }
}

void check_heads(const KeyReader& keys, const ArchSpec& spec, const ModelConfig& c) {
    for (int64_t il = 0; il < c.n_layer; ++il) {
        if (c.n_head[il] % c.n_head_kv[il] != 0) {
            keys.fail(cat("layer ", il, ": n_head ", c.n_head[il],
                          " is not a multiple of n_head_kv ", c.n_head_kv[il]));
        }
        if (spec.q_width_is_n_embd && c.n_head[il] * c.head_dim_k != c.n_embd) {
            keys.fail(cat("layer ", il, ": n_head ", c.n_head[il], " x head_dim ", c.head_dim_k,
                          " = ", c.n_head[il] * c.head_dim_k, " must equal n_embd ", c.n_embd,
                          " for ", spec.name));
        }
    }
    if (spec.q_width_is_n_embd && c.head_dim_v != c.head_dim_k) {
        keys.fail(cat("value_length ", c.head_dim_v, " must equal key_length ", c.head_dim_k,
                      " for ", spec.name));
    }
}

void check_rope(const KeyReader& keys, const ArchSpec& spec, const ModelConfig& c) {
    const RopeConfig& r = c.rope;
    check_positive_finite(keys, keys.key(keys::kRopeFreqBase), r.freq_base);
    check_positive_finite(keys, keys.key(keys::kRopeFreqBaseSwa), r.freq_base_swa);
    std::string rot_key = keys.key(keys::kRopeDimensionCount);
    check_range(keys, rot_key, r.n_rot, 2, c.head_dim_k);
    if (r.n_rot % 2 != 0) keys.fail(cat(rot_key, " is ", r.n_rot, ", expected an even number"));
    if (spec.rope_full_head && r.n_rot != c.head_dim_k) {
        keys.fail(cat(rot_key, " is ", r.n_rot, " but ", spec.name,
                      " rotates the whole head: expected head_dim ", c.head_dim_k));
    }
    if (r.scaling != RopeScaling::None) {
        check_positive_finite(keys, keys.key(keys::kRopeScalingFactor), r.scaling_factor);
    }
    check_range(keys, keys.key(keys::kRopeScalingOrigCtx), r.n_ctx_orig, 1, kMaxContext);
    if (r.scaling == RopeScaling::Yarn) {
        if (!(r.yarn_ext_factor >= 0.0 && r.yarn_ext_factor <= 1.0)) {
            keys.fail(cat(keys.key(keys::kRopeYarnExtFactor), " is ", r.yarn_ext_factor, ", expected 0..1"));
        }
        check_positive_finite(keys, keys.key(keys::kRopeYarnAttnFactor), r.yarn_attn_factor);
        check_positive_finite(keys, keys.key(keys::kRopeYarnBetaSlow), r.yarn_beta_slow);
        if (!(r.yarn_beta_fast > r.yarn_beta_slow) || !std::isfinite(r.yarn_beta_fast)) {
            keys.fail(cat(keys.key(keys::kRopeYarnBetaFast), " is ", r.yarn_beta_fast, ", expected more than ",
                          keys.key(keys::kRopeYarnBetaSlow), " (", r.yarn_beta_slow, ")"));
        }
    }
}

}  // namespace

void check_hparams(const KeyReader& keys, const ArchSpec& spec, const ModelConfig& c) {
    check_heads(keys, spec, c);
    std::string eps_key = keys.key(keys::kRmsEps);
    if (!(c.rms_eps > 0.0 && c.rms_eps <= 1.0)) {
        keys.fail(cat(eps_key, " is ", c.rms_eps, ", expected 0 < eps <= 1"));
    }
    check_rope(keys, spec, c);
    check_range(keys, keys.key(keys::kSlidingWindow), c.sliding_window, 0, kMaxContext);
    for (auto [key, cap] : {std::pair{keys::kFinalLogitSoftcap, c.final_logit_softcap},
                            std::pair{keys::kAttnLogitSoftcap, c.attn_logit_softcap}}) {
        if (!(cap >= 0.0) || !std::isfinite(cap)) {
            keys.fail(cat(keys.key(key), " is ", cap, ", expected >= 0 (0 = off)"));
        }
    }
    if (!(c.kq_scale > 0.0) || !std::isfinite(c.kq_scale)) {
        keys.fail(cat(keys.key(keys::kAttentionScale), " gives kq_scale ", c.kq_scale,
                      ", expected a finite value > 0"));
    }
    if (static_cast<int64_t>(c.is_swa.size()) != c.n_layer) {
        keys.fail(
            cat("sliding-window layout has ", c.is_swa.size(), " layers, expected ", c.n_layer));
    }
}

}  // namespace strata
