// Synthetic tokenizer vocabularies of a real model family's kind and size, so a synthetic
// file is a complete model: SPM vocabularies (Llama 2, Gemma 3) with control tokens, the 256
// <0xXX> byte tokens and "▁"-prefixed pieces with scores; GPT-2-style BPE vocabularies
// (Llama 3, Qwen2/3) with byte-mapped base tokens, merges in rank order, special tokens and
// padding. The text of the pieces is random; the structure is real.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/model_config.h"

namespace strata {

enum class VocabStyle { Llama2Spm, Gemma3Spm, Llama3Bpe, Qwen2Bpe, Qwen3Bpe };

// GGUF token types (tokenizer.ggml.token_type).
enum SynthTokenType : int32_t {  // values as engine/tokenizer TokenType
    kTokenNormal = 1,
    kTokenUnknown = 2,
    kTokenControl = 3,
    kTokenUserDefined = 4,
    kTokenUnused = 5,
    kTokenByte = 6,
};

struct SynthVocab {
    std::string model;  // tokenizer.ggml.model
    std::string pre;    // tokenizer.ggml.pre ("" = not written)
    std::vector<std::string> tokens;
    std::vector<float> scores;  // empty for BPE
    std::vector<int32_t> token_types;
    std::vector<std::string> merges;  // BPE only, "left right" in rank order
    SpecialTokens special;            // -1 = not written
    std::optional<bool> add_bos;
    std::optional<bool> add_eos;
    std::optional<bool> add_space_prefix;
    std::string chat_template;  // "" = none
};

// Smallest vocabulary the style can be built with (its control tokens, the 256 byte tokens
// and some pieces).
int64_t min_vocab_size(VocabStyle style);

// A vocabulary of exactly n_vocab tokens. Deterministic: the same style and size always give
// the same vocabulary. Throws ArgumentError when n_vocab < min_vocab_size(style).
SynthVocab make_synth_vocab(VocabStyle style, int64_t n_vocab);

}  // namespace strata
