// Chat prompts from the model's Jinja template or a built-in format (chat_renderer.h).
#include "engine/chat/chat_renderer.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/chat/jinja/jinja_template.h"
#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/tokenizer/tokenizer.h"

namespace strata {

ChatRenderer ChatRenderer::from_jinja(std::string source, JinjaOptions options) {
    ChatRenderer r(options.fallback);
    r.jinja_ = std::make_shared<const jinja::Template>(std::move(source));
    r.options_ = std::move(options);
    return r;
}

std::string ChatRenderer::name() const {
    return is_jinja() ? "jinja" : std::string(chat_format_name(fallback_));
}

std::string ChatRenderer::describe() const {
    return is_jinja() ? options_.name : "built-in " + std::string(chat_format_name(fallback_));
}

std::string ChatRenderer::render_strict(std::span<const ChatMessage> messages, bool gen) const {
    if (!is_jinja()) return render_chat(fallback_, messages, gen);
    jinja::Array list;
    for (const ChatMessage& m : messages) {
        jinja::Object o;
        o.items = {{"role", jinja::Value(m.role)}, {"content", jinja::Value(m.content)}};
        list.emplace_back(std::move(o));
    }
    jinja::Object context;
    context.items = {{"messages", jinja::Value(std::move(list))},
                     {"add_generation_prompt", jinja::Value(gen)},
                     {"bos_token", jinja::Value(options_.bos_text)},
                     {"eos_token", jinja::Value(options_.eos_text)}};
    return jinja_->render(context);
}

std::string ChatRenderer::render_with_tools(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                            bool gen) const {
    if (!is_jinja()) throw ArgumentError(cat("the built-in ", chat_format_name(fallback_), " format has no tools"));
    jinja::Object context;
    context.items = {{"messages", jinja::from_json(messages)},
                     {"add_generation_prompt", jinja::Value(gen)},
                     {"bos_token", jinja::Value(options_.bos_text)},
                     {"eos_token", jinja::Value(options_.eos_text)}};
    if (!tools.empty()) context.items.emplace_back("tools", jinja::from_json(tools));
    return jinja_->render(context);
}

bool ChatRenderer::reads_tools() const {
    return is_jinja() && jinja_->source().find("tools") != std::string::npos;
}

std::string ChatRenderer::render(std::span<const ChatMessage> messages, bool gen) const {
    if (!is_jinja()) return render_chat(fallback_, messages, gen);
    try {
        return render_strict(messages, gen);
    } catch (const jinja::TemplateError& e) {
        if (!*warned_ && *sink_) {
            *warned_ = true;
            (*sink_)(cat(options_.name, " failed to render (", e.what(), "); using the built-in ",
                         chat_format_name(fallback_), " format instead"));
        }
        return render_chat(fallback_, messages, gen);
    }
}

namespace {

std::string token_text(const Tokenizer& tok, TokenId id) {
    return id == kNoToken ? std::string() : tok.token_to_piece(id, /*special=*/true);
}

bool is_builtin_name(const std::string& name) {
    if (name == "qwen") return true;
    for (std::string_view n : chat_format_names()) {
        if (n == name) return true;
    }
    return false;
}

// A Jinja template named by a flag: unreadable or unparsable is an error, not a fallback.
ChatRenderer jinja_from_flag(std::string text, std::string name, ChatRenderer::JinjaOptions options) {
    options.name = name;
    try {
        return ChatRenderer::from_jinja(std::move(text), std::move(options));
    } catch (const jinja::TemplateError& e) {
        throw ArgumentError(cat(name, ": ", e.what()));
    }
}

}  // namespace

ChatRendererChoice choose_chat_renderer(const Model& model, const ChatTemplateOverride& ov) {
    const Tokenizer& tok = model.tokenizer();
    const std::string arch = model.config().architecture;
    const std::string tmpl = model.file().find_string("tokenizer.chat_template").value_or(std::string());
    ChatRenderer::JinjaOptions options{"", token_text(tok, tok.bos()), token_text(tok, tok.eos()),
                                       choose_chat_format(tmpl, arch)};
    if (!ov.file.empty()) {
        std::string text = read_bounded_file(ov.file, "--chat-template-file");
        return {jinja_from_flag(std::move(text), "--chat-template-file " + ov.file, options), "forced", {}};
    }
    if (!ov.spec.empty()) {
        if (is_builtin_name(ov.spec)) return {ChatRenderer(chat_format_from_name(ov.spec)), "forced", {}};
        if (ov.spec.find("{{") != std::string::npos || ov.spec.find("{%") != std::string::npos) {
            return {jinja_from_flag(ov.spec, "--chat-template (Jinja text)", options), "forced", {}};
        }
        std::error_code ec;
        if (!std::filesystem::is_regular_file(ov.spec, ec)) {
            std::string names;
            for (std::string_view n : chat_format_names()) names += (names.empty() ? "" : ", ") + std::string(n);
            throw ArgumentError(cat("--chat-template '", ov.spec, "' is neither a built-in format (", names,
                                    ") nor a Jinja template file"));
        }
        std::string text = read_bounded_file(ov.spec, "--chat-template");
        return {jinja_from_flag(std::move(text), "--chat-template " + ov.spec, options), "forced", {}};
    }
    const std::string fallback_name(chat_format_name(options.fallback));
    if (tmpl.empty()) {
        return {ChatRenderer(options.fallback), "by architecture",
                {cat("the model file has no chat template; using the built-in ", fallback_name,
                     " format for the architecture ", arch, " (--chat-template to choose)")}};
    }
    options.name = "the file's Jinja template";
    try {
        ChatRenderer r = ChatRenderer::from_jinja(tmpl, options);
        const ChatMessage hello{"user", "Hello"};
        r.render_strict(std::span<const ChatMessage>(&hello, 1), /*add_generation_prompt=*/true);
        return {r, "", {}};
    } catch (const jinja::TemplateError& e) {
        return {ChatRenderer(options.fallback), "the file's template failed",
                {cat("the file's Jinja chat template cannot be used (", e.what(), "); using the built-in ",
                     fallback_name, " format (--chat-template to choose)")}};
    }
}

}  // namespace strata
