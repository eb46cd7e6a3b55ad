// Chat templates: the built-in formatters that turn a conversation ({role, content} messages)
// into the text a chat-tuned model was trained on (docs/FORMATS.md §4.7), and the choice of one
// from the file's tokenizer.chat_template text or, failing that, its architecture.
// Formats that start with a BOS spell it as text ("<bos>", "<s>", "<|begin_of_text|>");
// strip_bos_text() removes it again when the tokenizer adds BOS itself (no double BOS).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

enum class ChatFormat { Gemma, Llama3, Llama2, ChatML, Mistral, Phi3 };

// All format names, in the order of ChatFormat: gemma, llama3, llama2, chatml, mistral, phi3.
std::span<const std::string_view> chat_format_names();
std::string_view chat_format_name(ChatFormat format);
// Throws ArgumentError naming the unknown name and listing the known ones.
ChatFormat chat_format_from_name(std::string_view name);

// By substrings of a Jinja template text; nullopt when nothing matches.
std::optional<ChatFormat> detect_chat_format(std::string_view template_text);
// Template text first, then the architecture (gemma*/qwen*/phi3/llama... known ones), else ChatML.
ChatFormat choose_chat_format(std::string_view template_text, std::string_view architecture);

// Renders the messages; with add_generation_prompt the text ends with the opening of an
// assistant turn. Roles other than system/user/assistant throw ArgumentError.
std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages,
                        bool add_generation_prompt);

// `text` without a leading `bos_text` (when present): the tokenizer adds the BOS token itself.
std::string_view strip_bos_text(std::string_view text, std::string_view bos_text);

}  // namespace strata
