// Turning user text into prompt tokens with the checks a CLI or server needs: non-empty,
// valid UTF-8, and fitting the context together with the tokens still to be generated
// (or truncated from the front when the caller asks for it).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace strata {

class Tokenizer;

struct PromptOptions {
    int64_t n_ctx = 0;           // context size of the session
    int64_t n_reserve = 0;       // cells to keep free for generation (n_predict, or 1 when open-ended)
    bool truncate = false;       // drop tokens from the front (keeping BOS) instead of failing
    bool parse_special = false;  // text spelling control tokens becomes those tokens
};

// Throws ArgumentError: empty text, invalid UTF-8 (naming the byte offset), or a prompt that
// does not fit (naming its length, the context and the reserve) when truncate is off.
std::vector<TokenId> tokenize_prompt(const Tokenizer& tokenizer, std::string_view text,
                                     const PromptOptions& options);

}  // namespace strata
