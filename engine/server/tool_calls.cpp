// Tool calls out of a chat answer (tool_calls.h).
#include "engine/server/tool_calls.h"

#include <algorithm>

#include "engine/server/response_json.h"
#include "engine/server/tool_prompt.h"

namespace strata::server {
namespace {

using ojson = nlohmann::ordered_json;

std::string_view trim(std::string_view s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// {"name": <a tool>, "arguments": {...} or its JSON text}; nullopt for anything else.
std::optional<ToolCall> read_call(std::string_view text, const ToolRequest& tools) {
    const ojson j = ojson::parse(trim(text), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    const auto name = j.find("name");
    if (name == j.end() || !name->is_string()) return std::nullopt;
    const bool known = std::any_of(tools.tools.begin(), tools.tools.end(),
                                   [&](const ToolSpec& t) { return t.name == name->get_ref<const std::string&>(); });
    if (!known) return std::nullopt;
    ojson args = ojson::object();
    if (const auto a = j.find("arguments"); a != j.end()) {
        args = a->is_string() ? ojson::parse(a->get<std::string>(), nullptr, false) : *a;
        if (args.is_discarded() || !args.is_object()) return std::nullopt;
    }
    return ToolCall{random_id("call_", 24), name->get<std::string>(), args.dump()};
}

// Where the held-back tail of `text` begins: a tool-call opening, or its unfinished start.
size_t content_end(std::string_view text) {
    const size_t open = text.find(kToolCallOpen);
    if (open != std::string_view::npos) return open;
    for (size_t n = std::min(text.size(), kToolCallOpen.size() - 1); n > 0; --n) {
        if (kToolCallOpen.starts_with(text.substr(text.size() - n))) return text.size() - n;
    }
    return text.size();
}

}  // namespace

ToolOutput parse_tool_output(std::string_view text, const ToolRequest& tools) {
    ToolOutput out;
    size_t pos = 0;
    for (size_t open; (open = text.find(kToolCallOpen, pos)) != std::string_view::npos;) {
        out.content += text.substr(pos, open - pos);
        const size_t body = open + kToolCallOpen.size();
        const size_t close = text.find(kToolCallClose, body);
        const size_t end = close == std::string_view::npos ? text.size() : close + kToolCallClose.size();
        if (auto call = read_call(text.substr(body, (close == std::string_view::npos ? text.size() : close) - body), tools)) {
            out.calls.push_back(std::move(*call));
        } else {
            out.content += text.substr(open, end - open);
        }
        pos = end;
    }
    out.content += text.substr(pos);
    if (out.calls.empty()) {
        if (auto call = read_call(text, tools)) {
            out.calls.push_back(std::move(*call));
            out.content.clear();
        }
    }
    if (!tools.parallel_tool_calls && out.calls.size() > 1) out.calls.resize(1);
    return out;
}

nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls, bool indexed) {
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        nlohmann::json c = {{"id", calls[i].id}, {"type", "function"},
                            {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
        if (indexed) c["index"] = i;
        list.push_back(std::move(c));
    }
    return list;
}

std::string ToolStreamFilter::feed(std::string_view text) {
    text_ += text;
    if (tools_->choice.forced()) return {};
    // An answer that opens with '{' may be one bare call object: held until the end.
    if (emitted_ == 0 && (trim(text_).empty() || trim(text_).starts_with("{"))) return {};
    const size_t end = std::max(emitted_, content_end(text_));
    std::string out = text_.substr(emitted_, end - emitted_);
    emitted_ = end;
    return out;
}

ToolOutput ToolStreamFilter::finish() const {
    ToolOutput out = parse_tool_output(text_, *tools_);
    // What was streamed holds no call, so it is where the content starts.
    out.content = out.content.size() >= emitted_ ? out.content.substr(emitted_) : std::string();
    return out;
}

}  // namespace strata::server
