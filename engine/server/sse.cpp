// SSE framing and JSON text (sse.h).
#include "engine/server/sse.h"

#include <nlohmann/json.hpp>

namespace strata::server {

std::string dump_json(const nlohmann::json& value) {
    return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

std::string sse_event(const nlohmann::json& payload) {
    // JSON text never holds a raw newline, so one data line carries the whole event.
    return "data: " + dump_json(payload) + "\n\n";
}

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace strata::server
