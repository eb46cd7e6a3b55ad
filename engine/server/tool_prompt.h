// The prompt of a chat with tools (or tool calls and results in its history), and the grammar
// that makes the answer a call when tool_choice forces one. A Jinja template that reads `tools`
// renders them itself (Qwen2.5's Hermes-style <tools>/<tool_call> blocks); any other template
// or built-in format gets the same Hermes-style text in its system message, tool calls written
// into the assistant turns and tool results as <tool_response> user turns.
#pragma once

#include <memory>
#include <vector>

#include "engine/chat/chat_renderer.h"
#include "engine/sampler/grammar.h"
#include "engine/server/request.h"
#include "engine/tokenizer/vocab.h"

namespace strata {
class Tokenizer;
}

namespace strata::server {

// `request.tool_view` must be set. The tools are shown only when request.tools.active().
std::vector<TokenId> tool_chat_tokens(const Tokenizer& tokenizer, const ChatRenderer& renderer,
                                      const CompletionRequest& request);

// The text that may begin a tool call in a free (tool_choice auto) answer.
inline constexpr std::string_view kToolCallOpen = "<tool_call>";
inline constexpr std::string_view kToolCallClose = "</tool_call>";

// A forced call's grammar: one JSON object {"name": <the function>, "arguments": <an object
// following its parameters schema>}; for "required", any of the tools. `tools.choice.forced()`.
std::shared_ptr<const Grammar> forced_call_grammar(const ToolRequest& tools);

}  // namespace strata::server
