// The OpenAI response objects: chat.completion and text_completion (whole answers),
// chat.completion.chunk and streamed text_completion events, usage, and the model list.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/server/job.h"
#include "engine/server/request.h"

namespace strata::server {

// What every object of one response shares.
struct ResponseInfo {
    Endpoint endpoint = Endpoint::Chat;
    std::string id;       // "chatcmpl-…" or "cmpl-…", random
    int64_t created = 0;  // Unix seconds
    std::string model;
};

// `prefix` + n random lowercase hex digits ("chatcmpl-…", "call_…").
std::string random_id(std::string_view prefix, int n);

ResponseInfo new_response_info(Endpoint endpoint, std::string model);

// {"prompt_tokens", "completion_tokens", "total_tokens"}.
nlohmann::json usage_json(const JobResult& result);

// One choice of a whole answer: {"index", "message" (chat) or "text", "logprobs",
// "finish_reason"}. `logprobs` goes in as it is (null: none asked; logprobs.h makes the object).
// `tool_calls` (chat): the message's calls (an array from tool_calls_json; null: none), its
// content then null when `text` is empty.
nlohmann::json choice_json(const ResponseInfo& info, int index, std::string_view text, const JobResult& result,
                           const nlohmann::json& logprobs = nullptr, const nlohmann::json& tool_calls = nullptr);

// The whole answer of a non-streamed request: its choices (choice_json) and the usage of
// `total` (the prompt once, the completion tokens of all choices).
nlohmann::json full_response(const ResponseInfo& info, nlohmann::json choices, const JobResult& total);

// One streamed event of choice `index`: `text` as the delta; with `first` (chat) the delta also
// carries the assistant role; with `finish` the choice's finish_reason (else null).
nlohmann::json stream_chunk(const ResponseInfo& info, std::string_view text, bool first,
                            const FinishReason* finish, const nlohmann::json& logprobs = nullptr, int index = 0);

// A streamed chat event whose delta carries tool calls (tool_calls_json with indexes).
nlohmann::json tool_calls_chunk(const ResponseInfo& info, const nlohmann::json& tool_calls, int index = 0);

// The last streamed event when stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseInfo& info, const JobResult& result);

// GET /v1/models: {"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}
// plus llama-server's "meta" with the context of a slot.
nlohmann::json model_list(const std::string& model, int64_t created, int64_t n_ctx);

}  // namespace strata::server
