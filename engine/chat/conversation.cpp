// Multi-turn conversation with KV prefix reuse (conversation.h).
#include "engine/chat/conversation.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"

namespace strata {

double TurnStats::prompt_tokens_per_second() const {
    return prompt_seconds > 0 ? static_cast<double>(n_prompt) / prompt_seconds : 0.0;
}

double TurnStats::decode_tokens_per_second() const {
    return decode_seconds > 0 ? static_cast<double>(n_generated) / decode_seconds : 0.0;
}

Conversation::Conversation(Session& session, ChatRenderer renderer)
    : session_(session), renderer_(std::move(renderer)) {}

std::vector<ChatMessage> Conversation::with_system(std::vector<ChatMessage> messages) const {
    if (!system_.empty()) messages.insert(messages.begin(), ChatMessage{"system", system_});
    return messages;
}

std::vector<TokenId> render_chat_tokens(const Tokenizer& tok, const ChatRenderer& renderer,
                                        std::span<const ChatMessage> messages,
                                        bool add_generation_prompt) {
    return chat_text_tokens(tok, renderer.render(messages, add_generation_prompt));
}

std::vector<TokenId> chat_text_tokens(const Tokenizer& tok, std::string_view text) {
    // The tokenizer adds BOS itself when the vocabulary asks for it: no second BOS.
    std::string_view body = text;
    if (tok.vocab().add_bos && tok.bos() != kNoToken) {
        body = strip_bos_text(body, tok.token_to_piece(tok.bos(), /*special=*/true));
    }
    return tok.encode(body, /*add_special=*/true, /*parse_special=*/true);
}

std::vector<TokenId> Conversation::render_tokens(bool add_generation_prompt) const {
    return render_chat_tokens(session_.model().tokenizer(), renderer_, with_system(messages_),
                              add_generation_prompt);
}

std::string Conversation::reply(std::string_view user_text, const GenerateParams& params,
                                const TextCallback& on_text) {
    messages_.push_back({"user", std::string(user_text)});
    std::vector<TokenId> prompt;
    int64_t n_dropped = 0;
    try {
        const int64_t reserve = params.n_predict < 0 ? 1 : std::max<int64_t>(params.n_predict, 1);
        prompt = render_tokens(/*add_generation_prompt=*/true);
        // A full context drops the oldest turns (a user message and its answer at a time), as
        // llama.cpp's context shift does, so that a long chat keeps going.
        while (static_cast<int64_t>(prompt.size()) + reserve > session_.n_ctx() && messages_.size() > 1) {
            const size_t n = messages_.size() > 2 && messages_[1].role == "assistant" ? 2 : 1;
            messages_.erase(messages_.begin(), messages_.begin() + static_cast<std::ptrdiff_t>(n));
            n_dropped += static_cast<int64_t>(n);
            prompt = render_tokens(/*add_generation_prompt=*/true);
        }
        if (static_cast<int64_t>(prompt.size()) + reserve > session_.n_ctx()) {
            throw ArgumentError(cat("the message (", prompt.size(), " tokens with the system text, + ", reserve,
                                    " to generate) does not fit the context of ", session_.n_ctx(),
                                    " tokens: shorten it or use a larger -c"));
        }
    } catch (...) {
        messages_.pop_back();
        throw;
    }
    // Longest common prefix with what the session holds; at least one token must be fed so
    // that there are logits to sample from.
    const std::vector<TokenId>& held = session_.tokens();
    const auto mismatch = std::mismatch(held.begin(), held.end(), prompt.begin(), prompt.end());
    int64_t n_keep = static_cast<int64_t>(mismatch.first - held.begin());
    n_keep = std::min<int64_t>(n_keep, static_cast<int64_t>(prompt.size()) - 1);
    session_.truncate(n_keep);

    std::string answer;
    const GenerateStats stats =
        generate(session_, std::span<const TokenId>(prompt).subspan(n_keep), params,
                 [&](std::string_view piece) {
                     answer += piece;
                     return on_text(piece);
                 });
    last_ = TurnStats{n_keep,           stats.n_prompt,       stats.n_generated,
                      stats.prompt_seconds, stats.decode_seconds, stats.stop, n_dropped, stats.spec};
    messages_.push_back({"assistant", answer});
    return answer;
}

std::string Conversation::to_json() const {
    nlohmann::json j;
    j["format"] = renderer_.name();
    j["system"] = system_;
    j["messages"] = nlohmann::json::array();
    for (const ChatMessage& m : messages_) {
        j["messages"].push_back({{"role", m.role}, {"content", m.content}});
    }
    // Text typed on a terminal may be invalid UTF-8: it is saved with U+FFFD in its place.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Conversation::from_json(std::string_view json_text) {
    const nlohmann::json j = parse_json_bounded(json_text, "conversation file");
    if (!j.is_object()) {
        throw FormatError("conversation file is not a JSON object");
    }
    if (!j.contains("messages") || !j["messages"].is_array()) {
        throw FormatError("conversation file has no \"messages\" array");
    }
    std::vector<ChatMessage> messages;
    for (size_t i = 0; i < j["messages"].size(); ++i) {
        const nlohmann::json& m = j["messages"][i];
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string() ||
            !m.contains("content") || !m["content"].is_string()) {
            throw FormatError(cat("conversation message ", i,
                                  " needs string fields \"role\" and \"content\""));
        }
        ChatMessage msg{m["role"].get<std::string>(), m["content"].get<std::string>()};
        if (msg.role != "user" && msg.role != "assistant") {
            throw FormatError(cat("conversation message ", i, " has role '", msg.role,
                                  "' (user or assistant)"));
        }
        messages.push_back(std::move(msg));
    }
    std::string system;
    if (j.contains("system")) {
        if (!j["system"].is_string()) throw FormatError("conversation \"system\" is not a string");
        system = j["system"].get<std::string>();
    }
    ChatRenderer renderer = renderer_;
    if (j.contains("format")) {
        if (!j["format"].is_string()) throw FormatError("conversation \"format\" is not a string");
        const std::string name = j["format"].get<std::string>();
        try {
            if (name != renderer_.name()) renderer = ChatRenderer(chat_format_from_name(name));
        } catch (const ArgumentError& e) {
            throw FormatError(cat(e.what(), " (or \"jinja\": the model's own template)"));
        }
    }
    renderer_ = std::move(renderer);
    system_ = std::move(system);
    messages_ = std::move(messages);
}

}  // namespace strata
