// OpenAI response objects (response_json.h).
#include "engine/server/response_json.h"

#include <chrono>
#include <random>

namespace strata::server {
namespace {

using nlohmann::json;

bool is_chat(const ResponseInfo& info) { return info.endpoint == Endpoint::Chat; }

json envelope(const ResponseInfo& info, const char* object) {
    return json{{"id", info.id}, {"object", object}, {"created", info.created}, {"model", info.model},
                {"system_fingerprint", "strata"}};
}

}  // namespace

std::string random_id(std::string_view prefix, int n) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s(prefix);
    for (int i = 0; i < n; ++i) s += kHex[rng() & 15];
    return s;
}

ResponseInfo new_response_info(Endpoint endpoint, std::string model) {
    ResponseInfo info;
    info.endpoint = endpoint;
    info.id = random_id(endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-", 24);
    info.created = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
    info.model = std::move(model);
    return info;
}

json usage_json(const JobResult& r) {
    return json{{"prompt_tokens", r.n_prompt},
                {"completion_tokens", r.n_generated},
                {"total_tokens", r.n_prompt + r.n_generated},
                {"prompt_tokens_details", {{"cached_tokens", r.n_reused}}}};
}

json choice_json(const ResponseInfo& info, int index, std::string_view text, const JobResult& result,
                 const json& logprobs, const json& tool_calls) {
    json choice = {{"index", index}, {"logprobs", logprobs}, {"finish_reason", finish_reason_name(result.finish)}};
    if (!is_chat(info)) {
        choice["text"] = text;
        return choice;
    }
    choice["message"] = {{"role", "assistant"}, {"content", text}};
    if (!tool_calls.is_null()) {
        if (text.empty()) choice["message"]["content"] = nullptr;
        choice["message"]["tool_calls"] = tool_calls;
    }
    return choice;
}

json full_response(const ResponseInfo& info, json choices, const JobResult& total) {
    json out = envelope(info, is_chat(info) ? "chat.completion" : "text_completion");
    out["choices"] = std::move(choices);
    out["usage"] = usage_json(total);
    return out;
}

json stream_chunk(const ResponseInfo& info, std::string_view text, bool first, const FinishReason* finish,
                  const json& logprobs, int index) {
    json choice = {{"index", index}, {"logprobs", logprobs},
                   {"finish_reason", finish ? json(finish_reason_name(*finish)) : json(nullptr)}};
    json out;
    if (is_chat(info)) {
        out = envelope(info, "chat.completion.chunk");
        json delta = json::object();
        if (first) delta["role"] = "assistant";
        if (!text.empty() || (first && !finish)) delta["content"] = text;
        choice["delta"] = std::move(delta);
    } else {
        out = envelope(info, "text_completion");
        choice["text"] = text;
    }
    out["choices"] = json::array({std::move(choice)});
    return out;
}

json tool_calls_chunk(const ResponseInfo& info, const json& tool_calls, int index) {
    json out = envelope(info, "chat.completion.chunk");
    out["choices"] = json::array({json{{"index", index}, {"logprobs", nullptr}, {"finish_reason", nullptr},
                                       {"delta", {{"tool_calls", tool_calls}}}}});
    return out;
}

json usage_chunk(const ResponseInfo& info, const JobResult& result) {
    json out = envelope(info, is_chat(info) ? "chat.completion.chunk" : "text_completion");
    out["choices"] = json::array();
    out["usage"] = usage_json(result);
    return out;
}

json model_list(const std::string& model, int64_t created, int64_t n_ctx) {
    json entry = {{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "strata"},
                  {"meta", {{"n_ctx", n_ctx}}}};
    return json{{"object", "list"}, {"data", json::array({std::move(entry)})}};
}

}  // namespace strata::server
