// Request parsing and validation (request.h).
#include "engine/server/request.h"

#include <limits>
#include <map>

#include "engine/server/api_error.h"
#include "engine/server/json_fields.h"
#include "engine/server/logprobs.h"
#include "engine/server/tool_request.h"
#include "engine/sampler/json_schema_grammar.h"

namespace strata::server {
namespace {

using nlohmann::json;

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

// A message's content: a string, or an array of {"type": "text", "text": ...} parts.
std::string message_content(const json& m, const std::string& where, bool may_be_null) {
    const auto it = m.find("content");
    if (it == m.end() || it->is_null()) {
        if (may_be_null) return {};
        throw ApiError(400, cat("'", where, ".content' is missing"), where + ".content");
    }
    if (it->is_string()) return it->get<std::string>();
    if (!it->is_array()) {
        throw ApiError(400, cat("'", where, ".content' must be a string or an array of text parts, got ",
                                json_kind(*it)), where + ".content");
    }
    std::string text;
    for (size_t i = 0; i < it->size(); ++i) {
        const json& part = (*it)[i];
        const std::string at = item_path(where + ".content", i);
        if (!part.is_object()) throw ApiError(400, cat("'", at, "' must be an object, got ", json_kind(part)), at);
        FieldReader r(part, at);
        const std::optional<std::string> type = r.string("type", 64);
        if (type != "text") {
            throw ApiError(400, cat("'", at, ".type' must be \"text\" (this server reads text only), got ",
                                    type ? "\"" + *type + "\"" : std::string("nothing")), at + ".type");
        }
        const std::optional<std::string> t = r.string("text", kMaxFieldText);
        if (!t) throw ApiError(400, cat("'", at, ".text' is missing"), at + ".text");
        text += *t;
    }
    return text;
}

// `ordered`: the body with its key order kept, when the messages are also wanted as the
// template's JSON (tools given, or tool calls and results in the history); else null.
std::vector<ChatMessage> parse_messages(const json& body, const RequestLimits& limits, const nlohmann::ordered_json* ordered,
                                        nlohmann::ordered_json* chat_json) {
    const auto it = body.find("messages");
    if (it == body.end() || it->is_null()) throw ApiError(400, "'messages' is missing", "messages");
    if (!it->is_array()) throw ApiError(400, cat("'messages' must be an array, got ", json_kind(*it)), "messages");
    if (it->empty()) throw ApiError(400, "'messages' is empty: give at least one message", "messages");
    if (it->size() > limits.max_messages) {
        throw ApiError(400, cat("'messages' has ", it->size(), " entries; at most ", limits.max_messages, " are allowed"),
                       "messages");
    }
    std::vector<ChatMessage> out;
    for (size_t i = 0; i < it->size(); ++i) {
        const json& m = (*it)[i];
        const std::string where = item_path("messages", i);
        if (!m.is_object()) throw ApiError(400, cat("'", where, "' must be an object, got ", json_kind(m)), where);
        std::optional<std::string> role = FieldReader(m, where).string("role", 64);
        if (!role) throw ApiError(400, cat("'", where, ".role' is missing"), where + ".role");
        if (*role == "developer") role = "system";
        if (*role != "system" && *role != "user" && *role != "assistant" && *role != "tool") {
            throw ApiError(400, cat("'", where, ".role' is \"", *role, "\"; this server takes system, developer, user, ",
                                    "assistant and tool messages"), where + ".role");
        }
        out.push_back({*role, message_content(m, where, *role == "assistant")});
        if (ordered != nullptr) {
            chat_json->push_back(tool_history_message((*ordered)["messages"][i], where, *role, out.back().content));
        }
    }
    return out;
}

// prompt: a string, a one-element array of strings, token ids, or a one-element array of those.
void parse_prompt(const json& body, CompletionRequest& r) {
    const auto it = body.find("prompt");
    if (it == body.end() || it->is_null()) throw ApiError(400, "'prompt' is missing", "prompt");
    const json* p = &*it;
    if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
    if (p->is_string()) {
        r.prompt = p->get<std::string>();
        if (r.prompt.empty()) throw ApiError(400, "'prompt' is empty", "prompt");
        return;
    }
    if (!p->is_array()) {
        throw ApiError(400, cat("'prompt' must be a string or an array of token ids, got ", json_kind(*p)), "prompt");
    }
    if (p->empty()) throw ApiError(400, "'prompt' is empty", "prompt");
    for (size_t i = 0; i < p->size(); ++i) {
        const json& t = (*p)[i];
        if (t.is_string()) throw ApiError(400, "'prompt' holds several prompts; this server takes one per request", "prompt");
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > kMaxInt32) {
            throw ApiError(400, cat("'", item_path("prompt", i), "' must be a token id (an integer >= 0), got ", t.dump()),
                           item_path("prompt", i));
        }
        r.prompt_tokens.push_back(static_cast<TokenId>(t.get<int64_t>()));
    }
}

std::vector<std::string> parse_stop(const json& body, const RequestLimits& limits) {
    const auto it = body.find("stop");
    if (it == body.end() || it->is_null()) return {};
    std::vector<std::string> stop;
    auto add = [&](const json& s, const std::string& where) {
        if (!s.is_string()) throw ApiError(400, cat("'", where, "' must be a string, got ", json_kind(s)), where);
        const std::string& text = s.get_ref<const std::string&>();
        if (text.empty()) throw ApiError(400, cat("'", where, "' is an empty string"), where);
        if (text.size() > limits.max_stop_bytes) {
            throw ApiError(400, cat("'", where, "' is ", text.size(), " bytes; at most ", limits.max_stop_bytes,
                                    " are allowed"), where);
        }
        stop.push_back(text);
    };
    if (it->is_array()) {
        if (it->size() > limits.max_stop) {
            throw ApiError(400, cat("'stop' has ", it->size(), " strings; at most ", limits.max_stop, " are allowed"),
                           "stop");
        }
        for (size_t i = 0; i < it->size(); ++i) add((*it)[i], item_path("stop", i));
    } else {
        add(*it, "stop");
    }
    return stop;
}

std::map<int32_t, float> parse_logit_bias(const json& body, const RequestLimits& limits) {
    const auto it = body.find("logit_bias");
    if (it == body.end() || it->is_null()) return {};
    if (!it->is_object()) throw ApiError(400, cat("'logit_bias' must be an object, got ", json_kind(*it)), "logit_bias");
    if (it->size() > limits.max_logit_bias) {
        throw ApiError(400, cat("'logit_bias' has ", it->size(), " entries; at most ", limits.max_logit_bias,
                                " are allowed"), "logit_bias");
    }
    std::map<int32_t, float> bias;
    for (const auto& [key, value] : it->items()) {
        const std::string where = "logit_bias." + key;
        size_t used = 0;
        long long id = -1;
        try {
            id = std::stoll(key, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != key.size() || key.empty() || id < 0 || id > kMaxInt32) {
            throw ApiError(400, cat("'logit_bias' key \"", key, "\" is not a token id"), where);
        }
        bias[static_cast<int32_t>(id)] = static_cast<float>(*FieldReader(*it, "logit_bias").number(key, -100, 100));
    }
    return bias;
}

void refuse_unsupported(const FieldReader& r, Endpoint endpoint) {
    if (endpoint == Endpoint::Completion) {
        for (const char* field : {"tools", "tool_choice"}) {
            if (r.find(field) != nullptr) {
                throw ApiError(400, cat("'", field, "' belongs to /v1/chat/completions, not /v1/completions"), field);
            }
        }
        if (r.boolean("echo").value_or(false)) throw ApiError(400, "'echo' is not supported by this server", "echo");
        if (const json* b = r.find("best_of"); b && !(b->is_number_integer() && b->get<int64_t>() == 1)) {
            throw ApiError(400, cat("'best_of' must be 1, got ", b->dump()), "best_of");
        }
        if (const auto s = r.string("suffix", kMaxFieldText); s && !s->empty()) {
            throw ApiError(400, "'suffix' is not supported by this server", "suffix");
        }
    }
}

// Chat: "logprobs": true|false and "top_logprobs": 0..20 (only with logprobs true); completions:
// "logprobs": 0..5 alternatives per token (null: none).
int parse_logprobs(const FieldReader& r, Endpoint endpoint) {
    if (endpoint == Endpoint::Completion) {
        const auto n = r.integer("logprobs", 0, 5);
        return n ? static_cast<int>(*n) : -1;
    }
    const bool on = r.boolean("logprobs").value_or(false);
    const auto top = r.integer("top_logprobs", 0, kMaxTopLogprobs);
    if (top && !on) throw ApiError(400, "'top_logprobs' needs 'logprobs': true", "top_logprobs");
    return on ? static_cast<int>(top.value_or(0)) : -1;
}

SamplerParams parse_sampler(const FieldReader& r, const SamplerParams& defaults) {
    SamplerParams s = defaults;
    if (const auto v = r.number("temperature", 0, 2)) s.temperature = static_cast<float>(*v);
    if (const auto v = r.number("top_p", 0, 1)) s.top_p = static_cast<float>(*v);
    if (const auto v = r.integer("top_k", 0, kMaxInt32)) s.top_k = static_cast<int32_t>(*v);
    if (const auto v = r.number("min_p", 0, 1)) s.min_p = static_cast<float>(*v);
    if (const auto v = r.number("presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*v);
    if (const auto v = r.number("frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*v);
    if (const auto v = r.number("repeat_penalty", 0.01, 100)) s.repeat_penalty = static_cast<float>(*v);
    if (const auto v = r.integer("seed", -1, static_cast<int64_t>(SamplerParams::kRandomSeed) - 1)) {
        s.seed = *v < 0 ? SamplerParams::kRandomSeed : static_cast<uint32_t>(*v);
    }
    return s;
}

// Whether the chat needs the template's JSON view: tools, or tool calls and results in the history.
bool needs_tool_view(const json& body) {
    if (body.contains("tools") || body.contains("tool_choice")) return true;
    const auto it = body.find("messages");
    if (it == body.end() || !it->is_array()) return false;
    for (const json& m : *it) {
        if (m.is_object() && (m.contains("tool_calls") || m.value("role", json()) == "tool")) return true;
    }
    return false;
}

void parse_chat(const json& j, std::string_view body, const RequestLimits& limits, CompletionRequest& req) {
    if (!needs_tool_view(j)) {
        req.messages = parse_messages(j, limits, nullptr, nullptr);
        return;
    }
    const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(body);  // valid: parsed once already
    req.tools = parse_tool_request(ordered);
    req.chat_json = nlohmann::ordered_json::array();
    req.messages = parse_messages(j, limits, &ordered, &req.chat_json);
    req.tool_view = true;
}

}  // namespace

// response_format: "text", "json_object" (any JSON object) or "json_schema" with
// {"json_schema": {"schema": {...}}}: a grammar that constrains sampling; nullptr for text. The
// schema is read from `body` again with its key order kept: properties are written in the order
// the schema declares them (as `run --json-schema` does), not alphabetically.
static std::shared_ptr<const Grammar> parse_response_format(const FieldReader& r, std::string_view body) {
    const json* f = r.find("response_format");
    if (f == nullptr) return nullptr;
    const std::optional<std::string> type =
        f->is_object() ? FieldReader(*f, "response_format").string("type", 64) : std::nullopt;
    if (type == "text") return nullptr;
    if (type == "json_object") {
        static const auto object = std::make_shared<const Grammar>(parse_gbnf(json_object_gbnf(), "json_object"));
        return object;
    }
    const json* spec = type == "json_schema" && f->contains("json_schema") ? &f->at("json_schema") : nullptr;
    if (spec != nullptr && spec->is_object() && spec->contains("schema")) {
        try {
            const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(body);  // valid: parsed once already
            const std::string schema = ordered["response_format"]["json_schema"]["schema"].dump();
            return std::make_shared<const Grammar>(parse_gbnf(json_schema_to_gbnf(schema), "json_schema"));
        } catch (const ArgumentError& e) {
            throw ApiError(400, cat("'response_format.json_schema.schema': ", e.what()), "response_format");
        }
    }
    throw ApiError(400, "'response_format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
                        "{\"type\": \"json_schema\", \"json_schema\": {\"schema\": {...}}}", "response_format");
}

CompletionRequest parse_request(Endpoint endpoint, std::string_view body, const SamplerParams& defaults,
                                const RequestLimits& limits) {
    const json j = parse_body(body);
    const FieldReader r(j);
    CompletionRequest req;
    req.endpoint = endpoint;
    r.string("model", 1024);  // one model is served: any name is accepted, but it must be a string
    r.string("user", 1024);
    refuse_unsupported(r, endpoint);
    if (endpoint == Endpoint::Chat) {
        parse_chat(j, body, limits, req);
    } else {
        parse_prompt(j, req);
    }
    req.stream = r.boolean("stream").value_or(false);
    if (const json* so = r.find("stream_options")) {
        if (!so->is_object()) {
            throw ApiError(400, cat("'stream_options' must be an object, got ", json_kind(*so)), "stream_options");
        }
        req.include_usage = FieldReader(*so, "stream_options").boolean("include_usage").value_or(false);
    }
    req.n = r.integer("n", 1, kMaxChoices).value_or(1);
    req.max_tokens = r.integer("max_tokens", 1, kMaxInt32);
    if (endpoint == Endpoint::Chat) {
        if (const auto m = r.integer("max_completion_tokens", 1, kMaxInt32)) req.max_tokens = m;
    }
    req.sampler = parse_sampler(r, defaults);
    req.sampler.logit_bias = parse_logit_bias(j, limits);
    if (const auto grammar = parse_response_format(r, body)) {
        if (req.tools.choice.forced()) {
            throw ApiError(400, "'response_format' cannot be combined with a tool_choice that forces a call (the call's "
                                "arguments follow the function's schema)", "response_format");
        }
        req.sampler.grammar = grammar;
    }
    req.stop = parse_stop(j, limits);
    req.ignore_eos = r.boolean("ignore_eos").value_or(false);
    req.cache_prompt = r.boolean("cache_prompt").value_or(true);
    req.logprobs = parse_logprobs(r, endpoint);
    try {
        req.sampler.validate();
    } catch (const ArgumentError& e) {  // a server default the ranges above let through
        throw ApiError(400, e.what());
    }
    return req;
}

}  // namespace strata::server
