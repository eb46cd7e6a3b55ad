// Prompts with tools and the forced-call grammar (tool_prompt.h).
#include "engine/server/tool_prompt.h"

#include "engine/chat/conversation.h"
#include "engine/chat/jinja/jinja_value.h"
#include "engine/sampler/json_schema_grammar.h"
#include "engine/server/api_error.h"

namespace strata::server {
namespace {

using ojson = nlohmann::ordered_json;

// The same words as Qwen2.5's template, so a model trained on either reads one convention.
std::string tools_system_text(const ojson& tools) {
    std::string text =
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
    for (const ojson& t : tools) text += "\n" + t.dump();
    text += "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
            "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
            "<args-json-object>}\n</tool_call>";
    return text;
}

std::string call_text(const ojson& call) {
    const ojson& fn = call["function"];
    return cat(kToolCallOpen, "\n", ojson{{"name", fn["name"]}, {"arguments", fn["arguments"]}}.dump(), "\n",
               kToolCallClose);
}

// The tool view as plain {role, content} messages any format can render.
std::vector<ChatMessage> plain_messages(const CompletionRequest& r) {
    std::vector<ChatMessage> out;
    for (const ojson& m : r.chat_json) {
        const std::string role = m["role"].get<std::string>();
        std::string content = m["content"].get<std::string>();
        if (role == "tool") {
            const std::string block = "<tool_response>\n" + content + "\n</tool_response>";
            if (!out.empty() && out.back().role == "user" && out.back().content.starts_with("<tool_response>")) {
                out.back().content += "\n" + block;
            } else {
                out.push_back({"user", block});
            }
            continue;
        }
        if (const auto calls = m.find("tool_calls"); calls != m.end()) {
            for (const ojson& c : *calls) content += (content.empty() ? "" : "\n") + call_text(c);
        }
        out.push_back({role, std::move(content)});
    }
    if (r.tools.active()) {
        const std::string tools = tools_system_text(r.tools.tools_json);
        if (!out.empty() && out.front().role == "system") {
            out.front().content += "\n\n" + tools;
        } else {
            out.insert(out.begin(), ChatMessage{"system", tools});
        }
    }
    return out;
}

}  // namespace

std::vector<TokenId> tool_chat_tokens(const Tokenizer& tok, const ChatRenderer& renderer, const CompletionRequest& r) {
    if (renderer.reads_tools()) {
        try {
            const ojson tools = r.tools.active() ? r.tools.tools_json : ojson::array();
            return chat_text_tokens(tok, renderer.render_with_tools(r.chat_json, tools, /*add_generation_prompt=*/true));
        } catch (const jinja::TemplateError&) {
            // The template refused this history (a role order it raises on): the generic text below.
        }
    }
    try {
        return render_chat_tokens(tok, renderer, plain_messages(r), /*add_generation_prompt=*/true);
    } catch (const ArgumentError& e) {
        throw ApiError(400, cat("the chat cannot be rendered: ", e.what()), "messages");
    }
}

std::shared_ptr<const Grammar> forced_call_grammar(const ToolRequest& tools) {
    ojson any = ojson::array();
    for (const ToolSpec& t : tools.tools) {
        if (tools.choice.mode == ToolChoiceMode::Function && t.name != tools.choice.name) continue;
        any.push_back(ojson{{"type", "object"},
                            {"properties", {{"name", {{"const", t.name}}}, {"arguments", t.parameters}}},
                            {"required", {"name", "arguments"}}});
    }
    const ojson schema = any.size() == 1 ? any[0] : ojson{{"anyOf", any}};
    try {
        return std::make_shared<const Grammar>(parse_gbnf(json_schema_to_gbnf(schema.dump()), "tool_choice"));
    } catch (const Error& e) {
        throw ApiError(400, cat("the tools' parameters give no grammar: ", e.what()), "tools");
    }
}

}  // namespace strata::server
