// Conversation: the messages of one chat and the Session that holds their KV cache. Each
// reply renders the whole conversation with the chat format, keeps the longest token prefix
// the session already holds and feeds only the rest (KV reuse), then generates until an
// end-of-turn token or n_predict. Saved and loaded as JSON ({format, system, messages}).
// Not thread-safe; the Session must outlive the Conversation and is used only through it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/chat_renderer.h"
#include "engine/runtime/generate.h"

namespace strata {

class Session;
class Tokenizer;

// The prompt tokens of `messages` rendered by `renderer` (a Jinja template or a built-in format):
// the text tokenized with control tokens parsed, and one BOS (a spelled BOS is dropped when the
// tokenizer adds its own). Throws ArgumentError for a role a built-in format does not know.
std::vector<TokenId> render_chat_tokens(const Tokenizer& tokenizer, const ChatRenderer& renderer,
                                        std::span<const ChatMessage> messages,
                                        bool add_generation_prompt);

// The prompt tokens of a rendered chat text (as render_chat_tokens, after the rendering).
std::vector<TokenId> chat_text_tokens(const Tokenizer& tokenizer, std::string_view text);

struct TurnStats {
    int64_t n_reused = 0;     // prompt tokens whose KV was kept from earlier turns
    int64_t n_prompt = 0;     // prompt tokens fed this turn
    int64_t n_generated = 0;  // answer tokens
    double prompt_seconds = 0;
    double decode_seconds = 0;
    StopReason stop = StopReason::Length;
    int64_t n_dropped = 0;    // oldest messages dropped so that the conversation fits the context
    SpecStats spec;           // speculative decoding's passes (zero without it)

    double prompt_tokens_per_second() const;
    double decode_tokens_per_second() const;
};

class Conversation {
public:
    Conversation(Session& session, ChatRenderer renderer);

    // Adds the user turn, answers it (streaming text to on_text; returning false stops the
    // answer early, which is kept as it stands) and records the answer. Returns the answer.
    // When the conversation no longer fits the context the oldest messages are dropped
    // (last_turn().n_dropped says how many); ArgumentError (nothing recorded) when the new
    // message alone does not fit.
    std::string reply(std::string_view user_text, const GenerateParams& params,
                      const TextCallback& on_text);

    // Forgets the messages (the system text stays); the KV cache is reused for what still
    // matches on the next turn.
    void clear() { messages_.clear(); }
    void set_system(std::string text) { system_ = std::move(text); }
    const std::string& system() const { return system_; }
    const std::vector<ChatMessage>& messages() const { return messages_; }
    const ChatRenderer& renderer() const { return renderer_; }

    // The tokens a next turn would start from: the rendered conversation (system included),
    // optionally with the opening of the assistant turn.
    std::vector<TokenId> render_tokens(bool add_generation_prompt) const;

    const TurnStats& last_turn() const { return last_; }
    const Session& session() const { return session_; }

    // JSON text {"format": "gemma" or "jinja", "system": "...", "messages": [{"role", "content"}...]}.
    std::string to_json() const;
    // Replaces system and messages (and the format when the file names another built-in one); throws
    // FormatError naming what is wrong. The KV cache is reused for the common prefix.
    void from_json(std::string_view json_text);

private:
    std::vector<ChatMessage> with_system(std::vector<ChatMessage> messages) const;

    Session& session_;
    ChatRenderer renderer_;
    std::string system_;
    std::vector<ChatMessage> messages_;
    TurnStats last_;
};

}  // namespace strata
