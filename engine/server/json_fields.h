// Typed reads of a request's JSON fields. A field that is absent or null reads as nullopt; a
// field of the wrong type or out of range throws ApiError 400 naming it ("temperature",
// "messages[1].content") with the value range. Also the body parse with a nesting bound.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace strata::server {

// Parses a request body: ApiError 400 for invalid JSON (naming the byte offset, and invalid
// UTF-8 as such), nesting deeper than kMaxJsonDepth (engine/core/bounded_read.h), or a top
// level that is not an object.
nlohmann::json parse_body(std::string_view body);

class FieldReader {
public:
    // `object` must be a JSON object and outlive the reader; `prefix` names it in messages
    // ("messages[0]"), empty at the top level.
    FieldReader(const nlohmann::json& object, std::string prefix = {});

    // The value, or null when absent or JSON null.
    const nlohmann::json* find(std::string_view name) const;
    // The full name of a field for messages: prefix.name.
    std::string path(std::string_view name) const;

    std::optional<bool> boolean(std::string_view name) const;
    // A number in [lo, hi] (integers accepted).
    std::optional<double> number(std::string_view name, double lo, double hi) const;
    // An integer in [lo, hi]; 3.0 and 1e30 are not integers.
    std::optional<int64_t> integer(std::string_view name, int64_t lo, int64_t hi) const;
    // A string of at most max_bytes bytes.
    std::optional<std::string> string(std::string_view name, size_t max_bytes) const;

private:
    const nlohmann::json& object_;
    std::string prefix_;
};

// The JSON type of a value in words ("a string", "an array") for messages.
std::string_view json_kind(const nlohmann::json& value);

// The longest string any one field may hold (the body's own cap binds first).
inline constexpr size_t kMaxFieldText = 64ull << 20;

// The name of element i of an array field, for messages: "messages[3]".
std::string item_path(std::string_view field, size_t i);

}  // namespace strata::server
