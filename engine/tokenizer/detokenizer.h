// Streaming detokenization: token ids in, text out, one token at a time. Only complete UTF-8
// is emitted; the start of a character split across tokens (byte-fallback or byte-level
// pieces) is held until the rest arrives, so every returned string is valid UTF-8.
//
// One Detokenizer per stream; not thread-safe. The Tokenizer must outlive it.
#pragma once

#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace strata {

class Detokenizer {
public:
    // `special`: render CONTROL tokens (as Tokenizer::token_to_piece).
    explicit Detokenizer(const Tokenizer& tokenizer, bool special = false);

    // Text completed by token `id` (often empty while a character is incomplete). Bytes that
    // can never become valid UTF-8 come out as U+FFFD. Concatenated, the results of push() and
    // flush() equal Tokenizer::decode() of the same ids whenever that is valid UTF-8.
    std::string push(TokenId id);
    // Ends the stream: what is still held comes out as U+FFFD (an unfinished character), and
    // the next push() starts a new stream.
    std::string flush();

    // Bytes held back, waiting for the rest of a character (0-3).
    size_t pending_bytes() const { return pending_.size(); }

private:
    const Tokenizer& tokenizer_;
    bool special_;
    bool strip_space_;  // SPM with add_space_prefix: drop the first leading space, as decode()
    bool at_start_ = true;
    std::string pending_;
};

}  // namespace strata
