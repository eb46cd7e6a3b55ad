// ModelConfig::from_file: reads the generic hyperparameter keys, lets the architecture read
// its own, checks everything, then checks the tensor table against the architecture's spec.
#include "engine/model/model_config.h"

#include <cmath>
#include <optional>

#include "engine/core/error.h"
#include "engine/gguf/model_file.h"
#include "engine/model/arch_spec.h"
#include "engine/model/config_checks.h"
#include "engine/model/gguf_keys.h"
#include "engine/model/key_reader.h"
#include "engine/model/moe_config.h"

namespace strata {

std::string_view rope_style_name(RopeStyle style) {
    return style == RopeStyle::Norm ? "norm" : "neox";
}

std::string_view rope_scaling_name(RopeScaling scaling) {
    switch (scaling) {
        case RopeScaling::None:
            return "none";
        case RopeScaling::Linear:
            return "linear";
        case RopeScaling::Yarn:
            return "yarn";
        case RopeScaling::LongRope:
            return "longrope";
    }
    return "unknown";
}

std::string_view activation_name(Activation activation) {
    return activation == Activation::Silu ? "silu" : "gelu_tanh";
}

namespace {

std::vector<int64_t> require_per_layer(const KeyReader& keys, std::string_view suffix,
                                       int64_t n_layer) {
    std::string key = keys.key(suffix);
    auto values = keys.find_per_layer(key, n_layer);
    if (!values) keys.fail(cat("missing required key '", key, "' (integer or per-layer array)"));
    return *values;
}

void read_rope(const KeyReader& keys, ModelConfig& c) {
    RopeConfig& r = c.rope;
    r.freq_base = keys.find_float(keys.key(keys::kRopeFreqBase)).value_or(10000.0);
    r.freq_base_swa = keys.find_float(keys.key(keys::kRopeFreqBaseSwa)).value_or(10000.0);
    r.n_rot = keys.find_int(keys.key(keys::kRopeDimensionCount)).value_or(c.head_dim_k);
    r.n_ctx_orig = keys.find_int(keys.key(keys::kRopeScalingOrigCtx)).value_or(c.n_ctx_train);

    std::optional<double> factor = keys.find_float(keys.key(keys::kRopeScalingFactor));
    if (!factor) factor = keys.find_float(keys.key(keys::kRopeScaleLinear));
    std::optional<std::string> type = keys.find_string(keys.key(keys::kRopeScalingType));
    // llama.cpp's default is "linear", and a factor of 0 (or 1) means no scaling.
    bool has_factor = factor && *factor != 0.0 && *factor != 1.0;
    if (!type || *type == "linear") {
        r.scaling = has_factor ? RopeScaling::Linear : RopeScaling::None;
    } else if (*type == "none") {
        r.scaling = RopeScaling::None;
    } else if (*type == "yarn") {
        r.scaling = RopeScaling::Yarn;
    } else {
        // longrope (Phi-3 long context: per-dim factor tensors chosen by context length) and any
        // other type would run as no scaling and produce wrong text past the original context.
        throw UnsupportedError(cat("key '", keys.key(keys::kRopeScalingType), "' is '", *type,
                                   "': this RoPE scaling type is not supported (supported: none, linear, yarn)"));
    }
    if (r.scaling == RopeScaling::Yarn) {
        r.yarn_ext_factor = keys.find_float(keys.key(keys::kRopeYarnExtFactor)).value_or(1.0);
        r.yarn_attn_factor = keys.find_float(keys.key(keys::kRopeYarnAttnFactor)).value_or(1.0);
        r.yarn_beta_fast = keys.find_float(keys.key(keys::kRopeYarnBetaFast)).value_or(32.0);
        r.yarn_beta_slow = keys.find_float(keys.key(keys::kRopeYarnBetaSlow)).value_or(1.0);
        // llama.cpp: a negative ext_factor means "not set" (1 for YaRN).
        if (r.yarn_ext_factor < 0.0) r.yarn_ext_factor = 1.0;
    }
    r.scaling_factor = (r.scaling != RopeScaling::None && factor && *factor != 0.0) ? *factor : 1.0;
}

void read_hparams(const KeyReader& keys, ModelConfig& c) {
    c.n_ctx_train = keys.require_int(keys.key(keys::kContextLength));
    check_range(keys, keys.key(keys::kContextLength), c.n_ctx_train, 1, kMaxContext);
    c.n_embd = keys.require_int(keys.key(keys::kEmbeddingLength));
    check_range(keys, keys.key(keys::kEmbeddingLength), c.n_embd, 1, kMaxEmbd);
    c.n_layer = keys.require_int(keys.key(keys::kBlockCount));
    check_range(keys, keys.key(keys::kBlockCount), c.n_layer, 1, kMaxLayers);

    // A MoE file may give only the experts' width (llama.cpp reads feed_forward_length as optional).
    std::optional<int64_t> expert_ff = keys.find_int(keys.key(keys::kExpertFeedForwardLength));
    if (!keys.has(keys.key(keys::kFeedForwardLength)) && expert_ff) {
        c.n_ff.assign(static_cast<size_t>(c.n_layer), *expert_ff);
    } else {
        c.n_ff = require_per_layer(keys, keys::kFeedForwardLength, c.n_layer);
    }
    c.n_head = require_per_layer(keys, keys::kHeadCount, c.n_layer);
    c.n_head_kv = keys.find_per_layer(keys.key(keys::kHeadCountKv), c.n_layer).value_or(c.n_head);
    for (int64_t il = 0; il < c.n_layer; ++il) {
        std::string layer = cat(" (layer ", il, ")");
        check_range(keys, keys.key(keys::kFeedForwardLength) + layer, c.n_ff[il], 1, kMaxFf);
        check_range(keys, keys.key(keys::kHeadCount) + layer, c.n_head[il], 1, kMaxHeads);
        check_range(keys, keys.key(keys::kHeadCountKv) + layer, c.n_head_kv[il], 1, kMaxHeads);
    }

    std::optional<int64_t> head_dim = keys.find_int(keys.key(keys::kKeyLength));
    if (!head_dim) {
        if (c.n_embd % c.n_head[0] != 0) {
            keys.fail(cat("no '", keys.key(keys::kKeyLength), "' and n_embd ", c.n_embd,
                          " is not a multiple of n_head ", c.n_head[0]));
        }
        head_dim = c.n_embd / c.n_head[0];
    }
    c.head_dim_k = *head_dim;
    c.head_dim_v = keys.find_int(keys.key(keys::kValueLength)).value_or(c.head_dim_k);
    check_range(keys, keys.key(keys::kKeyLength), c.head_dim_k, 1, kMaxHeadDim);
    check_range(keys, keys.key(keys::kValueLength), c.head_dim_v, 1, kMaxHeadDim);

    c.rms_eps = keys.require_float(keys.key(keys::kRmsEps));
    read_rope(keys, c);
    c.sliding_window = keys.find_int(keys.key(keys::kSlidingWindow)).value_or(0);
    c.is_swa.assign(static_cast<size_t>(c.n_layer), false);
    c.final_logit_softcap = keys.find_float(keys.key(keys::kFinalLogitSoftcap)).value_or(0.0);
    c.attn_logit_softcap = keys.find_float(keys.key(keys::kAttnLogitSoftcap)).value_or(0.0);
}

// LongRoPE (Phi-3 128k, Phi-3.5) stores per-dimension factors as tensors, not as a scaling type
// key (convert_hf_to_gguf.py writes no rope.scaling.type for it). The short factors apply even
// within the original context, so running without them would produce wrong text.
void refuse_longrope(const ModelFile& file) {
    for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
        if (file.find_tensor(name) == nullptr) continue;
        throw UnsupportedError(cat(file.path(), ": tensor '", name, "' holds LongRoPE frequency factors: RoPE scaling type ",
                                   "'longrope' is not supported (supported: none, linear, yarn)"));
    }
}

}  // namespace

ModelConfig ModelConfig::from_file(const ModelFile& file) {
    KeyReader general(file, "general");
    std::optional<std::string> arch = general.find_string(keys::kArchitecture);
    if (!arch) general.fail(cat("missing required key '", keys::kArchitecture, "'"));
    const ArchSpec& spec = arch_spec(*arch);

    ModelConfig c;
    c.architecture = *arch;
    c.name = general.find_string(keys::kName).value_or("");
    c.file_type = general.find_int(keys::kFileType).value_or(-1);

    KeyReader keys(file, *arch);
    read_hparams(keys, c);
    read_moe_keys(keys, spec, c);

    c.rope.style = spec.rope_style;
    c.activation = spec.activation;
    c.has_qk_norm = spec.qk_norm;
    c.has_post_norms = spec.post_norms;
    c.fused_qkv = spec.fused_qkv;
    c.fused_gate_up = spec.fused_gate_up;
    c.tied_output = file.find_tensor("output.weight") == nullptr;
    c.rope.has_freq_factors = file.find_tensor("rope_freqs.weight") != nullptr;
    refuse_longrope(file);
    c.has_qkv_bias = spec.qkv_bias || file.find_tensor("blk.0.attn_q.bias") != nullptr;

    const TensorInfo* embd = file.find_tensor("token_embd.weight");
    read_tokenizer(keys, embd != nullptr ? embd->ne[1] : 0, c);

    spec.read_keys(keys, c);
    check_hparams(keys, spec, c);
    check_expert_tensors(file, c);
    validate_tensors(file, c);
    return c;
}

}  // namespace strata
