// Command-line RoPE settings over the GGUF's (rope_overrides.h).
#include "engine/model/rope_overrides.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "engine/core/error.h"
#include "engine/model/config_checks.h"

namespace strata {
namespace {

// 1000000 and 0.25 as written (the stream's default 6 digits would print 1e+06).
std::string num(double v) {
    std::ostringstream out;
    out << std::setprecision(10) << v;
    return out.str();
}

double positive(std::optional<double> v, const char* flag) {
    if (!std::isfinite(*v) || *v <= 0.0) throw ArgumentError(cat(flag, " ", *v, ": must be a positive number"));
    return *v;
}

}  // namespace

bool RopeOverrides::any() const {
    return scaling || scale || freq_scale || freq_base || yarn_orig_ctx || yarn_ext_factor || yarn_attn_factor ||
           yarn_beta_fast || yarn_beta_slow;
}

RopeScaling parse_rope_scaling(std::string_view text) {
    if (text == "none") return RopeScaling::None;
    if (text == "linear") return RopeScaling::Linear;
    if (text == "yarn") return RopeScaling::Yarn;
    throw ArgumentError(cat("--rope-scaling '", text, "' is not supported (supported: none, linear, yarn)"));
}

void apply_rope_overrides(const RopeOverrides& o, ModelConfig& c) {
    RopeConfig& r = c.rope;
    if (o.scale && o.freq_scale) {
        throw ArgumentError("--rope-scale and --rope-freq-scale say the same thing (freq scale = 1/scale): give one");
    }
    if (r.scaling == RopeScaling::LongRope && (o.scaling || o.scale || o.freq_scale)) {
        throw ArgumentError("this model's RoPE is longrope (per-dimension factors from the file): "
                            "--rope-scaling, --rope-scale and --rope-freq-scale cannot replace it");
    }
    if (o.freq_base) r.freq_base = positive(o.freq_base, "--rope-freq-base");
    std::optional<double> factor;
    if (o.scale) factor = positive(o.scale, "--rope-scale");
    if (o.freq_scale) factor = 1.0 / positive(o.freq_scale, "--rope-freq-scale");
    if (o.scaling) {
        r.scaling = *o.scaling;
        if (r.scaling == RopeScaling::None) r.scaling_factor = 1.0;
    } else if (factor && r.scaling == RopeScaling::None) {
        r.scaling = RopeScaling::Linear;  // llama.cpp's freq_scale on a model without scaling
    }
    if (factor) {
        if (r.scaling == RopeScaling::None) throw ArgumentError("--rope-scale with --rope-scaling none: give one of them");
        r.scaling_factor = *factor;
    }
    const bool yarn_flag = o.yarn_orig_ctx || o.yarn_ext_factor || o.yarn_attn_factor || o.yarn_beta_fast || o.yarn_beta_slow;
    if (yarn_flag && r.scaling != RopeScaling::Yarn) {
        throw ArgumentError(cat("the --yarn-* flags apply to YaRN scaling; this run's is ", rope_scaling_name(r.scaling),
                                " (add --rope-scaling yarn)"));
    }
    if (o.yarn_orig_ctx) {
        if (*o.yarn_orig_ctx <= 0) throw ArgumentError(cat("--yarn-orig-ctx ", *o.yarn_orig_ctx, ": must be positive"));
        r.n_ctx_orig = *o.yarn_orig_ctx;
    }
    if (o.yarn_ext_factor) {
        if (!std::isfinite(*o.yarn_ext_factor)) throw ArgumentError("--yarn-ext-factor: must be a number");
        r.yarn_ext_factor = *o.yarn_ext_factor < 0.0 ? 1.0 : *o.yarn_ext_factor;  // llama.cpp: negative = unset
    }
    if (o.yarn_attn_factor) r.yarn_attn_factor = positive(o.yarn_attn_factor, "--yarn-attn-factor");
    if (o.yarn_beta_fast) r.yarn_beta_fast = positive(o.yarn_beta_fast, "--yarn-beta-fast");
    if (o.yarn_beta_slow) r.yarn_beta_slow = positive(o.yarn_beta_slow, "--yarn-beta-slow");
}

std::string describe_rope(const RopeConfig& r, int64_t n_ctx_train) {
    std::string s(rope_scaling_name(r.scaling));
    if (r.scaling == RopeScaling::Linear || r.scaling == RopeScaling::Yarn) s += " x" + num(r.scaling_factor);
    if (r.scaling == RopeScaling::Yarn) s += cat(" over ", r.n_ctx_orig > 0 ? r.n_ctx_orig : n_ctx_train, " positions");
    s += ", base " + num(r.freq_base);
    if (r.scaling == RopeScaling::Yarn) {
        s += " (ext " + num(r.yarn_ext_factor) + ", attn " + num(r.yarn_attn_factor) + ", beta " +
             num(r.yarn_beta_fast) + "/" + num(r.yarn_beta_slow) + ")";
    }
    return s;
}

int64_t rope_context(const ModelConfig& c) {
    const RopeConfig& r = c.rope;
    if (r.scaling != RopeScaling::Linear && r.scaling != RopeScaling::Yarn) return c.n_ctx_train;
    const int64_t orig = r.n_ctx_orig > 0 ? r.n_ctx_orig : c.n_ctx_train;
    const double scaled = static_cast<double>(orig) * r.scaling_factor;
    return scaled >= static_cast<double>(kMaxContext) ? std::max(c.n_ctx_train, kMaxContext)
                                                       : std::max(c.n_ctx_train, static_cast<int64_t>(scaled));
}

}  // namespace strata
