// Typed JSON field reads with OpenAI-shaped errors (json_fields.h).
#include "engine/server/json_fields.h"

#include <cmath>

#include "engine/core/bounded_read.h"
#include "engine/server/api_error.h"

namespace strata::server {

std::string item_path(std::string_view field, size_t i) { return cat(field, "[", i, "]"); }

std::string_view json_kind(const nlohmann::json& v) {
    switch (v.type()) {
        case nlohmann::json::value_t::null: return "null";
        case nlohmann::json::value_t::object: return "an object";
        case nlohmann::json::value_t::array: return "an array";
        case nlohmann::json::value_t::string: return "a string";
        case nlohmann::json::value_t::boolean: return "a boolean";
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned: return "an integer";
        case nlohmann::json::value_t::number_float: return "a number";
        default: return "an unsupported value";
    }
}

nlohmann::json parse_body(std::string_view body) {
    if (body.empty()) throw ApiError(400, "the request body is empty: expected a JSON object");
    // Deep nesting is refused before the parser (whose recursion and memory it would drive) sees it.
    try {
        check_json_depth(body, "the request body");
    } catch (const FormatError&) {
        throw ApiError(400, cat("the request body nests arrays and objects deeper than ", kMaxJsonDepth, " levels"));
    }
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(body);
    } catch (const nlohmann::json::parse_error& e) {
        const std::string what = e.what();
        if (what.find("UTF-8") != std::string::npos || what.find("surrogate") != std::string::npos) {
            throw ApiError(400, cat("the request body is not valid UTF-8 JSON (at byte ", e.byte, ")"));
        }
        throw ApiError(400, cat("the request body is not valid JSON: ", what));
    } catch (const nlohmann::json::exception& e) {  // out_of_range: a number beyond a double (1e400)
        throw ApiError(400, cat("the request body holds a value JSON cannot represent here: ", e.what()));
    }
    if (!j.is_object()) {
        throw ApiError(400, cat("the request body must be a JSON object, got ", json_kind(j)));
    }
    return j;
}

FieldReader::FieldReader(const nlohmann::json& object, std::string prefix)
    : object_(object), prefix_(std::move(prefix)) {}

std::string FieldReader::path(std::string_view name) const {
    return prefix_.empty() ? std::string(name) : prefix_ + "." + std::string(name);
}

const nlohmann::json* FieldReader::find(std::string_view name) const {
    const auto it = object_.find(name);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
}

std::optional<bool> FieldReader::boolean(std::string_view name) const {
    const nlohmann::json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) throw ApiError(400, cat("'", path(name), "' must be a boolean, got ", json_kind(*v)), path(name));
    return v->get<bool>();
}

std::optional<double> FieldReader::number(std::string_view name, double lo, double hi) const {
    const nlohmann::json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw ApiError(400, cat("'", path(name), "' must be a number, got ", json_kind(*v)), path(name));
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) {
        throw ApiError(400, cat("'", path(name), "' = ", v->dump(), " is outside the allowed range [", lo, ", ", hi, "]"),
                       path(name));
    }
    return x;
}

std::optional<int64_t> FieldReader::integer(std::string_view name, int64_t lo, int64_t hi) const {
    const nlohmann::json* v = find(name);
    if (!v) return std::nullopt;
    const std::string range = cat("an integer from ", lo, " to ", hi);
    if (v->is_number_unsigned()) {
        const uint64_t u = v->get<uint64_t>();
        if (hi >= 0 && u <= static_cast<uint64_t>(hi) && static_cast<int64_t>(u) >= lo) return static_cast<int64_t>(u);
    } else if (v->is_number_integer()) {
        const int64_t x = v->get<int64_t>();
        if (x >= lo && x <= hi) return x;
    } else if (!v->is_number()) {
        throw ApiError(400, cat("'", path(name), "' must be ", range, ", got ", json_kind(*v)), path(name));
    }
    throw ApiError(400, cat("'", path(name), "' = ", v->dump(), " is not ", range), path(name));
}

std::optional<std::string> FieldReader::string(std::string_view name, size_t max_bytes) const {
    const nlohmann::json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_string()) throw ApiError(400, cat("'", path(name), "' must be a string, got ", json_kind(*v)), path(name));
    const std::string& s = v->get_ref<const std::string&>();
    if (s.size() > max_bytes) {
        throw ApiError(400, cat("'", path(name), "' is ", s.size(), " bytes long; at most ", max_bytes, " are allowed"),
                       path(name));
    }
    return s;
}

}  // namespace strata::server
