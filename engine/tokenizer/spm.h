// Sentencepiece-style tokenization of one text fragment (tokenizer.ggml.model = "llama"):
// spaces escaped to U+2581, characters merged pairwise by the score of the merged token, and
// byte fallback to <0xXX> tokens for what no token covers (docs/FORMATS.md §4.3).
//
// Holds references to the vocabulary and index it was built from; immutable, so any thread may
// call encode() at once.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/token_index.h"
#include "engine/tokenizer/vocab.h"

namespace strata {

// SentencePiece's stand-in for a space in vocabulary pieces: U+2581 LOWER ONE EIGHTH BLOCK.
inline constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";

class SpmEncoder {
public:
    SpmEncoder(const Vocab& vocab, const TokenIndex& index);

    // Appends the ids of `text` (raw text, special tokens already split off). With
    // `space_prefix`, a space is put in front first. Any bytes are accepted: a byte that is not
    // part of valid UTF-8 becomes its own symbol and so goes through byte fallback.
    void encode(std::string_view text, bool space_prefix, std::vector<TokenId>* out) const;

    // Id of the <0xXX> token for `byte`, kNoToken when the vocabulary has none.
    TokenId byte_token(uint8_t byte) const { return byte_tokens_[byte]; }

private:
    // Id of a token that merging may produce or a symbol may stand for: NORMAL, USER_DEFINED
    // or UNUSED, as sentencepiece (CONTROL, UNKNOWN and BYTE pieces are never matched in text).
    TokenId find_piece(std::string_view text) const;
    void emit_bytes(std::string_view text, std::vector<TokenId>* out) const;
    struct Scratch;
    // Merges one chunk of escaped text; chunks never share a token (see joins_space_).
    void encode_chunk(std::string_view text, Scratch* scratch, std::vector<TokenId>* out) const;
    bool joins_space(std::string_view ch) const;

    const Vocab& vocab_;
    const TokenIndex& index_;
    std::array<TokenId, 256> byte_tokens_;
    // Characters that some token has right before a U+2581 (Gemma: only ">", from ">▁</").
    // Before any other character, a U+2581 starts a new word that no merge can join to the
    // text before it, so the text is cut there and each word merges on its own: the same
    // result, with small agendas instead of one the size of the text.
    std::vector<std::string> joins_space_;  // sorted
};

}  // namespace strata
