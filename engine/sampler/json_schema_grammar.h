// JSON schema (a subset) to a GBNF grammar, for --json-schema and the server's JSON mode.
// Supported: type (object, array, string, number, integer, boolean, null, or a list of them),
// properties + required (properties in their declared order, required ones always present,
// optional ones may be left out, no other keys), items, enum, const, anyOf/oneOf; {} or no
// type = any JSON value. Blanks between tokens are bounded so generation cannot spin on them.
#pragma once

#include <string>
#include <string_view>

namespace strata {

// Throws ArgumentError naming the unsupported keyword or type and its JSON pointer.
std::string json_schema_to_gbnf(std::string_view schema_json);

// Any JSON object (response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace strata
