// Server-sent events as OpenAI streams them: each event one "data: <json>\n\n" line, the
// stream closed by "data: [DONE]\n\n". Also the one JSON serialisation every response uses.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace strata::server {

// Compact JSON text; invalid UTF-8 in strings becomes U+FFFD instead of throwing, so whatever
// a response holds, its body is valid JSON.
std::string dump_json(const nlohmann::json& value);

// "data: " + dump_json(payload) + "\n\n".
std::string sse_event(const nlohmann::json& payload);

// "data: [DONE]\n\n": the end of an OpenAI stream.
std::string sse_done();

}  // namespace strata::server
