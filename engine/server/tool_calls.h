// A chat answer read as tool calls: Hermes-style <tool_call>{"name", "arguments"}</tool_call>
// blocks (what Qwen2.5's template and the server's generic tool prompt ask for), or an answer
// that is one {"name", "arguments"} object (what a forced tool_choice's grammar produces). A
// call counts only when its name is one of the request's tools and its arguments are a JSON
// object; anything else stays content. ToolStreamFilter does the same for a stream: it lets
// content through as it comes and holds back what may be the start of a call.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/server/tool_request.h"

namespace strata::server {

struct ToolCall {
    std::string id;         // "call_…", random
    std::string name;       // one of the request's tools
    std::string arguments;  // the arguments object as JSON text (key order as the model wrote it)
};

struct ToolOutput {
    std::string content;  // the answer without its calls (all of it when there are none)
    std::vector<ToolCall> calls;
};

// parallel_tool_calls false keeps the first call only.
ToolOutput parse_tool_output(std::string_view text, const ToolRequest& tools);

// [{"id", "type": "function", "function": {"name", "arguments"}}]; with `indexed` (a stream's
// delta) each entry also has its "index".
nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls, bool indexed);

class ToolStreamFilter {
public:
    // `tools` must outlive the filter.
    explicit ToolStreamFilter(const ToolRequest& tools) : tools_(&tools) {}

    // Adds generated text; returns the part that is surely content, to stream now.
    std::string feed(std::string_view text);
    // The end of the answer: the content not yet streamed, and the calls.
    ToolOutput finish() const;

private:
    const ToolRequest* tools_;
    std::string text_;   // everything generated
    size_t emitted_ = 0;  // bytes of text_ streamed as content
};

}  // namespace strata::server
