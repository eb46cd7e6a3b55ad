// Text <-> token ids for a GGUF vocabulary: special-token splitting, then the model's own
// algorithm (SPM or byte-level BPE) on the text between, BOS/EOS rules, pieces for decoding,
// and the end-of-generation set (docs/FORMATS.md §4).
//
// Thread safety: immutable after construction; copies share the same tables; every method may
// be called from any thread at once.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace strata {

class ModelFile;

class Tokenizer {
public:
    // Builds the lookup tables (262144 tokens: tens of milliseconds). Throws FormatError for an
    // invalid vocabulary and UnsupportedError for an unknown BPE pre-tokenizer.
    explicit Tokenizer(Vocab vocab);
    static Tokenizer from_file(const ModelFile& file);

    // Token ids of `text`. With `add_special`, BOS/EOS are added as the vocabulary asks. With
    // `parse_special`, text spelling a CONTROL token (`<start_of_turn>`) becomes that token;
    // USER_DEFINED tokens are always matched. `text` may be any bytes and never makes encode()
    // fail: a byte that is not part of valid UTF-8 is a character of its own (SPM: byte
    // fallback to <0xXX>; BPE: a word of its own, spelled by the byte-level table), so
    // decode(encode(text)) gives the same bytes back (SPM: except a literal U+2581, which
    // reads as a space).
    std::vector<TokenId> encode(std::string_view text, bool add_special = true,
                                bool parse_special = false) const;

    // The bytes token `id` stands for (possibly part of a UTF-8 character). CONTROL, UNKNOWN
    // and UNUSED tokens give their text only when `special`, else nothing. Throws
    // ArgumentError for an id out of range.
    std::string token_to_piece(TokenId id, bool special = false) const;
    // The pieces of `ids` concatenated; with add_space_prefix the space the encoder put in front
    // is taken off again. May be invalid UTF-8 if the ids split a character.
    std::string decode(std::span<const TokenId> ids, bool special = false) const;

    // End of generation: eos, eot, eom and the CONTROL tokens spelled like end markers
    // (<end_of_turn>, <|im_end|>, <|eot_id|>, <|endoftext|>...). Sorted.
    bool is_eog(TokenId id) const;
    const std::vector<TokenId>& eog_ids() const;
    // End of turn: tokenizer.ggml.eot_token_id, else the first CONTROL token spelled like one.
    TokenId eot() const;

    const Vocab& vocab() const;
    int32_t n_tokens() const { return vocab().n_tokens(); }
    TokenId bos() const { return vocab().bos; }
    TokenId eos() const { return vocab().eos; }
    // Id of the token with exactly this text, kNoToken if none.
    TokenId find_token(std::string_view text) const;

private:
    struct State;
    std::shared_ptr<const State> state_;
};

}  // namespace strata
