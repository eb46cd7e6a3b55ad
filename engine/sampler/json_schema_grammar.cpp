// JSON schema to GBNF (json_schema_grammar.h).
#include "engine/sampler/json_schema_grammar.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"

namespace strata {
namespace {

using json = nlohmann::ordered_json;  // properties keep their declared order

// The shared rules: JSON strings, numbers and any value (RFC 8259); blanks between tokens are
// one space or a newline and up to 20 of indentation (as llama.cpp), so they cannot run on.
constexpr std::string_view kJsonRules = R"(ws ::= ( " " | "\n" [ \t]{0,20} )?
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
number ::= integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
)";

// A GBNF string literal spelling `text` exactly.
std::string literal(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else out += c;
    }
    return out + "\"";
}

// A GBNF sequence for exactly the JSON value v, with blanks allowed between its tokens.
std::string value_literal(const nlohmann::ordered_json& v) {
    if (v.is_object()) {
        std::string out = "\"{\" ws";
        bool first = true;
        for (const auto& [k, x] : v.items()) {
            out += std::string(first ? "" : " \",\" ws") + " " + literal(nlohmann::ordered_json(k).dump()) + " ws \":\" ws " +
                   value_literal(x) + " ws";
            first = false;
        }
        return out + " \"}\"";
    }
    if (v.is_array()) {
        std::string out = "\"[\" ws";
        for (size_t i = 0; i < v.size(); ++i) out += std::string(i ? " \",\" ws" : "") + " " + value_literal(v[i]) + " ws";
        return out + " \"]\"";
    }
    return literal(v.dump());
}

class SchemaCompiler {
public:
    std::string compile(const json& schema) {
        const std::string root = rule_for(schema, "#");
        return "root ::= " + root + "\n" + rules_ + std::string(kJsonRules);
    }

private:
    [[noreturn]] static void fail(const std::string& where, const std::string& what) {
        throw ArgumentError(cat("--json-schema: at ", where, ": ", what));
    }

    std::string add_rule(const std::string& body) {
        const std::string name = "s" + std::to_string(++n_rules_);
        rules_ += name + " ::= " + body + "\n";
        return name;
    }

    std::string rule_for(const json& s, const std::string& where) {
        if (s.is_boolean() && s.get<bool>()) return "value";
        if (!s.is_object()) fail(where, "a schema must be an object");
        if (s.contains("const")) return add_rule(value_literal(s["const"]));
        if (s.contains("enum")) {
            if (!s["enum"].is_array() || s["enum"].empty()) fail(where + "/enum", "must be a non-empty array");
            std::string alts;
            for (const json& v : s["enum"]) alts += std::string(alts.empty() ? "" : " | ") + "( " + value_literal(v) + " )";
            return add_rule(alts);
        }
        for (const char* key : {"anyOf", "oneOf"}) {
            if (!s.contains(key)) continue;
            std::string alts;
            size_t i = 0;
            for (const json& sub : s[key]) alts += (alts.empty() ? "" : " | ") + rule_for(sub, cat(where, "/", key, "/", i++));
            return add_rule(alts);
        }
        for (const char* key : {"$ref", "allOf", "not", "if", "patternProperties", "pattern", "format"}) {
            if (s.contains(key)) fail(where, cat("'", key, "' is not supported"));
        }
        if (!s.contains("type")) return s.contains("properties") ? object_rule(s, where) : "value";
        const json& t = s["type"];
        if (t.is_array()) {
            std::string alts;
            for (const json& one : t) {
                json copy = s;
                copy["type"] = one;
                alts += (alts.empty() ? "" : " | ") + rule_for(copy, where);
            }
            return add_rule(alts);
        }
        if (!t.is_string()) fail(where + "/type", "must be a string or a list of strings");
        const std::string type = t.get<std::string>();
        if (type == "string" || type == "number" || type == "integer" || type == "boolean" || type == "null") return type;
        if (type == "object") return object_rule(s, where);
        if (type == "array") {
            const std::string item = s.contains("items") ? rule_for(s["items"], where + "/items") : "value";
            return add_rule("\"[\" ws ( " + item + " ws ( \",\" ws " + item + " ws )* )? \"]\"");
        }
        fail(where + "/type", "unknown type '" + type + "' (object, array, string, number, integer, boolean, null)");
    }

    std::string object_rule(const json& s, const std::string& where) {
        if (!s.contains("properties")) return "object";
        const json& props = s["properties"];
        if (!props.is_object()) fail(where + "/properties", "must be an object");
        std::vector<std::string> required;
        if (s.contains("required")) {
            for (const json& r : s["required"]) {
                if (!r.is_string() || !props.contains(r.get<std::string>())) {
                    fail(where + "/required", "names " + r.dump() + ", which is not among the properties");
                }
                required.push_back(r.get<std::string>());
            }
        }
        // Properties in their declared order, required ones always present. after[i]: the
        // properties from i on once one was written (each needs a comma); first[i]: before any.
        std::vector<std::pair<std::string, bool>> kvs;
        for (const auto& [name, sub] : props.items()) {
            kvs.emplace_back(literal(json(name).dump()) + " ws \":\" ws " + rule_for(sub, where + "/properties/" + name) + " ws",
                             std::find(required.begin(), required.end(), name) != required.end());
        }
        std::string after, first;  // "" = nothing more
        for (size_t i = kvs.size(); i-- > 0;) {
            const auto& [kv, is_required] = kvs[i];
            const std::string next_after = after.empty() ? "" : " " + after;
            const std::string one = "\",\" ws " + kv;
            const std::string new_after = add_rule(is_required ? one + next_after : "( " + one + " )?" + next_after);
            const std::string starts_here = kv + next_after;
            first = add_rule(is_required || first.empty() ? (is_required ? starts_here : "( " + starts_here + " )?")
                                                          : starts_here + " | " + first);
            after = new_after;
        }
        std::string body = "\"{\" ws " + (first.empty() ? "" : first + " ");
        return add_rule(body + "\"}\"");
    }

    std::string rules_;
    int n_rules_ = 0;
};

}  // namespace

std::string json_schema_to_gbnf(std::string_view schema_json) {
    check_json_depth(schema_json, "--json-schema");
    json schema;
    try {
        schema = json::parse(schema_json);
    } catch (const json::exception& e) {
        throw ArgumentError(cat("--json-schema is not valid JSON: ", e.what()));
    }
    return SchemaCompiler().compile(schema);
}

std::string json_object_gbnf() { return "root ::= object\n" + std::string(kJsonRules); }

}  // namespace strata
