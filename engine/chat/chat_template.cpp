// Built-in chat formatters and template detection (chat_template.h).
#include "engine/chat/chat_template.h"

#include <array>

#include "engine/core/error.h"

namespace strata {
namespace {

constexpr std::array<std::string_view, 6> kNames = {"gemma",  "llama3",  "llama2",
                                                    "chatml", "mistral", "phi3"};

std::string_view trim(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    const auto last = s.find_last_not_of(" \t\r\n");
    return s.substr(first, last - first + 1);
}

void check_role(const ChatMessage& m) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant") {
        throw ArgumentError(cat("unknown chat role '", m.role, "' (system, user, assistant)"));
    }
}

// Formats without a system role put the system text in front of the first user turn.
struct Folded {
    std::string system;
    std::vector<ChatMessage> turns;
};

Folded fold_system(std::span<const ChatMessage> messages) {
    Folded f;
    for (const ChatMessage& m : messages) {
        check_role(m);
        if (m.role == "system") {
            f.system += (f.system.empty() ? "" : "\n") + std::string(trim(m.content));
        } else {
            f.turns.push_back(m);
        }
    }
    return f;
}

// <bos><start_of_turn>user\n{system}\n\n{user}<end_of_turn>\n<start_of_turn>model\n...
std::string render_gemma(std::span<const ChatMessage> messages, bool gen) {
    Folded f = fold_system(messages);
    std::string out = "<bos>";
    bool first_user = true;
    for (const ChatMessage& m : f.turns) {
        out += "<start_of_turn>";
        out += m.role == "assistant" ? "model" : "user";
        out += "\n";
        if (m.role == "user" && first_user && !f.system.empty()) out += f.system + "\n\n";
        if (m.role == "user") first_user = false;
        out += trim(m.content);
        out += "<end_of_turn>\n";
    }
    if (gen) out += "<start_of_turn>model\n";
    return out;
}

// <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>...
std::string render_llama3(std::span<const ChatMessage> messages, bool gen) {
    std::string out = "<|begin_of_text|>";
    for (const ChatMessage& m : messages) {
        check_role(m);
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
        out += trim(m.content);
        out += "<|eot_id|>";
    }
    if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

// <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
std::string render_chatml(std::span<const ChatMessage> messages, bool gen) {
    std::string out;
    for (const ChatMessage& m : messages) {
        check_role(m);
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    }
    if (gen) out += "<|im_start|>assistant\n";
    return out;
}

// Llama 2: <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s>
// The generation prompt is the closing [/INST] itself.
std::string render_llama2(std::span<const ChatMessage> messages, bool) {
    Folded f = fold_system(messages);
    std::string out;
    bool first_user = true;
    for (const ChatMessage& m : f.turns) {
        if (m.role == "user") {
            out += "<s>[INST] ";
            if (first_user && !f.system.empty()) out += "<<SYS>>\n" + f.system + "\n<</SYS>>\n\n";
            first_user = false;
            out += trim(m.content);
            out += " [/INST]";
        } else {
            out += " ";
            out += trim(m.content);
            out += " </s>";
        }
    }
    return out;
}

// Mistral (v1): <s>[INST] {system}\n\n{user} [/INST] {assistant}</s>[INST] {user} [/INST]
std::string render_mistral(std::span<const ChatMessage> messages, bool) {
    Folded f = fold_system(messages);
    std::string out = "<s>";
    bool first_user = true;
    for (const ChatMessage& m : f.turns) {
        if (m.role == "user") {
            out += "[INST] ";
            if (first_user && !f.system.empty()) out += f.system + "\n\n";
            first_user = false;
            out += trim(m.content);
            out += " [/INST]";
        } else {
            out += " ";
            out += trim(m.content);
            out += "</s>";
        }
    }
    return out;
}

// Phi-3: <|{role}|>\n{content}<|end|>\n ... <|assistant|>\n
std::string render_phi3(std::span<const ChatMessage> messages, bool gen) {
    std::string out;
    for (const ChatMessage& m : messages) {
        check_role(m);
        out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
    }
    if (gen) out += "<|assistant|>\n";
    return out;
}

bool contains(std::string_view s, std::string_view what) {
    return s.find(what) != std::string_view::npos;
}

}  // namespace

std::span<const std::string_view> chat_format_names() { return kNames; }

std::string_view chat_format_name(ChatFormat format) {
    return kNames[static_cast<size_t>(format)];
}

ChatFormat chat_format_from_name(std::string_view name) {
    for (size_t i = 0; i < kNames.size(); ++i) {
        if (kNames[i] == name) return static_cast<ChatFormat>(i);
    }
    if (name == "qwen") return ChatFormat::ChatML;
    std::string names;
    for (std::string_view n : kNames) names += (names.empty() ? "" : ", ") + std::string(n);
    throw ArgumentError(cat("unknown chat template '", name, "' (known: ", names, ")"));
}

std::optional<ChatFormat> detect_chat_format(std::string_view t) {
    if (contains(t, "<start_of_turn>")) return ChatFormat::Gemma;
    if (contains(t, "<|start_header_id|>")) return ChatFormat::Llama3;
    if (contains(t, "<|im_start|>")) return ChatFormat::ChatML;
    if (contains(t, "[INST]")) {
        return contains(t, "<<SYS>>") ? ChatFormat::Llama2 : ChatFormat::Mistral;
    }
    if (contains(t, "<|user|>") && contains(t, "<|end|>")) return ChatFormat::Phi3;
    return std::nullopt;
}

ChatFormat choose_chat_format(std::string_view template_text, std::string_view arch) {
    if (auto f = detect_chat_format(template_text)) return *f;
    if (arch.starts_with("gemma")) return ChatFormat::Gemma;
    if (arch.starts_with("qwen")) return ChatFormat::ChatML;
    if (arch == "phi3") return ChatFormat::Phi3;
    return ChatFormat::ChatML;
}

std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages, bool gen) {
    switch (format) {
        case ChatFormat::Gemma: return render_gemma(messages, gen);
        case ChatFormat::Llama3: return render_llama3(messages, gen);
        case ChatFormat::Llama2: return render_llama2(messages, gen);
        case ChatFormat::ChatML: return render_chatml(messages, gen);
        case ChatFormat::Mistral: return render_mistral(messages, gen);
        case ChatFormat::Phi3: return render_phi3(messages, gen);
    }
    throw ArgumentError(cat("invalid chat format ", static_cast<int>(format)));
}

std::string_view strip_bos_text(std::string_view text, std::string_view bos_text) {
    if (!bos_text.empty() && text.starts_with(bos_text)) text.remove_prefix(bos_text.size());
    return text;
}

}  // namespace strata
