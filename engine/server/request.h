// The body of POST /v1/chat/completions and /v1/completions, parsed and checked field by field
// (OpenAI's names, types and ranges). Everything here is plain data; nothing reaches the
// engine until the whole request has passed. Fields the server does not know are ignored, as
// OpenAI-compatible servers do; features it does not have (echo, best_of, suffix) are refused
// with 400 naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/sampler/sampler_params.h"
#include "engine/server/tool_request.h"
#include "engine/tokenizer/vocab.h"

namespace strata::server {

enum class Endpoint { Chat, Completion };

// The most choices (n) one request may ask for; the server also caps n at its --parallel.
inline constexpr int64_t kMaxChoices = 16;

struct RequestLimits {
    size_t max_stop = 4;             // stop strings per request (OpenAI's limit)
    size_t max_stop_bytes = 256;     // bytes per stop string
    size_t max_messages = 4096;      // chat messages per request
    size_t max_logit_bias = 1024;    // logit_bias entries
};

struct CompletionRequest {
    Endpoint endpoint = Endpoint::Chat;
    std::vector<ChatMessage> messages;  // chat: roles system, user, assistant, tool ("developer" = system)
    // Chat with tools or tool calls/results in the history: the messages as the template reads
    // them (tool_request.h), and the tools; tool_view says these are filled.
    bool tool_view = false;
    nlohmann::ordered_json chat_json;
    ToolRequest tools;
    std::string prompt;                 // completion given as text
    std::vector<TokenId> prompt_tokens; // completion given as token ids (prompt is then empty)
    int64_t n = 1;                      // choices, 1..kMaxChoices: each its own sequence
    bool stream = false;
    bool include_usage = false;         // stream_options.include_usage
    std::optional<int64_t> max_tokens;  // max_tokens (or chat's max_completion_tokens)
    SamplerParams sampler;              // the server's defaults overridden by the request
    std::vector<std::string> stop;
    bool ignore_eos = false;            // llama-server's extension: keep generating past EOS
    bool cache_prompt = true;           // llama-server's: false evaluates the whole prompt again,
                                        // reusing no slot's cached prefix (results then do not
                                        // depend on what a slot held)
    // -1: no logprobs; else the alternatives per token (chat: logprobs true + top_logprobs
    // 0..20; completions: logprobs 0..5).
    int logprobs = -1;
};

// Throws ApiError 400 naming the first bad field. `defaults` are the sampler settings the
// request starts from (the server's flags).
CompletionRequest parse_request(Endpoint endpoint, std::string_view body, const SamplerParams& defaults,
                                const RequestLimits& limits = {});

}  // namespace strata::server
