// The tool-calling parts of a chat request: `tools` (function definitions with a JSON schema of
// their arguments), `tool_choice` (none, auto, required, or one named function), and the
// history's assistant messages with `tool_calls` and `role: tool` results. Checked field by
// field (ApiError 400 naming e.g. "tools[1].function.name"); plain data afterwards.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::server {

struct ToolSpec {
    std::string name;                   // [A-Za-z0-9_-]{1,64}, unique within the request
    std::string description;
    nlohmann::ordered_json parameters;  // a JSON schema object (declared key order kept)
};

enum class ToolChoiceMode { None, Auto, Required, Function };

struct ToolChoice {
    ToolChoiceMode mode = ToolChoiceMode::Auto;
    std::string name;  // ToolChoiceMode::Function: one of the tools
    // Whether the answer must be a tool call (its output is then constrained).
    bool forced() const { return mode == ToolChoiceMode::Required || mode == ToolChoiceMode::Function; }
};

struct ToolRequest {
    std::vector<ToolSpec> tools;
    nlohmann::ordered_json tools_json = nlohmann::ordered_json::array();  // as given, for the template
    ToolChoice choice;
    bool parallel_tool_calls = true;
    // Whether the model is offered the tools (some given and tool_choice is not "none").
    bool active() const { return !tools.empty() && choice.mode != ToolChoiceMode::None; }
};

// `body` is the request parsed with its key order kept. With no `tools`, tool_choice must be
// absent, null or "none".
ToolRequest parse_tool_request(const nlohmann::ordered_json& body);

// One history message for the template: {"role", "content"} plus, for an assistant message,
// its "tool_calls" ({"id", "type": "function", "function": {"name", "arguments": object}}: the
// arguments string parsed, as Hugging Face templates expect), and for a tool result its
// "tool_call_id" (and "name" when given). `where` names it ("messages[2]"); `content` is the
// already-checked text.
nlohmann::ordered_json tool_history_message(const nlohmann::ordered_json& message, const std::string& where,
                                            const std::string& role, const std::string& content);

}  // namespace strata::server
