// OpenAI-shaped error bodies (api_error.h).
#include "engine/server/api_error.h"

#include <nlohmann/json.hpp>

#include "engine/server/sse.h"

namespace strata::server {

ApiError::ApiError(int status, const std::string& message, std::string param, std::string code)
    : Error(message), status_(status), param_(std::move(param)), code_(std::move(code)) {}

std::string_view error_type(int status) {
    if (status == 401) return "authentication_error";
    if (status == 429) return "rate_limit_error";
    if (status == 503) return "unavailable_error";
    if (status >= 500) return "server_error";
    return "invalid_request_error";
}

std::string error_body(int status, std::string_view message, std::string_view param,
                       std::string_view code) {
    nlohmann::json error = {{"message", message},
                            {"type", error_type(status)},
                            {"param", nullptr},
                            {"code", nullptr}};
    if (!param.empty()) error["param"] = param;
    if (!code.empty()) error["code"] = code;
    return dump_json(nlohmann::json{{"error", std::move(error)}});
}

std::string error_body(const ApiError& error) {
    return error_body(error.status(), error.what(), error.param(), error.code());
}

}  // namespace strata::server
