// The tokenizer vocabulary of a GGUF model as plain data: token texts, scores, types, merges,
// special ids and flags from the tokenizer.ggml.* metadata (docs/FORMATS.md §1.9, §4.1).
// Tests may fill one directly; validate() is the contract the tokenizers rely on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

class ModelFile;

using TokenId = int32_t;
constexpr TokenId kNoToken = -1;

// tokenizer.ggml.token_type values (sentencepiece piece types).
enum class TokenType : int32_t {
    UNDEFINED = 0,  // treated as NORMAL
    NORMAL = 1,
    UNKNOWN = 2,
    CONTROL = 3,
    USER_DEFINED = 4,
    UNUSED = 5,
    BYTE = 6,
};

// tokenizer.ggml.model: "llama" is sentencepiece-style score merging, "gpt2" byte-level BPE.
enum class VocabModel { SPM, BPE };

struct Vocab {
    VocabModel model = VocabModel::SPM;
    std::string pre = "default";      // BPE pre-tokenizer (tokenizer.ggml.pre); SPM ignores it
    std::vector<std::string> tokens;  // [n_tokens] token text, index = id
    std::vector<float> scores;        // [n_tokens] or empty (all 0): SPM merge priority
    std::vector<TokenType> types;     // [n_tokens] or empty (all NORMAL)
    std::vector<std::string> merges;  // BPE "left right", rank = index; empty for SPM

    TokenId bos = kNoToken;
    TokenId eos = kNoToken;
    TokenId unk = kNoToken;
    TokenId pad = kNoToken;
    TokenId eot = kNoToken;  // end of turn; auto-detected by text when kNoToken
    TokenId eom = kNoToken;  // end of message (tool calls)
    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = false;  // SPM: a leading " " before text at the start/after specials

    int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
    TokenType type(TokenId id) const;
    float score(TokenId id) const { return scores.empty() ? 0.0f : scores[id]; }

    // Reads tokenizer.ggml.*. Missing ids and flags get llama.cpp's defaults for the model
    // (SPM: bos 1, eos 2, unk 0, add_bos, add_space_prefix; BPE: add_bos for llama3-style
    // pre-tokenizers). Throws FormatError (bad arrays, ids out of range) or UnsupportedError
    // (a tokenizer model other than llama/gpt2). Calls validate().
    static Vocab from_file(const ModelFile& file);

    // Throws FormatError unless: tokens is non-empty; scores and types are empty or as long as
    // tokens; every type is 0-6; every special id is kNoToken or in range.
    void validate() const;
};

const char* token_type_name(TokenType type);

}  // namespace strata
