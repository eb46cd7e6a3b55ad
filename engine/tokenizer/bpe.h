// Byte-level BPE tokenization of one text fragment (tokenizer.ggml.model = "gpt2"): the
// pre-tokenizer's words, each byte spelled with GPT-2's byte->unicode table, merged pair by
// pair in the order of tokenizer.ggml.merges (lowest rank first; ties: leftmost).
//
// Holds references to the vocabulary and index it was built from; immutable, so any thread may
// call encode() at once.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/token_index.h"
#include "engine/tokenizer/vocab.h"

namespace strata {

// GPT-2's reversible byte <-> unicode spelling: printable bytes stand for themselves, the other
// 68 map to U+0100 onwards in byte order, so every byte string is printable text.
const std::array<std::string, 256>& byte_level_chars();
// The bytes a byte-level token text spells. Characters outside the table are kept as their
// UTF-8 (tokens added by hand are often written plainly).
std::string byte_level_decode(std::string_view text);

class BpeEncoder {
public:
    // Throws UnsupportedError for an unknown pre-tokenizer and FormatError for a merge that is
    // malformed or names tokens the vocabulary lacks.
    BpeEncoder(const Vocab& vocab, const TokenIndex& index);

    // Appends the ids of `text` (special tokens already split off). Any bytes are accepted.
    void encode(std::string_view text, std::vector<TokenId>* out) const;

    const PreTokenizer& pre_tokenizer() const { return pre_; }

private:
    struct Merge {
        int32_t rank;
        TokenId result;
    };
    static uint64_t pair_key(TokenId left, TokenId right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
               static_cast<uint32_t>(right);
    }
    void encode_word(std::string_view word, std::vector<TokenId>* out) const;

    const Vocab& vocab_;
    const TokenIndex& index_;
    PreTokenizer pre_;
    std::array<TokenId, 256> byte_ids_;  // the token spelling each single byte
    std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace strata
