// ApiError: a request the server refuses or could not finish, with its HTTP status and the
// parts of OpenAI's error shape {"error": {"message", "type", "param", "code"}}. Thrown by the
// request parsing and checks (never reaching the engine) and by the scheduler (queue full,
// shutting down); the HTTP layer turns it into the response.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/error.h"

namespace strata::server {

class ApiError : public Error {
public:
    // param: the request field at fault ("messages[1].content"), empty when none.
    // code: OpenAI's machine-readable code ("context_length_exceeded"), empty when none.
    ApiError(int status, const std::string& message, std::string param = {}, std::string code = {});

    int status() const { return status_; }
    const std::string& param() const { return param_; }
    const std::string& code() const { return code_; }

private:
    int status_;
    std::string param_;
    std::string code_;
};

// OpenAI's error type for a status: invalid_request_error (4xx), authentication_error (401),
// rate_limit_error (429), unavailable_error (503), server_error (other 5xx).
std::string_view error_type(int status);

// The JSON text {"error": {"message", "type", "param", "code"}} (param and code null when
// empty). Invalid UTF-8 in the message is replaced, so the body is always valid JSON.
std::string error_body(int status, std::string_view message, std::string_view param = {},
                       std::string_view code = {});
std::string error_body(const ApiError& error);

}  // namespace strata::server
