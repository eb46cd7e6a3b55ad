// GGUF metadata key names (docs/FORMATS.md §1.9), shared by the config reader and the synthetic
// writer so both spell every key the same way. Architecture keys are "<arch>.<suffix>".
#pragma once

#include <string>
#include <string_view>

namespace strata::keys {

// general.*
inline constexpr std::string_view kArchitecture = "general.architecture";
inline constexpr std::string_view kName = "general.name";
inline constexpr std::string_view kFileType = "general.file_type";
inline constexpr std::string_view kQuantizationVersion = "general.quantization_version";

// <arch>.* suffixes
inline constexpr std::string_view kContextLength = "context_length";
inline constexpr std::string_view kEmbeddingLength = "embedding_length";
inline constexpr std::string_view kBlockCount = "block_count";
inline constexpr std::string_view kFeedForwardLength = "feed_forward_length";
inline constexpr std::string_view kVocabSize = "vocab_size";
inline constexpr std::string_view kExpertCount = "expert_count";
inline constexpr std::string_view kExpertUsedCount = "expert_used_count";
inline constexpr std::string_view kExpertFeedForwardLength = "expert_feed_forward_length";
inline constexpr std::string_view kExpertSharedFeedForwardLength = "expert_shared_feed_forward_length";
inline constexpr std::string_view kExpertWeightsNorm = "expert_weights_norm";
inline constexpr std::string_view kExpertWeightsScale = "expert_weights_scale";
inline constexpr std::string_view kHeadCount = "attention.head_count";
inline constexpr std::string_view kHeadCountKv = "attention.head_count_kv";
inline constexpr std::string_view kKeyLength = "attention.key_length";
inline constexpr std::string_view kValueLength = "attention.value_length";
inline constexpr std::string_view kRmsEps = "attention.layer_norm_rms_epsilon";
inline constexpr std::string_view kSlidingWindow = "attention.sliding_window";
inline constexpr std::string_view kSlidingWindowPattern = "attention.sliding_window_pattern";
inline constexpr std::string_view kAttentionScale = "attention.scale";
inline constexpr std::string_view kRopeDimensionCount = "rope.dimension_count";
inline constexpr std::string_view kRopeFreqBase = "rope.freq_base";
inline constexpr std::string_view kRopeFreqBaseSwa = "rope.freq_base_swa";
inline constexpr std::string_view kRopeScalingType = "rope.scaling.type";
inline constexpr std::string_view kRopeScalingFactor = "rope.scaling.factor";
inline constexpr std::string_view kRopeScaleLinear = "rope.scale_linear";  // older spelling
inline constexpr std::string_view kRopeScalingOrigCtx = "rope.scaling.original_context_length";
inline constexpr std::string_view kRopeYarnExtFactor = "rope.scaling.yarn_ext_factor";
inline constexpr std::string_view kRopeYarnAttnFactor = "rope.scaling.yarn_attn_factor";
inline constexpr std::string_view kRopeYarnBetaFast = "rope.scaling.yarn_beta_fast";
inline constexpr std::string_view kRopeYarnBetaSlow = "rope.scaling.yarn_beta_slow";
inline constexpr std::string_view kFinalLogitSoftcap = "final_logit_softcapping";
inline constexpr std::string_view kAttnLogitSoftcap = "attn_logit_softcapping";

// tokenizer.*
inline constexpr std::string_view kTokModel = "tokenizer.ggml.model";
inline constexpr std::string_view kTokPre = "tokenizer.ggml.pre";
inline constexpr std::string_view kTokTokens = "tokenizer.ggml.tokens";
inline constexpr std::string_view kTokScores = "tokenizer.ggml.scores";
inline constexpr std::string_view kTokTokenType = "tokenizer.ggml.token_type";
inline constexpr std::string_view kTokMerges = "tokenizer.ggml.merges";
inline constexpr std::string_view kTokBos = "tokenizer.ggml.bos_token_id";
inline constexpr std::string_view kTokEos = "tokenizer.ggml.eos_token_id";
inline constexpr std::string_view kTokUnk = "tokenizer.ggml.unknown_token_id";
inline constexpr std::string_view kTokPad = "tokenizer.ggml.padding_token_id";
inline constexpr std::string_view kTokSep = "tokenizer.ggml.seperator_token_id";  // sic
inline constexpr std::string_view kTokEot = "tokenizer.ggml.eot_token_id";
inline constexpr std::string_view kTokEom = "tokenizer.ggml.eom_token_id";
inline constexpr std::string_view kTokMask = "tokenizer.ggml.mask_token_id";
inline constexpr std::string_view kTokAddBos = "tokenizer.ggml.add_bos_token";
inline constexpr std::string_view kTokAddEos = "tokenizer.ggml.add_eos_token";
inline constexpr std::string_view kTokAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
inline constexpr std::string_view kChatTemplate = "tokenizer.chat_template";

// "<arch>.<suffix>", e.g. arch_key("llama", kBlockCount) == "llama.block_count".
inline std::string arch_key(std::string_view arch, std::string_view suffix) {
    std::string key;
    key.reserve(arch.size() + 1 + suffix.size());
    key.append(arch).append(".").append(suffix);
    return key;
}

}  // namespace strata::keys
