// Prompt tokenization and checks (prompt.h).
#include "engine/runtime/prompt.h"

#include <cstdio>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"

namespace strata {

std::vector<TokenId> tokenize_prompt(const Tokenizer& tokenizer, std::string_view text,
                                     const PromptOptions& options) {
    if (text.empty()) throw ArgumentError("the prompt is empty");
    for (size_t pos = 0; pos < text.size(); pos += utf8_unit_length(text, pos)) {
        if (utf8_char_length(text, pos) == 0) {
            char byte[8];
            std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[pos]));
            throw ArgumentError(cat("the prompt is not valid UTF-8: byte ", byte, " at offset ", pos));
        }
    }
    std::vector<TokenId> tokens = tokenizer.encode(text, /*add_special=*/true, options.parse_special);
    const int64_t limit = options.n_ctx - options.n_reserve;
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (limit <= 0) {
        throw ArgumentError(cat("the context (", options.n_ctx, ") leaves no room for a prompt when ",
                                options.n_reserve, " tokens are reserved for generation"));
    }
    if (n <= limit) return tokens;
    if (!options.truncate) {
        throw ArgumentError(cat("the prompt has ", n, " tokens but the context holds ", options.n_ctx,
                                " with ", options.n_reserve, " reserved for generation; raise -c, ",
                                "lower -n, or pass --truncate to keep the end of the prompt"));
    }
    const bool keep_bos = !tokens.empty() && tokens.front() == tokenizer.bos() && tokenizer.bos() != kNoToken;
    std::vector<TokenId> kept;
    if (keep_bos) kept.push_back(tokens.front());
    kept.insert(kept.end(), tokens.end() - (limit - (keep_bos ? 1 : 0)), tokens.end());
    return kept;
}

}  // namespace strata
