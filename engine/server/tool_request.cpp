// tools, tool_choice and tool messages of a chat request (tool_request.h).
#include "engine/server/tool_request.h"

#include <set>

#include "engine/server/api_error.h"
#include "engine/server/json_fields.h"
#include "engine/sampler/json_schema_grammar.h"

namespace strata::server {
namespace {

using ojson = nlohmann::ordered_json;

constexpr size_t kMaxTools = 128;
constexpr size_t kMaxToolCalls = 128;

[[noreturn]] void bad(const std::string& field, const std::string& what) {
    throw ApiError(400, cat("'", field, "' ", what), field);
}

const ojson& object_at(const ojson& parent, const char* key, const std::string& where) {
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) bad(where, "is missing");
    if (!it->is_object()) bad(where, cat("must be an object, got ", json_kind(nlohmann::json(*it))));
    return *it;
}

// A function name as OpenAI allows it: 1..64 of [A-Za-z0-9_-].
std::string function_name(const ojson& object, const std::string& prefix) {
    const nlohmann::json plain(object);
    const std::optional<std::string> name = FieldReader(plain, prefix).string("name", 64);
    const std::string where = prefix + ".name";
    if (!name || name->empty()) bad(where, "is missing");
    for (const char ch : *name) {
        const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                        ch == '-';
        if (!ok) bad(where, cat("is \"", *name, "\": a function name is letters, digits, '_' and '-' only"));
    }
    return *name;
}

ToolSpec parse_tool(const ojson& tool, const std::string& where) {
    if (!tool.is_object()) bad(where, cat("must be an object, got ", json_kind(nlohmann::json(tool))));
    const nlohmann::json plain(tool);
    const std::optional<std::string> type = FieldReader(plain, where).string("type", 64);
    if (type != "function") {
        bad(where + ".type", cat("must be \"function\" (the only tool type), got ", type ? "\"" + *type + "\"" : "nothing"));
    }
    const std::string fwhere = where + ".function";
    const ojson& fn = object_at(tool, "function", fwhere);
    ToolSpec spec;
    spec.name = function_name(fn, fwhere);
    const nlohmann::json fplain(fn);
    spec.description = FieldReader(fplain, fwhere).string("description", kMaxFieldText).value_or("");
    const auto params = fn.find("parameters");
    if (params == fn.end() || params->is_null()) {
        spec.parameters = ojson{{"type", "object"}, {"properties", ojson::object()}};
        return spec;
    }
    if (!params->is_object()) {
        bad(fwhere + ".parameters", cat("must be a JSON schema object, got ", json_kind(nlohmann::json(*params))));
    }
    try {  // refused here, not when a forced call needs the grammar
        json_schema_to_gbnf(params->dump());
    } catch (const Error& e) {
        bad(fwhere + ".parameters", cat("is not a schema this server can follow: ", e.what()));
    }
    spec.parameters = *params;
    return spec;
}

ToolChoice parse_choice(const ojson& body, const std::vector<ToolSpec>& tools) {
    const auto it = body.find("tool_choice");
    if (it == body.end() || it->is_null()) return {};
    ToolChoice choice;
    if (it->is_string()) {
        const std::string& s = it->get_ref<const std::string&>();
        if (s == "none") choice.mode = ToolChoiceMode::None;
        else if (s == "auto") choice.mode = ToolChoiceMode::Auto;
        else if (s == "required") choice.mode = ToolChoiceMode::Required;
        else bad("tool_choice", cat("is \"", s, "\"; expected \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                                   "\"function\": {\"name\": ...}}"));
    } else if (it->is_object()) {
        const nlohmann::json plain(*it);
        const std::optional<std::string> type = FieldReader(plain, "tool_choice").string("type", 64);
        if (type != "function") bad("tool_choice.type", "must be \"function\"");
        choice.mode = ToolChoiceMode::Function;
        choice.name = function_name(object_at(*it, "function", "tool_choice.function"), "tool_choice.function");
    } else {
        bad("tool_choice", cat("must be a string or an object, got ", json_kind(nlohmann::json(*it))));
    }
    if (choice.mode != ToolChoiceMode::None && tools.empty()) {
        bad("tool_choice", "asks for a tool call but 'tools' gives none");
    }
    if (choice.mode == ToolChoiceMode::Function) {
        bool known = false;
        for (const ToolSpec& t : tools) known = known || t.name == choice.name;
        if (!known) bad("tool_choice.function.name", cat("is \"", choice.name, "\", which is not among 'tools'"));
    }
    return choice;
}

ojson parse_tool_call(const ojson& call, const std::string& where) {
    if (!call.is_object()) bad(where, cat("must be an object, got ", json_kind(nlohmann::json(call))));
    const nlohmann::json plain(call);
    const FieldReader r(plain, where);
    const std::optional<std::string> type = r.string("type", 64);
    if (type && *type != "function") bad(where + ".type", "must be \"function\"");
    const std::string id = r.string("id", 256).value_or("");
    const std::string fwhere = where + ".function";
    const ojson& fn = object_at(call, "function", fwhere);
    const std::string name = function_name(fn, fwhere);
    const auto args = fn.find("arguments");
    ojson arguments = ojson::object();
    if (args != fn.end() && !args->is_null()) {
        if (!args->is_string()) bad(fwhere + ".arguments", cat("must be a string of JSON, got ", json_kind(nlohmann::json(*args))));
        const std::string& text = args->get_ref<const std::string&>();
        arguments = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
        if (arguments.is_discarded() || !arguments.is_object()) bad(fwhere + ".arguments", "is not a JSON object's text");
    }
    return ojson{{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
}

}  // namespace

ToolRequest parse_tool_request(const ojson& body) {
    ToolRequest out;
    const auto it = body.find("tools");
    if (it != body.end() && !it->is_null()) {
        if (!it->is_array()) bad("tools", cat("must be an array, got ", json_kind(nlohmann::json(*it))));
        if (it->size() > kMaxTools) bad("tools", cat("has ", it->size(), " entries; at most ", kMaxTools, " are allowed"));
        std::set<std::string> names;
        for (size_t i = 0; i < it->size(); ++i) {
            out.tools.push_back(parse_tool((*it)[i], item_path("tools", i)));
            if (!names.insert(out.tools.back().name).second) {
                bad(item_path("tools", i) + ".function.name", cat("repeats the name \"", out.tools.back().name, "\""));
            }
        }
        out.tools_json = *it;
    }
    out.choice = parse_choice(body, out.tools);
    const auto parallel = body.find("parallel_tool_calls");
    if (parallel != body.end() && !parallel->is_null()) {
        if (!parallel->is_boolean()) {
            bad("parallel_tool_calls", cat("must be a boolean, got ", json_kind(nlohmann::json(*parallel))));
        }
        out.parallel_tool_calls = parallel->get<bool>();
    }
    return out;
}

ojson tool_history_message(const ojson& m, const std::string& where, const std::string& role,
                           const std::string& content) {
    ojson out{{"role", role}, {"content", content}};
    const nlohmann::json plain(m);
    const FieldReader r(plain, where);
    if (role == "tool") {
        const std::optional<std::string> id = r.string("tool_call_id", 256);
        if (!id) bad(where + ".tool_call_id", "is missing (a tool message answers one tool call)");
        out["tool_call_id"] = *id;
        if (const auto name = r.string("name", 64)) out["name"] = *name;
        return out;
    }
    const auto calls = m.find("tool_calls");
    if (role != "assistant" || calls == m.end() || calls->is_null()) return out;
    const std::string cwhere = where + ".tool_calls";
    if (!calls->is_array()) bad(cwhere, cat("must be an array, got ", json_kind(nlohmann::json(*calls))));
    if (calls->size() > kMaxToolCalls) bad(cwhere, cat("has ", calls->size(), " entries; at most ", kMaxToolCalls));
    ojson list = ojson::array();
    for (size_t i = 0; i < calls->size(); ++i) list.push_back(parse_tool_call((*calls)[i], item_path(cwhere, i)));
    if (!list.empty()) out["tool_calls"] = std::move(list);
    return out;
}

}  // namespace strata::server
