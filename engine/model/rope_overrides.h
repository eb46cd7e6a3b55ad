// RoPE settings from the command line over the GGUF's, as llama.cpp takes them (--rope-scaling,
// --rope-scale, --rope-freq-base, --rope-freq-scale, --yarn-orig-ctx, --yarn-ext-factor,
// --yarn-attn-factor, --yarn-beta-fast, --yarn-beta-slow): each one given replaces the file's
// value. Used to run a model past its training context with the scaling it was tuned for
// (a Qwen2.5 file without its YaRN keys), or to try another.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/model/model_config.h"

namespace strata {

struct RopeOverrides {
    std::optional<RopeScaling> scaling;  // --rope-scaling none|linear|yarn
    std::optional<double> scale;         // --rope-scale N: the context extension factor
    std::optional<double> freq_scale;    // --rope-freq-scale F: 1/N
    std::optional<double> freq_base;     // --rope-freq-base (full-attention layers)
    std::optional<int64_t> yarn_orig_ctx;
    std::optional<double> yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;

    bool any() const;  // a flag was given: the runtime says what the RoPE became
};

// "none", "linear", "yarn"; ArgumentError naming --rope-scaling otherwise (longrope needs the
// per-dimension factors only a file carries).
RopeScaling parse_rope_scaling(std::string_view text);

// c.rope with the overrides applied: a scale or freq scale without --rope-scaling makes a
// model without scaling linear (llama.cpp's freq_scale); "none" drops the file's scaling. The
// yarn flags apply to YaRN only. ArgumentError naming the flag for a value out of range, both
// --rope-scale and --rope-freq-scale, a yarn flag without YaRN, or a scaling over longrope.
void apply_rope_overrides(const RopeOverrides& o, ModelConfig& c);

// "yarn x4 over 32768 positions, base 1000000 (ext 1, attn 1, beta 32/1)", "linear x2, base
// 10000", "none, base 500000": what a run's RoPE is, for the note that overrides print.
std::string describe_rope(const RopeConfig& r, int64_t n_ctx_train);

// The context the model's RoPE covers: the training context, or with linear or YaRN scaling
// the original context (n_ctx_orig, else the training context) times the factor when that is
// more. An upper bound for -c: a file whose training context already counts the factor
// (some linear ones) gets more room than it was tuned for.
int64_t rope_context(const ModelConfig& c);

}  // namespace strata
