// Log-probabilities of generated tokens (the `logprobs` request fields): the chosen token's
// log-softmax of the model's logits (before sampling settings such as temperature or penalties,
// as OpenAI reports them) and the n most likely alternatives, and their two OpenAI shapes —
// chat's {"content": [{"token", "logprob", "bytes", "top_logprobs"}]} and the legacy
// completion's {"tokens", "token_logprobs", "top_logprobs", "text_offset"}.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/vocab.h"

namespace strata {
class Tokenizer;
}

namespace strata::server {

inline constexpr int kMaxTopLogprobs = 20;  // OpenAI's limit (chat; completions: 5)

struct TokenLogprob {
    TokenId id = 0;
    std::string piece;  // the token's text (bytes; may be part of a UTF-8 character)
    float logprob = 0;
    std::vector<std::pair<std::string, float>> top;  // most likely first, n_top entries
};

// log softmax(logits)[chosen] and the n_top (0..kMaxTopLogprobs) largest entries.
TokenLogprob token_logprob(std::span<const float> logits, TokenId chosen, int n_top, const Tokenizer& tokenizer);

nlohmann::json chat_logprobs_json(std::span<const TokenLogprob> tokens);
// text_offset: where the first token's text starts in the generated text (streams pass the
// length sent so far).
nlohmann::json completion_logprobs_json(std::span<const TokenLogprob> tokens, int64_t text_offset);

}  // namespace strata::server
