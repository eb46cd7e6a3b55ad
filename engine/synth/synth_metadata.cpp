// Metadata keys of a synthetic model (see synth_metadata.h). Key types follow the converter:
// u32 sizes, f32 floats, INT32 arrays for per-layer values, u32 token ids, bool flags.
#include "engine/synth/synth_metadata.h"

#include <algorithm>

#include "engine/model/gguf_keys.h"

namespace strata {
namespace {

GgufValue u32(int64_t v) {
    return GgufValue::u32(static_cast<uint32_t>(v));
}
GgufValue f32(double v) {
    return GgufValue::f32(static_cast<float>(v));
}

// A u32 when every layer has the same value, else an INT32 array with one entry per layer.
GgufValue per_layer(const std::vector<int64_t>& values) {
    if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; })) {
        return u32(values[0]);
    }
    return GgufValue::i32s(std::vector<int32_t>(values.begin(), values.end()));
}

void write_hparams(Metadata& w, const ModelConfig& c) {
    auto key = [&](std::string_view suffix) { return keys::arch_key(c.architecture, suffix); };
    w.emplace_back(key(keys::kContextLength), u32(c.n_ctx_train));
    w.emplace_back(key(keys::kEmbeddingLength), u32(c.n_embd));
    w.emplace_back(key(keys::kBlockCount), u32(c.n_layer));
    w.emplace_back(key(keys::kFeedForwardLength), per_layer(c.n_ff));
    w.emplace_back(key(keys::kHeadCount), per_layer(c.n_head));
    w.emplace_back(key(keys::kHeadCountKv), per_layer(c.n_head_kv));
    // Like the converters: head dims only where they are not n_embd / n_head.
    bool default_head_dim = c.n_embd % c.n_head[0] == 0 && c.head_dim_k == c.n_embd / c.n_head[0];
    if (!default_head_dim || c.architecture == "gemma3" || c.architecture == "qwen3" || c.architecture == "qwen3moe") {
        w.emplace_back(key(keys::kKeyLength), u32(c.head_dim_k));
        w.emplace_back(key(keys::kValueLength), u32(c.head_dim_v));
    }
    w.emplace_back(key(keys::kRmsEps), f32(c.rms_eps));
    if (c.architecture == "llama" || c.rope.n_rot != c.head_dim_k) {
        w.emplace_back(key(keys::kRopeDimensionCount), u32(c.rope.n_rot));
    }
    w.emplace_back(key(keys::kRopeFreqBase), f32(c.rope.freq_base));
    if (c.rope.scaling != RopeScaling::None) {
        w.emplace_back(key(keys::kRopeScalingType),
                       GgufValue::string(std::string(rope_scaling_name(c.rope.scaling))));
        w.emplace_back(key(keys::kRopeScalingFactor), f32(c.rope.scaling_factor));
    }
    if (c.sliding_window > 0) w.emplace_back(key(keys::kSlidingWindow), u32(c.sliding_window));
    if (c.final_logit_softcap > 0)
        w.emplace_back(key(keys::kFinalLogitSoftcap), f32(c.final_logit_softcap));
    if (c.attn_logit_softcap > 0)
        w.emplace_back(key(keys::kAttnLogitSoftcap), f32(c.attn_logit_softcap));
    if (c.architecture == "llama") w.emplace_back(key(keys::kVocabSize), u32(c.n_vocab));
    if (c.is_moe()) {
        w.emplace_back(key(keys::kExpertCount), u32(c.moe.n_expert));
        w.emplace_back(key(keys::kExpertUsedCount), u32(c.moe.n_expert_used));
        if (c.architecture != "llama") w.emplace_back(key(keys::kExpertFeedForwardLength), u32(c.moe.n_ff_exp));
    }
}

void write_tokenizer(Metadata& w, const SynthVocab& v) {
    w.emplace_back(std::string(keys::kTokModel), GgufValue::string(v.model));
    if (!v.pre.empty()) w.emplace_back(std::string(keys::kTokPre), GgufValue::string(v.pre));
    w.emplace_back(std::string(keys::kTokTokens), GgufValue::strings(v.tokens));
    if (!v.scores.empty()) w.emplace_back(std::string(keys::kTokScores), GgufValue::f32s(v.scores));
    w.emplace_back(std::string(keys::kTokTokenType), GgufValue::i32s(v.token_types));
    if (!v.merges.empty())
        w.emplace_back(std::string(keys::kTokMerges), GgufValue::strings(v.merges));
    const SpecialTokens& s = v.special;
    for (auto [k, id] : {std::pair{keys::kTokBos, s.bos}, std::pair{keys::kTokEos, s.eos},
                         std::pair{keys::kTokUnk, s.unk}, std::pair{keys::kTokPad, s.pad},
                         std::pair{keys::kTokEot, s.eot}}) {
        if (id >= 0) w.emplace_back(std::string(k), u32(id));
    }
    for (auto [k, flag] :
         {std::pair{keys::kTokAddBos, v.add_bos}, std::pair{keys::kTokAddEos, v.add_eos},
          std::pair{keys::kTokAddSpacePrefix, v.add_space_prefix}}) {
        if (flag) w.emplace_back(std::string(k), GgufValue::boolean(*flag));
    }
    if (!v.chat_template.empty()) {
        w.emplace_back(std::string(keys::kChatTemplate), GgufValue::string(v.chat_template));
    }
}

}  // namespace

Metadata synth_metadata(const SynthPlan& plan, const SynthOptions& options) {
    const ModelConfig& c = plan.config;
    Metadata w;
    w.emplace_back(std::string(keys::kArchitecture), GgufValue::string(c.architecture));
    w.emplace_back("general.type", GgufValue::string("model"));
    w.emplace_back(std::string(keys::kName), GgufValue::string(c.name + " (synthetic)"));
    w.emplace_back(std::string(keys::kFileType),
                   u32(static_cast<int64_t>(synth_file_type(options.type))));
    w.emplace_back(std::string(keys::kQuantizationVersion), u32(2));
    w.emplace_back("strata.synth.preset", GgufValue::string(plan.preset));
    w.emplace_back("strata.synth.type",
                   GgufValue::string(std::string(synth_type_name(options.type))));
    w.emplace_back("strata.synth.seed", GgufValue::u64(options.seed));
    write_hparams(w, c);
    write_tokenizer(w, plan.vocab);
    return w;
}

}  // namespace strata
