// ChatRenderer: turns a conversation into prompt text with the model's own Jinja chat template
// (tokenizer.chat_template, rendered as Hugging Face's apply_chat_template does) or, where there
// is none or it cannot be used, one of the built-in formats (chat_template.h).
// choose_chat_renderer() makes that choice for a model and the --chat-template /
// --chat-template-file overrides, and returns the warnings a user must see: an unknown, missing
// or broken template never falls back silently. A ChatRenderer is cheap to copy and may render
// on several threads at once; its warning sink is called from whichever thread renders.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/chat/chat_template.h"

namespace strata {

namespace jinja {
class Template;
}
class Model;

class ChatRenderer {
public:
    using WarningSink = std::function<void(const std::string&)>;

    // A built-in format (implicit, so a ChatFormat is a renderer).
    ChatRenderer(ChatFormat format = ChatFormat::ChatML) : fallback_(format) {}  // NOLINT

    struct JinjaOptions {
        std::string name;          // for messages: "the GGUF's chat template", a file path
        std::string bos_text;      // bos_token / eos_token of the template's context
        std::string eos_text;
        ChatFormat fallback = ChatFormat::ChatML;  // used where the template fails to render
    };
    // Parses `source`; throws jinja::TemplateError (a FormatError) naming line and column.
    static ChatRenderer from_jinja(std::string source, JinjaOptions options);

    // The prompt text. A Jinja template that fails to render (raise_exception, a type error)
    // gives the fallback format's text, and the warning sink hears why (once per renderer).
    std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
    // As render(), but a Jinja failure throws jinja::TemplateError instead of falling back.
    std::string render_strict(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

    // For a Jinja template that reads `tools` (reads_tools()): the prompt text of `messages` and
    // `tools` given as JSON in the shapes templates read (tool calls, tool results; Hugging
    // Face's apply_chat_template(messages, tools=...)). Throws jinja::TemplateError when it fails
    // to render, ArgumentError for a built-in format. No fallback: the caller has its own.
    std::string render_with_tools(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                  bool add_generation_prompt) const;
    // Whether this is a Jinja template that mentions `tools` (so renders tool definitions itself).
    bool reads_tools() const;

    bool is_jinja() const { return jinja_ != nullptr; }
    ChatFormat fallback() const { return fallback_; }
    // "jinja" for a Jinja template, else the built-in format's name (saved with conversations).
    std::string name() const;
    // Where the template came from, for messages: the JinjaOptions name or "built-in gemma".
    std::string describe() const;
    void set_warning_sink(WarningSink sink) { *sink_ = std::move(sink); }

private:
    std::shared_ptr<const jinja::Template> jinja_;
    JinjaOptions options_;
    ChatFormat fallback_;
    std::shared_ptr<WarningSink> sink_ = std::make_shared<WarningSink>();
    std::shared_ptr<bool> warned_ = std::make_shared<bool>(false);
};

struct ChatTemplateOverride {
    std::string spec;  // --chat-template: a built-in name, a Jinja file, or Jinja text itself
    std::string file;  // --chat-template-file (llama.cpp's flag): a Jinja file
};

struct ChatRendererChoice {
    ChatRenderer renderer;
    std::string origin;                 // "" (the file's template), "forced", "by architecture"
    std::vector<std::string> warnings;  // to print before the chat starts
};

// Overrides first (a bad name or an unreadable / unparsable file throws ArgumentError naming
// the flag); else the GGUF's template when it parses and renders a one-message chat; else a
// built-in format found from the template text or the architecture, with a warning saying why.
ChatRendererChoice choose_chat_renderer(const Model& model, const ChatTemplateOverride& override_);

}  // namespace strata
